// A burst of hooks from several "machines" on one PostgreSQL team store, shared by the tests that
// send it through a pooler (postgres-pooler.test.ts) and straight to the server (postgres-burst.test.ts).
//
//   const m = spawnMachine(join(root, 'a'), 'a', { store, origin, upstream });   // a machine that runs the CLI
//   await m.run(['hook'], codexPrompt(m, 'a-s1', 'turn-1', 'please work on #todo:x'));
//   const result = await runBurst({ root, upstream, origin, prefix: 'burst', stores: url, adminUrl, via, connections });
//
// runBurst: 64 real hook processes (`dist/cli.js hook`, Codex payloads) from 8 machines, half on one
// Todo and half on a Todo each, started first and released at one moment (untilAllReadStdin). It
// asserts what holds for any store in front of the hooks: every hook exits 0 and answers (a claim,
// [lease_held] or guidance; never nothing, never [store_unavailable]), one claim of the shared Todo
// and 31 [lease_held], every own Todo claimed by its hook, one active lease per Todo held by the
// hook that claimed it, a chain that verifies from every machine, no hook slower than the hook
// timeout. It samples the hooks' server connections throughout and prints one summary line; what
// bounds that count (a pool, the server's connection slots) is the caller's to assert.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { expect } from 'vitest';
import pg from 'pg';
import { openAuthority } from '../../src/ledger/open';
import { cliProcess, contextOf } from './world';
import { pgEnv } from './postgres';
import { makeMachine, untilAllReadStdin, type TeamMachine } from './teamMachine';

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  /** From the payload (stdin end) to exit. */
  ms: number;
  exitedAt: number;
}

export interface Machine extends TeamMachine {
  readonly name: string;
  run(args: string[], input?: string): Promise<Run>;
  /** Starts `args` with stdin held open: `release` writes `input`, ends stdin and starts the clock. */
  start(args: string[], env?: Record<string, string>): { pid: number; release(input: string): void; done: Promise<Run> };
}

/** A machine under `base` (its own HOME, TURNKEEPER_HOME and clone of `upstream`) whose store is `store`, running the CLI. */
export function spawnMachine(base: string, name: string, options: { store: string; origin: string; upstream?: string }): Machine {
  const made = makeMachine(base, options);
  const start = (args: string[], env: Record<string, string> = {}) => {
    let started = performance.now();
    const run = cliProcess(args, { ...made.env, ...env });
    const child = spawn(run.file, run.argv, { cwd: made.checkout, env: run.env });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const done = new Promise<Run>((resolvePromise, reject) => {
      child.on('error', reject);
      child.on('close', (code) => {
        const exitedAt = performance.now();
        resolvePromise({ code, stdout, stderr, ms: Math.round(exitedAt - started), exitedAt });
      });
    });
    return {
      pid: child.pid!,
      release(input: string) {
        started = performance.now();
        child.stdin.end(input);
      },
      done,
    };
  };
  return {
    ...made,
    name,
    start,
    run(args, input = '') {
      const child = start(args);
      child.release(input);
      return child.done;
    },
  };
}

/** A Codex UserPromptSubmit payload from `m` (as postgres-machines.test.ts sends). */
export const codexPrompt = (m: Machine, session: string, turn: string, prompt: string): string =>
  JSON.stringify({
    session_id: session,
    turn_id: turn,
    transcript_path: join(m.userHome, `${session}.jsonl`),
    cwd: m.checkout,
    hook_event_name: 'UserPromptSubmit',
    model: 'gpt-test',
    permission_mode: 'default',
    prompt,
  });

/** What a hook answered: a claim (the ready capture), a reason code, or nothing. */
export function outcome(run: Run): string {
  const text = contextOf(run.stdout) ?? '';
  if (text.startsWith('Turnkeeper: Todo ')) return 'claimed';
  return /\[([a-z_]+)\]/.exec(text)?.[1] ?? (text === '' ? 'nothing' : 'other');
}

/** How the hooks' server connections are counted: `count` right now, and what it reads (for the summary). */
export interface ConnectionSampler {
  count(): Promise<number>;
  readonly source: string;
}

/**
 * Samples `sampler` every few ms until stop(): the peak, and how many samples it rests on (a few
 * errors are kept, then sampling ends).
 */
export function sampleConnections(sampler: ConnectionSampler): { stop(): Promise<{ peak: number; samples: number; errors: string[] }> } {
  let stopped = false;
  let peak = 0;
  let samples = 0;
  const errors: string[] = [];
  const loop = (async () => {
    while (!stopped) {
      try {
        peak = Math.max(peak, await sampler.count());
        samples += 1;
      } catch (error) {
        errors.push((error as Error).message);
        if (errors.length > 5) return;
      }
      await new Promise((resolvePromise) => setTimeout(resolvePromise, 5));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return { peak, samples, errors };
    },
  };
}

/**
 * Counts the client backends of `role` in `database` on the server at `adminUrl` (pg_stat_activity),
 * over one direct connection opened here, before any burst: a sampler that connected per sample would
 * take a backend (and, on a server with few slots, a slot) from what it measures. A superuser's
 * connection at `adminUrl` still takes one of max_connections; close() gives it back.
 */
export async function backendCounter(adminUrl: string, role: string, database: string): Promise<ConnectionSampler & { close(): Promise<void> }> {
  const client = new pg.Client({ connectionString: adminUrl, application_name: 'tk-burst-counter' });
  client.on('error', () => undefined);
  await client.connect();
  return {
    source: 'pg_stat_activity',
    async count() {
      const result = await client.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
         WHERE backend_type = 'client backend' AND usename = $1 AND datname = $2 AND pid <> pg_backend_pid()`,
        [role, database],
      );
      return result.rows[0]!.n;
    },
    async close() {
      await client.end().catch(() => undefined);
    },
  };
}

export interface BurstOptions {
  /** The test's directory: machines go under `${root}/${prefix}-<i>`. */
  readonly root: string;
  /** The repository every machine clones, and the origin URL they all name (one Goal). */
  readonly upstream: string;
  readonly origin: string;
  /** Machine names `${prefix}-<i>`, sessions `${prefix}-<i>-hook-<k>`. */
  readonly prefix: string;
  /** The store the hooks name (TURNKEEPER_STORE): one URL, or one per machine (machine i gets stores[i % length]). Its schema exists. */
  readonly stores: string | readonly string[];
  /** The same database on the server itself as a superuser: the leases are read there after the burst. */
  readonly adminUrl: string;
  /** How the hooks reach the server, for the summary: "through PgBouncer (…)", "directly against the server (…)". */
  readonly via: string;
  /** Counts the hooks' server connections; sampled from just before the payloads go out until the last hook exits. */
  readonly connections: ConnectionSampler;
  /**
   * Called once every hook waits for its payload, just before the payloads go out; what it returns is
   * called right after the last hook exits (before any other read) and gives text that the summary
   * appends after the sampler's count.
   */
  readonly around?: () => Promise<() => Promise<string> | string> | (() => Promise<string> | string);
}

export interface BurstResult {
  readonly summary: string;
  readonly peak: number;
  readonly samples: number;
  readonly wall: number;
  /** Each hook's time from its payload to its exit, fastest first. */
  readonly times: readonly number[];
  readonly outcomes: readonly string[];
}

/** How many machines, and how many hooks from them in all. */
const BURST_MACHINES = 8;
export const BURST_HOOKS = 64;

/** The shared Todo, and the Todo of the k-th hook that has one of its own. */
const SHARED_TODO = 'shared-todo';
const solo = (k: number): string => `solo-${String(k).padStart(2, '0')}`;

/** 64 hooks from 8 machines at once, half on one Todo and half on a Todo each, with every assertion above. */
export async function runBurst(options: BurstOptions): Promise<BurstResult> {
  const MACHINES = BURST_MACHINES;
  const HOOKS = BURST_HOOKS;
  const stores = typeof options.stores === 'string' ? [options.stores] : options.stores;
  const machines = Array.from({ length: MACHINES }, (_, i) =>
    spawnMachine(join(options.root, `${options.prefix}-${i}`), `${options.prefix}-${i}`, {
      store: stores[i % stores.length]!,
      origin: options.origin,
      upstream: options.upstream,
    }),
  );
  const todos = [SHARED_TODO, ...Array.from({ length: HOOKS / 2 }, (_, k) => solo(k))];
  // Todos added through the hooks' store, eight machines at a time.
  for (let at = 0; at < todos.length; at += MACHINES) {
    const adds = await Promise.all(todos.slice(at, at + MACHINES).map((id, i) => machines[i]!.run(['todo', 'add', `Task ${id}`, '--id', id])));
    for (const add of adds) expect(add.code, add.stderr).toBe(0);
  }
  // Machines that have used Turnkeeper before: each has run a command and a hook, so its compile
  // cache holds both bundles (dist/turnkeeper.js for commands, dist/hook.js for hooks). A hook of a
  // session that names no Todo claims nothing: it records the session's proof of life.
  for (const m of machines) {
    expect((await m.run(['verify', '--json'])).code).toBe(0);
    const warm = await m.run(['hook'], codexPrompt(m, `${m.name}-warm`, 'turn-0', 'hello'));
    expect(warm.code, warm.stderr).toBe(0);
    expect(warm.stdout).toBe('');
  }

  // Even k: the shared Todo; odd k: a Todo of its own.
  const hooks = Array.from({ length: HOOKS }, (_, k) => {
    const m = machines[k % MACHINES]!;
    const todo = k % 2 === 0 ? SHARED_TODO : solo((k - 1) / 2);
    return { m, k, todo, session: `${m.name}-hook-${k}`, child: m.start(['hook']) };
  });
  await untilAllReadStdin(hooks.map((h) => h.child.pid));
  const after = options.around ? await options.around() : undefined;
  const sampler = sampleConnections(options.connections);
  const started = performance.now();
  for (const h of hooks) h.child.release(codexPrompt(h.m, h.session, 'turn-1', `please work on #todo:${h.todo}`));
  const runs = await Promise.all(hooks.map((h) => h.child.done));
  const wall = Math.round(performance.now() - started);
  const { peak, samples, errors } = await sampler.stop();
  const extra = after ? await after() : '';

  const outcomes = runs.map(outcome);
  const count = (list: string[]) => list.reduce<Record<string, number>>((acc, o) => ({ ...acc, [o]: (acc[o] ?? 0) + 1 }), {});
  const shared = count(outcomes.filter((_, k) => hooks[k]!.todo === SHARED_TODO));
  const own = count(outcomes.filter((_, k) => hooks[k]!.todo !== SHARED_TODO));
  const times = runs.map((r) => r.ms).sort((x, y) => x - y);
  const summary =
    `burst of ${HOOKS} hooks from ${MACHINES} machines ${options.via}: ` +
    `wall ${wall} ms; per hook slowest ${times.at(-1)} ms, median ${times[HOOKS / 2]} ms, fastest ${times[0]} ms; ` +
    `shared Todo ${JSON.stringify(shared)}, own Todos ${JSON.stringify(own)}; ` +
    `server connections: peak ${peak} in ${samples} samples (${options.connections.source})${extra ? `, ${extra}` : ''}`;
  console.log(summary);
  const failures = runs
    .map((r, k) => ({
      k,
      session: hooks[k]!.session,
      todo: hooks[k]!.todo,
      outcome: outcomes[k],
      ms: r.ms,
      code: r.code,
      context: contextOf(r.stdout),
      stderr: r.stderr.trim(),
    }))
    .filter((f) => f.code !== 0 || !['claimed', 'lease_held'].includes(f.outcome!) || f.stderr !== '');
  const failed = failures.length ? `\nhooks that did not claim or get [lease_held]:\n${failures.map((f) => JSON.stringify(f)).join('\n')}` : '';
  if (failed) console.log(failed);

  expect(
    runs.map((r) => r.code),
    summary + failed,
  ).toStrictEqual(Array(HOOKS).fill(0));
  for (const run of runs) expect(run.stderr).not.toMatch(/internal error/i);
  // Every hook answered: a claim, [lease_held] or guidance; never nothing, never [store_unavailable].
  expect(
    outcomes.filter((o) => o === 'nothing' || o === 'other'),
    summary + failed,
  ).toStrictEqual([]);
  expect(
    outcomes.filter((o) => o === 'store_unavailable'),
    summary + failed,
  ).toStrictEqual([]);
  expect(shared, summary).toStrictEqual({ claimed: 1, lease_held: HOOKS / 2 - 1 });
  expect(own, summary).toStrictEqual({ claimed: HOOKS / 2 });

  // One holder per Todo, and the shared Todo's holder is the one hook that claimed it.
  const authority = (await openAuthority(pgEnv(options.adminUrl), { create: false }))!;
  const leases = await authority.listLeases().finally(() => authority.close());
  const active = leases.filter((lease) => lease.status === 'active');
  expect(new Set(active.map((lease) => lease.todo)).size).toBe(active.length);
  expect(active.map((lease) => lease.todo).sort()).toStrictEqual([...todos].sort());
  const winner = hooks.find((h, k) => h.todo === SHARED_TODO && outcomes[k] === 'claimed')!;
  expect(active.find((lease) => lease.todo === SHARED_TODO)).toMatchObject({ owner: `codex:${winner.session}`, epoch: 1 });
  for (const [k, h] of hooks.entries())
    if (h.todo !== SHARED_TODO) expect(active.find((lease) => lease.todo === h.todo)?.owner, `hook ${k}`).toBe(`codex:${h.session}`);

  for (const m of machines) {
    const verify = await m.run(['verify', '--json']);
    expect(verify.code, verify.stderr).toBe(0);
    expect(JSON.parse(verify.stdout)).toMatchObject({ ok: true, breaks: [] });
  }
  expect(times.at(-1), summary).toBeLessThan(15_000); // the hook timeout Turnkeeper installs
  expect(errors).toStrictEqual([]);
  expect(samples).toBeGreaterThan(10);
  expect(peak, summary).toBeGreaterThanOrEqual(1);
  return { summary, peak, samples, wall, times, outcomes };
}
