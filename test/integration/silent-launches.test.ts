// Launches whose agent fired no hook (src/doctor/status.ts `silentLaunches`): the status bar's
// warning, the Captures view's mark and doctor's problem. A silent launch stops counting once a later
// launch of the same agent, or of the same Todo, fired its hooks; each case has its control.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EXITED_SILENT_LAUNCH_KEPT_MS, FIRST_HOOK_DEADLINE_MS, silentLaunches } from '../../src/doctor/status';
import { launchProcessState } from '../../src/launcher/liveness';
import { hostname } from 'node:os';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import type { SqliteAuthority } from '../../src/ledger/open';
import { makeWorld, type World } from '../support/world';

let world: World;
let store: SqliteAuthority;
beforeEach(async () => {
  world = makeWorld('tk-silent');
  store = await world.store();
});
afterEach(() => {
  store.close();
  world.cleanup();
});

const T0 = Date.parse('2026-12-01T10:00:00Z');
/** Field 22 of /proc/<pid>/stat, as the launcher records it. */
const processStartOf = (pid: number): string => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[19]!;
/** Long after every launch's first-hook deadline. */
const LATER = T0 + 60 * 60_000;
let launches = 0;

/** A `turnkeeper start` of `todo` by `agent` at `at`, as the launcher commits it; returns its launch id. */
async function start(agent: string, todo: string, at: number): Promise<string> {
  const launch = `launch-${(launches += 1)}`;
  await store.appendReceipt({ kind: 'launch_committed', goal: world.goal, todo, detail: { start: true, launch, agent } }, at);
  return launch;
}
/** The launched agent's first hook (hook.ts recordLaunchHooked). */
async function hooked(launch: string, agent: string, todo: string, at: number): Promise<void> {
  await store.appendReceipt({ kind: 'launch_hooked', goal: world.goal, todo, owner: `${agent}:sess-${launch}`, detail: { launch, event: 'SessionStart' } }, at);
}
const silent = async (now = LATER) => (await silentLaunches(store, now)).map((launch) => `${launch.agent} ${launch.todo}`);

describe('a silent launch', () => {
  it('counts after the deadline while nothing later answers it (control: within the deadline it does not yet)', async () => {
    await start('codex', 'fix-login', T0);
    expect(await silent(T0 + FIRST_HOOK_DEADLINE_MS - 1)).toEqual([]);
    expect(await silent()).toEqual(['codex fix-login']);
  });

  it('stops counting once a later launch of the same agent fired its hooks (another Todo)', async () => {
    await start('codex', 'fix-login', T0);
    const later = await start('codex', 'write-docs', T0 + 120_000);
    // The later launch is silent too, for now: both count.
    expect(await silent()).toEqual(['codex fix-login', 'codex write-docs']);
    await hooked(later, 'codex', 'write-docs', T0 + 121_000);
    expect(await silent()).toEqual([]);
  });

  it('stops counting once a later launch of the same Todo fired its hooks (another agent)', async () => {
    await start('codex', 'fix-login', T0);
    await hooked(await start('claude', 'fix-login', T0 + 120_000), 'claude', 'fix-login', T0 + 121_000);
    expect(await silent()).toEqual([]);
  });

  it('control: an earlier launch that fired, or a later one of another agent and Todo, answers nothing', async () => {
    await hooked(await start('codex', 'write-docs', T0), 'codex', 'write-docs', T0 + 1000);
    await start('codex', 'fix-login', T0 + 120_000);
    await hooked(await start('gemini', 'other', T0 + 240_000), 'gemini', 'other', T0 + 241_000);
    expect(await silent()).toEqual(['codex fix-login']);
  });

  it('control: a later launch of the same agent that is silent as well answers nothing', async () => {
    await start('codex', 'fix-login', T0);
    await start('codex', 'fix-login', T0 + 120_000);
    expect(await silent()).toEqual(['codex fix-login', 'codex fix-login']);
  });
});

describe('a silent launch by cause (what doctor says of it)', () => {
  const processFacts = { pid: 4242, host: 'this-host', machine: 'm', boot: 'b', pidStart: '1' };
  async function startWith(facts: Record<string, string | number>, at: number): Promise<void> {
    await store.appendReceipt(
      { kind: 'launch_committed', goal: world.goal, todo: 'fix-login', detail: { start: true, launch: 'launch-p', agent: 'codex', ...facts } },
      at,
    );
  }

  it("names its process state as the launcher's rule says, and an exited one ages out after a day (control: a running one stays)", async () => {
    await startWith(processFacts, T0);
    const states: string[] = [];
    const state = (answer: 'running' | 'exited' | 'unknown') => (launch: { pid: number | null }) => {
      states.push(String(launch.pid));
      return answer;
    };
    expect(await silentLaunches(store, LATER, state('running'))).toMatchObject([{ process: 'running', host: 'this-host' }]);
    // The rule was asked about the receipt's own process.
    expect(states).toEqual(['4242']);
    expect(await silentLaunches(store, LATER, state('exited'))).toMatchObject([{ process: 'exited' }]);
    const dayLater = T0 + EXITED_SILENT_LAUNCH_KEPT_MS + 60_000;
    expect(await silentLaunches(store, dayLater, state('exited'))).toEqual([]);
    expect(await silentLaunches(store, dayLater, state('running'))).toMatchObject([{ process: 'running' }]);
    // Without the rule (a reader that cannot see processes) nothing is said of the process, and nothing ages out.
    expect((await silentLaunches(store, dayLater))[0]).not.toHaveProperty('process');
  });

  it("the launcher's rule: this machine's dead pid is exited, our own live process is running, another host is unknown", () => {
    const self = { seq: 1, launch: 'l', pid: process.pid, host: hostname(), machine: null, boot: null, pidStart: processStartOf(process.pid) };
    expect(launchProcessState(self)).toBe('running');
    expect(launchProcessState({ ...self, pidStart: '1' })).toBe('exited');
    expect(launchProcessState({ ...self, host: 'another-host' })).toBe('unknown');
    expect(launchProcessState({ ...self, pidStart: null })).toBe('unknown');
  });

  it('doctor: an agent that exited before its first hook is said to have exited, not blamed on trust', async () => {
    // This machine (no machine id recorded: compared by host name), a pid that is gone.
    await startWith({ pid: 999_999_999, host: hostname(), boot: 'b', pidStart: '1' }, Date.now() - 10 * 60_000);
    store.close();
    const report = JSON.parse(world.cli(['doctor', '--json']).stdout) as { problems: string[]; silentLaunches: { process?: string }[] };
    expect(report.silentLaunches).toMatchObject([{ process: 'exited' }]);
    const said = report.problems.find((problem) => problem.includes('launched for a start of Todo fix-login'))!;
    expect(said).toContain('exited without firing a hook');
    expect(said).not.toMatch(/trust/i);
    store = await world.store();
  });
});

describe("a silent Codex launch and Codex's shared app-server daemon", () => {
  const codexHome = () => join(world.root, 'codex-home');
  const daemons: ChildProcess[] = [];
  afterEach(async () => {
    for (const daemon of daemons.splice(0)) {
      daemon.kill('SIGKILL');
      if (daemon.exitCode === null && daemon.signalCode === null) await new Promise((resolvePromise) => daemon.once('exit', resolvePromise));
    }
  });
  /** A process shaped as `codex app-server --managed-daemon` (what `codex app-server daemon start` leaves running), with `env`. */
  async function fakeDaemon(env: Record<string, string>): Promise<number> {
    const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)', '--', 'app-server', '--managed-daemon'], { env, stdio: 'ignore' });
    daemons.push(child);
    await new Promise((resolvePromise) => child.once('spawn', resolvePromise));
    return child.pid!;
  }
  const self = () => ({
    pid: process.pid,
    host: hostname(),
    boot: readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim(),
    pidStart: processStartOf(process.pid),
  });
  async function silentCodexLaunch(): Promise<void> {
    await store.appendReceipt(
      { kind: 'launch_committed', goal: world.goal, todo: 'fix-login', detail: { start: true, launch: 'launch_00000000000000aa', agent: 'codex', ...self() } },
      Date.now() - 10 * 60_000,
    );
  }
  async function doctorProblems(): Promise<string[]> {
    store.close();
    try {
      return (JSON.parse(world.cli(['doctor', '--json'], { env: { CODEX_HOME: codexHome() } }).stdout) as { problems: string[] }).problems;
    } finally {
      store = await world.store();
    }
  }
  const NAMED = 'a shared Codex app-server daemon started without Turnkeeper is running';

  it('doctor names a daemon of the same CODEX_HOME without TURNKEEPER_LAUNCH, with its fix (the old doctor gave the trust text)', async () => {
    await silentCodexLaunch();
    const pid = await fakeDaemon({ PATH: '/usr/bin:/bin', CODEX_HOME: codexHome() });
    const problems = await doctorProblems();
    const named = problems.find((problem) => problem.startsWith(NAMED))!;
    expect(named).toContain(`(pid ${pid})`);
    expect(named).toContain('Fix: codex app-server daemon stop');
    expect(named).toContain('--no-daemon');
    const launch = problems.find((problem) => problem.includes('launched for a start of Todo fix-login'))!;
    expect(launch).toContain('shared Codex app-server daemon');
    expect(launch).not.toMatch(/trust|skipped/);
  });

  it('control: a daemon a launch started (TURNKEEPER_LAUNCH), or one of another CODEX_HOME, is not named: the launch gets the trust text', async () => {
    await fakeDaemon({ PATH: '/usr/bin:/bin', CODEX_HOME: codexHome(), TURNKEEPER_LAUNCH: 'launch_00000000000000bb' });
    await fakeDaemon({ PATH: '/usr/bin:/bin', CODEX_HOME: join(world.root, 'another-codex-home') });
    await silentCodexLaunch();
    const problems = await doctorProblems();
    expect(problems.join('\n')).not.toContain('app-server daemon started without Turnkeeper');
    expect(problems.find((problem) => problem.includes('launched for a start of Todo fix-login'))).toContain('its hooks are skipped');
  });

  it('control: without a silent Codex launch the daemon is no problem', async () => {
    await fakeDaemon({ PATH: '/usr/bin:/bin', CODEX_HOME: codexHome() });
    expect((await doctorProblems()).join('\n')).not.toContain('app-server daemon');
  });
});
