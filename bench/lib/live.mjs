// Rows L1–L2 (BENCH_ONLY=live, issue 19): what status and one extension refresh cost as the store
// grows. Each store is built through the product's own write path (Ledger addTodo / claim / renew /
// release / setTodoStatus, in-process, as seedHistory does), with synchronous=OFF on the seeding
// connection only: durability is not what is measured, and fsync per write would make 1M receipts take
// an hour. Stores: R<n> = claim/renew/release cycles up to n receipts, the last HELD cycles still held
// (live work); T100k = 100,000 Todos, 99% of them done, 20 held.
// L1 `status --json`: a cold CLI process, wall time (median of LIVE_RUNS) and peak RSS (GNU time).
// L2 one extension refresh (bench/lib/refreshChild.mjs): statusSnapshot + todosWithStatus + the views'
// nodes + TreeModel.update, in one process per store, LIVE_RUNS refreshes in a row; the median of the
// refreshes after the first (a window refreshes on every change, on one open connection), and that
// process's peak RSS.
import { mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { todoFields } from './store.mjs';
import { CLI, cleanEnv, envInt, peakRss, summary, timed } from './world.mjs';
import { spawnSync } from 'node:child_process';

const LIVE_RUNS = envInt('BENCH_LIVE_RUNS', 10);
const HELD = 20;
const TARGET_MS = 100;
const TARGET_KIB = 250 * 1024;
const TARGET_GROWTH = 1.5;

/** The stores of rows L1–L2: R10k and R100k always, R1M with BENCH_LIVE_1M=1, T100k. */
function sizes() {
  const receipts = [10_000, 100_000, ...(process.env.BENCH_LIVE_1M === '1' ? [1_000_000] : [])];
  return [...receipts.map((n) => ({ name: `R${n >= 1e6 ? `${n / 1e6}M` : `${n / 1e3}k`}`, receipts: n })), { name: 'T100k', todos: 100_000 }];
}

async function openSeeding(product, db) {
  const store = await product.openSqliteAuthority({ path: db, create: true });
  return store;
}

/** After the first write (which applies the product's write mode), seeding writes without fsync. */
const fast = (store) => store.connection.pragma('synchronous = OFF');

async function seedReceipts(product, store, { goal, cwd, receipts, startMs }) {
  const preconditions = product.preconditionsOf(cwd);
  // 8 receipts a cycle: todo_added, capture_bound, lease_acquired, ready_written, 2 lease_renewed,
  // lease_released, todo_status_changed.
  const cycles = Math.ceil(receipts / 8);
  let now = startMs;
  for (let cycle = 0; cycle < cycles; cycle += 1) {
    const id = `hist-${String(cycle).padStart(7, '0')}`;
    await store.addTodo(todoFields(goal, id), now);
    if (cycle === 0) fast(store);
    const session = `019a${String(cycle).padStart(8, '0')}-seed-4f1e-9c2d-${String(cycle).padStart(12, '0')}`;
    const owner = `codex:${session}`;
    const capture = product.buildCapture({ goal, todo: id, agent: 'codex', session, turn: `turn-${cycle}-1` });
    const touch = { owner, agent: 'codex', session, goal, cwd, transcriptPath: `/home/dev/.codex/sessions/rollout-${session}.jsonl` };
    const claimed = await store.claim({ capture, cwd, binding: 'prompt', owner, preconditions, ttlSeconds: 2700, session: touch }, (now += 1_000));
    if (claimed.kind !== 'acquired') throw new Error(`seeding claim of ${id} gave ${claimed.kind}`);
    for (let i = 0; i < 2; i += 1) await store.renew(owner, (now += 61_000), 2700);
    if (cycle < cycles - HELD) {
      const released = await store.release({ goal, todo: id, by: owner, identifiedBy: 'agent_environment', force: false, reason: 'done' }, (now += 5_000));
      if (released.kind !== 'released') throw new Error(`seeding release of ${id} gave ${released.kind}`);
      await store.setTodoStatus(goal, id, 'done', (now += 1_000));
    }
    now += 1_000;
  }
}

async function seedTodos(product, store, { goal, cwd, todos, startMs }) {
  const preconditions = product.preconditionsOf(cwd);
  let now = startMs;
  const open = Math.round(todos / 100);
  for (let i = 0; i < todos; i += 1) {
    await store.addTodo(todoFields(goal, `todo-${String(i).padStart(6, '0')}`), (now += 10));
    if (i === 0) fast(store);
  }
  for (let i = 0; i < todos - open; i += 1) await store.setTodoStatus(goal, `todo-${String(i).padStart(6, '0')}`, 'done', (now += 10));
  for (let i = todos - HELD; i < todos; i += 1) {
    const id = `todo-${String(i).padStart(6, '0')}`;
    const session = `019b${String(i).padStart(8, '0')}-seed-4f1e-9c2d-${String(i).padStart(12, '0')}`;
    const capture = product.buildCapture({ goal, todo: id, agent: 'codex', session, turn: 'turn-1' });
    const claimed = await store.claim({ capture, cwd, binding: 'prompt', owner: `codex:${session}`, preconditions, ttlSeconds: 2700 }, (now += 1_000));
    if (claimed.kind !== 'acquired') throw new Error(`seeding claim of ${id} gave ${claimed.kind}`);
  }
}

/** Builds every store, measures L1 and L2 on each, and returns the table rows. */
export async function liveRows({ product, root, repo, goal, scratch, log, bundle }) {
  const measurements = [];
  const comparisons = [];
  const bySize = {};
  const ms = (v) => `${v.toFixed(1)} ms`;
  const mb = (kib) => `${(kib / 1024).toFixed(0)} MB`;
  for (const size of sizes()) {
    const home = join(root, `tkhome-live-${size.name}`);
    mkdirSync(home, { recursive: true, mode: 0o700 });
    const db = join(home, 'turnkeeper.db');
    const env = cleanEnv(root, home);
    const started = performance.now();
    const store = await openSeeding(product, db);
    const startMs = Date.now() - 200 * 86_400_000;
    if (size.receipts) await seedReceipts(product, store, { goal, cwd: repo, receipts: size.receipts, startMs });
    else await seedTodos(product, store, { goal, cwd: repo, todos: size.todos, startMs });
    const counts = store.connection
      .prepare('SELECT (SELECT seq FROM receipt_head) AS receipts, (SELECT COUNT(*) FROM captures) AS captures, (SELECT COUNT(*) FROM todos) AS todos')
      .get();
    store.connection.pragma('wal_checkpoint(TRUNCATE)');
    store.close();
    const seedS = (performance.now() - started) / 1000;
    log(
      `live store ${size.name}: ${counts.receipts} receipts, ${counts.captures} captures, ${counts.todos} Todos in ${seedS.toFixed(0)} s through the product (${(statSync(db).size / 1e6).toFixed(0)} MB)`,
    );

    // L1: status --json, cold processes.
    const status = () => timed([CLI, 'status', '--json'], { env, cwd: repo });
    const check = status();
    if (check.code !== 0) throw new Error(`status --json failed: ${check.stderr}`);
    const shownCaptures = JSON.parse(check.stdout).captures.length;
    const statusMs = [];
    for (let i = 0; i < LIVE_RUNS; i += 1) statusMs.push(status().ms);
    const statusKib = summary([0, 1, 2].map(() => peakRss([CLI, 'status', '--json'], { env, cwd: repo, scratch }).kib)).median;

    // L2: one extension refresh, in its own process.
    const child = spawnSync(process.execPath, [join(import.meta.dirname, 'refreshChild.mjs'), bundle, db, goal, String(LIVE_RUNS + 1)], {
      encoding: 'utf8',
      env,
      maxBuffer: 1 << 24,
    });
    if (child.status !== 0) throw new Error(`refresh child failed: ${child.stderr}`);
    const refresh = JSON.parse(child.stdout);
    const steady = summary(refresh.times.slice(1));
    bySize[size.name] = { status: summary(statusMs).median, statusKib, refresh: steady.median, refreshKib: refresh.maxRssKiB, first: refresh.times[0] };
    const s = summary(statusMs);
    measurements.push(
      ['L1', `status --json, ${size.name} (${shownCaptures} captures shown)`, String(s.n), ms(s.median), ms(s.p90), ms(s.min), mb(statusKib)],
      [
        'L2',
        `one refresh, ${size.name} (${refresh.shown} rows shown; first ${ms(refresh.times[0])})`,
        String(steady.n),
        ms(steady.median),
        ms(steady.p90),
        ms(steady.min),
        mb(refresh.maxRssKiB),
      ],
    );
    const judge = (value, kib) => (value <= TARGET_MS && kib <= TARGET_KIB ? 'PASS' : 'MISS');
    comparisons.push(
      ['L1', `status --json ${size.name}`, `${ms(s.median)}, ${mb(statusKib)}`, 'target', '', '', '', '≤ 100 ms, ≤ 250 MB', judge(s.median, statusKib)],
      [
        'L2',
        `one refresh ${size.name}`,
        `${ms(steady.median)}, ${mb(refresh.maxRssKiB)}`,
        'target',
        '',
        '',
        '',
        '≤ 100 ms, ≤ 250 MB',
        judge(steady.median, refresh.maxRssKiB),
      ],
    );
  }
  const names = Object.keys(bySize).filter((name) => name.startsWith('R'));
  const [small, large] = [names[0], names[names.length - 1]];
  for (const [row, key, what] of [
    ['L1', 'status', 'status --json'],
    ['L2', 'refresh', 'one refresh'],
  ]) {
    const ratio = bySize[large][key] / bySize[small][key];
    comparisons.push([
      row,
      `${what} growth ${large}/${small}`,
      ms(bySize[large][key]),
      small,
      ms(bySize[small][key]),
      `${ratio.toFixed(2)}×`,
      '',
      `≤ ${TARGET_GROWTH}× (1M/10k)`,
      ratio <= TARGET_GROWTH ? (large === 'R1M' ? 'PASS' : 'PASS (to R100k)') : 'MISS',
    ]);
  }
  return { measurements, comparisons, bySize };
}
