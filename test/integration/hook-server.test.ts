// The warm hook server (spec §2 "The warm hook path", src/cli/hookServer.ts) with the real native
// client: what it answers, who it refuses, and what happens when it dies, is upgraded or sits idle. The
// decision table itself runs on this path in the `warm` test project (vitest.config.mts).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CLI, contextOf, holdWriteLock, makeWorld, payload, WARM_CLIENT, type World } from '../support/world';
import { waitFor } from '../support/waitFor';
import { usePostgres } from '../support/postgres';
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

/** A hook as the shim runs it: through the native client (default mode unless `env` says otherwise). */
function hook(input: string, env: Record<string, string> = {}) {
  const result = spawnSync(WARM_CLIENT, [process.execPath, CLI, 'hook'], { input, env: { ...world.env, ...env }, cwd: world.repo, encoding: 'utf8' });
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
      const child = spawn(WARM_CLIENT, [process.execPath, CLI, 'hook'], { env: { ...world.env, TURNKEEPER_WARM: 'wait' }, cwd: world.repo });
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
    const asNobody = spawnSync('runuser', ['-u', 'nobody', '--', node, probe, socket()], { encoding: 'utf8' });
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
});
