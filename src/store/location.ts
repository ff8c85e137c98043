// Where the per-user database lives (spec §4), and the folder it lives in kept private.
import { chmodSync, lstatSync, mkdirSync, readdirSync, statSync, type Stats } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';

import type { Env } from '../core/env';

export type { Env };

/**
 * TURNKEEPER_HOME, or `~/.turnkeeper`. A relative value counts as unset: it would be relative to the
 * working directory, which for a hook is the agent's checkout, so a repository whose `.env` sets it
 * (Gemini CLI loads one) would choose the database, config.json (its store and witness) and the
 * compile cache (spec §10). Keep in step with src/cli/launcher.cjs.
 */
export const turnkeeperHome = (env: Env): string =>
  env.TURNKEEPER_HOME && isAbsolute(env.TURNKEEPER_HOME) ? env.TURNKEEPER_HOME : join(env.HOME || homedir(), '.turnkeeper');
/** `TURNKEEPER_DB` (a relative path is under TURNKEEPER_HOME, never the working directory: spec §10), else the default. */
export const storePath = (env: Env): string => resolve(turnkeeperHome(env), env.TURNKEEPER_DB || 'turnkeeper.db');

/**
 * Why TURNKEEPER_HOME must not be used, or undefined. Its `bin/turnkeeper` is what every agent's hook
 * runs, its config.json selects the store, its database and keys are the authority: a home another
 * local user made (a world-writable /tmp/tk, say), or any of these that another user owns or may
 * write, lets them replace it, and their code would run as this user (spec §10). Refused:
 *
 * - the home not a directory (a symlink to one counts as its target), or another user's;
 * - `bin/`, `bin/turnkeeper` and the warm client `bin/turnkeeper-hook`, `config.json`, `keys/` and its `signing.key` and `trusted` (lstat: a
 *   symlink is judged as itself and as what it points at, and must point at something) that another
 *   user owns, or a file among them that the group or others may write: its bytes may already be
 *   someone else's, so the person checks it and narrows it (the fix names the command).
 *
 * A home or directory of ours that is open to others is narrowed to 0700 first, as ensurePrivateHome
 * and keys.ts do, and then judged: whatever another user put there while it was open is theirs (an
 * owner nobody can fake), which the checks find, and nothing new can arrive after the narrowing. A
 * missing home is fine (it is created 0700). The database is judged where it is selected
 * (storeFileProblem): it need not be in the home.
 */
export function foreignHomeProblem(env: Env): string | undefined {
  const home = turnkeeperHome(env);
  const stat = statSync(home, { throwIfNoEntry: false });
  if (stat === undefined) return undefined;
  const uid = process.geteuid?.();
  if (!stat.isDirectory()) return `TURNKEEPER_HOME ${home} is not a directory: remove it or point TURNKEEPER_HOME elsewhere`;
  if (uid === undefined) return undefined;
  if (stat.uid !== uid)
    return `TURNKEEPER_HOME ${home} is owned by uid ${stat.uid}, not by this user (uid ${uid}): another user could replace its hook shim, config.json, database or keys; use a home of your own (unset TURNKEEPER_HOME for ~/.turnkeeper)`;
  const narrowed = narrowDirectory(home, stat, 'TURNKEEPER_HOME');
  if (narrowed) return narrowed;
  for (const dir of ['bin', 'keys']) {
    const problem = privatePathProblem(join(home, dir), 'directory', uid);
    if (problem) return problem;
  }
  for (const file of [join('bin', 'turnkeeper'), join('bin', 'turnkeeper-hook'), 'config.json', join('keys', 'signing.key'), join('keys', 'trusted')]) {
    const problem = privatePathProblem(join(home, file), 'file', uid);
    if (problem) return problem;
  }
  return undefined;
}

/**
 * Why a selected SQLite database must not be used, or undefined: the file, its `-wal`, `-shm` and
 * anchor, by the rules of foreignHomeProblem. Another user who owns or may write any of them holds
 * the authority (they can rewrite leases and receipts, the anchor included).
 */
export function storeFileProblem(path: string): string | undefined {
  const uid = process.geteuid?.();
  if (uid === undefined) return undefined;
  for (const file of [path, `${path}-wal`, `${path}-shm`, `${path}.anchor`]) {
    const problem = privatePathProblem(file, 'file', uid);
    if (problem) return problem;
  }
  return undefined;
}

const OPEN_TO_OTHERS = 0o022;

/** A directory of ours open to others, made 0700; or why that could not be done. */
function narrowDirectory(path: string, stat: Stats, what: string): string | undefined {
  if ((stat.mode & OPEN_TO_OTHERS) === 0) return undefined;
  try {
    chmodSync(path, 0o700);
    return undefined;
  } catch (error) {
    return `${what} ${path} is writable by others and could not be made private (${(error as NodeJS.ErrnoException).code ?? String(error)}): chmod 700 '${path}'`;
  }
}

/** One entry of the home (or the database): missing is fine; see foreignHomeProblem for the rules. */
function privatePathProblem(path: string, kind: 'file' | 'directory', uid: number): string | undefined {
  const link = lstatSync(path, { throwIfNoEntry: false });
  if (link === undefined) return undefined;
  const fix = `remove it (Turnkeeper recreates what it needs) or use a home of your own`;
  if (link.uid !== uid) return `${path} is owned by uid ${link.uid}, not by this user (uid ${uid}): another user could replace it; ${fix}`;
  let target = link;
  if (link.isSymbolicLink()) {
    const followed = statSync(path, { throwIfNoEntry: false });
    if (followed === undefined) return `${path} is a symlink to nothing: whoever can create its target would choose it; ${fix}`;
    if (followed.uid !== uid)
      return `${path} is a symlink to a ${kind} owned by uid ${followed.uid}, not by this user (uid ${uid}): another user could replace it; ${fix}`;
    target = followed;
  }
  if (kind === 'directory') {
    if (!target.isDirectory()) return `${path} is not a directory: ${fix}`;
    return narrowDirectory(path, target, 'the directory');
  }
  if ((target.mode & OPEN_TO_OTHERS) !== 0)
    return `${path} is writable by its group or by others (mode ${(target.mode & 0o777).toString(8)}): its content may not be yours; check it, then chmod go-w '${path}'`;
  return undefined;
}

/**
 * Makes TURNKEEPER_HOME private: created 0700 when missing; when it is ours but open to the group or to
 * others (a folder another writer made first with the umask's 0755), narrowed to 0700, as keys.ts does
 * for its folder. The database, its -wal and -shm, the anchor, config.json (which may name a team
 * store with its credentials) and the witness live here. A folder owned by someone else is left as
 * it is: it is not ours to change. Returns the folder.
 */
export function ensurePrivateHome(env: Env): string {
  const home = turnkeeperHome(env);
  mkdirSync(home, { recursive: true, mode: 0o700 });
  const stat = statSync(home);
  if (stat.isDirectory() && stat.uid === process.geteuid?.() && (stat.mode & 0o077) !== 0) chmodSync(home, 0o700);
  return home;
}

/** `$TURNKEEPER_HOME/closures`: the attested snapshots of script-shaped agents. */
export const closuresDir = (env: Env): string => join(turnkeeperHome(env), 'closures');

/** A snapshot's directory name under closuresDir: the hex of its closure digest. */
export const SNAPSHOT_NAME = /^[0-9a-f]{64}$/;

/** Bytes and regular files under `path` (a file counts as itself), symlinks not followed; 0 when it is gone. */
export function treeSize(path: string): { bytes: number; files: number } {
  let bytes = 0;
  let files = 0;
  const visit = (dir: string) => {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    for (const name of names) {
      // Gone between the listing and here (an install or a prune at work): it takes no room.
      const stat = lstatSync(join(dir, name), { throwIfNoEntry: false });
      if (stat === undefined) continue;
      if (stat.isDirectory()) visit(join(dir, name));
      else {
        bytes += stat.size;
        files += 1;
      }
    }
  };
  try {
    const stat = lstatSync(path);
    if (!stat.isDirectory()) return { bytes: stat.size, files: 1 };
  } catch {
    return { bytes, files };
  }
  visit(path);
  return { bytes, files };
}
