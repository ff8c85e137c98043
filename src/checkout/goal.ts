// Finds the Goal and the Checkout of a directory (spec §1) with a few file reads and no git
// process: it runs on every hook. Discovery follows git's own (setup.c): walk up to the first `.git`
// (a directory, or a file `gitdir: <path>`), or to a directory that is itself a git directory (a
// bare repository, or inside `.git`), never across a file-system boundary. The environment
// (GIT_DIR, GIT_WORK_TREE, GIT_CEILING_DIRECTORIES…) is ignored: a hook is about the directory the
// agent works in, not about variables a tool call may have set. The rules are in docs/goals.md.
import type { Placement } from '../store/authority';
import { realpathSync, statSync } from 'node:fs';
import { readConfigFile } from '../files/boundedFile';
import { dirname, join, resolve } from 'node:path';
import {
  displayNameOf,
  GOAL_FILE,
  GoalError,
  gitConfigFlag,
  gitConfigValue,
  goalIdOf,
  localKeyOf,
  MAX_GOAL_FILE_BYTES,
  normalizeRemoteUrl,
  originOf,
  parseGitConfig,
  parseTurnkeeperJson,
  type GitConfigEntry,
  type OriginLookup,
} from '../core/goal';

type GoalRule = 'turnkeeper_json' | 'origin' | 'common_dir' | 'not_git';

export interface ResolvedGoal {
  /** `goal_<24 hex>` of `key`. */
  readonly id: string;
  readonly key: string;
  /** The rule that gave the key. */
  readonly rule: GoalRule;
  readonly displayName: string;
  /**
   * Realpath of the worktree root containing the directory; when the directory is inside a git
   * directory (a bare repository, or `.git` itself) that git directory; outside git the directory.
   */
  readonly checkout: string;
  /** Realpath of the repository's common git directory, shared by all its worktrees; null outside git. */
  readonly commonDir: string | null;
  /** This checkout's own git directory (its HEAD; for a linked worktree `<commonDir>/worktrees/<name>`); null outside git. */
  readonly gitDir: string | null;
  /** The directory is inside a git directory, not a worktree: no `.turnkeeper.json` is read. */
  readonly inGitDir: boolean;
  /** Why an `origin` URL was passed over for rule (c), for `turnkeeper goal` to explain; else null. */
  readonly originSkipped: string | null;
}

const stat = (path: string) => statSync(path, { throwIfNoEntry: false });

/** The longest `.git` or `commondir` file read: one line holding a path. */
const MAX_GIT_POINTER_BYTES = 8 * 1024;

/**
 * A file of the checkout as text, or undefined when there is none. Every hook reads these, and a
 * repository decides what they are: a FIFO, a device or a link to /dev/zero must not hang the hook,
 * so they are read as small regular files only (src/files/boundedFile.ts); else `problem` throws.
 */
function readCheckoutFile(path: string, maxBytes: number, problem: (why: string) => Error): string | undefined {
  const read = readConfigFile(path, maxBytes);
  if (read.kind === 'refused') throw problem(read.problem);
  return read.kind === 'bytes' ? read.bytes.toString('utf8') : undefined;
}

/** Throws GoalError when the checkout names its repository wrongly (see GoalErrorCode). */
export function resolveGoal(cwd: string): ResolvedGoal {
  const start = realpathSync.native(cwd);
  let device: number | undefined;
  for (let dir = start; ;) {
    const dotGit = join(dir, '.git');
    const info = stat(dotGit);
    if (info?.isFile()) {
      const gitDir = readGitFile(dotGit, dir);
      const commonDir = commonDirOf(gitDir);
      if (commonDir === null) throw new GoalError('gitdir_missing', `${dotGit} points at ${gitDir}, which is not a git directory`, dotGit);
      return goalOfRepository(gitDir, commonDir, dir, false);
    }
    if (info?.isDirectory()) {
      const commonDir = commonDirOf(dotGit);
      if (commonDir !== null) return goalOfRepository(dotGit, commonDir, dir, false);
    }
    const ownCommonDir = commonDirOf(dir);
    if (ownCommonDir !== null) return goalOfRepository(dir, ownCommonDir, dir, true);
    const parent = dirname(dir);
    if (parent === dir) break;
    device ??= statSync(start).dev;
    if (statSync(parent).dev !== device) break;
    dir = parent;
  }
  const key = localKeyOf(start);
  return {
    id: goalIdOf(key),
    key,
    rule: 'not_git',
    displayName: displayNameOf(null, start),
    checkout: start,
    commonDir: null,
    gitDir: null,
    inGitDir: false,
    originSkipped: null,
  };
}

/** The git directory a `.git` file names (relative paths are relative to the file's folder). */
function readGitFile(file: string, dir: string): string {
  // git strips trailing CR and LF only; the rest of the line is the path, spaces and all.
  const unreadable = (why: string) => new GoalError('gitfile_invalid', `cannot be read: ${why}`, file);
  const text = (readCheckoutFile(file, MAX_GIT_POINTER_BYTES, unreadable) ?? '').replace(/[\r\n]+$/, '');
  if (!text.startsWith('gitdir: ') || text.length === 'gitdir: '.length || text.includes('\n'))
    throw new GoalError('gitfile_invalid', 'a .git file must hold one line "gitdir: <path>"', file);
  return resolve(dir, text.slice('gitdir: '.length));
}

/**
 * The common directory of `gitDir` (its `commondir` file, relative to it, for a linked worktree;
 * else itself) when `gitDir` is a git directory as git tests it: a HEAD file, and `objects` and
 * `refs` directories in the common directory. Null otherwise.
 */
function commonDirOf(gitDir: string): string | null {
  if (!stat(join(gitDir, 'HEAD'))?.isFile()) return null;
  let common = gitDir;
  const pointer = join(gitDir, 'commondir');
  const named = readCheckoutFile(pointer, MAX_GIT_POINTER_BYTES, (why) => new GoalError('gitfile_invalid', `commondir cannot be read: ${why}`, pointer));
  if (named !== undefined) common = resolve(gitDir, named.replace(/[\r\n]+$/, ''));
  if (!stat(join(common, 'objects'))?.isDirectory() || !stat(join(common, 'refs'))?.isDirectory()) return null;
  return common;
}

function goalOfRepository(gitDir: string, commonDirPath: string, dir: string, foundInGitDir: boolean): ResolvedGoal {
  const commonDir = realpathSync.native(commonDirPath);
  const config = readConfig(join(commonDir, 'config'));
  let checkout = dir;
  let inGitDir = foundInGitDir;
  // git applies core.bare and core.worktree of the common config only to a repository's own git
  // directory, never to a linked worktree (one with a `commondir` file).
  if (!inGitDir && commonDirPath === gitDir && !('error' in config)) {
    const worktree = gitConfigValue(config, 'core.worktree');
    if (gitConfigFlag(config, 'core.bare')) {
      inGitDir = true;
      checkout = realpathSync.native(gitDir);
    } else if (typeof worktree === 'string' && worktree !== '') {
      checkout = realpathSync.native(resolve(gitDir, worktree));
    }
  }
  const base = { displayName: displayNameOf(commonDir, checkout), checkout, commonDir, gitDir, inGitDir };

  if (!inGitDir) {
    const goal = readGoalFile(join(checkout, GOAL_FILE));
    if (goal !== undefined) return { ...base, id: goalIdOf(goal), key: goal, rule: 'turnkeeper_json', originSkipped: null };
  }

  let originSkipped: string | null = null;
  const origin = originLookup(gitDir, config);
  if (origin !== undefined && 'exotic' in origin) originSkipped = origin.exotic;
  else if (origin !== undefined) {
    const key = normalizeRemoteUrl(origin.url);
    if (key !== undefined) return { ...base, id: goalIdOf(key), key, rule: 'origin', originSkipped: null };
    originSkipped = 'the origin URL is a local path or a form Turnkeeper does not key (see docs/goals.md)';
  }
  const key = localKeyOf(commonDir);
  return { ...base, id: goalIdOf(key), key, rule: 'common_dir', originSkipped };
}

function readGoalFile(path: string): string | undefined {
  try {
    const text = readCheckoutFile(path, MAX_GOAL_FILE_BYTES, (why) => new GoalError('turnkeeper_json_invalid', why));
    return text === undefined ? undefined : parseTurnkeeperJson(text).goal;
  } catch (error) {
    if (error instanceof GoalError) throw new GoalError(error.code, error.detail, path);
    throw new GoalError('turnkeeper_json_invalid', `cannot be read: ${(error as Error).message}`, path);
  }
}

/**
 * The `origin` of this checkout from the files that can set it: the common `config`, then, when
 * `extensions.worktreeConfig` is on, the checkout's own `config.worktree`. A file that cannot be
 * read is exotic: the rest cannot be trusted to be the whole story.
 */
function originLookup(gitDir: string, common: ConfigRead): OriginLookup {
  if ('error' in common) return { exotic: common.error };
  if (!gitConfigFlag(common, 'extensions.worktreeconfig')) return originOf(common);
  const own = readConfig(join(gitDir, 'config.worktree'));
  if ('error' in own) return { exotic: own.error };
  return originOf([...common, ...own]);
}

type ConfigRead = readonly GitConfigEntry[] | { readonly error: string };

function readConfig(path: string): ConfigRead {
  const read = readConfigFile(path);
  if (read.kind === 'missing') return [];
  if (read.kind === 'refused') return { error: `the git config ${path} cannot be read: ${read.problem}` };
  const entries = parseGitConfig(read.bytes.toString('utf8'));
  return 'error' in entries ? { error: `${path} cannot be read as git config: ${entries.error}` } : entries;
}

/** Where a resolved Goal was found, as the store records it with what happens there (spec §1 "Checkout"). */
export const placementOf = (goal: ResolvedGoal): Placement & { readonly goal: string } => ({
  goal: goal.id,
  checkout: goal.checkout,
  commonDir: goal.commonDir,
  // The registry key of a repository is its common git directory, shared by every worktree.
  place: goal.commonDir ?? goal.checkout,
  goalKey: goal.key,
  displayName: goal.displayName,
});
