// Git facts of a checkout at claim time (spec §3): its preconditions and its branch. The Goal (spec §1)
// is found by ./goal.ts from the git layout without spawning git, because it sits on every hook's hot
// path; git itself runs only when a claim is made.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { digestText } from '../core/canonical';
import type { Preconditions } from '../core/ready';

function git(goal: string, args: string[]): string | null {
  // Loaded on first use: node:child_process adds to every hook's start-up (bench row S1), and only claims need git.
  const { execFileSync } = process.getBuiltinModule('node:child_process') as typeof import('node:child_process');
  try {
    return execFileSync('git', ['-C', goal, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 5000 });
  } catch {
    return null;
  }
}

/** The branch checked out in `checkout` (to recreate a removed worktree at it), or null when detached or outside git. */
export function branchOf(checkout: string): string | null {
  if (!existsSync(join(checkout, '.git'))) return null;
  return git(checkout, ['symbolic-ref', '--short', '-q', 'HEAD'])?.trim() || null;
}

/** HEAD and a digest of `git status` at claim time; both null outside git or before the first commit. */
export function preconditionsOf(checkout: string): Preconditions {
  if (!existsSync(join(checkout, '.git'))) return { gitHead: null, statusDigest: null };
  const head = git(checkout, ['rev-parse', '--verify', '-q', 'HEAD'])?.trim() || null;
  const status = git(checkout, ['status', '--porcelain=v1', '-z', '--untracked-files=all']);
  return { gitHead: head, statusDigest: status === null ? null : digestText(status) };
}
