// Issue 19: status, the views and `todo list` read the live rows (active leases and their captures,
// the newest captures, open and blocked Todos, the newest done ones) by indexed queries, and page the
// rest. On SQLite and on PostgreSQL: what the bounded snapshot shows, and the plan of every query those
// reads make, recorded as the product runs them: none is a full scan of leases, captures, receipts,
// receipt_index, todos or ready_captures (EXPLAIN QUERY PLAN; EXPLAIN with enable_seqscan off, so a
// Seq Scan is left only where no index can serve the query).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { initializeStore, openAuthority, openSqliteAuthority } from '../../src/ledger/open';
import type { Authority, ClaimInput } from '../../src/store/authority';
import { buildCapture } from '../../src/core/capture';
import { digestText } from '../../src/core/canonical';
import type { Owner } from '../../src/core/ids';
import { activeLeaseCount, statusSnapshot } from '../../src/doctor/status';
import { pgEnv, usePostgres } from '../support/postgres';

const GOAL = 'goal_0123456789abcdef01234567';
const OTHER = 'goal_fedcba9876543210fedcba98';
const T0 = 1_800_000_000_000;

function claimInput(owner: Owner, turn: string, todo: string, goal = GOAL): ClaimInput {
  const [agent, session] = owner.split(':') as ['codex', string];
  return {
    capture: buildCapture({ goal, todo, agent, session, turn }),
    cwd: '/work/repo',
    binding: 'prompt',
    owner,
    preconditions: { gitHead: 'a'.repeat(40), statusDigest: digestText('') },
    ttlSeconds: 3600,
  };
}

/** Five Todos of GOAL: t0..t3 claimed and released in turn (four released captures), t4 held; one done, one of OTHER held. */
async function seed(a: Authority): Promise<void> {
  let now = T0;
  for (let i = 0; i < 5; i += 1) {
    await a.addTodo({ goal: GOAL, id: `t${i}`, title: `Todo ${i}`, body: '' }, (now += 1000));
    const owner: Owner = `codex:s${i}`;
    expect((await a.claim(claimInput(owner, `turn-${i}`, `t${i}`), (now += 1000))).kind).toBe('acquired');
    if (i < 4)
      expect(
        (await a.release({ goal: GOAL, todo: `t${i}`, by: owner, identifiedBy: 'agent_environment', force: false, reason: 'done' }, (now += 1000))).kind,
      ).toBe('released');
  }
  await a.setTodoStatus(GOAL, 't0', 'done', (now += 1000));
  await a.setTodoStatus(GOAL, 't1', 'done', (now += 1000));
  await a.addTodo({ goal: OTHER, id: 'o1', title: 'Other', body: '' }, (now += 1000));
  expect((await a.claim(claimInput('codex:o1', 'turn-o', 'o1', OTHER), (now += 1000))).kind).toBe('acquired');
  // Dependencies (issue 20): t3 waits on t2 (open), t4's on t0 is done.
  await a.changeDependencies(GOAL, 't3', { add: ['t2'] }, (now += 1000));
  await a.changeDependencies(GOAL, 't4', { add: ['t0'] }, (now += 1000));
}

/** What status, the views and `todo list` read on a change, with the bounds they use. */
async function liveReads(a: Authority): Promise<void> {
  const now = T0 + 60_000;
  await statusSnapshot(a, now, { recent: 50 });
  await statusSnapshot(a, now, { goal: GOAL, recent: 50 });
  await activeLeaseCount(a, GOAL);
  await activeLeaseCount(a);
  // The Receipts view's page of the Goal's receipts (and the store-wide ones).
  await a.receipts({ goal: GOAL, limit: 51 });
  for (const goal of [GOAL, undefined]) {
    await a.todosWithStatus('open', goal);
    await a.todosWithStatus('blocked', goal);
    await a.todosWithStatus('done', goal, 51);
    await a.dependenciesOfLive(goal);
  }
  await a.readyTodos(GOAL, 11);
}

/** The full-scan-able tables: a plan may read them only through an index. */
const TABLES = ['leases', 'captures', 'receipts', 'receipt_index', 'todos', 'ready_captures', 'todo_deps'];

function behaviour(name: string, open: () => Promise<{ authority: Authority; dispose: () => Promise<void> | void }>): void {
  describe(`${name}: the bounded snapshot`, () => {
    it('shows every held capture and the newest `recent` others, says older ones exist, and orders them as the full snapshot does', async () => {
      const { authority: a, dispose } = await open();
      try {
        await seed(a);
        // Before the held lease expires, on whichever clock decided it (a team server's is its own).
        const now = (await a.activeLeases(GOAL))[0]!.expiresAt - 1000;
        const full = await statusSnapshot(a, now, { goal: GOAL });
        expect(full.captures).toHaveLength(5);
        const bounded = await statusSnapshot(a, now, { goal: GOAL, recent: 2 });
        // The newest two: t4 (held) and t3 (released).
        expect(bounded.captures.map((c) => c.todo)).toStrictEqual(['t4', 't3']);
        expect(bounded.olderCaptures).toBe(true);
        // Each shown capture is exactly what the full snapshot says of it, and so is each lease.
        for (const capture of bounded.captures) expect(capture).toStrictEqual(full.captures.find((c) => c.id === capture.id));
        expect(bounded.leases).toStrictEqual(full.leases.filter((l) => bounded.captures.some((c) => c.id === l.capture)));
        expect(bounded.captures.find((c) => c.todo === 't4')!.state).toBe('ready');
        // A held capture older than the page is read too: with recent 0, only the held one.
        const held = await statusSnapshot(a, now, { goal: GOAL, recent: 0 });
        expect(held.captures.map((c) => [c.todo, c.state])).toStrictEqual([['t4', 'ready']]);
        expect(held.leases.map((l) => [l.todo, l.status])).toStrictEqual([['t4', 'active']]);
        // Whole store: OTHER's held capture is there whatever the page.
        const store = await statusSnapshot(a, now, { recent: 0 });
        expect(store.captures.map((c) => c.todo).sort()).toStrictEqual(['o1', 't4']);
        expect((await statusSnapshot(a, now, { goal: GOAL, recent: 10 })).olderCaptures).toBe(false);
      } finally {
        await dispose();
      }
    });

    it('reads Todos by status: open ones all, done ones the newest `limit`, in list order', async () => {
      const { authority: a, dispose } = await open();
      try {
        await seed(a);
        expect((await a.todosWithStatus('open', GOAL)).map((t) => t.id)).toStrictEqual(['t2', 't3', 't4']);
        expect((await a.todosWithStatus('done', GOAL)).map((t) => t.id)).toStrictEqual(['t0', 't1']);
        expect((await a.todosWithStatus('done', GOAL, 1)).map((t) => t.id)).toStrictEqual(['t1']);
        expect((await a.todosWithStatus('open')).map((t) => `${t.goal === GOAL ? 'G' : 'O'}:${t.id}`)).toStrictEqual([
          ...(GOAL < OTHER ? ['G:t2', 'G:t3', 'G:t4', 'O:o1'] : ['O:o1', 'G:t2', 'G:t3', 'G:t4']),
        ]);
        // The edges of the live Todos, and the ready ones: t3 waits on t2, t4 is held, so t2 alone.
        expect((await a.dependenciesOfLive(GOAL)).map((e) => [e.todo, e.dependency, e.status])).toStrictEqual([
          ['t3', 't2', 'open'],
          ['t4', 't0', 'done'],
        ]);
        expect(await a.dependenciesOfLive(OTHER)).toStrictEqual([]);
        expect((await a.readyTodos(GOAL, 10)).map((t) => t.id)).toStrictEqual(['t2']);
        expect((await a.readyTodos(OTHER, 10)).map((t) => t.id)).toStrictEqual([]);
      } finally {
        await dispose();
      }
    });
  });
}

// ---- SQLite ----

async function openSqlite() {
  const dir = mkdtempSync(join(tmpdir(), 'live-rows-'));
  const authority = (await openSqliteAuthority({ path: join(dir, 'turnkeeper.db'), create: true }))!;
  return { authority, dispose: () => (authority.close(), rmSync(dir, { recursive: true, force: true })) };
}

behaviour('SQLite', openSqlite);

describe('SQLite: query plans of status, the views and todo list', () => {
  it('reads every table by an index: no SCAN of a table, no scan of a whole index', async () => {
    const { authority: a, dispose } = await openSqlite();
    try {
      await seed(a);
      const db = a.connection;
      const texts = new Set<string>();
      const prepare = db.prepare.bind(db);
      db.prepare = (text: string) => (texts.add(text), prepare(text));
      // Statements are cached per connection: those prepared before (by seed) are the writes', and the
      // reads are prepared now, on first use.
      await liveReads(a);
      db.prepare = prepare;
      expect(texts.size).toBeGreaterThan(5);
      const plans = [...texts].map((text) => {
        const named = [...text.matchAll(/@(\w+)/g)].map((match) => match[1]!);
        const params =
          named.length > 0
            ? [Object.fromEntries(named.map((name) => [name, null]))]
            : (text.match(/\?/g) ?? []).map(() => (/json_each/.test(text) ? '[]' : null));
        const rows = db.prepare(`EXPLAIN QUERY PLAN ${text}`).all(...params) as { detail: string }[];
        return { text, plan: rows.map((row) => row.detail) };
      });
      const fullScans = plans.flatMap(({ text, plan }) =>
        plan
          .filter((detail) => {
            const scan = /^SCAN (\w+)(?: AS \w+)?(?: USING (?:COVERING )?INDEX (\w+))?/.exec(detail);
            if (!scan) return false;
            const table = scan[1]!;
            const tableName = TABLES.find((name) => text.includes(`FROM ${name} ${table}`) || text.includes(`JOIN ${name} ${table}`)) ?? table;
            if (!TABLES.includes(tableName)) return false;
            // A scan of the partial index of active leases reads the live rows only; a scan of the
            // newest-captures index in its order stops at the LIMIT.
            if (scan[2] === 'leases_one_active_per_owner') return false;
            if ((scan[2] === 'captures_recent' || scan[2] === 'captures_recent_of_goal') && /LIMIT \?/.test(text) && !plan.some((d) => /TEMP B-TREE/.test(d)))
              return false;
            return true;
          })
          .map((detail) => `${detail}   <- ${text.replace(/\s+/g, ' ')}`),
      );
      expect(fullScans).toStrictEqual([]);
      // The pinned plans of the live reads.
      const planOf = (fragment: string) => plans.find((p) => p.text.includes(fragment))?.plan.join(' | ');
      expect(planOf("FROM leases WHERE status = 'active' ORDER BY")).toMatch(/SCAN leases USING INDEX leases_one_active_per_owner/);
      expect(planOf("FROM leases WHERE status = 'active' AND goal = ? ORDER BY")).toMatch(/SEARCH leases USING INDEX leases_one_active_per_todo \(goal=\?\)/);
      expect(planOf('FROM captures ORDER BY created_at DESC, id LIMIT')).toMatch(/SCAN captures USING INDEX captures_recent/);
      expect(planOf('FROM captures WHERE goal = ? ORDER BY created_at DESC, id LIMIT')).toMatch(
        /SEARCH captures USING INDEX captures_recent_of_goal \(goal=\?\)/,
      );
      expect(planOf("i.kind IN ('launch_committed', 'launch_hooked')  ORDER BY")).toMatch(/SEARCH i USING (COVERING )?INDEX receipt_index_by_kind \(kind=\?\)/);
      expect(planOf('SELECT seq, doc, hash FROM receipts WHERE seq IN')).toMatch(
        /SEARCH receipt_index USING (COVERING )?INDEX receipt_index_by_goal \(goal=\? AND seq<\?\)/,
      );
      expect(planOf('SELECT seq, doc, hash FROM receipts WHERE seq IN')).toMatch(
        /SEARCH receipt_index USING (COVERING )?INDEX receipt_index_by_kind \(kind=\? AND seq<\?\)/,
      );
      // issue 20: the ready Todos in the index's order (no sort), each test a key probe; the live edges from the live Todos.
      expect(planOf("FROM todos t WHERE t.status = 'open' AND t.goal = ?")).toMatch(/SEARCH t USING INDEX todos_by_status \(status=\? AND goal=\?\)/);
      expect(planOf("FROM todos t WHERE t.status = 'open' AND t.goal = ?")).not.toMatch(/TEMP B-TREE/);
      expect(planOf("FROM todos t WHERE t.status = 'open' AND t.goal = ?")).toMatch(
        /SEARCH l USING (COVERING )?INDEX leases_one_active_per_todo \(goal=\? AND todo=\?\)/,
      );
      expect(planOf("FROM todos t WHERE t.status = 'open' AND t.goal = ?")).toMatch(/SEARCH d USING PRIMARY KEY \(goal=\? AND todo=\?\)/);
      // From the live Todos outwards (CROSS JOIN fixes the order): never every edge of the Goal, done Todos' included.
      expect(planOf("WHERE t.status IN ('open', 'blocked') AND t.goal = ?")).toMatch(
        /^SEARCH t USING (COVERING )?INDEX todos_by_status \(status=\? AND goal=\?\) \| SEARCH d USING PRIMARY KEY \(goal=\? AND todo=\?\) \| SEARCH u USING PRIMARY KEY/,
      );
      expect(planOf('FROM todos WHERE status = ? AND goal = ? ORDER BY goal DESC')).toMatch(
        /SEARCH todos USING INDEX todos_by_status \(status=\? AND goal=\?\)/,
      );
    } finally {
      dispose();
    }
  });
});

// ---- PostgreSQL ----

const server = usePostgres({ beforeAll, afterAll });
let databases = 0;

async function openPostgres() {
  const name = `live_${process.pid}_${++databases}`;
  await server().createDatabase(name);
  const url = server().url(name);
  await initializeStore(pgEnv(url));
  const authority = (await openAuthority(pgEnv(url), { create: false, busyTimeoutMs: 5000 }))!;
  return { authority, url, dispose: () => authority.close() };
}

behaviour('PostgreSQL', openPostgres);

describe('PostgreSQL: query plans of status, the views and todo list', () => {
  it('reads every table by an index (EXPLAIN with enable_seqscan off: no Seq Scan on a table)', async () => {
    const { authority: a, url, dispose } = await openPostgres();
    const explain = new pg.Client({ connectionString: url });
    try {
      await seed(a);
      // The product's statements and values, as it sends them (the rows' connection, wrapped).
      const client = (a as unknown as { rows: { client: pg.Client } }).rows.client;
      const seen: { text: string; values: unknown[] }[] = [];
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as unknown as { query: unknown }).query = (...args: unknown[]) => {
        if (typeof args[0] === 'string') seen.push({ text: args[0], values: (args[1] as unknown[] | undefined) ?? [] });
        return query(...args);
      };
      await liveReads(a);
      (client as unknown as { query: unknown }).query = query;
      const reads = seen.filter(({ text }) => /^\s*SELECT/i.test(text) && TABLES.some((table) => text.includes(`turnkeeper.${table}`)));
      expect(reads.length).toBeGreaterThan(5);
      await explain.connect();
      await explain.query('SET enable_seqscan = off');
      const fullScans: string[] = [];
      for (const { text, values } of reads) {
        const plan = (await explain.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${text}`, values)).rows.map((row) => row['QUERY PLAN']);
        for (const line of plan)
          if (TABLES.some((table) => new RegExp(`Seq Scan on ${table}\\b`).test(line))) fullScans.push(`${line.trim()}   <- ${text.replace(/\s+/g, ' ')}`);
      }
      expect(fullScans).toStrictEqual([]);
    } finally {
      await explain.end().catch(() => undefined);
      dispose();
    }
  });
});
