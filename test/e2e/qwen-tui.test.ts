// The real interactive Qwen Code (0.24.4, `qwen` without a prompt) in a real terminal (tmux), started
// through `turnkeeper start <todo> --agent qwen --interactive` as a person starts it (the launcher runs
// cli.js from its attested closure), with Turnkeeper's hooks installed by the real CLI, talking to the
// chat-completions stand-in on 127.0.0.1. Qwen trusts every folder unless folder trust is turned on, so
// it opens on its prompt; everything after that is typed into the terminal.
//
// start → a typed prompt naming no Todo claims the started Todo through Qwen's own UserPromptSubmit
// (Turn from its prompt_id) and the model gets the ready capture → a shell call, allowed in Qwen's own
// confirmation as a person allows it (it writes a file) → /quit → `turnkeeper resume --interactive
// --accept-drift` (the tool changed the checkout) reopens Qwen on the same session, whose next typed
// prompt is told in one line that it still holds the capture, lease unchanged.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { makeWorld, CLI, type World } from '../support/world';
import { lastToolResult, requestText, startOpenAiMock, type ChatRequest, type OpenAiMock } from '../support/openaiMock';
import { BIN, killAll, presentationOf, qwenEnv, receiptDocs, statusOf, turnkeeperRun, type LeaseJson } from '../support/agentHarness';
import { startTmux, type Tmux } from '../support/tmux';
import { waitFor } from '../support/waitFor';

const QWEN = join(BIN, 'qwen');
// The input box's placeholder: drawn with the prompt, once Qwen reads keys.
const TUI_READY = /Type your message or @path\/to\/file/;
const TOOL_PROMPT = 'please run the tool';

let world: World;
let mock: OpenAiMock;
let env: NodeJS.ProcessEnv;
const terminals: Tmux[] = [];

const turnkeeper = (args: string[]) => turnkeeperRun(args, { env, cwd: world.repo, timeoutMs: 90_000 });
const asQwenContext = (text: string): string =>
  `<qwen:user-prompt-submit-context>\n${text.replace(/</g, '&lt;').replace(/>/g, '&gt;')}\n</qwen:user-prompt-submit-context>`;

function terminal(command: readonly string[]): Tmux {
  const term = startTmux({ cwd: world.repo, env, command });
  terminals.push(term);
  return term;
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

async function ready(term: Tmux): Promise<void> {
  let last = '';
  const shown = await waitFor(() => TUI_READY.test((last = term.screen())), 60_000, 100);
  expect(shown, `Qwen never drew its prompt; the terminal shows:\n${last}`).toBe(true);
}

/** Types a prompt as a person does: the text, until the input box shows it, a pause, Enter. */
async function prompt(term: Tmux, text: string): Promise<void> {
  term.type(text);
  await term.waitForText(new RegExp(`> +${escape(text)}`), 10_000);
  await new Promise((resolve) => setTimeout(resolve, 500));
  term.keys('Enter');
}

/** The model's reply shown after the typed prompt, and no hook still running. */
async function answered(term: Tmux, typed: string, answer: string): Promise<void> {
  const pattern = new RegExp(`> ${escape(typed)}[\\s\\S]*◆\\S* ${escape(answer)}`);
  let last = '';
  const over = await waitFor(() => pattern.test((last = term.screen())), 30_000, 100);
  expect(over, `the turn of ${JSON.stringify(typed)} never ended with ${JSON.stringify(answer)}; the terminal shows:\n${last}`).toBe(true);
}

/** `/quit`, as a person leaves Qwen. */
async function quit(term: Tmux): Promise<void> {
  await prompt(term, '/quit');
  expect(await waitFor(() => term.exited(), 20_000, 100), `Qwen did not quit on /quit:\n${term.screen()}`).toBe(true);
}

async function turnRequest(term: Tmux, from: number, text: string): Promise<ChatRequest> {
  let found: ChatRequest | undefined;
  const seen = await waitFor(() => (found = mock.requests.slice(from).find((request) => requestText(request).includes(text))) !== undefined, 60_000, 100);
  expect(seen, `the model never got ${JSON.stringify(text)}; the terminal shows:\n${term.screen()}`).toBe(true);
  return found!;
}

beforeAll(async () => {
  mock = await startOpenAiMock((request) => {
    if (lastToolResult(request) !== undefined) return { text: 'done-after-tool' };
    const ran = (request.body?.messages ?? []).some((message) => message.role === 'tool');
    if (!ran && requestText(request).includes(TOOL_PROMPT))
      return { toolCall: { name: 'run_shell_command', arguments: { command: 'echo tool-ran > tool-ran.txt', description: 'write a file' } } };
    return { text: 'ok-reply' };
  });
  world = makeWorld('tk-e2e-qwen-tui');
  let home: string;
  ({ env, home } = qwenEnv(world, mock));
  env = { ...env, TERM: 'xterm-256color' };
  expect((await turnkeeper(['todo', 'add', 'Task fix-tool', '--id', 'fix-tool', '--body', 'Typed in the TUI (lynx-7731).'])).code).toBe(0);
  const install = world.cli(['hooks', 'install', '--agent', 'qwen'], { env: { HOME: home } });
  expect(install.code, install.stdout + install.stderr).toBe(0);
}, 120_000);
afterEach(() => {
  for (const term of terminals.splice(0)) term.kill();
});
afterAll(async () => {
  killAll();
  await mock?.close();
  world?.cleanup();
});

describe('the interactive Qwen Code in a terminal, started by turnkeeper start --interactive', () => {
  it('start → typed prompt → claim → allowed shell call → /quit → resume --accept-drift: the same session, the same capture, in one line', async () => {
    const term = terminal([process.execPath, CLI, 'start', 'fix-tool', '--agent', 'qwen', '--interactive', '--agent-bin', QWEN]);
    await ready(term);
    // The agent's process group is the terminal's foreground group (else its first read stops it).
    expect(term.foregroundGroup()).not.toBe(term.panePid());

    const typed = `${TOOL_PROMPT} for the login`;
    const from = mock.requests.length;
    await prompt(term, typed);
    const first = await turnRequest(term, from, typed);
    // Qwen asks before it runs the command; the person allows it once (the selected choice).
    await term.waitForText(/Allow execution of[\s\S]*1\. Yes, allow once/, 30_000);
    term.keys('Enter');
    expect(await waitFor(() => existsSync(join(world.repo, 'tool-ran.txt')), 30_000, 100), term.screen()).toBe(true);
    await answered(term, typed, 'done-after-tool');

    const lease: LeaseJson = statusOf(world).leases.find((item) => item.todo === 'fix-tool' && item.status === 'active')!;
    expect(lease, term.screen()).toMatchObject({ epoch: 1, owner: expect.stringMatching(/^qwen:/) as string });
    const session = lease.owner.slice('qwen:'.length);
    expect(statusOf(world).captures.find((c) => c.id === lease.capture)).toMatchObject({ agent: 'qwen', session, turn: `${session}:0` });
    const presentation = presentationOf(world, lease.capture);
    expect(requestText(first)).toContain(asQwenContext(presentation));
    expect(requestText(first)).toContain('lynx-7731');
    await quit(term);

    // The tool changed the checkout since the capture: resume is told to accept that drift.
    const resumed = terminal([process.execPath, CLI, 'resume', lease.capture, '--interactive', '--accept-drift', '--agent-bin', QWEN]);
    await ready(resumed);
    const next = 'go on with it';
    const at = mock.requests.length;
    await prompt(resumed, next);
    const request = await turnRequest(resumed, at, next);
    // The same conversation: its history carries the first prompt and the capture's bytes, once.
    const text = requestText(request);
    expect(text).toContain(typed);
    expect(text.split(asQwenContext(presentation)).length - 1).toBe(1);
    expect(text).toContain('This session still holds the lease');
    await answered(resumed, next, 'ok-reply');
    await quit(resumed);

    expect(statusOf(world).leases.filter((item) => item.todo === 'fix-tool' && item.status === 'active')).toMatchObject([
      { capture: lease.capture, epoch: lease.epoch, owner: lease.owner },
    ]);
    const kinds = (await receiptDocs(world)).filter((doc) => doc.todo === 'fix-tool').map((doc) => doc.kind);
    expect(kinds.filter((kind) => kind === 'launch_committed')).toHaveLength(2);
    expect(kinds.filter((kind) => kind === 'lease_acquired')).toHaveLength(1);
  });
});
