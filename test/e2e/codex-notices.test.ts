// What the person sees of a refused claim, with the real Codex CLI (0.171) against the loopback mock
// model, its hooks installed by the real CLI and trusted in config.toml (docs/hook-protocol.md, "What
// the person sees"). One `codex exec` session holds fix-login; then:
// - `codex exec` with TURNKEEPER_ON_CONFLICT=block: the prompt is blocked before any model request,
//   and exec prints `hook: UserPromptSubmit Blocked` and nothing of the hook's reason: Codex's exec
//   prints no hook text at all (its `reason`, `stopReason` and `systemMessage` alike), which this
//   test pins so that a Codex that starts printing them shows up here;
// - the Codex TUI in a terminal (tmux), as a person uses it: with onConflict=block the reason is on the
//   screen under "Blocked by hook"; with the default (context) the model gets the full guidance and
//   the screen shows the one-line notice (`systemMessage`), which the model does not get; a mistyped
//   id gets "did you mean" on the screen and in the model's context.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { makeWorld, type World } from '../support/world';
import { developerTexts, startMockModelServer, type MockModelServer, type RecordedRequest } from '../support/mockModelServer';
import {
  cleanupCodexHome,
  codexBinaryPath,
  makeCodexHome,
  parseSessionId,
  runCodexExec,
  trustAllHooks,
  writeCodexConfig,
  type CodexHome,
} from '../support/codexHarness';
import { contextAfterPrompt, killAll, receiptDocs, statusOf, turnkeeperRun } from '../support/agentHarness';
import { startTmux, type Tmux } from '../support/tmux';
import { waitFor } from '../support/waitFor';

const TUI_READY = /Ask Codex to do anything/;

let world: World;
let codex: CodexHome;
let mock: MockModelServer;
let env: NodeJS.ProcessEnv;
/** The session of `codex exec` that holds fix-login. */
let holder = '';
const terminals: Tmux[] = [];

const turnkeeper = (args: string[]) => turnkeeperRun(args, { env, cwd: world.repo, timeoutMs: 90_000 });
const exec = (prompt: string, extra: NodeJS.ProcessEnv = {}) => runCodexExec({ env: { ...env, ...extra }, cwd: world.repo, prompt, timeoutMs: 60_000 });
/** The model request of the turn that sent `prompt`, and the hook context right after it. */
const turnOf = (prompt: string): { request: RecordedRequest; context: string } | undefined => {
  for (const request of mock.requests) {
    const context = contextAfterPrompt(request, prompt);
    if (context !== undefined) return { request, context };
  }
  return undefined;
};
const promptSent = (prompt: string): boolean => mock.requests.some((request) => request.raw.includes(JSON.stringify(prompt).slice(1, -1)));

/** A Codex TUI in its own terminal, its embedded app server running the hooks with this environment. */
async function tui(extra: NodeJS.ProcessEnv = {}): Promise<Tmux> {
  const term = startTmux({ cwd: world.repo, env: { ...env, ...extra }, command: [codexBinaryPath(), '--no-daemon'], cols: 220, rows: 60 });
  terminals.push(term);
  await term.waitForText(TUI_READY, 60_000);
  return term;
}

/** Types a prompt as a person does: the text, a pause, Enter. */
async function prompt(term: Tmux, text: string): Promise<void> {
  term.type(text);
  await new Promise((resolve) => setTimeout(resolve, 500));
  term.keys('Enter');
}

beforeAll(async () => {
  mock = await startMockModelServer();
  world = makeWorld('tk-e2e-notices');
  codex = makeCodexHome({ prefix: 'tk-e2e-notices-codex-', extraEnv: { TURNKEEPER_HOME: world.home, TERM: 'xterm-256color' } });
  env = codex.env;
  writeCodexConfig(codex.codexHome, mock.url, `\n[projects."${world.repo}"]\ntrust_level = "trusted"\n`);
  expect((await turnkeeper(['todo', 'add', 'Fix login', '--id', 'fix-login', '--body', 'The login form drops the CSRF token (lynx-2208).'])).code).toBe(0);
  expect((await turnkeeper(['hooks', 'install', '--agent', 'codex'])).code).toBe(0);
  expect((await trustAllHooks(codex.codexHome, env, world.repo)).length).toBeGreaterThan(0);

  const claimed = await exec('please work on #todo:fix-login');
  expect(claimed.code, claimed.stderr.slice(-2000)).toBe(0);
  holder = parseSessionId(claimed.stderr) ?? '';
  expect(statusOf(world).leases).toMatchObject([{ todo: 'fix-login', owner: `codex:${holder}`, status: 'active' }]);
});
afterEach(() => {
  for (const term of terminals.splice(0)) term.kill();
});
afterAll(async () => {
  killAll();
  await mock?.close();
  if (codex) cleanupCodexHome(codex);
  world?.cleanup();
});

describe('a refused claim, as the person sees it in Codex (real binary)', () => {
  it('codex exec with onConflict=block: no model request, "hook: UserPromptSubmit Blocked", and no hook text (Codex exec prints none)', async () => {
    const text = 'I also want #todo:fix-login';
    const from = mock.requests.length;
    const run = await exec(text, { TURNKEEPER_ON_CONFLICT: 'block' });
    expect(run.code, run.stderr).toBe(0);
    const other = parseSessionId(run.stderr);
    expect(other).toBeDefined();
    expect(run.stderr).toMatch(/^hook: UserPromptSubmit Blocked$/m);
    expect(mock.requests.length).toBe(from);
    // The hook did refuse with [lease_held] (its receipt), and the lease is the holder's as before.
    const refusals = (await receiptDocs(world)).filter((doc) => doc.kind === 'claim_refused' && doc.owner === `codex:${other}`);
    expect(refusals.map((doc) => doc.detail?.reason)).toStrictEqual(['lease_held']);
    expect(statusOf(world).leases).toMatchObject([{ owner: `codex:${holder}`, status: 'active' }]);
    // Codex 0.171's exec prints a hook's status, never its text: not the block's reason (nor a
    // systemMessage or stopReason). When this fails, Codex prints it: docs/hook-protocol.md says otherwise.
    expect(run.stdout + run.stderr).not.toContain('lease_held');
  });

  it('the TUI with onConflict=block shows the reason under "Blocked by hook"; the model gets no request', async () => {
    const term = await tui({ TURNKEEPER_ON_CONFLICT: 'block' });
    const text = 'please, I want #todo:fix-login too';
    await prompt(term, text);
    const screen = await term.waitForText(/Blocked by hook[\s\S]*Turnkeeper \[lease_held\]: Todo fix-login is leased to/, 60_000);
    expect(screen).toContain(`codex:${holder}`);
    expect(screen).toContain('Recover: turnkeeper status');
    expect(promptSent(text)).toBe(false);
    expect(statusOf(world).leases).toMatchObject([{ owner: `codex:${holder}`, status: 'active' }]);
  });

  it('the TUI by default: the model gets the guidance, the person the one-line notice (not sent to the model); a mistyped id gets "did you mean"', async () => {
    const term = await tui();
    const mistyped = 'please work on #todo:fix-logn';
    await prompt(term, mistyped);
    await term.waitForText(/Turnkeeper \[unknown_todo\]: No Todo fix-logn here; nothing was claimed\. Did you mean #todo:fix-login\?/, 60_000);
    expect(await waitFor(() => turnOf(mistyped) !== undefined, 60_000, 100), term.screen()).toBe(true);
    expect(turnOf(mistyped)!.context).toContain('Turnkeeper [unknown_todo]: Todo fix-logn does not exist in this workspace. Did you mean fix-login?');
    await term.waitForText(/^• ok$/m, 60_000); // the turn ended before the next prompt is typed

    const refused = 'I also want #todo:fix-login';
    await prompt(term, refused);
    const notice = `Turnkeeper [lease_held]: Todo fix-login is held by codex:${holder}; nothing was claimed. See: turnkeeper status`;
    await term.waitForText(new RegExp(notice.replace(/[[\]().?*+^$|\\]/g, '\\$&')), 60_000);
    expect(await waitFor(() => turnOf(refused) !== undefined, 60_000, 100), term.screen()).toBe(true);
    const { request, context } = turnOf(refused)!;
    expect(context.split('\n')).toHaveLength(3);
    expect(context).toMatch(new RegExp(`^Turnkeeper \\[lease_held\\]: Todo fix-login is leased to codex:${holder} \\(epoch 1\\)`));
    expect(context).toContain('\nRecover: turnkeeper status');
    // The person's line is the person's: no message the model gets carries it.
    for (const text of developerTexts(request)) expect(text).not.toContain('nothing was claimed');
    expect(request.raw).not.toContain('nothing was claimed');
    expect(statusOf(world).leases).toMatchObject([{ owner: `codex:${holder}`, status: 'active' }]);
  });
});
