// The extension's side of signed checkpoints (docs/receipts.md): "Export Receipts…" writes a bundle that
// verifies offline, the Receipts view shows the newest checkpoint and its witness, and "Verify Receipt
// Chain" names a truncation that only the witness can see (tail, head row and anchor all rewritten).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ReceiptDocument } from '../../src/core/receipts';
import { like } from '../support/matchers';
import * as vscode from 'vscode';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { double } from '../support/vscode';
import { Ctx } from '../../src/extension/ctx';
import { registerCommands } from '../../src/extension/commands';
import { anchorPath, readAnchor } from '../../src/store/anchor';
import { contextOf, makeWorld, payload, type World } from '../support/world';

let world: World;
let ctx: Ctx;
const savedHome = process.env.TURNKEEPER_HOME;
const run = (id: string, ...args: unknown[]) => double.commands.get(id)!(...args);

beforeEach(() => {
  double.reset();
  world = makeWorld('ext-receipts');
  // The extension's environment is its process's: its key and default witness live in this world's home.
  process.env.TURNKEEPER_HOME = world.home;
  double.configuration = { storePath: world.db };
  double.folders = [{ uri: vscode.Uri.file(world.repo), name: 'repo', index: 0 }];
  expect(world.cli(['todo', 'add', 'Fix login', '--id', 'fix-login']).code).toBe(0);
  expect(contextOf(world.cli(['hook'], { input: payload.codexPrompt(world, 'sess-x', 'turn-1', '#todo:fix-login') }).stdout)).toContain('epoch 1');
  const log = vscode.window.createOutputChannel('Turnkeeper', { log: true });
  ctx = new Ctx({ extensionPath: world.root, extensionUri: vscode.Uri.file(world.root) } as unknown as vscode.ExtensionContext, log);
  registerCommands(ctx);
});
afterEach(() => {
  ctx.dispose();
  world.cleanup();
  if (savedHome === undefined) delete process.env.TURNKEEPER_HOME;
  else process.env.TURNKEEPER_HOME = savedHome;
});

describe('receipts in the extension', () => {
  it('Export Receipts… writes a bundle that verifies offline; the view shows its checkpoint and that the witness agrees', async () => {
    ctx.viewShown('turnkeeper.receipts');
    await ctx.refresh();
    expect(ctx.receipts.find('receipts/checkpoint')).toMatchObject({ label: 'No signed checkpoint yet' });
    const file = join(world.root, 'out.tkb');
    double.answers.saveDialog.push(vscode.Uri.file(file));
    await run('turnkeeper.exportReceipts');
    expect(double.shown.at(-1)).toMatchObject({ kind: 'info', text: like.stringContaining('Exported receipts 1–4') });
    const verified = JSON.parse(world.cli(['verify', '--bundle', file, '--json']).stdout) as { ok: boolean; verified: number };
    expect(verified).toMatchObject({ ok: true, verified: 4 });
    await run('turnkeeper.verifyReceiptChain');
    expect(ctx.receipts.find('receipts/checkpoint')).toMatchObject({
      label: 'Checkpoint of #4',
      description: like.stringContaining('witness agrees'),
      icon: 'workspace-trusted',
    });
  });

  it('a refused export leaves an existing bundle of that name as it was, and no temporary file (control: a good one replaces it)', async () => {
    const dir = join(world.root, 'bundles');
    mkdirSync(dir);
    const file = join(dir, 'team.tkb');
    writeFileSync(file, 'the bundle exported last week\n');
    const store = await world.store();
    store.connection.prepare("UPDATE receipts SET doc = replace(doc, 'fix-login', 'fix-logon') WHERE seq = 2").run();
    store.close();
    double.answers.saveDialog.push(vscode.Uri.file(file));
    await run('turnkeeper.exportReceipts');
    expect(double.shown.at(-1)).toMatchObject({ kind: 'error', text: like.stringContaining('Not exported') });
    expect(readFileSync(file, 'utf8')).toBe('the bundle exported last week\n');
    expect(readdirSync(dir)).toEqual(['team.tkb']);
    // Control: with the chain repaired, the export replaces the file with a bundle that verifies.
    const repair = await world.store();
    repair.connection.prepare("UPDATE receipts SET doc = replace(doc, 'fix-logon', 'fix-login') WHERE seq = 2").run();
    repair.close();
    double.answers.saveDialog.push(vscode.Uri.file(file));
    await run('turnkeeper.exportReceipts');
    expect(double.shown.at(-1)).toMatchObject({ kind: 'info', text: like.stringContaining('Exported receipts') });
    expect(JSON.parse(world.cli(['verify', '--bundle', file, '--json']).stdout)).toMatchObject({ ok: true });
    expect(readdirSync(dir)).toEqual(['team.tkb']);
  });

  it('a cancelled save dialog writes nothing', async () => {
    double.answers.saveDialog.push(undefined);
    await run('turnkeeper.exportReceipts');
    expect(double.shown).toEqual([]);
    expect((JSON.parse(world.cli(['receipts', '--json', '--limit', '1']).stdout) as { doc: ReceiptDocument }[])[0]!.doc.kind).toBe('ready_written');
  });

  it('Verify Receipt Chain names a cut tail that the anchor no longer shows (head row and anchor rewritten), through the witness', async () => {
    expect(world.cli(['checkpoint']).code).toBe(0);
    await run('turnkeeper.verifyReceiptChain');
    expect(double.shown.at(-1)).toMatchObject({ kind: 'info', text: 'Receipt chain verifies: 5 receipts.' });
    ctx.dispose();
    const store = await world.store();
    const kept = (store.connection.prepare('SELECT hash FROM receipts WHERE seq = 2').get() as { hash: string }).hash;
    store.connection.prepare('DELETE FROM receipts WHERE seq > 2').run();
    store.connection.prepare('UPDATE receipt_head SET seq = 2, hash = ? WHERE id = 1').run(kept);
    store.close();
    const anchor = readAnchor(world.db) as Exclude<ReturnType<typeof readAnchor>, 'unreadable' | undefined>;
    writeFileSync(anchorPath(world.db), JSON.stringify({ schema: 'turnkeeper.anchor/v1', ...anchor, seq: 2, hash: kept }) + '\n');
    const log = vscode.window.createOutputChannel('Turnkeeper', { log: true });
    ctx = new Ctx({ extensionPath: world.root, extensionUri: vscode.Uri.file(world.root) } as unknown as vscode.ExtensionContext, log);
    registerCommands(ctx);
    await run('turnkeeper.verifyReceiptChain');
    expect(double.shown.at(-1)).toMatchObject({ kind: 'error', text: like.stringContaining('broken at receipt #5: truncated_after_checkpoint') });
    expect(ctx.receipts.find('receipts/checkpoint')).toMatchObject({ icon: 'error', description: like.stringContaining('truncated_after_checkpoint at #5') });
    // Control: the export refuses to sign over it, and leaves no file.
    const file = join(world.root, 'refused.tkb');
    double.answers.saveDialog.push(vscode.Uri.file(file));
    await run('turnkeeper.exportReceipts');
    expect(double.shown.at(-1)).toMatchObject({ kind: 'error', text: like.stringContaining('Not exported') });
    expect(existsSync(file)).toBe(false);
  });
});
