// PgBouncer in transaction pooling mode between the hooks and the team server (docs/team.md: "A
// transaction-mode pooler in front is fine"): Debian's PgBouncer (test/support/pgbouncer.ts) in front
// of a real PostgreSQL 15 (test/support/postgres.ts), SCRAM on both sides, hooks as real processes
// (`dist/cli.js hook`, Codex payloads) from "machines" with their own homes and clones.
//
// What each test proves:
// - the harness: the bouncer's URL is its own port, it asks for the password (SCRAM), its count of
//   server connections sees every backend of the role (a control that it is not blind), and it does
//   not outlive a test process that exits or is killed;
// - control: `store init` against the server, then one hook claim through the bouncer, seen on the
//   server; and what `store init` itself does through the bouncer;
// - the CLI's operations (todo add and list, a claim, its replay, a refusal, release, a second claim,
//   verify) through a pool of 2 server connections, which the server never sees exceeded;
// - a burst: 64 hooks from 8 machines at once through a pool of 4, half on one Todo and half on a Todo
//   each: every hook answers, no [store_unavailable], one holder per Todo, a verifying chain, and the
//   server never holds more than 4 connections of the hooks' role (the burst is test/support/burst.ts,
//   which postgres-burst.test.ts sends straight to the server);
// - the change feed through the bouncer: LISTEN is accepted, but its registration stays on whichever
//   server connection ran it; a NOTIFY reaches that connection while no client is linked to it (the
//   bouncer drops it and logs a warning) or while another client is (that client gets it). The
//   editor's follower sees a change only at its next poll, never through NOTIFY.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { buildSync } from 'esbuild';
import pg from 'pg';
import type { ReceiptDocument } from '../../src/core/receipts';
import { contextOf } from '../support/world';
import { pgEnv, usePostgres } from '../support/postgres';
import { startPgBouncer, usePgBouncer, type PgBouncer } from '../support/pgbouncer';
import { makeUpstream } from '../support/teamMachine';
import { BURST_HOOKS, codexPrompt, outcome, runBurst, sampleConnections, spawnMachine, type ConnectionSampler, type Machine } from '../support/burst';
import { waitFor } from '../support/waitFor';
import { openAuthority } from '../../src/ledger/open';
import type { Authority } from '../../src/store/authority';
import type { FeedMode } from '../../src/store/port';
import { like } from '../support/matchers';

const server = usePostgres({ beforeAll, afterAll });
/** The hooks' role: the only one that connects through the bouncers (tk_admin checks the server directly). */
const APP = 'tk_app';
const APP_PASSWORD = 'app "pass" :/@%';
const ORIGIN = 'https://example.invalid/acme/pooled.git';

beforeAll(async () => {
  await server().createRole(APP, APP_PASSWORD);
  for (const name of ['control', 'initpool', 'ops', 'burst', 'feed', 'probe']) await server().createDatabase(name, APP);
});
const pool2 = usePgBouncer({ beforeAll, afterAll }, server, { users: { [APP]: APP_PASSWORD }, poolSize: 2 });
const pool4 = usePgBouncer({ beforeAll, afterAll }, server, { users: { [APP]: APP_PASSWORD } });

/** The hooks' store: `database` through `bouncer`, as the hooks' role. */
const pooled = (bouncer: PgBouncer, database: string): string => bouncer.url(database, APP, APP_PASSWORD);
/** The same database on the server itself, as the hooks' role (for `store init`). */
const direct = (database: string): string => server().url(database, APP, APP_PASSWORD);

let root: string;
let upstream: string;
beforeAll(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'tk-pg-pooler-')));
  upstream = makeUpstream(join(root, 'upstream'), 'pooled\n');
});
afterAll(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

/** A machine (its own HOME, TURNKEEPER_HOME and clone of the one repository) whose store is `store`. */
const machine = (name: string, store: string): Machine => spawnMachine(join(root, name), name, { store, origin: ORIGIN, upstream });

/** The server's count of the hooks' backends in `database` (pg_stat_activity, over the bouncer's direct connection). */
const bouncerBackends = (bouncer: PgBouncer, database: string): ConnectionSampler => ({
  source: 'pg_stat_activity',
  count: () => bouncer.serverConnections({ database }),
});

/** An authority on the server itself, as tk_admin (never through a bouncer, never as the hooks' role). */
async function onServer<T>(database: string, work: (authority: Authority) => Promise<T>): Promise<T> {
  const authority = (await openAuthority(pgEnv(server().url(database)), { create: false }))!;
  try {
    return await work(authority);
  } finally {
    authority.close();
  }
}

/**
 * `store init` against the server as the hooks' role (the role then owns the schema). Returns once the
 * server has dropped that connection's backend, which outlives the CLI's exit by a moment: a sampler
 * of the role's backends must count the bouncer's alone.
 */
async function storeInitDirect(database: string): Promise<void> {
  const init = await machine(`init-${database}`, direct(database)).run(['store', 'init', '--json']);
  expect(init.code, init.stdout + init.stderr).toBe(0);
  const deadline = performance.now() + 10_000;
  while ((await pool2().serverConnections({ database })) > 0) {
    if (performance.now() > deadline) throw new Error(`the backend of store init in ${database} never went away`);
    await new Promise((resolvePromise) => setTimeout(resolvePromise, 10));
  }
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('the PgBouncer harness', () => {
  it('listens on its own loopback port, in transaction mode with the pool size asked for, and asks every client for its password', async () => {
    const bouncer = pool2();
    expect(bouncer.port).not.toBe(server().port);
    expect(pooled(bouncer, 'probe')).toBe(`postgres://${APP}:${encodeURIComponent(APP_PASSWORD)}@127.0.0.1:${bouncer.port}/probe`);
    const client = new pg.Client({ connectionString: pooled(bouncer, 'probe') });
    await client.connect();
    try {
      expect((await client.query<{ user: string }>('SELECT current_user AS user')).rows[0]!.user).toBe(APP);
    } finally {
      await client.end();
    }
    const config = Object.fromEntries((await bouncer.show('CONFIG')).map((row) => [String(row.key), String(row.value)]));
    expect(config).toMatchObject({
      pool_mode: 'transaction',
      default_pool_size: '2',
      listen_addr: '127.0.0.1',
      auth_type: 'scram-sha-256',
      unix_socket_dir: '',
    });
    // Control: a wrong password is refused by the bouncer itself.
    const refused = new pg.Client({ connectionString: bouncer.url('probe', APP, 'wrong') });
    refused.on('error', () => undefined);
    await expect(refused.connect()).rejects.toThrow(/SASL authentication failed|password authentication failed/);
    await refused.end().catch(() => undefined);
  });

  it('control: serverConnections counts every backend of the role in a database, more than any pool holds', async () => {
    const bouncer = pool2();
    const before = await bouncer.serverConnections({ database: 'probe' });
    const clients = Array.from({ length: bouncer.poolSize + 3 }, () => new pg.Client({ connectionString: direct('probe') }));
    await Promise.all(clients.map((c) => c.connect()));
    try {
      expect(await bouncer.serverConnections({ database: 'probe' })).toBe(before + bouncer.poolSize + 3);
      expect(await bouncer.serverConnections({ database: 'ops' })).toBe(0);
    } finally {
      await Promise.all(clients.map((c) => c.end()));
    }
  });

  it('stop() kills the bouncer, removes its directory, and may be called twice', async () => {
    const own = await startPgBouncer(server(), { poolSize: 1 });
    const { pid, root: dir, port } = own;
    expect(pid).toBeGreaterThan(0);
    expect(existsSync(dir)).toBe(true);
    await own.stop();
    await own.stop();
    expect(own.pid).toBeUndefined();
    expect(existsSync(dir)).toBe(false);
    expect(alive(pid!)).toBe(false);
    const refused = new pg.Client({ host: '127.0.0.1', port, user: 'tk_admin', password: server().adminPassword, database: 'postgres' });
    refused.on('error', () => undefined);
    await expect(refused.connect()).rejects.toThrow(/ECONNREFUSED/);
  });

  describe('a test process that dies without stop()', () => {
    // The harness bundled for a plain Node child; the child starts a server and a bouncer, then dies.
    let bundle: string;
    beforeAll(() => {
      bundle = join(root, 'harness.cjs');
      writeFileSync(
        join(root, 'harness.ts'),
        `export { startPostgres } from ${JSON.stringify(resolve(__dirname, '../support/postgres'))};\nexport { startPgBouncer } from ${JSON.stringify(resolve(__dirname, '../support/pgbouncer'))};\n`,
      );
      buildSync({
        entryPoints: [join(root, 'harness.ts')],
        bundle: true,
        platform: 'node',
        format: 'cjs',
        outfile: bundle,
        external: ['pg-native'],
        logLevel: 'warning',
      });
    });
    async function orphan(how: 'exit' | 'sigkill'): Promise<{ pid: number; root: string; serverRoot: string }> {
      const script = `const h = require(${JSON.stringify(bundle)}); h.startPostgres().then(async (s) => { const b = await h.startPgBouncer(s); process.stdout.write(JSON.stringify({ pid: b.pid, root: b.root, serverRoot: s.root }) + '\\n'); if (${JSON.stringify(how)} === 'exit') process.exit(3); setInterval(() => {}, 1000); }).catch((e) => { console.error(e); process.exit(1); });`;
      const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      const started = await new Promise<{ pid: number; root: string; serverRoot: string }>((resolvePromise, reject) => {
        child.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          if (out.includes('\n')) resolvePromise(JSON.parse(out.split('\n')[0]!) as { pid: number; root: string; serverRoot: string });
        });
        child.on('exit', (code) => (out.includes('\n') ? undefined : reject(new Error(`child exited ${code} before starting a bouncer`))));
      });
      expect(alive(started.pid)).toBe(true);
      if (how === 'sigkill') child.kill('SIGKILL');
      await new Promise((resolvePromise) =>
        child.exitCode !== null || child.signalCode !== null ? resolvePromise(undefined) : child.once('exit', resolvePromise),
      );
      return started;
    }

    it('process.exit: the exit hook has killed the bouncer and removed its directory by the time the process is gone', async () => {
      const { pid, root: dir, serverRoot } = await orphan('exit');
      expect(existsSync(dir)).toBe(false);
      expect(existsSync(serverRoot)).toBe(false);
      expect(await waitFor(() => !alive(pid), 5000, 50)).toBe(true);
    });

    it('SIGKILL: the watchdog kills the bouncer and removes its directory within seconds', async () => {
      const { pid, root: dir, serverRoot } = await orphan('sigkill');
      expect(await waitFor(() => !alive(pid) && !existsSync(dir) && !existsSync(serverRoot), 15_000, 100)).toBe(true);
    });
  });
});

describe('control: one hook claim through the bouncer', () => {
  it('store init against the server, a Todo and a claim through the bouncer: the server holds the lease', async () => {
    await storeInitDirect('control');
    const m = machine('control-a', pooled(pool2(), 'control'));
    const add = await m.run(['todo', 'add', 'Fix login', '--id', 'fix-login']);
    expect(add.code, add.stderr).toBe(0);
    const hook = await m.run(['hook'], codexPrompt(m, 'control-s1', 'turn-1', 'please work on #todo:fix-login'));
    expect(hook.code, hook.stderr).toBe(0);
    expect(contextOf(hook.stdout) ?? '', hook.stdout + hook.stderr).toMatch(/^Turnkeeper: Todo fix-login · capture \S+ · epoch 1/);
    const leases = await onServer('control', (a) => a.listLeases());
    expect(leases).toMatchObject([{ todo: 'fix-login', owner: 'codex:control-s1', epoch: 1, status: 'active' }]);
  });

  // What `store init` does through a transaction-mode bouncer: each migration is one multi-statement
  // simple query inside BEGIN … COMMIT on one client connection, and nothing it runs is session state
  // (no SET, no temporary table, no advisory lock), so the bouncer keeps the whole transaction on one
  // server connection and the schema is created. It is still run against the server in the other
  // tests: DDL is an owner's job, and a pooler's role is usually the hooks'.
  it('store init through the bouncer (documented): creates the schema, and a claim then works', async () => {
    const m = machine('initpool-a', pooled(pool2(), 'initpool'));
    const init = await m.run(['store', 'init', '--json']);
    console.log(`store init through PgBouncer (transaction mode): exit ${init.code}; ${init.stdout.trim()} ${init.stderr.trim()}`);
    expect(init.code, init.stdout + init.stderr).toBe(0);
    expect(JSON.parse(init.stdout)).toMatchObject({ kind: 'postgres' });
    const again = await m.run(['store', 'init', '--json']);
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ created: [] });
    expect(await server().psql('SELECT count(*) FROM turnkeeper.receipt_head', 'initpool')).toBe('1');
    expect((await m.run(['todo', 'add', 'Fix login', '--id', 'fix-login'])).code).toBe(0);
    const hook = await m.run(['hook'], codexPrompt(m, 'initpool-s1', 'turn-1', 'please work on #todo:fix-login'));
    expect(outcome(hook), hook.stdout + hook.stderr).toBe('claimed');
  });
});

describe('the CLI through a transaction-mode pool of 2', () => {
  it('todo add and list, claim, replay, a refusal, release, a second claim, 8 hooks at once, verify: the server never sees more than 2 connections', async () => {
    const bouncer = pool2();
    await storeInitDirect('ops');
    const a = machine('ops-a', pooled(bouncer, 'ops'));
    const b = machine('ops-b', pooled(bouncer, 'ops'));
    const sampler = sampleConnections(bouncerBackends(bouncer, 'ops'));
    try {
      const add = await a.run(['todo', 'add', 'Fix login', '--id', 'fix-login', '--body', 'The form rejects valid passwords.']);
      expect(add.code, add.stderr).toBe(0);
      const list = await b.run(['todo', 'list', '--json']);
      expect(list.code, list.stderr).toBe(0);
      expect(list.stdout).toContain('"fix-login"');

      const claim = await a.run(['hook'], codexPrompt(a, 'ops-a1', 'turn-1', 'please work on #todo:fix-login'));
      expect(outcome(claim), claim.stdout + claim.stderr).toBe('claimed');
      expect(contextOf(claim.stdout)).toMatch(/· epoch 1/);
      // The same session's next prompt: its stored ready capture, byte for byte, and no new claim.
      const replay = await a.run(['hook'], codexPrompt(a, 'ops-a1', 'turn-2', 'go on with #todo:fix-login'));
      expect(contextOf(replay.stdout), replay.stderr).toBe(contextOf(claim.stdout));
      // Another machine's session is refused, naming the holder.
      const refused = await b.run(['hook'], codexPrompt(b, 'ops-b1', 'turn-1', 'please work on #todo:fix-login'));
      expect(outcome(refused), refused.stdout + refused.stderr).toBe('lease_held');
      expect(contextOf(refused.stdout)).toContain(`is leased to codex:ops-a1 (epoch 1) in ${a.checkout}`);

      const release = await a.run(['release', 'fix-login', '--owner', 'codex:ops-a1', '--json']);
      expect(release.code, release.stdout + release.stderr).toBe(0);
      const second = await b.run(['hook'], codexPrompt(b, 'ops-b1', 'turn-2', 'please work on #todo:fix-login'));
      expect(outcome(second), second.stdout + second.stderr).toBe('claimed');
      expect(contextOf(second.stdout)).toMatch(/· epoch 2/);

      // Eight hooks at once from both machines on another Todo: more clients than server connections.
      expect((await b.run(['todo', 'add', 'Fix logout', '--id', 'fix-logout'])).code).toBe(0);
      const racers = Array.from({ length: 8 }, (_, k) => {
        const m = k % 2 ? b : a;
        return m.run(['hook'], codexPrompt(m, `ops-race-${k}`, 'turn-1', 'please work on #todo:fix-logout'));
      });
      const raced = (await Promise.all(racers)).map(outcome).sort();
      expect(raced).toStrictEqual(['claimed', ...Array<string>(7).fill('lease_held')]);

      for (const m of [a, b]) {
        const verify = await m.run(['verify', '--json']);
        expect(verify.code, verify.stderr).toBe(0);
        expect(JSON.parse(verify.stdout)).toMatchObject({ ok: true, breaks: [] });
      }
      const status = await a.run(['status', '--json']);
      expect(status.code, status.stderr).toBe(0);
      expect(status.stdout).toContain('codex:ops-b1');
    } finally {
      const { peak, samples, errors } = await sampler.stop();
      console.log(`CLI through a pool of 2: peak ${peak} server connections of ${APP} in ${samples} samples`);
      expect(errors).toStrictEqual([]);
      expect(samples).toBeGreaterThan(10);
      expect(peak).toBeGreaterThanOrEqual(1);
      expect(peak).toBeLessThanOrEqual(2);
    }
    const kinds = await onServer('ops', async (authority) =>
      (await authority.receipts({ limit: 1000 })).map((row) => (JSON.parse(row.doc) as ReceiptDocument).kind),
    );
    expect(kinds.filter((kind) => kind === 'lease_acquired')).toHaveLength(3);
    expect(kinds.filter((kind) => kind === 'lease_released')).toHaveLength(1);
    expect(kinds.filter((kind) => kind === 'claim_refused')).toHaveLength(8);
  });
});

describe('a burst through a transaction-mode pool of 4', () => {
  it('64 hooks from 8 machines, half on one Todo and half on a Todo each: every hook answers, no [store_unavailable], one holder per Todo, ≤ 4 server connections', async () => {
    const bouncer = pool4();
    expect(bouncer.poolSize).toBe(4);
    await storeInitDirect('burst');
    let held = 0;
    const { summary, peak } = await runBurst({
      root,
      upstream,
      origin: ORIGIN,
      prefix: 'burst',
      stores: pooled(bouncer, 'burst'),
      adminUrl: server().url('burst'),
      via: `through PgBouncer (transaction mode, pool ${bouncer.poolSize})`,
      connections: bouncerBackends(bouncer, 'burst'),
      async around() {
        const statsOf = async () => (await bouncer.show('STATS')).find((row) => row.database === 'burst')!;
        const statsBefore = await statsOf();
        return async () => {
          const pool = (await bouncer.show('POOLS')).find((row) => row.database === 'burst' && row.user === APP)!;
          const statsAfter = await statsOf();
          const during = (key: string) => Number(statsAfter[key]) - Number(statsBefore[key]);
          held = ['sv_active', 'sv_idle', 'sv_used', 'sv_tested', 'sv_login'].reduce((sum, key) => sum + Number(pool[key]), 0);
          return (
            `${held} in the bouncer's pool after; ` +
            `through the bouncer during the burst: ${during('total_xact_count')} transactions, ${during('total_query_count')} queries, ` +
            `clients waited ${Math.round(during('total_wait_time') / 1000)} ms in all for a server connection (${Math.round(during('total_wait_time') / 1000 / BURST_HOOKS)} ms a hook)`
          );
        };
      },
    });
    // Control: the burst filled the pool (the bound, not a light load, kept the count down), and the
    // sampler saw connections.
    expect(held, summary).toBe(bouncer.poolSize);
    expect(peak, summary).toBeGreaterThanOrEqual(1);
    expect(peak, summary).toBeLessThanOrEqual(bouncer.poolSize);
  });
});

describe('the change feed (LISTEN/NOTIFY) through a transaction-mode bouncer', () => {
  /** PostgresRows.follow's poll interval. */
  const POLL_MS = 5000;
  const FAST_MS = 1000;

  it('LISTEN is accepted, but the registration stays on a pooled server connection: its NOTIFY is dropped while that connection is idle, and goes to whichever client holds it', async () => {
    await storeInitDirect('feed');
    const bouncer = pool2();
    const connect = async (url: string) => {
      const client = new pg.Client({ connectionString: url });
      client.on('error', () => undefined);
      await client.connect();
      return client;
    };
    const listener = await connect(pooled(bouncer, 'feed'));
    const other = await connect(pooled(bouncer, 'feed'));
    const notifier = await connect(server().url('feed'));
    const got: string[] = [];
    listener.on('notification', (m) => got.push(`listener:${m.payload}`));
    other.on('notification', (m) => got.push(`other:${m.payload}`));
    try {
      await listener.query('LISTEN turnkeeper');
      // The server has one backend of the role listening on the channel: the one the bouncer picked.
      const listening = await server().psql(
        `SELECT count(*) FROM pg_stat_activity WHERE datname = 'feed' AND usename = '${APP}' AND query = 'LISTEN turnkeeper'`,
      );
      expect(listening).toBe('1');
      // While no client is linked to that server connection, a NOTIFY reaches it and PgBouncer drops it.
      const warningsBefore = bouncer.log().match(/got packet 'A' from server when not linked/g)?.length ?? 0;
      await notifier.query("NOTIFY turnkeeper, '1001'");
      expect(await waitFor(() => (bouncer.log().match(/got packet 'A' from server when not linked/g)?.length ?? 0) > warningsBefore, 5000, 20)).toBe(true);
      // The pool holds one server connection, the listening one (the bouncer opens another only when
      // none is idle): a client that begins a transaction gets it. A NOTIFY committed meanwhile is
      // delivered when that backend goes idle again, right after the COMMIT and still to the client
      // linked to it: one that never listened.
      expect((await bouncer.show('SERVERS')).filter((row) => row.database === 'feed')).toHaveLength(1);
      await other.query('BEGIN');
      await other.query('SELECT 1');
      await notifier.query("NOTIFY turnkeeper, '2002'");
      await other.query('COMMIT');
      console.log(
        `LISTEN through PgBouncer: notifications received ${JSON.stringify(got)}; bouncer log:\n${bouncer
          .log()
          .split('\n')
          .filter((line) => /packet 'A'/.test(line))
          .join('\n')}`,
      );
      expect(got).toStrictEqual(['other:2002']);
    } finally {
      await Promise.all([listener, other, notifier].map((c) => c.end().catch(() => undefined)));
    }
  });

  async function followerSees(
    url: string,
  ): Promise<{ events: { seq: number | undefined; at: number }[]; modes: FeedMode[]; claimedAt: number; head: number; startedAt: number }> {
    const editorHome = join(root, `editor-${Math.random().toString(36).slice(2)}`, 'tkhome');
    mkdirSync(editorHome, { recursive: true });
    const authority = (await openAuthority(pgEnv(url, { TURNKEEPER_HOME: editorHome }), { create: false, busyTimeoutMs: 2000 }))!;
    const events: { seq: number | undefined; at: number }[] = [];
    const startedAt = performance.now();
    const modes: FeedMode[] = [];
    const unfollow = (await authority.follow(
      (seq) => events.push({ seq, at: performance.now() }),
      (mode) => modes.push(mode),
    ))!;
    try {
      const m = machine(`feed-${Math.random().toString(36).slice(2)}`, url);
      const todo = `feed-${Math.random().toString(36).slice(2, 8)}`;
      expect((await m.run(['todo', 'add', `Task ${todo}`, '--id', todo])).code).toBe(0);
      const before = Number(await server().psql('SELECT seq FROM turnkeeper.receipt_head WHERE id = 1', 'feed'));
      const hook = await m.run(['hook'], codexPrompt(m, `${m.name}-s1`, 'turn-1', `please work on #todo:${todo}`));
      expect(outcome(hook), hook.stdout + hook.stderr).toBe('claimed');
      const head = Number(await server().psql('SELECT seq FROM turnkeeper.receipt_head WHERE id = 1', 'feed'));
      expect(head).toBeGreaterThan(before);
      expect(hook.exitedAt - startedAt, 'the claim took too long to tell the feed from the poll').toBeLessThan(POLL_MS - FAST_MS - 500);
      await waitFor(() => events.some((e) => e.seq !== undefined && e.seq >= head), POLL_MS + 2000, 10);
      return { events, modes, claimedAt: hook.exitedAt, head, startedAt };
    } finally {
      unfollow();
      authority.close();
    }
  }

  it("the editor's follower: through the server a claim arrives by NOTIFY within 1 s; through the bouncer only at the next poll", async () => {
    // Control: straight to the server, the feed reports the claim's receipts one by one, at once.
    const straight = await followerSees(server().url('feed'));
    const straightAt = straight.events.find((e) => e.seq !== undefined && e.seq >= straight.head)?.at;
    expect(straightAt, JSON.stringify(straight.events)).toBeDefined();
    expect(straightAt! - straight.claimedAt).toBeLessThan(FAST_MS);
    expect(straight.events.length).toBeGreaterThan(1);
    // And the feed says which it is: live straight to the server, polled behind the pooler (with why).
    expect(straight.modes).toStrictEqual([{ kind: 'listen' }]);

    const bouncer = pool2();
    const warningsBefore = bouncer.log().match(/got packet 'A' from server when not linked/g)?.length ?? 0;
    const pooledFeed = await followerSees(pooled(bouncer, 'feed'));
    const pooledAt = pooledFeed.events.find((e) => e.seq !== undefined && e.seq >= pooledFeed.head)?.at;
    const warnings = (bouncer.log().match(/got packet 'A' from server when not linked/g)?.length ?? 0) - warningsBefore;
    console.log(
      `change feed: direct ${Math.round(straightAt! - straight.claimedAt)} ms after the hook (${straight.events.length} events); ` +
        `through PgBouncer ${pooledAt === undefined ? 'never' : `${Math.round(pooledAt - pooledFeed.claimedAt)} ms after the hook, ${Math.round(pooledAt - pooledFeed.startedAt)} ms after follow`} ` +
        `(${pooledFeed.events.length} events: ${JSON.stringify(pooledFeed.events.map((e) => e.seq))}); PgBouncer dropped ${warnings} notifications ("got packet 'A' from server when not linked")`,
    );
    expect(pooledAt, JSON.stringify(pooledFeed.events)).toBeDefined();
    // Not by NOTIFY: at the poll tick, one report of the head.
    expect(pooledAt! - pooledFeed.startedAt).toBeGreaterThanOrEqual(POLL_MS - 50);
    expect(pooledFeed.events.map((e) => e.seq)).toStrictEqual([pooledFeed.head]);
    expect(pooledFeed.modes).toStrictEqual([{ kind: 'polling', everyMs: POLL_MS, reason: like.stringContaining('did not come back to its listener') }]);
  });
});
