// Contract §6 "exclusivity and freshness", on a real capture, a real store and a compiled agent:
// the transaction that commits `launch_committed` re-checks the lease resume checked, and at most
// one launch of a capture is alive at a time. Every case has its control.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { like } from '../support/matchers';
import { resumeCapture, type ResumeResult } from '../../src/launcher/resume';
import type { Barriers } from '../../src/launcher/launch';
import type { SqliteAuthority } from '../../src/ledger/open';
import { contextOf, payload, type World } from '../support/world';
import { alive, readMarker, useLaunchScene, waitFor, type Scene } from './fixtures';

process.env.TURNKEEPER_TEST_BARRIERS = '1';

let world: World;
let s: Scene;
let captureId: string;
const launch = useLaunchScene('tk-resume-race', (w) => {
  expect(w.cli(['todo', 'add', 'Fix login', '--id', 'fix-login']).code).toBe(0);
  writeFileSync(join(w.root, 'sess-r.jsonl'), '{"type":"session"}\n');
  const claim = w.cli(['hook'], { input: payload.codexPrompt(w, 'sess-r', 'turn-1', '#todo:fix-login') });
  captureId = /capture (cap_[0-9a-f]{24})/.exec(contextOf(claim.stdout)!)![1]!;
});
const { pids, openStore } = launch;
beforeEach(() => ({ world, scene: s } = launch.current));

/** One in-process resume of the capture with the compiled agent; `mode` is the agent's behaviour. */
async function resume(options: { markers: string; mode: 'exit' | 'sleep'; barriers?: Barriers; store?: SqliteAuthority }): Promise<ResumeResult> {
  mkdirSync(options.markers, { recursive: true });
  const result = await resumeCapture({
    store: options.store ?? (await openStore()),
    storePath: world.db,
    captureId,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', TK_MARKER_DIR: options.markers, TK_MODE: options.mode },
    acceptDrift: false,
    dryRun: false,
    agentBin: s.victim,
    mode: 'headless',
    stdio: 'pipe',
    barriers: options.barriers,
  });
  if (result.ok && !result.dryRun) {
    pids.push(result.launch.pid);
    result.launch.stdin?.destroy();
  }
  return result;
}

interface Doc {
  readonly seq: number;
  readonly kind: string;
  readonly capture?: string;
  readonly lease?: { epoch: number; version: number };
  readonly detail?: Record<string, unknown>;
}

async function receipts(kind: string): Promise<Doc[]> {
  const store = await openStore();
  const rows = await store.receipts({ limit: 10_000 });
  return rows
    .map((row) => JSON.parse(row.doc) as Doc)
    .filter((doc) => doc.kind === kind && doc.capture === captureId)
    .sort((a, b) => a.seq - b.seq);
}

const markerDir = (name: string) => join(s.dir, name);

/** This test process's start time (field 22 of /proc/self/stat): a receipt naming it names a live process. */
function ownStartTime(): string {
  const stat = readFileSync(`/proc/${process.pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]!;
}

/** Appends a `launch_committed` of the capture with the liveness facts given, as an earlier launch would have. */
async function forger(): Promise<(detail: Record<string, string | number>) => Promise<unknown>> {
  const store = await openStore();
  const lease = (await store.leaseOfCapture(captureId))!;
  return (detail) =>
    store.appendReceipt(
      {
        kind: 'launch_committed',
        goal: lease.goal,
        todo: lease.todo,
        capture: captureId,
        owner: lease.owner,
        lease: { epoch: lease.epoch, version: lease.version },
        detail,
      },
      Date.now(),
    );
}

describe('the commit re-checks the lease resume checked (resume vs release)', () => {
  for (const barrier of ['after_attestation', 'parked'] as const) {
    it(`release --force and a claim by another session inside the window (${barrier}) → [lease_moved], no launch_committed, the agent never ran (control: no release, it launches)`, async () => {
      const markers = markerDir('raced');
      const result = await resume({
        markers,
        mode: 'exit',
        barriers: {
          [barrier]: () => {
            expect(world.cli(['release', 'fix-login', '--force', '--reason', 'reassign']).code).toBe(0);
            const other = world.cli(['hook'], { input: payload.codexPrompt(world, 'sess-other', 'turn-9', '#todo:fix-login') });
            expect(contextOf(other.stdout)).toMatch(/epoch 2/);
          },
        },
      });
      expect(result).toMatchObject({ ok: false, reason: 'lease_moved' });
      expect((result as { guidance: string }).guidance).toContain('[lease_moved]');
      expect((result as { guidance: string }).guidance).toContain('codex:sess-other');
      await new Promise((r) => setTimeout(r, 100));
      expect(readMarker(markers, 'victim')).toBeUndefined();
      expect(await receipts('launch_committed')).toEqual([]);
      const [refusal] = await receipts('launch_refused');
      expect([refusal?.detail?.reason, refusal?.lease?.epoch]).toEqual(['lease_moved', 1]);
      // The parked child the refusal names was killed before its first instruction.
      expect(refusal?.detail?.pid).toEqual(expect.any(Number));
      expect(await waitFor(() => !alive(refusal!.detail!.pid as number))).toBe(true);

      // Control: a fresh capture of the same Todo, resumed without anything moving, launches.
      await controlLaunches();
    });
  }

  it('a release (no new holder) inside the window → [capture_released], the agent never ran', async () => {
    const markers = markerDir('released');
    const result = await resume({
      markers,
      mode: 'exit',
      barriers: { after_attestation: () => void expect(world.cli(['release', 'fix-login', '--force', '--reason', 'stop']).code).toBe(0) },
    });
    expect(result).toMatchObject({ ok: false, reason: 'capture_released' });
    await new Promise((r) => setTimeout(r, 100));
    expect(readMarker(markers, 'victim')).toBeUndefined();
    expect(await receipts('launch_committed')).toEqual([]);
    expect((await receipts('launch_refused')).map((doc) => doc.detail?.reason)).toEqual(['capture_released']);
  });

  it('control: nothing moves inside the window → the same resume launches, with liveness facts in its receipt', async () => {
    const markers = markerDir('control');
    const result = await resume({ markers, mode: 'exit', barriers: { after_attestation: () => undefined, parked: () => undefined } });
    expect(result.ok).toBe(true);
    if (!result.ok || result.dryRun) return;
    expect(await result.launch.exited).toEqual({ code: 0, signal: null });
    expect(readMarker(markers, 'victim')?.pid).toBe(result.launch.pid);
    const [committed] = await receipts('launch_committed');
    expect(committed?.detail).toMatchObject({ pid: result.launch.pid, host: hostname(), pidStart: like.stringMatching(/^\d+$/), boot: like.any(String) });
  });
});

/** Releases the moved lease, claims the Todo again for the original session and resumes that capture. */
async function controlLaunches(): Promise<void> {
  expect(world.cli(['release', 'fix-login', '--force', '--reason', 'back']).code).toBe(0);
  const claim = world.cli(['hook'], { input: payload.codexPrompt(world, 'sess-r', 'turn-2', '#todo:fix-login') });
  captureId = /capture (cap_[0-9a-f]{24})/.exec(contextOf(claim.stdout)!)![1]!;
  const markers = markerDir('control');
  const control = await resume({ markers, mode: 'exit' });
  expect(control.ok).toBe(true);
  if (control.ok && !control.dryRun) expect(await control.launch.exited).toEqual({ code: 0, signal: null });
  expect(readMarker(markers, 'victim')).toBeDefined();
  expect(await receipts('launch_committed')).toHaveLength(1);
}

describe('one live launch per capture', () => {
  it('two resumes parked together → exactly one live launch, the other [launch_in_progress] (control: after kill -9 of the first, a new resume launches)', async () => {
    let parked = 0;
    let release: () => void = () => undefined;
    const bothParked = new Promise<void>((resolve) => (release = resolve));
    const arrive = async () => {
      parked += 1;
      if (parked === 2) release();
      await Promise.race([bothParked, new Promise((r) => setTimeout(r, 10_000))]);
    };
    const [a, b] = await Promise.all([
      resume({ markers: markerDir('a'), mode: 'sleep', barriers: { parked: arrive } }),
      resume({ markers: markerDir('b'), mode: 'sleep', barriers: { parked: arrive } }),
    ]);
    expect(parked).toBe(2);
    const results = [a, b];
    const launched = results.filter((result) => result.ok);
    const refused = results.filter((result) => !result.ok);
    expect(launched).toHaveLength(1);
    expect(refused).toMatchObject([{ ok: false, reason: 'launch_in_progress' }]);
    const winner = launched[0] as Extract<ResumeResult, { dryRun: false }>;
    const winnerDir = results[0] === winner ? 'a' : 'b';
    const loserDir = winnerDir === 'a' ? 'b' : 'a';
    expect((refused[0] as { guidance: string }).guidance).toContain(`pid ${winner.launch.pid}`);
    expect(await waitFor(() => readMarker(markerDir(winnerDir), 'victim') !== undefined)).toBe(true);
    expect(alive(winner.launch.pid)).toBe(true);
    expect(readMarker(markerDir(loserDir), 'victim')).toBeUndefined();
    expect((await receipts('launch_committed')).map((doc) => doc.detail?.pid)).toEqual([winner.launch.pid]);
    expect((await receipts('launch_refused')).map((doc) => doc.detail?.reason)).toEqual(['launch_in_progress']);

    // While it lives, a third resume is refused too.
    expect(await resume({ markers: markerDir('c'), mode: 'exit' })).toMatchObject({ ok: false, reason: 'launch_in_progress' });
    expect(readMarker(markerDir('c'), 'victim')).toBeUndefined();

    // Control: the live launch dies (kill -9); its record no longer blocks.
    winner.launch.kill('SIGKILL');
    expect(await winner.launch.exited).toEqual({ code: null, signal: 9 });
    const after = await resume({ markers: markerDir('d'), mode: 'exit' });
    expect(after.ok).toBe(true);
    if (after.ok && !after.dryRun) expect(await after.launch.exited).toEqual({ code: 0, signal: null });
    expect(readMarker(markerDir('d'), 'victim')).toBeDefined();
    expect(await receipts('launch_committed')).toHaveLength(2);
  });

  it('an agent that exited normally does not block the next resume', async () => {
    const first = await resume({ markers: markerDir('first'), mode: 'exit' });
    expect(first.ok).toBe(true);
    if (first.ok && !first.dryRun) await first.launch.exited;
    const second = await resume({ markers: markerDir('second'), mode: 'exit' });
    expect(second.ok).toBe(true);
    if (second.ok && !second.dryRun) await second.launch.exited;
    expect(await receipts('launch_committed')).toHaveLength(2);
  });

  it('liveness is pid + start time on this host and boot: a reused pid does not block, a live one does, another host counts as live', async () => {
    const ownStart = ownStartTime();
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    const forge = await forger();

    // This test process is alive: a record naming it (same host, boot and start time) is a live launch.
    await forge({ pid: process.pid, host: hostname(), boot, pidStart: ownStart });
    expect(await resume({ markers: markerDir('live'), mode: 'exit' })).toMatchObject({ ok: false, reason: 'launch_in_progress' });
    // Another host: Turnkeeper cannot see its processes, so it counts as live.
    await forge({ pid: 1, host: `${hostname()}-elsewhere`, boot, pidStart: '1' });
    expect(await resume({ markers: markerDir('elsewhere'), mode: 'exit' })).toMatchObject({ ok: false, reason: 'launch_in_progress' });
    // The same pid with another start time is a reused pid: that launch is dead.
    await forge({ pid: process.pid, host: hostname(), boot, pidStart: String(Number(ownStart) + 1) });
    const reused = await resume({ markers: markerDir('reused'), mode: 'exit' });
    expect(reused.ok).toBe(true);
    if (reused.ok && !reused.dryRun) await reused.launch.exited;
    // Another boot of this host: every process of that boot is gone.
    await forge({ pid: process.pid, host: hostname(), boot: '00000000-0000-0000-0000-000000000000', pidStart: ownStart });
    const rebooted = await resume({ markers: markerDir('rebooted'), mode: 'exit' });
    expect(rebooted.ok).toBe(true);
    if (rebooted.ok && !rebooted.dryRun) await rebooted.launch.exited;
  });

  it('machines are told apart by machine id and host name: a cloned VM with the same name, or a container with the same machine id, is another machine, live (control: this machine, another boot, is dead)', async () => {
    const ownStart = ownStartTime();
    const machine = readFileSync('/etc/machine-id', 'utf8').trim();
    const forge = await forger();
    const otherBoot = '00000000-0000-0000-0000-000000000000';
    // The clone: the same host name, its own machine id and boot. Its agent is not visible from here.
    await forge({ pid: process.pid, host: hostname(), machine: 'f'.repeat(32), boot: otherBoot, pidStart: ownStart });
    expect(await resume({ markers: markerDir('clone'), mode: 'exit' })).toMatchObject({ ok: false, reason: 'launch_in_progress' });
    // A container of an image with a baked-in machine id: the same id, its own host name.
    await forge({ pid: process.pid, host: `${hostname()}-container`, machine, boot: otherBoot, pidStart: ownStart });
    expect(await resume({ markers: markerDir('container'), mode: 'exit' })).toMatchObject({ ok: false, reason: 'launch_in_progress' });
    // Control: this machine (its id and name), another boot: dead.
    await forge({ pid: process.pid, host: hostname(), machine, boot: otherBoot, pidStart: ownStart });
    const rebooted = await resume({ markers: markerDir('rebooted'), mode: 'exit' });
    expect(rebooted.ok, JSON.stringify(rebooted)).toBe(true);
    if (rebooted.ok && !rebooted.dryRun) {
      await rebooted.launch.exited;
      // The receipt records the machine id beside the host name.
      expect((await receipts('launch_committed')).at(-1)?.detail).toMatchObject({ host: hostname(), machine });
    }
  });

  it('two `turnkeeper resume` processes started together → one live agent, the other exits 1 [launch_in_progress] (control: after kill -9, the CLI resumes again)', async () => {
    const run = (name: string, mode: string) =>
      world.cliAsync(['resume', captureId, '--json', '--agent-bin', s.victim], { env: { TK_MARKER_DIR: mkdirp(markerDir(name)), TK_MODE: mode } });
    const finished: string[] = [];
    const first = run('cli-a', 'sleep').then((r) => (finished.push('a'), r));
    const second = run('cli-b', 'sleep').then((r) => (finished.push('b'), r));
    const markerPids = () => ['cli-a', 'cli-b'].map((name) => readMarker(markerDir(name), 'victim')?.pid).filter((pid): pid is number => pid !== undefined);
    try {
      expect(await waitFor(() => finished.length > 0 || markerPids().length === 2, 20_000)).toBe(true);
      expect(await waitFor(() => markerPids().length > 0, 5000)).toBe(true);
      await new Promise((r) => setTimeout(r, 300));
      expect(markerPids()).toHaveLength(1);
      expect(finished).toHaveLength(1);
      const refused = await (finished[0] === 'a' ? first : second);
      expect(refused.code).toBe(1);
      expect(JSON.parse(refused.stdout)).toMatchObject({ ok: false, reason: 'launch_in_progress' });
      const livePid = markerPids()[0]!;
      expect(alive(livePid)).toBe(true);
      // Control: kill -9 the live agent; its CLI reports the launch, and a new resume launches.
      process.kill(livePid, 'SIGKILL');
      const launched = await (finished[0] === 'a' ? second : first);
      expect(JSON.parse(launched.stdout)).toMatchObject({ ok: true, decision: 'launched', exit: { code: null, signal: 9 } });
      const again = await run('cli-c', 'exit');
      expect(again.code, again.stderr).toBe(0);
      expect(JSON.parse(again.stdout)).toMatchObject({ ok: true, decision: 'launched', exit: { code: 0, signal: null } });
    } finally {
      for (const pid of markerPids()) pids.push(pid);
    }
  });
});

function mkdirp(dir: string): string {
  mkdirSync(dir, { recursive: true });
  return dir;
}
