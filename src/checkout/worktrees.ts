// A Todo's own linked worktree and branch (spec §7 "Start in a worktree", "Finish"): found, created,
// recreated after it was deleted, and merged back into the main checkout. Every git operation of the
// worktree features is here, run by `runGit` below with a scrubbed environment.
//
// `runGit` is this module's own small runner, not workspace.ts's `git()`: that one is on the claim's
// path and is being hardened separately; the two should become one (see docs/decisions.md).
//
// Creating a worktree runs git's checkout, so the repository's post-checkout hook runs; a merge runs
// its merge hooks. The person asked for exactly that (start --worktree, todo done --merge), as if they
// had typed the git command: documented in docs/spec.md §7, not suppressed.
import { counted } from '../core/terminal';
import { existsSync, mkdtempSync, realpathSync, rmdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import type { Env } from '../core/env';

/** How many paths a refusal names before it counts the rest. */
const NAMED_PATHS = 5;

/** Why a worktree operation was refused; the message says what to do. */
export type WorktreeErrorCode =
  /** Not inside a non-bare git repository with a commit. */
  | 'not_git'
  /** The path exists and is not the branch's worktree. */
  | 'path_taken'
  /** The branch is checked out in another worktree than the one asked for. */
  | 'branch_elsewhere'
  /** The branch name is not a valid git branch name. */
  | 'bad_branch'
  /** Neither the branch nor the captured commit exists any more. */
  | 'nothing_to_recreate'
  /** The Todo's worktree has changes (tracked or untracked) that finishing would lose or leave behind. */
  | 'worktree_dirty'
  /** The main checkout has tracked changes, or is detached, or is the Todo's worktree itself. */
  | 'main_not_ready'
  /** The Todo's branch does not exist. */
  | 'no_branch'
  /** Merging the branch would conflict (git merge-tree said so); nothing was touched. */
  | 'merge_conflict'
  /** A git command failed; its stderr is in the message. */
  | 'git_failed';

export class WorktreeError extends Error {
  constructor(
    readonly code: WorktreeErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'WorktreeError';
  }
}

/**
 * The environment git runs with: the caller's, without every GIT_* variable (GIT_DIR, GIT_WORK_TREE,
 * GIT_INDEX_FILE, GIT_CONFIG_* … set by a tool or an agent's shell would point git at another
 * repository or index) except the author and committer identity a merge commit needs; no prompt for
 * credentials, and messages in English so that stderr reads the same everywhere.
 */
function gitEnv(env: Env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (key.startsWith('GIT_') && !/^GIT_(AUTHOR|COMMITTER)_(NAME|EMAIL|DATE)$/.test(key)) continue;
    out[key] = value;
  }
  out.GIT_TERMINAL_PROMPT = '0';
  out.LC_ALL = 'C';
  return out;
}

interface GitRun {
  readonly status: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * git in `dir` with a scrubbed environment (plus `extra`); never throws for git's own exit status.
 * GIT_OPTIONAL_LOCKS=0: a `git status` of a check must not refresh and rewrite the index, so a
 * refused finish leaves the repository byte for byte as it was.
 */
async function runGit(env: Env, dir: string, args: readonly string[], extra: Record<string, string> = {}): Promise<GitRun> {
  const { spawn } = process.getBuiltinModule('node:child_process');
  // Asynchronous: the editor's extension host runs these too, and a checkout (or the repository's
  // post-checkout hook) may take long; the timeout is a backstop, not a deadline for a busy hook.
  return new Promise((resolveRun) => {
    // core.fsmonitor names a program git runs on status: a repository's config must not make us run it.
    const child = spawn('git', ['-C', dir, '-c', 'core.fsmonitor=false', ...args], {
      env: { ...gitEnv(env), GIT_OPTIONAL_LOCKS: '0', ...extra },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 10 * 60_000,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', (error) => resolveRun({ status: -1, stdout: '', stderr: error.message }));
    child.on('close', (code) => resolveRun({ status: code ?? -1, stdout, stderr }));
  });
}

/** git that must succeed: its stdout, or WorktreeError git_failed with what git said. */
async function mustGit(env: Env, dir: string, args: readonly string[]): Promise<string> {
  const run = await runGit(env, dir, args);
  if (run.status !== 0) throw new WorktreeError('git_failed', `git ${args.join(' ')} failed in ${dir}: ${run.stderr.trim() || `exit ${run.status}`}`);
  return run.stdout;
}

export interface WorktreeEntry {
  /** As git lists it (the realpath git recorded). */
  readonly path: string;
  readonly head: string | null;
  /** Short branch name; null when detached. */
  readonly branch: string | null;
  readonly bare: boolean;
  /** Registered, but its folder is gone (what `git worktree prune` would remove). */
  readonly missing: boolean;
}

/** `git worktree list --porcelain -z`: the main worktree first, then the linked ones. */
async function listWorktrees(env: Env, dir: string): Promise<WorktreeEntry[]> {
  const out = await mustGit(env, dir, ['worktree', 'list', '--porcelain', '-z']);
  const entries: WorktreeEntry[] = [];
  for (const block of out.split('\0\0')) {
    const fields = block.split('\0').filter((line) => line !== '');
    const path = fields.find((line) => line.startsWith('worktree '))?.slice('worktree '.length);
    if (path === undefined) continue;
    const head = fields.find((line) => line.startsWith('HEAD '))?.slice(5) ?? null;
    const ref = fields.find((line) => line.startsWith('branch '))?.slice(7);
    entries.push({
      path,
      head,
      branch: ref?.startsWith('refs/heads/') ? ref.slice('refs/heads/'.length) : null,
      bare: fields.includes('bare'),
      missing: !existsSync(path),
    });
  }
  return entries;
}

/** The main (first) worktree of the repository `dir` belongs to; not_git when bare or not a repository. */
export async function mainWorktree(env: Env, dir: string): Promise<WorktreeEntry> {
  let entries: WorktreeEntry[];
  try {
    entries = await listWorktrees(env, dir);
  } catch (error) {
    throw new WorktreeError('not_git', `${dir} is not in a git repository: ${(error as Error).message}`);
  }
  const main = entries[0];
  if (!main || main.bare) throw new WorktreeError('not_git', `${dir}'s repository has no main checkout (a bare repository): give --worktree <path>`);
  return main;
}

/** A Todo's branch: `<prefix><todo>`, checked with git's own rule. */
export async function todoBranch(env: Env, dir: string, prefix: string, todo: string, explicit?: string): Promise<string> {
  const branch = explicit ?? `${prefix}${todo}`;
  const run = await runGit(env, dir, ['check-ref-format', '--branch', branch]);
  if (run.status !== 0 || branch.startsWith('-')) throw new WorktreeError('bad_branch', `${JSON.stringify(branch)} is not a valid git branch name`);
  return branch;
}

/**
 * Where a Todo's worktree goes by default: `location` with `{repo}` (the main checkout's folder name)
 * and `{todo}` filled in, relative to the main checkout's parent folder; a location without `{todo}`
 * is the folder that holds one worktree per Todo.
 */
export function defaultWorktreePath(mainCheckout: string, location: string, todo: string): string {
  const filled = location.replaceAll('{repo}', basename(mainCheckout)).replaceAll('{todo}', todo);
  const path = location.includes('{todo}') ? filled : join(filled, todo);
  return isAbsolute(path) ? resolve(path) : resolve(dirname(mainCheckout), path);
}

const realOrSelf = (path: string): string => {
  try {
    return realpathSync.native(path);
  } catch {
    return resolve(path);
  }
};

const branchExists = async (env: Env, dir: string, branch: string): Promise<boolean> =>
  (await runGit(env, dir, ['rev-parse', '--verify', '-q', `refs/heads/${branch}`])).status === 0;

export interface TodoWorktree {
  /** Realpath of the worktree. */
  readonly path: string;
  readonly branch: string;
  /** Made now (false: an existing worktree of the branch was reused). */
  readonly created: boolean;
  /** The commit the branch was created at (when created with the branch), else null. */
  readonly base: string | null;
}

/**
 * The linked worktree of `branch`: reused when one exists (and `path`, if given, is it), else created
 * at `path` (`git worktree add [-b <branch>] <path> [<base>]`, the base being `dir`'s HEAD when the
 * branch is new). A path that exists and is not the branch's worktree is path_taken; nothing is
 * created then.
 */
export async function ensureWorktree(env: Env, dir: string, branch: string, path: string): Promise<TodoWorktree> {
  const entries = await listWorktrees(env, dir);
  const wanted = resolve(path);
  const current = entries.find((entry) => entry.branch === branch && !entry.missing);
  if (current) {
    if (realOrSelf(current.path) !== realOrSelf(wanted))
      throw new WorktreeError('branch_elsewhere', `branch ${branch} is checked out in ${current.path}, not ${wanted}: use that worktree or another --branch`);
    return { path: realOrSelf(current.path), branch, created: false, base: null };
  }
  if (existsSync(wanted))
    throw new WorktreeError('path_taken', `${wanted} exists and is not the worktree of branch ${branch}: remove it or give another --worktree`);
  // A registration of this branch whose folder is gone (deleted, not pruned) would make git refuse
  // the branch as checked out: it is pruned first, as `git worktree prune` would.
  if (entries.some((entry) => entry.branch === branch && entry.missing)) await mustGit(env, dir, ['worktree', 'prune']);
  let base: string | null = null;
  if (await branchExists(env, dir, branch)) await mustGit(env, dir, ['worktree', 'add', '--', wanted, branch]);
  else {
    base = (await mustGit(env, dir, ['rev-parse', '--verify', 'HEAD^{commit}'])).trim();
    await mustGit(env, dir, ['worktree', 'add', '-b', branch, '--', wanted, base]);
  }
  return { path: realOrSelf(wanted), branch, created: true, base };
}

/**
 * Recreates a removed worktree at `path` for resume: at `branch` when it still exists, else a new
 * `branch` at the captured `head`, else detached at `head` (no branch was captured). `commonDir` is
 * the repository's common git directory. Registrations of deleted worktrees are pruned first (all of
 * them, as `git worktree prune` does; a locked one is kept by git).
 */
export async function recreateWorktree(
  env: Env,
  commonDir: string,
  path: string,
  branch: string | null,
  head: string | null,
): Promise<{ readonly path: string; readonly branch: string | null }> {
  if (existsSync(path)) throw new WorktreeError('path_taken', `${path} exists: nothing to recreate`);
  const git = (args: readonly string[]) => mustGit(env, commonDir, args);
  const entries = await listWorktrees(env, commonDir);
  if (entries.some((entry) => entry.missing)) await git(['worktree', 'prune']);
  const headExists = head !== null && (await runGit(env, commonDir, ['cat-file', '-e', `${head}^{commit}`])).status === 0;
  if (branch !== null && (await branchExists(env, commonDir, branch))) {
    const other = (await listWorktrees(env, commonDir)).find((entry) => entry.branch === branch);
    if (other) throw new WorktreeError('branch_elsewhere', `branch ${branch} is checked out in ${other.path}: resume there, or remove that worktree`);
    await git(['worktree', 'add', '--', path, branch]);
  } else if (headExists && branch !== null) await git(['worktree', 'add', '-b', branch, '--', path, head]);
  else if (headExists) await git(['worktree', 'add', '--detach', '--', path, head]);
  else throw new WorktreeError('nothing_to_recreate', `neither branch ${branch ?? '(none)'} nor commit ${head ?? '(none)'} exists in ${commonDir}`);
  return { path: realOrSelf(path), branch };
}

/** A checkout's changes as `git status --porcelain` lists them ('' when clean); untracked files too unless `trackedOnly`. */
async function changesOf(env: Env, checkout: string, trackedOnly: boolean): Promise<string> {
  return await mustGit(env, checkout, ['status', '--porcelain=v1', trackedOnly ? '--untracked-files=no' : '--untracked-files=all']);
}

export const FINISH_STRATEGIES = ['merge', 'squash', 'rebase', 'keep-branch'] as const;
export type FinishStrategy = (typeof FINISH_STRATEGIES)[number];

/** What a finish will do, checked before anything is touched (planFinish) and then done (mergeFinish, removeFinished). */
export interface FinishPlan {
  readonly strategy: FinishStrategy;
  readonly branch: string;
  /** The Todo's worktree, when the branch has one whose folder exists. */
  readonly worktree: string | null;
  /** The branch's worktree is registered but its folder is gone: pruned first (git would refuse the branch as checked out). */
  readonly worktreeMissing: boolean;
  readonly removeWorktree: boolean;
  /** The main checkout and the branch checked out there, which the Todo's branch is merged into. */
  readonly main: string;
  readonly into: string;
  readonly before: { readonly head: string; readonly tree: string };
  readonly branchHead: string;
  /** Commits on the branch not on `into`: 0 means there is nothing to merge. */
  readonly ahead: number;
  /** The merged tree git merge-tree computed (null for keep-branch). */
  readonly mergedTree: string | null;
}

/**
 * Every precondition of finishing, with git run read-only: the branch exists; its worktree (if any)
 * has no changes at all; the main checkout is on a branch, is not the Todo's worktree, and has no
 * tracked changes; and `git merge-tree --write-tree` merges the branch without conflict (it writes
 * objects only, never a ref, the index or a file). Throws WorktreeError naming the first that fails.
 */
export async function planFinish(
  env: Env,
  dir: string,
  options: { readonly branch: string; readonly strategy: FinishStrategy; readonly removeWorktree: boolean },
): Promise<FinishPlan> {
  const { branch, strategy } = options;
  const main = await mainWorktree(env, dir);
  if (!(await branchExists(env, main.path, branch))) throw new WorktreeError('no_branch', `branch ${branch} does not exist in ${main.path}`);
  const worktree = (await listWorktrees(env, main.path)).find((entry) => entry.branch === branch) ?? null;
  if (worktree && realOrSelf(worktree.path) === realOrSelf(main.path))
    throw new WorktreeError('main_not_ready', `branch ${branch} is checked out in the main checkout ${main.path}: there is nothing to merge it into`);
  if (worktree && !worktree.missing) {
    const changes = await changesOf(env, worktree.path, false);
    if (changes !== '') {
      // Named, so the person knows what to commit or discard: `git status --porcelain` lines, the path after the two status letters.
      const paths = changes
        .split('\n')
        .filter(Boolean)
        .map((line) => line.slice(3));
      const named = paths.slice(0, NAMED_PATHS).join(', ') + (paths.length > NAMED_PATHS ? `, and ${paths.length - NAMED_PATHS} more` : '');
      throw new WorktreeError(
        'worktree_dirty',
        `the Todo's worktree ${worktree.path} has changes in ${counted(paths.length, 'path')} (${named}): commit or discard them first; nothing was changed`,
      );
    }
  }
  if (main.branch === null) throw new WorktreeError('main_not_ready', `the main checkout ${main.path} is detached: check out the branch to merge into`);
  if ((await changesOf(env, main.path, true)) !== '')
    throw new WorktreeError('main_not_ready', `the main checkout ${main.path} has uncommitted changes: commit or stash them first; nothing was changed`);
  const head = (await mustGit(env, main.path, ['rev-parse', '--verify', 'HEAD^{commit}'])).trim();
  const tree = (await mustGit(env, main.path, ['rev-parse', '--verify', 'HEAD^{tree}'])).trim();
  const branchHead = (await mustGit(env, main.path, ['rev-parse', '--verify', `refs/heads/${branch}^{commit}`])).trim();
  const ahead = Number((await mustGit(env, main.path, ['rev-list', '--count', `${head}..${branchHead}`])).trim());
  let mergedTree: string | null = null;
  if (strategy !== 'keep-branch' && ahead > 0) {
    // merge-tree writes the merged trees and blobs as objects: into a scratch object directory (the
    // repository's own read as an alternate), removed after, so a refused finish adds nothing either.
    const objects = resolve(main.path, (await mustGit(env, main.path, ['rev-parse', '--git-path', 'objects'])).trim());
    const scratch = mkdtempSync(join(tmpdir(), 'turnkeeper-merge-tree-'));
    let merge: GitRun;
    try {
      merge = await runGit(env, main.path, ['merge-tree', '--write-tree', '--name-only', '--no-messages', head, branchHead], {
        GIT_OBJECT_DIRECTORY: scratch,
        GIT_ALTERNATE_OBJECT_DIRECTORIES: objects,
      });
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
    if (merge.status === 1) {
      const files = merge.stdout.split('\n').slice(1).filter(Boolean);
      throw new WorktreeError(
        'merge_conflict',
        `merging ${branch} into ${main.branch} would conflict in ${counted(files.length, 'file')} (${files.slice(0, 5).join(', ')}): nothing was changed; merge ${main.branch} into ${branch} in its worktree and resolve, then finish again`,
      );
    }
    if (merge.status !== 0) throw new WorktreeError('git_failed', `git merge-tree failed: ${merge.stderr.trim() || `exit ${merge.status}`}`);
    mergedTree = merge.stdout.split('\n')[0]!.trim();
  }
  return {
    strategy,
    branch,
    worktree: worktree && !worktree.missing ? worktree.path : null,
    worktreeMissing: worktree?.missing ?? false,
    removeWorktree: options.removeWorktree,
    main: main.path,
    into: main.branch,
    before: { head, tree },
    branchHead,
    ahead,
    mergedTree,
  };
}

export interface FinishOutcome {
  readonly after: { readonly head: string; readonly tree: string };
  readonly merged: boolean;
  readonly worktreeRemoved: boolean;
  readonly branchDeleted: boolean;
  /** The branch's commit that was merged (its head when the merge ran, not when it was planned); null when nothing was. */
  readonly mergedHead: string | null;
  /** Why a worktree or branch that was to go was kept (what changed there after the plan); empty when none was. */
  readonly kept: readonly string[];
}

/**
 * The merge `plan` says, in the main checkout. A merge git still refuses (a hook, a missing identity)
 * is aborted, so the checkout is as before, and WorktreeError git_failed says why. Returns the
 * branch's commit that was merged (its head when the merge ran), or null when nothing was to merge.
 */
export async function mergeFinish(env: Env, plan: FinishPlan, message: string): Promise<string | null> {
  const at = plan.main;
  if (plan.worktreeMissing) await mustGit(env, at, ['worktree', 'prune']);
  if (plan.strategy === 'keep-branch' || plan.ahead === 0) return null;
  // The branch as it is now: a commit made on it since the plan (an agent finishing its work) is
  // merged too, and recorded as what was merged. git itself refuses a conflict the plan did not see.
  const head = (await branchHeadOf(env, at, plan.branch)) ?? plan.branchHead;
  if (plan.strategy === 'merge') {
    const run = await runGit(env, at, ['merge', '--no-ff', '-m', message, head]);
    if (run.status !== 0) await abortAndThrow(env, at, 'merge', run);
    return head;
  }
  if (plan.strategy === 'squash') {
    const run = await runGit(env, at, ['merge', '--squash', head]);
    if (run.status !== 0) await abortAndThrow(env, at, 'merge --squash', run);
    const commit = await runGit(env, at, ['commit', '-m', message]);
    if (commit.status !== 0) {
      // Back to the head before: the squashed changes are in the index and files only.
      await runGit(env, at, ['reset', '--hard', plan.before.head]);
      throw new WorktreeError(
        'git_failed',
        `git commit of the squash failed: ${commit.stderr.trim() || commit.stdout.trim()}; the main checkout is back at ${plan.before.head}`,
      );
    }
    return head;
  }
  // Rebase the branch onto the main branch (in its worktree, or in the main checkout's repository by
  // name when it has none), then fast-forward the main branch to it.
  const where = plan.worktree ?? at;
  const rebase = await runGit(env, where, plan.worktree ? ['rebase', plan.into] : ['rebase', plan.into, plan.branch]);
  if (rebase.status !== 0) {
    await runGit(env, where, ['rebase', '--abort']);
    throw new WorktreeError(
      'merge_conflict',
      `rebasing ${plan.branch} onto ${plan.into} stopped (${rebase.stderr.trim().split('\n')[0] ?? ''}); it was aborted, nothing was changed`,
    );
  }
  if (!plan.worktree) await mustGit(env, at, ['checkout', '-q', plan.into]);
  const ff = await runGit(env, at, ['merge', '--ff-only', `refs/heads/${plan.branch}`]);
  if (ff.status !== 0) await abortAndThrow(env, at, 'merge --ff-only', ff);
  return (await mustGit(env, at, ['rev-parse', '--verify', 'HEAD^{commit}'])).trim();
}

/**
 * After the merge: the worktree and branch removed when asked, and only what is safe (the branch is
 * kept with keep-branch), then the main checkout's HEAD. From here git's merge is done: what cannot be
 * removed is kept and said, never a failure that would leave the merge in the main branch and the Todo
 * unrecorded.
 */
export async function removeFinished(env: Env, plan: FinishPlan, mergedHead: string | null): Promise<FinishOutcome> {
  const at = plan.main;
  const kept: string[] = [];
  let worktreeRemoved = false;
  if (plan.removeWorktree && plan.worktree && !existsSync(plan.worktree)) {
    // Gone already: removed by this finish's interrupted run (spec §7 "Finish", a rerun after a crash).
    worktreeRemoved = true;
  } else if (plan.removeWorktree && plan.worktree) {
    // Without --force: a file written there after the plan (an agent still at work) keeps it.
    const remove = await runGit(env, at, ['worktree', 'remove', '--', plan.worktree]);
    if (remove.status === 0) worktreeRemoved = true;
    else kept.push(`worktree ${plan.worktree} kept: ${(remove.stderr.trim() || remove.stdout.trim()).split('\n')[0] ?? 'git worktree remove failed'}`);
  }
  if (worktreeRemoved && plan.worktree) removeEmptyWorktreesFolder(plan.main, plan.worktree);
  const now = await branchHeadOf(env, at, plan.branch);
  // A branch that is gone was deleted by this finish's interrupted run (it existed when it was planned).
  let branchDeleted = plan.removeWorktree && plan.strategy !== 'keep-branch' && now === undefined;
  if (plan.removeWorktree && plan.strategy !== 'keep-branch' && now !== undefined) {
    // Deleted only when everything on it is in the main branch now: a commit made on it after the
    // merge (the agent, a hook) was merged by nobody and would be lost with it. A merge or a rebase
    // leaves the branch an ancestor of the main branch; a squash leaves it at the head that was squashed.
    const contained = plan.strategy === 'squash' ? now === mergedHead : (await runGit(env, at, ['merge-base', '--is-ancestor', now, 'HEAD'])).status === 0;
    if (contained) {
      await mustGit(env, at, ['branch', '-D', '--', plan.branch]);
      branchDeleted = true;
    } else kept.push(`branch ${plan.branch} kept: it moved to ${now.slice(0, 12)} after the merge, and that is not merged`);
  }
  const head = (await mustGit(env, at, ['rev-parse', '--verify', 'HEAD^{commit}'])).trim();
  const tree = (await mustGit(env, at, ['rev-parse', '--verify', 'HEAD^{tree}'])).trim();
  return { after: { head, tree }, merged: mergedHead !== null, worktreeRemoved, branchDeleted, mergedHead, kept };
}

/**
 * The folder that holds the Todos' worktrees at the default place (`<repo>.worktrees`, beside the
 * main checkout), removed once its last worktree is: the finish leaves nothing it made behind. Only
 * that folder, only when empty (rmdir refuses one that is not: a file someone put there keeps it).
 */
function removeEmptyWorktreesFolder(main: string, worktree: string): void {
  const folder = dirname(worktree);
  if (folder !== join(dirname(main), `${basename(main)}.worktrees`)) return;
  try {
    rmdirSync(folder);
  } catch {
    // not empty, or already gone: either way nothing to do
  }
}

/** A branch's commit, or undefined when there is no such branch. */
async function branchHeadOf(env: Env, at: string, branch: string): Promise<string | undefined> {
  return (await runGit(env, at, ['rev-parse', '--verify', '-q', `refs/heads/${branch}^{commit}`])).stdout.trim() || undefined;
}

/**
 * Whether a finish planned as `plan` made its merge before it was interrupted (killed after git, before
 * the store recorded it): the main checkout is still on `plan.into` and holds a commit with the
 * finish's `message` after `plan.before.head` (a merge or a squash), or the branch fast-forwarded into it
 * (a rebase). Returns what was merged, as mergeFinish would have, or null when git did nothing yet.
 */
export async function mergedBefore(env: Env, plan: FinishPlan, message: string): Promise<string | null> {
  const at = plan.main;
  if (plan.strategy === 'keep-branch' || plan.ahead === 0) return null;
  const on = (await runGit(env, at, ['symbolic-ref', '--short', '-q', 'HEAD'])).stdout.trim();
  const head = (await runGit(env, at, ['rev-parse', '--verify', '-q', 'HEAD^{commit}'])).stdout.trim();
  if (on !== plan.into || head === '' || head === plan.before.head) return null;
  if ((await runGit(env, at, ['merge-base', '--is-ancestor', plan.before.head, head])).status !== 0) return null;
  if (plan.strategy === 'rebase') {
    const branch = await branchHeadOf(env, at, plan.branch);
    // The branch deleted after the merge: only a finish deletes it, and only once it is merged.
    if (branch === undefined) return head;
    return (await runGit(env, at, ['merge-base', '--is-ancestor', branch, head])).status === 0 ? branch : null;
  }
  const log = (await runGit(env, at, ['log', '--format=%P%x00%B%x01', `${plan.before.head}..${head}`])).stdout;
  for (const entry of log.split('\x01')) {
    const [parents = '', body = ''] = entry.replace(/^\n/, '').split('\0');
    if (body.trim() !== message.trim()) continue;
    return plan.strategy === 'merge' ? (parents.split(' ')[1] ?? plan.branchHead) : plan.branchHead;
  }
  return null;
}

async function abortAndThrow(env: Env, at: string, what: string, run: GitRun): Promise<never> {
  await runGit(env, at, ['merge', '--abort']);
  throw new WorktreeError('git_failed', `git ${what} failed: ${(run.stderr.trim() || run.stdout.trim()).split('\n').slice(0, 3).join(' ')}; it was aborted`);
}
