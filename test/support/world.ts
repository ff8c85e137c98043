// A throwaway world for one test: its own TURNKEEPER_HOME and database, a git repository as the
// Goal, and helpers to run the real CLI as a separate process against them.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { shimPath, writeShim } from '../../src/agents/shim';
import { openSqliteAuthority, type SqliteAuthority } from '../../src/ledger/open';
import { resolveGoal } from '../../src/checkout/goal';

export const CLI = resolve(__dirname, '../../dist/cli.js');

/**
 * The warm hook path's native client (native/client/hook_client.c, built by scripts/build-native.mjs).
 * The `warm` test project (vitest.config.ts) sets TURNKEEPER_TEST_HOOK_PATH=warm: then every hook a
 * test runs through these helpers runs the command `hooks install` writes (the shim, which execs this
 * client: installedHookCommand below) and goes to a hook server, with TURNKEEPER_WARM=wait (the client starts the server and waits for it, and says on
 * stderr whenever it ran the cold hook instead), so the same assertions hold on both paths.
 */
export const WARM_CLIENT = resolve(__dirname, `../../native/prebuilds/${process.platform}-${process.arch}/turnkeeper-hook`);
export const WARM_TESTS = process.env.TURNKEEPER_TEST_HOOK_PATH === 'warm';

/**
 * stderr as the test reads it: without the warm client's note that a home it cannot serve (none, not a
 * directory, not private: the cases a test makes on purpose) ran the cold hook, which is what the
 * cold path prints. Every other note stays, so a server that died or declined shows in the assertion.
 */
function withoutWarmNotes(stderr: string): string {
  if (!WARM_TESTS) return stderr;
  return stderr.replace(
    /^turnkeeper: warm hook path not used: the home (directory cannot be read|is not a directory of ours that only we can write); ran the cold hook\n/gm,
    '',
  );
}

let installedShim: string | undefined;

/**
 * The command `hooks install` writes into every agent's config: the shim `bin/turnkeeper` (which execs
 * the warm client beside it for a hook), written by the product's own writeShim into a home of this
 * test process (once, under the run's temporary root, which globalSetup removes). An absolute
 * TURNKEEPER_HOME in a hook's environment wins over the shim's own, as it does for an agent started
 * with one, so each test's hooks serve that test's home.
 */
export function installedHookCommand(): string {
  if (installedShim === undefined) {
    const runRoot = process.env.TURNKEEPER_HOME ? dirname(process.env.TURNKEEPER_HOME) : tmpdir();
    const home = mkdtempSync(join(runRoot, 'installed-'));
    writeShim(home, { runtime: process.execPath, script: CLI, home });
    installedShim = shimPath(home);
  }
  return installedShim;
}

/** The process that runs `turnkeeper <args>` as this test run's path does: file, argv and environment. */
export function cliProcess(args: readonly string[], env: NodeJS.ProcessEnv): { file: string; argv: string[]; env: NodeJS.ProcessEnv } {
  if (!WARM_TESTS || args[0] !== 'hook') return { file: process.execPath, argv: [CLI, ...args], env };
  // A short idle: the servers of finished tests' homes go (their removed socket ends them sooner).
  const warmEnv = { TURNKEEPER_WARM: 'wait', TURNKEEPER_HOOK_SERVER_IDLE_MS: '20000', ...env };
  // Without an absolute home of its own, a hook through the shim would use the shim's: the native
  // client then runs as the shim would exec it, with the test's environment as it is.
  if (!env.TURNKEEPER_HOME || !isAbsolute(env.TURNKEEPER_HOME)) return { file: WARM_CLIENT, argv: [process.execPath, CLI, ...args], env: warmEnv };
  return { file: installedHookCommand(), argv: [...args], env: warmEnv };
}

export interface CliResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface CliRun extends CliResult {
  /** Wall time from spawn to close (exit and stdio drained). */
  readonly ms: number;
  /** SIGKILLed after `timeoutMs`: a CLI that never ends is a finding, not a hung test. */
  readonly killed: boolean;
}

/**
 * The real CLI as its own process, without blocking this one (a mock server, a proxy or a follower
 * in this process keeps running meanwhile): `env` exactly (nothing of process.env is added), `input`
 * on stdin, killed after `timeoutMs`.
 */
export function runCli(
  args: readonly string[],
  options: { env: NodeJS.ProcessEnv; cwd: string; input?: string | Buffer; timeoutMs?: number; onSpawn?: (pid: number) => void },
): Promise<CliRun> {
  return new Promise((resolvePromise, reject) => {
    const started = Date.now();
    const run = cliProcess(args, options.env);
    const child = spawn(run.file, run.argv, { cwd: options.cwd, env: run.env });
    if (child.pid !== undefined) options.onSpawn?.(child.pid);
    let stdout = '';
    let stderr = '';
    let killed = false;
    const timer = setTimeout(() => {
      killed = true;
      child.kill('SIGKILL');
    }, options.timeoutMs ?? 60_000);
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolvePromise({ code, signal, stdout, stderr: withoutWarmNotes(stderr), ms: Date.now() - started, killed });
    });
    child.stdin.on('error', () => undefined).end(options.input ?? '');
  });
}

export interface World {
  readonly root: string;
  readonly home: string;
  readonly db: string;
  readonly repo: string;
  /** The repository's Goal id, as a hook in `repo` computes it (docs/goals.md). */
  readonly goal: string;
  readonly env: Record<string, string>;
  cli(args: string[], options?: { input?: string | Buffer; env?: Record<string, string | undefined>; cwd?: string }): CliResult;
  cliAsync(args: string[], options?: { input?: string | Buffer; env?: Record<string, string | undefined>; cwd?: string }): Promise<CliResult>;
  /** Opens the world's store in this process (tests inspect and tamper with it directly). */
  store(): Promise<SqliteAuthority>;
  dbExists(): boolean;
  cleanup(): void;
}

export function makeWorld(name = 'tk'): World {
  const root = realpathSync(mkdtempSync(join(tmpdir(), `${name}-`)));
  const home = join(root, 'tkhome');
  const repo = join(root, 'repo');
  mkdirSync(repo, { recursive: true });
  execFileSync('git', ['init', '-q', repo]);
  writeFileSync(join(repo, 'README.md'), 'demo\n');
  execFileSync('git', ['-C', repo, '-c', 'user.email=t@example.invalid', '-c', 'user.name=t', 'add', '.']);
  execFileSync('git', ['-C', repo, '-c', 'user.email=t@example.invalid', '-c', 'user.name=t', 'commit', '-qm', 'init']);
  // On the warm path the home exists from the start, as after any install: a hook server serves a
  // home that exists and creates none (src/cli/hookServer.ts), so without it every hook would run cold.
  if (WARM_TESTS) mkdirSync(home, { mode: 0o700 });
  const db = join(home, 'turnkeeper.db');
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: join(root, 'userhome'),
    TURNKEEPER_HOME: home,
    TMPDIR: tmpdir(),
  };
  const merged = (extra?: Record<string, string | undefined>) => {
    const out: Record<string, string> = { ...env };
    for (const [key, value] of Object.entries(extra ?? {})) {
      if (value === undefined) delete out[key];
      else out[key] = value;
    }
    return out;
  };
  return {
    root,
    home,
    db,
    repo,
    goal: resolveGoal(repo).id,
    env,
    cli(args, options = {}) {
      const run = cliProcess(args, merged(options.env));
      const result = spawnSync(run.file, run.argv, {
        input: options.input ?? '',
        env: run.env,
        cwd: options.cwd ?? repo,
        encoding: 'utf8',
        maxBuffer: 64 * 1024 * 1024,
      });
      return { code: result.status, signal: result.signal, stdout: result.stdout, stderr: withoutWarmNotes(result.stderr) };
    },
    cliAsync(args, options = {}) {
      return new Promise((resolvePromise, reject) => {
        const run = cliProcess(args, merged(options.env));
        const child = spawn(run.file, run.argv, { env: run.env, cwd: options.cwd ?? repo });
        let stdout = '';
        let stderr = '';
        child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
        child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
        child.on('error', reject);
        child.on('close', (code, signal) => resolvePromise({ code, signal, stdout, stderr: withoutWarmNotes(stderr) }));
        child.stdin.end(options.input ?? '');
      });
    },
    async store() {
      return (await openSqliteAuthority({ path: db, create: true }))!;
    },
    dbExists: () => existsSync(db),
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  };
}

/**
 * Another process holding the SQLite store at `db` write-locked (BEGIN IMMEDIATE) until `release()`,
 * which rolls back and waits for it to exit.
 */
export async function holdWriteLock(db: string): Promise<{ release(): Promise<void> }> {
  const holder = spawn(
    process.execPath,
    [
      '-e',
      `const D = require('better-sqlite3'); const db = new D(process.argv[1]); db.exec('BEGIN IMMEDIATE');
       process.stdout.write('locked\\n'); process.stdin.on('data', () => { db.exec('ROLLBACK'); db.close(); process.exit(0); });`,
      db,
    ],
    { cwd: resolve(__dirname, '../..'), stdio: ['pipe', 'pipe', 'inherit'] },
  );
  await new Promise<void>((resolvePromise) => holder.stdout.once('data', () => resolvePromise()));
  return {
    async release() {
      const closed = new Promise((resolvePromise) => holder.on('close', resolvePromise));
      holder.stdin.write('go\n');
      await closed;
    },
  };
}

/** Hook payloads as each agent sends them (shapes recorded from the real agents, docs/notes/). */
export const payload = {
  codexPrompt: (world: World, session: string, turn: string, prompt: string) =>
    JSON.stringify({
      session_id: session,
      turn_id: turn,
      transcript_path: join(world.root, `${session}.jsonl`),
      cwd: world.repo,
      hook_event_name: 'UserPromptSubmit',
      model: 'gpt-test',
      permission_mode: 'default',
      prompt,
    }),
  codex: (world: World, event: string, session: string, turn: string | undefined, extra: Record<string, unknown> = {}) =>
    JSON.stringify({
      session_id: session,
      ...(turn ? { turn_id: turn } : {}),
      transcript_path: join(world.root, `${session}.jsonl`),
      cwd: world.repo,
      hook_event_name: event,
      model: 'gpt-test',
      permission_mode: 'default',
      ...extra,
    }),
  claudePrompt: (world: World, session: string, promptId: string | undefined, prompt: string) =>
    JSON.stringify({
      session_id: session,
      transcript_path: join(world.root, `${session}.jsonl`),
      cwd: world.repo,
      hook_event_name: 'UserPromptSubmit',
      permission_mode: 'default',
      ...(promptId ? { prompt_id: promptId } : {}),
      prompt,
    }),
  geminiBeforeAgent: (world: World, session: string, prompt: string) =>
    JSON.stringify({
      session_id: session,
      transcript_path: join(world.root, `${session}.json`),
      cwd: world.repo,
      hook_event_name: 'BeforeAgent',
      timestamp: '2026-11-30T12:00:00.000Z',
      prompt,
    }),
};

export function parseHookStdout(stdout: string): Record<string, unknown> | undefined {
  if (stdout === '') return undefined;
  const lines = stdout.split('\n');
  if (lines.length !== 2 || lines[1] !== '') throw new Error(`hook printed more than one line: ${JSON.stringify(stdout)}`);
  return JSON.parse(lines[0]!) as Record<string, unknown>;
}

export function contextOf(stdout: string): string | undefined {
  const output = parseHookStdout(stdout);
  const specific = output?.hookSpecificOutput as { additionalContext?: string } | undefined;
  return specific?.additionalContext;
}
