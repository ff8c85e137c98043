// Goals and git preconditions (contract §1, §3). The Goal is found by walking up to `.git` without
// spawning git, because it sits on every hook's hot path; git itself runs only when a claim is made.
import { existsSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { digestText } from '../core/canonical';
import type { Preconditions } from '../core/ready';

/** Realpath of the git top level containing `cwd`, or of `cwd` itself outside git. */
export function goalOf(cwd: string): string {
  const real = realpathSync(cwd);
  for (let dir = real; ; dir = dirname(dir)) {
    if (existsSync(join(dir, '.git'))) return dir;
    if (dirname(dir) === dir) return real;
  }
}

function git(goal: string, args: string[]): string | null {
  // Loaded on first use: node:child_process adds to every hook's start-up (bench row S1), and only claims need git.
  const { execFileSync } = process.getBuiltinModule('node:child_process') as typeof import('node:child_process');
  try {
    return execFileSync('git', ['-C', goal, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 5000 });
  } catch {
    return null;
  }
}

/** HEAD and a digest of `git status` at claim time; both null outside git or before the first commit. */
export function preconditionsOf(goal: string): Preconditions {
  if (!existsSync(join(goal, '.git'))) return { gitHead: null, statusDigest: null };
  const head = git(goal, ['rev-parse', '--verify', '-q', 'HEAD'])?.trim() || null;
  const status = git(goal, ['status', '--porcelain=v1', '-z', '--untracked-files=all']);
  return { gitHead: head, statusDigest: status === null ? null : digestText(status) };
}
