// "Start Turn in New Worktree", "Finish Todo…" and the resume's offer to recreate a deleted worktree
// (issue 20 items 1 and 4), against a real SQLite store and real git, with the editor API played by
// test/support/vscode.ts and a compiled stand-in agent (test/launcher/fixtures.ts) that exits at once.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import * as vscode from 'vscode';
import { execFileSync } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ReceiptDocument } from '../../src/core/receipts';
import { like } from '../support/matchers';
import { double } from '../support/vscode';
import { buildFixtures, scene, waitFor, type Fixtures } from '../launcher/fixtures';
import { Ctx } from '../../src/extension/ctx';
import { registerCommands } from '../../src/extension/commands';
import { contextOf, makeWorld, payload, type World } from '../support/world';

let world: World;
let ctx: Ctx;
let fx: Fixtures;
const IDENTITY = { GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.invalid', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.invalid' };
const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-C', cwd, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...IDENTITY } });
const run = (id: string, ...args: unknown[]) => double.commands.get(id)!(...args);
const worktree = () => join(world.root, 'repo.worktrees', 'write-docs');
const node = (todo: string) => ctx.todos.find(`todo/${world.goal}/${todo}`);

const savedEnv = {
  HOME: process.env.HOME,
  TURNKEEPER_HOME: process.env.TURNKEEPER_HOME,
  ...Object.fromEntries(Object.keys(IDENTITY).map((k) => [k, process.env[k]])),
};
beforeAll(() => {
  fx = buildFixtures('tk-ext-worktrees');
});
afterAll(() => fx?.cleanup());
beforeEach(() => {
  double.reset();
  world = makeWorld('ext-wt');
  // The extension host's environment is its process's: this world's home, and a git identity for merges.
  Object.assign(process.env, { HOME: world.env.HOME, TURNKEEPER_HOME: world.home, ...IDENTITY });
  double.configuration = { storePath: world.db };
  double.folders = [{ uri: vscode.Uri.file(world.repo), name: 'repo', index: 0 }];
  expect(world.cli(['todo', 'add', 'Write the docs', '--id', 'write-docs']).code).toBe(0);
  expect(world.cli(['hooks', 'install', '--agent', 'codex', '--scope', 'user']).code).toBe(0);
  const log = vscode.window.createOutputChannel('Turnkeeper', { log: true });
  ctx = new Ctx({ extensionPath: world.root, extensionUri: vscode.Uri.file(world.root) } as unknown as vscode.ExtensionContext, log);
  registerCommands(ctx);
});
afterEach(() => {
  ctx.dispose();
  world.cleanup();
  for (const [key, value] of Object.entries(savedEnv)) {
    if (value === undefined) delete process.env[key];
    else process.env[key] = value;
  }
});

const receipts = async (): Promise<ReceiptDocument[]> => {
  const store = await world.store();
  try {
    return (await store.receipts({ limit: 100 })).map((row) => JSON.parse(row.doc) as ReceiptDocument);
  } finally {
    store.close();
  }
};

describe('Start Turn in New Worktree', () => {
  it("creates the Todo's worktree on todo/<id> and runs the agent there (control: Start Turn on Todo creates none)", async () => {
    await ctx.refresh();
    const s = await scene(fx);
    double.configuration['agents.codex.path'] = s.victim;
    double.answers.quickPick.push((items: { agent?: string }[]) => items.find((item) => item.agent === 'codex'));
    await run('turnkeeper.startTurn', node('write-docs'));
    expect(await waitFor(() => double.terminals[0]?.closed ?? false, 15_000)).toBe(true);
    expect(existsSync(worktree())).toBe(false);

    await ctx.refresh();
    double.answers.quickPick.push((items: { agent?: string }[]) => items.find((item) => item.agent === 'codex'));
    await run('turnkeeper.startTurnInWorktree', node('write-docs'));
    expect(double.terminals).toHaveLength(2);
    expect(await waitFor(() => double.terminals[1]!.closed, 15_000)).toBe(true);
    expect(double.terminals[1]!.output).toContain('launch receipt #');
    expect(git(worktree(), 'symbolic-ref', '--short', 'HEAD').trim()).toBe('todo/write-docs');
    const launch = (await receipts()).find((doc) => doc.kind === 'launch_committed')!;
    expect(launch.detail).toMatchObject({ checkout: worktree(), branch: 'todo/write-docs', worktreeCreated: true });
  });
});

describe('Finish Todo…', () => {
  it('refuses a conflicting merge with nothing changed, then squashes, removes the worktree and marks the Todo done', async () => {
    git(world.repo, 'worktree', 'add', '-q', '-b', 'todo/write-docs', worktree());
    writeFileSync(join(worktree(), 'README.md'), 'docs written\n');
    git(worktree(), 'commit', '-qam', 'docs');
    writeFileSync(join(world.repo, 'README.md'), 'main changed it\n');
    git(world.repo, 'commit', '-qam', 'main');
    const head = git(world.repo, 'rev-parse', 'HEAD').trim();
    await ctx.refresh();
    const answers = (strategy: string, cleanup: RegExp) =>
      double.answers.quickPick.push(
        (items: { strategy?: string }[]) => items.find((item) => item.strategy === strategy),
        (items: string[]) => items.find((item) => cleanup.test(item)),
      );
    answers('merge', /^Remove/);
    await run('turnkeeper.finishTodo', node('write-docs'));
    expect(double.shown.at(-1)).toMatchObject({ kind: 'warning', text: like.stringContaining('[merge_conflict]'), detail: like.stringContaining('README.md') });
    expect(git(world.repo, 'rev-parse', 'HEAD').trim()).toBe(head);
    expect(existsSync(worktree())).toBe(true);
    expect(node('write-docs')?.contextValue).toBe('todo.open');

    // Resolved on the branch, the squash goes through.
    git(worktree(), 'merge', '-q', '-X', 'ours', 'master');
    answers('squash', /^Remove/);
    await run('turnkeeper.finishTodo', node('write-docs'));
    expect(double.shown.at(-1)).toMatchObject({ kind: 'info', text: like.stringContaining('Todo write-docs is done: squash of todo/write-docs into master') });
    expect(git(world.repo, 'show', 'HEAD:README.md')).toBe('docs written\n');
    expect(existsSync(worktree())).toBe(false);
    expect(node('write-docs')?.contextValue).toBe('todo.done');
    expect((await receipts()).find((doc) => doc.kind === 'todo_finished')).toMatchObject({
      detail: { strategy: 'squash', headBefore: like.stringMatching(/^[0-9a-f]{40}$/), worktreeRemoved: true },
    });
  });
});

describe('Resume Captured Turn after the worktree was deleted', () => {
  it('offers to recreate it; declined nothing is created, accepted it is back at its branch and the turn resumes there', async () => {
    git(world.repo, 'worktree', 'add', '-q', '-b', 'todo/write-docs', worktree());
    writeFileSync(join(world.root, 'sess-w.jsonl'), '{"type":"session"}\n');
    const input = JSON.parse(payload.codexPrompt(world, 'sess-w', 'turn-1', '#todo:write-docs')) as Record<string, unknown>;
    input.cwd = worktree();
    const capture = /capture (cap_[0-9a-f]{24})/.exec(contextOf(world.cli(['hook'], { input: JSON.stringify(input) }).stdout)!)![1]!;
    rmSync(worktree(), { recursive: true, force: true });
    git(world.repo, 'worktree', 'prune');
    const s = await scene(fx);
    double.configuration['agents.codex.path'] = s.victim;

    double.answers.message.push(undefined);
    await run('turnkeeper.resumeCapturedTurn', capture);
    expect(double.shown.at(-1)).toMatchObject({ kind: 'warning', text: like.stringContaining('is gone') });
    expect(existsSync(worktree())).toBe(false);
    expect(double.terminals).toHaveLength(0);

    double.answers.message.push('Recreate Worktree');
    await run('turnkeeper.resumeCapturedTurn', capture);
    expect(git(worktree(), 'symbolic-ref', '--short', 'HEAD').trim()).toBe('todo/write-docs');
    expect(double.terminals).toHaveLength(1);
    expect(await waitFor(() => double.terminals[0]!.closed, 15_000)).toBe(true);
    expect(double.terminals[0]!.output).toContain('launch receipt #');
    expect((await receipts()).find((doc) => doc.kind === 'launch_committed' && doc.capture === capture)?.detail).toMatchObject({ worktreeRecreated: true });
  });
});
