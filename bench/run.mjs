// Turnkeeper benchmark (`npm run bench` = build, then this file). Every measured command is a real
// cold process of the same runtime (process.execPath) running the built dist/cli.js, against stores
// in a temp dir that is removed at the end. Baselines are measured in the same run, interleaved with
// the product runs, so background load hits both alike. Nothing listens on any port.
//
// Env knobs (for development only): BENCH_RUNS (default 30), BENCH_WARMUP (3), BENCH_RACE_REPS (5),
// BENCH_MEM_RUNS (10), BENCH_VERIFY_RECEIPTS (100000), BENCH_KEEP=1 keeps the temp dir,
// BENCH_ONLY=cache runs only row 6 (hook replay with and without the compile cache) and bare node.
// BENCH_ONLY=warm runs only rows W1–W2 (hooks through the native client and the hook server) beside bare node and the cold rows.
// BENCH_ONLY=receipts runs only rows C1–C5 (export, verify --bundle, checkpoint signatures, checkpoints on the claim path).
// BENCH_ONLY=proofs runs only rows B1–B2 (receipts prove on a large store, checkpoints amortized on claims;
// BENCH_PROVE_RECEIPTS, default 1,000,000, sizes its store).
// BENCH_ONLY=live runs only rows L1–L2 (status --json and one extension refresh at R10k, R100k, T100k;
// R1M too with BENCH_LIVE_1M=1; BENCH_LIVE_RUNS, default 10, runs of each; bench/lib/live.mjs).
// BENCH_ONLY=bundle runs only rows B3 (verify, receipts export and verify --bundle at 1k, 100k, 1M
// receipts: wall time and peak RSS, ratios to 1k; BENCH_BUNDLE_SIZES, BENCH_BUNDLE_RUNS; bench/lib/bundle.mjs).
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { appendChain, DRIVER, loadProductStore, seedHistory, todoFields } from './lib/store.mjs';
import { proofRows, proofTableRows } from './lib/proofs.mjs';
import { liveRows } from './lib/live.mjs';
import { bundleRows, bundleTableRows } from './lib/bundle.mjs';
import {
  CLI,
  TIME_BIN,
  WARM_CLIENT,
  childCpuMs,
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
} from './lib/world.mjs';

const RUNS = envInt('BENCH_RUNS', 30);
const WARMUP = envInt('BENCH_WARMUP', 3);
const RACE_REPS = envInt('BENCH_RACE_REPS', 5);
const RACE_WIDTH = 64;
const MEM_RUNS = envInt('BENCH_MEM_RUNS', 10);
const VERIFY_RECEIPTS = envInt('BENCH_VERIFY_RECEIPTS', 100_000);
const HOOK_RECEIPTS = 1_000;
const ONLY = process.env.BENCH_ONLY;
/** Rows C1–C5: exports and bundle verifications of 100,000 receipts are long; a third of RUNS of each. */
const RECEIPT_RUNS = Math.max(3, Math.round(RUNS / 3));
const SIGN_CALLS = 2000;

const major = Number(process.versions.node.split('.')[0]);
if (major < 24) {
  console.error(`bench: needs Node 24 (this is ${process.version}); run it through npm run bench or node_modules/.bin/node`);
  process.exit(2);
}
if (!existsSync(CLI)) {
  console.error(`bench: ${CLI} is missing; run npm run build first (npm run bench does)`);
  process.exit(2);
}

const log = (text) => process.stderr.write(`bench: ${text}\n`);
const fail = (text) => {
  throw new Error(text);
};

// ---- baseline scripts (node -e), each the minimum a hook of that kind cannot avoid ----

// The floors enable the compile cache too (in the bench's private TMPDIR; dist/cli.js keeps its own in
// $TURNKEEPER_HOME/compile-cache), so the driver's JS is cached for them: they get every advantage the
// product gets.
const PRELUDE = `require('node:module').enableCompileCache?.(); const Database = require(${JSON.stringify(DRIVER)});`;
const READ_ROW = `SELECT presentation, ready_digest FROM ready_captures WHERE capture = ?`;

/**
 * Floor of a replay: the same runtime loads better-sqlite3, opens the store and reads the one row a
 * replay must present (and prints it). A replay cannot do less than this, so replay/floor is the
 * overhead of everything Turnkeeper adds (bundle load, parsing, validation, pragmas, lookups).
 */
const readFloor = (db, capture) =>
  `${PRELUDE} const db = new Database(${JSON.stringify(db)}, { fileMustExist: true });
   const row = db.prepare(${JSON.stringify(READ_ROW)}).get(${JSON.stringify(capture)});
   if (!row) process.exit(3);
   process.stdout.write(JSON.stringify({ hookSpecificOutput: { hookEventName: 'UserPromptSubmit', additionalContext: row.presentation } }) + '\\n');
   db.close();`;

/**
 * Floor of a claim: the read floor plus one durable write, i.e. WAL + synchronous=FULL and one small
 * BEGIN IMMEDIATE transaction (a proof-of-life style UPDATE of a seeded session). A claim must at least
 * commit one such transaction; what it costs beyond that is git probing, building and digesting the
 * capture and ready capture, and the extra statements.
 */
const writeFloor = (db, capture, owner) =>
  `${PRELUDE} const db = new Database(${JSON.stringify(db)}, { fileMustExist: true });
   db.pragma('journal_mode = WAL'); db.pragma('synchronous = FULL');
   const row = db.prepare(${JSON.stringify(READ_ROW)}).get(${JSON.stringify(capture)});
   if (!row) process.exit(3);
   const touch = db.prepare('UPDATE sessions SET last_hook_at = ? WHERE owner = ?');
   db.transaction(() => { if (touch.run(Date.now(), ${JSON.stringify(owner)}).changes !== 1) throw new Error('no row'); }).immediate();
   db.close();`;

/** Start-up and open cost of the verify store (head row only): verify wall − this ≈ the chain walk. */
const openFloor = (db) =>
  `${PRELUDE} const db = new Database(${JSON.stringify(db)}, { fileMustExist: true });
   if (!db.prepare('SELECT seq, hash FROM receipt_head WHERE id = 1').get()) process.exit(3);
   db.close();`;

/** What SQLite alone costs to hand every receipt row to JS (no parsing, no hashing). */
const scanFloor = (db) =>
  `${PRELUDE} const db = new Database(${JSON.stringify(db)}, { fileMustExist: true });
   let n = 0; for (const row of db.prepare('SELECT seq, doc, hash FROM receipts ORDER BY seq').raw().iterate()) n += row[1].length > 0 ? 1 : 0;
   if (n === 0) process.exit(3);
   db.close();`;

// ---- main ----

const root = makeRoot();
const scratch = join(root, 'tmp');
const results = { samples: {}, cpu: {}, memory: {}, race: [], checks: {} };
const t0 = performance.now();
const load0 = loadavg()[0];

try {
  await main();
} finally {
  if (process.env.BENCH_KEEP) log(`kept ${root}`);
  else cleanup(root);
}

async function main() {
  // World A: the hook store (rows 1, 2, 4, 5).
  const repo = makeRepo(root);
  const home = join(root, 'tkhome');
  const db = join(home, 'turnkeeper.db');
  const env = cleanEnv(root, home);
  const product = await loadProductStore(scratch);
  // A Goal is the repository (docs/goals.md): seed under the id a hook in `repo` computes.
  const goal = product.resolveGoal(repo).id;
  if (ONLY === 'proofs') {
    results.proofs = await proofRows({ root, repo, product, runs: RUNS, warmup: WARMUP, log, fail });
    const { measurements, comparisons } = proofTableRows(results.proofs);
    console.log(
      [
        `Turnkeeper bench (BENCH_ONLY=proofs) · node ${process.version} · ${cpus().length} cpus · loadavg ${load0.toFixed(2)} → ${loadavg()[0].toFixed(2)}`,
        '',
        ...table(['row', 'measurement', 'n', 'median', 'p90', 'min', 'cpu/proc'], measurements, [0, 0, 1, 1, 1, 1, 1]),
        '',
        ...table(['row', 'comparison', 'value', 'baseline', 'base median', 'ratio', 'spread', 'target', 'result'], comparisons, [0, 0, 1, 0, 1, 1, 0, 0, 0]),
      ].join('\n'),
    );
    return;
  }
  if (ONLY === 'bundle') {
    const { measurements, comparisons } = bundleTableRows(await bundleRows({ root, repo, product, log, fail }));
    console.log(
      [
        `Turnkeeper bench (BENCH_ONLY=bundle) · node ${process.version} · ${cpus().length} cpus · loadavg ${load0.toFixed(2)} → ${loadavg()[0].toFixed(2)} · ${((performance.now() - t0) / 1000).toFixed(0)} s`,
        '',
        ...table(['row', 'measurement', 'n', 'median', 'p90', 'min', 'peak RSS'], measurements, [0, 0, 1, 1, 1, 1, 1]),
        '',
        ...table(['row', 'comparison', 'value', 'baseline', 'base value', 'ratio', 'spread', 'target', 'result'], comparisons, [0, 0, 1, 0, 1, 1, 0, 0, 0]),
      ].join('\n'),
    );
    return;
  }
  if (ONLY === 'live') {
    const { measurements, comparisons } = await liveRows({ product, root, repo, goal, scratch, log, bundle: join(scratch, 'bench-store.cjs') });
    console.log(
      [
        `Turnkeeper bench (BENCH_ONLY=live) · node ${process.version} · ${cpus().length} cpus · loadavg ${load0.toFixed(2)} → ${loadavg()[0].toFixed(2)} · ${((performance.now() - t0) / 1000).toFixed(0)} s`,
        '',
        ...table(['row', 'measurement', 'n', 'median', 'p90', 'min', 'peak RSS'], measurements, [0, 0, 1, 1, 1, 1, 1]),
        '',
        ...table(['row', 'comparison', 'value', 'baseline', 'base median', 'ratio', 'spread', 'target', 'result'], comparisons, [0, 0, 1, 0, 1, 1, 0, 0, 0]),
      ].join('\n'),
    );
    return;
  }
  // Row 7 runs a replay from a linked worktree of the same repository: the Goal lookup follows
  // `.git` (a file there), `gitdir:` and `commondir` without spawning git.
  const worktree = join(root, 'repo-wt');
  execFileSync('git', ['-C', repo, 'worktree', 'add', '-q', '-b', 'bench-wt', worktree], { stdio: 'ignore' });
  if (product.resolveGoal(worktree).id !== goal) fail('the worktree does not resolve to the repository Goal');
  const store = await product.openSqliteAuthority({ path: db, create: true });
  const seeded = await seedHistory(product, store, { goal, cwd: repo, minReceipts: HOOK_RECEIPTS, startMs: Date.now() - 30 * 86_400_000 });
  // Rows 1 and 2 claim one fresh Todo per run on each path (cold, warm).
  const claimTodos = Array.from({ length: 2 * (WARMUP + RUNS) + MEM_RUNS }, (_, i) => `claim-${String(i).padStart(3, '0')}`);
  const raceTodos = Array.from({ length: RACE_REPS }, (_, i) => `race-${i}`);
  for (const id of [...claimTodos, ...raceTodos, 'bench-replay-wt']) await store.addTodo(todoFields(goal, id), Date.now());
  const floorOwner = store.connection.prepare('SELECT owner FROM sessions ORDER BY first_hook_at LIMIT 1').get().owner;
  store.connection.pragma('wal_checkpoint(TRUNCATE)');
  store.close();
  log(`hook store seeded through the product code: ${seeded.receipts} receipts (${seeded.cycles} claim/renew/release cycles)`);

  const cli = (args, input = '') => timed([CLI, ...args], { input, env, cwd: repo });

  // The replay Todo is added and claimed by real cold CLI processes.
  const added = cli(['todo', 'add', 'Make the retry loop keep its error cause', '--id', 'bench-replay', '--body', todoFields(repo, 'x').body]);
  if (added.code !== 0) fail(`todo add failed: ${added.stderr}`);
  const replaySession = newSession();
  const replayPayload = (turn) => codexPrompt({ root, repo, session: replaySession, turn, prompt: promptFor('bench-replay') });
  const first = cli(['hook'], replayPayload('turn-0001'));
  const presented = contextText(first.stdout);
  if (!presented?.startsWith('Turnkeeper: Todo bench-replay · capture cap_'))
    fail(`the first claim did not present a ready capture: ${first.stdout} ${first.stderr}`);
  const replayCapture = /capture (cap_[0-9a-f]{24})/.exec(presented)[1];
  const replayState = () => snapshot(product, db, replayCapture);
  const before = await replayState();

  // The worktree's own replay lease, claimed by a cold hook process running in the worktree.
  const wtSession = newSession();
  const wtPayload = (turn) => codexPrompt({ root, repo: worktree, session: wtSession, turn, prompt: promptFor('bench-replay-wt') });
  const wtFirst = timed([CLI, 'hook'], { input: wtPayload('turn-0001'), env, cwd: worktree });
  const wtPresented = contextText(wtFirst.stdout);
  if (!wtPresented?.startsWith('Turnkeeper: Todo bench-replay-wt · capture cap_'))
    fail(`the worktree claim did not present a ready capture: ${wtFirst.stdout} ${wtFirst.stderr}`);

  // Row 6: what the compile cache buys a cold hook. dist/cli.js keeps it in $TURNKEEPER_HOME/compile-cache
  // (0700, owner checked: contract §10); the same replay with NODE_DISABLE_COMPILE_CACHE=1 has none.
  let turn = 1;
  const noCacheEnv = { ...env, NODE_DISABLE_COMPILE_CACHE: '1' };
  // A replay is the agent sending the same Turn's prompt again (a retry): rule 4 presents the stored
  // bytes and runs no git. The holder's next prompt is a new Turn: the same bytes, and the turn's base
  // recorded first (HEAD and tree: seven git runs, src/checkout/turnChanges.ts): rows 1n and W1n.
  const replayWith = (runEnv, nextTurn = false) => {
    const input = replayPayload(nextTurn ? `turn-${String(++turn).padStart(4, '0')}` : 'turn-0001');
    const run = timed([CLI, 'hook'], { input, env: runEnv, cwd: repo });
    if (contextText(run.stdout) !== presented) fail(`replay did not present the stored bytes: ${run.stdout.slice(0, 200)} ${run.stderr}`);
    return run;
  };
  if (ONLY === 'cache') {
    cacheRowsOnly({ bare: () => timed(['-e', '0'], { env, cwd: repo }), replay: () => replayWith(env), replayNoCache: () => replayWith(noCacheEnv) }, home);
    return;
  }

  // World B: the verify store (row 3), its own TURNKEEPER_HOME; same repo as its Goal.
  const vhome = join(root, 'tkhome-verify');
  const vdb = join(vhome, 'turnkeeper.db');
  const venv = cleanEnv(root, vhome);
  const vstore = await product.openSqliteAuthority({ path: vdb, create: true });
  await vstore.addTodo(todoFields(repo, 'verify-seed'), Date.now());
  const seedStart = performance.now();
  const head = appendChain(vstore.connection, { n: VERIFY_RECEIPTS, goal: repo, startMs: Date.now() - 90 * 86_400_000 });
  vstore.connection.pragma('wal_checkpoint(TRUNCATE)');
  vstore.close();
  const vReceipts = head.seq;
  log(
    `verify store: ${vReceipts} hash-chained receipts in ${((performance.now() - seedStart) / 1000).toFixed(1)} s (${(statSync(vdb).size / 1e6).toFixed(1)} MB)`,
  );
  const verifyArgs = [CLI, 'verify', '--json'];
  const checkVerify = (run) => {
    const report = JSON.parse(run.stdout);
    if (run.code !== 0 || report.ok !== true || report.verified !== vReceipts || report.breaks.length !== 0) {
      fail(`verify --json did not accept the seeded chain: code ${run.code} ${run.stdout.slice(0, 300)} ${run.stderr.slice(0, 300)}`);
    }
  };
  checkVerify(timed(verifyArgs, { env: venv, cwd: repo }));
  log('verify --json says ok:true over the seeded chain');
  const receiptContext = { root, repo, env, venv, vReceipts, product, db, goal, replayWith, presented };
  if (ONLY === 'receipts') {
    await receiptRows(receiptContext);
    console.log(receiptsOnlyReport().join('\n'));
    return;
  }

  // The warm hook path (spec §2): a hook server for this home, started as a hook's client starts one,
  // and hooks through the native client as the shim runs them (rows W1, W2). Measured beside the cold
  // rows in the same interleaved loop.
  const warmServer = spawn(process.execPath, [CLI, 'hook-server', 'serve'], { env, cwd: repo, stdio: ['ignore', 'ignore', 'pipe'] });
  let warmLog = '';
  warmServer.stderr.setEncoding('utf8').on('data', (chunk) => (warmLog += chunk));
  for (const deadline = Date.now() + 20_000; !warmLog.includes('serving on');) {
    if (Date.now() > deadline) fail(`the hook server did not start: ${warmLog}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  process.on('exit', () => warmServer.kill('SIGKILL'));
  const warmHook = (input) => timed([process.execPath, CLI, 'hook'], { input, env, cwd: repo, bin: WARM_CLIENT });

  // ---- the runners ----
  let claimIndex = 0;
  const runners = {
    bare: () => timed(['-e', '0'], { env, cwd: repo }),
    floor: () => {
      const run = timed(['-e', readFloor(db, replayCapture)], { env, cwd: repo });
      if (run.code !== 0) fail(`read floor failed: ${run.stderr}`);
      return run;
    },
    floorWrite: () => {
      const run = timed(['-e', writeFloor(db, replayCapture, floorOwner)], { env, cwd: repo });
      if (run.code !== 0) fail(`write floor failed: ${run.stderr}`);
      return run;
    },
    replay: () => replayWith(env),
    replayWarm: () => {
      const run = warmHook(replayPayload('turn-0001'));
      if (contextText(run.stdout) !== presented || run.stderr !== '')
        fail(`warm replay did not present the stored bytes: ${run.stdout.slice(0, 200)} ${run.stderr}`);
      return run;
    },
    nextTurn: () => replayWith(env, true),
    nextTurnWarm: () => {
      const run = warmHook(replayPayload(`turn-${String(++turn).padStart(4, '0')}`));
      if (contextText(run.stdout) !== presented || run.stderr !== '')
        fail(`warm next turn did not present the stored bytes: ${run.stdout.slice(0, 200)} ${run.stderr}`);
      return run;
    },
    claimWarm: () => {
      const todo = claimTodos[claimIndex++] ?? fail('out of claim Todos');
      const run = warmHook(codexPrompt({ root, repo, session: newSession(), turn: 'turn-0001', prompt: promptFor(todo) }));
      if (!contextText(run.stdout)?.startsWith(`Turnkeeper: Todo ${todo} · capture cap_`) || run.stderr !== '')
        fail(`warm claim of ${todo} failed: ${run.stdout.slice(0, 200)} ${run.stderr}`);
      return run;
    },
    replayNoCache: () => replayWith(noCacheEnv),
    replayWorktree: () => {
      const run = timed([CLI, 'hook'], { input: wtPayload(`turn-${String(++turn).padStart(4, '0')}`), env, cwd: worktree });
      if (contextText(run.stdout) !== wtPresented) fail(`worktree replay did not present the stored bytes: ${run.stdout.slice(0, 200)} ${run.stderr}`);
      return run;
    },
    goal: () => {
      const run = timed([CLI, 'goal', '--json'], { env, cwd: worktree });
      if (run.code !== 0 || JSON.parse(run.stdout).id !== goal) fail(`goal --json in the worktree failed: ${run.stdout.slice(0, 200)} ${run.stderr}`);
      return run;
    },
    goalStoreFree: () => {
      const run = timed([CLI, 'goal', '--json'], { env: { ...env, TURNKEEPER_DB: join(root, 'no-such-store.db') }, cwd: worktree });
      if (run.code !== 0) fail(`goal --json without a store failed: ${run.stderr}`);
      return run;
    },
    claim: () => {
      const todo = claimTodos[claimIndex++] ?? fail('out of claim Todos');
      const run = cli(['hook'], codexPrompt({ root, repo, session: newSession(), turn: 'turn-0001', prompt: promptFor(todo) }));
      if (!contextText(run.stdout)?.startsWith(`Turnkeeper: Todo ${todo} · capture cap_`))
        fail(`claim of ${todo} failed: ${run.stdout.slice(0, 200)} ${run.stderr}`);
      return run;
    },
    verify: () => {
      const run = timed(verifyArgs, { env: venv, cwd: repo });
      checkVerify(run);
      return run;
    },
    verifyOpen: () => {
      const run = timed(['-e', openFloor(vdb)], { env: venv, cwd: repo });
      if (run.code !== 0) fail(`open floor failed: ${run.stderr}`);
      return run;
    },
    verifyScan: () => {
      const run = timed(['-e', scanFloor(vdb)], { env: venv, cwd: repo });
      if (run.code !== 0) fail(`scan floor failed: ${run.stderr}`);
      return run;
    },
  };

  if (ONLY === 'warm') {
    warmRowsOnly(runners);
    return;
  }

  // Warm-up: populates Node's compile cache (dist bundle, driver JS) and the page cache. The verify
  // rows load the same bundle and driver, so one warm-up each (page cache) is enough for them.
  const hookRows = [
    'bare',
    'floor',
    'replay',
    'replayWarm',
    'nextTurn',
    'nextTurnWarm',
    'floorWrite',
    'claim',
    'claimWarm',
    'replayNoCache',
    'replayWorktree',
    'goal',
    'goalStoreFree',
  ];
  const verifyRows = ['verify', 'verifyOpen', 'verifyScan'];
  for (let i = 0; i < WARMUP; i += 1) for (const name of hookRows) runners[name]();
  for (const name of verifyRows) runners[name]();
  results.checks.compileCacheFiles = productCacheFiles(home);
  log(`warm-up done; compile cache holds ${results.checks.compileCacheFiles} files`);

  // Rows 1 and 2, interleaved (rotating order) so drift and background load hit every row alike.
  const stderrSeen = new Set();
  const measure = (names, runs) => {
    for (const name of names) {
      results.samples[name] ??= [];
      results.cpu[name] ??= [];
    }
    for (let i = 0; i < runs; i += 1) {
      for (let k = 0; k < names.length; k += 1) {
        const name = names[(i + k) % names.length];
        const run = runners[name]();
        if (run.stderr) stderrSeen.add(`${name}: ${run.stderr.trim().split('\n')[0]}`);
        results.samples[name].push(run.ms);
        results.cpu[name].push(run.cpuMs);
      }
    }
  };
  measure(hookRows, RUNS);
  log(`rows 1–2 and 6: ${RUNS} interleaved runs each`);
  measure(verifyRows, RUNS);
  log(`row 3: ${RUNS} interleaved runs each`);

  // Row 4: 64 concurrent hooks, distinct sessions, one fresh Todo per repetition.
  for (const todo of raceTodos) {
    const inputs = Array.from({ length: RACE_WIDTH }, () => codexPrompt({ root, repo, session: newSession(), turn: 'turn-0001', prompt: promptFor(todo) }));
    const cpu0 = childCpuMs();
    const runs = await race(inputs, { env, cwd: repo });
    const cpuPerProcessMs = (childCpuMs() - cpu0) / RACE_WIDTH;
    let winners = 0;
    let held = 0;
    const other = [];
    for (const run of runs) {
      const text = contextText(run.stdout) ?? '';
      if (text.startsWith(`Turnkeeper: Todo ${todo} · capture cap_`) && text.includes('epoch 1')) winners += 1;
      else if (text.includes('[lease_held]')) held += 1;
      else other.push({ code: run.code, context: text.slice(0, 300), stderr: run.stderr.slice(0, 1500) });
    }
    const walls = runs.map((run) => run.ms);
    results.race.push({
      todo,
      winners,
      held,
      other,
      slowestMs: Math.max(...walls),
      makespanMs: Math.max(...runs.map((run) => run.sinceFirst)),
      medianMs: summary(walls).median,
      cpuPerProcessMs,
    });
  }
  log(`row 4: ${RACE_REPS} races of ${RACE_WIDTH}`);

  // Row 5: peak RSS through GNU time, interleaved as well.
  if (existsSync(TIME_BIN)) {
    const memRunners = {
      bare: () => peakRss(['-e', '0'], { env, cwd: repo, scratch }),
      floor: () => peakRss(['-e', readFloor(db, replayCapture)], { env, cwd: repo, scratch }),
      replay: () => {
        const run = peakRss([CLI, 'hook'], { input: replayPayload(`turn-${String(++turn).padStart(4, '0')}`), env, cwd: repo, scratch });
        if (contextText(run.stdout) !== presented) fail('replay under time did not present the stored bytes');
        return run;
      },
      claim: () => {
        const todo = claimTodos[claimIndex++] ?? fail('out of claim Todos');
        const run = peakRss([CLI, 'hook'], {
          input: codexPrompt({ root, repo, session: newSession(), turn: 'turn-0001', prompt: promptFor(todo) }),
          env,
          cwd: repo,
          scratch,
        });
        if (!contextText(run.stdout)?.startsWith(`Turnkeeper: Todo ${todo} ·`)) fail(`claim of ${todo} under time failed`);
        return run;
      },
    };
    const names = Object.keys(memRunners);
    for (const name of names) results.memory[name] = [];
    for (let i = 0; i < MEM_RUNS; i += 1) for (const name of names) results.memory[name].push(memRunners[name]().kib);
    results.memory.verify = [];
    for (let i = 0; i < 3; i += 1) {
      const run = peakRss(verifyArgs, { env: venv, cwd: repo, scratch });
      checkVerify(run);
      results.memory.verify.push(run.kib);
    }
    log(`row 5: ${MEM_RUNS} runs each under ${TIME_BIN}`);
  } else {
    results.memory = null;
    log(`row 5 skipped: ${TIME_BIN} is missing`);
  }

  // Rule 4 check over everything above: the replays wrote no lease and no receipt.
  const after = await replayState();
  results.checks.replayWroteNothing = JSON.stringify(before) === JSON.stringify(after);
  results.checks.replayState = { before, after };
  results.checks.hookStoreReceipts = seeded.receipts;
  results.checks.verifyStoreReceipts = vReceipts;
  results.checks.stderr = [...stderrSeen].slice(0, 10);
  await receiptRows(receiptContext);
  results.proofs = await proofRows({ root, repo, product, runs: RUNS, warmup: WARMUP, log, fail });
  report();
}

// ---- rows C1–C5: receipts a third party can verify (docs/receipts.md, "Checkpoints", "Export") ----

/**
 * C1 `receipts export` of the 100,000-receipt verify store (it verifies the chain, signs a checkpoint
 * and writes the bundle); C2 `verify --bundle` of that bundle, no store; C3 one checkpoint signature
 * and one verification, in-process through the product's code; C4 a claim that writes a checkpoint
 * (TURNKEEPER_CHECKPOINT_EVERY=1: every claim crosses) against one that cannot (=0), interleaved; C5 a
 * replay with checkpoints every receipt against the plain replay (a replay appends nothing, so signs nothing).
 */
async function receiptRows({ root, repo, env, venv, vReceipts, product, db, goal, replayWith, presented }) {
  const bundle = join(root, 'bench-export.tkb');
  const exportRun = () => {
    const run = timed([CLI, 'receipts', 'export', '--out', bundle, '--json'], { env: venv, cwd: repo });
    const report = run.code === 0 ? JSON.parse(run.stdout) : undefined;
    if (!report?.ok || report.to < vReceipts) fail(`receipts export failed: ${run.stdout.slice(0, 300)} ${run.stderr.slice(0, 300)}`);
    return { ...run, to: report.to };
  };
  const bundleRun = () => {
    const run = timed([CLI, 'verify', '--bundle', bundle, '--json'], { env: venv, cwd: repo });
    const report = JSON.parse(run.stdout);
    if (run.code !== 0 || !report.ok) fail(`verify --bundle refused the export: ${run.stdout.slice(0, 300)} ${run.stderr.slice(0, 300)}`);
    return { ...run, verified: report.verified };
  };
  const receipts = { export: [], exportCpu: [], bundle: [], bundleCpu: [], bundleVerified: 0, exported: 0 };
  exportRun();
  bundleRun();
  for (let i = 0; i < RECEIPT_RUNS; i += 1) {
    const exported = exportRun();
    receipts.export.push(exported.ms);
    receipts.exportCpu.push(exported.cpuMs);
    receipts.exported = exported.to;
    const verified = bundleRun();
    receipts.bundle.push(verified.ms);
    receipts.bundleCpu.push(verified.cpuMs);
    receipts.bundleVerified = verified.verified;
  }
  log(`rows C1–C2: ${RECEIPT_RUNS} exports and bundle verifications of ${receipts.exported} receipts (bundle ${(statSync(bundle).size / 1e6).toFixed(1)} MB)`);

  // C3, in-process: the key a hook would load, a checkpoint of a 100,000-receipt head.
  const key = product.signingKey({ TURNKEEPER_HOME: join(root, 'tkhome-sign') });
  const text = product.checkpointText({
    origin: `turnkeeper/store/${'0'.repeat(32)}`,
    seq: vReceipts,
    hash: `sha256:${'ab'.repeat(32)}`,
    time: new Date().toISOString(),
  });
  const verifyNote = product.noteVerifier([key]);
  const note = product.signedNote(text, [product.signNote(key, text)]);
  const perCall = (work) => {
    for (let i = 0; i < 100; i += 1) work();
    const start = performance.now();
    for (let i = 0; i < SIGN_CALLS; i += 1) work();
    return ((performance.now() - start) * 1000) / SIGN_CALLS;
  };
  receipts.signUs = perCall(() => product.signedNote(text, [product.signNote(key, text)]));
  receipts.verifyUs = perCall(() => {
    if (!verifyNote(product.parseCheckpoint(note)).ok) fail('the checkpoint did not verify');
  });
  log(`row C3: sign ${receipts.signUs.toFixed(1)} µs, verify ${receipts.verifyUs.toFixed(1)} µs`);

  // C4/C5: claims with and without a checkpoint, and replays, interleaved, in world A.
  const todos = Array.from({ length: 2 * (RECEIPT_RUNS * 3 + WARMUP) }, (_, i) => `ckpt-${String(i).padStart(3, '0')}`);
  const store = await product.openSqliteAuthority({ path: db, create: false });
  for (const id of todos) await store.addTodo(todoFields(goal, id), Date.now());
  store.close();
  let next = 0;
  const claimWith = (every) => {
    const todo = todos[next++] ?? fail('out of checkpoint Todos');
    const run = timed([CLI, 'hook'], {
      input: codexPrompt({ root, repo, session: newSession(), turn: 'turn-0001', prompt: promptFor(todo) }),
      env: { ...env, TURNKEEPER_CHECKPOINT_EVERY: every },
      cwd: repo,
    });
    if (!contextText(run.stdout)?.startsWith(`Turnkeeper: Todo ${todo} · capture cap_`))
      fail(`claim of ${todo} failed: ${run.stdout.slice(0, 200)} ${run.stderr}`);
    return run;
  };
  const runners = {
    claimCheckpoint: () => claimWith('1'),
    claimNoCheckpoint: () => claimWith('0'),
    replayCheckpointEvery1: () => replayWith({ ...env, TURNKEEPER_CHECKPOINT_EVERY: '1' }),
    replayPlain: () => replayWith(env),
  };
  for (let i = 0; i < WARMUP; i += 1) for (const name of Object.keys(runners)) runners[name]();
  const names = Object.keys(runners);
  for (const name of names) receipts[name] = [];
  for (let i = 0; i < RECEIPT_RUNS * 3; i += 1)
    for (let k = 0; k < names.length; k += 1) receipts[names[(i + k) % names.length]].push(runners[names[(i + k) % names.length]]().ms);
  void presented;
  results.receipts = receipts;
  log(`rows C4–C5: ${RECEIPT_RUNS * 3} interleaved claims and replays with and without checkpoints`);
}

/** Rows C1–C5 for the measurement and comparison tables (appended at their ends). */
function receiptTableRows() {
  const r = results.receipts;
  if (!r) return { measurements: [], comparisons: [] };
  const ms = (v) => `${v.toFixed(1)} ms`;
  const us = (v) => `${v.toFixed(1)} µs`;
  const sum = (sample) => summary(sample);
  const exp = sum(r.export);
  const bun = sum(r.bundle);
  const pairedDiff = (a, b) => summary(r[a].map((v, i) => v - r[b][i])).median;
  const bundleRate = r.bundleVerified / (bun.median / 1000);
  const exportRate = r.exported / (exp.median / 1000);
  const claimCost = pairedDiff('claimCheckpoint', 'claimNoCheckpoint');
  const replayCost = pairedDiff('replayCheckpointEvery1', 'replayPlain');
  const line = (row, what, sample, fmt = ms) => {
    const s = sum(sample);
    return [row, what, String(s.n), fmt(s.median), fmt(s.p90), fmt(s.min), ''];
  };
  return {
    measurements: [
      line('C1', `receipts export (${r.exported.toLocaleString('en-US')} receipts)`, r.export),
      line('C2', `verify --bundle (${r.bundleVerified.toLocaleString('en-US')} receipts)`, r.bundle),
      ['C3', 'checkpoint: sign (text + Ed25519 + note)', String(SIGN_CALLS), us(r.signUs), '', '', ''],
      ['C3', 'checkpoint: parse + verify', String(SIGN_CALLS), us(r.verifyUs), '', '', ''],
      line('C4', 'hook claim writing a checkpoint (EVERY=1)', r.claimCheckpoint),
      line('C4', 'hook claim, checkpoints off (EVERY=0)', r.claimNoCheckpoint),
      line('C5', 'hook replay, TURNKEEPER_CHECKPOINT_EVERY=1', r.replayCheckpointEvery1),
      line('C5', 'hook replay', r.replayPlain),
    ],
    comparisons: [
      ['C1', 'export, wall time', `${fmtRate(exportRate)}/s`, `${r.exported} receipts`, ms(exp.median), '', 'verify + sign + write', '—', 'info'],
      [
        'C2',
        'verify --bundle, wall time',
        `${fmtRate(bundleRate)}/s`,
        `${r.bundleVerified} receipts`,
        ms(bun.median),
        '',
        `p90 ${fmtRate(r.bundleVerified / (bun.p90 / 1000))}/s`,
        '≥ 200k/s',
        bundleRate >= 200_000 ? 'PASS' : 'MISS',
      ],
      [
        'C4',
        'checkpoint on a claim',
        ms(claimCost),
        'claim, none',
        ms(sum(r.claimNoCheckpoint).median),
        '',
        'paired median of differences (OpenSSL start-up, key, sign, receipt, witness)',
        '< 1 ms',
        claimCost < 1 ? 'PASS' : 'MISS',
      ],
      // A claim appends 3 receipts; with the default N = 100 one claim in 33 writes a checkpoint. Not
      // measured: the row above times 3/100.
      [
        'C4',
        'per claim at the default N=100, derived (× 3/100)',
        ms((claimCost * 3) / 100),
        'claim, none',
        ms(sum(r.claimNoCheckpoint).median),
        '',
        'derived: measured checkpoint cost × 3/100',
        '< 1 ms',
        (claimCost * 3) / 100 < 1 ? 'PASS' : 'MISS',
      ],
      // A replay appends nothing, so it signs nothing: the difference is noise between two identical
      // processes, reported, not judged.
      [
        'C5',
        'checkpoints on a replay',
        ms(replayCost),
        'replay',
        ms(sum(r.replayPlain).median),
        '',
        'paired median of differences (a replay signs nothing)',
        '—',
        'info',
      ],
    ],
  };
}

/** BENCH_ONLY=receipts: rows C1–C5 alone. */
function receiptsOnlyReport() {
  const { measurements, comparisons } = receiptTableRows();
  return [
    `Turnkeeper bench (BENCH_ONLY=receipts) · node ${process.version} · ${cpus().length} cpus · loadavg ${load0.toFixed(2)} → ${loadavg()[0].toFixed(2)}`,
    '',
    ...table(['row', 'measurement', 'n', 'median', 'p90', 'min', 'cpu/proc'], measurements, [0, 0, 1, 1, 1, 1, 1]),
    '',
    ...table(['row', 'comparison', 'value', 'baseline', 'base median', 'ratio', 'spread', 'target', 'result'], comparisons, [0, 0, 1, 0, 1, 1, 0, 0, 0]),
  ];
}

async function snapshot(product, db, capture) {
  const store = await product.openSqliteAuthority({ path: db, create: false });
  try {
    const c = store.connection;
    return {
      lease: c.prepare('SELECT epoch, version, status, renewed_at, expires_at FROM leases WHERE capture = ?').get(capture),
      receipts: c.prepare('SELECT COUNT(*) AS n FROM receipt_index WHERE capture = ?').get(capture).n,
    };
  } finally {
    store.close();
  }
}

/** Files in the product's compile cache, $TURNKEEPER_HOME/compile-cache (src/cli/launcher.cjs). */
function productCacheFiles(home) {
  const dir = join(home, 'compile-cache');
  return existsSync(dir) ? countFiles(dir) : 0;
}

/** BENCH_ONLY=warm: rows W1–W2 beside bare node and the cold replay and claim, interleaved. */
function warmRowsOnly(runners) {
  const names = ['bare', 'replay', 'replayWarm', 'nextTurn', 'nextTurnWarm', 'claim', 'claimWarm'];
  for (let i = 0; i < WARMUP; i += 1) for (const name of names) runners[name]();
  for (const name of names) results.samples[name] = [];
  for (let i = 0; i < RUNS; i += 1) {
    for (let k = 0; k < names.length; k += 1) {
      const name = names[(i + k) % names.length];
      results.samples[name].push(runners[name]().ms);
    }
  }
  const s = Object.fromEntries(names.map((name) => [name, summary(results.samples[name])]));
  const ms = (v) => `${v.toFixed(1)} ms`;
  const paired = (a, b) => summary(results.samples[a].map((v, i) => v / results.samples[b][i])).median;
  const row = (id, what, name, target) => {
    const r = s[name].median / s.bare.median;
    return [
      id,
      what,
      ms(s[name].median),
      ms(s[name].p90),
      `${r.toFixed(2)}×`,
      `${paired(name, 'bare').toFixed(2)}×`,
      target ?? '—',
      target ? (r <= Number(target.slice(2, -1)) ? 'PASS' : 'MISS') : 'info',
    ];
  };
  console.log(
    [
      `Turnkeeper bench (BENCH_ONLY=warm) · node ${process.version} · ${cpus().length} cpus · loadavg ${load0.toFixed(2)} → ${loadavg()[0].toFixed(2)} · ${RUNS} runs after ${WARMUP} warm-up`,
      '',
      ...table(
        ['row', 'measurement (wall time of the process the agent runs)', 'median', 'p90', 'vs bare node', 'paired', 'target', 'result'],
        [
          ['1', 'bare `node -e 0`', ms(s.bare.median), ms(s.bare.p90), '1.00×', '1.00×', '—', 'info'],
          row('1', 'cold hook replay', 'replay'),
          row('W1', 'warm hook replay (client + server)', 'replayWarm', '≤ 1.1×'),
          row('1n', "cold hook, the holder's next Turn (turn base: 7 git runs)", 'nextTurn'),
          row('W1n', "warm hook, the holder's next Turn", 'nextTurnWarm'),
          row('2', 'cold hook claim', 'claim'),
          row('W2', 'warm hook claim (client + server)', 'claimWarm', '≤ 1.3×'),
        ],
        [0, 0, 1, 1, 1, 1, 0, 0],
      ),
    ].join('\n'),
  );
  console.log(`BENCH_JSON ${JSON.stringify({ node: process.version, only: 'warm', runs: RUNS, warmup: WARMUP, summaryMs: s })}`);
}

/** BENCH_ONLY=cache: warm-up, then rows bare / replay / replay without cache, interleaved, and row 6's comparison. */
function cacheRowsOnly(runners, home) {
  const names = Object.keys(runners);
  for (let i = 0; i < WARMUP; i += 1) for (const name of names) runners[name]();
  results.checks.compileCacheFiles = productCacheFiles(home);
  for (const name of names) {
    results.samples[name] = [];
    results.cpu[name] = [];
  }
  for (let i = 0; i < RUNS; i += 1) {
    for (let k = 0; k < names.length; k += 1) {
      const name = names[(i + k) % names.length];
      const run = runners[name]();
      results.samples[name].push(run.ms);
      results.cpu[name].push(run.cpuMs);
    }
  }
  const s = Object.fromEntries(names.map((name) => [name, summary(results.samples[name])]));
  const ms = (v) => `${v.toFixed(1)} ms`;
  const cpu = (name) => ms(summary(results.cpu[name]).mean);
  const out = [
    `Turnkeeper bench (BENCH_ONLY=cache) · node ${process.version} · ${cpus().length} cpus · loadavg ${load0.toFixed(2)} → ${loadavg()[0].toFixed(2)} · ` +
      `${RUNS} runs after ${WARMUP} warm-up · compile cache ${results.checks.compileCacheFiles} files in $TURNKEEPER_HOME/compile-cache`,
    '',
    ...table(
      ['row', 'measurement (cold processes)', 'n', 'median', 'p90', 'min', 'cpu/proc'],
      [
        ['1', 'bare `node -e 0`', s.bare, 'bare'],
        ['1', 'hook replay (rule 4, stored bytes)', s.replay, 'replay'],
        ['6', 'hook replay, NODE_DISABLE_COMPILE_CACHE=1', s.replayNoCache, 'replayNoCache'],
      ].map(([row, what, sum, name]) => [row, what, String(sum.n), ms(sum.median), ms(sum.p90), ms(sum.min), cpu(name)]),
      [0, 0, 1, 1, 1, 1, 1],
    ),
    '',
    ...table(
      ['row', 'comparison', 'value', 'baseline', 'base median', 'ratio', 'spread', 'target', 'result'],
      [cacheComparison(s)],
      [0, 0, 1, 0, 1, 1, 0, 0, 0],
    ),
  ];
  console.log(out.join('\n'));
  console.log(
    `BENCH_JSON ${JSON.stringify({ node: process.version, only: 'cache', runs: RUNS, warmup: WARMUP, summaryMs: s, childCpuMs: results.cpu, checks: results.checks })}`,
  );
}

/** Row 6's comparison: replay with the compile cache under TURNKEEPER_HOME against the same replay without it. */
function cacheComparison(s) {
  const ms = (v) => `${v.toFixed(1)} ms`;
  const paired = summary(results.samples.replay.map((v, i) => v / results.samples.replayNoCache[i])).median;
  const cpu = summary(results.cpu.replay).mean / summary(results.cpu.replayNoCache).mean;
  return [
    '6',
    'hook replay, cache in TURNKEEPER_HOME',
    ms(s.replay.median),
    'replay without cache',
    ms(s.replayNoCache.median),
    `${(s.replay.median / s.replayNoCache.median).toFixed(2)}×`,
    `saves ${ms(s.replayNoCache.median - s.replay.median)} · paired ${paired.toFixed(2)}× · cpu ${cpu.toFixed(2)}×`,
    '—',
    'info',
  ];
}

function countFiles(dir) {
  let n = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) n += entry.isDirectory() ? countFiles(join(dir, entry.name)) : 1;
  return n;
}

// ---- report ----

function report() {
  const s = Object.fromEntries(Object.entries(results.samples).map(([name, sample]) => [name, summary(sample)]));
  const vReceipts = results.checks.verifyStoreReceipts;
  const race = results.race;
  const raceSlowest = summary(race.map((r) => r.slowestMs));
  const raceMakespan = summary(race.map((r) => r.makespanMs));
  const raceMedian = summary(race.map((r) => r.medianMs));
  const raceOk = race.every((r) => r.winners === 1 && r.held === RACE_WIDTH - 1);
  const mem = results.memory && Object.fromEntries(Object.entries(results.memory).map(([name, sample]) => [name, summary(sample)]));

  const ms = (v) => `${v.toFixed(1)} ms`;
  const mb = (kib) => `${(kib / 1024).toFixed(1)} MB`;
  const ratio = (a, b) => a / b;
  const x = (r) => `${r.toFixed(2)}×`;
  const walkMs = s.verify.median - s.verifyOpen.median;
  const rateWall = vReceipts / (s.verify.median / 1000);
  const rateWallP90 = vReceipts / (s.verify.p90 / 1000);
  const rateWalk = vReceipts / (walkMs / 1000);
  // Paired ratio: median of run-by-run ratios of neighbours in the interleaved loop (drift-proof).
  const paired = (a, b) => summary(results.samples[a].map((v, i) => v / results.samples[b][i])).median;
  // CPU ratio: mean child CPU (user+sys, from /proc/self/stat) — less sensitive to other load than wall time.
  const cpuRatio = (a, b) => summary(results.cpu[a]).mean / summary(results.cpu[b]).mean;
  const replayRatio = ratio(s.replay.median, s.floor.median);
  const replayRatioP90 = ratio(s.replay.p90, s.floor.p90);

  const cpuOf = (name) => (results.cpu[name] ? ms(summary(results.cpu[name]).mean) : '');
  const raceCpu = ms(summary(race.map((r) => r.cpuPerProcessMs)).mean);
  const raceCpuBound = (RACE_WIDTH * summary(results.cpu.claim).mean) / cpus().length;
  const measurements = [
    ['1', 'bare `node -e 0`', s.bare, ms, cpuOf('bare')],
    ['1', 'floor: driver + open + read 1 row', s.floor, ms, cpuOf('floor')],
    ['1', 'hook replay (rule 4, stored bytes)', s.replay, ms, cpuOf('replay')],
    ['2', 'floor + 1 sync=FULL write txn', s.floorWrite, ms, cpuOf('floorWrite')],
    ['2', 'hook claim (fresh Todo, new lease)', s.claim, ms, cpuOf('claim')],
    ['W1', 'warm hook replay (native client + hook server)', s.replayWarm, ms, cpuOf('replayWarm')],
    ['1n', "hook, the holder's next Turn (turn base)", s.nextTurn, ms, cpuOf('nextTurn')],
    ['W1n', "warm hook, the holder's next Turn", s.nextTurnWarm, ms, cpuOf('nextTurnWarm')],
    ['W2', 'warm hook claim (native client + hook server)', s.claimWarm, ms, cpuOf('claimWarm')],
    ['6', 'hook replay, NODE_DISABLE_COMPILE_CACHE=1', s.replayNoCache, ms, cpuOf('replayNoCache')],
    ['7', 'hook replay from a linked worktree', s.replayWorktree, ms, cpuOf('replayWorktree')],
    ['8', '`turnkeeper goal --json` in the worktree', s.goal, ms, cpuOf('goal')],
    ['8', '`goal --json`, no store (store-free path)', s.goalStoreFree, ms, cpuOf('goalStoreFree')],
    ['3', `verify --json (${vReceipts.toLocaleString('en-US')} receipts)`, s.verify, ms, cpuOf('verify')],
    ['3', 'floor: driver + open verify store', s.verifyOpen, ms, cpuOf('verifyOpen')],
    ['3', 'floor: driver + open + scan all rows', s.verifyScan, ms, cpuOf('verifyScan')],
    ['4', `race ×${RACE_WIDTH}: slowest process`, raceSlowest, ms, raceCpu],
    ['4', `race ×${RACE_WIDTH}: makespan`, raceMakespan, ms, ''],
    ['4', `race ×${RACE_WIDTH}: median process`, raceMedian, ms, raceCpu],
    ...(mem
      ? [
          ['5', 'peak RSS bare `node -e 0`', mem.bare, mb],
          ['5', 'peak RSS floor (read 1 row)', mem.floor, mb],
          ['5', 'peak RSS hook replay', mem.replay, mb],
          ['5', 'peak RSS hook claim', mem.claim, mb],
          ['5', 'peak RSS verify --json', mem.verify, mb],
        ]
      : []),
  ].map(([row, what, sum, fmt, cpu = '']) => [row, what, String(sum.n), fmt(sum.median), fmt(sum.p90), fmt(sum.min), cpu]);

  const verdict = (ok) => (ok ? 'PASS' : 'MISS');
  const comparisons = [
    [
      'W1',
      'warm hook replay',
      ms(s.replayWarm.median),
      'bare node',
      ms(s.bare.median),
      x(ratio(s.replayWarm.median, s.bare.median)),
      `paired ${x(paired('replayWarm', 'bare'))} · vs cold replay ${x(ratio(s.replayWarm.median, s.replay.median))} (client cpu only; the server's is its own)`,
      '≤ 1.1×',
      verdict(ratio(s.replayWarm.median, s.bare.median) <= 1.1),
    ],
    [
      'W2',
      'warm hook claim',
      ms(s.claimWarm.median),
      'bare node',
      ms(s.bare.median),
      x(ratio(s.claimWarm.median, s.bare.median)),
      `paired ${x(paired('claimWarm', 'bare'))} · vs cold claim ${x(ratio(s.claimWarm.median, s.claim.median))}`,
      '≤ 1.3×',
      verdict(ratio(s.claimWarm.median, s.bare.median) <= 1.3),
    ],
    [
      '1',
      'hook replay',
      ms(s.replay.median),
      'floor (read 1 row)',
      ms(s.floor.median),
      x(replayRatio),
      `p90 ${x(replayRatioP90)} · paired ${x(paired('replay', 'floor'))} · cpu ${x(cpuRatio('replay', 'floor'))}`,
      '≤ 1.25×',
      verdict(replayRatio <= 1.25),
    ],
    [
      '1',
      'hook replay',
      ms(s.replay.median),
      'bare node',
      ms(s.bare.median),
      x(ratio(s.replay.median, s.bare.median)),
      `+${ms(s.replay.median - s.bare.median)} · paired ${x(paired('replay', 'bare'))}`,
      '—',
      'info',
    ],
    [
      '1',
      'floor (read 1 row)',
      ms(s.floor.median),
      'bare node',
      ms(s.bare.median),
      x(ratio(s.floor.median, s.bare.median)),
      `+${ms(s.floor.median - s.bare.median)}`,
      '—',
      'info',
    ],
    [
      '2',
      'hook claim',
      ms(s.claim.median),
      'floor + write txn',
      ms(s.floorWrite.median),
      x(ratio(s.claim.median, s.floorWrite.median)),
      `p90 ${x(ratio(s.claim.p90, s.floorWrite.p90))} · paired ${x(paired('claim', 'floorWrite'))} · cpu ${x(cpuRatio('claim', 'floorWrite'))}`,
      '—',
      'info',
    ],
    cacheComparison(s),
    // Row 7, what the worktree costs: the same replay from the main checkout is the baseline (the Goal
    // lookup through `.git`, `gitdir:` and `commondir` is the difference); no target of its own.
    [
      '7',
      'hook replay in a worktree',
      ms(s.replayWorktree.median),
      'hook replay, main checkout',
      ms(s.replay.median),
      x(ratio(s.replayWorktree.median, s.replay.median)),
      `+${ms(s.replayWorktree.median - s.replay.median)} · paired ${x(paired('replayWorktree', 'replay'))} · cpu ${x(cpuRatio('replayWorktree', 'replay'))}`,
      '—',
      'info',
    ],
    // The replay target (≤ 1.25× the floor) holds from a worktree too: this row judges that alone.
    [
      '7',
      'worktree replay vs floor',
      ms(s.replayWorktree.median),
      'floor (read 1 row)',
      ms(s.floor.median),
      x(ratio(s.replayWorktree.median, s.floor.median)),
      `p90 ${x(ratio(s.replayWorktree.p90, s.floor.p90))} · paired ${x(paired('replayWorktree', 'floor'))} · cpu ${x(cpuRatio('replayWorktree', 'floor'))}`,
      '≤ 1.25×',
      verdict(ratio(s.replayWorktree.median, s.floor.median) <= 1.25),
    ],
    [
      '8',
      'goal --json, no store',
      ms(s.goalStoreFree.median),
      'bare node',
      ms(s.bare.median),
      x(ratio(s.goalStoreFree.median, s.bare.median)),
      `paired ${x(paired('goalStoreFree', 'bare'))} · cpu ${x(cpuRatio('goalStoreFree', 'bare'))}`,
      '≤ 1.2×',
      verdict(ratio(s.goalStoreFree.median, s.bare.median) <= 1.2),
    ],
    [
      '8',
      'goal --json, with the store',
      ms(s.goal.median),
      'bare node',
      ms(s.bare.median),
      x(ratio(s.goal.median, s.bare.median)),
      `+${ms(s.goal.median - s.bare.median)} (opens the store for changedFrom)`,
      '—',
      'info',
    ],
    [
      '3',
      'verify, wall time',
      `${fmtRate(rateWall)}/s`,
      `${vReceipts} receipts`,
      ms(s.verify.median),
      '',
      `p90 ${fmtRate(rateWallP90)}/s`,
      '≥ 200k/s',
      verdict(rateWall >= 200_000),
    ],
    [
      '3',
      'verify, walk ≈ wall − open',
      `${fmtRate(rateWalk)}/s`,
      'open floor',
      ms(s.verifyOpen.median),
      '',
      `walk ${ms(walkMs)}`,
      '≥ 200k/s',
      verdict(rateWalk >= 200_000),
    ],
    [
      '3',
      'verify',
      ms(s.verify.median),
      'scan floor',
      ms(s.verifyScan.median),
      x(ratio(s.verify.median, s.verifyScan.median)),
      `+${ms(s.verify.median - s.verifyScan.median)} JS`,
      '—',
      'info',
    ],
    [
      '4',
      'race slowest',
      ms(raceSlowest.median),
      'lone claim',
      ms(s.claim.median),
      x(ratio(raceSlowest.median, s.claim.median)),
      `p90 ${x(ratio(raceSlowest.p90, s.claim.median))}`,
      '—',
      'info',
    ],
    // 64 cold processes on this many cores cannot finish before 64 × (CPU of one claim) / cores.
    [
      '4',
      'race slowest',
      ms(raceSlowest.median),
      `CPU bound ${RACE_WIDTH}×cpu/${cpus().length}`,
      ms(raceCpuBound),
      x(ratio(raceSlowest.median, raceCpuBound)),
      `cpu/proc ${raceCpu} vs ${cpuOf('claim')}`,
      '—',
      'info',
    ],
    [
      '4',
      'race outcome',
      race.map((r) => `${r.winners}+${r.held}`).join(' '),
      `1 winner + ${RACE_WIDTH - 1} [lease_held]`,
      '',
      '',
      `${race.length} reps`,
      'all reps',
      raceOk ? 'PASS' : 'FAIL',
    ],
    ...(mem
      ? [
          [
            '5',
            'RSS hook replay',
            mb(mem.replay.median),
            'bare node',
            mb(mem.bare.median),
            x(ratio(mem.replay.median, mem.bare.median)),
            `+${mb(mem.replay.median - mem.bare.median)}`,
            '—',
            'info',
          ],
          [
            '5',
            'RSS hook claim',
            mb(mem.claim.median),
            'bare node',
            mb(mem.bare.median),
            x(ratio(mem.claim.median, mem.bare.median)),
            `+${mb(mem.claim.median - mem.bare.median)}`,
            '—',
            'info',
          ],
          [
            '5',
            'RSS hook replay',
            mb(mem.replay.median),
            'floor (read 1 row)',
            mb(mem.floor.median),
            x(ratio(mem.replay.median, mem.floor.median)),
            `+${mb(mem.replay.median - mem.floor.median)}`,
            '—',
            'info',
          ],
        ]
      : [['5', 'peak RSS', 'n/a', `${TIME_BIN} missing`, '', '', '', '—', 'SKIP']]),
  ];

  const load1 = loadavg()[0];
  const out = [];
  out.push(
    `Turnkeeper bench · node ${process.version} ${process.platform}/${process.arch} · ${cpus().length} cpus · ` +
      `loadavg ${load0.toFixed(2)} → ${load1.toFixed(2)} · ${RUNS} runs after ${WARMUP} warm-up · ${((performance.now() - t0) / 1000).toFixed(0)} s`,
  );
  out.push(
    `hook store ${results.checks.hookStoreReceipts.toLocaleString('en-US')} receipts · verify store ${vReceipts.toLocaleString('en-US')} receipts · ` +
      `compile cache ${results.checks.compileCacheFiles} files · replay wrote nothing: ${results.checks.replayWroteNothing ? 'yes' : 'NO'}`,
  );
  out.push('');
  const receiptRowsOut = receiptTableRows();
  measurements.push(...receiptRowsOut.measurements);
  comparisons.push(...receiptRowsOut.comparisons);
  const proofRowsOut = proofTableRows(results.proofs);
  measurements.push(...proofRowsOut.measurements);
  comparisons.push(...proofRowsOut.comparisons);
  out.push(...table(['row', 'measurement (cold processes)', 'n', 'median', 'p90', 'min', 'cpu/proc'], measurements, [0, 0, 1, 1, 1, 1, 1]));
  out.push('');
  out.push(
    ...table(['row', 'comparison', 'value', 'baseline', 'base median', 'ratio', 'spread', 'target', 'result'], comparisons, [0, 0, 1, 0, 1, 1, 0, 0, 0]),
  );
  if (results.checks.stderr.length > 0) out.push('', 'stderr seen:', ...results.checks.stderr.map((line) => `  ${line}`));
  const odd = race.filter((r) => r.other.length > 0);
  for (const r of odd) {
    const kinds = new Map();
    for (const o of r.other) {
      const what =
        /\[([a-z_]+)\]/.exec(o.context)?.[1] ??
        (o.stderr.split('\n').find((line) => /Error|error:/.test(line)) ?? `exit ${o.code}, no output`).trim().slice(0, 140);
      kinds.set(what, (kinds.get(what) ?? 0) + 1);
    }
    out.push(`race ${r.todo}: ${r.other.length} other outcome(s): ${[...kinds].map(([k, n]) => `${n}× ${k}`).join('; ')}`);
  }
  console.log(out.join('\n'));

  const json = {
    node: process.version,
    cpus: cpus().length,
    loadavg: [load0, load1],
    runs: RUNS,
    warmup: WARMUP,
    samplesMs: results.samples,
    childCpuMs: results.cpu,
    summaryMs: s,
    race: results.race,
    memoryKiB: results.memory,
    verify: { receipts: vReceipts, ratePerSecWall: rateWall, ratePerSecWalk: rateWalk, walkMs },
    ratios: {
      replayOverFloor: replayRatio,
      replayOverFloorP90: replayRatioP90,
      replayOverFloorPaired: paired('replay', 'floor'),
      claimOverFloorWritePaired: paired('claim', 'floorWrite'),
      replayOverFloorCpu: cpuRatio('replay', 'floor'),
      claimOverFloorWriteCpu: cpuRatio('claim', 'floorWrite'),
      replayOverBare: ratio(s.replay.median, s.bare.median),
      claimOverFloorWrite: ratio(s.claim.median, s.floorWrite.median),
      raceSlowestOverLoneClaim: ratio(raceSlowest.median, s.claim.median),
      ...(mem ? { rssReplayOverBare: ratio(mem.replay.median, mem.bare.median), rssClaimOverBare: ratio(mem.claim.median, mem.bare.median) } : {}),
    },
    verdicts: { replay: replayRatio <= 1.25, verifyWall: rateWall >= 200_000, race: raceOk },
    checks: results.checks,
  };
  console.log(`BENCH_JSON ${JSON.stringify(json)}`);
}

function fmtRate(rate) {
  return rate >= 1e6 ? `${(rate / 1e6).toFixed(2)}M` : `${(rate / 1e3).toFixed(0)}k`;
}

/** Plain-text table; `right[i]` = 1 right-aligns column i. */
function table(header, rows, right) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells) =>
    cells
      .map((c, i) => (right[i] ? String(c).padStart(widths[i]) : String(c).padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)];
}
