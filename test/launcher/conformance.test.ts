// Launcher conformance (contract §6), all real: compiled programs, fork + ptrace parking at the exec
// boundary, real file attacks at every test barrier, and a real SQLite receipt chain.
//
// A pass proves three things at once: no attacker code ran (no attacker marker, no preload marker);
// whatever ran has exactly the attested bytes (the victim copies /proc/self/exe while it runs and we
// hash the copy); and the one `launch_committed` receipt names the attested digest, argv and cwd and
// the pid that actually ran. A refusal must carry its typed reason, leave no `launch_committed`
// receipt and no victim marker. Every attack has a control (same setup, no attack: the victim runs).
import { spawn, type ChildProcess } from 'node:child_process';
import {
  openSync,
  closeSync,
  writeSync,
  ftruncateSync,
  readFileSync,
  renameSync,
  symlinkSync,
  unlinkSync,
  existsSync,
  mkdirSync,
  readdirSync,
  writeFileSync,
} from 'node:fs';
import { join, resolve } from 'node:path';
import { buildSync } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attest, type Attestation } from '../../src/launcher/attest';
import { digestDocument } from '../../src/core/canonical';
import { BARRIERS, launchAttested, type Barriers, type BarrierName, type RunningLaunch } from '../../src/launcher/launch';
import { nativeLauncher, type NativeEvent } from '../../src/launcher/native';
import { LaunchRefused, type LaunchRefusal } from '../../src/launcher/refusals';
import { cleanupCodexHome, makeCodexHome, writeCodexConfig } from '../support/codexHarness';
import { shellThenText, startMockModelServer } from '../support/mockModelServer';
import {
  alive,
  buildFixtures,
  preloadRan,
  ranDigest,
  readMarker,
  receiptStore,
  scene,
  waitFor,
  type Fixtures,
  type ReceiptStore,
  type Scene,
} from './fixtures';

process.env.TURNKEEPER_TEST_BARRIERS = '1';

const REPO = resolve(__dirname, '../..');
let fx: Fixtures;
beforeAll(() => {
  fx = buildFixtures('tk-conformance');
});
afterAll(() => fx?.cleanup());

type Attack = 'none' | 'replace' | 'rewrite' | 'symlink' | 'loader' | 'delete';
const ATTACKS: readonly Attack[] = ['none', 'replace', 'rewrite', 'symlink', 'loader', 'delete'];
type Outcome = { ran: true } | { refused: LaunchRefusal };
const RAN: Outcome = { ran: true };
const refused = (reason: LaunchRefusal): Outcome => ({ refused: reason });

/**
 * The expected outcome of every barrier × attack. The descriptor is the authority: a path change after
 * the last path check (symlink retarget) cannot change what runs, so the attested bytes run; anything
 * that touches the attested inode (rename over it, unlink it, write it) changes its ctime and is caught
 * at the last check before the receipt. Loader variables are read when env is copied (after
 * `after_attestation`); later mutations of the caller's object have no effect. While parked the file
 * is write-denied (ETXTBSY), so the rewrite fails and the attested bytes run. `cancel` aborts at the
 * parked barrier and attacks inside the cancel barrier.
 */
const EXPECTED: Record<BarrierName, Record<Attack, Outcome>> = {
  after_attestation: {
    none: RAN,
    replace: refused('object_changed'),
    rewrite: refused('object_changed'),
    symlink: refused('resolution_changed'),
    loader: refused('loader_environment_rejected'),
    delete: refused('object_changed'),
  },
  after_argv_env: {
    none: RAN,
    replace: refused('object_changed'),
    rewrite: refused('object_changed'),
    symlink: RAN,
    loader: RAN,
    delete: refused('object_changed'),
  },
  before_fork: {
    none: RAN,
    replace: refused('object_changed'),
    rewrite: refused('object_changed'),
    symlink: RAN,
    loader: RAN,
    delete: refused('object_changed'),
  },
  parked: { none: RAN, replace: refused('object_changed'), rewrite: RAN, symlink: RAN, loader: RAN, delete: refused('object_changed') },
  cancel: {
    none: refused('launch_verification_failed'),
    replace: refused('launch_verification_failed'),
    rewrite: refused('launch_verification_failed'),
    symlink: refused('launch_verification_failed'),
    loader: refused('launch_verification_failed'),
    delete: refused('launch_verification_failed'),
  },
};

interface Result {
  readonly outcome: Outcome;
  readonly run?: RunningLaunch;
  readonly exit?: { code: number | null; signal: number | null };
  readonly error?: LaunchRefused;
  readonly writeError?: string | undefined;
  readonly sawMarkerAtBarrier: boolean;
}

/** Runs one launch of the scene's victim with `barriers`, returning a typed outcome (never a bare exception). */
async function launch(
  s: Scene,
  store: ReceiptStore,
  attestation: Attestation,
  options: {
    args?: string[];
    env?: Record<string, string>;
    barriers?: Barriers;
    signal?: AbortSignal;
    allow?: string[];
    timeoutMs?: number;
    stdio?: 'pipe' | 'inherit';
  } = {},
): Promise<Result & { sawMarkerAtBarrier: boolean }> {
  try {
    const run = await launchAttested({
      attestation,
      args: options.args ?? ['exit', '0'],
      cwd: s.dir,
      env: options.env ?? { TK_MARKER_DIR: s.markers, PATH: '/usr/bin:/bin' },
      stdio: options.stdio ?? 'pipe',
      allowLoaderVariables: options.allow,
      timeoutMs: options.timeoutMs,
      signal: options.signal,
      barriers: options.barriers,
      commit: store.commit,
      recordRefusal: store.recordRefusal,
    });
    run.stdin?.end();
    run.stdout?.resume();
    run.stderr?.resume();
    const exit = await run.exited;
    return { outcome: RAN, run, exit, sawMarkerAtBarrier: false };
  } catch (error) {
    if (!(error instanceof LaunchRefused)) throw error;
    return { outcome: refused(error.reason), error, sawMarkerAtBarrier: false };
  }
}

/** The three-part proof for a launch that ran. */
async function expectRanAttested(s: Scene, store: ReceiptStore, attestation: Attestation, result: Result, args = ['exit', '0']): Promise<void> {
  expect(result.outcome, result.error?.message).toEqual(RAN);
  expect(result.exit).toEqual({ code: 0, signal: null });
  expect(readMarker(s.markers, 'attacker')).toBeUndefined();
  expect(preloadRan(s.markers)).toBe(false);
  const marker = readMarker(s.markers, 'victim');
  expect(marker?.tag).toBe('victim');
  expect(ranDigest(s.markers, 'victim')).toBe(attestation.digest);
  expect(attestation.digest).toBe(fx.victimDigest);
  const committed = await store.committed();
  expect(committed).toHaveLength(1);
  const receipt = committed[0]!;
  const argv = [attestation.resolved, ...args];
  expect(receipt.detail.digest).toBe(attestation.digest);
  expect(receipt.detail.argv).toBe(JSON.stringify(argv));
  expect(receipt.detail.argvDigest).toBe(digestDocument(argv));
  expect(receipt.detail.cwd).toBe(s.dir);
  expect(receipt.detail.pid).toBe(result.run!.pid);
  expect(receipt.detail.dev).toBe(attestation.identity.dev);
  expect(receipt.detail.ino).toBe(attestation.identity.ino);
  expect(marker!.pid).toBe(result.run!.pid);
  expect(marker!.argv).toEqual(argv);
  expect(marker!.cwd).toBe(s.dir);
}

/** The proof for a refusal: the typed reason, no committed receipt, nothing ran. */
async function expectRefused(s: Scene, store: ReceiptStore, result: Result, reason: LaunchRefusal, options: { refusalRecorded?: boolean } = {}): Promise<void> {
  expect(result.outcome, result.error?.message).toEqual(refused(reason));
  expect(result.error).toBeInstanceOf(LaunchRefused);
  // Give a wrongly-released child time to write its marker before we look.
  await new Promise((r) => setTimeout(r, 30));
  expect(readMarker(s.markers, 'victim')).toBeUndefined();
  expect(readMarker(s.markers, 'attacker')).toBeUndefined();
  expect(preloadRan(s.markers)).toBe(false);
  expect(await store.committed()).toEqual([]);
  if (options.refusalRecorded !== false) {
    const receipts = await store.receipts();
    expect(receipts.map((r) => [r.kind, r.detail.reason])).toEqual([['launch_refused', reason]]);
  }
}

describe('barriers × attacks', () => {
  const cases = BARRIERS.flatMap((barrier) =>
    ATTACKS.map((attack) => {
      const expected = EXPECTED[barrier][attack];
      return { barrier, attack, expected, label: 'ran' in expected ? 'attested bytes run' : expected.refused };
    }),
  );

  it.each(cases)('$barrier × $attack → $label', async ({ barrier, attack, expected }) => {
    const s = await scene(fx);
    const store = await receiptStore(join(s.dir, 'receipts.db'));
    try {
      const link = join(s.dir, 'agent-link');
      symlinkSync(s.victim, link);
      const attestation = await attest(attack === 'symlink' ? link : s.victim);
      expect(attestation.digest).toBe(fx.victimDigest);
      expect(attestation.entrypoint).toBe('elf-dynamic');
      const env: Record<string, string> = { TK_MARKER_DIR: s.markers, PATH: '/usr/bin:/bin' };
      const attackerBytes = readFileSync(s.attacker);
      let writeError: string | undefined;
      let markerAtBarrier = false;
      let barrierRan = false;
      const doAttack = () => {
        barrierRan = true;
        // Nothing has run yet, whatever the barrier.
        markerAtBarrier = readMarker(s.markers, 'victim') !== undefined;
        switch (attack) {
          case 'none':
            break;
          case 'replace':
            renameSync(s.attacker, s.victim);
            break;
          case 'rewrite': {
            let fd: number;
            try {
              fd = openSync(s.victim, 'r+');
            } catch (error) {
              writeError = (error as NodeJS.ErrnoException).code;
              break;
            }
            writeSync(fd, attackerBytes, 0, attackerBytes.length, 0);
            ftruncateSync(fd, attackerBytes.length);
            closeSync(fd);
            break;
          }
          case 'symlink':
            symlinkSync(s.attacker, `${link}.new`);
            renameSync(`${link}.new`, link);
            break;
          case 'loader':
            env.LD_PRELOAD = fx.preload;
            break;
          case 'delete':
            unlinkSync(s.victim);
            break;
        }
      };
      const controller = new AbortController();
      const barriers: Barriers =
        barrier === 'cancel'
          ? {
              parked: () => {
                controller.abort();
              },
              cancel: doAttack,
            }
          : { [barrier]: doAttack };
      const result = await launch(s, store, attestation, { env, barriers, signal: controller.signal });
      expect(barrierRan).toBe(true);
      expect(markerAtBarrier).toBe(false);
      // While parked (and in `cancel`, which fires while parked) the attested file is write-denied.
      if (attack === 'rewrite') expect(writeError).toBe(barrier === 'parked' || barrier === 'cancel' ? 'ETXTBSY' : undefined);
      if ('ran' in expected) await expectRanAttested(s, store, attestation, result);
      else await expectRefused(s, store, result, expected.refused);
      if ('ran' in expected && attack === 'loader') expect(readMarker(s.markers, 'victim')!.ldPreload).toBeNull();
    } finally {
      store.close();
    }
  });

  it('cancel before the fork: refused, nothing forked, nothing ran (control: the same launch without the abort runs)', async () => {
    for (const abort of [true, false]) {
      const s = await scene(fx);
      const store = await receiptStore(join(s.dir, 'receipts.db'));
      try {
        const attestation = await attest(s.victim);
        const controller = new AbortController();
        let forkReached = false;
        const result = await launch(s, store, attestation, {
          signal: controller.signal,
          barriers: { after_argv_env: () => void (abort && controller.abort()), before_fork: () => void (forkReached = true) },
        });
        if (abort) {
          expect(forkReached).toBe(false);
          await expectRefused(s, store, result, 'launch_verification_failed');
        } else {
          await expectRanAttested(s, store, attestation, result);
        }
      } finally {
        store.close();
      }
    }
  });

  it('loader variables in the request from the start: refused unless allowed, and an allowed one is recorded', async () => {
    for (const variable of ['LD_PRELOAD', 'LD_LIBRARY_PATH', 'NODE_OPTIONS', 'LD_AUDIT']) {
      const s = await scene(fx);
      const store = await receiptStore(join(s.dir, 'receipts.db'));
      try {
        const result = await launch(s, store, await attest(s.victim), {
          env: { TK_MARKER_DIR: s.markers, [variable]: variable === 'LD_PRELOAD' ? fx.preload : '/nonexistent' },
        });
        await expectRefused(s, store, result, 'loader_environment_rejected');
        expect(result.error!.detail).toContain(variable);
      } finally {
        store.close();
      }
    }
    // Allowed explicitly: it launches, the library really is loaded, and the receipt says so.
    const s = await scene(fx);
    const store = await receiptStore(join(s.dir, 'receipts.db'));
    try {
      const attestation = await attest(s.victim);
      const result = await launch(s, store, attestation, { env: { TK_MARKER_DIR: s.markers, LD_PRELOAD: fx.preload }, allow: ['LD_PRELOAD'] });
      expect(result.outcome, result.error?.message).toEqual(RAN);
      expect(preloadRan(s.markers)).toBe(true);
      expect(readMarker(s.markers, 'victim')!.ldPreload).toBe(fx.preload);
      expect(ranDigest(s.markers, 'victim')).toBe(attestation.digest);
      const [receipt, ...more] = await store.committed();
      expect(more).toEqual([]);
      expect(receipt!.detail.loaderEnvironment).toBe('allowed: LD_PRELOAD');
      expect(receipt!.detail.pid).toBe(result.run!.pid);
      // Allowing one variable does not allow another.
      const s2 = await scene(fx);
      const store2 = await receiptStore(join(s2.dir, 'receipts.db'));
      try {
        const second = await launch(s2, store2, await attest(s2.victim), {
          env: { TK_MARKER_DIR: s2.markers, LD_PRELOAD: fx.preload, LD_LIBRARY_PATH: '/tmp' },
          allow: ['LD_PRELOAD'],
        });
        await expectRefused(s2, store2, second, 'loader_environment_rejected');
      } finally {
        store2.close();
      }
    } finally {
      store.close();
    }
    // Control: no loader variable → 'none' is recorded.
    const c = await scene(fx);
    const cstore = await receiptStore(join(c.dir, 'receipts.db'));
    try {
      const attestation = await attest(c.victim);
      const result = await launch(c, cstore, attestation);
      await expectRanAttested(c, cstore, attestation, result);
      expect((await cstore.committed())[0]!.detail.loaderEnvironment).toBe('none');
    } finally {
      cstore.close();
    }
  });
});

/** A second process holding the write lock (BEGIN IMMEDIATE) until its stdin closes. */
async function holdWriteLock(path: string): Promise<ChildProcess> {
  const script = `
    const Database = require('better-sqlite3');
    const db = new Database(${JSON.stringify(path)});
    db.exec('BEGIN IMMEDIATE');
    process.stdout.write('locked\\n');
    process.stdin.resume();
    process.stdin.on('end', () => { db.exec('ROLLBACK'); db.close(); process.exit(0); });`;
  const child = spawn(process.execPath, ['-e', script], { cwd: REPO, stdio: ['pipe', 'pipe', 'inherit'] });
  await new Promise<void>((resolveLocked, reject) => {
    child.stdout.on('data', (data: Buffer) => data.toString().includes('locked') && resolveLocked());
    child.on('exit', (code) => reject(new Error(`lock holder exited ${code}`)));
  });
  return child;
}

describe('receipt failure: the agent never runs without its receipt', () => {
  it('store locked past its busy timeout → receipt_failed (control: after the lock is released it launches)', async () => {
    const s = await scene(fx);
    const store = await receiptStore(join(s.dir, 'receipts.db'), { busyTimeoutMs: 150 });
    const locker = await holdWriteLock(store.path);
    try {
      let parkedAlive = false;
      const result = await launch(s, store, await attest(s.victim), {
        barriers: { parked: () => void (parkedAlive = readMarker(s.markers, 'victim') === undefined) },
      });
      expect(parkedAlive).toBe(true);
      // The refusal could not be recorded either (same lock): nothing at all was written.
      await expectRefused(s, store, result, 'receipt_failed', { refusalRecorded: false });
      expect(result.error!.detail).toMatch(/SQLITE_BUSY|locked/i);
    } finally {
      locker.stdin!.end();
      await new Promise((r) => locker.once('exit', r));
    }
    expect(await store.receipts()).toEqual([]);
    const attestation = await attest(s.victim);
    await expectRanAttested(s, store, attestation, await launch(s, store, attestation));
    store.close();
  });

  it('store file removed while the agent is parked → receipt_failed (control: not removed, it launches)', async () => {
    for (const remove of [true, false]) {
      const s = await scene(fx);
      const store = await receiptStore(join(s.dir, 'receipts.db'));
      try {
        const attestation = await attest(s.victim);
        const result = await launch(s, store, attestation, {
          barriers: { parked: () => void (remove && unlinkSync(store.path)) },
        });
        if (remove) {
          expect(result.outcome, result.error?.message).toEqual(refused('receipt_failed'));
          expect(result.error!.detail).toMatch(/removed/);
          await new Promise((r) => setTimeout(r, 30));
          expect(readMarker(s.markers, 'victim')).toBeUndefined();
          expect(existsSync(store.path)).toBe(false);
        } else {
          await expectRanAttested(s, store, attestation, result);
        }
      } finally {
        store.close();
      }
    }
  });

  it('store file replaced while the agent is parked → receipt_failed', async () => {
    const s = await scene(fx);
    const store = await receiptStore(join(s.dir, 'receipts.db'));
    try {
      const other = await receiptStore(join(s.dir, 'other.db'));
      other.close();
      const result = await launch(s, store, await attest(s.victim), { barriers: { parked: () => renameSync(other.path, store.path) } });
      expect(result.outcome, result.error?.message).toEqual(refused('receipt_failed'));
      expect(result.error!.detail).toMatch(/replaced/);
      await new Promise((r) => setTimeout(r, 30));
      expect(readMarker(s.markers, 'victim')).toBeUndefined();
      expect(await store.committed()).toEqual([]);
    } finally {
      store.close();
    }
  });

  it('disk error injected at store.before_commit → receipt_failed (control: the unfaulted store launches)', async () => {
    const { vi } = await import('vitest');
    const s = await scene(fx);
    const previous = process.env.TURNKEEPER_TEST_FAULT;
    process.env.TURNKEEPER_TEST_FAULT = 'store.before_commit=ioerr';
    vi.resetModules();
    let faulted: typeof import('../../src/ledger/open');
    try {
      faulted = await import('../../src/ledger/open');
    } finally {
      if (previous === undefined) delete process.env.TURNKEEPER_TEST_FAULT;
      else process.env.TURNKEEPER_TEST_FAULT = previous;
    }
    const store = await receiptStore(join(s.dir, 'receipts.db'), { open: faulted.openSqliteAuthority });
    try {
      // The fault is armed in this module instance: any write fails with a disk error.
      await expect(store.store.appendReceipt({ kind: 'launch_refused', goal: '/g' }, Date.now())).rejects.toThrow(/disk I\/O error/);
      const result = await launch(s, store, await attest(s.victim));
      await expectRefused(s, store, result, 'receipt_failed', { refusalRecorded: false });
      expect(result.error!.detail).toMatch(/disk I\/O error/);
      expect(await store.receipts()).toEqual([]);
    } finally {
      store.close();
    }
    vi.resetModules();
    const c = await scene(fx);
    const control = await receiptStore(join(c.dir, 'receipts.db'));
    try {
      const attestation = await attest(c.victim);
      await expectRanAttested(c, control, attestation, await launch(c, control, attestation));
    } finally {
      control.close();
    }
  });
});

/** The process (thread group) whose thread traces `pid`: ptrace is per thread, the launch thread. */
const tracerOf = (pid: number): number => {
  const tracer = Number(/TracerPid:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? -1);
  return tracer <= 0 ? tracer : Number(/Tgid:\s+(\d+)/.exec(readFileSync(`/proc/${tracer}/status`, 'utf8'))?.[1] ?? -1);
};
const stateOf = (pid: number): string => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
};

describe('lifecycle', () => {
  it('a child killed (SIGKILL) while parked → typed refusal, no launch_committed receipt, no marker (control: not killed, it runs)', async () => {
    for (const killIt of [true, false]) {
      const s = await scene(fx);
      const store = await receiptStore(join(s.dir, 'receipts.db'));
      try {
        const attestation = await attest(s.victim);
        let parkedPid = 0;
        const result = await launch(s, store, attestation, {
          barriers: {
            parked: async () => {
              const children = readdirSync('/proc/self/task').flatMap((task) =>
                readFileSync(`/proc/self/task/${task}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number),
              );
              parkedPid =
                children.find(
                  (pid) => readMarker(s.markers, 'victim') === undefined && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(attestation.resolved),
                ) ?? 0;
              expect(parkedPid).toBeGreaterThan(0);
              expect(stateOf(parkedPid)).toBe('t'); // tracing stop, before its first instruction
              expect(tracerOf(parkedPid)).toBe(process.pid);
              if (killIt) {
                process.kill(parkedPid, 'SIGKILL');
                await waitFor(() => !alive(parkedPid));
              }
            },
          },
        });
        if (killIt) await expectRefused(s, store, result, 'launch_verification_failed');
        else await expectRanAttested(s, store, attestation, result);
      } finally {
        store.close();
      }
    }
  });

  it('an unexpected exception while parked kills the child at once, not at the backstop timeout (control: no exception, it runs)', async () => {
    for (const fail of [true, false]) {
      const s = await scene(fx);
      const store = await receiptStore(join(s.dir, 'receipts.db'));
      try {
        const attestation = await attest(s.victim);
        let child = 0;
        const started = Date.now();
        const outcome = await launch(s, store, attestation, {
          timeoutMs: 20_000,
          barriers: {
            parked: () => {
              child =
                readdirSync('/proc/self/task')
                  .flatMap((task) => readFileSync(`/proc/self/task/${task}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number))
                  .find((pid) => stateOf(pid) === 't') ?? 0;
              if (fail) throw new Error('caller bug');
            },
          },
        }).catch((error: unknown) => error);
        expect(child).toBeGreaterThan(0);
        if (fail) {
          expect((outcome as Error).message).toBe('caller bug');
          expect(await waitFor(() => !alive(child), 3000)).toBe(true);
          expect(Date.now() - started).toBeLessThan(5000);
          await new Promise((r) => setTimeout(r, 30));
          expect(readMarker(s.markers, 'victim')).toBeUndefined();
          expect(await store.committed()).toEqual([]);
        } else {
          await expectRanAttested(s, store, attestation, outcome as Result);
        }
      } finally {
        store.close();
      }
    }
  });

  it('the launching process is SIGKILLed while its child is parked → the child dies without running', async () => {
    const s = await scene(fx);
    const dir = join(fx.root, 'killed-parent');
    mkdirSync(dir, { recursive: true });
    const entry = join(dir, 'entry.ts');
    writeFileSync(
      entry,
      `import { readdirSync, readFileSync } from 'node:fs';
       import { attest } from ${JSON.stringify(join(REPO, 'src/launcher/attest'))};
       import { launchAttested } from ${JSON.stringify(join(REPO, 'src/launcher/launch'))};
       process.env.TURNKEEPER_TEST_BARRIERS = '1';
       const [path, markers, cwd] = process.argv.slice(2) as [string, string, string];
       void attest(path).then((attestation) => launchAttested({
         attestation, args: ['exit', '0'], cwd, env: { TK_MARKER_DIR: markers }, stdio: 'pipe', timeoutMs: 60_000,
         commit: async () => ({ seq: 1, hash: 'never' }),
         barriers: { parked: () => {
           const children = readdirSync('/proc/self/task').flatMap((t) => readFileSync('/proc/self/task/' + t + '/children', 'utf8').trim().split(/\\s+/).filter(Boolean));
           process.stdout.write(JSON.stringify({ parked: children.map(Number) }) + '\\n');
           return new Promise<void>(() => undefined);
         } },
       }));`,
    );
    const out = join(dir, 'child.cjs');
    // As scripts/build.mjs bundles: jsonc-parser (reached through the closure index's writeFileAtomic) only bundles from its ESM build.
    buildSync({ entryPoints: [entry], outfile: out, bundle: true, platform: 'node', format: 'cjs', mainFields: ['module', 'main'], logLevel: 'error' });
    // The bundle finds the addon prebuilds through ./native, like a packaged build.
    if (!existsSync(join(dir, 'native'))) symlinkSync(join(REPO, 'native'), join(dir, 'native'));
    for (const killParent of [true, false]) {
      const markers = join(s.dir, killParent ? 'm-kill' : 'm-control');
      mkdirSync(markers);
      const parent = spawn(process.execPath, [out, s.victim, markers, s.dir], { stdio: ['ignore', 'pipe', 'inherit'] });
      try {
        const pids = await new Promise<number[]>((resolveParked, reject) => {
          let buffer = '';
          parent.stdout.on('data', (data: Buffer) => {
            buffer += data.toString();
            const line = /\{"parked".*\}/.exec(buffer);
            if (line) resolveParked((JSON.parse(line[0]) as { parked: number[] }).parked);
          });
          parent.on('exit', (code) => reject(new Error(`launcher script exited early (${code})`)));
        });
        expect(pids).toHaveLength(1);
        const child = pids[0]!;
        expect(stateOf(child)).toBe('t');
        expect(tracerOf(child)).toBe(parent.pid);
        if (killParent) {
          process.kill(parent.pid!, 'SIGKILL');
          await new Promise((r) => parent.once('exit', r));
          expect(await waitFor(() => !alive(child), 5000)).toBe(true);
          await new Promise((r) => setTimeout(r, 50));
          expect(readMarker(markers, 'victim')).toBeUndefined();
        } else {
          // Control: the same child stays parked (alive, not running) while its launcher lives.
          await new Promise((r) => setTimeout(r, 300));
          expect(alive(child)).toBe(true);
          expect(stateOf(child)).toBe('t');
          expect(readMarker(markers, 'victim')).toBeUndefined();
          process.kill(parent.pid!, 'SIGTERM');
          await new Promise((r) => parent.once('exit', r));
          expect(await waitFor(() => !alive(child), 5000)).toBe(true);
        }
      } finally {
        if (parent.exitCode === null && parent.signalCode === null) parent.kill('SIGKILL');
      }
    }
  });

  it('decide: a second commit and a commit after cancel are refused by the native layer', async () => {
    const native = nativeLauncher();
    const spawnOne = async (s: Scene) => {
      const attestation = await attest(s.victim);
      const events: NativeEvent[] = [];
      let wake: () => void = () => undefined;
      const next = async (type: NativeEvent['type']) => {
        while (!events.some((event) => event.type === type)) await new Promise<void>((r) => (wake = r));
        return events.find((event) => event.type === type)!;
      };
      const handles = native.spawnParked(
        {
          fd: attestation.fd,
          argv: [attestation.resolved, 'exit', '0'],
          env: [`TK_MARKER_DIR=${s.markers}`],
          cwd: s.dir,
          stdio: 'inherit',
          cols: 80,
          rows: 24,
          timeoutMs: 10_000,
        },
        (event) => {
          events.push(event);
          wake();
        },
      );
      return { attestation, handles, next, events };
    };
    // Double commit: the first detach releases the child, the second is refused.
    const a = await scene(fx);
    const first = await spawnOne(a);
    await first.next('parked');
    expect(readMarker(a.markers, 'victim')).toBeUndefined();
    expect(native.decide(first.handles.id, 'detach')).toBe(true);
    expect(native.decide(first.handles.id, 'detach')).toBe(false);
    expect(native.decide(first.handles.id, 'kill', 'launch_verification_failed')).toBe(false);
    const exit = await first.next('exit');
    expect(exit).toMatchObject({ code: 0, signal: null });
    expect(readMarker(a.markers, 'victim')!.pid).toBe(exit.pid);
    expect(first.events.map((event) => event.type)).toEqual(['parked', 'running', 'exit']);
    native.closeFd(first.attestation.fd);
    // Commit after cancel: kill wins, the later detach is refused, nothing ran.
    const b = await scene(fx);
    const second = await spawnOne(b);
    await second.next('parked');
    expect(native.decide(second.handles.id, 'kill', 'launch_verification_failed')).toBe(true);
    expect(native.decide(second.handles.id, 'detach')).toBe(false);
    const killed = await second.next('refused');
    expect(killed).toMatchObject({ reason: 'launch_verification_failed' });
    await new Promise((r) => setTimeout(r, 50));
    expect(readMarker(b.markers, 'victim')).toBeUndefined();
    expect(alive(killed.pid)).toBe(false);
    expect(second.events.map((event) => event.type)).toEqual(['parked', 'refused']);
    native.closeFd(second.attestation.fd);
    // Ids that are finished or never existed act on nothing.
    expect(native.decide(first.handles.id, 'detach')).toBe(false);
    expect(native.decide(second.handles.id, 'kill')).toBe(false);
    expect(native.decide(987_654, 'detach')).toBe(false);
  });

  it('PID reuse: 200 sequential and 24 concurrent launches each commit and run their own child', async () => {
    const s = await scene(fx);
    const store = await receiptStore(join(s.dir, 'receipts.db'));
    try {
      const pids = new Set<number>();
      const one = async (i: number, barriers?: Barriers) => {
        const markers = join(s.dir, `run-${i}`);
        mkdirSync(markers);
        const attestation = await attest(s.victim);
        const run = await launchAttested({
          attestation,
          args: ['exit', String(i % 7)],
          cwd: s.dir,
          env: { TK_MARKER_DIR: markers },
          stdio: 'inherit',
          barriers,
          commit: store.commit,
        });
        const exit = await run.exited;
        expect(exit).toEqual({ code: i % 7, signal: null });
        const marker = readMarker(markers, 'victim')!;
        expect(marker.pid).toBe(run.pid);
        expect(marker.argv).toEqual([attestation.resolved, 'exit', String(i % 7)]);
        expect(run.facts.pid).toBe(run.pid);
        pids.add(run.pid);
        return { i, pid: run.pid, seq: run.receipt.seq };
      };
      const results: { i: number; pid: number; seq: number }[] = [];
      for (let i = 0; i < 200; i += 1) results.push(await one(i));
      // Concurrent launches whose parked phases overlap in random order.
      results.push(
        ...(await Promise.all(
          Array.from({ length: 24 }, (_, k) => one(200 + k, { parked: () => new Promise((r) => setTimeout(r, Math.floor(Math.random() * 40))) })),
        )),
      );
      const committed = await store.committed();
      expect(committed).toHaveLength(224);
      const bySeq = new Map(committed.map((receipt) => [receipt.seq, receipt]));
      for (const result of results) {
        const receipt = bySeq.get(result.seq)!;
        expect(receipt.detail.pid).toBe(result.pid);
        expect(JSON.parse(String(receipt.detail.argv))).toEqual([resolve(s.victim), 'exit', String(result.i % 7)]);
      }
      expect((await store.store.verifyChain()).ok).toBe(true);
      expect(pids.size).toBeGreaterThan(1);
    } finally {
      store.close();
    }
  });
});

describe('stdio and exit status', () => {
  it('pipe: stdin delivered, stdout and stderr captured, exit 0', async () => {
    const s = await scene(fx);
    const store = await receiptStore(join(s.dir, 'receipts.db'));
    try {
      const run = await launchAttested({
        attestation: await attest(s.victim),
        args: ['echo'],
        cwd: s.dir,
        env: { TK_MARKER_DIR: s.markers },
        stdio: 'pipe',
        commit: store.commit,
      });
      let out = '';
      let err = '';
      run.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      run.stderr!.on('data', (d: Buffer) => (err += d.toString()));
      const closed = Promise.all([new Promise((r) => run.stdout!.on('close', r)), new Promise((r) => run.stderr!.on('close', r))]);
      run.stdin!.end('hello through the pipe\n');
      expect(await run.exited).toEqual({ code: 0, signal: null });
      await closed;
      expect(out).toBe('out:hello through the pipe\n');
      expect(err).toBe('err:hello through the pipe\n');
      expect(readMarker(s.markers, 'victim')!.stdout).toMatch(/^pipe:/);
    } finally {
      store.close();
    }
  });

  it('inherit: the child writes to our own fd 1; exit code 3 and SIGTERM → signal 15 surface', async () => {
    const s = await scene(fx);
    const store = await receiptStore(join(s.dir, 'receipts.db'));
    try {
      const run = await launchAttested({
        attestation: await attest(s.victim),
        args: ['exit', '3'],
        cwd: s.dir,
        env: { TK_MARKER_DIR: s.markers },
        stdio: 'inherit',
        commit: store.commit,
      });
      expect(run.stdout).toBeUndefined();
      expect(await run.exited).toEqual({ code: 3, signal: null });
      const { readlinkSync } = await import('node:fs');
      expect(readMarker(s.markers, 'victim')!.stdout).toBe(readlinkSync('/proc/self/fd/1'));
      const s2 = await scene(fx);
      const sleeper = await launchAttested({
        attestation: await attest(s2.victim),
        args: ['sleep'],
        cwd: s2.dir,
        env: { TK_MARKER_DIR: s2.markers },
        stdio: 'inherit',
        commit: store.commit,
      });
      expect(await waitFor(() => readMarker(s2.markers, 'victim') !== undefined)).toBe(true);
      sleeper.kill('SIGTERM');
      expect(await sleeper.exited).toEqual({ code: null, signal: 15 });
      const s3 = await scene(fx);
      const killed = await launchAttested({
        attestation: await attest(s3.victim),
        args: ['sleep'],
        cwd: s3.dir,
        env: { TK_MARKER_DIR: s3.markers },
        stdio: 'pipe',
        commit: store.commit,
      });
      expect(await waitFor(() => readMarker(s3.markers, 'victim') !== undefined)).toBe(true);
      killed.kill('SIGKILL');
      expect(await killed.exited).toEqual({ code: null, signal: 9 });
    } finally {
      store.close();
    }
  });

  it('pty: the child sees a terminal with the requested size, and resize changes it', async () => {
    const s = await scene(fx);
    const store = await receiptStore(join(s.dir, 'receipts.db'));
    try {
      const run = await launchAttested({
        attestation: await attest(s.victim),
        args: ['tty'],
        cwd: s.dir,
        env: { TK_MARKER_DIR: s.markers },
        stdio: 'pty',
        cols: 101,
        rows: 33,
        commit: store.commit,
      });
      expect(run.pty).toBeDefined();
      let output = '';
      run.pty!.output.on('data', (d: Buffer) => (output += d.toString()));
      run.pty!.output.on('error', () => undefined); // EIO on the master once the child is gone
      const sizes = () => [...output.matchAll(/\[tty=(\d) cols=(\d+) rows=(\d+)\]/g)].map((m) => m.slice(1).join(' '));
      run.pty!.write('a\n');
      expect(await waitFor(() => sizes().length >= 1)).toBe(true);
      expect(sizes()[0]).toBe('1 101 33');
      run.pty!.resize(132, 50);
      run.pty!.write('b\n');
      expect(await waitFor(() => sizes().length >= 2)).toBe(true);
      expect(sizes()[1]).toBe('1 132 50');
      run.pty!.write('q\n');
      expect(await run.exited).toEqual({ code: 0, signal: null });
      expect(readMarker(s.markers, 'victim')!.isatty).toBe(1);
      run.pty!.output.destroy();
    } finally {
      store.close();
    }
  });
});

describe('the real Codex through the launcher', () => {
  it('codex exec, started with execveat on its own descriptor, runs a tool call; the receipt names the attested binary', async () => {
    const s = await scene(fx);
    const store = await receiptStore(join(s.dir, 'receipts.db'));
    const toolMarker = join(s.dir, 'tool-ran');
    const mock = await startMockModelServer({ script: shellThenText(`touch ${toolMarker}`, 'all done') });
    const home = makeCodexHome({ prefix: 'tk-launch-codex-' });
    try {
      writeCodexConfig(home.codexHome, mock.url);
      const attestation = await attest(join(REPO, 'node_modules/.bin/codex'));
      expect(attestation.entrypoint).toBe('elf-static');
      const env: Record<string, string> = {};
      for (const [name, value] of Object.entries(home.env)) if (value !== undefined) env[name] = value;
      const args = ['exec', '--skip-git-repo-check', 'touch the marker please'];
      const run = await launchAttested({ attestation, args, cwd: s.dir, env, stdio: 'pipe', commit: store.commit, recordRefusal: store.recordRefusal });
      run.stdin!.end();
      let out = '';
      let err = '';
      run.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      run.stderr!.on('data', (d: Buffer) => (err += d.toString()));
      const exit = await Promise.race([run.exited, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 45_000))]);
      if (exit === 'timeout') run.kill('SIGKILL');
      expect(exit, `stdout:\n${out}\nstderr:\n${err}`).toEqual({ code: 0, signal: null });
      expect(existsSync(toolMarker), `the tool call did not run; stderr:\n${err}`).toBe(true);
      expect(mock.requests.length).toBeGreaterThanOrEqual(2);
      const [receipt, ...more] = await store.committed();
      expect(more).toEqual([]);
      expect(receipt!.detail.digest).toBe(attestation.digest);
      expect(receipt!.detail.pid).toBe(run.pid);
      expect(receipt!.detail.argv).toBe(JSON.stringify([attestation.resolved, ...args]));
      expect(receipt!.detail.cwd).toBe(s.dir);
      // The shim's variables reached the agent (and are covered by the receipt's env digest).
      expect(receipt!.detail.envDigest).toBe(
        digestDocument(Object.fromEntries(Object.entries({ ...env, ...attestation.environment }).sort(([a], [b]) => (a < b ? -1 : 1)))),
      );
    } finally {
      await mock.close();
      cleanupCodexHome(home);
      store.close();
    }
  });
});
