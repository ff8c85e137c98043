// Git facts of a checkout at claim time (spec §3): its preconditions and its branch. The Goal (spec §1)
// is found by ./goal.ts from the git layout without spawning git, because it sits on every hook's hot
// path; git itself runs only when a claim is made.
import { existsSync } from 'node:fs';
import { readConfigFile } from '../files/boundedFile';
import { join } from 'node:path';
import { digestText } from '../core/canonical';
import type { Preconditions } from '../core/ready';

export function git(goal: string, args: string[]): string | null {
  // Loaded on first use: node:child_process adds to every hook's start-up (bench row S1), and only claims need git.
  const { execFileSync } = process.getBuiltinModule('node:child_process');
  try {
    // core.fsmonitor names a program git runs on status: a checkout's own config must not make a claim
    // run it (the agent may run git there itself, but Turnkeeper adds no new way in).
    return execFileSync('git', ['-C', goal, '-c', 'core.fsmonitor=false', ...args], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 5000,
    });
  } catch {
    return null;
  }
}

/**
 * The branch checked out in a checkout, from its git directory's HEAD file (no git process: a claim
 * already runs two), to recreate a removed worktree at it; null when detached, or with no git
 * directory. A repository on the reftable backend keeps HEAD in its tables (the file then names
 * `refs/heads/.invalid`): only there is git asked.
 */
export function branchOf(gitDir: string | null, checkout: string): string | null {
  if (gitDir === null) return null;
  // A small regular file only: a FIFO or /dev/zero planted as HEAD must not hang the claim.
  const read = readConfigFile(join(gitDir, 'HEAD'), 64 * 1024);
  if (read.kind !== 'bytes') return null;
  const head = read.bytes.toString('utf8').trim();
  const ref = /^ref: refs\/heads\/(.+)$/.exec(head)?.[1];
  if (ref === '.invalid') return git(checkout, ['symbolic-ref', '--short', '-q', 'HEAD'])?.trim() || null;
  return ref ?? null;
}

/** HEAD and a digest of `git status` at claim time; both null outside git or before the first commit. */
export function preconditionsOf(checkout: string): Preconditions {
  if (!existsSync(join(checkout, '.git'))) return { gitHead: null, statusDigest: null };
  const head = git(checkout, ['rev-parse', '--verify', '-q', 'HEAD'])?.trim() || null;
  const status = git(checkout, ['status', '--porcelain=v1', '-z', '--untracked-files=all']);
  return { gitHead: head, statusDigest: status === null ? null : digestText(status) };
}
