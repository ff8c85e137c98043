// Rows of the PostgreSQL team authority (spec §4), against a real server on 127.0.0.1 started for the
// run (Debian's postgresql, the same harness as the tests), baselines measured in the same run:
//   P1 hook replay vs the floor: the same runtime loading the bundled client, connecting, one SELECT
//      (the floor enables Node's compile cache, as run.mjs's floors do: every advantage the product has).
//   P2 hook claim vs the floor plus one write transaction.
//   P3 64 concurrent hooks from 4 "machines" (TURNKEEPER_HOMEs and clones) vs the CPU bound.
//   P4 verify of a 100,000-receipt chain on the server (cursor-streamed), rate and peak RSS.
// The server runs with fsync on (the test harness turns it off): a commit waits for its WAL flush, so
// P2's floor pays for one durable write transaction as the claim does, and the ratio compares like
// with like. How much that flush costs is the disk's: about 0.1 ms on the 2-core CI machine
// (pg_test_fsync: fdatasync 85 µs), where floor + write is ~1 ms above the read floor; several ms
// on a disk without a write cache, which with fsync off the floor would never have seen.
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { existsSync, writeFileSync } from 'node:fs';
import { build } from 'esbuild';
import { chainRows } from './lib/store.mjs';
import {
  CLI,
  REPO_ROOT,
  cleanEnv,
  cleanup,
  codexPrompt,
  contextText,
  envInt,
  makeRepo,
  makeRoot,
  newSession,
  peakRss,
  promptFor,
  race,
  summary,
  timed,
  TIME_BIN,
} from './lib/world.mjs';

const RUNS = envInt('BENCH_RUNS', 30);
const WARMUP = envInt('BENCH_WARMUP', 3);
const RACE_WIDTH = 64;
const VERIFY_RECEIPTS = envInt('BENCH_VERIFY_RECEIPTS', 100_000);
const log = (text) => process.stderr.write(`bench(pg): ${text}\n`);
const requireHere = createRequire(import.meta.url);

const root = makeRoot();
const scratch = join(root, 'tmp');
let server;
try {
  await main();
} finally {
  await server?.stop();
  if (!process.env.BENCH_KEEP) cleanup(root);
}

async function bundleTo(entry, name) {
  const outfile = join(scratch, name);
  await build({
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node22',
    outfile,
    logLevel: 'warning',
    mainFields: ['module', 'main'],
    nodePaths: [join(REPO_ROOT, 'node_modules')],
    external: ['pg-native', 'pg-cloudflare', 'cloudflare:sockets'],
  });
  return outfile;
}

async function main() {
  const harness = requireHere(await bundleTo(join(REPO_ROOT, 'test/support/postgres.ts'), 'pg-harness.cjs'));
  server = await harness.startPostgres({ settings: { fsync: 'on', full_page_writes: 'on', synchronous_commit: 'on' } });
  await server.createDatabase('bench');
  const url = server.url('bench');
  log(`PostgreSQL ${server.version} on 127.0.0.1:${server.port}`);

  // One repository with an origin, and three more clones of it: four "machines".
  const repo = makeRepo(root);
  execFileSync('git', ['-C', repo, 'remote', 'add', 'origin', 'https://example.invalid/acme/bench.git']);
  const machines = [0, 1, 2, 3].map((i) => {
    const checkout = i === 0 ? repo : join(root, `clone-${i}`);
    if (i > 0) {
      execFileSync('git', ['clone', '-q', repo, checkout]);
      execFileSync('git', ['-C', checkout, 'remote', 'set-url', 'origin', 'https://example.invalid/acme/bench.git']);
    }
    return { checkout, env: { ...cleanEnv(root, join(root, `home-${i}`)), TURNKEEPER_STORE: url } };
  });
  const { env } = machines[0];
  const cli = (args, input = '', at = machines[0]) => timed([CLI, ...args], { input, env: at.env, cwd: at.checkout });
  const must = (run, what) => {
    if (run.code !== 0) throw new Error(`${what}: ${run.stdout} ${run.stderr}`);
    return run;
  };
  must(cli(['store', 'init']), 'store init');
  const claimTodos = Array.from({ length: WARMUP + RUNS + 3 }, (_, i) => `claim-${i}`);
  for (const id of ['pg-replay', 'race', ...claimTodos]) must(cli(['todo', 'add', `Bench ${id}`, '--id', id]), 'todo add');

  const session = newSession();
  let turn = 0;
  const replayInput = () => codexPrompt({ root, repo, session, turn: `turn-${++turn}`, prompt: promptFor('pg-replay') });
  const presented = contextText(must(cli(['hook'], replayInput()), 'first claim').stdout);
  if (!presented?.startsWith('Turnkeeper: Todo pg-replay')) throw new Error(`no claim: ${presented}`);
  const capture = /capture (cap_[0-9a-f]{24})/.exec(presented)[1];

  // Floors: the bundled client (as the product ships it), connect, one SELECT / one write transaction.
  const floorFile = join(scratch, 'pg-floor.js');
  writeFileSync(
    floorFile,
    `const { Client } = require('pg');
     const c = new Client({ connectionString: process.env.TURNKEEPER_STORE, connectionTimeoutMillis: 2000 });
     c.on('error', () => {});
     (async () => {
       await c.connect();
       if (process.argv[2] === 'write') {
         await c.query('BEGIN');
         await c.query("UPDATE turnkeeper.sessions SET last_hook_at = last_hook_at WHERE owner = $1", ['codex:${session}']);
         await c.query('COMMIT');
       } else {
         const r = await c.query('SELECT presentation FROM turnkeeper.ready_captures WHERE capture = $1', ['${capture}']);
         process.stdout.write(JSON.stringify({ hookSpecificOutput: { hookEventName: 'UserPromptSubmit', additionalContext: r.rows[0].presentation } }) + '\\n');
       }
       await c.end();
     })();`,
  );
  // As dist/cli.js (src/cli/launcher.cjs) enables the cache before it loads the bundle, the floor's
  // entry enables it (Node's default directory, in the bench's private TMPDIR) before it loads its own.
  const floorBundle = await bundleTo(floorFile, 'pg-floor.cjs');
  const floor = join(scratch, 'pg-floor-main.cjs');
  writeFileSync(floor, `require('node:module').enableCompileCache?.();\nrequire(${JSON.stringify(floorBundle)});\n`);

  let claimIndex = 0;
  const runners = {
    bare: () => timed(['-e', '0'], { env, cwd: repo }),
    floor: () => must(timed([floor], { env, cwd: repo }), 'floor'),
    floorWrite: () => must(timed([floor, 'write'], { env, cwd: repo }), 'write floor'),
    replay: () => {
      const run = cli(['hook'], replayInput());
      if (contextText(run.stdout) !== presented) throw new Error(`replay differs: ${run.stdout.slice(0, 200)} ${run.stderr}`);
      return run;
    },
    claim: () => {
      const todo = claimTodos[claimIndex++];
      const run = cli(['hook'], codexPrompt({ root, repo, session: newSession(), turn: 'turn-1', prompt: promptFor(todo) }));
      if (!contextText(run.stdout)?.startsWith(`Turnkeeper: Todo ${todo} `)) throw new Error(`claim of ${todo}: ${run.stdout.slice(0, 200)} ${run.stderr}`);
      return run;
    },
  };
  const names = Object.keys(runners);
  for (let i = 0; i < WARMUP; i += 1) for (const name of names) runners[name]();
  const samples = Object.fromEntries(names.map((name) => [name, []]));
  const cpu = Object.fromEntries(names.map((name) => [name, []]));
  for (let i = 0; i < RUNS; i += 1) {
    for (let k = 0; k < names.length; k += 1) {
      const name = names[(i + k) % names.length];
      const run = runners[name]();
      samples[name].push(run.ms);
      cpu[name].push(run.cpuMs);
    }
  }
  log(`P1/P2: ${RUNS} interleaved runs each`);

  // P3: 64 hooks across the four machines, all at once, for one Todo.
  const started = performance.now();
  const machineOf = (i) => machines[i % machines.length];
  const raceRuns = await race(
    Array.from({ length: RACE_WIDTH }, (_, i) =>
      codexPrompt({ root, repo: machineOf(i).checkout, session: newSession(), turn: 'turn-1', prompt: promptFor('race') }),
    ),
    (i) => ({ env: machineOf(i).env, cwd: machineOf(i).checkout }),
  );
  const makespan = performance.now() - started;
  const texts = raceRuns.map((run) => contextText(run.stdout) ?? '');
  const winners = texts.filter((text) => text.startsWith('Turnkeeper: Todo race ')).length;
  const held = texts.filter((text) => text.includes('[lease_held]')).length;
  log(`P3: ${winners} + ${held} of ${RACE_WIDTH}`);

  // P4: a 100,000-receipt chain on the server, inserted by the independent mirror, then verified.
  const pg = requireHere(join(REPO_ROOT, 'node_modules/pg'));
  const admin = new pg.Client({ connectionString: server.url('bench') });
  await admin.connect();
  const head = (await admin.query('SELECT seq::int8 AS seq, hash FROM turnkeeper.receipt_head WHERE id = 1')).rows[0];
  await admin.query('ALTER TABLE turnkeeper.receipts DISABLE TRIGGER receipts_notify');
  await admin.query('BEGIN');
  let batch = [];
  let last;
  const flush = async () => {
    if (batch.length === 0) return;
    await admin.query('INSERT INTO turnkeeper.receipts (seq, doc, hash) SELECT * FROM unnest($1::int8[], $2::text[], $3::text[])', [
      batch.map((r) => r.seq),
      batch.map((r) => r.text),
      batch.map((r) => r.hash),
    ]);
    batch = [];
  };
  for (const row of chainRows({ n: VERIFY_RECEIPTS, goal: 'goal_bench', startMs: Date.now() - 86_400_000, head: { seq: Number(head.seq), hash: head.hash } })) {
    batch.push(row);
    last = row;
    if (batch.length === 5000) await flush();
  }
  await flush();
  await admin.query('UPDATE turnkeeper.receipt_head SET seq = $1, hash = $2 WHERE id = 1', [last.seq, last.hash]);
  await admin.query('COMMIT');
  await admin.query('ALTER TABLE turnkeeper.receipts ENABLE TRIGGER receipts_notify');
  await admin.end();
  const total = last.seq;
  const verifyRuns = [];
  for (let i = 0; i < 5; i += 1) {
    const run = cli(['verify', '--json']);
    const report = JSON.parse(run.stdout);
    if (!report.ok || report.verified !== total) throw new Error(`verify did not accept the seeded chain: ${run.stdout.slice(0, 300)}`);
    verifyRuns.push(run.ms);
  }
  const rss = existsSync(TIME_BIN) ? peakRss([CLI, 'verify', '--json'], { env, cwd: repo, scratch }).kib : undefined;

  const s = Object.fromEntries(names.map((name) => [name, summary(samples[name])]));
  const meanCpu = (name) => summary(cpu[name]).mean;
  const v = summary(verifyRuns);
  const rate = total / (v.median / 1000);
  const slowest = Math.max(...raceRuns.map((run) => run.ms));
  const cpuBound = (RACE_WIDTH * meanCpu('claim')) / cpus().length;
  const ms = (x) => `${x.toFixed(1)} ms`;
  const rows = [
    [
      'P1',
      'hook replay (team store)',
      ms(s.replay.median),
      'floor: client + connect + 1 SELECT',
      ms(s.floor.median),
      (s.replay.median / s.floor.median).toFixed(2) + '×',
      '≤ 1.3×',
      s.replay.median / s.floor.median <= 1.3 ? 'PASS' : 'MISS',
    ],
    ['P1', 'floor', ms(s.floor.median), 'bare node', ms(s.bare.median), (s.floor.median / s.bare.median).toFixed(2) + '×', '—', 'info'],
    [
      'P2',
      'hook claim (team store)',
      ms(s.claim.median),
      'floor + 1 write txn',
      ms(s.floorWrite.median),
      (s.claim.median / s.floorWrite.median).toFixed(2) + '×',
      '≤ 1.5×',
      s.claim.median / s.floorWrite.median <= 1.5 ? 'PASS' : 'MISS',
    ],
    [
      'P3',
      `race ×${RACE_WIDTH} over 4 machines: slowest`,
      ms(slowest),
      `CPU bound ${RACE_WIDTH}×cpu/${cpus().length}`,
      ms(cpuBound),
      (slowest / cpuBound).toFixed(2) + '×',
      '—',
      'info',
    ],
    [
      'P3',
      'race outcome',
      `${winners}+${held}`,
      `1 winner + ${RACE_WIDTH - 1} [lease_held]`,
      `makespan ${ms(makespan)}`,
      '',
      'exact',
      winners === 1 && held === RACE_WIDTH - 1 ? 'PASS' : 'FAIL',
    ],
    [
      'P4',
      `verify --json, ${total.toLocaleString('en-US')} receipts on the server`,
      `${Math.round(rate / 1000)}k/s`,
      'median of 5',
      ms(v.median),
      '',
      '≥ 150k/s',
      rate >= 150_000 ? 'PASS' : 'MISS',
    ],
    ['P4', 'verify peak RSS', rss ? `${(rss / 1024).toFixed(1)} MB` : 'n/a', '', '', '', '—', 'info'],
  ];
  const header = ['row', 'measurement', 'value', 'baseline', 'base', 'ratio', 'target', 'result'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  console.log(
    `\nPostgreSQL team authority rows · server ${server.version} on loopback · node ${process.version} · ${cpus().length} cpus · loadavg ${loadavg()[0].toFixed(2)}`,
  );
  for (const line of [header, header.map((_, i) => '-'.repeat(widths[i])), ...rows])
    console.log(line.map((cell, i) => String(cell).padEnd(widths[i])).join('  '));
  console.log(
    'BENCH_PG_JSON ' +
      JSON.stringify({
        runs: RUNS,
        summaries: s,
        cpuMeans: Object.fromEntries(names.map((n) => [n, meanCpu(n)])),
        race: { winners, held, slowest, makespan, cpuBound },
        verify: { receipts: total, medianMs: v.median, rate, rssKiB: rss },
      }),
  );
}
