// The packaged extension in a real VS Code (code-server 4.139, VS Code 1.139 on Node 24), driven by
// Debian's chromium: install the .vsix, seed a store with the real CLI, and check what a user sees.
// Harness: test/vscode/ (docs/packaging.md, "End to end").
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import type { Browser, Page } from 'playwright-core';
import { makeWorld, payload, type World } from '../support/world';
import { CHROMIUM, launchBrowser, newPage } from '../vscode/browser';
import { ensureCodeServer, grepLogs, startCodeServer, type CodeServer } from '../vscode/codeServer';
import { QUIET_SETTINGS, Workbench } from '../vscode/pages';
import { buildVsix } from '../vscode/vsix';

const ROOT = resolve(__dirname, '../..');
const IMAGES = join(ROOT, 'docs/images');
const ACTIVATION_FILE = join(ROOT, 'test/vscode/.last-activation.json');
// The launcher refuses scripts, so the stand-in for Codex is a native ELF that exits 0 at once.
const STAND_IN_AGENT = '/bin/true';
const SETUP_TIMEOUT = 30 * 60_000; // first run installs code-server (minutes)

interface Receipt {
  seq: number;
  doc: { kind: string; capture?: string; todo?: string };
}

let world: World;
let entry: string;
let vsix: string;
let browser: Browser;
const captureOf: Record<string, string> = {};

function cli(args: string[], input = ''): string {
  const run = world.cli(args, { input });
  if (run.code !== 0) throw new Error(`turnkeeper ${args.join(' ')} exited ${run.code}: ${run.stderr}`);
  return run.stdout;
}
const receipts = () => JSON.parse(cli(['receipts', '--limit', '1000', '--json'])) as Receipt[];

/** A Codex turn on `todo`, through the real hook in its own process; returns the capture id. */
function codexTurn(todo: string, session: string, turn: string): string {
  // Resume refuses a session whose transcript is gone ([transcript_missing]); give it one.
  writeFileSync(join(world.root, `${session}.jsonl`), '');
  cli(['hook'], payload.codexPrompt(world, session, turn, `please work on #todo:${todo}`));
  const status = JSON.parse(cli(['status', '--json'])) as { captures: { id: string; todo: string }[] };
  const capture = status.captures.find((candidate) => candidate.todo === todo);
  if (!capture) throw new Error(`no capture for ${todo} after the hook: ${JSON.stringify(status)}`);
  return capture.id;
}

beforeAll(() => {
  // Not a skip: a machine without chromium cannot prove the extension works.
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run .ci/run, or apt-get install chromium libkrb5-dev`);
  entry = ensureCodeServer();
  vsix = buildVsix();
  world = makeWorld('tk-vscode');
  cli(['todo', 'add', 'Fix login', '--id', 'fix-login', '--body', 'The login form drops the session cookie.']);
  cli(['todo', 'add', 'Write docs', '--id', 'write-docs']);
  cli(['todo', 'add', 'Old spike', '--id', 'old-spike']);
  captureOf['fix-login'] = codexTurn('fix-login', 'sess-a', 'turn-1');
  captureOf['old-spike'] = codexTurn('old-spike', 'sess-c', 'turn-1');
  cli(['release', 'old-spike', '--force', '--reason', 'abandoned spike']);
  mkdirSync(IMAGES, { recursive: true });
}, SETUP_TIMEOUT);

afterAll(async () => {
  await browser?.close();
  world?.cleanup();
});

async function openWorkbench(server: CodeServer): Promise<{ page: Page; workbench: Workbench }> {
  browser ??= await launchBrowser();
  const page = await newPage(browser);
  const workbench = new Workbench(page);
  await workbench.open(server.folderUrl(world.repo));
  return { page, workbench };
}

describe('trusted workspace', () => {
  let server: CodeServer;
  let page: Page;
  let workbench: Workbench;

  beforeAll(async () => {
    server = await startCodeServer({
      entry,
      vsix,
      trusted: true,
      env: { TURNKEEPER_HOME: world.home },
      settings: { ...QUIET_SETTINGS, 'turnkeeper.agents.codex.path': STAND_IN_AGENT },
    });
    ({ page, workbench } = await openWorkbench(server));
    await workbench.openContainer('Turnkeeper');
  }, 180_000);
  afterAll(async () => {
    await page?.context().close();
    await server?.stop();
  });

  it('shows the Turnkeeper tab with the seeded captures, leases and receipts', async () => {
    await workbench.expandAll('Captures');
    const captures = await workbench.waitForRow('Captures', 'fix-login');
    expect(captures.some((row) => /old-spike/.test(row))).toBe(true);
    const leases = await workbench.waitForRow('Leases', 'fix-login');
    expect(leases.join('\n')).toMatch(/codex:sess-a · epoch 1/);
    const rows = await workbench.waitForRow('Receipts', /#\d+ lease_released/);
    expect(rows.join('\n')).toMatch(/#\d+ ready_written/);
    expect(rows.join('\n')).toMatch(/Chain verified/);
  });

  it('follows a hook run in another process without a manual refresh', async () => {
    captureOf['write-docs'] = codexTurn('write-docs', 'sess-b', 'turn-7');
    await workbench.expandAll('Captures');
    await workbench.waitForRow('Captures', 'write-docs', 15_000);
    await workbench.waitForRow('Leases', /write-docs.*codex:sess-b/, 15_000);
    await page.locator('.part.sidebar').screenshot({ path: join(IMAGES, 'sidebar.png') });
  });

  it('resumes a captured turn from the palette, with launch_committed in the store', async () => {
    const before = receipts().filter((receipt) => receipt.doc.kind === 'launch_committed').length;
    await workbench.runCommand('Turnkeeper: Resume Captured Turn');
    const offered = await workbench.quickPickRows();
    expect(offered.join('\n')).toContain(`resumable: ${captureOf['fix-login']}`);
    await workbench.pickQuickItem(captureOf['fix-login']!);
    // The terminal's own text is on a canvas; the store is the witness, the terminal tab the UI one.
    await expect.poll(() => receipts().filter((receipt) => receipt.doc.kind === 'launch_committed' && receipt.doc.capture === captureOf['fix-login']).length, { timeout: 30_000 }).toBe(before + 1);
    await page.locator('.terminal-tabs-entry, .single-terminal-tab, .terminal-tab').filter({ hasText: /fix-login/ }).first().waitFor({ timeout: 15_000 });
    await workbench.waitForRow('Receipts', /#\d+ launch_committed/, 15_000);
    await page.screenshot({ path: join(IMAGES, 'resume.png') });
  });

  it('shows the recovery guidance of a released capture instead of resuming it', async () => {
    const launches = () => receipts().filter((receipt) => receipt.doc.kind === 'launch_committed').length;
    const before = launches();
    await workbench.runCommand('Turnkeeper: Resume Captured Turn');
    await workbench.pickQuickItem(captureOf['old-spike']!);
    const warning = await workbench.waitForNotification(/cannot resume .*\[capture_released\]/);
    expect(warning).toContain(captureOf['old-spike']);
    // The guidance document is the active editor.
    await expect.poll(async () => (await page.locator('.editor-instance .view-lines').first().textContent()) ?? '', { timeout: 15_000 }).toMatch(/capture_released/);
    expect(launches()).toBe(before);
  });

  it('names a tampered receipt when verifying the chain', async () => {
    const victim = receipts().find((receipt) => receipt.doc.kind === 'capture_bound' && receipt.doc.todo === 'fix-login')!;
    const db = new Database(world.db);
    try {
      const { changes } = db.prepare("UPDATE receipts SET doc = replace(doc, '\"fix-login\"', '\"fix-logim\"') WHERE seq = ?").run(victim.seq);
      expect(changes).toBe(1);
    } finally {
      db.close();
    }
    await workbench.runCommand('Turnkeeper: Verify Receipt Chain');
    const error = await workbench.waitForNotification(/Receipt chain broken/);
    expect(error).toContain(`#${victim.seq}: content_altered`);
  });

  it('logs its activation time (for npm run bench)', () => {
    const hits = grepLogs(server.userDataDir, /activated in ([\d.]+) ms/);
    expect(hits, `no "activated in" line under ${server.userDataDir}`).not.toHaveLength(0);
    const ms = Number(hits[0]!.match[1]);
    expect(ms).toBeGreaterThan(0);
    writeFileSync(ACTIVATION_FILE, `${JSON.stringify({ activationMs: ms, host: 'code-server 4.139.1', log: hits[0]!.file.slice(server.userDataDir.length + 1), at: new Date().toISOString() }, null, 2)}\n`);
  });
});

describe('untrusted workspace', () => {
  let server: CodeServer;
  let page: Page;
  let workbench: Workbench;

  beforeAll(async () => {
    server = await startCodeServer({
      entry,
      vsix,
      trusted: false,
      env: { TURNKEEPER_HOME: world.home },
      // No trust prompt: the folder opens in Restricted Mode, as after answering "No".
      settings: { ...QUIET_SETTINGS, 'security.workspace.trust.startupPrompt': 'never', 'turnkeeper.agents.codex.path': STAND_IN_AGENT },
      // The palette hides Resume when untrusted; a keybinding reaches the command handler anyway.
      keybindings: [{ key: 'ctrl+alt+r', command: 'turnkeeper.resumeCapturedTurn', args: captureOf['write-docs'] }],
    });
    ({ page, workbench } = await openWorkbench(server));
    await workbench.openContainer('Turnkeeper');
  }, 180_000);
  afterAll(async () => {
    await page?.context().close();
    await server?.stop();
  });

  it('is read-only: shows the store, refuses to launch', async () => {
    expect(await workbench.statusBar()).toMatch(/Restricted Mode/);
    await workbench.expandAll('Captures');
    await workbench.waitForRow('Captures', 'write-docs');

    await page.keyboard.press('F1');
    await page.locator('.quick-input-widget input').fill('>Turnkeeper: ');
    await page.locator('.quick-input-widget .monaco-list-row').filter({ hasText: 'Turnkeeper: Verify Receipt Chain' }).waitFor();
    expect((await workbench.quickPickRows()).join('\n')).not.toContain('Resume Captured Turn');
    await page.keyboard.press('Escape');

    const before = receipts().length;
    await page.locator('.monaco-workbench').click({ position: { x: 700, y: 450 } });
    await page.keyboard.press('Control+Alt+r');
    await workbench.waitForNotification(/does not launch agents in an untrusted workspace/);
    expect(receipts().length).toBe(before);
  });
});
