// What the throwaway servers of the tests (PostgreSQL in ./postgres.ts, PgBouncer in ./pgbouncer.ts)
// share: the OS user they run as, a private directory that user owns, an environment without libpq
// variables, and the guarantee that none outlives the test process.
//
// - Tests run as root; PostgreSQL and PgBouncer refuse root, so they run as the `postgres` OS user
//   (looked up when needed: on a fresh machine it exists only after `apt-get install postgresql`).
//   Run by another user, they run as that user.
// - A test process that dies without stopping a server (an exception, process.exit, SIGKILL) must not
//   leave it behind: an 'exit' hook stops it at once, and a detached watchdog that waits for the test
//   process to go stops it and removes its directory if even that hook never ran.
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface RunAs {
  /** Prefix for commands that must not run as root: ['runuser', '-u', 'postgres', '--'] or []. */
  prefix: string[];
  uid: number;
  gid: number;
}

/** The `postgres` OS user when this process is root, else this process's own user. `hint` says how to get the user. */
export function runAs(hint: string): RunAs {
  if (process.getuid?.() !== 0) return { prefix: [], uid: process.getuid?.() ?? -1, gid: process.getgid?.() ?? -1 };
  let uid: number;
  let gid: number;
  try {
    uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
    gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
  } catch {
    throw new Error(`Tests run as root, PostgreSQL and PgBouncer refuse root, and there is no 'postgres' OS user to run them as: ${hint}`);
  }
  return { prefix: ['runuser', '-u', 'postgres', '--'], uid, gid };
}

/** The environment for server tools and psql: the caller's, without libpq variables that would redirect them. */
export function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('PG')) env[key] = value;
  env.LC_ALL = 'C';
  return env;
}

export const quoteShell = (value: string): string => `'${value.replaceAll("'", `'\\''`)}'`;

/**
 * A new 0700 directory owned by `as`, under os.tmpdir() or /tmp. Its parents must be traversable by
 * that user; os.tmpdir() may be a private directory of root's, so fall back to /tmp, which always is.
 */
export function serviceDir(prefix: string, as: RunAs): string {
  for (const parent of [...new Set([os.tmpdir(), '/tmp'])]) {
    const candidate = mkdtempSync(path.join(parent, prefix));
    chownSync(candidate, as.uid, as.gid);
    chmodSync(candidate, 0o700);
    try {
      if (as.prefix.length) execFileSync(as.prefix[0]!, [...as.prefix.slice(1), 'test', '-w', candidate], { stdio: 'ignore' });
      return candidate;
    } catch {
      rmSync(candidate, { recursive: true, force: true });
    }
  }
  throw new Error(`No temporary directory the server's user can write to (tried ${os.tmpdir()} and /tmp)`);
}

// Servers started by this process that have not been released; the 'exit' hook stops them.
const live = new Set<() => void>();
let exitHookInstalled = false;

export interface Guard {
  /** The server was stopped the ordinary way: forget it and end its watchdog. Idempotent. */
  release(): void;
}

/**
 * Makes sure a server does not outlive this process. `emergencyStop` (synchronous: it runs in the
 * 'exit' hook) kills the server and removes its directory; `watchdogScript` (sh) does the same from a
 * detached process once this one is gone, for the deaths no hook sees (SIGKILL).
 */
export function guardService(emergencyStop: () => void, watchdogScript: string): Guard {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on('exit', () => {
      for (const stop of live) stop();
    });
  }
  live.add(emergencyStop);
  // Detached into its own session so that killing the test's process group does not kill it.
  const script = `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; ${watchdogScript}`;
  const child = spawn('sh', ['-c', script], { detached: true, stdio: 'ignore', cwd: '/', env: cleanEnv() });
  child.unref();
  let released = false;
  return {
    release() {
      if (released) return;
      released = true;
      live.delete(emergencyStop);
      try {
        if (child.pid !== undefined) process.kill(child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    },
  };
}
