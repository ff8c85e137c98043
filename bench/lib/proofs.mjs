// Rows B1–B2 (issue 18): what the Merkle tree costs and buys.
//
// B1 `turnkeeper receipts prove <seq> --size <n> --json` on a large store (BENCH_PROVE_RECEIPTS,
//    default 1,000,000, seeded with the mirror of bench/lib/store.mjs: receipts and their tree rows)
//    against the floor of a single indexed row read (`node -e`: load better-sqlite3, open the store,
//    read one receipt by seq, print it), as cold processes, interleaved, at random seqs; and the same
//    two in-process (Checkpoints.prove, with its signature check, vs one prepared `get`).
// B2 a checkpoint's extra cost on a claim at the default interval (N = 100), amortized: claims
//    in-process through the product (Ledger + Checkpoints, key, witness), each timed; the claims that
//    signed against those that did not, times the share of claims that sign.
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { appendChain, DRIVER, todoFields } from './store.mjs';
import { CLI, cleanEnv, envInt, summary, timed } from './world.mjs';

const PROVE_RECEIPTS = envInt('BENCH_PROVE_RECEIPTS', 1_000_000);
const SEED_CHUNK = 100_000;
const IN_PROCESS_CALLS = 2000;
const CLAIM_BLOCKS = envInt('BENCH_CLAIM_BLOCKS', 20);
/** 33 claims append 99 receipts: about one automatic checkpoint per block at N = 100. */
const CLAIMS_PER_BLOCK = 33;

const random = (size) => 1 + Math.floor(Math.random() * size);

export async function proofRows({ root, repo, product, runs, warmup, log, fail }) {
  const home = join(root, 'tkhome-prove');
  const db = join(home, 'turnkeeper.db');
  const env = cleanEnv(root, home);
  const store = await product.openSqliteAuthority({ path: db, create: true });
  await store.addTodo(todoFields(repo, 'prove-seed'), Date.now());
  const seedStart = performance.now();
  for (let left = PROVE_RECEIPTS; left > 0; left -= SEED_CHUNK)
    appendChain(store.connection, { n: Math.min(SEED_CHUNK, left), goal: repo, startMs: Date.now() - 90 * 86_400_000 });
  store.connection.pragma('wal_checkpoint(TRUNCATE)');
  store.close();
  const seedS = (performance.now() - seedStart) / 1000;

  // The first checkpoint over the tree walks the whole chain once (an upgraded store's first) and
  // recomputes the root, which also checks the seeding mirror against the product.
  const first = timed([CLI, 'checkpoint', '--json'], { env, cwd: repo });
  if (first.code !== 0) fail(`checkpoint of the proof store failed: ${first.stdout.slice(0, 300)} ${first.stderr.slice(0, 300)}`);
  const size = JSON.parse(first.stdout).seq;
  log(`row B1: proof store of ${size} receipts seeded in ${seedS.toFixed(1)} s; its first checkpoint (a walk of every receipt) ${first.ms.toFixed(0)} ms`);

  const prove = (seq) => {
    const run = timed([CLI, 'receipts', 'prove', String(seq), '--size', String(size), '--json'], { env, cwd: repo });
    const out = run.code === 0 ? JSON.parse(run.stdout) : undefined;
    if (!out || out.index !== seq - 1 || out.size !== size || out.proof.length < 10)
      fail(`receipts prove ${seq} failed: ${run.stdout.slice(0, 300)} ${run.stderr}`);
    return run;
  };
  const floor = (seq) => {
    const script = `require('node:module').enableCompileCache?.(); const Database = require(${JSON.stringify(DRIVER)});
      const db = new Database(${JSON.stringify(db)}, { fileMustExist: true });
      const row = db.prepare('SELECT seq, doc, hash FROM receipts WHERE seq = ?').get(${seq});
      if (!row) process.exit(3);
      process.stdout.write(JSON.stringify(row) + '\\n');
      db.close();`;
    const run = timed(['-e', script], { env, cwd: repo });
    if (run.code !== 0) fail(`the row-read floor failed: ${run.stderr}`);
    return run;
  };
  for (let i = 0; i < warmup; i += 1) (prove(random(size)), floor(random(size)));
  const cli = { prove: [], floor: [] };
  for (let i = 0; i < runs; i += 1) {
    const seq = random(size);
    if (i % 2 === 0) (cli.prove.push(prove(seq).ms), cli.floor.push(floor(seq).ms));
    else (cli.floor.push(floor(seq).ms), cli.prove.push(prove(seq).ms));
  }

  // In-process: the product's prove (stored root, proof rows, inclusion check, note signature check) vs one indexed row read.
  const ledger = await product.openSqliteAuthority({ path: db, create: false, checkpoints: env });
  const checkpoints = product.checkpointsOf(ledger);
  const row = ledger.connection.prepare('SELECT seq, doc, hash FROM receipts WHERE seq = ?');
  const perCall = async (work) => {
    for (let i = 0; i < 100; i += 1) await work(random(size));
    const start = performance.now();
    for (let i = 0; i < IN_PROCESS_CALLS; i += 1) await work(random(size));
    return ((performance.now() - start) * 1000) / IN_PROCESS_CALLS;
  };
  const inProcess = {
    proveUs: await perCall(async (seq) => {
      const out = await checkpoints.prove(seq, size);
      if (!out.ok) fail(`prove ${seq}: ${out.message}`);
    }),
    rowUs: await perCall(async (seq) => {
      if (!row.get(seq)) fail(`no receipt ${seq}`);
    }),
  };
  ledger.close();
  log(`row B1: ${runs} interleaved cold prove/row-read pairs; in-process prove ${inProcess.proveUs.toFixed(1)} µs, row read ${inProcess.rowUs.toFixed(1)} µs`);

  // B2: in-process claims through a store handle that checkpoints at the default N, each timed; the
  // claims that signed (they appended a `checkpoint` receipt) against those that did not, same handle.
  const chome = join(root, 'tkhome-claims');
  const cdb = join(chome, 'turnkeeper.db');
  const cenv = cleanEnv(root, chome);
  const todos = Array.from({ length: CLAIM_BLOCKS * CLAIMS_PER_BLOCK + 10 }, (_, i) => `b2-${String(i).padStart(4, '0')}`);
  const seedStore = await product.openSqliteAuthority({ path: cdb, create: true });
  for (const id of todos) await seedStore.addTodo(todoFields(repo, id), Date.now());
  seedStore.close();
  const claims = await product.openSqliteAuthority({ path: cdb, create: false, checkpoints: { ...cenv, TURNKEEPER_CHECKPOINT_EVERY: undefined } });
  const head = claims.connection.prepare('SELECT seq FROM receipt_head WHERE id = 1').pluck();
  const preconditions = product.preconditionsOf(repo);
  let now = Date.now();
  const timesOf = { signing: [], plain: [] };
  for (let next = 0; next < todos.length; next += 1) {
    const session = `019b${String(next).padStart(4, '0')}-b2-4f1e-9c2d-${String(next).padStart(12, '0')}`;
    const owner = `codex:${session}`;
    const capture = product.buildCapture({ goal: repo, todo: todos[next], agent: 'codex', session, turn: 'turn-1' });
    const touch = { owner, agent: 'codex', session, goal: repo, cwd: repo, transcriptPath: null };
    const before = head.get();
    const start = performance.now();
    const claimed = await claims.claim({ capture, cwd: repo, binding: 'prompt', owner, preconditions, ttlSeconds: 2700, session: touch }, (now += 1_000));
    const ms = performance.now() - start;
    if (claimed.kind !== 'acquired') fail(`B2 claim of ${todos[next]} gave ${claimed.kind}`);
    if (next < 10) continue; // warm-up: the first claims load the key and node:crypto
    (head.get() - before > 3 ? timesOf.signing : timesOf.plain).push(ms);
  }
  claims.close();
  log(`row B2: ${timesOf.signing.length + timesOf.plain.length} in-process claims at N=100; ${timesOf.signing.length} signed a checkpoint`);
  return { size, seedS, firstCheckpointMs: first.ms, cli, inProcess, claims: timesOf };
}

/** Rows B1–B2 for the measurement and comparison tables. */
export function proofTableRows(p) {
  if (!p) return { measurements: [], comparisons: [] };
  const ms = (v) => `${v.toFixed(2)} ms`;
  const us = (v) => `${v.toFixed(1)} µs`;
  const prove = summary(p.cli.prove);
  const floor = summary(p.cli.floor);
  const paired = summary(p.cli.prove.map((v, i) => v - p.cli.floor[i])).median;
  const signing = summary(p.claims.signing);
  const plain = summary(p.claims.plain);
  const extra = signing.median - plain.median;
  const share = p.claims.signing.length / (p.claims.signing.length + p.claims.plain.length);
  const amortized = extra * share;
  const line = (row, what, s) => [row, what, String(s.n), ms(s.median), ms(s.p90), ms(s.min), ''];
  const ratio = prove.median / floor.median;
  return {
    measurements: [
      line('B1', `receipts prove --size (${p.size.toLocaleString('en-US')} receipts)`, prove),
      line('B1', 'one indexed receipt read (node -e floor)', floor),
      ['B1', 'in-process: Checkpoints.prove (root, proof, inclusion + note check)', '2000', us(p.inProcess.proveUs), '', '', ''],
      ['B1', 'in-process: one indexed receipt read', '2000', us(p.inProcess.rowUs), '', '', ''],
      ['B1', 'first checkpoint over the tree (walks every receipt once)', '1', ms(p.firstCheckpointMs), '', '', ''],
      line('B2', 'in-process claim that signed a checkpoint (N=100)', signing),
      line('B2', 'in-process claim that did not (same store handle)', plain),
    ],
    comparisons: [
      [
        'B1',
        'receipts prove, cold',
        ms(prove.median),
        'row read',
        ms(floor.median),
        `${ratio.toFixed(2)}×`,
        `paired Δ ${ms(paired)}`,
        '≤ 2×',
        ratio <= 2 ? 'PASS' : 'MISS',
      ],
      [
        'B2',
        'checkpoint per claim at N=100, amortized',
        ms(amortized),
        'plain claim',
        ms(plain.median),
        '',
        `(median signing − median plain = ${ms(extra)}) × ${p.claims.signing.length}/${p.claims.signing.length + p.claims.plain.length} claims`,
        '< 1 ms',
        amortized < 1 ? 'PASS' : 'MISS',
      ],
    ],
  };
}
