// The launcher's platform seam (docs/launcher.md §3, §6): one backend chosen by platform, and the
// addon's state per JavaScript environment (Node-API instance data). A worker thread that loads the
// addon and parks a child, then goes away, kills its own undecided launch and nobody else's.
import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import { launchBackend } from '../../src/launcher/backends';
import { nativeLauncher, type NativeEvent } from '../../src/launcher/native';
import { waitFor } from '../support/waitFor';

const REPO = resolve(__dirname, '../..');

/** The state letter of /proc/<pid>/stat: `t` is a ptrace stop (parked), undefined when reaped. */
function stateOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return undefined;
  }
}

describe('launch backends', () => {
  it('the backend is chosen by platform: linux here, with /proc liveness facts', () => {
    const backend = launchBackend();
    expect(backend.name).toBe(process.platform === 'linux' ? 'linux' : 'unsupported');
    if (backend.name !== 'linux') return;
    expect(backend.processStart(process.pid)).toMatch(/^\d+$/);
    expect(backend.currentBoot()).toMatch(/^[0-9a-f-]{36}$/);
    expect(backend.machineId()).toMatch(/^[0-9a-f]{32}$/);
    expect(backend.processStart(2 ** 22 + 12345)).toBeUndefined();
  });

  it("lists this machine's processes with their command line and, when it is ours, their environment (control: a process that ended is not listed)", async () => {
    const backend = launchBackend();
    if (backend.name !== 'linux') return expect(backend.processes()).toBeUndefined();
    const processes = () => backend.processes() ?? [];
    const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)', '--', 'app-server', '--managed-daemon'], {
      env: { PATH: '/usr/bin:/bin', PROBE_VARIABLE: 'a=b' },
      stdio: 'ignore',
    });
    try {
      await waitFor(() => processes().some((item) => item.pid === child.pid), 10_000, 100);
      const listed = processes().find((item) => item.pid === child.pid)!;
      expect(listed.argv).toEqual([process.execPath, '-e', 'setInterval(() => {}, 1000)', '--', 'app-server', '--managed-daemon']);
      // The first = splits name from value.
      expect(listed.environ()).toMatchObject({ PROBE_VARIABLE: 'a=b' });
      expect(processes().find((item) => item.pid === process.pid)?.argv[0]).toBe(process.execPath);
    } finally {
      child.kill('SIGKILL');
    }
    await new Promise((resolvePromise) => child.once('exit', resolvePromise));
    expect(await waitFor(() => !processes().some((item) => item.pid === child.pid), 10_000, 100)).toBe(true);
  });

  it("a worker's teardown kills its own parked launch, not the main thread's (addon state is per environment)", async () => {
    const native = nativeLauncher();
    // Main environment: a child parked at its exec boundary, undecided.
    const opened = native.openExecutable('/bin/sleep');
    if (!opened.ok) throw new Error(opened.detail);
    const events: NativeEvent[] = [];
    const main = native.spawnParked(
      { fd: opened.fd, argv: ['/bin/sleep', '30'], env: [], cwd: '/', stdio: 'inherit', cols: 80, rows: 24, timeoutMs: 30_000 },
      (event) => events.push(event),
    );
    expect(await waitFor(() => events.some((event) => event.type === 'parked'), 10_000), JSON.stringify(events)).toBe(true);
    // The descriptor is exec'd by the launch thread: it may be closed only once the child is parked.
    native.closeFd(opened.fd);
    const mainPid = events.find((event) => event.type === 'parked')!.pid;

    // A worker loads the same addon (its own environment) and parks a child of its own.
    const worker = new Worker(
      `const { parentPort, workerData } = require('node:worker_threads');
       const native = require(workerData.gypBuild)(workerData.root);
       const opened = native.openExecutable('/bin/sleep');
       native.spawnParked({ fd: opened.fd, argv: ['/bin/sleep', '30'], env: [], cwd: '/', stdio: 'inherit', cols: 80, rows: 24, timeoutMs: 30000 }, (event) => {
         if (event.type === 'parked') parentPort.postMessage(event.pid);
         else parentPort.postMessage(JSON.stringify(event));
       });`,
      { eval: true, workerData: { gypBuild: join(REPO, 'node_modules/node-gyp-build/index.js'), root: join(REPO, 'native') } },
    );
    const workerPid = await new Promise<number>((done, fail) => {
      worker.once('message', (message: number | string) => (typeof message === 'number' ? done(message) : fail(new Error(message))));
      worker.once('error', fail);
    });
    expect(stateOf(workerPid)).toBe('t');
    await worker.terminate();

    // The worker's child is killed and reaped; the main thread's stays parked and decidable.
    expect(await waitFor(() => stateOf(workerPid) === undefined, 10_000)).toBe(true);
    expect(stateOf(mainPid)).toBe('t');
    expect(native.decide(main.id, 'kill', 'launch_verification_failed')).toBe(true);
    expect(await waitFor(() => stateOf(mainPid) === undefined, 10_000)).toBe(true);
    expect(await waitFor(() => events.some((event) => event.type === 'refused'), 10_000)).toBe(true);
  });
});
