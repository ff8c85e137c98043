// The warm hook server (spec §2 "The warm hook path", src/cli/hookServer.ts) with the real native
// client: what it answers, who it refuses, and what happens when it dies, is upgraded or sits idle. The
// decision table itself runs on this path in the `warm` test project (vitest.config.mts).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CLI, contextOf, holdWriteLock, installedHookCommand, makeWorld, payload, WARM_CLIENT, type World } from '../support/world';
import { waitFor } from '../support/waitFor';
import { usePostgres } from '../support/postgres';
import { reachableByOthers } from '../support/otherUser';
import type { ReceiptDocument } from '../../src/core/receipts';

let world: World;
let server: { child: ChildProcess; log: () => string; exited: Promise<number | null> } | undefined;

beforeEach(() => {
  world = makeWorld('hookserver');
  mkdirSync(world.home, { recursive: true, mode: 0o700 });
  expect(world.cli(['todo', 'add', 'Fix login', '--id', 'fix-login']).code).toBe(0);
});

afterEach(async () => {
  if (server && server.child.exitCode === null && server.child.signalCode === null) {
    server.child.kill('SIGKILL');
    await server.exited;
  }
  server = undefined;
  world.cleanup();
});

const socket = () => join(world.home, 'run', 'hook.sock');

/** `hook-server serve` in the foreground of a child, its stderr kept, TURNKEEPER_DEBUG on (a line per request). */
async function startServer(env: Record<string, string> = {}): Promise<NonNullable<typeof server>> {
  const child = spawn(process.execPath, [CLI, 'hook-server', 'serve'], {
    env: { ...world.env, TURNKEEPER_DEBUG: '1', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (log += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  server = { child, log: () => log, exited };
  expect(await waitFor(() => log.includes('hook server: serving on'), 20_000), `the server to listen (log: ${log})`).toBe(true);
  return server;
}

/** A hook as an agent runs it: the command `hooks install` writes (the shim, then the native client; default mode unless `env` says otherwise). */
function hook(input: string, env: Record<string, string> = {}) {
  const result = spawnSync(installedHookCommand(), ['hook'], { input, env: { ...world.env, ...env }, cwd: world.repo, encoding: 'utf8' });
  return { code: result.status, signal: result.signal, stdout: result.stdout, stderr: result.stderr };
}

const served = () => (server!.log().match(/served hook/g) ?? []).length;
/** Waits for the server's count of answered hooks to reach `n` (its log arrives on this process's event loop). */
async function expectServed(n: number): Promise<void> {
  await waitFor(() => served() >= n, 5000);
  expect(served()).toBe(n);
}

async function kindsAndVerify(): Promise<string[]> {
  const store = await world.store();
  try {
    expect(await store.verifyChain()).toMatchObject({ ok: true });
    return (await store.receipts({ limit: 1000 })).map((row) => (JSON.parse(row.doc) as ReceiptDocument).kind);
  } finally {
    store.close();
  }
}

describe('the warm hook server', () => {
  it('answers a claim and its replays itself, byte for byte what the cold hook prints (control: TURNKEEPER_WARM=off runs cold)', async () => {
    await startServer();
    const input = payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login');
    const claim = hook(input);
    expect(claim).toMatchObject({ code: 0, stderr: '' });
    expect(contextOf(claim.stdout)).toMatch(/^Turnkeeper: Todo fix-login · capture cap_[0-9a-f]{24} · epoch 1$/m);
    const replay = hook(input);
    expect(replay.stdout).toBe(claim.stdout);
    await expectServed(2);

    const cold = hook(input, { TURNKEEPER_WARM: 'off' });
    expect(cold.stdout).toBe(claim.stdout);
    // The cold hook never asked the server: the next warm one is its third request, not its fourth.
    expect(hook(input).stdout).toBe(claim.stdout);
    await expectServed(3);
    expect((await kindsAndVerify()).filter((kind) => kind === 'lease_acquired')).toHaveLength(1);
  });

  it('a server killed mid-claim: the client runs the cold hook with the same stdin, which claims once', async () => {
    const running = await startServer();
    const input = payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login');
    // The server's claim waits for the store's lock, which another process holds: it is in the
    // middle of the request when it is killed.
    const lock = await holdWriteLock(world.db);
    const pending = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(installedHookCommand(), ['hook'], { env: { ...world.env, TURNKEEPER_WARM: 'wait' }, cwd: world.repo });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      child.on('close', (code) => resolve({ code, stdout, stderr }));
      child.stdin.end(input);
    });
    // The server logs each request as it begins it (TURNKEEPER_DEBUG): then it is mid-claim.
    expect(await waitFor(() => running.log().includes('hook server: serving hook'), 10_000), 'the request to reach the server').toBe(true);
    running.child.kill('SIGKILL');
    expect(await running.exited).toBe(null);
    await lock.release();
    const result = await pending;
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('the hook server closed the connection before answering; ran the cold hook');
    expect(contextOf(result.stdout)).toMatch(/^Turnkeeper: Todo fix-login · capture cap_[0-9a-f]{24} · epoch 1$/m);
    const kinds = await kindsAndVerify();
    expect(kinds.filter((kind) => kind === 'lease_acquired')).toHaveLength(1);
  });

  it("drops a peer of another uid before reading a byte (control: our own uid's identical request is answered)", async () => {
    if (process.geteuid?.() !== 0) return; // needs root to run a peer as another user
    const running = await startServer();
    // Open the path to the socket for this test only: the 0700 run directory alone keeps others out.
    chmodSync(world.root, 0o711);
    chmodSync(world.home, 0o711);
    chmodSync(join(world.home, 'run'), 0o711);
    chmodSync(socket(), 0o777);
    const probe = join(world.root, 'probe.cjs');
    writeFileSync(
      probe,
      `const s = require('node:net').createConnection(process.argv[2]); const got = [];
       s.on('data', (d) => got.push(d)); s.on('close', () => process.stdout.write(String(Buffer.concat(got).length)));
       s.on('error', () => process.stdout.write('error'));
       const head = Buffer.alloc(8); head.write('TKW1', 0, 'latin1'); const body = Buffer.from([0x49, 0, 0, 0, 0]); head.writeUInt32LE(body.length, 4);
       s.end(Buffer.concat([head, body]));`,
    );
    chmodSync(probe, 0o644);
    const node = realpathSync(process.execPath);
    // The runtime where nobody reaches it, wherever this clone is (a 0700 home included).
    const shared = reachableByOthers([node]);
    const asNobody = spawnSync('runuser', ['-u', 'nobody', '--', shared.paths[0]!, probe, socket()], { encoding: 'utf8' });
    shared.cleanup();
    expect(asNobody.stdout).toMatch(/^(error)?0$/); // reset or closed, with not a byte of answer
    expect(await waitFor(() => /refused a connection from uid 65534/.test(running.log()))).toBe(true);
    const asUs = spawnSync(node, [probe, socket()], { encoding: 'utf8' });
    expect(Number(asUs.stdout)).toBeGreaterThan(0); // an answer (a hook with no payload: exit 0, a stderr line)
  });

  it('declines a request whose process-bound variables differ, and the cold hook answers it (control: equal ones are served)', async () => {
    await startServer({ PGCONNECT_TIMEOUT: '7' });
    const input = payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login');
    const declined = hook(input, { TURNKEEPER_WARM: 'wait', PGCONNECT_TIMEOUT: '9' });
    expect(declined.stderr).toContain('the hook server declined: PGCONNECT_TIMEOUT differs');
    expect(contextOf(declined.stdout)).toMatch(/· epoch 1$/m);
    const same = hook(input, { TURNKEEPER_WARM: 'wait', PGCONNECT_TIMEOUT: '7' });
    expect(same).toMatchObject({ stdout: declined.stdout, stderr: '' });
    await expectServed(1); // the second only
  });

  it('a hook whose directory is gone (its worktree removed under the agent) exits 0 with one line, cold and warm alike', async () => {
    await startServer();
    const gone = join(world.root, 'removed-worktree');
    const input = JSON.stringify({ ...JSON.parse(payload.codexPrompt(world, 'sess-gone', 'turn-1', '#todo:fix-login')), cwd: gone });
    // The shell enters the directory, removes it and becomes the hook: its process starts where nothing is.
    // The native client, as the shim execs it: through the shim itself, /bin/sh (dash) prints
    // "sh: 0: getcwd() failed" at its start-up, before any line of the shim runs (docs/decisions.md,
    // "A hook in a removed directory"), as the shell an agent runs its hook command with does.
    const inGone = (warm: string) =>
      spawnSync('sh', ['-c', 'mkdir -p "$0" && cd "$0" && rmdir "$0" && exec "$@"', gone, WARM_CLIENT, process.execPath, CLI, 'hook'], {
        input,
        env: { ...world.env, TURNKEEPER_WARM: warm },
        encoding: 'utf8',
      });
    for (const warm of ['off', 'wait']) {
      const run = inGone(warm);
      expect(run.status, `${warm}: ${run.stderr}`).toBe(0);
      expect(run.stdout).toBe('');
      expect(run.stderr.trim(), warm).toBe(`turnkeeper: invalid hook input: cwd "${gone}" does not exist; ignored`);
    }
    await expectServed(1);
  });

  it('a stopped server (SIGSTOP) costs a hook 1.5 s and the cold hook claims; continued, it acts on nothing it was sent while stopped (control: continued, it serves)', async () => {
    const running = await startServer();
    const pid = running.child.pid!;
    const input = payload.codexPrompt(world, 'sess-stop', 'turn-1', '#todo:fix-login');
    process.kill(pid, 'SIGSTOP');
    let stopped: ReturnType<typeof hook>;
    try {
      stopped = hook(input, { TURNKEEPER_WARM: 'wait' });
      // status tells a stopped server from a running one (the kernel still accepts on its socket).
      expect(world.cli(['hook-server', 'status']).stdout).toContain(`hook server: not answering (pid ${pid}, stopped)`);
      // So does doctor, as a problem with its recovery.
      const doctor = world.cli(['doctor']);
      expect(doctor.stdout).toContain(`problem: the hook server is not answering (pid ${pid}, stopped)`);
      expect(doctor.stdout).toContain(`Recover: kill -CONT ${pid}`);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    expect(stopped.stderr).toContain('the hook server did not take the request on within 1.5 s (stopped or wedged?); ran the cold hook');
    expect(contextOf(stopped.stdout)).toMatch(/· epoch 1$/m);
    // Continued, it reads the request it was sent while stopped and declines it: the cold hook's claim is the only one.
    expect(await waitFor(() => running.log().includes('declined a request sent'), 10_000), running.log()).toBe(true);
    expect(served()).toBe(0);
    expect((await kindsAndVerify()).filter((kind) => kind === 'lease_acquired')).toHaveLength(1);
    // Control: running again, it serves the next hook warm (the same Turn: a replay).
    const after = hook(input, { TURNKEEPER_WARM: 'wait' });
    expect(after).toMatchObject({ stdout: stopped.stdout, stderr: '' });
    await expectServed(1);
  });

  it('a server stopped mid-request past the hook deadline commits nothing when continued (control: continued within it, the claim commits)', async () => {
    // The server stops itself just before its COMMIT (a test-only fault point); the test continues it.
    const fault = { TURNKEEPER_TEST_FAULT: 'store.before_commit=stop' };
    const running = await startServer(fault);
    const pid = running.child.pid!;
    const isStopped = () => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.startsWith('T');
    const claim = (session: string) => {
      const child = spawn(installedHookCommand(), ['hook'], { env: { ...world.env, ...fault, TURNKEEPER_WARM: 'wait' }, cwd: world.repo });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      child.stdin.end(payload.codexPrompt(world, session, 'turn-1', '#todo:fix-login'));
      return { done: new Promise<{ stdout: string; stderr: string }>((resolve) => child.on('close', () => resolve({ stdout, stderr }))) };
    };

    // Past the deadline: stopped at its COMMIT for 15 s (the deadline is 14 s after the request).
    const late = claim('sess-late');
    expect(await waitFor(isStopped, 10_000)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 15_000));
    process.kill(pid, 'SIGCONT');
    const lateRun = await late.done;
    expect(lateRun.stderr).toContain('the hook server did not answer within 14 s');
    expect(lateRun.stdout).toBe('');
    await expectServed(1);
    expect((await kindsAndVerify()).filter((kind) => kind === 'lease_acquired')).toHaveLength(0);

    // Control: continued at once each time it stops, the same claim commits.
    const onTime = claim('sess-on-time');
    const continuing = setInterval(() => {
      if (isStopped()) process.kill(pid, 'SIGCONT');
    }, 100);
    try {
      expect(contextOf((await onTime.done).stdout)).toMatch(/· epoch 1$/m);
    } finally {
      clearInterval(continuing);
    }
    expect((await kindsAndVerify()).filter((kind) => kind === 'lease_acquired')).toHaveLength(1);
  }, 40_000);

  it('ends when Turnkeeper is reinstalled (the shim rewritten): that request runs cold with the new code', async () => {
    const running = await startServer();
    const input = payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login');
    expect(hook(input).stderr).toBe('');
    mkdirSync(join(world.home, 'bin'), { recursive: true, mode: 0o700 });
    writeFileSync(join(world.home, 'bin', 'turnkeeper'), '#!/bin/sh\n', { mode: 0o755 });
    const after = hook(input, { TURNKEEPER_WARM: 'wait' });
    expect(after.stderr).toContain('the hook server declined: turnkeeper was upgraded or reinstalled');
    expect(contextOf(after.stdout)).toMatch(/· epoch 1$/m);
    expect(await running.exited).toBe(0);
    expect(existsSync(socket())).toBe(false);
  });

  it('exits when idle, and when its socket is removed (a removed home ends its server)', async () => {
    const idle = await startServer({ TURNKEEPER_HOOK_SERVER_IDLE_MS: '300' });
    expect(await idle.exited).toBe(0);
    expect(idle.log()).toContain('ending: idle');
    expect(existsSync(socket())).toBe(false);

    const removed = await startServer();
    rmSync(socket());
    expect(await removed.exited).toBe(0);
    expect(removed.log()).toContain('was removed or taken over');
  });

  it('a second server finds the first answering and leaves (the client may start many at once)', async () => {
    await startServer();
    const second = spawnSync(process.execPath, [CLI, 'hook-server', 'serve'], { env: world.env, encoding: 'utf8', timeout: 20_000 });
    expect(second.status).toBe(0);
    expect(hook(payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login')).stderr).toBe('');
    await expectServed(1);
  });

  it('status and stop', async () => {
    expect(world.cli(['hook-server', 'status']).stdout).toContain('not running');
    const running = await startServer();
    expect(world.cli(['hook-server', 'status']).stdout).toContain(`running (pid ${running.child.pid})`);
    expect(JSON.parse(world.cli(['hook-server', 'status', '--json']).stdout)).toMatchObject({
      ok: true,
      running: true,
      listening: true,
      stopped: false,
      pid: running.child.pid,
    });
    // Control for the stopped server's doctor problem: a running one is no problem.
    expect(world.cli(['doctor']).stdout).toContain(`hook server: running (pid ${running.child.pid})`);
    expect(world.cli(['hook-server', 'stop']).stdout).toContain(`stopped (pid ${running.child.pid})`);
    expect(await running.exited).toBe(0);
    expect(existsSync(join(world.home, 'run', 'server.pid'))).toBe(false); // removed by the server it named
  });
});

describe('a team store through the warm hook server', () => {
  const pg = usePostgres({ beforeAll, afterAll });

  it('keeps one server connection for every hook (control: each cold hook opens its own)', async () => {
    const database = `warm_${Date.now()}`;
    await pg().createDatabase(database);
    const store = { TURNKEEPER_STORE: pg().url(database) };
    expect(world.cli(['store', 'init'], { env: store }).code).toBe(0);
    expect(world.cli(['todo', 'add', 'Team login', '--id', 'team-login'], { env: store }).code).toBe(0);
    const sessions = async () =>
      Number(await pg().psql(`SELECT pg_stat_clear_snapshot(); SELECT sessions FROM pg_stat_database WHERE datname = '${database}'`));
    const backends = async () =>
      (await pg().psql(`SELECT pid FROM pg_stat_activity WHERE datname = '${database}' AND pid <> pg_backend_pid()`)).split('\n').filter(Boolean);

    await startServer(store);
    const input = payload.codexPrompt(world, 'sess-t', 'turn-1', '#todo:team-login');
    const first = hook(input, store);
    expect(contextOf(first.stdout)).toMatch(/^Turnkeeper: Todo team-login · capture cap_[0-9a-f]{24} · epoch 1$/m);
    const kept = await backends();
    expect(kept).toHaveLength(1); // the server's, open after its hook ended
    for (let i = 0; i < 5; i += 1) expect(hook(input, store).stdout).toBe(first.stdout);
    expect(await backends()).toEqual(kept);
    await expectServed(6);

    const before = await sessions();
    for (let i = 0; i < 5; i += 1) expect(hook(input, { ...store, TURNKEEPER_WARM: 'off' }).stdout).toBe(first.stdout);
    // Each cold hook connected and left: the database counts five sessions more (counted as they end).
    let after = before;
    for (const deadline = Date.now() + 5000; after < before + 5 && Date.now() < deadline;) after = await sessions();
    expect(after - before).toBeGreaterThanOrEqual(5);
    expect(await backends()).toEqual(kept);
  });

  it('a role revoked while the server runs: its kept connection serves for its lifetime at most, then the hook is refused as a cold one is at once', async () => {
    const database = `warm_revoked_${Date.now()}`;
    await pg().createDatabase(database);
    await pg().createRole('tk_carol', 'carol-pw');
    const admin = { TURNKEEPER_STORE: pg().url(database) };
    expect(world.cli(['store', 'init', '--hook-role', 'tk_carol'], { env: admin }).code).toBe(0);
    for (const id of ['todo-a', 'todo-b', 'todo-c', 'todo-d']) expect(world.cli(['todo', 'add', `Task ${id}`, '--id', id], { env: admin }).code).toBe(0);
    // The lifetime, shortened for the test (60 s in use): a test-only variable, like the fault points.
    const LIFETIME_MS = 5000;
    const env = { TURNKEEPER_STORE: pg().url(database, 'tk_carol', 'carol-pw'), TURNKEEPER_TEST_KEPT_CONNECTION_MS: String(LIFETIME_MS) };
    await startServer(env);
    const claim = (session: string, todo: string, warm: string) =>
      hook(payload.codexPrompt(world, session, 'turn-1', `#todo:${todo}`), { ...env, TURNKEEPER_WARM: warm });
    const opened = Date.now();
    expect(contextOf(claim('sess-a', 'todo-a', 'wait').stdout)).toMatch(/· epoch 1$/m);
    await pg().psql(`ALTER ROLE tk_carol NOLOGIN PASSWORD 'changed'`);
    // A cold hook is refused at once.
    const cold = claim('sess-b', 'todo-b', 'off');
    expect(contextOf(cold.stdout)).toContain('[store_unavailable]');
    expect(cold.stderr).toMatch(/not permitted to log in|password authentication failed/);
    // Control: within its lifetime the kept connection still answers (the window this bounds).
    const within = claim('sess-c', 'todo-c', 'wait');
    expect(Date.now() - opened, 'the control ran inside the lifetime').toBeLessThan(LIFETIME_MS);
    expect(contextOf(within.stdout)).toMatch(/· epoch 1$/m);
    await new Promise((resolve) => setTimeout(resolve, opened + LIFETIME_MS + 200 - Date.now()));
    const after = claim('sess-d', 'todo-d', 'wait');
    expect(contextOf(after.stdout)).toContain('[store_unavailable]');
    expect(after.stderr).toMatch(/not permitted to log in|password authentication failed/);
    await expectServed(3);
    expect(await pg().psql(`SELECT count(*) FROM turnkeeper.leases WHERE todo = 'todo-d'`, database)).toBe('0');
  });

  it('a server stopped at its COMMIT past the hook deadline commits nothing on the team store when continued (control: continued at once, the claim commits)', async () => {
    const database = `warm_deadline_${Date.now()}`;
    await pg().createDatabase(database);
    const store = { TURNKEEPER_STORE: pg().url(database) };
    expect(world.cli(['store', 'init'], { env: store }).code).toBe(0);
    expect(world.cli(['todo', 'add', 'Team login', '--id', 'team-login'], { env: store }).code).toBe(0);
    // The server stops itself just before its COMMIT (a test-only fault point); the test continues it.
    const env = { ...store, TURNKEEPER_TEST_FAULT: 'store.before_commit=stop' };
    const running = await startServer(env);
    const pid = running.child.pid!;
    const isStopped = () => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.startsWith('T');
    const claim = (session: string) => {
      const child = spawn(installedHookCommand(), ['hook'], { env: { ...world.env, ...env, TURNKEEPER_WARM: 'wait' }, cwd: world.repo });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      child.stdin.end(payload.codexPrompt(world, session, 'turn-1', '#todo:team-login'));
      return { done: new Promise<{ stdout: string; stderr: string }>((resolve) => child.on('close', () => resolve({ stdout, stderr }))) };
    };
    const leases = () => pg().psql(`SELECT count(*) FROM turnkeeper.leases`, database);

    // Past the deadline (14 s after the request): stopped at its COMMIT for 15 s. Its write is
    // dropped, by the check before COMMIT or by the server, which ends a transaction idle past the
    // same bound: the agent went on without an answer, and nothing may commit in its name.
    const late = claim('sess-late');
    expect(await waitFor(isStopped, 10_000)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 15_000));
    process.kill(pid, 'SIGCONT');
    const lateRun = await late.done;
    expect(lateRun.stderr).toContain('the hook server did not answer within 14 s');
    expect(lateRun.stdout).toBe('');
    await expectServed(1);
    expect(await leases()).toBe('0');

    // Control: continued at once each time it stops, the same claim commits.
    const onTime = claim('sess-on-time');
    const continuing = setInterval(() => {
      if (isStopped()) process.kill(pid, 'SIGCONT');
    }, 100);
    try {
      expect(contextOf((await onTime.done).stdout)).toMatch(/· epoch 1$/m);
    } finally {
      clearInterval(continuing);
    }
    expect(await leases()).toBe('1');
  }, 45_000);

  it("a URL that names no role connects as USER: a request of another USER is declined and answered cold, as that user's role (control: the server's USER is served warm)", async () => {
    const database = `warm_user_${Date.now()}`;
    await pg().createDatabase(database);
    await pg().createRole('tk_alice', 'alice-pw');
    await pg().createRole('tk_bob', 'bob-pw');
    const admin = { TURNKEEPER_STORE: pg().url(database) };
    expect(world.cli(['store', 'init', '--hook-role', 'tk_alice'], { env: admin }).code).toBe(0);
    expect(world.cli(['todo', 'add', 'Team login', '--id', 'team-login'], { env: admin }).code).toBe(0);
    // One password file with a line for each role, as on a machine two people share.
    const pgpass = join(world.root, 'team.pgpass');
    writeFileSync(pgpass, `127.0.0.1:${pg().port}:${database}:tk_alice:alice-pw\n127.0.0.1:${pg().port}:${database}:tk_bob:bob-pw\n`, { mode: 0o600 });
    const store = { TURNKEEPER_STORE: `postgresql://127.0.0.1:${pg().port}/${database}`, PGPASSFILE: pgpass };
    await startServer({ ...store, USER: 'tk_alice' });

    // tk_bob has no grant on the schema: its own hook is refused by the server, whichever path runs it.
    const asBob = hook(payload.codexPrompt(world, 'sess-bob', 'turn-1', '#todo:team-login'), { ...store, USER: 'tk_bob', TURNKEEPER_WARM: 'wait' });
    expect(asBob.stderr).toContain('the hook server declined: USER differs');
    expect(contextOf(asBob.stdout)).toContain('[store_unavailable]');
    expect(asBob.stderr).toMatch(/permission denied/);
    // Control: the server's own USER is served warm, and claims as tk_alice.
    const asAlice = hook(payload.codexPrompt(world, 'sess-alice', 'turn-1', '#todo:team-login'), { ...store, USER: 'tk_alice', TURNKEEPER_WARM: 'wait' });
    expect(asAlice.stderr).toBe('');
    expect(contextOf(asAlice.stdout)).toMatch(/^Turnkeeper: Todo team-login · capture cap_[0-9a-f]{24} · epoch 1$/m);
    await expectServed(1);
    expect(await pg().psql(`SELECT DISTINCT usename FROM pg_stat_activity WHERE datname = '${database}' AND usename LIKE 'tk_%'`)).toBe('tk_alice');
  });
});
