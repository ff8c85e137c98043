// Activation opens nothing (docs/decisions.md, "The extension"): after it the status bar reads the count
// of active leases, and only that until a view becomes visible; the receipt chain is first walked (in
// full, once) when the Receipts view is.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { existsSync } from 'node:fs';
import * as vscode from 'vscode';
import { double } from '../support/vscode';
import { waitFor } from '../launcher/fixtures';
import { activate } from '../../src/extension/main';
import { Ctx } from '../../src/extension/ctx';
import type { Authority } from '../../src/store/authority';
import { contextOf, makeWorld, payload, type World } from '../support/world';

let world: World;
const disposables: { dispose(): unknown }[] = [];
const savedHome = process.env.TURNKEEPER_HOME;
const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

beforeEach(() => {
  double.reset();
  world = makeWorld('ext-activation');
  process.env.TURNKEEPER_HOME = world.home;
  double.configuration = { storePath: world.db };
  double.folders = [{ uri: vscode.Uri.file(world.repo), name: 'repo', index: 0 }];
  expect(world.cli(['todo', 'add', 'Fix login', '--id', 'fix-login']).code).toBe(0);
  expect(contextOf(world.cli(['hook'], { input: payload.codexPrompt(world, 'sess-x', 'turn-1', '#todo:fix-login') }).stdout)).toContain('epoch 1');
});
afterEach(() => {
  for (const item of disposables.splice(0).reverse()) item.dispose();
  world.cleanup();
  if (savedHome === undefined) delete process.env.TURNKEEPER_HOME;
  else process.env.TURNKEEPER_HOME = savedHome;
});

describe('activation', () => {
  it('the status bar counts the active leases at once and follows them; the rest waits until a view is shown', async () => {
    const subscriptions: { dispose(): unknown }[] = [];
    const collection = { description: undefined, prepend() {} };
    activate({
      subscriptions,
      extensionUri: vscode.Uri.file(world.root),
      extensionPath: world.root,
      environmentVariableCollection: collection,
    } as unknown as vscode.ExtensionContext);
    disposables.push(...subscriptions);
    // Activation itself reads nothing: the count comes after it, and no view is visible.
    expect(double.statusBarItems[0]!.text).toBe('$(lock)');
    const bar = () => double.statusBarItems[0]!.text;
    expect(await waitFor(() => bar() === '$(lock) 1', 5000), bar()).toBe(true);
    // A hook's claim in another process: the status bar follows the store, still without a view.
    expect(world.cli(['todo', 'add', 'Write docs', '--id', 'write-docs']).code).toBe(0);
    expect(contextOf(world.cli(['hook'], { input: payload.codexPrompt(world, 'sess-y', 'turn-1', '#todo:write-docs') }).stdout)).toContain('epoch 1');
    expect(await waitFor(() => bar() === '$(lock) 2', 5000), bar()).toBe(true);
    // Nothing else was read: no snapshot (captures), no hook configs, no Todos, no receipts.
    await sleep(500);
    expect(double.contexts.has('turnkeeper.hasCaptures')).toBe(false);
    expect(double.contexts.has('turnkeeper.hooksInstalled')).toBe(false);
    expect(double.statusBarItems[0]!.tooltip).toContain('open the Turnkeeper view');
    double.treeViews.get('turnkeeper.todos')!.setVisible(true);
    expect(await waitFor(() => double.contexts.get('turnkeeper.hasCaptures') === true, 5000)).toBe(true);
    expect(await waitFor(() => double.contexts.get('turnkeeper.hooksInstalled') !== undefined, 5000)).toBe(true);
    expect(bar()).toBe('$(lock) 2');
    expect(double.statusBarItems[0]!.tooltip).not.toContain('open the Turnkeeper view');
  });

  it('the status read reads the leases and nothing else; a window without a database creates none', async () => {
    const log = vscode.window.createOutputChannel('Turnkeeper', { log: true });
    const ctx = new Ctx({ extensionPath: world.root, extensionUri: vscode.Uri.file(world.root) } as unknown as vscode.ExtensionContext, log);
    disposables.push(ctx);
    const store = (await ctx.openStore()) as Authority;
    const others = (['listLeases', 'listCaptures', 'launches', 'listTodos', 'receipts', 'verifyChain', 'readReady', 'listSessions'] as const).map((name) =>
      vi.spyOn(store, name),
    );
    const countLeases = store.activeLeaseCount.bind(store);
    const leases = vi.spyOn(store, 'activeLeaseCount');
    ctx.readStatus();
    expect(await waitFor(() => ctx.activeLeases === 1, 5000)).toBe(true);
    expect(leases).toHaveBeenCalledTimes(1);
    for (const spy of others) expect(spy, spy.getMockName()).not.toHaveBeenCalled();
    expect(ctx.snapshotRead).toBe(false);
    // A command's refresh while a status read is under way waits for it and reads everything after it.
    let started!: () => void;
    const underWay = new Promise<void>((resolve) => (started = resolve));
    leases.mockClear();
    leases.mockImplementationOnce(async () => {
      started();
      await sleep(300);
      return countLeases();
    });
    ctx.readStatus();
    await underWay;
    await ctx.refresh();
    // The status read counted once; the full refresh read the snapshot after it.
    expect(leases).toHaveBeenCalledTimes(1);
    expect(ctx.snapshotRead).toBe(true);
    expect(ctx.todoList.map((todo) => todo.id)).toEqual(['fix-login']);
    // No database at the configured path: the count is 0, and nothing is created for it.
    ctx.closeStore();
    double.configuration = { storePath: `${world.root}/none/turnkeeper.db` };
    ctx.readStatus();
    expect(await waitFor(() => ctx.activeLeases === 0, 5000)).toBe(true);
    expect(existsSync(`${world.root}/none`)).toBe(false);
  });
});

describe('the receipt chain', () => {
  it('is walked in full once, when the Receipts view is first shown, then only its new receipts (no receipt is read before)', async () => {
    const log = vscode.window.createOutputChannel('Turnkeeper', { log: true });
    const ctx = new Ctx({ extensionPath: world.root, extensionUri: vscode.Uri.file(world.root) } as unknown as vscode.ExtensionContext, log);
    disposables.push(ctx);
    const store = (await ctx.openStore()) as Authority;
    const walks = vi.spyOn(store, 'verifyChain');
    const reads = vi.spyOn(store, 'receipts');
    ctx.viewShown('turnkeeper.todos');
    await ctx.refresh();
    expect(ctx.todos.find(`todo/${world.goal}/fix-login`)).toBeDefined();
    // Every hook's write refreshes: a window whose Receipts view is closed reads no page of receipts.
    expect(walks).not.toHaveBeenCalled();
    expect(reads).not.toHaveBeenCalled();
    expect(ctx.receipts.rootNodes).toEqual([]);
    ctx.viewShown('turnkeeper.receipts');
    await ctx.refresh();
    expect(walks.mock.calls).toEqual([[undefined]]);
    expect(reads).toHaveBeenCalled();
    expect(ctx.receipts.find('receipts/chain')).toMatchObject({ label: 'Chain verified', description: '4 receipts' });
    // A hook appends: the next refresh walks from the verified end only.
    expect(world.cli(['todo', 'add', 'Write docs', '--id', 'write-docs']).code).toBe(0);
    await ctx.refresh();
    expect(walks.mock.calls.slice(1)).toEqual([[expect.objectContaining({ seq: 4 })]]);
    expect(ctx.receipts.find('receipts/chain')).toMatchObject({ label: 'Chain verified', description: '5 receipts' });
  });
});
