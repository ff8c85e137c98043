// The warm hook path's native client (native/client/hook_client.c, notes/warm-protocol.md) on its own,
// against test/support/fakeWarm.mjs as both the cold hook and the hook server: it is served warm only
// by a trusted server of our own uid, and every other case ends in exactly the cold command with
// exactly the stdin the cold hook would have read. Each refusal runs beside its control.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { waitFor } from '../support/waitFor';
import { reachableByOthers, type Reachable } from '../support/otherUser';

const CLIENT = resolve(__dirname, '../../native/prebuilds', `${process.platform}-${process.arch}`, 'turnkeeper-hook');
const RUNTIME = realpathSync(resolve(__dirname, '../../node_modules/.bin/node'));
const FAKE = resolve(__dirname, '../support/fakeWarm.mjs');
const NOBODY = 65534;
const KEEP = 1048577;
/** What the fake server writes to stderr (in two records), byte for byte. */
const WARM_STDERR = Buffer.concat([Buffer.from([0, 0xff, 0x1b, 0x0a]), Buffer.from('warm stderr\n')]);
const WAIT_LINE = 'turnkeeper: warm hook path not used: ';

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
const b64 = (text: string) => Buffer.from(text).toString('base64');

interface Report {
  path: 'cold' | 'warm';
  args: string[];
  cwd?: string;
  env: string[] | Record<string, string>;
  tags?: string;
  stdinLength: number;
  stdinSha256: string;
}

interface Run {
  status: number | null;
  stdout: Buffer;
  stderr: string;
  report: Report;
}

let root: string;
let home: string;
let run: string;
let tag: string;
let env: Record<string, string>;

beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'tk-warm-')));
  home = join(root, 'home');
  run = join(home, 'run');
  mkdirSync(home, { mode: 0o700 });
  tag = randomUUID();
  // Exactly this environment (nothing of process.env): what the server must see, entry for entry.
  env = { TURNKEEPER_HOME: home, FAKE_TAG: tag };
});

afterEach(() => {
  for (const pid of tagged()) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  rmSync(root, { recursive: true, force: true });
  for (const shared of sharedFiles.splice(0)) shared.cleanup();
});

/**
 * This test's processes: every one carries FAKE_TAG=<tag> in its environment, the detached servers
 * included. A server the client starts is forked before the client exits, so right after a client
 * ends this list says whether it started one (not yet exec'd or not yet listening counts too).
 */
function tagged(): number[] {
  const needle = Buffer.from(`FAKE_TAG=${tag}\0`);
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/environ`).includes(needle)) pids.push(Number(name));
    } catch {
      // exited meanwhile
    }
  }
  return pids;
}

function hook(args: string[], options: { input?: Buffer | string; env?: Record<string, string>; cwd?: string } = {}): Run {
  const result = spawnSync(CLIENT, [RUNTIME, FAKE, 'hook', ...args], {
    env: { ...env, ...options.env },
    input: options.input ?? '',
    cwd: options.cwd ?? root,
    timeout: 15_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  expect(result.error).toBeUndefined();
  const stdout = result.stdout;
  const firstLine = stdout.toString('utf8').split('\n')[0] ?? '';
  let report: Report;
  try {
    report = JSON.parse(firstLine) as Report;
  } catch {
    throw new Error(`no report on stdout: ${JSON.stringify(stdout.toString('utf8'))}; stderr: ${result.stderr.toString('utf8')}`);
  }
  return { status: result.status, stdout, stderr: result.stderr.toString('utf8'), report };
}

/** Files shared with another user for a server run as nobody (removed after each test). */
const sharedFiles: Reachable[] = [];

/** A fake server started by the test (not by the client), listening on `socket` once this resolves. */
async function startServer(options: { socket?: string; asNobody?: boolean } = {}): Promise<void> {
  // runuser is found on the test's own PATH; what the server itself sees does not matter here.
  const serverEnv = { ...env, ...(options.socket ? { FAKE_SOCKET: options.socket } : {}), ...(options.asNobody ? { PATH: process.env.PATH ?? '' } : {}) };
  const command = options.asNobody ? 'runuser' : RUNTIME;
  // As nobody: the runtime and the fake where nobody reaches them, wherever this clone is (a 0700 home
  // included), kept until the test ends (the server runs detached).
  const shared = options.asNobody ? reachableByOthers([RUNTIME, FAKE]) : undefined;
  if (shared) sharedFiles.push(shared);
  const args = shared ? ['-u', 'nobody', '--', shared.paths[0]!, shared.paths[1]!, 'hook-server', 'serve'] : [FAKE, 'hook-server', 'serve'];
  spawn(command, args, { env: serverEnv, stdio: 'ignore', detached: true }).unref();
  const ready = `${options.socket ?? join(run, 'hook.sock')}.ready`;
  expect(await waitFor(() => existsSync(ready), 10_000)).toBe(true);
}

describe.skipIf(process.platform !== 'linux')('the warm hook client', () => {
  it('with no server it runs cold at once, stdin untouched, and starts a server that serves the next hook warm', async () => {
    const input = randomBytes(3 * 1024 * 1024);
    const first = hook(['--agent', 'codex'], { input });
    expect(first.report).toMatchObject({ path: 'cold', stdinLength: input.length, stdinSha256: sha256(input) });
    expect(first.report.args).toEqual([b64('--agent'), b64('codex')]);
    expect(first.stderr).toBe('');
    expect(first.status).toBe(0);
    // Started in the background: it comes up after the cold hook has already answered.
    expect(await waitFor(() => existsSync(join(run, 'hook.sock.ready')), 10_000)).toBe(true);
    const second = hook(['--agent', 'codex'], { input: 'x' });
    expect(second.report.path).toBe('warm');
    expect(second.status).toBe(3);
  });

  it('TURNKEEPER_WARM=off runs cold although a server is listening; control: without it the same hook is warm', async () => {
    await startServer();
    const off = hook(['--agent', 'claude'], { input: 'payload', env: { TURNKEEPER_WARM: 'off' } });
    expect(off.report).toMatchObject({ path: 'cold', stdinLength: 7 });
    expect(off.stderr).toBe('');
    const on = hook(['--agent', 'claude'], { input: 'payload' });
    expect(on.report).toMatchObject({ path: 'warm', stdinLength: 7 });
  });

  it('wait mode starts the server and is served warm on the first hook (default mode, above, is cold then)', () => {
    expect(existsSync(run)).toBe(false);
    const first = hook(['--agent', 'gemini'], { input: 'first', env: { TURNKEEPER_WARM: 'wait' } });
    expect(first.report).toMatchObject({ path: 'warm', stdinLength: 5, stdinSha256: sha256(Buffer.from('first')) });
    expect(first.stderr).toBe(WARM_STDERR.toString('utf8'));
    expect(tagged()).toHaveLength(1);
  });

  it('a warm answer is printed exactly as sent, and argv, cwd, environment and stdin reach the server byte for byte', async () => {
    await startServer();
    const args = ['--agent', 'claude', '', 'two words', 'line\nbreak', 'ünïcode ✓', '-', '--'];
    const cwd = join(root, 'a dir ü');
    mkdirSync(cwd);
    const extra = { FAKE_ODD: 'va=lue\nnext line ü', FAKE_EMPTY: '', FAKE_WARM_EXIT: '7' };
    const input = randomBytes(4096);
    const result = spawnSync(CLIENT, [RUNTIME, FAKE, 'hook', ...args], { env: { ...env, ...extra }, input, cwd });
    expect(result.status).toBe(7);
    expect(result.stderr.equals(WARM_STDERR)).toBe(true);
    const text = result.stdout.toString('utf8');
    const report = JSON.parse(text) as Report;
    // Nothing before, after or between the O records: stdout is the report the server sent, whole.
    expect(text).toBe(`${JSON.stringify(report)}\n`);
    expect(report.path).toBe('warm');
    expect(report.args).toEqual(args.map(b64));
    expect(report.cwd).toBe(cwd);
    const sent = Object.entries({ ...env, ...extra }).map(([name, value]) => b64(`${name}=${value}`));
    expect([...(report.env as string[])].sort()).toEqual(sent.sort());
    expect(report.tags).toBe(`${'A'.repeat(args.length)}C${'V'.repeat(sent.length)}TI`);
    expect(report).toMatchObject({ stdinLength: input.length, stdinSha256: sha256(input) });
    // Exit code 0 passes through as well.
    expect(hook([], { env: { FAKE_WARM_EXIT: '0' } }).status).toBe(0);
  });

  it('stdin past 1 MiB: the server gets the first 1 MiB + 1 bytes, as the cold hook would read them', async () => {
    await startServer();
    for (const size of [KEEP, 3 * 1024 * 1024]) {
      const input = randomBytes(size);
      const warm = hook(['--agent', 'codex'], { input });
      expect(warm.report).toMatchObject({ path: 'warm', stdinLength: KEEP, stdinSha256: sha256(input.subarray(0, KEEP)) });
    }
    // Control: the cold hook on its own reads all of it; the cut is the client's.
    const all = randomBytes(3 * 1024 * 1024);
    expect(hook([], { input: all, env: { TURNKEEPER_WARM: 'off' } }).report.stdinLength).toBe(all.length);
  });

  it('a decline runs the cold hook with the very stdin bytes the server got; control: an answer is warm', async () => {
    await startServer();
    for (const input of [Buffer.from('{"hook_event_name":"Stop"}'), randomBytes(3 * 1024 * 1024)]) {
      const kept = input.subarray(0, KEEP);
      const declined = hook(['--agent', 'qwen'], { input, env: { FAKE_WARM: 'decline', TURNKEEPER_WARM: 'wait' } });
      expect(declined.report).toMatchObject({ path: 'cold', stdinLength: kept.length, stdinSha256: sha256(kept) });
      expect(declined.report.args).toEqual([b64('--agent'), b64('qwen')]);
      expect(declined.stderr).toBe(`${WAIT_LINE}the hook server declined: the fake server declines this one; ran the cold hook\n`);
      const answered = hook(['--agent', 'qwen'], { input });
      expect(answered.report).toMatchObject({ path: 'warm', stdinLength: kept.length, stdinSha256: sha256(kept) });
    }
    // Default mode declines silently.
    expect(hook([], { env: { FAKE_WARM: 'decline' } }).stderr).toBe('');
  });

  it('a server that dies mid-request leaves nothing of its answer printed and the cold hook runs; control: with an X the same record is printed', async () => {
    await startServer();
    const input = randomBytes(2 * 1024 * 1024);
    const kept = input.subarray(0, KEEP);
    const died = hook(['--agent', 'codex'], { input, env: { FAKE_WARM: 'die', TURNKEEPER_WARM: 'wait' } });
    expect(died.stdout.toString('utf8')).not.toContain('PARTIAL');
    expect(died.report).toMatchObject({ path: 'cold', stdinLength: KEEP, stdinSha256: sha256(kept) });
    expect(died.stderr).toBe(`${WAIT_LINE}the hook server closed the connection before answering; ran the cold hook\n`);
    const whole = spawnSync(CLIENT, [RUNTIME, FAKE, 'hook'], { env: { ...env, FAKE_WARM: 'whole' }, input });
    expect(whole.stdout.toString('utf8')).toBe('PARTIAL-FROM-A-DEAD-SERVER\n');
    expect(whole.status).toBe(0);
  });

  it('a server that takes nothing on (stopped, wedged) costs 1.5 s and the cold hook runs; control: one that took the request on is waited for', async () => {
    await startServer();
    const input = Buffer.from('{"hook_event_name":"UserPromptSubmit"}');
    const started = performance.now();
    const stopped = hook(['--agent', 'codex'], { input, env: { FAKE_WARM: 'hang', TURNKEEPER_WARM: 'wait' } });
    const took = performance.now() - started;
    expect(stopped.report).toMatchObject({ path: 'cold', stdinLength: input.length, stdinSha256: sha256(input) });
    expect(stopped.stderr).toBe(`${WAIT_LINE}the hook server did not take the request on within 1.5 s (stopped or wedged?); ran the cold hook\n`);
    expect(took).toBeGreaterThanOrEqual(1500);
    // Control: a request the server took on (record K) is not run cold at 1.5 s: the server may be
    // committing it. Still waiting well after that, and never printed anything.
    const child = spawn(CLIENT, [RUNTIME, FAKE, 'hook'], { env: { ...env, FAKE_WARM: 'hang-taken', TURNKEEPER_WARM: 'wait' } });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    child.stdin.end(input);
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expect(child.exitCode).toBeNull();
    expect(out).toBe('');
    child.kill('SIGKILL');
  });

  it('a run dir other users can read, or a home the group can write, is not trusted; control: 0700 is', async () => {
    await startServer();
    const wait = { TURNKEEPER_WARM: 'wait' };
    chmodSync(run, 0o755);
    const openRun = hook([], { env: wait });
    expect(openRun.report.path).toBe('cold');
    expect(openRun.stderr).toContain('the run directory is not a directory of ours with mode 0700');
    chmodSync(run, 0o700);
    expect(hook([], { env: wait }).report.path).toBe('warm');

    chmodSync(home, 0o770);
    const openHome = hook([], { env: wait });
    expect(openHome.report.path).toBe('cold');
    expect(openHome.stderr).toContain('the home is not a directory of ours that only we can write');
    chmodSync(home, 0o700);
    expect(hook([], { env: wait }).report.path).toBe('warm');
    // No second server was started for the refused hooks.
    expect(tagged()).toHaveLength(1);
  });

  // Needs root: a server run as `nobody` and a socket moved out of its directory.
  it.skipIf(process.getuid?.() !== 0)("a socket held by another uid is refused with a line naming the uid; control: our own uid's is used", async () => {
    mkdirSync(run, { mode: 0o700 });
    const ours = join(run, 'hook.sock');
    // The stranger listens in a directory of its own; the socket is then moved into our 0700 run dir.
    const theirs = mkdtempSync(join(tmpdir(), 'tk-warm-nobody-'));
    try {
      chownSync(theirs, NOBODY, NOBODY);
      await startServer({ socket: join(theirs, 'hook.sock'), asNobody: true });
      renameSync(join(theirs, 'hook.sock'), ours);
      const refusal = `turnkeeper: the hook server socket ${ours} is held by uid ${NOBODY}, not us; not used\n`;
      const waited = hook(['--agent', 'codex'], { input: 'secret', env: { TURNKEEPER_WARM: 'wait' } });
      expect(waited.report).toMatchObject({ path: 'cold', stdinLength: 6 });
      expect(waited.stderr).toBe(`${refusal}${WAIT_LINE}the hook server socket is held by another user; ran the cold hook\n`);
      // The refusal is printed in every mode.
      const plain = hook(['--agent', 'codex'], { input: 'secret' });
      expect(plain.report.path).toBe('cold');
      expect(plain.stderr).toBe(refusal);
    } finally {
      rmSync(theirs, { recursive: true, force: true });
    }

    // Control: the same move with a server of our own uid.
    const mine = mkdtempSync(join(tmpdir(), 'tk-warm-root-'));
    try {
      await startServer({ socket: join(mine, 'hook.sock') });
      renameSync(join(mine, 'hook.sock'), ours);
      const served = hook(['--agent', 'codex'], { input: 'secret', env: { TURNKEEPER_WARM: 'wait' } });
      expect(served.report).toMatchObject({ path: 'warm', stdinLength: 6 });
    } finally {
      rmSync(mine, { recursive: true, force: true });
    }
  });

  it('a fresh run/failed starts no server; control: a stale one does', () => {
    mkdirSync(run, { mode: 0o700 });
    const failed = join(run, 'failed');
    writeFileSync(failed, '');
    const plain = hook([], { input: 'a' });
    expect(plain.report.path).toBe('cold');
    expect(tagged()).toEqual([]);
    const waited = hook([], { input: 'a', env: { TURNKEEPER_WARM: 'wait' } });
    expect(waited.report.path).toBe('cold');
    expect(waited.stderr).toBe(`${WAIT_LINE}a hook server failed to start less than 60 s ago; ran the cold hook\n`);
    expect(tagged()).toEqual([]);
    expect(existsSync(join(run, 'hook.sock'))).toBe(false);

    const minutesAgo = new Date(Date.now() - 5 * 60_000);
    utimesSync(failed, minutesAgo, minutesAgo);
    const started = hook([], { input: 'a', env: { TURNKEEPER_WARM: 'wait' } });
    expect(started.report.path).toBe('warm');
    expect(tagged()).toHaveLength(1);
  });

  it('anything but `hook` is passed through to the cold command untouched, even with a server listening', async () => {
    await startServer();
    const result = spawnSync(CLIENT, [RUNTIME, FAKE, 'doctor', '--json'], { env, encoding: 'utf8' });
    expect(result.stderr).toBe('fakeWarm: not a command it fakes: doctor --json\n');
    expect(result.status).toBe(2);
    // Control: `hook` with the same server is warm.
    expect(hook([]).report.path).toBe('warm');
  });
});
