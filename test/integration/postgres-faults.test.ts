// Faults between real hook processes and a real PostgreSQL team server, each beside its control:
// the server crashed and restarted in the middle of a claim storm, a COMMIT whose reply never comes
// back, a stalled network, a closed port, a client clock ten minutes off either way, and credentials
// that must never be shown (in the URL, or in a pgpass file).
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ReceiptDocument } from '../../src/core/receipts';
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { contextOf, runCli, type CliRun } from '../support/world';
import { freeLoopbackPort, holdInTransaction, pgEnv, usePostgres } from '../support/postgres';
import { startProxy, type TcpProxy } from '../support/tcpProxy';
import { filesUnder, makeMachine, untilAllReadStdin } from '../support/teamMachine';
import { codexPrompt, outcome, spawnMachine } from '../support/burst';
import { waitFor } from '../support/waitFor';
import { initializeStore, openAuthority } from '../../src/ledger/open';
import type { Authority } from '../../src/store/authority';

const server = usePostgres({ beforeAll, afterAll });
const ORIGIN = 'https://example.invalid/acme/app.git';
const READY = /^Turnkeeper: Todo ([a-z0-9_-]+) · capture (cap_[0-9a-f]{24}) · epoch (\d+)$/m;
/**
 * Spec §4: a server that does not answer is said within the connect bound (2 s); one that stops in
 * the middle of a write within the write budget (TURNKEEPER_BUSY_TIMEOUT_MS, 4 s, enforced by the
 * server) plus the client's 0.5 s grace; start-up on top. 6.5 s, the whole hook process included.
 */
const HOOK_BOUND_MS = 6500;

/** A CLI run; `killed` after RUN_LIMIT_MS: a process that never ends is a finding, not a hung test. */
type Run = CliRun;
const RUN_LIMIT_MS = 30_000;

let root: string;
let databases = 0;
const proxies: TcpProxy[] = [];
const authorities: Authority[] = [];

beforeAll(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'tk-pg-faults-')));
});
afterEach(async () => {
  for (const authority of authorities.splice(0)) authority.close();
  await Promise.all(proxies.splice(0).map((proxy) => proxy.close()));
});
afterAll(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

/** One machine: its own TURNKEEPER_HOME and HOME, a clone of the team's repository, one team store. */
interface Node {
  home: string;
  userHome: string;
  repo: string;
  env: Record<string, string>;
  run(args: string[], options?: { input?: string; env?: Record<string, string | undefined>; onSpawn?: (pid: number) => void }): Promise<Run>;
  prompt(session: string, turn: string, text: string): string;
}

function makeNode(store: string): Node {
  const { userHome, home, checkout: repo, env } = makeMachine(join(root, `node-${++databases}`), { store, origin: ORIGIN });
  return {
    home,
    userHome,
    repo,
    env,
    run: (args, options = {}) => {
      const merged: Record<string, string> = { ...env };
      for (const [key, value] of Object.entries(options.env ?? {})) {
        if (value === undefined) delete merged[key];
        else merged[key] = value;
      }
      return runCli(args, { env: merged, cwd: repo, input: options.input, timeoutMs: RUN_LIMIT_MS, onSpawn: options.onSpawn });
    },
    prompt: (session, turn, text) =>
      JSON.stringify({
        session_id: session,
        turn_id: turn,
        transcript_path: join(userHome, `${session}.jsonl`),
        cwd: repo,
        hook_event_name: 'UserPromptSubmit',
        model: 'gpt-test',
        permission_mode: 'default',
        prompt: text,
      }),
  };
}

/** A fresh database with the schema (as `store init` makes it) and Todos; returns its admin URL. */
async function teamStore(todos: string[]): Promise<{ url: string; name: string; node: Node }> {
  const name = `faults_${++databases}`;
  await server().createDatabase(name);
  const url = server().url(name);
  await initializeStore(pgEnv(url));
  const node = makeNode(url);
  for (const id of todos) {
    const add = await node.run(['todo', 'add', `Work on ${id}`, '--id', id]);
    expect(add.code, add.stderr).toBe(0);
  }
  return { url, name, node };
}

async function open(url: string): Promise<Authority> {
  const authority = (await openAuthority(pgEnv(url), { create: false }))!;
  authorities.push(authority);
  return authority;
}

async function receiptKinds(url: string): Promise<string[]> {
  const rows = await (await open(url)).receipts({ limit: 10_000 });
  return rows.map((row) => (JSON.parse(row.doc) as ReceiptDocument).kind);
}

/** The URL through another port (a proxy, a closed port): same credentials and database. */
const viaPort = (url: string, port: number) => url.replace(/@127\.0\.0\.1:\d+\//, `@127.0.0.1:${port}/`);

/** No SQLite store anywhere on this machine: one authority, no fallback. */
function expectNoLocalStore(node: Node): void {
  const base = join(node.home, '..');
  expect(filesUnder(base).filter((path) => /turnkeeper\.db|\.db(-wal|-shm|-journal)?$/.test(path))).toStrictEqual([]);
}

/** A machine that only ran hooks: nothing in its TURNKEEPER_HOME but the compile cache (docs/architecture.md). */
function expectOnlyHookFiles(node: Node): void {
  expectNoLocalStore(node);
  expect(filesUnder(node.home).filter((path) => !path.startsWith('compile-cache/'))).toStrictEqual([]);
}

describe('the server crashes in the middle of a claim storm', () => {
  it('no duplicate lease, gap-free epochs, a verifying chain; failed hooks said [store_unavailable]', async () => {
    const todos = ['todo-a', 'todo-b', 'todo-c', 'todo-d'];
    const { url, node } = await teamStore(todos);
    const runs: { session: string; todo: string; input: string; run: Promise<Run> }[] = [];
    const fire = (i: number) => {
      const todo = todos[i % todos.length]!;
      const session = `storm-${i}`;
      const input = node.prompt(session, 'turn-1', `#todo:${todo}`);
      runs.push({ session, todo, input, run: node.run(['hook'], { input }) });
    };
    // Releases move epochs along while the storm runs (and while the server is down).
    const releases: Promise<Run>[] = [];
    let i = 0;
    const storm = (async () => {
      for (let wave = 0; wave < 16; wave++) {
        for (let k = 0; k < 4; k++) fire(i++);
        if (wave % 4 === 3) releases.push(node.run(['release', todos[wave % todos.length]!, '--force', '--reason', 'storm']));
        await new Promise((resolve) => setTimeout(resolve, 150));
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 700));
    const killedAt = Date.now();
    await server().stopImmediate();
    await new Promise((resolve) => setTimeout(resolve, 800));
    await server().start();
    const downMs = Date.now() - killedAt;
    await storm;
    const results = await Promise.all(runs.map(async (r) => ({ ...r, result: await r.run })));
    for (const release of await Promise.all(releases)) expect(release.killed, release.stderr).toBe(false);

    const outcome = (text: string) => (READY.test(text) ? 'claimed' : (/\[(lease_held|store_unavailable)\]/.exec(text)?.[1] ?? 'other'));
    const counts: Record<string, number> = {};
    for (const { result, input } of results) {
      expect(result.killed, `a hook never ended: ${input}\n${result.stderr}`).toBe(false);
      expect(result.code).toBe(0);
      expect(result.stderr).not.toMatch(/internal error/i);
      const kind = outcome(contextOf(result.stdout) ?? '');
      counts[kind] = (counts[kind] ?? 0) + 1;
      expect(kind, result.stdout + result.stderr).not.toBe('other');
    }
    console.log(
      `storm: ${results.length} hooks, server down ${downMs} ms: ${JSON.stringify(counts)}, slowest hook ${Math.max(...results.map((r) => r.result.ms))} ms`,
    );
    // The crash was felt: some hooks failed, and said so; others claimed before or after it.
    expect(counts.store_unavailable ?? 0).toBeGreaterThan(0);
    expect(counts.claimed ?? 0).toBeGreaterThan(0);

    const authority = await open(url);
    const leases = await authority.listLeases();
    for (const todo of todos) {
      const mine = leases.filter((lease) => lease.todo === todo);
      expect(mine.filter((lease) => lease.status === 'active').length, todo).toBeLessThanOrEqual(1);
      const epochs = mine.map((lease) => lease.epoch).sort((a, b) => a - b);
      expect(epochs, todo).toStrictEqual(epochs.map((_, k) => k + 1));
    }
    // Every hook that presented a capture names a lease the server really has.
    for (const { result } of results) {
      const match = READY.exec(contextOf(result.stdout) ?? '');
      if (match) expect(leases.find((lease) => lease.capture === match[2])?.epoch).toBe(Number(match[3]));
    }
    const verify = await node.run(['verify', '--json']);
    expect(JSON.parse(verify.stdout)).toMatchObject({ ok: true, breaks: [] });
    // After the restart the same hooks again: a failed one whose claim did commit gets its own lease
    // presented (rule 4); every other one is decided as if it came now. Never two holders.
    for (const { input, session } of results.filter((r) => outcome(contextOf(r.result.stdout) ?? '') === 'store_unavailable')) {
      const again = await node.run(['hook'], { input });
      const text = contextOf(again.stdout) ?? '';
      const held = leases.find((lease) => lease.owner === `codex:${session}` && lease.status === 'active');
      if (held) expect(READY.exec(text)?.[2]).toBe(held.capture);
      else expect(text).toMatch(/Turnkeeper: Todo|\[lease_held\]/);
    }
    const after = await authority.listLeases();
    for (const todo of todos) expect(after.filter((lease) => lease.todo === todo && lease.status === 'active').length).toBeLessThanOrEqual(1);
    expect((await authority.verifyChain()).ok).toBe(true);
    expectNoLocalStore(node);
  });
});

describe('a COMMIT whose reply is lost', () => {
  it('control: through a forwarding proxy the hook claims directly', async () => {
    const { url, node } = await teamStore(['fix-login']);
    const proxy = await startProxy(server().port);
    proxies.push(proxy);
    const run = await node.run(['hook'], { input: node.prompt('s-forward', 't1', '#todo:fix-login'), env: { TURNKEEPER_STORE: viaPort(url, proxy.port) } });
    const text = contextOf(run.stdout) ?? '';
    expect(text, run.stderr).toMatch(READY);
    expect(proxy.drops).toBe(0);
    const authority = await open(url);
    const [lease] = await authority.listLeases();
    expect(lease).toMatchObject({ owner: 'codex:s-forward', epoch: 1, status: 'active' });
    expect(text).toBe((await authority.readReady(lease!.capture))!.presentation);
  });

  it('the server committed, the client never heard: it re-reads and presents the lease that exists', async () => {
    const { url, node } = await teamStore(['fix-login']);
    const proxy = await startProxy(server().port);
    proxies.push(proxy);
    // The message that ends the claim's transaction: a team store sends its receipts and COMMIT in
    // one simple query (src/store/postgres.ts commitText), so the COMMIT is its last statement.
    proxy.mode({ dropReplyAfter: /(^|;)\s*COMMIT\s*;?\s*$/i });
    const run = await node.run(['hook'], { input: node.prompt('s-dropped', 't1', '#todo:fix-login'), env: { TURNKEEPER_STORE: viaPort(url, proxy.port) } });
    // The cut happened: one connection lost right after its COMMIT was done on the server.
    expect(proxy.drops).toBe(1);
    expect(run.code).toBe(0);
    expect(run.stderr).not.toMatch(/internal error/i);
    const text = contextOf(run.stdout) ?? '';
    expect(text, run.stderr).toMatch(READY);
    const authority = await open(url);
    const leases = await authority.listLeases();
    expect(leases).toHaveLength(1);
    expect(leases[0]).toMatchObject({ owner: 'codex:s-dropped', epoch: 1, status: 'active' });
    // What the hook said is the truth on the server: the stored ready capture, byte for byte.
    expect(text).toBe((await authority.readReady(leases[0]!.capture))!.presentation);
    expect(READY.exec(text)?.[2]).toBe(leases[0]!.capture);
    // One claim, not two: the retry found the committed one and replayed it.
    const kinds = await receiptKinds(url);
    expect(kinds.filter((kind) => kind === 'lease_acquired')).toHaveLength(1);
    expect(kinds.filter((kind) => kind === 'capture_bound')).toHaveLength(1);
    expect((await authority.verifyChain()).ok).toBe(true);
  });

  it('a refusal whose COMMIT reply is lost: the retry finds its recorded refusal and records no second one', async () => {
    const { url, node } = await teamStore(['fix-login']);
    const holder = await node.run(['hook'], { input: node.prompt('s-holder', 't1', '#todo:fix-login') });
    expect(contextOf(holder.stdout), holder.stderr).toMatch(READY);
    const proxy = await startProxy(server().port);
    proxies.push(proxy);
    proxy.mode({ dropReplyAfter: /(^|;)\s*COMMIT\s*;?\s*$/i });
    const run = await node.run(['hook'], { input: node.prompt('s-refused', 't1', '#todo:fix-login'), env: { TURNKEEPER_STORE: viaPort(url, proxy.port) } });
    // The cut happened after the refusal was committed; the hook still says who holds the Todo.
    expect(proxy.drops).toBe(1);
    expect(contextOf(run.stdout) ?? '', run.stderr).toContain('[lease_held]');
    // One refusal for one refused turn: a retry that decided afresh recorded the refusal again.
    const kinds = await receiptKinds(url);
    expect(kinds.filter((kind) => kind === 'claim_refused')).toHaveLength(1);
    // Control: the same turn's hook again is a new decision, and is recorded as one.
    const again = await node.run(['hook'], { input: node.prompt('s-refused', 't1', '#todo:fix-login') });
    expect(contextOf(again.stdout) ?? '').toContain('[lease_held]');
    expect((await receiptKinds(url)).filter((kind) => kind === 'claim_refused')).toHaveLength(2);
    expect((await (await open(url)).verifyChain()).ok).toBe(true);
  });

  // Any write, not only a claim: the server says what became of the transaction (pg_xact_status),
  // asked on a new connection. Before, `todo add` failed "the outcome is unknown" either way.
  it('a Todo added, its COMMIT answer lost: the server says it committed, and the command succeeds once', async () => {
    const { url, node } = await teamStore([]);
    const proxy = await startProxy(server().port);
    proxies.push(proxy);
    proxy.mode({ dropReplyAfter: /(^|;)\s*COMMIT\s*;?\s*$/i });
    const add = await node.run(['todo', 'add', 'Fix login', '--id', 'fix-login'], { env: { TURNKEEPER_STORE: viaPort(url, proxy.port) } });
    expect(proxy.drops).toBe(1);
    expect(add.code, add.stderr).toBe(0);
    expect((await receiptKinds(url)).filter((kind) => kind === 'todo_added')).toHaveLength(1);
    expect((await (await open(url)).listTodos()).map((todo) => todo.id)).toStrictEqual(['fix-login']);
  });

  it('a Todo added, its COMMIT cut before the server had it: the server says it rolled back, and the add is made again, once', async () => {
    const { url, node } = await teamStore([]);
    const proxy = await startProxy(server().port);
    proxies.push(proxy);
    proxy.mode({ cutBefore: /(^|;)\s*COMMIT\s*;?\s*$/i });
    const add = await node.run(['todo', 'add', 'Fix login', '--id', 'fix-login'], { env: { TURNKEEPER_STORE: viaPort(url, proxy.port) } });
    expect(proxy.cuts).toBe(1);
    expect(add.code, add.stderr).toBe(0);
    expect((await receiptKinds(url)).filter((kind) => kind === 'todo_added')).toHaveLength(1);
    expect((await (await open(url)).verifyChain()).ok).toBe(true);
  });
});

describe('claims queued on one Todo while its winner commits', () => {
  // A burst on two cores: each hook gets the CPU long after each answer. Claims that read the Todo
  // unclaimed queue for its row behind the winner; they used to take it one after another, each
  // holding it for a turn of its client (read the holder, roll back), so the last of them waited for
  // all the others' turns and passed the 4 s write bound (CI at b53d3b2: one [store_unavailable],
  // 'canceling statement due to statement timeout'). Here a proxy gives each client a 300 ms turn
  // once all of them wait: one after another, the queue drains in 15 turns (4.5 s) by construction;
  // let go together, in the time the server takes, whatever the clients' turns.
  const WAITERS = 16;
  const TURN_MS = 300;

  it(`${WAITERS} claims, each client's turn ${TURN_MS} ms: the queue drains at the winner's commit, not a turn at a time, and each gets [lease_held]`, async () => {
    const { url, name, node } = await teamStore(['fix-login']);
    const proxy = await startProxy(server().port);
    proxies.push(proxy);
    // The waiters' machines: a home has 4 team-store connections for its hooks.
    const homes = Array.from({ length: WAITERS / 4 }, (_, k) =>
      spawnMachine(join(root, `queued-${databases}-${k}`), `m${k}`, { store: viaPort(url, proxy.port), origin: ORIGIN }),
    );
    // Machines that have worked on this repository before (their clones are known to the store).
    for (const [k, home] of homes.entries()) expect((await home.run(['todo', 'add', `Warm ${k}`, '--id', `warm-${k}`])).code).toBe(0);
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      // The winner stops itself inside its claim's transaction, the Todo's row locked by it (its own
      // write bound long enough to outlast the stop).
      let winnerPid = 0;
      const winner = node.run(['hook'], {
        input: node.prompt('s-winner', 't1', '#todo:fix-login'),
        env: { TURNKEEPER_TEST_FAULT: 'claim.inside_transaction=stop', TURNKEEPER_BUSY_TIMEOUT_MS: '12000' },
        onSpawn: (pid) => (winnerPid = pid),
      });
      const stopped = () => winnerPid !== 0 && readFileSync(`/proc/${winnerPid}/stat`, 'utf8').split(') ')[1]!.startsWith('T');
      expect(await waitFor(stopped, 20_000)).toBe(true);
      // The waiters start at one moment (their payloads written together), so each has spent little
      // of its bound by the time all of them wait.
      // (Their bound is long enough for the wait before the winner goes on: what is measured is the
      // queue, and the outcome of each.)
      const waiters = Array.from({ length: WAITERS }, (_, k) => ({
        k,
        home: homes[k % homes.length]!,
        child: homes[k % homes.length]!.start(['hook'], { TURNKEEPER_BUSY_TIMEOUT_MS: '10000' }),
      }));
      await untilAllReadStdin(waiters.map((w) => w.child.pid));
      for (const { k, home, child } of waiters) child.release(codexPrompt(home, `s-waiter-${k}`, 't1', '#todo:fix-login'));
      // Every waiter queued for the Todo's row (its unlocked read found no holder).
      const queued = async () =>
        Number(
          (await admin.query<{ n: string }>("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = $1 AND wait_event_type = 'Lock'", [name])).rows[0]!.n,
        );
      const until = Date.now() + 10_000;
      let waiting = 0;
      while ((waiting = await queued()) < WAITERS && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(waiting).toBe(WAITERS);
      proxy.mode({ slowReplies: TURN_MS });
      const resumed = Date.now();
      process.kill(winnerPid, 'SIGCONT');
      while ((waiting = await queued()) > 0 && Date.now() < resumed + 30_000) await new Promise((resolve) => setTimeout(resolve, 20));
      const drainedMs = Date.now() - resumed;
      console.log(`${WAITERS} claims queued on one Todo's row, client turns ${TURN_MS} ms: the queue drained ${drainedMs} ms after the winner went on`);
      expect(waiting).toBe(0);
      expect(drainedMs).toBeLessThan(((WAITERS - 1) * TURN_MS) / 2);
      const won = await winner;
      expect(contextOf(won.stdout) ?? '', won.stderr).toMatch(READY);
      const runs = await Promise.all(waiters.map((w) => w.child.done));
      expect(runs.map((run) => outcome(run) + (outcome(run) === 'lease_held' ? '' : `: ${run.stdout}${run.stderr}`))).toStrictEqual(
        Array(WAITERS).fill('lease_held'),
      );
      const kinds = await receiptKinds(url);
      expect(kinds.filter((kind) => kind === 'lease_acquired')).toHaveLength(1);
      expect(kinds.filter((kind) => kind === 'claim_refused')).toHaveLength(WAITERS);
      proxy.mode('forward');
      expect((await (await open(url)).verifyChain()).ok).toBe(true);
    } finally {
      await admin.end();
    }
  });
});

describe('a stalled network', () => {
  it('control: the same proxy forwarding claims', async () => {
    const { url, node } = await teamStore(['fix-login']);
    const proxy = await startProxy(server().port);
    proxies.push(proxy);
    const run = await node.run(['hook'], { input: node.prompt('s-ok', 't1', '#todo:fix-login'), env: { TURNKEEPER_STORE: viaPort(url, proxy.port) } });
    expect(contextOf(run.stdout), run.stderr).toMatch(READY);
  });

  it('stalled before the hook connects: [store_unavailable] within the bound, nothing written locally', async () => {
    const { url } = await teamStore(['fix-login']);
    const proxy = await startProxy(server().port);
    proxies.push(proxy);
    proxy.mode('stall');
    const fresh = makeNode(viaPort(url, proxy.port));
    const run = await fresh.run(['hook'], { input: fresh.prompt('s-stall', 't1', '#todo:fix-login') });
    console.log(`stall before connect: hook process ${run.ms} ms`);
    expect(run.code).toBe(0);
    expect(contextOf(run.stdout)).toContain('[store_unavailable]');
    expect(run.ms).toBeLessThanOrEqual(HOOK_BOUND_MS);
    expect(proxy.accepted).toBeGreaterThan(0);
    expectOnlyHookFiles(fresh);
    proxy.mode('forward');
    expect(await (await open(url)).listLeases()).toStrictEqual([]);
  });

  it('a server slow at each start-up exchange: the hook waits while it keeps answering, past the 4 s a connect once had, and claims', async () => {
    const { url } = await teamStore(['fix-login']);
    const proxy = await startProxy(server().port);
    proxies.push(proxy);
    // Each answer of the server's start-up (authentication, then the backend's start) 1.8 s after the
    // one before: no silence near 4 s, and the whole connect well past it, as on busy cores.
    proxy.mode({ slowStartup: 1800 });
    const fresh = makeNode(viaPort(url, proxy.port));
    // Control: a command has no deadline to queue until, and keeps the 4 s bound on its whole connect,
    // which this start-up outlasts: the hook below would otherwise have failed the same way.
    const list = await fresh.run(['todo', 'list']);
    expect(list.code).not.toBe(0);
    expect(list.stderr).toMatch(/cannot connect to the team store .*timeout expired/);
    const run = await fresh.run(['hook'], { input: fresh.prompt('s-slow', 't1', '#todo:fix-login') });
    console.log(`slow start-up: hook process ${run.ms} ms`);
    expect(contextOf(run.stdout), run.stderr).toMatch(READY);
    expect(run.ms).toBeGreaterThan(4000);
    expect((await (await open(url)).listLeases()).map((lease) => lease.todo)).toStrictEqual(['fix-login']);
  });

  it('stalled in the middle of the claim, after waiting for a row lock: still within the bound, nothing committed', async () => {
    const { url } = await teamStore(['fix-login']);
    const proxy = await startProxy(server().port);
    proxies.push(proxy);
    const fresh = makeNode(viaPort(url, proxy.port));
    // The test holds the Todo's row lock, so the hook's claim waits inside its transaction; the
    // network stalls while it waits, and the lock is let go: the server answers, the hook never hears.
    const holder = await holdInTransaction(url, "SELECT 1 FROM turnkeeper.todos WHERE id = 'fix-login' FOR UPDATE");
    try {
      const running = fresh.run(['hook'], { input: fresh.prompt('s-midstall', 't1', '#todo:fix-login') });
      // Statistics views are a snapshot inside a transaction: ask from outside the holder's.
      const waiting = async () =>
        Number(await server().psql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'turnkeeper' AND wait_event_type = 'Lock'"));
      const deadline = Date.now() + 20_000;
      while ((await waiting()) === 0) {
        if (Date.now() > deadline) throw new Error('the hook never waited for the Todo row lock');
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      proxy.mode('stall');
      const stalledAt = Date.now();
      await holder.release();
      const run = await running;
      const afterStall = Date.now() - stalledAt;
      console.log(`stall in the claim transaction: hook process ${run.ms} ms, ${afterStall} ms of it after the stall`);
      expect(run.code).toBe(0);
      expect(run.stderr).not.toMatch(/internal error/i);
      expect(contextOf(run.stdout)).toContain('[store_unavailable]');
      expect(run.ms).toBeLessThanOrEqual(HOOK_BOUND_MS);
      expectOnlyHookFiles(fresh);
    } finally {
      await holder.release();
    }
    // The hook's connection went with it: its transaction never committed.
    proxy.mode('forward');
    expect(await (await open(url)).listLeases()).toStrictEqual([]);
    expect((await receiptKinds(url)).filter((kind) => kind !== 'todo_added')).toStrictEqual([]);
  });
});

describe('a claim that waits for a row lock', () => {
  /** Holds the Todo's row lock from another connection while `during` runs (then lets it go). */
  async function withTodoLocked<T>(url: string, during: (waiting: () => Promise<void>) => Promise<T>): Promise<T> {
    const holder = await holdInTransaction(url, "SELECT 1 FROM turnkeeper.todos WHERE id = 'fix-login' FOR UPDATE");
    try {
      return await during(async () => {
        const deadline = Date.now() + 20_000;
        while (Number(await server().psql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'turnkeeper' AND wait_event_type = 'Lock'")) === 0) {
          if (Date.now() > deadline) throw new Error('the hook never waited for the Todo row lock');
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      });
    } finally {
      await holder.release();
    }
  }

  it('waiting 1.7 s, longer than one statement bound (1.5 s), is waiting its turn: the hook claims', async () => {
    const { url, node } = await teamStore(['fix-login']);
    const run = await withTodoLocked(url, async (waiting) => {
      const running = node.run(['hook'], { input: node.prompt('s-patient', 't1', '#todo:fix-login') });
      await waiting();
      await new Promise((resolve) => setTimeout(resolve, 1700));
      // Wrapped: an async function returning the promise itself would wait for the hook, lock held.
      return { running };
    });
    // The lock was let go when `during` returned; the hook was still waiting then.
    const done = await run.running;
    expect(contextOf(done.stdout), done.stderr).toMatch(READY);
    expect(await (await open(url)).listLeases()).toMatchObject([{ owner: 'codex:s-patient', epoch: 1 }]);
  });

  it('a lock held past the write budget: [store_unavailable] within the bound, nothing committed', async () => {
    const { url, node } = await teamStore(['fix-login']);
    const done = await withTodoLocked(url, async (waiting) => {
      const running = node.run(['hook'], { input: node.prompt('s-impatient', 't1', '#todo:fix-login') });
      await waiting();
      // Held until the hook has given up.
      return running;
    });
    console.log(`lock held past the budget: hook process ${done.ms} ms`);
    expect(contextOf(done.stdout)).toContain('[store_unavailable]');
    expect(done.ms).toBeLessThanOrEqual(HOOK_BOUND_MS);
    expect(await (await open(url)).listLeases()).toStrictEqual([]);
  });
});

describe('an unreachable server', () => {
  it('a closed port: [store_unavailable] within the bound, and no SQLite fallback', async () => {
    const port = await freeLoopbackPort();
    const node = makeNode(`postgres://tk_app:not-used@127.0.0.1:${port}/nothing`);
    const run = await node.run(['hook'], { input: node.prompt('s-closed', 't1', '#todo:fix-login') });
    console.log(`closed port: hook process ${run.ms} ms`);
    expect(run.code).toBe(0);
    expect(contextOf(run.stdout)).toContain('[store_unavailable]');
    expect(run.ms).toBeLessThanOrEqual(HOOK_BOUND_MS);
    expectOnlyHookFiles(node);
    // The other commands say the same, and do not fall back either.
    const status = await node.run(['status']);
    expect(status.code).not.toBe(0);
    expectNoLocalStore(node);
  });
});

describe('a client clock ten minutes off', () => {
  const TTL_S = 600;
  const serverNow = async (name: string) => Number(await server().psql('SELECT (extract(epoch FROM clock_timestamp()) * 1000)::int8', name));

  for (const offset of [600_000, -600_000]) {
    it(`${offset > 0 ? '+' : '−'}10 min: lease times follow the server, doctor reports the skew, one receipt an hour`, async () => {
      const { url, name, node } = await teamStore(['todo-a', 'todo-b']);
      const env = { TURNKEEPER_TEST_CLOCK_OFFSET_MS: String(offset), TURNKEEPER_LEASE_TTL: String(TTL_S) };
      const before = await serverNow(name);
      const claim = await node.run(['hook'], { input: node.prompt('s-skew', 't1', '#todo:todo-a'), env });
      const after = await serverNow(name);
      expect(contextOf(claim.stdout), claim.stderr).toMatch(READY);
      const authority = await open(url);
      const [lease] = await authority.listLeases();
      // The server's clock plus the TTL, not the client's (which is 10 min away).
      expect(lease!.expiresAt).toBeGreaterThanOrEqual(before + TTL_S * 1000 - 2000);
      expect(lease!.expiresAt).toBeLessThanOrEqual(after + TTL_S * 1000 + 2000);
      expect(lease!.acquiredAt).toBeGreaterThanOrEqual(before - 2000);
      expect(lease!.acquiredAt).toBeLessThanOrEqual(after + 2000);
      expect((await receiptKinds(url)).filter((kind) => kind === 'clock_skew_detected')).toHaveLength(1);

      const doctor = await node.run(['doctor', '--json'], { env });
      const report = JSON.parse(doctor.stdout) as { store: { clockSkewMs: number; clockSkewBoundMs: number }; problems: string[] };
      // Server minus client: a client ahead (+) measures a negative skew.
      expect(Math.abs(report.store.clockSkewMs + offset)).toBeLessThan(2000);
      expect(report.problems.some((line) => line.includes('clock') && line.includes(offset > 0 ? 'ahead of' : 'behind'))).toBe(true);
      // A second claim within the hour measures again and writes nothing.
      const second = await node.run(['hook'], { input: node.prompt('s-skew-2', 't1', '#todo:todo-b'), env });
      expect(contextOf(second.stdout), second.stderr).toMatch(READY);
      const skewReceipts = (await (await open(url)).receipts({ limit: 1000 }))
        .map((row) => JSON.parse(row.doc) as { kind: string; detail?: { skewMs?: number } })
        .filter((doc) => doc.kind === 'clock_skew_detected');
      expect(skewReceipts).toHaveLength(1);
      expect(Math.abs(skewReceipts[0]!.detail!.skewMs! + offset)).toBeLessThan(2000);
    });
  }

  it('control: no offset, no skew receipt and no clock problem', async () => {
    const { url, node } = await teamStore(['todo-a']);
    const claim = await node.run(['hook'], { input: node.prompt('s-noskew', 't1', '#todo:todo-a') });
    expect(contextOf(claim.stdout), claim.stderr).toMatch(READY);
    const doctor = await node.run(['doctor', '--json']);
    const report = JSON.parse(doctor.stdout) as { store: { clockSkewMs: number }; problems: string[] };
    expect(Math.abs(report.store.clockSkewMs)).toBeLessThan(1000);
    expect(report.problems.filter((line) => line.includes('clock'))).toStrictEqual([]);
    expect((await receiptKinds(url)).filter((kind) => kind === 'clock_skew_detected')).toHaveLength(0);
  });
});

describe('credentials are never shown', () => {
  // Characters that URL encoding changes, so neither the raw nor the encoded form may leak.
  const PASSWORD = 'Zq9-s3cr3t/pw:with@odd%chars';
  const WRONG = 'Wr0ng-pw-Kx7/also:odd';
  const forms = (password: string) => [password, encodeURIComponent(password), 'Zq9-s3cr3t', 'Wr0ng-pw-Kx7'];

  async function appStore(role: string): Promise<{ name: string; node: Node }> {
    await server().createRole(role, PASSWORD);
    const { name } = await teamStore([]);
    await initializeStore(pgEnv(server().url(name)), { hookRole: role });
    return { name, node: makeNode(server().url(name, role, PASSWORD)) };
  }

  async function everyOutput(node: Node, env: Record<string, string | undefined> = {}): Promise<Run[]> {
    const out: Run[] = [];
    out.push(await node.run(['todo', 'add', 'Fix login', '--id', 'fix-login'], { env }));
    expect(out[0]!.code, out[0]!.stderr).toBe(0);
    const claim = await node.run(['hook'], { input: node.prompt('s-cred', 't1', '#todo:fix-login'), env });
    expect(contextOf(claim.stdout), claim.stderr).toMatch(READY);
    out.push(claim);
    for (const args of [['status'], ['status', '--json'], ['verify'], ['verify', '--json'], ['receipts']]) {
      const run = await node.run(args, { env });
      // The commands worked: a redaction that broke them would prove nothing.
      expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(0);
      out.push(run);
    }
    // doctor exits 1 when it lists a problem (no agent hooks on this bare machine); it did read the store.
    const doctor = await node.run(['doctor', '--json'], { env });
    const report = JSON.parse(doctor.stdout) as { store: { error?: string; receipts?: number } };
    expect(report.store.error, doctor.stdout).toBeUndefined();
    expect(report.store.receipts).toBeGreaterThan(0);
    out.push(doctor, await node.run(['doctor'], { env }));
    return out;
  }

  function expectClean(runs: Run[], secrets: string[]): void {
    for (const run of runs)
      for (const secret of secrets) {
        expect(run.stdout).not.toContain(secret);
        expect(run.stderr).not.toContain(secret);
      }
  }

  it('a password in TURNKEEPER_STORE: not in status, doctor, verify, a failing hook, or any receipt', async () => {
    const { name, node } = await appStore('tk_cred_url');
    const runs = await everyOutput(node);
    // A wrong password: the hook says [store_unavailable], and neither password shows.
    const wrong = { TURNKEEPER_STORE: server().url(name, 'tk_cred_url', WRONG) };
    const failing = await node.run(['hook'], { input: node.prompt('s-wrong', 't1', '#todo:fix-login'), env: wrong });
    expect(contextOf(failing.stdout)).toContain('[store_unavailable]');
    runs.push(
      failing,
      await node.run(['status'], { env: wrong }),
      await node.run(['doctor', '--json'], { env: wrong }),
      await node.run(['verify', '--json'], { env: wrong }),
    );
    expectClean(runs, forms(PASSWORD));
    expectClean(runs, forms(WRONG));
    const docs = await server().psql('SELECT doc FROM turnkeeper.receipts ORDER BY seq', name);
    expect(docs.split('\n').length).toBeGreaterThan(3);
    for (const secret of [...forms(PASSWORD), ...forms(WRONG)]) expect(docs).not.toContain(secret);
    expectNoLocalStore(node);
  });

  it('a password in a pgpass file (PGPASSFILE, mode 0600): the client reads it, and shows it nowhere', async () => {
    const role = 'tk_cred_pgpass';
    const { name } = await appStore(role);
    const node = makeNode(server().url(name, role));
    expect(node.env.TURNKEEPER_STORE).not.toContain(PASSWORD);
    const pgpass = join(node.userHome, 'pgpass');
    // pgpass escapes ':' and '\' in its fields.
    writeFileSync(pgpass, `127.0.0.1:${server().port}:${name}:${role}:${PASSWORD.replace(/[\\:]/g, (c) => `\\${c}`)}\n`, { mode: 0o600 });
    const env = { PGPASSFILE: pgpass };
    const runs = await everyOutput(node, env);
    // Without the file the same URL cannot log in: the password really came from it.
    const without = await node.run(['hook'], { input: node.prompt('s-nopass', 't1', '#todo:fix-login') });
    expect(contextOf(without.stdout)).toContain('[store_unavailable]');
    runs.push(without);
    expectClean(runs, forms(PASSWORD));
    const docs = await server().psql('SELECT doc FROM turnkeeper.receipts ORDER BY seq', name);
    for (const secret of forms(PASSWORD)) expect(docs).not.toContain(secret);
  });
});
