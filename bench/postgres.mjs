// Rows of the PostgreSQL team authority (spec §4), against a real server on 127.0.0.1 started for the
// run (Debian's postgresql, the same harness as the tests), baselines measured in the same run:
//   P1 hook replay (the same Turn again: no git) vs the floor: the same runtime loading the bundled client, connecting, one SELECT
//      (the floor enables Node's compile cache, as run.mjs's floors do: every advantage the product has).
//   P2 hook claim vs the floor plus one write transaction.
//   PW1, PW2 the same replay and claim on the warm hook path (native client + hook server) vs bare node.
//   P3 64 concurrent hooks from 4 "machines" (TURNKEEPER_HOMEs and clones) vs the CPU bound.
//   P4 verify of a 100,000-receipt chain on the server (cursor-streamed), rate and peak RSS.
//   P5 a burst of 64 hooks from 8 machines (own HOME, TURNKEEPER_HOME and clone each), half on one
//      shared Todo and half on a Todo each, as a role with a password: directly against the server,
//      through PgBouncer (transaction mode, pool of 4: test/support/pgbouncer.ts), and directly
//      against a second server with max_connections = 20, where connections must queue. Per burst:
//      answered, [store_unavailable], p50/p90 hook latency (payload → exit), wall, and the server
//      connections of the hooks' role at peak (pg_stat_activity, sampled every few ms).
//   P6 the server's CPU per claim (the postmaster's process tree, /proc), against a connect + SELECT 1
//      with the hook's client settings; and the statements one claim sends (pg_stat_statements, in
//      the second server, which preloads it).
// The server runs with fsync on (the test harness turns it off): a commit waits for its WAL flush, so
// P2's floor pays for one durable write transaction as the claim does, and the ratio compares like
// with like. How much that flush costs is the disk's: about 0.1 ms on the 2-core CI machine
// (pg_test_fsync: fdatasync 85 µs), where floor + write is ~1 ms above the read floor; several ms
// on a disk without a write cache, which with fsync off the floor would never have seen.
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { build } from 'esbuild';
import { chainRows } from './lib/store.mjs';
import {
  CLI,
  REPO_ROOT,
  cleanEnv,
  childrenOf,
  cleanup,
  codexPrompt,
  contextText,
  envInt,
  heldBurst,
  makeRepo,
  makeRoot,
  newSession,
  peakRss,
  promptFor,
  race,
  summary,
  timed,
  TIME_BIN,
  WARM_CLIENT,
  treeCpuMs,
} from './lib/world.mjs';

const RUNS = envInt('BENCH_RUNS', 30);
const WARMUP = envInt('BENCH_WARMUP', 3);
const RACE_WIDTH = 64;
const VERIFY_RECEIPTS = envInt('BENCH_VERIFY_RECEIPTS', 100_000);
const BURST_WIDTH = 64;
const BURST_MACHINES = 8;
const POOL_SIZE = 4;
const EDGE_MAX_CONNECTIONS = 20;
const EDGE_RESERVED = 3; // superuser_reserved_connections, PostgreSQL's default
const SHARED_TODO = 'shared';
const soloTodo = (k) => `solo-${String(k).padStart(2, '0')}`;
/** The hooks' role of P5/P6: a LOGIN role with a password (SCRAM), owner of the databases it uses. */
const HOOK_ROLE = 'tk_hook';
const HOOK_PASSWORD = randomBytes(18).toString('base64url');
const ORIGIN = 'https://example.invalid/acme/bench.git';
/** The server settings of every server of the run: a commit waits for its WAL flush. */
const DURABLE = { fsync: 'on', full_page_writes: 'on', synchronous_commit: 'on' };
const log = (text) => process.stderr.write(`bench(pg): ${text}\n`);
const requireHere = createRequire(import.meta.url);

const root = makeRoot();
const scratch = join(root, 'tmp');
let server;
let edge;
let bouncer;
try {
  await main();
} finally {
  await bouncer?.stop();
  await edge?.stop();
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
  // The server and PgBouncer harnesses of the tests, in one bundle (one set of exit hooks).
  const harnessEntry = join(scratch, 'pg-harness.ts');
  writeFileSync(harnessEntry, ['postgres', 'pgbouncer'].map((name) => `export * from ${JSON.stringify(join(REPO_ROOT, 'test/support', name))};\n`).join(''));
  const harness = requireHere(await bundleTo(harnessEntry, 'pg-harness.cjs'));
  server = await harness.startPostgres({ settings: DURABLE });
  await server.createDatabase('bench');
  const url = server.url('bench');
  log(`PostgreSQL ${server.version} on 127.0.0.1:${server.port}`);

  // One repository with an origin, and three more clones of it: four "machines".
  const repo = makeRepo(root);
  execFileSync('git', ['-C', repo, 'remote', 'add', 'origin', ORIGIN]);
  const machines = [0, 1, 2, 3].map((i) => {
    const checkout = i === 0 ? repo : join(root, `clone-${i}`);
    if (i > 0) {
      execFileSync('git', ['clone', '-q', repo, checkout]);
      execFileSync('git', ['-C', checkout, 'remote', 'set-url', 'origin', ORIGIN]);
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
  // One fresh Todo per claim on each path (cold P2, warm PW2).
  const claimTodos = Array.from({ length: 2 * (WARMUP + RUNS) + 3 }, (_, i) => `claim-${i}`);
  for (const id of ['pg-replay', 'race', ...claimTodos]) must(cli(['todo', 'add', `Bench ${id}`, '--id', id]), 'todo add');

  const session = newSession();
  // A replay is the same Turn's prompt again (a retry: rule 4, no git), as in run.mjs's row 1.
  const replayInput = () => codexPrompt({ root, repo, session, turn: 'turn-1', prompt: promptFor('pg-replay') });
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

  // The warm hook path (spec §2): a hook server for machine 0's home, and hooks through the native
  // client (rows PW1, PW2): the server keeps its one connection, so these make none.
  const warmServer = spawn(process.execPath, [CLI, 'hook-server', 'serve'], { env, cwd: repo, stdio: ['ignore', 'ignore', 'pipe'] });
  let warmLog = '';
  warmServer.stderr.setEncoding('utf8').on('data', (chunk) => (warmLog += chunk));
  for (const deadline = Date.now() + 20_000; !warmLog.includes('serving on');) {
    if (Date.now() > deadline) throw new Error(`the hook server did not start: ${warmLog}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  process.on('exit', () => warmServer.kill('SIGKILL'));
  const warmHook = (input) => timed([process.execPath, CLI, 'hook'], { input, env, cwd: repo, bin: WARM_CLIENT });

  let claimIndex = 0;
  const runners = {
    bare: () => timed(['-e', '0'], { env, cwd: repo }),
    replayWarm: () => {
      const run = warmHook(replayInput());
      if (contextText(run.stdout) !== presented || run.stderr !== '') throw new Error(`warm replay differs: ${run.stdout.slice(0, 200)} ${run.stderr}`);
      return run;
    },
    claimWarm: () => {
      const todo = claimTodos[claimIndex++];
      const run = warmHook(codexPrompt({ root, repo, session: newSession(), turn: 'turn-1', prompt: promptFor(todo) }));
      if (!contextText(run.stdout)?.startsWith(`Turnkeeper: Todo ${todo} `) || run.stderr !== '')
        throw new Error(`warm claim of ${todo}: ${run.stdout.slice(0, 200)} ${run.stderr}`);
      return run;
    },
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

  const pg = requireHere(join(REPO_ROOT, 'node_modules/pg'));
  await server.createRole(HOOK_ROLE, HOOK_PASSWORD);
  // A CLI command as a child process, without waiting for it (several machines at once).
  const cliAsync = (args, at, input = '') =>
    new Promise((resolvePromise, reject) => {
      const child = spawn(process.execPath, [CLI, ...args], { env: at.env, cwd: at.checkout, stdio: ['pipe', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (chunk) => (stdout += chunk));
      child.stderr.setEncoding('utf8').on('data', (chunk) => (stderr += chunk));
      child.on('error', reject);
      child.on('close', (code) => resolvePromise({ code, stdout, stderr }));
      child.stdin.end(input);
    });
  // Machines of their own: HOME, TURNKEEPER_HOME, TMPDIR and a clone of the repository each (one Goal).
  const makeMachines = (label, store, count) =>
    Array.from({ length: count }, (_, i) => {
      const base = join(root, `${label}-${i}`);
      const checkout = join(base, 'src', 'app');
      for (const dir of ['userhome', 'tmp']) mkdirSync(join(base, dir), { recursive: true });
      execFileSync('git', ['clone', '-q', repo, checkout]);
      execFileSync('git', ['-C', checkout, 'remote', 'set-url', 'origin', ORIGIN]);
      return { base, checkout, env: { ...cleanEnv(base, join(base, 'tkhome')), TURNKEEPER_STORE: store } };
    });
  const payload = (m, todo) => codexPrompt({ root: m.base, repo: m.checkout, session: newSession(), turn: 'turn-1', prompt: promptFor(todo) });
  /**
   * A database owned by the hooks' role on `srv`, its schema created by `store init` directly against
   * the server as that role, `todos` added through `machines` (their store), and one hook on each
   * machine (a prompt naming no Todo): machines that have used Turnkeeper before.
   */
  const prepareStore = async (srv, database, machines, todos) => {
    await srv.createDatabase(database, HOOK_ROLE);
    const owner = { checkout: machines[0].checkout, env: { ...machines[0].env, TURNKEEPER_STORE: srv.url(database, HOOK_ROLE, HOOK_PASSWORD) } };
    must(cli(['store', 'init'], '', owner), `store init (${database})`);
    for (let at = 0; at < todos.length; at += machines.length) {
      const adds = await Promise.all(todos.slice(at, at + machines.length).map((id, i) => cliAsync(['todo', 'add', `Bench ${id}`, '--id', id], machines[i])));
      for (const add of adds) if (add.code !== 0) throw new Error(`todo add (${database}): ${add.stdout} ${add.stderr}`);
    }
    const warm = (m) => codexPrompt({ root: m.base, repo: m.checkout, session: newSession(), turn: 'turn-0', prompt: 'Read the README and say what it is.' });
    for (const run of await Promise.all(machines.map((m) => cliAsync(['hook'], m, warm(m)))))
      if (run.code !== 0 || /internal error/i.test(run.stderr)) throw new Error(`warm-up hook (${database}): ${run.stdout} ${run.stderr}`);
  };
  /** Until no backend of the hooks' role is left on `srv`, and no child is left unreaped (its CPU time is in the postmaster's then). */
  const untilNoBackends = async (srv, timeoutMs = 10_000) => {
    const deadline = performance.now() + timeoutMs;
    const busy = () =>
      childrenOf(srv.pid).filter((child) => {
        if (child.state === 'Z') return true;
        try {
          return readFileSync(`/proc/${child.pid}/cmdline`, 'utf8').includes(`postgres: ${HOOK_ROLE} `);
        } catch {
          return false;
        }
      });
    while (busy().length > 0) {
      if (performance.now() > deadline) throw new Error(`backends of ${HOOK_ROLE} still there after ${timeoutMs} ms: ${busy().map((c) => c.pid)}`);
      await new Promise((resolvePromise) => setTimeout(resolvePromise, 10));
    }
  };

  // P6 (before P5, on a server no other client uses): the server's CPU time over RUNS sequential hook
  // claims, each a cold hook process of its own session on a Todo of its own, as the hooks' role;
  // against RUNS connects that run one SELECT 1, with the client settings a hook's connection has
  // (src/store/postgres.ts connectClient, src/ledger/open.ts), from this process. Halves in the
  // order claims, connects, connects, claims, so that a drift in the server's background work
  // weighs on both alike. Measured on the postmaster's process tree (every backend and background
  // process is its child, a backend that exited is in its cutime/cstime), not on every process of
  // the `postgres` OS user: PgBouncer, and other test runs' servers on this machine, run as it too.
  const costUrl = server.url('cost', HOOK_ROLE, HOOK_PASSWORD);
  const [costMachine] = makeMachines('cost', costUrl, 1);
  const costTodos = Array.from({ length: RUNS }, (_, i) => `cost-${i}`);
  await prepareStore(server, 'cost', [costMachine], costTodos);
  const hookClient = { connectionString: costUrl, connectionTimeoutMillis: 2000, query_timeout: 4000, application_name: 'turnkeeper' };
  const connectSelect = async (url) => {
    const client = new pg.Client({ ...hookClient, connectionString: url });
    client.on('error', () => {});
    await client.connect();
    await client.query('SELECT 1');
    await client.end();
  };
  let costIndex = 0;
  const costClaim = (m, todo) => {
    const run = cli(['hook'], payload(m, todo), m);
    if (!contextText(run.stdout)?.startsWith(`Turnkeeper: Todo ${todo} `)) throw new Error(`claim of ${todo}: ${run.stdout.slice(0, 200)} ${run.stderr}`);
  };
  const serverCpu = { claim: 0, connect: 0 };
  const half = [Math.ceil(RUNS / 2), Math.floor(RUNS / 2)];
  for (const [kind, count] of [
    ['claim', half[0]],
    ['connect', half[0]],
    ['connect', half[1]],
    ['claim', half[1]],
  ]) {
    await untilNoBackends(server);
    const before = treeCpuMs(server.pid);
    for (let i = 0; i < count; i += 1) {
      if (kind === 'claim') costClaim(costMachine, costTodos[costIndex++]);
      else await connectSelect(costUrl);
    }
    await untilNoBackends(server);
    serverCpu[kind] += treeCpuMs(server.pid) - before;
  }
  const cpuPerClaim = serverCpu.claim / RUNS;
  const cpuPerConnect = serverCpu.connect / RUNS;
  log(`P6: server CPU ${cpuPerClaim.toFixed(2)} ms a claim, ${cpuPerConnect.toFixed(2)} ms a connect + SELECT 1 (${RUNS} each)`);

  // P5: 64 hooks from 8 machines at once, half on one shared Todo, half on a Todo each.
  const burstTodos = [SHARED_TODO, ...Array.from({ length: BURST_WIDTH / 2 }, (_, k) => soloTodo(k))];
  const todoOfHook = (k) => (k % 2 === 0 ? SHARED_TODO : soloTodo((k - 1) / 2));
  const outcomeOf = (run) => {
    let text;
    try {
      text = contextText(run.stdout) ?? '';
    } catch {
      return 'unparsable';
    }
    if (text.startsWith('Turnkeeper: Todo ')) return 'claimed';
    return /\[([a-z_]+)\]/.exec(text)?.[1] ?? (text === '' ? 'nothing' : 'other');
  };
  /** Samples the backends of the hooks' role in `database` on `srv` (pg_stat_activity, one connection as tk_admin) every 5 ms. */
  const connectionSampler = (srv, database) => {
    const client = new pg.Client({ connectionString: srv.adminUrl, application_name: 'bench-sampler' });
    client.on('error', () => {});
    let stopped = false;
    let peak = 0;
    let samples = 0;
    const errors = [];
    let loop;
    return {
      async start() {
        await client.connect();
        loop = (async () => {
          while (!stopped) {
            try {
              const result = await client.query(
                `SELECT count(*)::int AS n FROM pg_stat_activity
                 WHERE backend_type = 'client backend' AND usename = $1 AND datname = $2 AND pid <> pg_backend_pid()`,
                [HOOK_ROLE, database],
              );
              peak = Math.max(peak, result.rows[0].n);
              samples += 1;
            } catch (error) {
              errors.push(error.message);
              if (errors.length > 5) return;
            }
            await new Promise((resolvePromise) => setTimeout(resolvePromise, 5));
          }
        })();
      },
      async stop() {
        stopped = true;
        await loop;
        await client.end().catch(() => {});
        return { peak, samples, errors };
      },
    };
  };
  const burst = async (label, srv, database, machines) => {
    const sampler = connectionSampler(srv, database);
    const plan = Array.from({ length: BURST_WIDTH }, (_, k) => ({ m: machines[k % machines.length], todo: todoOfHook(k) }));
    const { runs, wall } = await heldBurst(
      plan.map((p) => payload(p.m, p.todo)),
      (k) => ({ env: plan[k].m.env, cwd: plan[k].m.checkout }),
      () => sampler.start(),
    );
    const { peak, samples, errors } = await sampler.stop();
    if (errors.length) throw new Error(`P5 ${label}: the connection sampler failed: ${errors.join('; ')}`);
    const outcomes = runs.map(outcomeOf);
    const count = (what, shared) => outcomes.filter((o, k) => o === what && (shared === undefined || (plan[k].todo === SHARED_TODO) === shared)).length;
    const reasons = {};
    for (const o of outcomes) reasons[o] = (reasons[o] ?? 0) + 1;
    const unavailable = count('store_unavailable');
    const answered = outcomes.filter((o, k) => runs[k].code === 0 && !['store_unavailable', 'nothing', 'other', 'unparsable'].includes(o)).length;
    const times = summary(runs.map((run) => run.ms));
    const result = {
      label,
      wall,
      peak,
      samples,
      answered,
      unavailable,
      reasons,
      sharedClaims: count('claimed', true),
      sharedHeld: count('lease_held', true),
      ownClaims: count('claimed', false),
      p50: times.median,
      p90: times.p90,
      fastest: times.min,
      slowest: times.max,
    };
    log(`P5 ${label}: ${JSON.stringify(result)}`);
    for (const [k, run] of runs.entries())
      if (!['claimed', 'lease_held'].includes(outcomes[k]) || run.code !== 0)
        log(
          `P5 ${label}: hook ${k} (${plan[k].todo}) ${outcomes[k]} in ${run.ms.toFixed(0)} ms: ${(contextText(run.stdout) ?? '').slice(0, 300)} ${run.stderr.trim().slice(0, 300)}`,
        );
    return result;
  };

  const directMachines = makeMachines('direct', server.url('direct', HOOK_ROLE, HOOK_PASSWORD), BURST_MACHINES);
  await prepareStore(server, 'direct', directMachines, burstTodos);
  const direct = await burst('direct', server, 'direct', directMachines);

  bouncer = await harness.startPgBouncer(server, { users: { [HOOK_ROLE]: HOOK_PASSWORD }, poolSize: POOL_SIZE });
  const pooledMachines = makeMachines('pooled', bouncer.url('pooled', HOOK_ROLE, HOOK_PASSWORD), BURST_MACHINES);
  await prepareStore(server, 'pooled', pooledMachines, burstTodos);
  const statsOf = async () => (await bouncer.show('STATS')).find((row) => row.database === 'pooled') ?? {};
  const statsBefore = await statsOf();
  const pooled = await burst('PgBouncer', server, 'pooled', pooledMachines);
  const statsAfter = await statsOf();
  const bouncerDuring = (key) => Number(statsAfter[key] ?? 0) - Number(statsBefore[key] ?? 0);
  pooled.waitMsPerHook = bouncerDuring('total_wait_time') / 1000 / BURST_WIDTH;
  pooled.transactions = bouncerDuring('total_xact_count');
  pooled.queries = bouncerDuring('total_query_count');
  await bouncer.stop();
  bouncer = undefined;

  // The second server: max_connections 20 (17 slots for roles that are not superusers, one of them
  // the sampler's), and pg_stat_statements preloaded for P6's count of statements.
  edge = await harness.startPostgres({ settings: { ...DURABLE, max_connections: EDGE_MAX_CONNECTIONS, shared_preload_libraries: "'pg_stat_statements'" } });
  await edge.createRole(HOOK_ROLE, HOOK_PASSWORD);
  const edgeUrl = edge.url('edge', HOOK_ROLE, HOOK_PASSWORD);
  const edgeMachines = makeMachines('edge', edgeUrl, BURST_MACHINES);
  const countTodos = Array.from({ length: Math.min(RUNS, 10) }, (_, i) => `count-${i}`);
  await prepareStore(edge, 'edge', edgeMachines, [...burstTodos, ...countTodos]);
  await edge.psql('CREATE EXTENSION pg_stat_statements', 'edge');
  const edgeAdmin = new pg.Client({ connectionString: edge.url('edge') });
  edgeAdmin.on('error', () => {});
  await edgeAdmin.connect();
  const statementsSince = async () => {
    await untilNoBackends(edge);
    const rows = (
      await edgeAdmin.query(
        `SELECT calls::int8 AS calls, query FROM pg_stat_statements
         WHERE userid = $1::regrole AND dbid = (SELECT oid FROM pg_database WHERE datname = 'edge') ORDER BY calls DESC, query`,
        [HOOK_ROLE],
      )
    ).rows.map((row) => ({ calls: Number(row.calls), query: row.query }));
    await edgeAdmin.query('SELECT pg_stat_statements_reset()');
    return rows;
  };
  await statementsSince();
  for (const todo of countTodos) costClaim(edgeMachines[0], todo);
  const claimStatements = await statementsSince();
  for (let i = 0; i < countTodos.length; i += 1) await connectSelect(edgeUrl);
  const connectStatements = await statementsSince();
  await edgeAdmin.end();
  const totalCalls = (rows) => rows.reduce((sum, row) => sum + row.calls, 0);
  const perClaim = totalCalls(claimStatements) / countTodos.length;
  const perConnect = totalCalls(connectStatements) / countTodos.length;
  // pg_stat_statements counts statements (top level: not those inside append_receipts). A statement
  // with parameters is one round trip (Parse/Bind/Execute/Sync), one without is one simple Query, but
  // BEGIN and its two SET LOCALs are one simple query of three statements (src/store/postgres.ts
  // beginWithin): round trips are the statements less the SET LOCALs.
  const setLocals = claimStatements.filter((row) => /^SET LOCAL /i.test(row.query)).reduce((sum, row) => sum + row.calls, 0);
  const roundTrips = perClaim - setLocals / countTodos.length;
  log(`P6: ${perClaim} statements a claim (${countTodos.length} claims, pg_stat_statements): ${JSON.stringify(claimStatements)}`);

  // Each connect the server turns away (53300: slots full, or only reserved ones left) is a FATAL line in its log.
  const refusedSoFar = () => (edge.log().match(/FATAL: +(sorry, too many clients already|remaining connection slots are reserved)/g) ?? []).length;
  const refusedBefore = refusedSoFar();
  const beyond = await burst(`max_connections ${EDGE_MAX_CONNECTIONS}`, edge, 'edge', edgeMachines);
  beyond.refusedConnects = refusedSoFar() - refusedBefore;
  await edge.stop();
  edge = undefined;

  // P4: a 100,000-receipt chain on the server, inserted by the independent mirror, then verified.
  const admin = new pg.Client({ connectionString: server.url('bench') });
  await admin.connect();
  const head = (await admin.query('SELECT seq::int8 AS seq, hash FROM turnkeeper.receipt_head WHERE id = 1')).rows[0];
  // The seeding is the owner's bulk load, not what P4 measures: the per-row triggers are off while it
  // runs (the head is set once at the end, and verify then checks every link). receipts_extend_head
  // (schema v2) reads and moves the head row for every receipt; 100,000 updates of that one row in one
  // transaction leave a HOT chain each next read walks, so the load took minutes (quadratic) with it.
  await admin.query('ALTER TABLE turnkeeper.receipts DISABLE TRIGGER receipts_notify');
  await admin.query('ALTER TABLE turnkeeper.receipts DISABLE TRIGGER receipts_extend_head');
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
  await admin.query('ALTER TABLE turnkeeper.receipts ENABLE TRIGGER receipts_extend_head');
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
    ['P1', 'hook replay (team store)', ms(s.replay.median), 'bare node', ms(s.bare.median), (s.replay.median / s.bare.median).toFixed(2) + '×', '—', 'info'],
    [
      'PW1',
      'warm hook replay (team store)',
      ms(s.replayWarm.median),
      'bare node',
      ms(s.bare.median),
      (s.replayWarm.median / s.bare.median).toFixed(2) + '×',
      '≤ 1.1×',
      s.replayWarm.median / s.bare.median <= 1.1 ? 'PASS' : 'MISS',
    ],
    [
      'PW2',
      'warm hook claim (team store)',
      ms(s.claimWarm.median),
      'bare node',
      ms(s.bare.median),
      (s.claimWarm.median / s.bare.median).toFixed(2) + '×',
      '≤ 1.3×',
      s.claimWarm.median / s.bare.median <= 1.3 ? 'PASS' : 'MISS',
    ],
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
    ...burstRows(direct, {
      name: 'direct',
      latencyBase: ['P2 claim alone (median)', s.claim.median],
      wallBase: [`CPU bound ${BURST_WIDTH}×claim cpu/${cpus().length}`, (BURST_WIDTH * meanCpu('claim')) / cpus().length],
      peakTarget: ['—', () => 'info'],
      peakBase: `${BURST_WIDTH} hooks, max_connections 200`,
    }),
    ...burstRows(pooled, {
      name: `PgBouncer pool ${POOL_SIZE}`,
      latencyBase: ['direct', direct.p50, direct.p90],
      wallBase: ['direct', direct.wall],
      peakTarget: [`≤ ${POOL_SIZE}`, (peak) => (peak <= POOL_SIZE ? 'PASS' : 'MISS')],
      peakBase: `pool ${POOL_SIZE}; clients waited ${pooled.waitMsPerHook.toFixed(0)} ms/hook`,
      peakRatio: (pooled.peak / POOL_SIZE).toFixed(2) + '× pool',
    }),
    ...burstRows(beyond, {
      name: `max_connections ${EDGE_MAX_CONNECTIONS}`,
      latencyBase: ['direct', direct.p50, direct.p90],
      wallBase: ['direct', direct.wall],
      peakTarget: ['—', () => 'info'],
      peakBase: `${EDGE_MAX_CONNECTIONS - EDGE_RESERVED} slots, 1 the sampler's`,
    }),
    [
      'P6',
      'server CPU per claim (postmaster tree)',
      ms(cpuPerClaim),
      'connect + SELECT 1, hook client config',
      ms(cpuPerConnect),
      (cpuPerClaim / cpuPerConnect).toFixed(2) + '×',
      '—',
      'info',
    ],
    [
      'P6',
      'statements (round trips) per claim, pg_stat_statements',
      `${+perClaim.toFixed(1)} (${+roundTrips.toFixed(1)} round trips)`,
      'connect + SELECT 1',
      `${+perConnect.toFixed(1)}`,
      '',
      '—',
      'info',
    ],
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
        bursts: { direct, pooled, beyond },
        serverCpu: { perClaimMs: cpuPerClaim, perConnectMs: cpuPerConnect, runs: RUNS },
        statements: { perClaim, roundTrips, perConnect, claims: countTodos.length, byStatement: claimStatements },
      }),
  );
}

/**
 * The rows of one P5 burst: answered, [store_unavailable], p50 · p90, wall, server connections at
 * peak. `latencyBase` is [what, p50, p90?] and `wallBase` [what, ms] from the same run.
 */
function burstRows(b, { name, latencyBase, wallBase, peakTarget, peakBase, peakRatio = '' }) {
  const ms = (x) => `${x.toFixed(0)} ms`;
  const [latencyWhat, baseP50, baseP90] = latencyBase;
  const outcomesOther = Object.entries(b.reasons)
    .filter(([o]) => !['claimed', 'lease_held'].includes(o))
    .map(([o, n]) => ` · ${o} ${n}`)
    .join('');
  return [
    [
      'P5',
      `burst ×${BURST_WIDTH}/${BURST_MACHINES} machines, ${name}: answered`,
      `${b.answered}/${BURST_WIDTH}`,
      `shared: ${b.sharedClaims} claim + ${b.sharedHeld} held · own: ${b.ownClaims} claims${outcomesOther}`,
      '',
      '',
      `${BURST_WIDTH}/${BURST_WIDTH}`,
      b.sharedClaims > 1 ? 'FAIL' : b.answered === BURST_WIDTH ? 'PASS' : 'MISS',
    ],
    [
      'P5',
      `${name}: [store_unavailable]`,
      String(b.unavailable),
      `of ${BURST_WIDTH}` + (b.refusedConnects === undefined ? '' : `; connects refused (53300): ${b.refusedConnects}`),
      '',
      '',
      '0',
      b.unavailable === 0 ? 'PASS' : 'MISS',
    ],
    [
      'P5',
      `${name}: hook p50 · p90 (payload → exit)`,
      `${ms(b.p50)} · ${ms(b.p90)}`,
      latencyWhat,
      baseP90 === undefined ? ms(baseP50) : `${ms(baseP50)} · ${ms(baseP90)}`,
      (b.p50 / baseP50).toFixed(2) + '×' + (baseP90 === undefined ? '' : ` · ${(b.p90 / baseP90).toFixed(2)}×`),
      '—',
      'info',
    ],
    ['P5', `${name}: wall`, ms(b.wall), wallBase[0], ms(wallBase[1]), (b.wall / wallBase[1]).toFixed(2) + '×', '—', 'info'],
    ['P5', `${name}: server connections at peak`, String(b.peak), peakBase, `${b.samples} samples`, peakRatio, peakTarget[0], peakTarget[1](b.peak)],
  ];
}
