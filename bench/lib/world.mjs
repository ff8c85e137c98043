// A throwaway world for the benchmark: temp root, a git repository as the Goal, TURNKEEPER_HOME,
// a clean environment, realistic Codex payloads, and helpers that time real cold processes.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const REPO_ROOT = resolve(import.meta.dirname, '../..');
export const CLI = join(REPO_ROOT, 'dist/cli.js');
const NODE = process.execPath;
export const TIME_BIN = '/usr/bin/time';
/** The warm hook path's native client (scripts/build-native.mjs builds it; rows W1, W2). */
export const WARM_CLIENT = join(REPO_ROOT, `native/prebuilds/${process.platform}-${process.arch}/turnkeeper-hook`);

/** A positive integer knob from the environment (BENCH_RUNS, …), else `fallback`. */
export function envInt(name, fallback) {
  const value = Number(process.env[name]);
  return Number.isSafeInteger(value) && value > 0 ? value : fallback;
}

/**
 * The temp root holds everything: repo, TURNKEEPER_HOME, HOME, and TMPDIR. dist/cli.js keeps its compile
 * cache in $TURNKEEPER_HOME/compile-cache (src/cli/launcher.cjs), inside the root already. TMPDIR matters
 * for the floors: they call `module.enableCompileCache()` with Node's default directory,
 * `os.tmpdir()/node-compile-cache`, and pointing TMPDIR inside our root makes that cache ours too
 * (populated by the warm-up runs, removed at the end) instead of sharing /tmp/node-compile-cache with
 * whatever else runs on the machine.
 */
export function makeRoot() {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'tk-bench-')));
  mkdirSync(join(root, 'tmp'));
  mkdirSync(join(root, 'userhome'));
  return root;
}

export function makeRepo(root, name = 'repo') {
  const repo = join(root, name);
  mkdirSync(join(repo, 'src'), { recursive: true });
  const git = (...args) => execFileSync('git', ['-C', repo, '-c', 'user.email=bench@example.invalid', '-c', 'user.name=bench', ...args], { stdio: 'ignore' });
  execFileSync('git', ['init', '-q', repo], { stdio: 'ignore' });
  writeFileSync(join(repo, 'README.md'), '# demo service\n\nA small repository the agents work on.\n');
  writeFileSync(join(repo, 'src', 'index.ts'), 'export const answer = 42;\n');
  git('add', '.');
  git('commit', '-qm', 'init');
  return repo;
}

/** Only what a hook needs: PATH (git for preconditions), HOME, TURNKEEPER_HOME, and TMPDIR (see makeRoot). */
export function cleanEnv(root, home) {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: join(root, 'userhome'), TURNKEEPER_HOME: home, TMPDIR: join(root, 'tmp') };
}

export const newSession = () => randomUUID();

/** Codex UserPromptSubmit, the shape Codex sends (session_id, turn_id, transcript_path, cwd, …). */
export function codexPrompt({ root, repo, session, turn, prompt }) {
  return JSON.stringify({
    session_id: session,
    turn_id: turn,
    transcript_path: join(root, 'userhome', '.codex', 'sessions', '2026', '11', '30', `rollout-2026-11-30T12-00-00-${session}.jsonl`),
    cwd: repo,
    hook_event_name: 'UserPromptSubmit',
    model: 'gpt-5-codex',
    permission_mode: 'default',
    prompt,
  });
}

export const promptFor = (todo) =>
  `Let's keep going on #todo:${todo}. Read src/index.ts, write the failing test first, then make it pass; keep the public API stable and run the unit tests before you stop.`;

/**
 * CPU time (user + sys, ms) of this process's reaped children, from /proc/self/stat (cutime, cstime).
 * Read around a spawn it gives that child's CPU time, which tells CPU-bound start-up apart from waiting.
 */
const TICK_MS = 10; // USER_HZ is 100 on Linux
export function childCpuMs() {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[13]) + Number(fields[14])) * TICK_MS;
  } catch {
    return NaN;
  }
}

/** The fields of /proc/<pid>/stat after the command name: [0] state, [1] ppid, [11] utime, [12] stime, [13] cutime, [14] cstime. */
function procStat(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** The live children of `pid` (from every /proc/<n>/stat): { pid, state, ticks (utime+stime+cutime+cstime) }. */
export function childrenOf(pid) {
  const out = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let fields;
    try {
      fields = procStat(name);
    } catch {
      continue; // gone in between
    }
    if (Number(fields[1]) === pid) out.push({ pid: Number(name), state: fields[0], ticks: fields.slice(11, 15).reduce((a, b) => a + Number(b), 0) });
  }
  return out;
}

/**
 * CPU time (user + sys, ms) spent so far by the process `pid` and its children: its own utime+stime,
 * the cutime+cstime of the children it has reaped, and the utime+stime(+their reaped children's) of
 * the live ones. For a PostgreSQL postmaster that is the whole server: every backend and background
 * process is its child. Read while no child exits (a child reaped between the two reads is missed).
 */
export function treeCpuMs(pid) {
  const own = procStat(pid)
    .slice(11, 15)
    .reduce((a, b) => a + Number(b), 0);
  return (own + childrenOf(pid).reduce((sum, child) => sum + child.ticks, 0)) * TICK_MS;
}

const SPAWN_OPTS = { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 };

/** Runs one cold process and returns its wall time as seen by the parent (fork+exec+run+exit+reap). */
export function timed(args, { input = '', env, cwd, bin = NODE }) {
  const cpu0 = childCpuMs();
  const started = process.hrtime.bigint();
  const result = spawnSync(bin, args, { ...SPAWN_OPTS, input, env, cwd });
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  const cpuMs = childCpuMs() - cpu0;
  if (result.error) throw result.error;
  return { ms, cpuMs, code: result.status, signal: result.signal, stdout: result.stdout, stderr: result.stderr };
}

/** Peak RSS (KiB) of one cold process, via GNU time (wait4 rusage of the child). */
export function peakRss(args, { input = '', env, cwd, scratch }) {
  const out = join(scratch, `time-${process.pid}.txt`);
  const result = spawnSync(TIME_BIN, ['-f', '%M', '-o', out, NODE, ...args], { ...SPAWN_OPTS, input, env, cwd });
  if (result.error) throw result.error;
  const lines = readFileSync(out, 'utf8').trim().split('\n');
  const kib = Number(lines[lines.length - 1]);
  if (!Number.isFinite(kib)) throw new Error(`could not read peak RSS from ${TIME_BIN}: ${lines.join(' | ')}`);
  return { kib, code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/**
 * Starts all `inputs` as concurrent hook processes as fast as the parent can spawn them; each
 * process's wall time runs from its own spawn call to its 'close' (exit + stdio drained). `at` is
 * where they all run ({ env, cwd }), or where the one at each index runs.
 */
export function race(inputs, at) {
  return new Promise((resolvePromise, reject) => {
    const results = new Array(inputs.length);
    let pending = inputs.length;
    const first = process.hrtime.bigint();
    inputs.forEach((input, index) => {
      const { env, cwd } = typeof at === 'function' ? at(index) : at;
      const started = process.hrtime.bigint();
      const child = spawn(NODE, [CLI, 'hook'], { env, cwd, stdio: ['pipe', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (chunk) => (stdout += chunk));
      child.stderr.setEncoding('utf8').on('data', (chunk) => (stderr += chunk));
      child.on('error', reject);
      child.on('close', (code) => {
        const now = process.hrtime.bigint();
        results[index] = { ms: Number(now - started) / 1e6, sinceFirst: Number(now - first) / 1e6, code, stdout, stderr };
        if (--pending === 0) resolvePromise(results);
      });
      child.stdin.end(input);
    });
  });
}

/**
 * Waits until every process blocks in read(0, …) (x86-64 syscall 0 on fd 0): loaded, waiting for its
 * payload (as test/support/teamMachine.ts untilAllReadStdin). Throws if one exits first.
 */
async function untilAllReadStdin(pids, timeoutMs = 120_000) {
  const deadline = Date.now() + timeoutMs;
  const waiting = (pid) => {
    let text;
    try {
      text = readFileSync(`/proc/${pid}/syscall`, 'utf8');
    } catch {
      throw new Error(`hook process ${pid} exited before it read its payload`);
    }
    return /^0 0x0 /.test(text);
  };
  while (!pids.every(waiting)) {
    if (Date.now() > deadline) throw new Error(`processes never reached their read of stdin: ${pids.filter((pid) => !waiting(pid)).join(' ')}`);
    await new Promise((resolvePromise) => setTimeout(resolvePromise, 50));
  }
}

/**
 * A burst of hooks that all receive their payloads at the same moment: every process is started
 * with its stdin held open and waits in its read of stdin (64 processes starting at once on two
 * cores would otherwise measure Node's start-up, not the store; on real machines each starts on its
 * own CPU), then `ready()` runs (a sampler connects), then every payload is written. Each run's `ms`
 * is from its payload to its 'close' (exit + stdio drained); `wall` from the first payload to the
 * last close. `at(index)` is where each runs ({ env, cwd }).
 */
export async function heldBurst(inputs, at, ready = async () => {}) {
  const children = inputs.map((_, index) => {
    const { env, cwd } = at(index);
    const child = spawn(NODE, [CLI, 'hook'], { env, cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    const held = { child, stdout: '', stderr: '', releasedAt: undefined };
    child.stdout.setEncoding('utf8').on('data', (chunk) => (held.stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk) => (held.stderr += chunk));
    held.done = new Promise((resolvePromise, reject) => {
      child.on('error', reject);
      child.on('close', (code) => {
        const exitedAt = performance.now();
        resolvePromise({ ms: exitedAt - (held.releasedAt ?? exitedAt), exitedAt, code, stdout: held.stdout, stderr: held.stderr });
      });
    });
    return held;
  });
  try {
    await untilAllReadStdin(children.map((held) => held.child.pid));
    await ready();
  } catch (error) {
    for (const held of children) held.child.kill('SIGKILL');
    await Promise.allSettled(children.map((held) => held.done));
    throw error;
  }
  const first = performance.now();
  children.forEach((held, index) => {
    held.releasedAt = performance.now();
    held.child.stdin.end(inputs[index]);
  });
  const runs = await Promise.all(children.map((held) => held.done));
  return { runs, wall: Math.max(...runs.map((run) => run.exitedAt)) - first };
}

export function contextText(stdout) {
  if (stdout === '') return undefined;
  const parsed = JSON.parse(stdout);
  return parsed?.hookSpecificOutput?.additionalContext;
}

export function cleanup(root) {
  if (root && existsSync(root)) rmSync(root, { recursive: true, force: true });
}

/** Nearest-rank percentile of a numeric sample. */
function percentile(sample, p) {
  const sorted = [...sample].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)];
}

export function summary(sample) {
  const sorted = [...sample].sort((a, b) => a - b);
  return {
    n: sorted.length,
    median: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    min: sorted[0],
    max: sorted[sorted.length - 1],
    mean: sorted.reduce((a, b) => a + b, 0) / sorted.length,
  };
}
