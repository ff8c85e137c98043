// Git facts of a checkout at claim time (spec §3): its preconditions and its branch. The Goal (spec §1)
// is found by ./goal.ts from the git layout without spawning git, because it sits on every hook's hot
// path; git itself runs only when a claim is made.
//
// Every git run here must start no program that the checkout (its config, attributes, hooks or
// files) or the agent's environment names (spec §10, docs/decisions.md "A claim's git runs no program the checkout names"): a
// sandboxed agent can often write its checkout, and the hook runs outside the sandbox. `git status`
// is the door: it refreshes the index, which for a stat-dirty or racily-clean file hashes the file
// through its `filter=` driver (a `clean` or `process` command from any config), asks core.fsmonitor,
// writes the index (running the post-index-change hook), runs `git status` inside each submodule (with
// the submodule's own config), and may fetch missing objects of a partial clone.
import { accessSync, constants, existsSync, realpathSync, statSync } from 'node:fs';
import { readConfigFile } from '../files/boundedFile';
import { delimiter, isAbsolute, join, sep } from 'node:path';
import { digestText } from '../core/canonical';
import type { Preconditions } from '../core/ready';

/** Wall time every git run of one claim shares: the hook's own timeout is 15 s. */
const GIT_BUDGET_MS = 8000;

/**
 * Options before the subcommand, for every run: no pager (stdout is a pipe anyway, and GIT_PAGER is
 * dropped), no optional index write (so no post-index-change hook, and no index.lock a person's own
 * `git add` could trip over), no fsmonitor program, hooks from nowhere (/dev/null is not a directory).
 */
const SAFE_OPTIONS = ['--no-pager', '--no-optional-locks', '-c', 'core.fsmonitor=false', '-c', 'core.hooksPath=/dev/null'];

/**
 * The environment git runs with: the hook's, without a single GIT_* variable (GIT_CONFIG_PARAMETERS
 * and GIT_CONFIG_COUNT would add config, GIT_DIR/GIT_WORK_TREE/GIT_INDEX_FILE would point git at
 * another repository, GIT_EXTERNAL_DIFF, GIT_PAGER, GIT_SSH_COMMAND, GIT_ASKPASS, GIT_EXEC_PATH
 * name programs) or PAGER. An agent's environment may come from the repository (Gemini CLI loads its
 * `.env`). GIT_ALLOW_PROTOCOL empty allows no transport at all, overriding every protocol.*.allow of
 * any config: a lazy fetch of a partial clone fails before a transport (ssh, a remote helper,
 * uploadpack) could start. The system config (/etc/gitconfig, root's) and the user's global one stay:
 * they are read for what they say about line endings and safe.directory, as the person's own git does,
 * and their filter drivers are disabled like every other (below).
 */
function gitEnvironment(base: GitCallerEnv, extra: Readonly<Record<string, string>>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(base)) {
    if (value === undefined || /^GIT_/i.test(name) || name === 'PAGER') continue;
    env[name] = value;
  }
  return { ...env, GIT_ALLOW_PROTOCOL: '', GIT_TERMINAL_PROMPT: '0', ...extra };
}

/**
 * The git binary: the first executable `git` in an absolute PATH entry outside the checkout. A
 * relative or empty entry is relative to the hook's working directory, the checkout, and a directory
 * inside it (`node_modules/.bin` when the agent runs under npm) is the checkout's to fill: either
 * would let the checkout name the program a claim runs as `git`.
 */
function gitBinary(checkout: string, path: string | undefined): string | undefined {
  let inside: string;
  try {
    inside = realpathSync(checkout);
  } catch {
    return undefined;
  }
  for (const entry of (path ?? '').split(delimiter)) {
    if (!isAbsolute(entry)) continue;
    let dir: string;
    try {
      dir = realpathSync(entry);
    } catch {
      continue;
    }
    if (dir === inside || dir.startsWith(inside.endsWith(sep) ? inside : inside + sep)) continue;
    const candidate = join(dir, 'git');
    try {
      if (!statSync(candidate).isFile()) continue;
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      continue;
    }
  }
  return undefined;
}

/**
 * The environment of whoever asked: the hook's own (its process's, or the request's when the warm hook
 * server runs it: src/cli/hookServer.ts), never the server's. git reads PATH, HOME, XDG_CONFIG_HOME and
 * more from it.
 */
export type GitCallerEnv = Readonly<Record<string, string | undefined>>;

interface GitRun {
  readonly binary: string;
  readonly goal: string;
  readonly deadline: number;
  readonly env: GitCallerEnv;
}

function startRun(checkout: string, env: GitCallerEnv, budgetMs = GIT_BUDGET_MS): GitRun | undefined {
  const binary = gitBinary(checkout, env.PATH);
  return binary === undefined ? undefined : { binary, goal: checkout, deadline: Date.now() + budgetMs, env };
}

/** git's exit status and stdout; null when it could not run, timed out or was killed. */
function git(run: GitRun, args: readonly string[], extraEnv: Readonly<Record<string, string>> = {}, input?: string): { status: number; stdout: string } | null {
  const timeout = run.deadline - Date.now();
  if (timeout <= 0) return null;
  // Loaded on first use: node:child_process adds to every hook's start-up (bench row S1), and only claims need git.
  const { spawnSync } = process.getBuiltinModule('node:child_process');
  const result = spawnSync(run.binary, [...SAFE_OPTIONS, '-C', run.goal, ...args], {
    encoding: 'utf8',
    env: gitEnvironment(run.env, extraEnv),
    stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'ignore'],
    ...(input === undefined ? {} : { input }),
    timeout,
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.error !== undefined || result.status === null) return null;
  return { status: result.status, stdout: result.stdout };
}

const gitOk = (run: GitRun, args: readonly string[], extraEnv?: Readonly<Record<string, string>>, input?: string): string | null => {
  const result = git(run, args, extraEnv, input);
  return result?.status === 0 ? result.stdout : null;
};

/**
 * Every filter driver any config of this checkout names (`filter.<name>.*`, includes and
 * config.worktree included), as `-c` options that disable it: an empty clean, smudge and process
 * command is no command (git's convert.c runs a driver only for a non-empty one, and a driver with
 * `process` set never falls back to `clean`), and `required=false` keeps an attribute naming it from
 * failing the status. Command-line config outranks every config file. `git config` itself runs no
 * program. Null when the config cannot be read (status would fail on it too), or when a name holds
 * `=`: git splits a `-c` option at its first `=`, so no option can name that driver (GIT_CONFIG_COUNT
 * could, but git before 2.31, Ubuntu 20.04's included, ignores it, which would leave every driver
 * running), and the status is not run at all.
 *
 * A writer that adds a driver to the checkout's config between this run and the status (a few
 * milliseconds, while the agent waits for its hook) is not covered: git 2.39 has no way to ignore the
 * attributes' `filter=` (no --attr-source) nor a repository's own config.
 */
function disabledFilters(run: GitRun): string[] | null {
  const listed = git(run, ['config', '--null', '--get-regexp', '^filter\\.']);
  if (listed === null) return null;
  // Exit 1 with nothing printed: no such key anywhere.
  if (listed.status === 1 && listed.stdout === '') return [];
  if (listed.status !== 0) return null;
  const names = new Set<string>();
  for (const entry of listed.stdout.split('\0')) {
    const key = entry.split('\n', 1)[0] ?? '';
    const last = key.lastIndexOf('.');
    // `filter.<name>.<key>`; a `filter.<key>` without a name names no driver.
    if (last > 'filter.'.length) names.add(key.slice('filter.'.length, last));
  }
  const options: string[] = [];
  for (const name of names) {
    if (name.includes('=')) return null;
    options.push('-c', `filter.${name}.clean=`, '-c', `filter.${name}.smudge=`, '-c', `filter.${name}.process=`, '-c', `filter.${name}.required=false`);
  }
  return options;
}

/**
 * The branch checked out in a checkout, from its git directory's HEAD file (no git process: a claim
 * already runs three), to recreate a removed worktree at it; null when detached, or with no git
 * directory. A repository on the reftable backend keeps HEAD in its tables (the file then names
 * `refs/heads/.invalid`): only there is git asked.
 */
export function branchOf(gitDir: string | null, checkout: string, env: GitCallerEnv = process.env): string | null {
  if (gitDir === null) return null;
  // A small regular file only: a FIFO or /dev/zero planted as HEAD must not hang the claim.
  const read = readConfigFile(join(gitDir, 'HEAD'), 64 * 1024);
  if (read.kind !== 'bytes') return null;
  const head = read.bytes.toString('utf8').trim();
  const ref = /^ref: refs\/heads\/(.+)$/.exec(head)?.[1];
  if (ref === '.invalid') {
    const run = startRun(checkout, env);
    return (run && gitOk(run, ['symbolic-ref', '--short', '-q', 'HEAD'])?.trim()) || null;
  }
  return ref ?? null;
}

/**
 * HEAD and a digest of `git status` at claim time; both null outside git or before the first commit.
 * The status is `--porcelain=v1 -z --untracked-files=all` as a person's git prints it for an ordinary
 * checkout (resume compares it with the capture's, test/integration/git-safety.test.ts checks they
 * agree), with two differences: `--ignore-submodules=dirty` (a submodule's new commits count, edits
 * inside it do not: looking would run git in it under its own config), and no filter driver (an LFS
 * file whose stat changed but whose content did not reads as modified until the person's own git
 * refreshes the index).
 */
export function preconditionsOf(checkout: string, env: GitCallerEnv = process.env, session?: CheckoutGit): Preconditions {
  if (!existsSync(join(checkout, '.git'))) return { gitHead: null, statusDigest: null };
  const git = session ?? checkoutGit(checkout, GIT_BUDGET_MS, env);
  if (git === undefined) return { gitHead: null, statusDigest: null };
  const gitHead = git.head();
  // The status runs with every filter driver disabled (listed on the session's first run that needs them).
  const status = git.run(['status', '--porcelain=v1', '-z', '--untracked-files=all', '--ignore-submodules=dirty']);
  return { gitHead, statusDigest: status === null ? null : digestText(status) };
}

/** git on one checkout, hardened as every run here (./turnChanges.ts builds a turn's trees with it). */
export interface CheckoutGit {
  /**
   * stdout of a run that exited 0, else null (failed, timed out, out of budget). Every filter driver is
   * disabled on it (listed once, on the first run): `git add` hashes files through their `clean` filter
   * as status does. `env` adds variables git runs with (GIT_INDEX_FILE), after the scrub; `input` is
   * its stdin (a list for `--stdin`).
   */
  run(args: readonly string[], env?: Readonly<Record<string, string>>, input?: string): string | null;
  /** HEAD's object id, read once per session (a claim's preconditions and its turn base share it); null before the first commit or when git fails. */
  head(): string | null;
  /**
   * Whether git, run as this session runs it, uses the index GIT_INDEX_FILE names: asked in the same
   * run as HEAD (`rev-parse --git-path index`), so the check costs no process of its own. A turn's
   * tree is staged into a temporary index only once this is true (./turnChanges.ts): a runner or a
   * git in front of the real one that dropped the variable would stage into the person's own index.
   */
  usesIndexFile(): boolean;
}

/**
 * The index the session's HEAD run names in GIT_INDEX_FILE: a path git only prints back
 * (`rev-parse --git-path index` neither reads nor creates it). Any path shows whether the variable
 * reaches git; this one names nothing.
 */
const INDEX_FILE_PROBE = '/nonexistent/turnkeeper-index-probe';

/** A hardened git for `checkout` whose runs share `budgetMs` of wall time; undefined without a git outside the checkout. */
export function checkoutGit(checkout: string, budgetMs: number, env: GitCallerEnv = process.env): CheckoutGit | undefined {
  const run = startRun(checkout, env, budgetMs);
  if (run === undefined) return undefined;
  let filters: string[] | null | undefined;
  let headRun: { head: string | null; usesIndexFile: boolean } | undefined;
  // One run for both: the index path on its first line, HEAD on the second (none, and exit 1, before
  // the first commit). rev-parse runs no filter: no need to list them for it.
  const readHead = (): { head: string | null; usesIndexFile: boolean } => {
    const result = git(run, ['rev-parse', '--git-path', 'index', '--verify', '-q', 'HEAD'], { GIT_INDEX_FILE: INDEX_FILE_PROBE });
    const [path = '', id = ''] = result === null || result.status > 1 ? [] : result.stdout.split('\n');
    return { head: (result?.status === 0 && /^([0-9a-f]{40}|[0-9a-f]{64})$/.exec(id)?.[1]) || null, usesIndexFile: path === INDEX_FILE_PROBE };
  };
  return {
    run(args, env, input) {
      filters ??= disabledFilters(run);
      return filters === null ? null : gitOk(run, [...filters, ...args], env, input);
    },
    head() {
      headRun ??= readHead();
      return headRun.head;
    },
    usesIndexFile() {
      headRun ??= readHead();
      return headRun.usesIndexFile;
    },
  };
}
