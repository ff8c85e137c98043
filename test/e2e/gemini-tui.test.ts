// The real interactive Gemini CLI (0.61, `gemini` without -p) in a real terminal (tmux), started
// through `turnkeeper start <todo> --agent gemini --interactive` as a person starts it (the launcher
// runs it from its attested closure), with Turnkeeper's hooks installed by the real CLI, talking to a
// stand-in Gemini API on 127.0.0.1. The repository is trusted as Gemini's trust dialog trusts it
// (trustedFolders.json), so it opens on its prompt; everything after that is typed into the terminal.
//
// What each test proves:
// - the launched Gemini owns the terminal (its process group is the terminal's foreground group) and
//   draws its prompt; a prompt typed into it, naming no Todo, claims the started Todo through Gemini's
//   own BeforeAgent hook (the launch's Turn: Gemini's payloads carry none), and the model receives the
//   ready capture's text;
// - start → prompt → claim → shell tool call, allowed in Gemini's own confirmation as a person allows
//   it (it writes a file) → quit with Ctrl-C twice → `turnkeeper resume --interactive` in a new
//   terminal: the tool's change is the session's own work (no drift), a file written by hand after the
//   turn ended is a drift resume names (and starts nothing), `--accept-drift` reopens
//   Gemini on the same session (its history carries the first prompt), whose next typed prompt gets
//   the same capture's stored bytes, lease unchanged.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeWorld, CLI, type World } from '../support/world';
import { asHookContext, contentsText, lastFunctionResponse, lastUserText, startGeminiMock, type GeminiMock, type GeminiRequest } from '../support/geminiMock';
import {
  BIN,
  geminiEnv,
  installHooksWithCli,
  killAll,
  presentationOf,
  expectOwnTurnIsNoDrift,
  receiptDocs,
  statusOf,
  trustGeminiFolders,
  turnkeeperRun,
  type LeaseJson,
} from '../support/agentHarness';
import { startTmux, type Tmux } from '../support/tmux';
import { waitFor } from '../support/waitFor';

// The npm link to bundle/gemini.js: a script, so the launcher runs it from a closure.
const GEMINI = join(BIN, 'gemini');
// The input box's placeholder: drawn with the prompt, once Gemini reads keys.
const TUI_READY = /Type your message or @path\/to\/file/;
const TOOL_PROMPT = 'please run the tool';
const readyLine = (todo: string) => new RegExp(`<hook_context>Turnkeeper: Todo ${todo} · capture (cap_[0-9a-f]{24}) · epoch 1$`, 'm');

/** A shell call for the prompt that asks for the tool (once: a history with its result is past it); text otherwise. */
function modelScript(request: GeminiRequest) {
  if (lastFunctionResponse(request) !== undefined) return { text: 'done' };
  const ran = (request.body?.contents ?? []).some((content) => (content.parts ?? []).some((part) => part.functionResponse !== undefined));
  if (!ran && lastUserText(request).includes(TOOL_PROMPT))
    return { functionCall: { name: 'run_shell_command', args: { command: 'echo tool-ran > tool-ran.txt', description: 'write a file' } } };
  return { text: 'ok' };
}

let world: World;
let mock: GeminiMock;
let env: NodeJS.ProcessEnv;
const terminals: Tmux[] = [];

const turnkeeper = (args: string[]) => turnkeeperRun(args, { env, cwd: world.repo, timeoutMs: 90_000 });

/** A terminal running `command`; the test types into it as a person does. */
function terminal(command: readonly string[]): Tmux {
  const term = startTmux({ cwd: world.repo, env, command });
  terminals.push(term);
  return term;
}
const startTui = (todo: string) => terminal([process.execPath, CLI, 'start', todo, '--agent', 'gemini', '--interactive', '--agent-bin', GEMINI]);

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Waits, as a person does, until Gemini's input box is drawn and no hook is running ("Executing Hook: turnkeeper" while SessionStart runs). */
async function ready(term: Tmux): Promise<void> {
  let last = '';
  const shown = await waitFor(() => TUI_READY.test((last = term.screen())) && !/Executing Hook/.test(last), 60_000, 100);
  expect(shown, `Gemini never drew an idle prompt; the terminal shows:\n${last}`).toBe(true);
}

/**
 * Types a prompt as a person does: the text, until the input box shows it, a pause, Enter (keys that
 * arrive together are a paste, and its Enter a newline).
 */
async function prompt(term: Tmux, text: string): Promise<void> {
  term.type(text);
  await term.waitForText(new RegExp(`> +${escape(text)}`), 10_000);
  await new Promise((resolve) => setTimeout(resolve, 500));
  term.keys('Enter');
}

/**
 * The terminal once a typed prompt's turn is over: the prompt, the model's answer, and no hook still
 * running (Gemini draws "Executing Hook(s): turnkeeper" while AfterAgent runs).
 */
async function answered(term: Tmux, typed: string, answer: string): Promise<string> {
  const pattern = new RegExp(`> ${escape(typed)}[\\s\\S]*✦ ${escape(answer)}`);
  let last = '';
  const over = await waitFor(() => pattern.test((last = term.screen())) && !/Executing Hook/.test(last), 30_000, 100);
  expect(over, `the turn of ${JSON.stringify(typed)} never ended with ${JSON.stringify(answer)}; the terminal shows:\n${last}`).toBe(true);
  return last;
}

/** Ctrl-C twice, as a person quits Gemini: the first arms it ("Press Ctrl+C again to exit"), the second ends it. */
async function quit(term: Tmux): Promise<void> {
  term.keys('C-c');
  await term.waitForText(/Press Ctrl\+C again to exit/, 10_000);
  term.keys('C-c');
  expect(await waitFor(() => term.exited(), 20_000, 100), `Gemini did not quit on Ctrl-C twice:\n${term.screen()}`).toBe(true);
}

/** The turn request that carried `text` (a typed prompt), once the model got it. */
async function turnRequest(term: Tmux, from: number, text: string): Promise<GeminiRequest> {
  let found: GeminiRequest | undefined;
  const seen = await waitFor(() => (found = mock.requests.slice(from).find((request) => lastUserText(request).includes(text))) !== undefined, 60_000, 100);
  expect(seen, `the model never got ${JSON.stringify(text)}; the terminal shows:\n${term.screen()}`).toBe(true);
  return found!;
}

beforeAll(async () => {
  mock = await startGeminiMock(modelScript);
  world = makeWorld('tk-e2e-gemini-tui');
  let home: string;
  ({ env, home } = geminiEnv(world, mock));
  env = { ...env, TERM: 'xterm-256color' };
  trustGeminiFolders(home, [world.repo]);
  for (const [id, word] of [
    ['fix-login', 'wren-5512'],
    ['fix-tool', 'lynx-2287'],
  ] as const)
    expect((await turnkeeper(['todo', 'add', `Task ${id}`, '--id', id, '--body', `Typed in the TUI (${word}).`])).code).toBe(0);
  installHooksWithCli(world, 'gemini', { GEMINI_CLI_HOME: home });
  expect(readFileSync(join(home, '.gemini', 'settings.json'), 'utf8')).toContain(`${world.home}/bin/turnkeeper' hook --agent gemini`);
});
afterEach(() => {
  for (const term of terminals.splice(0)) term.kill();
});
afterAll(async () => {
  killAll();
  await mock?.close();
  world?.cleanup();
});

describe('the interactive Gemini CLI in a terminal, started by turnkeeper start --interactive', () => {
  it('owns the terminal and draws its prompt; a typed prompt claims the Todo through BeforeAgent and the model gets the ready capture', async () => {
    const term = startTui('fix-login');
    await ready(term);
    // The agent's process group is the terminal's foreground group (else its first read stops it).
    const launcher = term.panePid()!;
    const agentGroup = Number(readFileSync(`/proc/${term.foregroundGroup()}/stat`, 'utf8').split(') ')[1]!.split(' ')[2]);
    expect(term.foregroundGroup()).not.toBe(launcher);
    expect(agentGroup).toBe(term.foregroundGroup());

    const typed = 'please fix the login form';
    const from = mock.requests.length;
    await prompt(term, typed);
    const request = await turnRequest(term, from, typed);
    const lease = statusOf(world).leases.find((item) => item.todo === 'fix-login' && item.status === 'active');
    expect(lease, term.screen()).toMatchObject({ epoch: 1, owner: expect.stringMatching(/^gemini:/) as string });
    const text = lastUserText(request);
    expect(readyLine('fix-login').exec(text)?.[1], text.slice(0, 3000)).toBe(lease!.capture);
    expect(text).toContain(asHookContext(presentationOf(world, lease!.capture)));
    expect(text).toContain('wren-5512');
    await answered(term, typed, 'ok');
    await quit(term);
  });

  it('start → prompt → claim → allowed shell call → quit → resume: drift named first, then the resumed Gemini is on the same session with the same capture', async () => {
    const term = startTui('fix-tool');
    await ready(term);
    const typed = `${TOOL_PROMPT} for fix-tool`;
    const from = mock.requests.length;
    await prompt(term, typed);
    const first = await turnRequest(term, from, typed);
    // Gemini asks before it runs the command; the person allows it once (the selected choice).
    await term.waitForText(/Allow execution of \[Shell\]\?[\s\S]*1\. Allow once/, 30_000);
    term.keys('Enter');
    expect(await waitFor(() => existsSync(join(world.repo, 'tool-ran.txt')), 30_000, 100), term.screen()).toBe(true);
    await answered(term, typed, 'done');
    // The command ran through Gemini's tool loop: BeforeTool let the lease holder run it.
    expect(
      mock.requests.slice(from).some((request) => lastFunctionResponse(request) !== undefined && lastFunctionResponse(request)!.response?.error === undefined),
    ).toBe(true);
    await quit(term);
    const lease: LeaseJson = statusOf(world).leases.find((item) => item.todo === 'fix-tool' && item.status === 'active')!;
    expect(lease).toBeDefined();
    expect(readyLine('fix-tool').exec(lastUserText(first))?.[1]).toBe(lease.capture);
    expect(lastUserText(first)).toContain('lynx-2287');

    // The tool's change was the session's own work, recorded by its turn's end (turn_ended, written by
    // its stop hook): no drift, the resume would go on with no flag.
    await expectOwnTurnIsNoDrift(world, lease.capture, GEMINI);
    // A change nobody recorded, after the turn ended: resume names it and how to go on, and starts nothing.
    writeFileSync(join(world.repo, 'by-hand.txt'), 'a person wrote this\n');
    const before = mock.requests.length;
    const refused = terminal([process.execPath, CLI, 'resume', lease.capture, '--interactive', '--agent-bin', GEMINI]);
    await refused.waitForText(/--accept-drift/, 60_000);
    expect(await waitFor(() => refused.exited(), 10_000, 100)).toBe(true);
    expect(refused.screen()).toContain(`Turnkeeper [precondition_changed]: The workspace of capture ${lease.capture} changed since its session left it`);
    // The paths it names (the terminal wraps the line; the JSON does not).
    const named = world.cli(['resume', lease.capture, '--dry-run', '--json', '--agent-bin', GEMINI]);
    expect(named.stdout).toMatch(/since its last turn ended \([^)]+\), 1 path changed: A by-hand\.txt/);
    expect(mock.requests.length).toBe(before);

    const hookedBefore = (await receiptDocs(world)).filter((doc) => doc.kind === 'launch_hooked').length;
    // No --interactive: a person at a terminal gets the agent's own UI by default.
    const resumed = terminal([process.execPath, CLI, 'resume', lease.capture, '--accept-drift', '--agent-bin', GEMINI]);
    // A resumed Gemini can draw its idle prompt before its SessionStart hook has run, and keys that
    // arrive while the hook runs stay in the input box (seen once in CI: "go on with it" never sent).
    // Ready once that hook has recorded the launch (launch_hooked, its first hook event's receipt) and
    // the prompt is idle with no hook running.
    let hooked = false;
    for (const until = Date.now() + 60_000; !hooked && Date.now() < until; await new Promise((resolve) => setTimeout(resolve, 200)))
      hooked = (await receiptDocs(world)).filter((doc) => doc.kind === 'launch_hooked').length > hookedBefore;
    expect(hooked, `the resumed Gemini's first hook never recorded its launch; the terminal shows:\n${resumed.screen()}`).toBe(true);
    await ready(resumed);
    const next = 'go on with it';
    const at = mock.requests.length;
    await prompt(resumed, next);
    const request = await turnRequest(resumed, at, next);
    // The same conversation, not a new one: its history carries the first prompt.
    expect(contentsText(request)).toContain(typed);
    // Its prompt is told it still holds the capture in one line, not the full bytes again: the session's
    // chat already carries them. Gemini's payloads carry no Turn and the resume's TURNKEEPER_TURN is the
    // capture's for every prompt, so that Turn cannot tell a retry from the next prompt; before, every
    // prompt of a launched Gemini counted as a retry of the claiming Turn and got the full bytes
    // (docs/hook-protocol.md, "How often the full capture is presented").
    const context = lastUserText(request);
    expect(context, context.slice(0, 3000)).toContain('This session still holds the lease');
    expect(context).not.toContain(asHookContext(presentationOf(world, lease.capture)));
    await answered(resumed, next, 'ok');
    await quit(resumed);

    expect(statusOf(world).leases.filter((item) => item.todo === 'fix-tool' && item.status === 'active')).toMatchObject([
      { capture: lease.capture, epoch: lease.epoch, owner: lease.owner },
    ]);
    const docs = (await receiptDocs(world)).filter((doc) => doc.todo === 'fix-tool');
    // The resume's launch receipt names the capture and the session that holds its lease.
    expect(docs.filter((doc) => doc.kind === 'launch_committed').at(-1)).toMatchObject({ capture: lease.capture, owner: lease.owner });
    const kinds = docs.map((doc) => doc.kind);
    expect(kinds.filter((kind) => kind === 'launch_committed')).toHaveLength(2);
    expect(kinds.filter((kind) => kind === 'lease_acquired')).toHaveLength(1);
  });
});
