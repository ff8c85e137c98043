// The packaged extension in a real VS Code (code-server 4.139, VS Code 1.139 on Node 24), driven by
// Debian's chromium: install the .vsix, seed a store with the real CLI, and check what a user sees.
// Harness: test/vscode/ (docs/packaging.md, "End to end").
//
// What each part proves:
// - trusted workspace: the views show a store seeded by the CLI and follow hooks run in other
//   processes. "Start Turn on Todo" runs the real Codex TUI (@openai/codex 0.171, against a loopback
//   stand-in model) in the editor's integrated terminal through the native launcher, whose launch
//   receipt names the TUI's own process; a prompt typed into that terminal as a person types it
//   claims the Todo through Codex's own hook (the model receives the ready capture; the Todos and
//   Leases views and the status bar show the lease), and the model's tool call runs. After quitting
//   the TUI, "Resume Captured Turn" names the drift that tool made, and on "Resume Anyway" relaunches
//   Codex on the same session in the editor's terminal, whose next prompt is told it still holds the
//   same capture's lease. A released capture shows its recovery guidance instead of resuming, and
//   a tampered receipt is named. "Start Turn in New Worktree" creates the Todo's linked worktree at
//   its documented place on `todo/<id>` and runs Codex there, whose prompt claims the Todo from that
//   checkout and whose tool commits; "Finish Todo…" refuses while that worktree is dirty, leaving the
//   repository and the store as they were, then merges it, marks the Todo done, releases the lease
//   (a `todo_finished` receipt) and removes the worktree and branch;
// - untrusted workspace: read-only, the views show the store, nothing launches;
// - a linked worktree: the window shows the lease held from the main checkout, and a refused claim;
// - a team store (PostgreSQL): the window follows another machine's claim through LISTEN/NOTIFY.
// The screenshots in docs/images come from these runs (UPDATE_SCREENSHOTS=1).
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { like } from '../support/matchers';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import type { Browser, Page } from 'playwright-core';
import { CLI, contextOf, makeWorld, payload, type World } from '../support/world';
import { usePostgres } from '../support/postgres';
import { addWorktree } from '../support/agentHarness';
import { cleanupCodexHome, makeCodexHome, MOCK_API_KEY_ENV, trustAllHooks, writeCodexConfig, type CodexHome } from '../support/codexHarness';
import { developerTexts, shellCallReply, startMockModelServer, textReply, type MockModelServer, type RecordedRequest } from '../support/mockModelServer';
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
// The real Codex CLI: its npm shim, which the launcher replaces by the native binary it execs.
const CODEX_SHIM = join(ROOT, 'node_modules/.bin/codex');
/** The TUI's composer placeholder: drawn once the TUI is ready for a prompt. */
const TUI_READY = /Ask Codex to do anything/;
const TOOL_PROMPT = 'please run the tool';
const TOOL_DONE = 'The tool ran.';
/** A word of start-me's body: the model receives it only inside the ready capture. */
const START_WORD = 'heron-4471';
/** The prompt the stand-in model answers with a shell call that commits in the checkout, and that commit's subject. */
const COMMIT_PROMPT = 'please commit the work';
const COMMIT_SUBJECT = 'Add shipped.txt';
/** A word of ship-it's body (the Todo started in its own worktree). */
const WORKTREE_WORD = 'osprey-2210';

/**
 * The stand-in model: a shell call for a prompt that asks for the tool (or for a commit), TOOL_DONE
 * once its output is back, "ok" to anything else (a resumed conversation's history holds the earlier
 * call and output).
 */
function modelScript(request: RecordedRequest) {
  const input = request.body?.input ?? [];
  const lastPrompt = input.findLastIndex((item) => item.type === 'message' && item.role === 'user');
  if (input.findLastIndex((item) => item.type === 'function_call_output') > lastPrompt) return textReply(TOOL_DONE);
  const prompt = JSON.stringify(input[lastPrompt] ?? {});
  if (prompt.includes(COMMIT_PROMPT)) return shellCallReply(`echo shipped > shipped.txt && git add shipped.txt && git commit -qm '${COMMIT_SUBJECT}'`);
  return prompt.includes(TOOL_PROMPT) ? shellCallReply('echo tool-ran > tool-ran.txt') : textReply('ok');
}

let codex: CodexHome;
let mock: MockModelServer;
/** What the editor's extension host (and so every agent it launches) has of Codex's environment. */
let codexEnv: Record<string, string>;
const presentations = () => mock.requests.flatMap((request) => developerTexts(request)).filter((text) => text.startsWith('Turnkeeper: Todo'));
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

/** The active lease on `todo`, from the CLI. */
function activeLease(todo: string): { capture: string; owner: string; epoch: number } {
  const status = JSON.parse(cli(['status', '--json'])) as { leases: { todo: string; capture: string; owner: string; epoch: number; status: string }[] };
  const lease = status.leases.find((candidate) => candidate.todo === todo && candidate.status === 'active');
  if (!lease) throw new Error(`no active lease on ${todo}: ${JSON.stringify(status.leases)}`);
  return lease;
}

/** A running process's arguments and its TURNKEEPER_* variables, from /proc. */
const argvOf = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(0, -1);
const environOf = (pid: number): Record<string, string> =>
  Object.fromEntries(
    readFileSync(`/proc/${pid}/environ`, 'utf8')
      .split('\0')
      .filter((entry) => entry.startsWith('TURNKEEPER_'))
      .map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]),
  );
/** Whether `pid` runs (a zombie, exited but not yet reaped, does not). */
function isRunning(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]![0] !== 'Z';
  } catch {
    return false;
  }
}

beforeAll(async () => {
  // Not a skip: a machine without chromium cannot prove the extension works.
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run .ci/run, or apt-get install chromium libkrb5-dev`);
  entry = ensureCodeServer();
  vsix = buildVsix();
  world = makeWorld('tk-vscode');
  mock = await startMockModelServer({ script: modelScript });
  // Codex as a person has it set up before Start Turn: a model provider (the loopback stand-in), the
  // repository trusted, Turnkeeper's hooks installed (Start Turn offers to otherwise) and trusted as
  // reviewing them in /hooks does. The editor's extension host sees it all through CODEX_HOME.
  codex = makeCodexHome({ prefix: 'tk-vscode-codex-', extraEnv: { TURNKEEPER_HOME: world.home } });
  writeCodexConfig(codex.codexHome, mock.url, `\n[projects."${world.repo}"]\ntrust_level = "trusted"\n`);
  expect(world.cli(['hooks', 'install', '--agent', 'codex'], { env: { CODEX_HOME: codex.codexHome } }).code).toBe(0);
  expect((await trustAllHooks(codex.codexHome, codex.env, world.repo)).length).toBeGreaterThan(0);
  // TERM as VS Code's own terminals set it: xterm.js is the terminal the TUI draws in.
  codexEnv = { CODEX_HOME: codex.codexHome, [MOCK_API_KEY_ENV]: codex.env[MOCK_API_KEY_ENV]!, RUST_LOG: 'error', TERM: 'xterm-256color' };
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
  await mock?.close();
  if (codex) cleanupCodexHome(codex);
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
      env: { TURNKEEPER_HOME: world.home, ...codexEnv },
      // The panel opens maximized (beside the side bar): the TUI gets a screen's room from its start,
      // and the screenshots show it with the views.
      settings: { ...QUIET_SETTINGS, 'workbench.panel.opensMaximized': 'always' },
      machineSettings: { 'turnkeeper.agents.codex.path': CODEX_SHIM },
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

  /**
   * Types a prompt into the TUI as a person does: the keys one by one, until the composer shows them,
   * then End (a key that is no character, which ends the TUI's paste detection window, so the Enter
   * after it submits rather than adding a line), then Enter.
   */
  async function typePrompt(text: string): Promise<void> {
    await workbench.typeInTerminal(text);
    await workbench.waitForTerminalText(new RegExp(text), 15_000);
    await workbench.pressInTerminal('End');
    await workbench.pressInTerminal('Enter');
  }

  /** The extension's log line for its launch on `subject` (a Todo or a capture): the receipt and the pid it names. */
  function launchLogged(subject: string): { seq: number; pid: number } | undefined {
    const hit = grepLogs(server.userDataDir, new RegExp(`launched codex for ${subject}: launch receipt #(\\d+), pid (\\d+)`))[0];
    return hit && { seq: Number(hit.match[1]), pid: Number(hit.match[2]) };
  }

  /**
   * Ctrl-C, and again if the TUI asks for it ("ctrl + c again to quit": an idle TUI quits on the first),
   * then waits for Codex to exit and its terminal to close with it. First waits for the TUI to be
   * idle: `turns` turn_ended receipts on `todo` (its Stop hook's) and no "esc to interrupt" on screen.
   * The model's answer shows before the Stop hook ends the turn, and a Ctrl-C then interrupts the
   * turn instead of quitting ("Conversation interrupted"), after which no second Ctrl-C is asked for.
   */
  async function quitTui(pid: number, todo: string, turns: number): Promise<void> {
    const ended = () => receipts().filter((receipt) => receipt.doc.kind === 'turn_ended' && receipt.doc.todo === todo).length;
    await expect.poll(ended, { timeout: 30_000 }).toBe(turns);
    await expect.poll(async () => /esc to interrupt/.test(await workbench.terminalText()), { timeout: 30_000 }).toBe(false);
    await workbench.pressInTerminal('Control+c');
    await expect.poll(async () => !isRunning(pid) || / again to quit/.test(await workbench.terminalText()), { timeout: 20_000 }).toBe(true);
    if (isRunning(pid)) await workbench.pressInTerminal('Control+c');
    await expect.poll(() => isRunning(pid), { timeout: 20_000 }).toBe(false);
    await expect.poll(() => page.locator('.terminal-wrapper').count(), { timeout: 15_000 }).toBe(0);
  }

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

  it('lists the Todos with their holders; Start Turn on Todo runs the real Codex TUI in the editor terminal through the launcher, a prompt typed there claims the Todo and its tool call runs', async () => {
    cli(['todo', 'add', 'Start me', '--id', 'start-me', '--body', `Started from the editor (${START_WORD}).`]);
    // The new Todo and the held one, in one snapshot of the view.
    await workbench.waitForRow('Todos', ['start-me Start me', /fix-login (?:[a-z ]+ · )?in repo · codex:sess-a · epoch 1/], 15_000);
    await workbench.runCommand('Turnkeeper: Start Turn on Todo');
    await workbench.pickQuickItem('start-me');
    await workbench.pickQuickItem('Codex CLI');
    const started = () => receipts().filter((receipt) => receipt.doc.kind === 'launch_committed' && receipt.doc.todo === 'start-me');
    await expect.poll(() => started().length, { timeout: 30_000 }).toBe(1);
    const [{ seq, doc }] = started() as [Receipt];
    expect(doc.capture).toBeUndefined();
    expect(doc.detail).toMatchObject({ start: true, agent: 'codex' });
    const pid = doc.detail!.pid as number;
    // The process the receipt names is Codex's native binary, interactive on its embedded app server.
    expect(argvOf(pid).slice(1)).toEqual(['--no-daemon']);
    expect(environOf(pid)).toMatchObject({ TURNKEEPER_TODO: 'start-me', TURNKEEPER_LAUNCH: doc.detail!.launch, TURNKEEPER_TURN: doc.detail!.turn });
    // The TUI draws in the editor's terminal. (The terminal's first line names the receipt, but the
    // TUI's alternate screen covers it at once: the extension's log names it for this test.)
    await workbench.waitForTerminalText(TUI_READY, 60_000);
    await expect.poll(() => launchLogged('start-me'), { timeout: 15_000 }).toEqual({ seq, pid });

    await typePrompt(TOOL_PROMPT);
    // Codex's own UserPromptSubmit hook claimed the Todo: the model receives the ready capture.
    await expect.poll(() => presentations().find((text) => text.startsWith('Turnkeeper: Todo start-me')) ?? '', { timeout: 60_000 }).toContain(START_WORD);
    const lease = activeLease('start-me');
    expect(presentations().find((text) => text.startsWith('Turnkeeper: Todo start-me'))).toContain(lease.capture);
    expect(lease.owner).toMatch(/^codex:[0-9a-f-]{36}$/); // Codex's own session id, not one made up here
    captureOf['start-me'] = lease.capture;
    const holder = new RegExp(`start-me (?:[a-z ]+ · )?in repo · ${lease.owner} · epoch 1`);
    await workbench.waitForRow('Todos', holder, 15_000);
    await workbench.waitForRow('Leases', holder, 15_000);
    await expect.poll(() => workbench.leaseCount(), { timeout: 15_000 }).toBe('3'); // fix-login, write-docs, start-me
    // The model's shell call ran in the checkout, and the TUI shows the model's answer after it.
    await expect.poll(() => existsSync(join(world.repo, 'tool-ran.txt')), { timeout: 60_000 }).toBe(true);
    await workbench.waitForTerminalText(new RegExp(TOOL_DONE.replace('.', '\\.')), 30_000);
    await workbench.clearNotifications();
    await page.screenshot({ path: join(IMAGES, 'todos.png') });
    await quitTui(pid, 'start-me', 1);
  });

  it('resumes the captured turn from the palette: drift named first, then Codex relaunched on its session in the editor terminal, still holding the same lease', async () => {
    const lease = activeLease('start-me');
    const session = lease.owner.slice('codex:'.length);
    // The tool's file was the session's own work once its turn ended (turn_ended): not drift. A file a
    // person writes after it is, and the product asks before resuming, naming it.
    await expect
      .poll(() => receipts().some((receipt) => receipt.doc.kind === 'turn_ended' && receipt.doc.capture === lease.capture), { timeout: 30_000 })
      .toBe(true);
    writeFileSync(join(world.repo, 'by-hand.txt'), 'a person wrote this\n');
    await workbench.runCommand('Turnkeeper: Resume Captured Turn');
    const offered = await workbench.quickPickRows(`resumable: ${lease.capture}`);
    // The other held capture is resumable too; the released one is offered, marked with its refusal.
    expect(offered.join('\n')).toContain(`resumable: ${captureOf['fix-login']}`);
    expect(offered.join('\n')).toMatch(/old-spike.*\[capture_released\]/);
    await workbench.pickQuickItem(lease.capture);
    const drift = await workbench.answerDialog(/workspace changed since this session left it/, 'Resume Anyway');
    expect(drift).toMatch(/since its last turn ended \([^)]+\), 1 path changed: A by-hand\.txt/);
    const committed = () => receipts().filter((receipt) => receipt.doc.kind === 'launch_committed' && receipt.doc.capture === lease.capture);
    await expect.poll(() => committed().length, { timeout: 30_000 }).toBe(1);
    const [{ seq, doc }] = committed() as [Receipt];
    expect(doc.detail).toMatchObject({ agent: 'codex', driftAccepted: like.stringMatching(/1 path changed: A by-hand\.txt$/) });
    const pid = doc.detail!.pid as number;
    // Codex's own resume of that session (on its embedded app server: --no-daemon, src/agents/profiles/codex.ts).
    expect(argvOf(pid).slice(1)).toEqual(['resume', '--no-daemon', session]);
    await workbench.waitForTerminalText(TUI_READY, 60_000);
    await expect.poll(() => launchLogged(lease.capture), { timeout: 15_000 }).toEqual({ seq, pid });
    await workbench.waitForRow('Receipts', `#${seq} launch_committed`, 15_000);

    await typePrompt('go on with it');
    // The resumed conversation already holds the ready capture: its next prompt is told it still holds the lease.
    await expect
      .poll(
        () => presentations().some((text) => text.startsWith(`Turnkeeper: Todo start-me · capture ${lease.capture}`) && text.includes('still holds the lease')),
        { timeout: 60_000 },
      )
      .toBe(true);
    await workbench.waitForTerminalText(/\bok\b/, 30_000);
    await workbench.clearNotifications();
    await page.screenshot({ path: join(IMAGES, 'resume.png') });
    await quitTui(pid, 'start-me', 2);
    expect(activeLease('start-me')).toMatchObject({ capture: lease.capture, epoch: lease.epoch });
    const kinds = receipts()
      .filter((receipt) => receipt.doc.todo === 'start-me')
      .map((receipt) => receipt.doc.kind);
    expect(kinds.filter((kind) => kind === 'lease_acquired')).toHaveLength(1);
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

  // Issue 20: a Todo's own worktree from the editor, and its way back (spec §7 "Start in a worktree",
  // "Finish"). One Todo goes through all three tests, in order: started in a new worktree, where Codex
  // commits its work on the Todo's branch; Finish refused while that worktree is dirty; then the same
  // Finish, on the worktree made clean, merges and removes it (the refusal's control).
  describe('a Todo in its own worktree', () => {
    const todo = 'ship-it';
    const branch = `todo/${todo}`;
    /** The documented default location: `<parent of the main checkout>/<its folder>.worktrees/<todo>` (world.root is a realpath). */
    const worktree = () => join(world.root, 'repo.worktrees', todo);
    const git = (cwd: string, ...args: string[]) => execFileSync('git', ['-C', cwd, ...args], { encoding: 'utf8' }).trim();
    /** Linked worktrees as git lists them: path → branch ref. */
    const worktrees = () =>
      Object.fromEntries(
        git(world.repo, 'worktree', 'list', '--porcelain')
          .split('\n\n')
          .map((block) => [/^worktree (.*)$/m.exec(block)?.[1], /^branch (.*)$/m.exec(block)?.[1] ?? null]),
      ) as Record<string, string | null>;
    const todoStatus = () => (JSON.parse(cli(['todo', 'list', '--json'])) as { id: string; status: string }[]).find((row) => row.id === todo)?.status;
    const activeLeaseOf = () =>
      (JSON.parse(cli(['status', '--json'])) as { leases: { todo: string; status: string }[] }).leases.filter(
        (lease) => lease.todo === todo && lease.status === 'active',
      );
    /** Everything a refused finish must leave as it was: both checkouts' HEADs, branches, status and the worktree's files. */
    function repositoryState(): Record<string, string> {
      const files = (dir: string): string[] =>
        readdirSync(dir, { recursive: true, encoding: 'utf8' })
          .filter((path) => path !== '.git' && statSync(join(dir, path)).isFile())
          .sort()
          .map(
            (path) =>
              `${path}:${createHash('sha256')
                .update(readFileSync(join(dir, path)))
                .digest('hex')}`,
          );
      return {
        mainHead: git(world.repo, 'rev-parse', 'HEAD'),
        mainStatus: git(world.repo, 'status', '--porcelain=v1', '--untracked-files=all'),
        refs: git(world.repo, 'for-each-ref', '--format=%(refname) %(objectname)'),
        worktrees: git(world.repo, 'worktree', 'list', '--porcelain'),
        worktreeHead: git(worktree(), 'rev-parse', 'HEAD'),
        worktreeStatus: git(worktree(), 'status', '--porcelain=v1', '--untracked-files=all'),
        worktreeFiles: files(worktree()).join('\n'),
      };
    }
    /** Finish Todo… from the palette: the Todo, merge, remove the worktree, and (the Todo is held by Codex) confirm and give a reason. */
    async function finishFromPalette(): Promise<void> {
      await workbench.runCommand('Turnkeeper: Finish Todo');
      await workbench.pickQuickItem(todo);
      await workbench.pickQuickItem('Merge: a merge commit');
      await workbench.pickQuickItem('Remove the worktree and its branch');
      await workbench.answerDialog(new RegExp(`${todo} is held by codex:.*Finish it\\?`), 'Finish');
      await workbench.answerInput('shipped from the editor');
    }
    let pid: number;
    let mainBefore: string;

    it('Start Turn in New Worktree from the palette: a linked worktree on todo/<id> at the default location, Codex runs there, and the prompt typed there claims the Todo from that checkout', async () => {
      cli(['todo', 'add', 'Ship it', '--id', todo, '--body', `Started in its own worktree (${WORKTREE_WORD}).`]);
      mainBefore = git(world.repo, 'rev-parse', 'HEAD');
      // The repository's identity, as a person's has one: the agent's commit and Finish's merge commit
      // need it, and the editor's HOME (code-server's own) has no git config.
      git(world.repo, 'config', 'user.name', 'T. Keeper');
      git(world.repo, 'config', 'user.email', 't@example.invalid');
      await workbench.waitForRow('Todos', `${todo} Ship it`, 15_000);
      // From the palette, as a person does. Not from the Todos view's context menu: started there, the
      // agent pick closed as soon as it opened (3 runs of 3, code-server 4.139; issue 20's report).
      await workbench.runCommand('Turnkeeper: Start Turn in New Worktree');
      await workbench.pickQuickItem(todo);
      await workbench.pickQuickItem('Codex CLI');
      const started = () => receipts().filter((receipt) => receipt.doc.kind === 'launch_committed' && receipt.doc.todo === todo);
      await expect.poll(() => started().length, { timeout: 30_000 }).toBe(1);
      const [{ doc }] = started() as [Receipt];
      expect(doc.detail).toMatchObject({ start: true, agent: 'codex', checkout: worktree(), branch, worktreeCreated: true });
      // git's own list: a linked worktree there, on the Todo's branch, made at the main checkout's HEAD.
      expect(worktrees()[worktree()]).toBe(`refs/heads/${branch}`);
      expect(git(worktree(), 'rev-parse', 'HEAD')).toBe(mainBefore);
      pid = doc.detail!.pid as number;
      expect(readlinkSync(`/proc/${pid}/cwd`)).toBe(worktree());
      await workbench.waitForTerminalText(TUI_READY, 60_000);

      // The stand-in model answers this prompt with a shell call that commits in the worktree: the
      // agent's work on the Todo's branch is what Finish merges, so the agent makes it (Codex runs
      // here with danger-full-access, so its shell may write the repository's .git).
      await typePrompt(COMMIT_PROMPT);
      await expect.poll(() => presentations().find((text) => text.startsWith(`Turnkeeper: Todo ${todo}`)) ?? '', { timeout: 60_000 }).toContain(WORKTREE_WORD);
      const lease = activeLease(todo);
      expect(lease.owner).toMatch(/^codex:[0-9a-f-]{36}$/);
      // The capture records the worktree as its checkout, and the Todo's branch.
      const db = new Database(world.db, { readonly: true });
      try {
        expect(db.prepare('SELECT checkout, branch FROM captures WHERE id = ?').get(lease.capture)).toEqual({ checkout: worktree(), branch });
      } finally {
        db.close();
      }
      await workbench.waitForRow('Todos', new RegExp(`${todo} (?:[a-z ]+ · )?in ${todo} · ${lease.owner} · epoch 1`), 15_000);
      await expect.poll(() => git(worktree(), 'log', '-1', '--format=%s'), { timeout: 60_000 }).toBe(COMMIT_SUBJECT);
      await workbench.waitForTerminalText(new RegExp(TOOL_DONE.replace('.', '\\.')), 30_000);
      await workbench.clearNotifications();
      await page.screenshot({ path: join(IMAGES, 'worktree-start.png') });
      // Quit before finishing: Finish removes the worktree this TUI runs in.
      await quitTui(pid, todo, 1);
    });

    it('Finish Todo… refuses a dirty worktree with [worktree_dirty]: the repository and the store as they were', async () => {
      // The guidance document of an earlier test would fill the screenshots.
      await workbench.runCommand('View: Close All Editors');
      // A file the agent left uncommitted (untracked counts: removing the worktree would lose it).
      writeFileSync(join(worktree(), 'notes.txt'), 'not committed\n');
      const before = repositoryState();
      const receiptsBefore = receipts().length;
      await finishFromPalette();
      const refusal = page.locator('.monaco-dialog-box').filter({ hasText: `did not finish ${todo}: [worktree_dirty]` });
      await refusal.waitFor({ state: 'visible', timeout: 30_000 });
      await page.screenshot({ path: join(IMAGES, 'finish-refused.png') });
      const message = await workbench.answerDialog(/did not finish/, 'OK');
      expect(message).toContain(`the Todo's worktree ${worktree()} has changes in 1 path (notes.txt)`);
      expect(repositoryState()).toEqual(before);
      expect(receipts().length).toBe(receiptsBefore);
      expect(todoStatus()).toBe('open');
      expect(activeLeaseOf()).toHaveLength(1);
    });

    it('Finish Todo… merges the branch into the main checkout: the Todo done, its lease released, todo_finished in the chain, the worktree and branch removed', async () => {
      // The control of the refusal: the same flow, the worktree now clean.
      rmSync(join(worktree(), 'notes.txt'));
      const commit = git(worktree(), 'rev-parse', 'HEAD');
      const into = git(world.repo, 'branch', '--show-current');
      await finishFromPalette();
      await workbench.waitForNotification(new RegExp(`Todo ${todo} is done: merge of ${branch} into ${into} \\(1 commit\\)`));
      // The main branch has the agent's commit, under a merge commit that names the Todo.
      expect(execFileSync('git', ['-C', world.repo, 'merge-base', '--is-ancestor', commit, 'HEAD']).length).toBe(0);
      expect(git(world.repo, 'log', '-1', '--format=%s%n%P')).toBe(`Merge Todo ${todo} (${branch}): Ship it\n${mainBefore} ${commit}`);
      expect(readFileSync(join(world.repo, 'shipped.txt'), 'utf8')).toBe('shipped\n');
      expect(todoStatus()).toBe('done');
      expect(activeLeaseOf()).toHaveLength(0);
      const finished = receipts().filter((receipt) => receipt.doc.kind === 'todo_finished' && receipt.doc.todo === todo);
      expect(finished).toHaveLength(1);
      expect(finished[0]!.doc.detail).toMatchObject({
        strategy: 'merge',
        branch,
        branchHead: commit,
        commits: 1,
        into,
        worktree: worktree(),
        headBefore: mainBefore,
        merged: true,
        worktreeRemoved: true,
        branchDeleted: true,
      });
      expect(world.cli(['verify']).code).toBe(0);
      // The flow offered removal and it was chosen: the worktree and its branch are gone.
      expect(worktrees()[worktree()]).toBeUndefined();
      expect(existsSync(worktree())).toBe(false);
      expect(execFileSync('git', ['-C', world.repo, 'branch', '--list', branch], { encoding: 'utf8' })).toBe('');
      // The Todos view lists it in the Done group (the last one), with its title and no holder.
      const inDone = async () => {
        await workbench.expandAll('Todos');
        const rows = await workbench.rows('Todos');
        const done = rows.findIndex((row) => /^Done \d+/.test(row));
        return done >= 0 && rows.findIndex((row) => row.startsWith(`${todo} Ship it`)) > done;
      };
      await expect.poll(inDone, { timeout: 15_000 }).toBe(true);
      await page.screenshot({ path: join(IMAGES, 'finish.png') });
      await workbench.clearNotifications();
    });
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
      machineSettings: { 'turnkeeper.agents.codex.path': CODEX_SHIM },
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
      machineSettings: { 'turnkeeper.agents.codex.path': CODEX_SHIM },
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
      machineSettings: { 'turnkeeper.store': store, 'turnkeeper.agents.codex.path': CODEX_SHIM },
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
    await workbench.waitForRow('Todos', /notified (?:[a-z ]+ · )?in app-elsewhere · codex:sess-notify · epoch 1/, 5_000);
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
