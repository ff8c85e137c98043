// The real interactive Claude Code (2.1.332, the `claude` Bun executable) in a real terminal (tmux),
// started through `turnkeeper start <todo> --agent claude --interactive` as a person starts it, with
// Turnkeeper's hooks installed by the real CLI, talking to a stand-in Anthropic Messages API on
// 127.0.0.1. The first-run state a person who set Claude up already has (onboarding done, the
// repository trusted, the API key approved) is in its config (test/support/claudeHarness.ts), so it
// opens on its prompt; everything after that is typed into the terminal.
//
// What each test proves:
// - the launched Claude owns the terminal (its process group is the terminal's foreground group) and
//   draws its prompt; a prompt typed into it, naming no Todo, claims the started Todo through Claude's
//   own UserPromptSubmit hook, and the model receives the ready capture's text;
// - start → prompt → claim → Bash tool call (it writes a file) → quit with Ctrl-C twice →
//   `turnkeeper resume --interactive` in a new terminal: the tool's change is the session's own work
//   (no drift), a file written by hand after the turn ended is a drift resume names (and starts nothing), `--accept-drift` reopens Claude on the same session (its history carries
//   the first prompt), whose next typed prompt is told it still holds the same capture's lease.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeWorld, CLI, type World } from '../support/world';
import { lastToolResult, messageText, startAnthropicMock, type AnthropicMock, type AnthropicRequest } from '../support/anthropicMock';
import {
  claudeAfterPrompt,
  claudeEnv,
  claudeTurnRequest,
  claudeVisibleText,
  installHooksWithCli,
  killAll,
  presentationOf,
  expectOwnTurnIsNoDrift,
  receiptDocs,
  REPO_ROOT,
  statusOf,
  turnkeeperRun,
  type LeaseJson,
} from '../support/agentHarness';
import { acceptClaudeFirstRun } from '../support/claudeHarness';
import { startTmux, type Tmux } from '../support/tmux';
import { waitFor } from '../support/waitFor';

// The real executable, not the node_modules/.bin link: the launch receipt's digest is of these bytes.
const CLAUDE = join(REPO_ROOT, 'node_modules/@anthropic-ai/claude-code/bin/claude.exe');
// The input box's footer: drawn with the prompt, once Claude reads keys.
const TUI_READY = /shift\+tab to cycle/;
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/**
 * The terminal after a typed prompt's turn has ended: the prompt, the model's answer, and the line
 * Claude draws when the turn (its hooks, Stop included) is over ("✻ Brewed for 1s · done 12:26 AM").
 */
const answered = (typed: string, answer: string) => new RegExp(`❯\\s${escape(typed)}[\\s\\S]*● ${escape(answer)}[\\s\\S]*for \\d+s · done`);
const TOOL_PROMPT = 'please run the tool';
// Claude prefixes hook context with "<Event> hook additional context: ".
const readyLine = (todo: string) =>
  new RegExp(`^UserPromptSubmit hook additional context: Turnkeeper: Todo ${todo} · capture (cap_[0-9a-f]{24}) · epoch 1$`, 'm');

/** The main conversation (it carries tools) of a prompt that asks for the tool gets one Bash call; everything else text. */
function modelScript(request: AnthropicRequest) {
  if (lastToolResult(request) !== undefined) return { text: 'done' };
  const messages = request.body?.messages ?? [];
  const users = messages.filter((message) => message.role === 'user').map(messageText);
  const main = (request.body?.tools ?? []).some((tool) => tool.name === 'Bash');
  // Once per such prompt: a history that already has the tool's result is past it.
  const ran = messages.some((message) => typeof message.content !== 'string' && (message.content ?? []).some((block) => block.type === 'tool_result'));
  if (main && !ran && users.some((text) => text.includes(TOOL_PROMPT)))
    return { toolUse: { name: 'Bash', input: { command: 'echo tool-ran > tool-ran.txt', description: 'write a file' } } };
  return { text: 'ok' };
}

let world: World;
let mock: AnthropicMock;
let env: NodeJS.ProcessEnv;
const terminals: Tmux[] = [];

const turnkeeper = (args: string[]) => turnkeeperRun(args, { env, cwd: world.repo, timeoutMs: 90_000 });

/** A terminal running `command`; the test types into it as a person does. */
function terminal(command: readonly string[]): Tmux {
  const term = startTmux({ cwd: world.repo, env, command });
  terminals.push(term);
  return term;
}
const startTui = (todo: string) => terminal([process.execPath, CLI, 'start', todo, '--agent', 'claude', '--interactive', '--agent-bin', CLAUDE]);

/**
 * Types a prompt as a person does: the text, until the input box shows it, a pause, Enter (keys that
 * arrive together are a paste, and its Enter a newline).
 */
async function prompt(term: Tmux, text: string): Promise<void> {
  term.type(text);
  // (Claude draws the input's ❯ with a no-break space after it.)
  await term.waitForText(new RegExp(`❯\\s${escape(text)}`), 10_000);
  await new Promise((resolve) => setTimeout(resolve, 500));
  term.keys('Enter');
}

/** Ctrl-C twice, as a person quits Claude: the first arms it ("Press Ctrl-C again to exit"), the second ends it. */
async function quit(term: Tmux): Promise<void> {
  term.keys('C-c');
  await term.waitForText(/Press Ctrl-C again to exit/, 10_000);
  term.keys('C-c');
  expect(await waitFor(() => term.exited(), 20_000, 100), `Claude did not quit on Ctrl-C twice:\n${term.screen()}`).toBe(true);
}

/** The main-conversation request that carried `text` (a typed prompt), once the model got it. */
async function turnRequest(term: Tmux, from: number, text: string): Promise<AnthropicRequest> {
  let found: AnthropicRequest | undefined;
  const seen = await waitFor(() => (found = claudeTurnRequest(mock.requests, from, text)) !== undefined, 60_000, 100);
  expect(seen, `the model never got ${JSON.stringify(text)}; the terminal shows:\n${term.screen()}`).toBe(true);
  return found!;
}

beforeAll(async () => {
  mock = await startAnthropicMock(modelScript);
  world = makeWorld('tk-e2e-claude-tui');
  let configDir: string;
  ({ env, configDir } = claudeEnv(world, mock));
  env = { ...env, TERM: 'xterm-256color' };
  acceptClaudeFirstRun(env, [world.repo]);
  for (const [id, word] of [
    ['fix-login', 'wren-5512'],
    ['fix-tool', 'lynx-2287'],
  ] as const)
    expect((await turnkeeper(['todo', 'add', `Task ${id}`, '--id', id, '--body', `Typed in the TUI (${word}).`])).code).toBe(0);
  installHooksWithCli(world, 'claude', { CLAUDE_CONFIG_DIR: configDir });
  expect(readFileSync(join(configDir, 'settings.json'), 'utf8')).toContain(`${world.home}/bin/turnkeeper' hook --agent claude`);
});
afterEach(() => {
  for (const term of terminals.splice(0)) term.kill();
});
afterAll(async () => {
  killAll();
  await mock?.close();
  world?.cleanup();
});

describe('the interactive Claude Code in a terminal, started by turnkeeper start --interactive', () => {
  it('owns the terminal and draws its prompt; a typed prompt claims the Todo through UserPromptSubmit and the model gets the ready capture', async () => {
    const term = startTui('fix-login');
    await term.waitForText(TUI_READY, 60_000);
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
    expect(lease, term.screen()).toMatchObject({ epoch: 1, owner: expect.stringMatching(/^claude:[0-9a-f-]{36}$/) as string });
    const after = claudeAfterPrompt(request, typed);
    expect(readyLine('fix-login').exec(after)?.[1], after.slice(-3000)).toBe(lease!.capture);
    expect(after).toContain(`UserPromptSubmit hook additional context: ${presentationOf(world, lease!.capture)}`);
    expect(after).toContain('wren-5512');
    // The model's answer is drawn in the terminal, and the turn ends.
    await term.waitForText(answered(typed, 'ok'), 30_000);
    await quit(term);
  });

  it('start → prompt → claim → tool call → quit → resume: drift named first, then the resumed Claude is on the same session and still holds the lease', async () => {
    const term = startTui('fix-tool');
    await term.waitForText(TUI_READY, 60_000);
    const typed = `${TOOL_PROMPT} for fix-tool`;
    const from = mock.requests.length;
    await prompt(term, typed);
    const first = await turnRequest(term, from, typed);
    expect(await waitFor(() => existsSync(join(world.repo, 'tool-ran.txt')), 60_000, 100), term.screen()).toBe(true);
    // The Bash call ran through Claude's tool loop (PreToolUse let the lease holder run it), and the turn ended.
    expect(await term.waitForText(answered(typed, 'done'), 30_000)).toContain('Bash(echo tool-ran > tool-ran.txt)');
    expect(mock.requests.slice(from).some((request) => lastToolResult(request) !== undefined && lastToolResult(request)!.is_error !== true)).toBe(true);
    await quit(term);
    const lease: LeaseJson = statusOf(world).leases.find((item) => item.todo === 'fix-tool' && item.status === 'active')!;
    expect(lease).toBeDefined();
    expect(readyLine('fix-tool').exec(claudeAfterPrompt(first, typed))?.[1]).toBe(lease.capture);
    expect(claudeAfterPrompt(first, typed)).toContain('lynx-2287');

    // The tool's change was the session's own work, recorded by its turn's end (turn_ended, written by
    // its stop hook): no drift, the resume would go on with no flag.
    await expectOwnTurnIsNoDrift(world, lease.capture, CLAUDE);
    // A change nobody recorded, after the turn ended: resume names it and how to go on, and starts nothing.
    writeFileSync(join(world.repo, 'by-hand.txt'), 'a person wrote this\n');
    const before = mock.requests.length;
    const refused = terminal([process.execPath, CLI, 'resume', lease.capture, '--interactive', '--agent-bin', CLAUDE]);
    await refused.waitForText(/--accept-drift/, 60_000);
    expect(await waitFor(() => refused.exited(), 10_000, 100)).toBe(true);
    expect(refused.screen()).toContain(`Turnkeeper [precondition_changed]: The workspace of capture ${lease.capture} changed since its session left it`);
    // The paths it names (the terminal wraps the line; the JSON does not).
    const named = world.cli(['resume', lease.capture, '--dry-run', '--json', '--agent-bin', CLAUDE]);
    expect(named.stdout).toMatch(/since its last turn ended \([^)]+\), 1 path changed: A by-hand\.txt/);
    expect(mock.requests.length).toBe(before);

    // No --interactive: a person at a terminal gets the agent's own UI by default.
    const resumed = terminal([process.execPath, CLI, 'resume', lease.capture, '--accept-drift', '--agent-bin', CLAUDE]);
    await resumed.waitForText(TUI_READY, 60_000);
    const next = 'go on with it';
    const at = mock.requests.length;
    await prompt(resumed, next);
    const request = await turnRequest(resumed, at, next);
    // The same conversation, not a new one: its history carries the first prompt and the capture once presented.
    expect(claudeVisibleText(request)).toContain(typed);
    // Its next prompt is told it still holds the lease on the same capture.
    const reminder = claudeAfterPrompt(request, next);
    expect(reminder, reminder.slice(-3000)).toContain(`UserPromptSubmit hook additional context: Turnkeeper: Todo fix-tool · capture ${lease.capture}`);
    expect(reminder).toContain('This session still holds the lease');
    await resumed.waitForText(answered(next, 'ok'), 30_000);
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
