// The real Codex TUI in a real terminal (tmux), started through `turnkeeper start --interactive` as a
// person starts it, with Codex's hooks trusted in config.toml (as reviewing them in /hooks does), so
// Codex picks its app server as it does for people: a shared background daemon when one runs or can
// be started, the embedded one only when told (`--no-daemon`) or when a flag forces it.
//
// What each test proves:
// - the launched TUI owns the terminal (its process group is the terminal's foreground group), draws,
//   and a prompt typed into it claims the Todo through Codex's own hook: the model gets the capture;
// - with a daemon already running, started by a plain `codex` (no Turnkeeper variables in its
//   environment), a started TUI still claims its own Todo: the hook sees the launch's variables;
// - two starts one after the other, on two Todos: each claims its own (a daemon that one start's TUI
//   left behind would hand the first Todo's variables to the second's hooks: [not_live_bound]);
// - start → prompt → claim → tool call → quit → `turnkeeper resume --interactive` in a terminal: the
//   tool's change is a drift resume names (and starts nothing), `--accept-drift` resumes the TUI on
//   its session, whose next prompt is told it still holds the same capture's lease;
// - control: a plain TUI (`codex`, not through Turnkeeper) does use the shared daemon when one runs,
//   which is why a launch must not.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { makeWorld, CLI, type World } from '../support/world';
import { developerTexts, shellCallReply, startMockModelServer, textReply, type MockModelServer, type RecordedRequest } from '../support/mockModelServer';
import { cleanupCodexHome, makeCodexHome, trustAllHooks, writeCodexConfig, type CodexHome } from '../support/codexHarness';
import { killAll, receiptDocs, runProcess, turnkeeperRun } from '../support/agentHarness';
import { startTmux, type Tmux } from '../support/tmux';
import { waitFor } from '../support/waitFor';

const CODEX_SHIM = resolve(__dirname, '../../node_modules/.bin/codex');
const TUI_READY = /Ask Codex to do anything/;
const TOOL_PROMPT = 'please run the tool';

/** The model: a shell call for a prompt that asks for the tool (once per such prompt), text otherwise. */
function modelScript(request: RecordedRequest) {
  const input = request.body?.input ?? [];
  const last = [...input].reverse().find((item) => item.type === 'message' && item.role === 'user');
  const asked = JSON.stringify(last ?? {}).includes(TOOL_PROMPT);
  const followUp = input.some((item) => item.type === 'function_call_output');
  return asked && !followUp ? shellCallReply('echo tool-ran > tool-ran.txt') : textReply('ok');
}

let world: World;
let codex: CodexHome;
let mock: MockModelServer;
let env: NodeJS.ProcessEnv;
const terminals: Tmux[] = [];

const turnkeeper = (args: string[]) => turnkeeperRun(args, { env, cwd: world.repo, timeoutMs: 90_000 });
const presentations = () => mock.requests.flatMap((request) => developerTexts(request)).filter((text) => text.startsWith('Turnkeeper: Todo'));
const daemon = (command: 'start' | 'stop') => runProcess(CODEX_SHIM, ['app-server', 'daemon', command], { cwd: world.repo, env, timeoutMs: 60_000 });

/** Pids of running Codex app-server daemons (`codex app-server --managed-daemon …`) of this test's CODEX_HOME. */
function daemonPids(): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const argv = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
      const environ = readFileSync(`/proc/${name}/environ`, 'utf8');
      if (argv.includes('app-server') && argv.includes('--managed-daemon') && environ.includes(`CODEX_HOME=${codex.codexHome}\0`)) pids.push(Number(name));
    } catch {
      // gone, or not ours
    }
  }
  return pids;
}

/** A terminal running `command`; the test types into it as a person does. */
function terminal(command: readonly string[]): Tmux {
  const term = startTmux({ cwd: world.repo, env, command });
  terminals.push(term);
  return term;
}
const startTui = (todo: string) => terminal([process.execPath, CLI, 'start', todo, '--agent', 'codex', '--interactive', '--agent-bin', CODEX_SHIM]);

/** Types a prompt as a person does: the text, a pause, Enter (keys that arrive together are a paste, and its Enter a newline). */
async function prompt(term: Tmux, text: string): Promise<void> {
  term.type(text);
  await new Promise((resolve) => setTimeout(resolve, 500));
  term.keys('Enter');
}

async function quit(term: Tmux): Promise<void> {
  term.keys('C-c');
  await new Promise((resolve) => setTimeout(resolve, 300));
  term.keys('C-c');
  expect(await waitFor(() => term.exited(), 20_000, 100), `the TUI did not quit on Ctrl-C twice:\n${term.screen()}`).toBe(true);
}

beforeAll(async () => {
  mock = await startMockModelServer({ script: modelScript });
  world = makeWorld('tk-e2e-tui');
  codex = makeCodexHome({ prefix: 'tk-e2e-tui-codex-', extraEnv: { TURNKEEPER_HOME: world.home, TERM: 'xterm-256color' } });
  env = codex.env;
  writeCodexConfig(codex.codexHome, mock.url, `\n[projects."${world.repo}"]\ntrust_level = "trusted"\n`);
  for (const [id, word] of [
    ['fix-login', 'wren-5512'],
    ['fix-signup', 'ibis-7730'],
    ['fix-logout', 'kite-3391'],
    ['fix-about', 'moth-6604'],
    ['fix-tool', 'lynx-2287'],
  ] as const)
    expect((await turnkeeper(['todo', 'add', `Task ${id}`, '--id', id, '--body', `Typed in the TUI (${word}).`])).code).toBe(0);
  expect((await turnkeeper(['hooks', 'install', '--agent', 'codex'])).code).toBe(0);
  // Trusted as a person trusts them in /hooks: no --dangerously-bypass-hook-trust, which would also
  // make Codex run its embedded app server and hide the daemon.
  expect((await trustAllHooks(codex.codexHome, env, world.repo)).length).toBeGreaterThan(0);
});
afterEach(async () => {
  for (const term of terminals.splice(0)) term.kill();
  await daemon('stop');
});
afterAll(async () => {
  killAll();
  await mock?.close();
  if (codex) cleanupCodexHome(codex);
  world?.cleanup();
});

describe('the Codex TUI in a terminal, started by turnkeeper start --interactive', () => {
  it('owns the terminal and draws; a typed prompt claims the Todo and the model gets the ready capture', async () => {
    const term = startTui('fix-login');
    await term.waitForText(TUI_READY, 60_000).catch(async (error: Error) => {
      throw new Error(`${error.message}\n(receipts: ${JSON.stringify((await receiptDocs(world)).map((d) => d.kind))})`);
    });
    // The agent's process group is the terminal's foreground group (else its first read stops it).
    const launcher = term.panePid()!;
    const agentGroup = Number(readFileSync(`/proc/${term.foregroundGroup()}/stat`, 'utf8').split(') ')[1]!.split(' ')[2]);
    expect(term.foregroundGroup()).not.toBe(launcher);
    expect(agentGroup).toBe(term.foregroundGroup());
    await prompt(term, 'please fix the login form');
    expect(await waitFor(() => presentations().some((text) => text.includes('wren-5512')), 60_000, 100), term.screen()).toBe(true);
    await quit(term);
  });

  it('with a daemon already running, started by a plain codex, a started TUI still claims its own Todo', async () => {
    const started = await daemon('start');
    expect(started.code, started.stderr.slice(-1000)).toBe(0);
    expect(daemonPids()).toHaveLength(1);
    const term = startTui('fix-signup');
    await term.waitForText(TUI_READY, 60_000);
    await prompt(term, 'please fix the signup form');
    expect(await waitFor(() => presentations().some((text) => text.includes('ibis-7730')), 60_000, 100), term.screen()).toBe(true);
    await quit(term);
  });

  it('two starts one after the other on two Todos: each claims its own, and no daemon keeps a launch environment', async () => {
    for (const [todo, word] of [
      ['fix-logout', 'kite-3391'],
      ['fix-about', 'moth-6604'],
    ] as const) {
      const before = presentations().length;
      const term = startTui(todo);
      await term.waitForText(TUI_READY, 60_000);
      await prompt(term, `please work on ${todo} now`);
      const seen = await waitFor(() => presentations().length > before, 60_000, 100);
      expect(seen, term.screen()).toBe(true);
      expect(presentations().at(-1)).toContain(word);
      await quit(term);
      for (const pid of daemonPids()) expect(readFileSync(`/proc/${pid}/environ`, 'utf8')).not.toContain('TURNKEEPER_TODO=');
    }
  });

  it('start → prompt → claim → tool call → quit → resume: drift named first, then the resumed TUI still holds the same capture and lease', async () => {
    const term = startTui('fix-tool');
    await term.waitForText(TUI_READY, 60_000);
    await prompt(term, `${TOOL_PROMPT} for fix-tool`);
    expect(await waitFor(() => existsSync(join(world.repo, 'tool-ran.txt')), 60_000, 100), term.screen()).toBe(true);
    await quit(term);
    const status = JSON.parse((await turnkeeper(['status', '--json'])).stdout) as {
      leases: { todo: string; capture: string; epoch: number; status: string }[];
    };
    const lease = status.leases.find((item) => item.todo === 'fix-tool' && item.status === 'active')!;
    expect(lease).toBeDefined();
    expect(presentations().some((text) => text.includes(lease.capture) && text.includes('lynx-2287'))).toBe(true);

    // The tool changed the checkout since the capture: resume says so and how to go on, and starts nothing.
    const refused = terminal([process.execPath, CLI, 'resume', lease.capture, '--interactive', '--agent-bin', CODEX_SHIM]);
    await refused.waitForText(/--accept-drift/, 60_000);
    expect(await waitFor(() => refused.exited(), 10_000, 100)).toBe(true);
    const resumed = terminal([process.execPath, CLI, 'resume', lease.capture, '--interactive', '--accept-drift', '--agent-bin', CODEX_SHIM]);
    await resumed.waitForText(TUI_READY, 60_000);
    await prompt(resumed, 'go on with it');
    // The resumed conversation already holds the ready capture: its next prompt is told it still holds the lease.
    const reminded = () =>
      presentations().some((text) => text.startsWith(`Turnkeeper: Todo fix-tool · capture ${lease.capture}`) && text.includes('still holds the lease'));
    expect(await waitFor(reminded, 60_000, 100), resumed.screen()).toBe(true);
    await quit(resumed);
    const after = JSON.parse((await turnkeeper(['status', '--json'])).stdout) as typeof status;
    expect(after.leases.filter((item) => item.todo === 'fix-tool' && item.status === 'active')).toMatchObject([{ capture: lease.capture, epoch: lease.epoch }]);
    const kinds = (await receiptDocs(world)).filter((doc) => doc.todo === 'fix-tool').map((doc) => doc.kind);
    expect(kinds.filter((kind) => kind === 'launch_committed')).toHaveLength(2);
    expect(kinds.filter((kind) => kind === 'lease_acquired')).toHaveLength(1);
  });

  it('control: a plain codex TUI uses the shared daemon when one runs (why a launch must not)', async () => {
    expect((await daemon('start')).code).toBe(0);
    const [pid] = daemonPids();
    expect(pid).toBeDefined();
    const term = terminal([CODEX_SHIM]);
    await term.waitForText(TUI_READY, 60_000);
    // The TUI is a client of the daemon: the daemon's socket (the control path links to it) has a
    // connection besides the listening one (an accepted Unix socket carries the listener's name).
    const socket = realpathSync(join(codex.codexHome, 'app-server-control', 'app-server-control.sock'));
    const endpoints = () =>
      readFileSync('/proc/net/unix', 'utf8')
        .split('\n')
        .filter((line) => line.endsWith(` ${socket}`)).length;
    expect(await waitFor(() => endpoints() >= 2, 20_000, 100), `endpoints of ${socket}: ${endpoints()}`).toBe(true);
    await quit(term);
  });
});
