// Row group B3 (issue 18 item 4, issue 19 item 1): the commands that read a whole history, at 1k,
// 100k and 1M receipts, each a cold process measured for wall time and peak RSS (GNU time's %M: the
// child's wait4 maxrss), with the ratio of each size to the 1k row of the same run:
//   `verify --json`              the store's chain walk (SQLite, in pages of seq)
//   `receipts export --out F`    verify, sign a checkpoint, write the bundle page by page
//   `verify --bundle F --json`   the bundle read as a stream, the Merkle root folded as it passes
// Targets: verify --bundle peak RSS at 100k ≤ 1.5× the 1k one (B3), and ≤ 200 MB at 1M (issue 19).
// The stores are seeded with bench/lib/store.mjs's mirror (appendChain: receipts and tree rows, a
// Todo through the product first); the first export of each walks every receipt and recomputes the
// tree, which checks the mirror against the product, and is not one of the timed runs.
// BENCH_BUNDLE_SIZES (comma-separated, default 1000,100000,1000000) and BENCH_BUNDLE_RUNS (default 3).
import { spawnSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { appendChain, todoFields } from './store.mjs';
import { CLI, TIME_BIN, cleanEnv, envInt, summary } from './world.mjs';

const SIZES = (process.env.BENCH_BUNDLE_SIZES ?? '1000,100000,1000000').split(',').map(Number);
const RUNS = envInt('BENCH_BUNDLE_RUNS', 3);
const SEED_CHUNK = 100_000;
/** Issue 19: verify --bundle at 1M receipts. */
const RSS_LIMIT_MB = 200;
/** B3: peak RSS at 100k against 1k. */
const RSS_RATIO = 1.5;

/** One cold process under GNU time: wall ms (parent's clock), peak RSS in MB, its output. */
function measured(args, { env, cwd, scratch }) {
  const out = join(scratch, `bundle-time-${process.pid}.txt`);
  const started = performance.now();
  const run = spawnSync(TIME_BIN, ['-f', '%M', '-o', out, process.execPath, ...args], { env, cwd, encoding: 'utf8', maxBuffer: 64 << 20 });
  const ms = performance.now() - started;
  if (run.error) throw run.error;
  const lines = readFileSync(out, 'utf8').trim().split('\n');
  const kib = Number(lines[lines.length - 1]);
  if (!Number.isFinite(kib)) throw new Error(`could not read peak RSS from ${TIME_BIN}: ${lines.join(' | ')}`);
  return { ms, mb: kib / 1024, code: run.status, stdout: run.stdout, stderr: run.stderr };
}

export async function bundleRows({ root, repo, product, log, fail }) {
  const scratch = join(root, 'tmp');
  const rows = [];
  for (const size of SIZES) {
    const home = join(root, `tkhome-bundle-${size}`);
    const db = join(home, 'turnkeeper.db');
    const env = cleanEnv(root, home);
    const at = { env, cwd: repo, scratch };
    const seedStart = performance.now();
    const store = await product.openSqliteAuthority({ path: db, create: true });
    await store.addTodo(todoFields(repo, 'bundle-seed'), Date.now());
    const seeded = store.connection.prepare('SELECT COUNT(*) AS n FROM receipts').pluck().get();
    for (let left = size - seeded; left > 0; left -= SEED_CHUNK)
      appendChain(store.connection, { n: Math.min(SEED_CHUNK, left), goal: repo, startMs: Date.now() - 90 * 86_400_000 });
    store.connection.pragma('wal_checkpoint(TRUNCATE)');
    store.close();
    const seedS = (performance.now() - seedStart) / 1000;

    const bundle = join(root, `bench-bundle-${size}.tkb`);
    const exportRun = () => {
      const run = measured([CLI, 'receipts', 'export', '--out', bundle, '--json'], at);
      const report = run.code === 0 ? JSON.parse(run.stdout) : undefined;
      if (!report?.ok) fail(`receipts export of ${size} failed: ${run.stdout.slice(0, 300)} ${run.stderr.slice(0, 300)}`);
      return { ...run, receipts: report.to };
    };
    const verifyRun = () => {
      const run = measured([CLI, 'verify', '--json'], at);
      const report = JSON.parse(run.stdout || '{}');
      if (run.code !== 0 || !report.ok) fail(`verify of ${size} failed: ${run.stdout.slice(0, 300)} ${run.stderr.slice(0, 300)}`);
      return run;
    };
    const bundleRun = () => {
      const run = measured([CLI, 'verify', '--bundle', bundle, '--json'], at);
      const report = JSON.parse(run.stdout || '{}');
      if (run.code !== 0 || !report.ok) fail(`verify --bundle of ${size} refused the export: ${run.stdout.slice(0, 300)} ${run.stderr.slice(0, 300)}`);
      return { ...run, verified: report.verified };
    };
    // The first export walks every receipt (the store was never signed over its tree): not timed.
    const first = exportRun();
    const row = { size, receipts: first.receipts, firstExportMs: first.ms, seedS, export: [], verify: [], bundle: [] };
    for (let i = 0; i < RUNS; i += 1) {
      row.verify.push(verifyRun());
      row.export.push(exportRun());
      row.bundle.push(bundleRun());
    }
    row.bundleMb = statSync(bundle).size / 1e6;
    row.verified = row.bundle[0].verified;
    rows.push(row);
    log(
      `row B3 at ${size}: seeded in ${seedS.toFixed(1)} s, first export ${first.ms.toFixed(0)} ms, bundle ${row.bundleMb.toFixed(1)} MB, ${RUNS} runs of each`,
    );
  }
  return rows;
}

/** Rows B3 for the measurement and comparison tables: median wall time, highest peak RSS, ratios to the first size. */
export function bundleTableRows(rows) {
  const ms = (v) => `${v.toFixed(0)} ms`;
  const mb = (v) => `${v.toFixed(1)} MB`;
  const commands = [
    ['verify', '`verify --json`'],
    ['export', '`receipts export --out`'],
    ['bundle', '`verify --bundle`'],
  ];
  const stats = (row, name) => {
    const s = summary(row[name].map((run) => run.ms));
    return { ...s, rss: Math.max(...row[name].map((run) => run.mb)) };
  };
  const base = rows[0];
  const measurements = [];
  const comparisons = [];
  for (const row of rows) {
    for (const [name, label] of commands) {
      const s = stats(row, name);
      measurements.push(['B3', `${label}, ${row.receipts.toLocaleString('en-US')} receipts`, String(s.n), ms(s.median), ms(s.p90), ms(s.min), mb(s.rss)]);
    }
  }
  for (const row of rows.slice(1)) {
    for (const [name, label] of commands) {
      const s = stats(row, name);
      const b = stats(base, name);
      const ratio = s.rss / b.rss;
      const judged = name === 'bundle' && row.size === 100_000;
      comparisons.push([
        'B3',
        `${label} peak RSS, ${row.receipts.toLocaleString('en-US')}`,
        mb(s.rss),
        `${base.receipts.toLocaleString('en-US')} receipts`,
        mb(b.rss),
        `${ratio.toFixed(2)}×`,
        `time ${(s.median / b.median).toFixed(1)}× (${ms(s.median)} vs ${ms(b.median)})`,
        judged ? `≤ ${RSS_RATIO}×` : '—',
        judged ? (ratio <= RSS_RATIO ? 'PASS' : 'MISS') : 'info',
      ]);
    }
    if (row.size === 1_000_000) {
      const s = stats(row, 'bundle');
      comparisons.push([
        'B3',
        '`verify --bundle` peak RSS at 1M (issue 19)',
        mb(s.rss),
        'limit',
        mb(RSS_LIMIT_MB),
        `${(s.rss / RSS_LIMIT_MB).toFixed(2)}×`,
        `bundle ${row.bundleMb.toFixed(0)} MB`,
        `≤ ${RSS_LIMIT_MB} MB`,
        s.rss <= RSS_LIMIT_MB ? 'PASS' : 'MISS',
      ]);
    }
  }
  return { measurements, comparisons };
}
