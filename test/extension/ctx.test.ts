// The extension's shared state (src/extension/ctx.ts) against real stores and real hook configs,
// with the editor API played by test/support/vscode.ts.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import * as vscode from 'vscode';
import { double } from '../support/vscode';
import { Ctx } from '../../src/extension/ctx';
import { createStatusBar } from '../../src/extension/statusBar';
import { readHomeConfig } from '../../src/config/homeConfig';
import { contextOf, makeWorld, payload, type World } from '../support/world';
import { waitFor } from '../launcher/fixtures';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { resolveGoal } from '../../src/checkout/goal';

// Every read of $TURNKEEPER_HOME/config.json goes through readHomeConfig: counted here.
vi.mock('../../src/config/homeConfig', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../../src/config/homeConfig')>();
  return { ...actual, readHomeConfig: vi.fn(actual.readHomeConfig) };
});

let world: World;
let ctx: Ctx | undefined;
const saved = { HOME: process.env.HOME, TURNKEEPER_HOME: process.env.TURNKEEPER_HOME };

function newCtx(): Ctx {
  ctx?.dispose();
  const log = vscode.window.createOutputChannel('Turnkeeper', { log: true });
  ctx = new Ctx({ extensionPath: world.root, extensionUri: vscode.Uri.file(world.root) } as unknown as vscode.ExtensionContext, log);
  return ctx;
}

beforeEach(() => {
  double.reset();
  world = makeWorld('ext-ctx');
  // The extension host's environment is its process's: the hooks' configs live in this world's homes.
  process.env.HOME = world.env.HOME;
  process.env.TURNKEEPER_HOME = world.home;
  double.configuration = { storePath: world.db };
  double.folders = [{ uri: vscode.Uri.file(world.repo), name: 'repo', index: 0 }];
});
afterEach(() => {
  ctx?.dispose();
  ctx = undefined;
  world.cleanup();
  for (const [key, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[key];
    else process.env[key] = value;
  }
});

describe('whether an agent has the hook (the welcome views and the walkthrough)', () => {
  it('sees hooks installed at project scope in the workspace checkout', async () => {
    expect(world.cli(['hooks', 'install', '--agent', 'claude', '--scope', 'project']).code).toBe(0);
    await newCtx().refresh();
    expect(double.contexts.get('turnkeeper.hooksInstalled')).toBe(true);
  });

  it('control: none installed, then user scope', async () => {
    await newCtx().refresh();
    expect(double.contexts.get('turnkeeper.hooksInstalled')).toBe(false);
    expect(world.cli(['hooks', 'install', '--agent', 'claude', '--scope', 'user']).code).toBe(0);
    await newCtx().refresh();
    expect(double.contexts.get('turnkeeper.hooksInstalled')).toBe(true);
  });
});

describe('one reading of the store selection per refresh', () => {
  it('reads config.json once per refresh, for the store and for the status bar', async () => {
    expect(world.cli(['todo', 'add', 'Fix login', '--id', 'fix-login']).code).toBe(0);
    expect(contextOf(world.cli(['hook'], { input: payload.codexPrompt(world, 'sess-x', 'turn-1', '#todo:fix-login') }).stdout)).toContain('epoch 1');
    const ctx = newCtx();
    const bar = createStatusBar(ctx);
    try {
      await ctx.refresh();
      expect(double.statusBarItems[0]!.text).toBe('$(lock) 1');
      vi.mocked(readHomeConfig).mockClear();
      await ctx.refresh();
      expect(vi.mocked(readHomeConfig)).toHaveBeenCalledTimes(1);
    } finally {
      bar.dispose();
    }
  });

  it('the status bar names a team store that is down, from the refresh that failed to reach it', async () => {
    double.configuration = { store: 'postgres://tk:s3cret@127.0.0.1:1/team' };
    const ctx = newCtx();
    const bar = createStatusBar(ctx);
    try {
      await ctx.refresh();
      expect(double.statusBarItems[0]!.text).toBe('$(lock) · team: 127.0.0.1:1/team');
      expect(JSON.stringify(double.statusBarItems)).not.toContain('s3cret');
    } finally {
      bar.dispose();
    }
  });
});

describe('following the store on disk', () => {
  it('after turnkeeper.storePath names another file, the views follow that file (control: they followed the first)', async () => {
    const todo = (id: string) => ctx!.todos.find(`todo/${world.goal}/${id}`);
    expect(world.cli(['todo', 'add', 'In A', '--id', 'in-a']).code).toBe(0);
    const ctxA = newCtx();
    ctxA.viewShown('turnkeeper.todos');
    expect(await waitFor(() => todo('in-a') !== undefined, 5000)).toBe(true);
    // Control: a write by another process shows without a refresh.
    expect(world.cli(['todo', 'add', 'Later in A', '--id', 'later-a']).code).toBe(0);
    expect(await waitFor(() => todo('later-a') !== undefined, 5000)).toBe(true);

    const b = join(world.root, 'elsewhere', 'b.db');
    expect(world.cli(['todo', 'add', 'In B', '--id', 'in-b'], { env: { TURNKEEPER_DB: b } }).code).toBe(0);
    double.configuration = { storePath: b };
    ctxA.settingsChanged();
    expect(await waitFor(() => todo('in-b') !== undefined, 5000)).toBe(true);
    expect(world.cli(['todo', 'add', 'Later in B', '--id', 'later-b'], { env: { TURNKEEPER_DB: b } }).code).toBe(0);
    expect(await waitFor(() => todo('later-b') !== undefined, 5000)).toBe(true);
  });
});

describe('the receipt chain after a store switch', () => {
  it("is verified afresh for the new store, not continued from the old one's verified end (control: the first store verifies)", async () => {
    expect(world.cli(['todo', 'add', 'In A', '--id', 'in-a']).code).toBe(0);
    expect(contextOf(world.cli(['hook'], { input: payload.codexPrompt(world, 'sess-x', 'turn-1', '#todo:in-a') }).stdout)).toContain('epoch 1');
    const ctx = newCtx();
    ctx.viewShown('turnkeeper.receipts');
    await ctx.refresh();
    expect(ctx.receipts.find('receipts/chain')).toMatchObject({ label: 'Chain verified', description: '4 receipts' });
    const b = join(world.root, 'elsewhere', 'b.db');
    expect(world.cli(['todo', 'add', 'In B', '--id', 'in-b'], { env: { TURNKEEPER_DB: b } }).code).toBe(0);
    double.configuration = { storePath: b };
    ctx.settingsChanged();
    await ctx.refresh();
    expect(ctx.todos.find(`todo/${world.goal}/in-b`)).toBeDefined();
    expect(ctx.receipts.find('receipts/chain')).toMatchObject({ label: 'Chain verified', description: '1 receipts' });
  });
});

describe('the status bar warning for launches whose hooks never fired', () => {
  it('goes once a later launch of the same agent fired its hooks, from the status bar and the Todo (control: while none has, it stays)', async () => {
    expect(world.cli(['todo', 'add', 'Fix login', '--id', 'fix-login']).code).toBe(0);
    const todoIcon = () => ctx!.todos.find(`todo/${world.goal}/fix-login`)?.icon;
    const store = await world.store();
    const long = Date.now() - 60 * 60_000;
    try {
      await store.appendReceipt(
        { kind: 'launch_committed', goal: world.goal, todo: 'fix-login', detail: { start: true, launch: 'l-1', agent: 'codex' } },
        long,
      );
      const ctx = newCtx();
      const bar = createStatusBar(ctx);
      try {
        await ctx.refresh();
        expect(double.statusBarItems[0]!.text).toBe('$(warning) 0');
        expect(todoIcon()).toBe('warning');
        await store.appendReceipt(
          { kind: 'launch_committed', goal: world.goal, todo: 'write-docs', detail: { start: true, launch: 'l-2', agent: 'codex' } },
          long + 1000,
        );
        await ctx.refresh();
        expect(double.statusBarItems[0]!.text).toBe('$(warning) 0');
        await store.appendReceipt(
          { kind: 'launch_hooked', goal: world.goal, todo: 'write-docs', owner: 'codex:sess-2', detail: { launch: 'l-2', event: 'SessionStart' } },
          long + 2000,
        );
        await ctx.refresh();
        expect(double.statusBarItems[0]!.text).toBe('$(lock) 0');
        expect(todoIcon()).toBe('circle-large-outline');
      } finally {
        bar.dispose();
      }
    } finally {
      store.close();
    }
  });
});

describe('a store that holds two repositories (the Captures, Leases and Receipts views, and the status bar)', () => {
  /** A second repository beside the world's, with a Todo claimed there by another Codex session. */
  function otherRepository(): { repo: string; goal: string } {
    const repo = join(world.root, 'other');
    mkdirSync(repo);
    execFileSync('git', ['init', '-q', repo]);
    const other = { ...world, repo };
    expect(world.cli(['todo', 'add', 'Theirs', '--id', 'theirs'], { cwd: repo }).code).toBe(0);
    expect(contextOf(world.cli(['hook'], { input: payload.codexPrompt(other, 'sess-b', 'turn-1', '#todo:theirs'), cwd: repo }).stdout)).toContain('epoch 1');
    return { repo, goal: resolveGoal(repo).id };
  }

  it("show the workspace repository's only, from every worktree of it, with the store-wide receipts marked (control: the other repository's are in the store)", async () => {
    expect(world.cli(['todo', 'add', 'Mine', '--id', 'mine']).code).toBe(0);
    expect(contextOf(world.cli(['hook'], { input: payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:mine') }).stdout)).toContain('epoch 1');
    // A linked worktree of the workspace's repository is the same Goal: its lease is the workspace's.
    const worktree = join(world.root, 'repo-wt');
    execFileSync('git', ['-C', world.repo, 'worktree', 'add', '-q', worktree]);
    expect(world.cli(['todo', 'add', 'In the worktree', '--id', 'in-wt'], { cwd: worktree }).code).toBe(0);
    const inWorktree = { ...world, repo: worktree };
    expect(contextOf(world.cli(['hook'], { input: payload.codexPrompt(inWorktree, 'sess-c', 'turn-1', '#todo:in-wt'), cwd: worktree }).stdout)).toContain(
      'epoch 1',
    );
    const other = otherRepository();
    const store = await world.store();
    try {
      await store.appendReceipt({ kind: 'clock_skew_detected', goal: '-', detail: { host: 'h', skewMs: 5000, boundMs: 1, roundTripMs: 2 } }, Date.now());
      // Control: the store holds both repositories' leases and receipts.
      expect((await store.listLeases()).map((lease) => lease.todo).sort()).toStrictEqual(['in-wt', 'mine', 'theirs']);
    } finally {
      store.close();
    }

    const ctx = newCtx();
    const bar = createStatusBar(ctx);
    try {
      // The status read (no view shown yet) counts the workspace's active leases only.
      ctx.readStatus();
      expect(await waitFor(() => ctx.activeLeases !== undefined, 5000)).toBe(true);
      expect(double.statusBarItems[0]!.text).toBe('$(lock) 2');

      ctx.viewShown('turnkeeper.receipts');
      await ctx.refresh();
      expect(double.statusBarItems[0]!.text).toBe('$(lock) 2');
      expect(ctx.leases.rootNodes.map((node) => node.id).sort()).toStrictEqual([`lease/${world.goal}/in-wt/1`, `lease/${world.goal}/mine/1`]);
      const ready = ctx.captures.find('captures/ready')!;
      expect(ready.children!.map((node) => node.label).sort()).toStrictEqual(['in-wt', 'mine']);
      expect(JSON.stringify(ctx.captures.rootNodes)).not.toContain(other.goal);

      const rows = ctx.receipts.rootNodes.filter((node) => node.id.startsWith('receipt/'));
      expect(rows.some((node) => node.description?.includes('theirs'))).toBe(false);
      expect(rows.filter((node) => node.description?.includes('mine')).length).toBeGreaterThan(0);
      expect(rows.find((node) => node.label.endsWith('clock_skew_detected'))?.description).toMatch(/^store-wide · /);
      expect(rows.find((node) => node.label.endsWith('lease_acquired'))?.description).not.toContain('store-wide');
      // The chain is the store's: verified whole, the other repository's receipts included.
      const chain = ctx.receipts.find('receipts/chain')!;
      expect(chain.label).toBe('Chain verified');
      expect(Number(chain.description!.split(' ')[0])).toBeGreaterThan(rows.length);
    } finally {
      bar.dispose();
    }
  });

  it("the Receipts view keeps the chain's state while the workspace's repository has no receipt yet", async () => {
    otherRepository();
    const ctx = newCtx();
    ctx.viewShown('turnkeeper.receipts');
    await ctx.refresh();
    expect(ctx.receipts.find('receipts/chain')).toMatchObject({ label: 'Chain verified' });
    expect(ctx.receipts.rootNodes.filter((node) => node.id.startsWith('receipt/'))).toStrictEqual([]);
    expect(ctx.leases.rootNodes).toStrictEqual([]);
  });
});
