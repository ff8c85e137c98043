// `turnkeeper start <todo> --agent codex --worktree` with the real Codex binary through the native
// launcher and a mock model (issue 20 item 1): the Todo's worktree is created on `todo/<id>` beside
// the main checkout, Codex runs there, its first prompt claims the Todo with a capture whose checkout
// and branch are the worktree's; after `rm -rf` of the worktree and `git worktree prune`, `resume
// --recreate-worktree` brings it back at its branch and relaunches the same Codex session in it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { makeWorld, type World } from '../support/world';
import { startMockModelServer, type MockModelServer } from '../support/mockModelServer';
import { cleanupCodexHome, EXEC_FLAGS, makeCodexHome, writeCodexConfig, type CodexHome } from '../support/codexHarness';
import { codexCwds, killAll, statusOf, turnkeeperRun } from '../support/agentHarness';

const CODEX_SHIM = resolve(__dirname, '../../node_modules/.bin/codex');

let world: World;
let codex: CodexHome;
let mock: MockModelServer;
let env: NodeJS.ProcessEnv;

const turnkeeper = (args: string[]) => turnkeeperRun(args, { env, cwd: world.repo, timeoutMs: 90_000 });
const git = (cwd: string, ...args: string[]) => execFileSync('git', ['-C', cwd, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
const worktree = () => join(world.root, 'repo.worktrees', 'fix-login');

beforeAll(async () => {
  mock = await startMockModelServer();
  world = makeWorld('tk-e2e-start-wt');
  codex = makeCodexHome({ prefix: 'tk-e2e-start-wt-codex-', extraEnv: { TURNKEEPER_HOME: world.home } });
  env = codex.env;
  writeCodexConfig(codex.codexHome, mock.url);
  expect((await turnkeeper(['todo', 'add', 'Fix login', '--id', 'fix-login'])).code).toBe(0);
  expect((await turnkeeper(['hooks', 'install', '--agent', 'codex'])).code).toBe(0);
});
afterAll(async () => {
  killAll();
  await mock?.close();
  if (codex) cleanupCodexHome(codex);
  world?.cleanup();
});

describe('turnkeeper start --worktree with the real Codex', () => {
  it('creates the worktree, the claim in it names it, and resume after its deletion recreates it and relaunches there', async () => {
    const started = await turnkeeper([
      'start',
      'fix-login',
      '--agent',
      'codex',
      '--worktree',
      '--json',
      '--agent-bin',
      CODEX_SHIM,
      '--prompt',
      'please fix the login form',
      '--',
      ...EXEC_FLAGS,
    ]);
    expect(started.code, started.stderr.slice(-3000)).toBe(0);
    expect(JSON.parse(started.stdout)).toMatchObject({
      decision: 'launched',
      worktree: worktree(),
      branch: 'todo/fix-login',
      worktreeCreated: true,
      exit: { code: 0 },
    });
    expect(git(worktree(), 'symbolic-ref', '--short', 'HEAD').trim()).toBe('todo/fix-login');
    // Codex worked in the worktree, and its own hook's claim recorded that checkout.
    expect(codexCwds(mock.requests.at(-1)!).at(-1)).toBe(worktree());
    const status = statusOf(world);
    expect(status.leases).toStrictEqual([expect.objectContaining({ todo: 'fix-login', status: 'active', checkout: worktree() })]);
    const capture = status.leases[0]!.capture;
    const store = await world.store();
    try {
      expect(await store.getCapture(capture)).toMatchObject({ checkout: worktree(), branch: 'todo/fix-login' });
    } finally {
      store.close();
    }

    rmSync(worktree(), { recursive: true, force: true });
    git(world.repo, 'worktree', 'prune');
    const refused = await turnkeeper(['resume', capture, '--json', '--agent-bin', CODEX_SHIM, '--', ...EXEC_FLAGS]);
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stdout)).toMatchObject({ ok: false, reason: 'checkout_missing' });
    expect(existsSync(worktree())).toBe(false);

    const before = mock.requests.length;
    const resumed = await turnkeeper(['resume', capture, '--recreate-worktree', '--json', '--agent-bin', CODEX_SHIM, '--', ...EXEC_FLAGS]);
    expect(resumed.code, resumed.stderr.slice(-3000)).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ decision: 'launched', exit: { code: 0 } });
    expect(git(worktree(), 'symbolic-ref', '--short', 'HEAD').trim()).toBe('todo/fix-login');
    expect(mock.requests.length).toBeGreaterThan(before);
    expect(codexCwds(mock.requests.at(-1)!).at(-1)).toBe(worktree());
    expect(statusOf(world).leases).toStrictEqual([expect.objectContaining({ capture, status: 'active', epoch: 1 })]);
    // The chain says the worktree was recreated for this launch.
    const after = await world.store();
    try {
      const last = (await after.receipts({ limit: 50 })).map(
        (row) => JSON.parse(row.doc) as { kind: string; capture?: string; detail?: Record<string, unknown> },
      );
      expect(last.find((doc) => doc.kind === 'launch_committed' && doc.capture === capture)?.detail).toMatchObject({ worktreeRecreated: true });
    } finally {
      after.close();
    }
  });
});
