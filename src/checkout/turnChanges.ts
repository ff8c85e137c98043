// What a turn changed in its checkout (spec §5 "turn_ended"): git HEAD and a digest of the whole
// working tree (tracked and untracked files, .gitignore honoured, no index flag hiding a change) at the turn's prompt and at its
// stop, and the paths between the two trees. Every git call goes through the one runner of
// workspace.ts (its binary, options, scrubbed environment and disabled filter drivers); nothing here writes to the repository: the tree is
// built in a temporary copy of the index and written as loose objects only (git's own
// `git stash create` writes objects the same way), so the checkout's index and refs never move.
import { randomBytes } from 'node:crypto';
import { constants, copyFileSync, lstatSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { checkoutGit, type CheckoutGit, type GitCallerEnv } from './workspace';

/** A checkout's HEAD and working-tree digest (a git tree id); null outside git, before the first commit (head), or when git failed. */
export interface TreeState {
  readonly head: string | null;
  readonly tree: string | null;
}

/** The paths a turn changed (names and counts, never content), at most MAX_CHANGED_PATHS names. */
export interface TurnChanges {
  /** `<status>\t<path>` (A, M, D, T), in git's order, cut at MAX_CHANGED_PATHS. */
  readonly paths: readonly string[];
  readonly count: number;
  readonly added: number;
  readonly modified: number;
  readonly deleted: number;
}

const MAX_CHANGED_PATHS = 200;

/** Past this the turn's tree is not built (a 1M-file repository's index is about 100 MB). */
const MAX_INDEX_BYTES = 256 * 1024 * 1024;

/**
 * Wall time the stop hook gives git, in ms: a call is started only while the budget lasts, and each
 * has the runner's own timeout, so a huge repository costs at most this plus one call, and the agent's
 * hook timeout (15 s) is never reached.
 */
const GIT_BUDGET_MS = 4000;

const OBJECT_ID = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/;
const objectId = (out: string | null): string | null => {
  const id = out?.trim() ?? '';
  return OBJECT_ID.test(id) ? id : null;
};

/**
 * HEAD and the tree of the working tree as a fresh index would stage it (`git add -A` with no index
 * flag hiding a change, and untracked files hidden by a .gitignore only), built in a temporary copy of the checkout's index
 * (`gitDir` is the checkout's own git directory: a worktree's, not the common one) and removed after.
 * The copy sits beside the index, as `git stash` keeps its own (`index.stash.<pid>`): never in TMPDIR,
 * which may be shared with other users (test/integration/compile-cache.test.ts). Submodules keep the
 * commit the index records: `add` would run `git status` inside each, under the submodule's own
 * config (its filter drivers), so their paths are excluded (a submodule's new commits do not count).
 */
export function treeStateOf(
  checkout: string,
  gitDir: string | null,
  env: GitCallerEnv = process.env,
  clock: () => number = Date.now,
  session?: CheckoutGit,
): TreeState {
  if (gitDir === null) return { head: null, tree: null };
  const started = clock();
  const inBudget = (): boolean => clock() - started < GIT_BUDGET_MS;
  const git = session ?? checkoutGit(checkout, GIT_BUDGET_MS, env);
  if (git === undefined) return { head: null, tree: null };
  const head = git.head();
  if (!inBudget()) return { head, tree: null };
  // pid and a random part: the warm hook server builds trees for several sessions of one checkout at once.
  const index = join(gitDir, `turnkeeper-index.${process.pid}.${randomBytes(4).toString('hex')}`);
  // The index as a regular file of a sane size only: one the agent replaced with a link to /dev/zero
  // or a FIFO would have the copy fill the disk or hang the stop hook.
  const real = lstatSync(join(gitDir, 'index'), { throwIfNoEntry: false });
  if (real !== undefined && (!real.isFile() || real.size > MAX_INDEX_BYTES)) return { head, tree: null };
  try {
    // The real index's stat data lets `add -A` skip unchanged files; none yet (no commit, nothing
    // staged) is an empty start. COPYFILE_EXCL: never over a file someone planted at that name.
    copyFileSync(join(gitDir, 'index'), index, constants.COPYFILE_EXCL);
  } catch (error) {
    const { code, path } = error as NodeJS.ErrnoException;
    if (code !== 'ENOENT' || path !== join(gitDir, 'index')) return { head, tree: null };
  }
  try {
    // Fail safe: `add` runs only once git itself said it uses the index GIT_INDEX_FILE names (asked
    // with HEAD, in one run). A runner that stopped passing the variable on would otherwise stage
    // into the person's own index.
    if (!git.usesIndexFile()) return { head, tree: null };
    const temporary = { GIT_INDEX_FILE: index };
    // The index's entries and the untracked files in one run: `add -u` below changes neither which
    // paths are untracked nor the flags read here. Untracked files: only a .gitignore hides one.
    // `$GIT_DIR/info/exclude` and core.excludesFile are not in the tree, so a line the agent adds there
    // would hide a file with no trace in the turn.
    const listed = git.run(['ls-files', '--stage', '-v', '--others', '--exclude-per-directory=.gitignore', '-z'], temporary);
    if (listed === null) return { head, tree: null };
    const { submodules, assumed, skipped, untracked } = indexEntriesOf(listed, checkout);
    // The flags that hide a change from `add` are cleared in the copy (the stat cache stays, so only
    // files whose stat changed are hashed): assume-unchanged, and skip-worktree on a file that is
    // there (a sparse checkout's absent files keep theirs). update-index clears one kind per run.
    const nul = (paths: readonly string[]) => paths.map((path) => `${path}\0`).join('');
    if (assumed.length > 0 && git.run(['update-index', '-z', '--no-assume-unchanged', '--stdin'], temporary, nul(assumed)) === null)
      return { head, tree: null };
    if (skipped.length > 0 && git.run(['update-index', '-z', '--no-skip-worktree', '--stdin'], temporary, nul(skipped)) === null) return { head, tree: null };
    const excluded = submodules.map((path) => `:(exclude,literal)${path}`);
    if (git.run(['add', '-u', '--', '.', ...excluded], temporary) === null || !inBudget()) return { head, tree: null };
    if (
      untracked.length > 0 &&
      git.run(['--literal-pathspecs', 'add', '-f', '--pathspec-from-file=-', '--pathspec-file-nul'], temporary, nul(untracked)) === null
    )
      return { head, tree: null };
    return { head, tree: objectId(git.run(['write-tree'], temporary)) };
  } finally {
    rmSync(index, { force: true });
  }
}

/**
 * What `ls-files --stage -v --others -z` says: the untracked files (tagged `?`, no stage data), the
 * submodules (mode 160000), and the paths whose flags hide a change: assume-unchanged (a lower-case
 * tag) and skip-worktree (S) on a file present in `checkout`.
 */
function indexEntriesOf(listed: string, checkout: string): { submodules: string[]; assumed: string[]; skipped: string[]; untracked: string[] } {
  const submodules: string[] = [];
  const assumed = new Set<string>();
  const skipped = new Set<string>();
  const untracked: string[] = [];
  for (const entry of listed.split('\0')) {
    if (entry.startsWith('? ')) {
      untracked.push(entry.slice(2));
      continue;
    }
    const tab = entry.indexOf('\t');
    if (tab < 0) continue;
    const [tag = '', mode] = entry.slice(0, tab).split(' ');
    const path = entry.slice(tab + 1);
    if (mode === '160000') submodules.push(path);
    if (tag !== tag.toUpperCase()) assumed.add(path);
    if (tag.toUpperCase() === 'S' && lstatSync(join(checkout, path), { throwIfNoEntry: false }) !== undefined) skipped.add(path);
  }
  return { submodules, assumed: [...assumed], skipped: [...skipped], untracked };
}

/** The paths between two trees (`git diff-tree`, plumbing: no diff drivers, no renames), or null when either is unknown or git failed. */
export function changesBetween(
  checkout: string,
  before: string | null,
  after: string | null,
  env: GitCallerEnv = process.env,
  session?: CheckoutGit,
): TurnChanges | null {
  if (before === null || after === null) return null;
  if (before === after) return { paths: [], count: 0, added: 0, modified: 0, deleted: 0 };
  const out = (session ?? checkoutGit(checkout, GIT_BUDGET_MS, env))?.run(['diff-tree', '-r', '-z', '--no-renames', '--name-status', before, after]) ?? null;
  if (out === null) return null;
  const fields = out.split('\0');
  const paths: string[] = [];
  let count = 0;
  let added = 0;
  let modified = 0;
  let deleted = 0;
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const status = fields[i]!;
    const path = fields[i + 1]!;
    if (status === '') break;
    count += 1;
    if (status === 'A') added += 1;
    else if (status === 'D') deleted += 1;
    else modified += 1;
    if (paths.length < MAX_CHANGED_PATHS) paths.push(`${status}\t${path}`);
  }
  return { paths, count, added, modified, deleted };
}
