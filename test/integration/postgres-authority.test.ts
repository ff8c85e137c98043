// The Authority conformance suite, unchanged, on a real PostgreSQL server: a fresh database per test,
// its schema created by `store init` (initializeStore), the authority opened through the one factory
// (openAuthority with TURNKEEPER_STORE=postgres://…), exactly as a hook opens it.
//
// Time. The suite drives time through the `clientNow` it passes (T0, T0 + TTL, …): a SQLite
// authority decides with that clock. A team server decides with its own `clock_timestamp()` and
// ignores the client's (spec §4), so a test that needs "60 s later" must move the *server's* clock.
// Each test database shadows `clock_timestamp()` with a function of the same name in a schema that
// comes before pg_catalog on that database's search_path; it returns the time the test last set (and
// the real clock until then). The product's SQL is unchanged: it still calls `clock_timestamp()`. The
// authority handed to the suite sets that time to the `clientNow` of each call before making it, so
// both authorities see the same timeline, and every decision still goes through the server clock.
// The last test proves that without the shadow the server's real clock, not the client's, decides.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import pg from 'pg';
import { authorityConformance } from './authority.conformance';
import { initializeStore, openAuthority } from '../../src/ledger/open';
import { checkpointsOf } from '../../src/ledger/checkpoints';
import type { Authority } from '../../src/store/authority';
import { buildCapture } from '../../src/core/capture';
import { digestText } from '../../src/core/canonical';
import { pgEnv, usePostgres } from '../support/postgres';

const server = usePostgres({ beforeAll, afterAll });

let databases = 0;
async function freshStore(): Promise<{ url: string; name: string }> {
  const name = `conf_${process.pid}_${++databases}`;
  await server().createDatabase(name);
  const url = server().url(name);
  await initializeStore(pgEnv(url));
  return { url, name };
}

/** Where each Authority method takes the caller's clock (`clientNow`), by argument position. */
const CLIENT_NOW_ARG: Record<string, number> = {
  addTodo: 1,
  setTodoStatus: 3,
  blockTodo: 3,
  changeDependencies: 3,
  claim: 1,
  renew: 1,
  release: 1,
  appendReceipt: 1,
  commitLaunch: 1,
  moveGoal: 2,
  noteClockSkew: 2,
  adoptLegacyGoals: 1,
};

authorityConformance('PostgreSQL', async () => {
  const { url, name } = await freshStore();
  await server().psql(
    `CREATE SCHEMA testclock;
     CREATE TABLE testclock.setting (ms int8);
     INSERT INTO testclock.setting VALUES (NULL);
     CREATE FUNCTION testclock.clock_timestamp() RETURNS timestamptz LANGUAGE sql VOLATILE AS
       $$ SELECT COALESCE(to_timestamp((SELECT ms FROM testclock.setting) / 1000.0), pg_catalog.clock_timestamp()) $$;
     ALTER DATABASE "${name}" SET search_path = testclock, pg_catalog, public;`,
    name,
  );
  const clock = new pg.Client({ connectionString: url });
  clock.on('error', () => undefined);
  await clock.connect();
  const authority = (await openAuthority(pgEnv(url), { create: true }))!;
  expect(authority.location).toBe(`127.0.0.1:${server().port}/${name}`);
  const timed = new Proxy(authority, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      const at = typeof key === 'string' ? CLIENT_NOW_ARG[key] : undefined;
      if (typeof value !== 'function' || at === undefined) return value;
      return async (...args: unknown[]) => {
        await clock.query('UPDATE testclock.setting SET ms = $1', [args[at]]);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return {
    authority: timed,
    dispose: () => {
      authority.close();
      void clock.end().catch(() => undefined);
    },
  };
});

describe('PostgreSQL authority: a Todo finished from two checkouts at once', () => {
  it('one of them records done and its todo_finished, the other finds it done (the row is locked for the check)', async () => {
    const { url } = await freshStore();
    const [a, b] = [(await openAuthority(pgEnv(url), { create: false }))!, (await openAuthority(pgEnv(url), { create: false }))!];
    try {
      await a.addTodo({ goal: 'g', id: 'fix-login', title: 'Fix login', body: '' }, Date.now());
      const finish = (authority: Authority, checkout: string) =>
        authority.setTodoStatus('g', 'fix-login', 'done', Date.now(), undefined, { strategy: 'merge', checkout });
      for (let round = 0; round < 5; round += 1) {
        const results = await Promise.all([finish(a, 'one'), finish(b, 'two')]);
        expect(results.map((result) => result?.kind).sort()).toStrictEqual(['already_done', 'changed']);
        expect(await a.setTodoStatus('g', 'fix-login', 'open', Date.now())).toMatchObject({ kind: 'changed' });
      }
      const kinds = (await a.receipts({ limit: 1000 })).map((row) => (JSON.parse(row.doc) as { kind: string }).kind);
      // Five rounds, one finish each.
      expect(kinds.filter((kind) => kind === 'todo_finished')).toHaveLength(5);
      expect((await a.verifyChain()).ok).toBe(true);
    } finally {
      a.close();
      b.close();
    }
  });
});

describe('PostgreSQL authority: the server clock decides', () => {
  it('a claim stamped by a client clock years away still gets server-time lease times', async () => {
    const { url } = await freshStore();
    const authority: Authority = (await openAuthority(pgEnv(url), { create: true }))!;
    try {
      const goal = '/work/repo';
      await authority.addTodo({ goal, id: 'fix-login', title: 'Fix login', body: '' }, 0);
      const before = Date.now();
      const result = await authority.claim(
        {
          capture: buildCapture({ goal, todo: 'fix-login', agent: 'codex', session: 's1', turn: 't1' }),
          cwd: goal,
          binding: 'prompt',
          owner: 'codex:s1',
          preconditions: { gitHead: 'a'.repeat(40), statusDigest: digestText('') },
          ttlSeconds: 60,
        },
        1_800_000_000_000,
      );
      const after = Date.now();
      expect(result.kind).toBe('acquired');
      if (result.kind !== 'acquired') return;
      // Server and test share this machine's clock: the lease starts between before and after.
      expect(result.lease.acquiredAt).toBeGreaterThanOrEqual(before - 1000);
      expect(result.lease.acquiredAt).toBeLessThanOrEqual(after + 1000);
      expect(result.lease.expiresAt - result.lease.acquiredAt).toBe(60_000);
      const todo = await authority.getTodo(goal, 'fix-login');
      expect(Math.abs(todo!.createdAt - before)).toBeLessThan(5000);
      expect((await authority.verifyChain()).ok).toBe(true);
    } finally {
      authority.close();
    }
  });
});

describe('PostgreSQL authority: store_meta', () => {
  it('an open reads store_meta once, in its first statement; a long-lived connection sees the newest checkpoint move (identity and version kept from the open)', async () => {
    const { url } = await freshStore();
    const query = vi.spyOn(pg.Client.prototype, 'query');
    let reader: Authority;
    try {
      reader = (await openAuthority(pgEnv(url), { create: false }))!;
      // The schema is checked with the connection's first statement, in its message (no round trip
      // of its own), and never again.
      const metaReads = () => query.mock.calls.filter(([text]) => typeof text === 'string' && /FROM turnkeeper\.store_meta/.test(text));
      expect(metaReads()).toHaveLength(0);
      await reader.listTodos();
      expect(metaReads()).toHaveLength(1);
      expect(metaReads()[0]![0]).toMatch(/FROM turnkeeper\.store_meta; SELECT/);
      await reader.listTodos();
      await reader.activeLeaseOfOwner('codex:s1');
      expect(metaReads()).toHaveLength(1);
    } finally {
      query.mockRestore();
    }
    const writer = (await openAuthority(pgEnv(url), { create: true }))!;
    try {
      const origin = await checkpointsOf(reader)!.origin();
      expect(origin).toBe(await checkpointsOf(writer)!.origin());
      expect(await checkpointsOf(reader)!.latest()).toBeUndefined();
      await writer.addTodo({ goal: '/work/repo', id: 'fix-login', title: 'Fix login', body: '' }, Date.now());
      const first = await checkpointsOf(writer)!.checkpointNow('/work/repo');
      expect(await checkpointsOf(reader)!.latest()).toMatchObject({ seq: first.seq, hash: first.hash });
      await writer.addTodo({ goal: '/work/repo', id: 'fix-logout', title: 'Fix logout', body: '' }, Date.now());
      const second = await checkpointsOf(writer)!.checkpointNow('/work/repo');
      expect(second.seq).toBeGreaterThan(first.seq);
      expect(await checkpointsOf(reader)!.latest()).toMatchObject({ seq: second.seq, hash: second.hash });
      expect((await reader.health()).schemaVersion).toBeGreaterThan(0);
    } finally {
      writer.close();
      reader.close();
    }
  });
});

describe('PostgreSQL authority: the hook path reads through indexes', () => {
  it("fencing (every write tool's pre_tool hook) finds the Owner's latest lease without scanning the team's leases", async () => {
    const { url } = await freshStore();
    const authority = (await openAuthority(pgEnv(url), { create: true }))!;
    // The connection's first statement carries the schema check in its message: spied after it.
    await authority.listTodos();
    const query = vi.spyOn(pg.Client.prototype, 'query');
    let issued: [string, unknown[]][];
    try {
      await authority.latestLeaseOfOwner('codex:s1');
      issued = (query.mock.calls as unknown[][])
        .filter((call) => typeof call[0] === 'string' && /turnkeeper\.leases/.test(call[0]))
        .map((call) => [call[0] as string, call[1] as unknown[]]);
    } finally {
      query.mockRestore();
      authority.close();
    }
    expect(issued.length).toBeGreaterThan(0);
    // A table this small is read whole whatever its indexes: with scans priced out, the Owner is still
    // only a filter unless an index finds it.
    const explain = new pg.Client({ connectionString: url });
    await explain.connect();
    try {
      await explain.query('SET enable_seqscan = off');
      const [text, values] = issued[0]!;
      const plan = JSON.stringify((await explain.query(`EXPLAIN (FORMAT JSON) ${text}`, values)).rows);
      expect(plan, text).toMatch(/"Index Cond":"\(owner = /);
    } finally {
      await explain.end();
    }
  });
});
