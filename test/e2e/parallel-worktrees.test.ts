// Issue 20's workflow end to end, headless: three real Codex agents started at once on three Todos,
// each in its own worktree (`turnkeeper start --worktree`), each committing its work there through its
// shell tool; then what a person checks: every lease in its own checkout with its live state, each
// Todo's timeline naming what its turn changed, and each branch merged back (`todo done --merge
// --remove-worktree`), with every step in the verifying chain. The editor's side of the same flow (Start
// Turn in New Worktree, Finish Todo…) is in test/e2e/vscode.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { makeWorld, type World } from '../support/world';
import { shellCallReply, startMockModelServer, textReply, type MockModelServer, type RecordedRequest } from '../support/mockModelServer';
import { cleanupCodexHome, EXEC_FLAGS, makeCodexHome, writeCodexConfig, type CodexHome } from '../support/codexHarness';
import { killAll, statusOf, turnkeeperRun, verifyOf } from '../support/agentHarness';

const CODEX_SHIM = resolve(__dirname, '../../node_modules/.bin/codex');
const TODOS = ['alpha', 'bravo', 'charlie'] as const;

let world: World;
let codex: CodexHome;
let mock: MockModelServer;
let env: NodeJS.ProcessEnv;

const turnkeeper = (args: string[]) => turnkeeperRun(args, { env, cwd: world.repo, timeoutMs: 120_000 });
const git = (cwd: string, ...args: string[]) => execFileSync('git', ['-C', cwd, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
const worktreeOf = (todo: string) => join(world.root, 'repo.worktrees', todo);

/** The stand-in model: "commit <todo>" gets a shell call that writes and commits <todo>.txt; its output gets "done". */
function modelScript(request: RecordedRequest) {
  const input = request.body?.input ?? [];
  const lastPrompt = input.findLastIndex((item) => item.type === 'message' && item.role === 'user');
  if (input.findLastIndex((item) => item.type === 'function_call_output') > lastPrompt) return textReply('done');
  const todo = /commit the work of (\w+)/.exec(JSON.stringify(input[lastPrompt] ?? {}))?.[1];
  return todo ? shellCallReply(`echo ${todo} > ${todo}.txt && git add ${todo}.txt && git commit -qm 'Add ${todo}.txt'`) : textReply('ok');
}

beforeAll(async () => {
  mock = await startMockModelServer({ script: modelScript });
  world = makeWorld('tk-e2e-parallel');
  // The identity the agents' commits and the merge commits are made with (worktrees share the config).
  git(world.repo, 'config', 'user.name', 'Parallel Test');
  git(world.repo, 'config', 'user.email', 'parallel@example.invalid');
  codex = makeCodexHome({ prefix: 'tk-e2e-parallel-codex-', extraEnv: { TURNKEEPER_HOME: world.home } });
  env = codex.env;
  writeCodexConfig(codex.codexHome, mock.url);
  for (const todo of TODOS) expect((await turnkeeper(['todo', 'add', `Work ${todo}`, '--id', todo])).code).toBe(0);
  expect((await turnkeeper(['hooks', 'install', '--agent', 'codex'])).code).toBe(0);
});
afterAll(async () => {
  killAll();
  await mock?.close();
  if (codex) cleanupCodexHome(codex);
  world?.cleanup();
});

describe('three agents, three Todos, three worktrees', () => {
  it('run at once, each holds its Todo in its own worktree, each turn names what it changed, and each branch merges back', async () => {
    const mainBefore = git(world.repo, 'rev-parse', 'HEAD');
    const started = await Promise.all(
      TODOS.map((todo) =>
        turnkeeper([
          'start',
          todo,
          '--agent',
          'codex',
          '--worktree',
          '--json',
          '--agent-bin',
          CODEX_SHIM,
          '--prompt',
          `please commit the work of ${todo}`,
          '--',
          ...EXEC_FLAGS,
        ]),
      ),
    );
    for (const [i, todo] of TODOS.entries()) {
      expect(started[i]!.code, started[i]!.stderr.slice(-3000)).toBe(0);
      expect(JSON.parse(started[i]!.stdout)).toMatchObject({ decision: 'launched', worktree: worktreeOf(todo), branch: `todo/${todo}`, exit: { code: 0 } });
      // The agent's commit is on its own branch, in its own worktree; main has not moved.
      expect(git(worktreeOf(todo), 'log', '-1', '--format=%s')).toBe(`Add ${todo}.txt`);
    }
    expect(git(world.repo, 'rev-parse', 'HEAD')).toBe(mainBefore);

    // Each lease in its own checkout, with its session's live state (the agent has exited).
    const status = statusOf(world);
    expect(status.leases.map((lease) => [lease.todo, lease.checkout, lease.status]).sort()).toStrictEqual(
      TODOS.map((todo) => [todo, worktreeOf(todo), 'active']),
    );
    for (const lease of status.leases) expect(lease.live?.state, JSON.stringify(lease)).toMatch(/^(stopped|exited)$/);

    // Each Todo's timeline: its turn added exactly its file, from main's HEAD to its own commit.
    for (const todo of TODOS) {
      const shown = await turnkeeper(['show', todo, '--json']);
      expect(shown.code, shown.stderr).toBe(0);
      const turns = (JSON.parse(shown.stdout) as { entries: { kind: string; paths?: string[]; detail: Record<string, unknown> }[] }).entries.filter(
        (entry) => entry.kind === 'turn_ended',
      );
      expect(turns, shown.stdout).toHaveLength(1);
      expect(turns[0]!.paths).toStrictEqual([`A\t${todo}.txt`]);
      expect(turns[0]!.detail).toMatchObject({ changed: 1, added: 1, headBefore: mainBefore, headAfter: git(worktreeOf(todo), 'rev-parse', 'HEAD') });
    }

    // Merged back one after another: no conflict (each touched its own file), each worktree removed.
    for (const todo of TODOS) {
      const done = await turnkeeper(['todo', 'done', todo, '--merge', '--remove-worktree', '--force', '--reason', 'reviewed and merged', '--json']);
      expect(done.code, done.stdout + done.stderr).toBe(0);
      expect(existsSync(worktreeOf(todo))).toBe(false);
      expect(readFileSync(join(world.repo, `${todo}.txt`), 'utf8')).toBe(`${todo}\n`);
    }
    expect(statusOf(world).leases.filter((lease) => lease.status === 'active')).toStrictEqual([]);
    expect(verifyOf(world).ok).toBe(true);
  });
});
