// GitHub Copilot CLI (1.0.102) interactive, in a real terminal (tmux), driven as a person drives it,
// against a stand-in OpenAI chat-completions server on 127.0.0.1 (COPILOT_OFFLINE=true, no login),
// with Turnkeeper's hooks installed by the real CLI into the repository's .github/hooks and the
// repository trusted as Copilot's trust prompt trusts it (trustedFolders in $COPILOT_HOME/config.json).
// The launcher refuses Copilot by design (docs/launcher.md, "Copilot CLI": a loader in front of a
// Node single-executable that runs code it unpacks into a cache), so what Turnkeeper promises for an
// interactive Copilot is: the refusal reaches the person before Copilot runs, and the hooks of a
// Copilot session the person started themselves claim, given a Turn (TURNKEEPER_TURN, the only
// source of one for Copilot, spec §1).
//
// What each test proves:
// - `turnkeeper start <todo> --agent copilot --interactive`, with Copilot's npm link on PATH or with
//   --agent-bin at its single-executable binary, is refused [unsupported_entrypoint] in the terminal
//   (the reason and the refused file on the screen, and the command ends): no model request, no
//   launch receipt, no lease;
// - in a `copilot` the person started, a typed prompt naming #todo: without a Turn gets [no_turn]
//   (to the model) and claims nothing; with TURNKEEPER_TURN exported (what that guidance says to do)
//   the same prompt claims the Todo through Copilot's userPromptSubmitted hook, the model receives
//   the ready capture, and the shell call it asks for runs once the person allows it in Copilot's
//   own confirmation; /exit ends it; `turnkeeper resume --interactive` of that capture in a new
//   terminal is refused [unsupported_entrypoint] there too, the lease unchanged.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeWorld, CLI, type World } from '../support/world';
import { lastToolResult, MOCK_MODEL, requestText, startOpenAiMock, type ChatRequest, type OpenAiMock } from '../support/openaiMock';
import { BIN, REPO_ROOT, baseEnv, killAll, nodePath, presentationOf, receiptDocs, statusOf, worldDir } from '../support/agentHarness';
import { startTmux, type Tmux } from '../support/tmux';
import { waitFor } from '../support/waitFor';

const COPILOT = join(BIN, 'copilot');
const COPILOT_SEA = join(REPO_ROOT, 'node_modules/@github/copilot-linux-x64/copilot');
// The footer of an idle prompt (while a turn runs it reads "◎ Working").
const TUI_READY = /Interactive · Manual Approval · \/ commands/;
const TOOL_PROMPT = 'please run the tool';
const READY_LINE = /^Turnkeeper: Todo fix-login · capture (cap_[0-9a-f]{24}) · epoch 1$/m;
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A bash call for the prompt that asks for the tool (once: a history with its result is past it); text otherwise. */
function modelScript(request: ChatRequest) {
  if (lastToolResult(request) !== undefined) return { text: 'done' };
  const ran = (request.body?.messages ?? []).some((message) => message.role === 'tool');
  if (!ran && requestText(request).includes(TOOL_PROMPT))
    return { toolCall: { name: 'bash', arguments: { command: 'echo tool-ran > tool-ran.txt', description: 'write a file' } } };
  return { text: 'ok' };
}

let world: World;
let mock: OpenAiMock;
let env: NodeJS.ProcessEnv;
const terminals: Tmux[] = [];

/** A terminal running `command` (with `extra` in its environment); the test types into it as a person does. */
function terminal(command: readonly string[], extra: Record<string, string> = {}): Tmux {
  const term = startTmux({ cwd: world.repo, env: { ...env, ...extra }, command });
  terminals.push(term);
  return term;
}

/** Waits until Copilot's prompt is drawn and idle. */
async function ready(term: Tmux): Promise<void> {
  await term.waitForText(TUI_READY, 60_000);
}

/**
 * Types a prompt as a person does: the text, until the input box shows it, a pause, Enter (keys that
 * arrive together are a paste, and its Enter a newline).
 */
async function prompt(term: Tmux, text: string): Promise<void> {
  term.type(text);
  await term.waitForText(new RegExp(`❯\\s+${escape(text)}`), 10_000);
  await new Promise((resolve) => setTimeout(resolve, 500));
  term.keys('Enter');
}

/** The terminal once a typed prompt's turn is over: the prompt, the model's answer, and the idle footer again. */
async function answered(term: Tmux, typed: string, answer: string): Promise<void> {
  await term.waitForText(new RegExp(`❯\\s+${escape(typed)}[\\s\\S]*● ${escape(answer)}[\\s\\S]*${TUI_READY.source}`), 30_000);
}

/** /exit, as a person ends Copilot. */
async function quit(term: Tmux): Promise<void> {
  await prompt(term, '/exit');
  expect(await waitFor(() => term.exited(), 20_000, 100), `Copilot did not exit on /exit:\n${term.screen()}`).toBe(true);
}

/** The chat request that carried `text` (a typed prompt), once the model got it. */
async function turnRequest(term: Tmux, from: number, text: string): Promise<ChatRequest> {
  let found: ChatRequest | undefined;
  const seen = await waitFor(() => (found = mock.requests.slice(from).find((request) => requestText(request).includes(text))) !== undefined, 60_000, 100);
  expect(seen, `the model never got ${JSON.stringify(text)}; the terminal shows:\n${term.screen()}`).toBe(true);
  return found!;
}

/** A Turnkeeper command run in a terminal: it exits, and its last screen is returned. */
async function refusedIn(command: readonly string[]): Promise<string> {
  const term = terminal(command);
  expect(await waitFor(() => term.exited(), 60_000, 100), term.screen()).toBe(true);
  return term.screen();
}

const launches = async () => (await receiptDocs(world)).filter((doc) => doc.kind === 'launch_committed').length;

beforeAll(async () => {
  mock = await startOpenAiMock(modelScript);
  world = makeWorld('tk-e2e-copilot-tui');
  const copilotHome = worldDir(world, 'copilot', 'home');
  env = baseEnv({
    HOME: worldDir(world, 'copilot', 'user'),
    COPILOT_HOME: copilotHome,
    // Copilot unpacks its 235 MB package on first run; one shared cache keeps that to once per machine.
    COPILOT_PKG_CACHE_HOME: join(REPO_ROOT, 'node_modules', '.cache', 'copilot-pkg'),
    TMPDIR: worldDir(world, 'copilot', 'tmp'),
    TURNKEEPER_HOME: world.home,
    // A project-scope hook calls `turnkeeper` through PATH: the shim is first on it.
    PATH: `${join(world.home, 'bin')}:${nodePath()}`,
    COPILOT_OFFLINE: 'true',
    COPILOT_PROVIDER_BASE_URL: mock.url,
    COPILOT_MODEL: MOCK_MODEL,
    TERM: 'xterm-256color',
  });
  expect(world.cli(['todo', 'add', 'Fix login', '--id', 'fix-login', '--body', 'Typed in the TUI (wren-5512).']).code).toBe(0);
  const install = world.cli(['hooks', 'install', '--agent', 'copilot', '--scope', 'project'], { env: { COPILOT_HOME: copilotHome } });
  expect(install.code, install.stderr).toBe(0);
  expect(readFileSync(join(world.repo, '.github', 'hooks', 'turnkeeper.json'), 'utf8')).toContain('hook --agent copilot --event userPromptSubmitted');
  mkdirSync(copilotHome, { recursive: true });
  writeFileSync(join(copilotHome, 'config.json'), `${JSON.stringify({ trustedFolders: [world.repo] }, null, 2)}\n`);
});
afterEach(() => {
  for (const term of terminals.splice(0)) term.kill();
});
afterAll(async () => {
  killAll();
  await mock?.close();
  world?.cleanup();
});

describe('Copilot CLI interactive in a terminal', () => {
  it('turnkeeper start --interactive is refused [unsupported_entrypoint] in the terminal before Copilot runs', async () => {
    const linked = await refusedIn([process.execPath, CLI, 'start', 'fix-login', '--agent', 'copilot', '--interactive']);
    expect(linked).toContain('Turnkeeper [unsupported_entrypoint]: The executable is not a program Turnkeeper can attest');
    expect(linked).toContain('/node_modules/@github/copilot/npm-loader.js is a script');
    const sea = await refusedIn([process.execPath, CLI, 'start', 'fix-login', '--agent', 'copilot', '--interactive', '--agent-bin', COPILOT_SEA]);
    expect(sea).toContain('Turnkeeper [unsupported_entrypoint]');
    // (Named as resolved: node_modules may be a link.)
    expect(sea).toContain(`${realpathSync(COPILOT_SEA)} is a Node single-executable application`);
    expect(mock.requests).toHaveLength(0);
    expect(await launches()).toBe(0);
    expect(statusOf(world).leases).toHaveLength(0);
  });

  it('a copilot the person started claims with a Turn (and not without), runs the allowed shell call, exits; resume of its capture is refused in the terminal', async () => {
    // No Turn: the prompt naming the Todo gets [no_turn], nothing is claimed.
    const bare = terminal([COPILOT, '--no-auto-update']);
    await ready(bare);
    const asked = 'please work on #todo:fix-login';
    let from = mock.requests.length;
    await prompt(bare, asked);
    expect(requestText(await turnRequest(bare, from, asked))).toContain('[no_turn]');
    await answered(bare, asked, 'ok');
    expect(statusOf(world).leases).toHaveLength(0);
    await quit(bare);

    // TURNKEEPER_TURN exported, as that guidance says: the same kind of prompt claims the Todo.
    const term = terminal([COPILOT, '--no-auto-update'], { TURNKEEPER_TURN: 'turn-person-1' });
    await ready(term);
    const typed = `${TOOL_PROMPT} on #todo:fix-login`;
    from = mock.requests.length;
    await prompt(term, typed);
    const text = requestText(await turnRequest(term, from, typed));
    const lease = statusOf(world).leases.find((item) => item.todo === 'fix-login' && item.status === 'active')!;
    expect(lease, term.screen()).toMatchObject({ epoch: 1, owner: expect.stringMatching(/^copilot:[0-9a-f-]{36}$/) as string });
    expect(READY_LINE.exec(text)?.[1], text.slice(-3000)).toBe(lease.capture);
    expect(text).toContain(presentationOf(world, lease.capture));
    expect(text).toContain('wren-5512');
    // Copilot asks before it runs the command; the person allows it (the selected "1. Yes").
    await term.waitForText(/Do you want to run this command\?[\s\S]*❯ 1\. Yes/, 30_000);
    term.keys('Enter');
    expect(await waitFor(() => existsSync(join(world.repo, 'tool-ran.txt')), 30_000, 100), term.screen()).toBe(true);
    await answered(term, typed, 'done');
    // preToolUse let the lease holder's command run: its result went back to the model.
    expect(mock.requests.slice(from).some((request) => lastToolResult(request) !== undefined)).toBe(true);
    await quit(term);

    // The launcher refuses Copilot for a resume too, before anything runs; the lease stays as it was.
    const before = mock.requests.length;
    const resumed = await refusedIn([process.execPath, CLI, 'resume', lease.capture, '--interactive', '--accept-drift']);
    expect(resumed).toContain('Turnkeeper [unsupported_entrypoint]');
    expect(resumed).toContain('/node_modules/@github/copilot/npm-loader.js is a script');
    expect(mock.requests.length).toBe(before);
    expect(await launches()).toBe(0);
    expect(statusOf(world).leases).toMatchObject([{ todo: 'fix-login', capture: lease.capture, owner: lease.owner, epoch: 1, status: 'active' }]);
  });
});
