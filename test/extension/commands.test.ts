// Command handlers against a real SQLite store, with the editor API played by test/support/vscode.ts.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import * as vscode from 'vscode';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { double } from '../support/vscode';
import { Ctx } from '../../src/extension/ctx';
import { registerCommands } from '../../src/extension/commands';
import { TurnkeeperDocuments, SCHEME } from '../../src/extension/documents';
import { contextOf, makeWorld, payload, type World } from '../support/world';

let world: World;
let ctx: Ctx;
let captureId: string;

const run = (id: string, ...args: unknown[]) => double.commands.get(id)!(...args);

beforeEach(() => {
  double.reset();
  world = makeWorld('ext');
  double.configuration = { storePath: world.db };
  double.folders = [{ uri: vscode.Uri.file(world.repo), name: 'repo', index: 0 }];
  expect(world.cli(['todo', 'add', 'Fix login', '--id', 'fix-login']).code).toBe(0);
  const claim = world.cli(['hook'], { input: payload.codexPrompt(world, 'sess-x', 'turn-1', '#todo:fix-login') });
  captureId = /capture (cap_[0-9a-f]{24})/.exec(contextOf(claim.stdout)!)![1]!;
  const log = vscode.window.createOutputChannel('Turnkeeper', { log: true }) as unknown as vscode.LogOutputChannel;
  ctx = new Ctx({ extensionPath: world.root, extensionUri: vscode.Uri.file(world.root) } as unknown as vscode.ExtensionContext, log);
  registerCommands(ctx);
  vscode.workspace.registerTextDocumentContentProvider(SCHEME, new TurnkeeperDocuments(ctx));
});
afterEach(() => {
  ctx.dispose();
  world.cleanup();
});

describe('extension commands', () => {
  it('Verify Receipt Chain names the first tampered receipt (control: it verifies before)', async () => {
    await run('turnkeeper.verifyReceiptChain');
    expect(double.shown.at(-1)).toMatchObject({ kind: 'info', text: expect.stringMatching(/^Receipt chain verifies: \d+ receipts\.$/) });
    const store = await world.store();
    store.connection.prepare("UPDATE receipts SET doc = replace(doc, 'fix-login', 'fix-logon') WHERE seq = 2").run();
    store.close();
    await run('turnkeeper.verifyReceiptChain');
    expect(double.shown.at(-1)).toMatchObject({ kind: 'error', text: expect.stringContaining('broken at receipt #2: content_altered') });
    expect(ctx.receipts.find('receipts/chain')).toMatchObject({ label: 'Chain BROKEN' });
  });

  it('Release Lease asks for confirmation and a reason, then releases (cancelled: nothing happens)', async () => {
    await ctx.refresh();
    const lease = ctx.leases.rootNodes[0]!;
    double.answers.message.push(undefined);
    await run('turnkeeper.releaseLease', lease);
    expect((await (await world.store()).listLeases())[0]!.status).toBe('active');
    double.answers.message.push('Release');
    double.answers.inputBox.push('reassigned to a person');
    await run('turnkeeper.releaseLease', lease);
    const store = await world.store();
    expect((await store.listLeases())[0]!.status).toBe('released');
    const last = JSON.parse((await store.receipts({ limit: 1 }))[0]!.doc) as { kind: string; detail: { reason: string } };
    expect(last).toMatchObject({ kind: 'lease_released', detail: { reason: 'reassigned to a person' } });
    store.close();
  });

  it('Resume refuses in an untrusted workspace before touching anything', async () => {
    double.trusted = false;
    await run('turnkeeper.resumeCapturedTurn', captureId);
    expect(double.shown.at(-1)).toMatchObject({ kind: 'error', text: expect.stringContaining('untrusted workspace') });
    const store = await world.store();
    expect((await store.launchReceipts(captureId)).length).toBe(0);
    expect(JSON.parse((await store.receipts({ limit: 1 }))[0]!.doc).kind).toBe('ready_written');
    store.close();
  });

  it('Resume of a released capture shows its guidance instead of launching', async () => {
    expect(world.cli(['todo', 'done', 'fix-login']).code).toBe(0);
    await run('turnkeeper.resumeCapturedTurn', captureId);
    expect(double.documents.at(-1)?.text).toContain('[capture_released]');
    expect(double.shown.at(-1)).toMatchObject({ kind: 'warning', text: expect.stringContaining('[capture_released]') });
  });

  it('the resume pick shows why a capture cannot resume', async () => {
    let seen: { label: string; detail?: string }[] = [];
    double.answers.quickPick.push((items: { label: string; detail?: string }[]) => {
      seen = items;
      return undefined;
    });
    await run('turnkeeper.resumeCapturedTurn');
    // The session reported a transcript path that does not exist in this test: not resumable, and said so.
    expect(seen).toHaveLength(1);
    expect(seen[0]!.detail).toContain('[transcript_missing]');
    // Control: with the transcript in place the same capture is offered as resumable.
    writeFileSync(join(world.root, 'sess-x.jsonl'), '{}\n');
    double.answers.quickPick.push((items: { label: string; detail?: string }[]) => {
      seen = items;
      return undefined;
    });
    await run('turnkeeper.resumeCapturedTurn');
    expect(seen[0]!.detail).toBe(`resumable: ${captureId}`);
  });

  it('Add Todo creates a Todo in the workspace Goal', async () => {
    double.answers.inputBox.push('Write the docs', 'write-docs', 'All of them.');
    await run('turnkeeper.addTodo');
    const todos = JSON.parse(world.cli(['todo', 'list', '--json']).stdout) as { id: string; body: string }[];
    expect(todos.map((todo) => todo.id)).toContain('write-docs');
  });

  it('Open Receipt shows the stored text and the pretty document, read-only', async () => {
    await run('turnkeeper.openReceipt', 2);
    const text = double.documents.at(-1)!.text;
    expect(text).toContain('// receipt #2, hash sha256:');
    expect(text).toContain('"kind": "capture_bound"');
  });
});
