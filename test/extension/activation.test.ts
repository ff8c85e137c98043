// Activation opens nothing (docs/decisions.md, "The extension"): the store is first read when a view
// becomes visible, and the receipt chain is first walked (in full, once) when the Receipts view is.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
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
  it('reads no store until a view is shown; the first view shown reads it and the status bar follows', async () => {
    const subscriptions: { dispose(): unknown }[] = [];
    const collection = { description: undefined, prepend() {} };
    activate({
      subscriptions,
      extensionUri: vscode.Uri.file(world.root),
      extensionPath: world.root,
      environmentVariableCollection: collection,
    } as unknown as vscode.ExtensionContext);
    disposables.push(...subscriptions);
    // The work after activation (hook settings, the shim, the native modules) has run, and no view is visible.
    await sleep(1000);
    expect(double.contexts.has('turnkeeper.storeExists')).toBe(false);
    // The status bar waits too: no number rather than a wrong one.
    expect(double.statusBarItems[0]!.text).toBe('$(lock)');
    double.treeViews.get('turnkeeper.todos')!.setVisible(true);
    expect(await waitFor(() => double.contexts.get('turnkeeper.storeExists') === true, 5000)).toBe(true);
    expect(await waitFor(() => /^\$\(lock\) 1$/.test(double.statusBarItems[0]!.text), 5000), double.statusBarItems[0]!.text).toBe(true);
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
