// "Machines" sharing one team store, for the PostgreSQL tests: each has its own directory with its
// own HOME, TURNKEEPER_HOME and TMPDIR and its own checkout of the team's repository (the same origin
// URL, hence one Goal), and an environment that names the store. Nothing of process.env but PATH.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/** git with a fixed identity, quiet. */
function git(cwd: string, ...args: string[]): void {
  execFileSync('git', ['-c', 'user.email=t@example.invalid', '-c', 'user.name=t', ...args], { cwd, stdio: 'ignore' });
}

/** Every file under `dir`, relative to it, sorted; [] when `dir` does not exist. */
export function filesUnder(dir: string): string[] {
  const out: string[] = [];
  const walk = (at: string) => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      const path = join(at, entry.name);
      if (entry.isDirectory()) walk(path);
      else out.push(relative(dir, path));
    }
  };
  try {
    walk(dir);
  } catch {
    // not there
  }
  return out.sort();
}

/** A repository with one commit (a README), to clone machines from. */
export function makeUpstream(dir: string, readme = 'app\n'): string {
  mkdirSync(dir, { recursive: true });
  git(dir, 'init', '-q');
  writeFileSync(join(dir, 'README.md'), readme);
  git(dir, 'add', '.');
  git(dir, 'commit', '-qm', 'init');
  return dir;
}

export interface TeamMachine {
  readonly base: string;
  /** HOME. */
  readonly userHome: string;
  /** TURNKEEPER_HOME. */
  readonly home: string;
  /** The machine's checkout of the team's repository. */
  readonly checkout: string;
  /** PATH, HOME, TURNKEEPER_HOME, TMPDIR (private) and TURNKEEPER_STORE. */
  readonly env: Record<string, string>;
}

/**
 * One machine under `base`: its checkout is a clone of `upstream` (or, without one, a repository of its
 * own with one commit) at `checkout` (default base/src/app), its origin set to `origin`.
 */
export function makeMachine(base: string, options: { store: string; origin: string; upstream?: string; checkout?: string }): TeamMachine {
  const userHome = join(base, 'home');
  const checkout = options.checkout ?? join(base, 'src', 'app');
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: userHome,
    TURNKEEPER_HOME: join(base, 'tkhome'),
    TMPDIR: join(base, 'tmp'),
    TURNKEEPER_STORE: options.store,
  };
  for (const dir of [userHome, env.TMPDIR]) mkdirSync(dir, { recursive: true });
  if (options.upstream) {
    mkdirSync(join(checkout, '..'), { recursive: true });
    execFileSync('git', ['clone', '-q', options.upstream, checkout], { stdio: 'ignore' });
    git(checkout, 'remote', 'set-url', 'origin', options.origin);
  } else {
    makeUpstream(checkout);
    git(checkout, 'remote', 'add', 'origin', options.origin);
  }
  return { base, userHome, home: env.TURNKEEPER_HOME, checkout, env };
}

/**
 * Waits until every process blocks in read(0, …) (x86-64 syscall 0 on fd 0): loaded, waiting for its
 * payload. 64 processes starting at once on two cores would measure Node's start-up, not the store;
 * on real machines each starts on its own CPU. So a race starts every process first, waits here, and
 * then writes all payloads at the same moment.
 */
export async function untilAllReadStdin(pids: readonly number[], timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const waiting = (pid: number) => {
    try {
      return /^0 0x0 /.test(readFileSync(`/proc/${pid}/syscall`, 'utf8'));
    } catch {
      return false;
    }
  };
  while (!pids.every(waiting)) {
    if (Date.now() > deadline) throw new Error(`processes never reached their read of stdin: ${pids.filter((pid) => !waiting(pid)).join(' ')}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
