// The packaged extension in a real VS Code (code-server 4.139, VS Code 1.139 on Node 24), driven by
// Debian's chromium: install the .vsix, seed a store with the real CLI, and check what a user sees.
// Harness: test/vscode/ (docs/packaging.md, "End to end").
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import type { Browser, Page } from 'playwright-core';
import { CLI, contextOf, makeWorld, payload, type World } from '../support/world';
import { usePostgres } from '../support/postgres';
import { addWorktree } from '../support/agentHarness';
import { CHROMIUM, launchBrowser, newPage } from '../vscode/browser';
import { ensureCodeServer, grepLogs, startCodeServer, type CodeServer } from '../vscode/codeServer';
import { QUIET_SETTINGS, Workbench, type PageElement } from '../vscode/pages';
import { buildVsix } from '../vscode/vsix';

const ROOT = resolve(__dirname, '../..');
// Screenshots land in docs/images only when asked (UPDATE_SCREENSHOTS=1), so a test run never
// dirties the tree; otherwise they go to test/vscode/.screenshots/ (gitignored) for a look.
const SCRATCH = join(ROOT, 'test/vscode/.screenshots');
const IMAGES = process.env.UPDATE_SCREENSHOTS === '1' ? join(ROOT, 'docs/images') : SCRATCH;
const ACTIVATION_FILE = join(ROOT, 'test/vscode/.last-activation.json');
// Screenshots and logs of failed tests (gitignored); the server's own dir is removed on stop.
const FAILURES = join(ROOT, 'test/vscode/.failures');
// The stand-in for Codex: the launcher refuses scripts, so a native ELF, compiled here. It prints its
// arguments and stays a few seconds, so that its terminal can be read and photographed.
const STAND_IN_SOURCE = `#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
  printf("stand-in codex:");
  for (int i = 1; i < argc; i++) printf(" %s", argv[i]);
  printf("\\n");
  fflush(stdout);
  sleep(15);
  return 0;
}
`;
let standInAgent: string;
let codexHome: string;
const SETUP_TIMEOUT = 30 * 60_000; // first run installs code-server (minutes)

interface Receipt {
  seq: number;
  doc: { kind: string; capture?: string; todo?: string; detail?: Record<string, unknown> };
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
  standInAgent = join(world.root, 'codex-stand-in');
  // Codex's hooks installed, as a person has them before Start Turn (which offers to install them
  // otherwise): the editor's extension host sees them through CODEX_HOME.
  codexHome = join(world.root, 'codex-home');
  mkdirSync(codexHome, { recursive: true });
  expect(world.cli(['hooks', 'install', '--agent', 'codex'], { env: { CODEX_HOME: codexHome } }).code).toBe(0);
  writeFileSync(`${standInAgent}.c`, STAND_IN_SOURCE);
  execFileSync('cc', ['-O2', '-o', standInAgent, `${standInAgent}.c`]);
  cli(['todo', 'add', 'Fix login', '--id', 'fix-login', '--body', 'The login form drops the session cookie.']);
  cli(['todo', 'add', 'Write docs', '--id', 'write-docs']);
  cli(['todo', 'add', 'Old spike', '--id', 'old-spike']);
  captureOf['fix-login'] = codexTurn('fix-login', 'sess-a', 'turn-1');
  captureOf['old-spike'] = codexTurn('old-spike', 'sess-c', 'turn-1');
  cli(['release', 'old-spike', '--force', '--reason', 'abandoned spike']);
  mkdirSync(IMAGES, { recursive: true });
  mkdirSync(SCRATCH, { recursive: true });
}, SETUP_TIMEOUT);

afterAll(async () => {
  await browser?.close();
  world?.cleanup();
});

/** Keeps what a failed test saw: a screenshot, the notifications, and the server and extension logs. */
async function keepFailure(name: string, page: Page | undefined, server: CodeServer | undefined): Promise<void> {
  const dir = join(FAILURES, name.replace(/[^\w-]+/g, '_').slice(0, 80));
  mkdirSync(dir, { recursive: true });
  await page?.screenshot({ path: join(dir, 'screen.png') }).catch(() => undefined);
  if (server) cpSync(server.userDataDir, join(dir, 'user-data'), { recursive: true, filter: (path) => !/\.sock$|CachedData|Cache/.test(path) });
  if (server) cpSync(server.logFile, join(dir, 'code-server.log'));
  writeFileSync(join(dir, 'receipts.json'), world.cli(['receipts', '--limit', '20', '--json']).stdout);
  process.stderr.write(`kept the failure of "${name}" in ${dir}\n`);
}

async function openWorkbench(server: CodeServer, folder = world.repo): Promise<{ page: Page; workbench: Workbench }> {
  browser ??= await launchBrowser();
  const page = await newPage(browser);
  const workbench = new Workbench(page);
  await workbench.open(server.folderUrl(folder));
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
      env: { TURNKEEPER_HOME: world.home, CODEX_HOME: codexHome },
      settings: QUIET_SETTINGS,
      machineSettings: { 'turnkeeper.agents.codex.path': standInAgent },
    });
    ({ page, workbench } = await openWorkbench(server));
    await workbench.openContainer('Turnkeeper');
  }, 180_000);
  afterEach(async (context) => {
    if (context.task.result?.state === 'fail') await keepFailure(context.task.name, page, server);
  });
  afterAll(async () => {
    await page?.context().close();
    await server?.stop();
  });

  it('shows the Turnkeeper tab with the seeded captures, leases and receipts', async () => {
    await workbench.waitForRow('Captures', 'fix-login codex · epoch 1');
    const captures = await workbench.waitForRow('Captures', ['old-spike', 'Ready 1', 'Released 1']);
    expect(captures).toEqual(expect.arrayContaining(['Ready 1', 'Released 1']));
    const leases = await workbench.waitForRow('Leases', 'fix-login');
    expect(leases.join('\n')).toMatch(/fix-login in repo · codex:sess-a · epoch 1/);
    expect(leases.join('\n')).not.toMatch(/old-spike/); // released: no longer a lease to show
    await workbench.waitForRow('Receipts', [/#\d+ lease_released old-spike/, /#\d+ ready_written fix-login/, /Chain verified/]);
    await page.locator('.part.sidebar').screenshot({ path: join(IMAGES, 'sidebar.png') });
  });

  it('follows a hook run in another process without a manual refresh', async () => {
    captureOf['write-docs'] = codexTurn('write-docs', 'sess-b', 'turn-7');
    await workbench.waitForRow('Leases', /write-docs in repo · codex:sess-b/, 15_000);
    await workbench.waitForRow('Receipts', /#\d+ ready_written write-docs/, 15_000);
    // Inside a group: the group node itself must be refreshed, not only the root list.
    await workbench.waitForRow('Captures', 'Ready 2', 15_000);
    await workbench.waitForRow('Captures', 'write-docs codex', 15_000);
  });

  it('resumes a captured turn from the palette, with launch_committed in the store', async () => {
    const before = receipts().filter((receipt) => receipt.doc.kind === 'launch_committed').length;
    await workbench.runCommand('Turnkeeper: Resume Captured Turn');
    const offered = await workbench.quickPickRows(`resumable: ${captureOf['fix-login']}`);
    // The released capture is offered too, marked with its refusal.
    expect(offered.join('\n')).toMatch(/old-spike.*\[capture_released\]/);
    await workbench.pickQuickItem(captureOf['fix-login']!);
    const committed = () => receipts().filter((receipt) => receipt.doc.kind === 'launch_committed' && receipt.doc.capture === captureOf['fix-login']);
    await expect.poll(() => committed().length, { timeout: 30_000 }).toBe(before + 1);
    const seq = committed()[0]!.seq;
    // The terminal names the receipt the store holds, then the agent runs on its own session.
    // (Codex's interactive resume runs on its embedded app server: --no-daemon, src/agents/profiles/codex.ts.)
    const terminal = await workbench.waitForTerminalText(new RegExp(`launch receipt #${seq} committed[\\s\\S]*stand-in codex: resume --no-daemon sess-a`));
    expect(terminal).toContain('codex is running');
    await workbench.waitForRow('Receipts', `#${seq} launch_committed`, 15_000);
    await page.screenshot({ path: join(IMAGES, 'resume.png') });
  });

  it('lists the Todos with their holders; Start Turn on Todo runs the agent through the launcher in a terminal, and the view follows its first hook', async () => {
    cli(['todo', 'add', 'Start me', '--id', 'start-me']);
    // The new Todo and the held one, in one snapshot of the view.
    await workbench.waitForRow('Todos', ['start-me Start me', /fix-login in repo · codex:sess-a · epoch 1/], 15_000);
    await workbench.runCommand('Turnkeeper: Start Turn on Todo');
    await workbench.pickQuickItem('start-me');
    await workbench.pickQuickItem('Codex CLI');
    const started = () => receipts().filter((receipt) => receipt.doc.kind === 'launch_committed' && receipt.doc.todo === 'start-me');
    await expect.poll(() => started().length, { timeout: 30_000 }).toBe(1);
    const [{ seq, doc }] = started() as [Receipt];
    expect(doc.capture).toBeUndefined();
    expect(doc.detail).toMatchObject({ start: true, agent: 'codex' });
    // The terminal names the receipt the store holds; then the stand-in runs, interactive (no arguments).
    await workbench.waitForTerminalText(new RegExp(`launch receipt #${seq} committed[\\s\\S]*stand-in codex:`));
    // The stand-in runs no hooks: its first prompt's hook is played here, with the environment the
    // launcher gave it (read from the running process), as the real agent's hook would run.
    const environ = Object.fromEntries(
      readFileSync(`/proc/${doc.detail!.pid as number}/environ`, 'utf8')
        .split('\0')
        .filter((entry) => entry.startsWith('TURNKEEPER_'))
        .map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]),
    );
    expect(environ).toMatchObject({ TURNKEEPER_TODO: 'start-me', TURNKEEPER_LAUNCH: doc.detail!.launch, TURNKEEPER_TURN: doc.detail!.turn });
    const hook = world.cli(['hook'], {
      input: payload.codexPrompt(world, 'sess-s', 'turn-1', 'go ahead'),
      env: { TURNKEEPER_TODO: environ.TURNKEEPER_TODO, TURNKEEPER_TURN: environ.TURNKEEPER_TURN, TURNKEEPER_LAUNCH: environ.TURNKEEPER_LAUNCH },
    });
    expect(hook.stdout).toContain('Turnkeeper: Todo start-me');
    await workbench.waitForRow('Todos', /start-me in repo · codex:sess-s · epoch 1/, 15_000);
    await page.locator('.part.sidebar').screenshot({ path: join(IMAGES, 'todos.png') });
  });

  it('shows the recovery guidance of a released capture instead of resuming it', async () => {
    const launches = () => receipts().filter((receipt) => receipt.doc.kind === 'launch_committed').length;
    const before = launches();
    await workbench.runCommand('Turnkeeper: Resume Captured Turn');
    await workbench.pickQuickItem(captureOf['old-spike']!);
    const warning = await workbench.waitForNotification(/cannot resume .*\[capture_released\]/);
    expect(warning).toContain(captureOf['old-spike']);
    // The guidance document is the active editor.
    await expect
      .poll(async () => (await page.locator('.editor-instance .view-lines').first().textContent()) ?? '', { timeout: 15_000 })
      .toMatch(/capture_released/);
    expect(launches()).toBe(before);
  });

  it('names a tampered receipt when verifying the chain', async () => {
    const victim = receipts().find((receipt) => receipt.doc.kind === 'capture_bound' && receipt.doc.todo === 'fix-login')!;
    const db = new Database(world.db);
    try {
      const { changes } = db.prepare('UPDATE receipts SET doc = replace(doc, \'"fix-login"\', \'"fix-logim"\') WHERE seq = ?').run(victim.seq);
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
    writeFileSync(
      ACTIVATION_FILE,
      `${JSON.stringify({ activationMs: ms, host: 'code-server 4.139.1', log: hits[0]!.file.slice(server.userDataDir.length + 1), at: new Date().toISOString() }, null, 2)}\n`,
    );
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
      settings: { ...QUIET_SETTINGS, 'security.workspace.trust.startupPrompt': 'never' },
      machineSettings: { 'turnkeeper.agents.codex.path': standInAgent },
      // The palette hides Resume when untrusted; a keybinding reaches the command handler anyway.
      keybindings: [{ key: 'ctrl+alt+r', command: 'turnkeeper.resumeCapturedTurn', args: captureOf['write-docs'] }],
    });
    ({ page, workbench } = await openWorkbench(server));
    await workbench.openContainer('Turnkeeper');
  }, 180_000);
  afterEach(async (context) => {
    if (context.task.result?.state === 'fail') await keepFailure(context.task.name, page, server);
  });
  afterAll(async () => {
    await page?.context().close();
    await server?.stop();
  });

  it('is read-only: shows the store, refuses to launch', async () => {
    await workbench.statusBarItem('Restricted Mode').waitFor({ timeout: 30_000 });
    await workbench.expandAll('Captures');
    await workbench.waitForRow('Captures', 'write-docs');

    await page.keyboard.press('F1');
    await page.locator('.quick-input-widget input').fill('>Turnkeeper: ');
    // Verify is offered (the palette works), Resume is not.
    expect((await workbench.quickPickRows('Turnkeeper: Verify Receipt Chain')).join('\n')).not.toContain('Resume Captured Turn');
    await page.keyboard.press('Escape');

    const before = receipts().length;
    await page.locator('.monaco-workbench').click({ position: { x: 700, y: 450 } });
    await page.keyboard.press('Control+Alt+r');
    await workbench.waitForNotification(/does not launch agents in an untrusted workspace/);
    expect(receipts().length).toBe(before);
  });
});

// Worktrees of one repository are one Goal (docs/goals.md): a window on a linked worktree shows the
// Todo and the lease that an agent in the main checkout holds, and says which checkout holds it.
describe('a linked worktree of the seeded repository', () => {
  let server: CodeServer;
  let page: Page;
  let workbench: Workbench;
  let worktree: string;

  beforeAll(async () => {
    worktree = addWorktree(world.repo, join(world.root, 'wt-agent2'), 'agent2');
    // A Todo of another Goal in the same store: the worktree's window must not offer it.
    const elsewhere = join(world.root, 'elsewhere');
    mkdirSync(elsewhere);
    cli(['todo', 'add', 'Not this repository', '--id', 'elsewhere-task', '--goal', elsewhere]);
    server = await startCodeServer({
      entry,
      vsix,
      trusted: true,
      env: { TURNKEEPER_HOME: world.home },
      settings: QUIET_SETTINGS,
      machineSettings: { 'turnkeeper.agents.codex.path': standInAgent },
    });
    ({ page, workbench } = await openWorkbench(server, worktree));
    await workbench.openContainer('Turnkeeper');
  }, 180_000);
  afterEach(async (context) => {
    if (context.task.result?.state === 'fail') await keepFailure(context.task.name, page, server);
  });
  afterAll(async () => {
    await page?.context().close();
    await server?.stop();
  });

  it('shows the Todo and its lease, held from the main checkout', async () => {
    // The lease's checkout is the main one ("repo"), not this window's folder ("wt-agent2").
    const leases = await workbench.waitForRow('Leases', /fix-login in repo · codex:sess-a · epoch 1 · expires/);
    expect(leases.join('\n')).not.toContain('wt-agent2');
    await workbench.waitForRow('Captures', 'fix-login codex · epoch 1');
    // The window's Goal is the repository's: Mark Todo Done offers the open Todos of that Goal only.
    await workbench.runCommand('Turnkeeper: Mark Todo Done');
    const offered = await workbench.quickPickRows('fix-login');
    expect(offered.join('\n')).toContain('write-docs');
    expect(offered.join('\n')).not.toContain('elsewhere-task');
    await page.keyboard.press('Escape');
    await page.locator('.part.sidebar').screenshot({ path: join(SCRATCH, 'worktree-leases.png') }); // not a docs image: this world's chain was tampered with above
  });

  it('follows a prompt in the worktree: [lease_held] names the main checkout, the refusal shows, the lease stays', async () => {
    const prompt = {
      ...(JSON.parse(payload.codexPrompt(world, 'sess-w', 'turn-1', 'please work on #todo:fix-login')) as Record<string, unknown>),
      cwd: worktree,
    };
    const context = (JSON.parse(cli(['hook'], JSON.stringify(prompt))) as { hookSpecificOutput: { additionalContext: string } }).hookSpecificOutput
      .additionalContext;
    expect(context).toContain('[lease_held]');
    expect(context).toContain(`codex:sess-a (epoch 1) in ${world.repo} until`);
    await workbench.waitForRow('Receipts', /#\d+ claim_refused fix-login · codex:sess-w/, 15_000);
    const leases = await workbench.waitForRow('Leases', /fix-login in repo · codex:sess-a · epoch 1/);
    expect(leases.filter((row) => row.startsWith('fix-login'))).toHaveLength(1);
  });
});

// A team store (docs/team.md, spec §4 "Change feed" and §9): the window's store is a real PostgreSQL
// server, chosen by the machine-scoped setting `turnkeeper.store` (code-server applies machine
// settings from its Machine settings file only). Two "machines" share it: the editor's (its own
// TURNKEEPER_HOME and clone) and another one, whose hook claims a Todo in its own process. The
// extension follows the server's LISTEN/NOTIFY feed, so the Leases view shows the new holder without
// a refresh, sooner than its 5 s poll could. To tell the feed from the poll, each claim is made just
// after a poll tick, read from the server: the extension's last head read in pg_stat_activity.
describe('a team store', () => {
  const pg = usePostgres({ beforeAll, afterAll });
  const DATABASE = 'team';
  const ORIGIN = 'https://example.invalid/acme/app.git';
  /** PostgresRows.follow's poll interval. */
  const POLL_MS = 5000;
  /** The bound on the view's update through the feed (less than the poll interval). */
  const FEED_MS = 3000;
  const HEAD_READ = 'SELECT seq FROM turnkeeper.receipt_head WHERE id = 1';

  interface Machine {
    readonly clone: string;
    readonly env: Record<string, string>;
  }
  let store: string;
  let editorMachine: Machine;
  let otherMachine: Machine;
  let server: CodeServer;
  let page: Page;
  let workbench: Workbench;

  const git = (cwd: string, ...args: string[]) =>
    execFileSync('git', ['-c', 'user.email=t@example.invalid', '-c', 'user.name=t', ...args], { cwd, stdio: 'ignore' });

  function makeMachine(name: string, cloneName: string, upstream: string): Machine {
    const base = join(world.root, name);
    const clone = join(base, 'src', cloneName);
    execFileSync('git', ['clone', '-q', upstream, clone], { stdio: 'ignore' });
    git(clone, 'remote', 'set-url', 'origin', ORIGIN);
    const env = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: join(base, 'home'),
      TURNKEEPER_HOME: join(base, 'tkhome'),
      TMPDIR: join(base, 'tmp'),
      TURNKEEPER_STORE: store,
    };
    for (const dir of [env.HOME, env.TMPDIR]) mkdirSync(dir, { recursive: true });
    return { clone, env };
  }

  /** The real CLI on `machine`, in its own process (async: the page keeps being driven meanwhile). */
  function runOn(machine: Machine, args: string[], input = ''): Promise<{ code: number | null; stdout: string; stderr: string; exitedAt: number }> {
    return new Promise((done, fail) => {
      const child = spawn(process.execPath, [CLI, ...args], { cwd: machine.clone, env: machine.env });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      child.on('error', fail);
      child.on('close', (code) => done({ code, stdout, stderr, exitedAt: Date.now() }));
      child.stdin.end(input);
    });
  }

  /** A Codex prompt naming `todo` on `machine`: its hook claims the Todo. Returns when the hook exited. */
  async function claimOn(machine: Machine, todo: string, session: string): Promise<number> {
    const transcript = join(machine.env.HOME!, `${session}.jsonl`);
    writeFileSync(transcript, '');
    const prompt = {
      session_id: session,
      turn_id: 'turn-1',
      transcript_path: transcript,
      cwd: machine.clone,
      hook_event_name: 'UserPromptSubmit',
      model: 'gpt-test',
      permission_mode: 'default',
      prompt: `please work on #todo:${todo}`,
    };
    const run = await runOn(machine, ['hook'], JSON.stringify(prompt));
    expect(run.code, run.stderr).toBe(0);
    expect(contextOf(run.stdout) ?? '', run.stdout + run.stderr).toMatch(new RegExp(`^Turnkeeper: Todo ${todo}`));
    return run.exitedAt;
  }

  /** When the extension last read the chain head (its poll; ms since the epoch), per the server. */
  async function lastHeadRead(): Promise<number | undefined> {
    const out = await pg().psql(
      `SELECT (extract(epoch FROM max(query_start)) * 1000)::int8 FROM pg_stat_activity WHERE datname = '${DATABASE}' AND application_name = 'turnkeeper' AND query = '${HEAD_READ}'`,
    );
    return out === '' ? undefined : Number(out);
  }

  /** Waits for the extension's next poll tick and returns its time: the one after is POLL_MS away. */
  async function afterPollTick(): Promise<number> {
    const before = await lastHeadRead();
    const deadline = Date.now() + POLL_MS * 2 + 2000;
    for (;;) {
      const at = await lastHeadRead();
      if (at !== undefined && at !== before) return at;
      if (Date.now() > deadline) throw new Error(`the extension read the head no more (last at ${before}): is it following ${DATABASE}?`);
      await new Promise((done) => setTimeout(done, 50));
    }
  }

  /** Polls the Leases view (no refresh command, no clicks but expanding) until `row` shows; its time, or undefined. */
  async function leaseRowAt(row: RegExp, timeoutMs: number): Promise<number | undefined> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if ((await workbench.rows('Leases')).some((text) => row.test(text))) return Date.now();
      await page.waitForTimeout(50);
    }
    return undefined;
  }

  beforeAll(async () => {
    await pg().createDatabase(DATABASE);
    store = pg().url(DATABASE);
    const upstream = join(world.root, 'team-upstream');
    mkdirSync(upstream);
    git(upstream, 'init', '-q');
    writeFileSync(join(upstream, 'README.md'), 'app\n');
    git(upstream, 'add', '.');
    git(upstream, 'commit', '-qm', 'init');
    // One repository (one origin URL, hence one Goal), cloned on two machines under different names,
    // so that a row says which machine's checkout holds the lease.
    editorMachine = makeMachine('editor-machine', 'app', upstream);
    otherMachine = makeMachine('other-machine', 'app-elsewhere', upstream);
    const init = await runOn(editorMachine, ['store', 'init']);
    expect(init.code, init.stderr).toBe(0);
    for (const id of ['seeded', 'notified', 'polled']) {
      const add = await runOn(otherMachine, ['todo', 'add', `Task ${id}`, '--id', id]);
      expect(add.code, add.stderr).toBe(0);
    }
    await claimOn(otherMachine, 'seeded', 'sess-seed');
    server = await startCodeServer({
      entry,
      vsix,
      trusted: true,
      // Nothing names the store but the machine setting: no TURNKEEPER_STORE, no config.json.
      env: { TURNKEEPER_HOME: editorMachine.env.TURNKEEPER_HOME! },
      settings: QUIET_SETTINGS,
      machineSettings: { 'turnkeeper.store': store, 'turnkeeper.agents.codex.path': standInAgent },
    });
    ({ page, workbench } = await openWorkbench(server, editorMachine.clone));
    await workbench.openContainer('Turnkeeper');
    // The window opened the team store: it shows the lease the other machine took before.
    await workbench.waitForRow('Leases', /seeded in app-elsewhere · codex:sess-seed · epoch 1/);
  }, 180_000);
  afterEach(async (context) => {
    if (context.task.result?.state === 'fail') await keepFailure(context.task.name, page, server);
  });
  afterAll(async () => {
    await page?.context().close();
    await server?.stop();
  });

  it('names the authority in the status bar, host:port/database and never the password', async () => {
    const label = `team: 127.0.0.1:${pg().port}/${DATABASE}`;
    const item = workbench.statusBarItem(label);
    await item.waitFor({ timeout: 30_000 });
    // Its text and its accessible name (what a screen reader says), without waiting for either.
    const text = await item.evaluate(
      (element: PageElement) =>
        `${element.textContent ?? ''} ${[element, ...element.querySelectorAll('[aria-label]')].map((node) => node.getAttribute('aria-label') ?? '').join(' ')}`,
    );
    expect(text).toMatch(new RegExp(`\\b1 · ${label.replace(/[.]/g, '\\.')}`));
    expect(text).not.toContain(pg().adminPassword);
  });

  it('shows a lease taken by a hook on another machine without a refresh, through the feed (before the next poll tick)', async () => {
    const row = /notified in app-elsewhere · codex:sess-notify · epoch 1/;
    expect((await workbench.rows('Leases')).some((text) => row.test(text))).toBe(false);
    const tick = await afterPollTick();
    const exitedAt = await claimOn(otherMachine, 'notified', 'sess-notify');
    expect(exitedAt - tick, 'the hook took too long for this test to tell the feed from the poll').toBeLessThan(POLL_MS - FEED_MS);
    const shownAt = await leaseRowAt(row, FEED_MS);
    process.stderr.write(
      `team store, feed: the Leases row showed ${shownAt === undefined ? `not within ${FEED_MS}` : shownAt - exitedAt} ms after the hook exited (${exitedAt - tick} ms after a poll tick)\n`,
    );
    expect(shownAt, `the Leases view did not show the other machine's lease within ${FEED_MS} ms of its hook`).toBeDefined();
    // Before the poll could have found it: the next tick is POLL_MS after the one the claim followed.
    expect(shownAt!).toBeLessThan(tick + POLL_MS);
    await workbench.waitForRow('Todos', /notified in app-elsewhere · codex:sess-notify · epoch 1/, 5_000);
    await page.screenshot({ path: join(IMAGES, 'team-store.png') });
  });

  it('control: without the NOTIFY trigger the same claim shows only at the next poll tick', async () => {
    await pg().psql('ALTER TABLE turnkeeper.receipts DISABLE TRIGGER receipts_notify', DATABASE);
    try {
      const row = /polled in app-elsewhere · codex:sess-poll · epoch 1/;
      const tick = await afterPollTick();
      const exitedAt = await claimOn(otherMachine, 'polled', 'sess-poll');
      expect(exitedAt - tick, 'the hook took too long for this control to tell the feed from the poll').toBeLessThan(POLL_MS - FEED_MS);
      expect(await leaseRowAt(row, tick + POLL_MS - 500 - Date.now()), 'shown before the poll tick, with no NOTIFY').toBeUndefined();
      const shownAt = await leaseRowAt(row, 3000);
      process.stderr.write(
        `team store, poll only: the Leases row showed ${shownAt === undefined ? 'never' : shownAt - exitedAt} ms after the hook exited (${shownAt === undefined ? '-' : shownAt - tick} ms after the previous tick)\n`,
      );
      expect(shownAt, 'the poll did not show the lease either').toBeDefined();
    } finally {
      await pg().psql('ALTER TABLE turnkeeper.receipts ENABLE TRIGGER receipts_notify', DATABASE);
    }
  });
});
