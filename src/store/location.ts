// Where the per-user database lives (spec §4), and the folder it lives in kept private.
import { chmodSync, lstatSync, mkdirSync, readdirSync, statSync } from 'node:fs';
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
 * Makes TURNKEEPER_HOME private: created 0700 when missing; when it is ours but open to the group or to
 * others (a folder another writer made first with the umask's 0755), narrowed to 0700, as keys.ts does
 * for its folder. The database, its -wal and -shm, the anchor, config.json (which may name a team
 * store with its credentials) and the witness live here. A folder owned by someone else is left as
 * it is: it is not ours to change. Returns the folder.
 */
/**
 * Why TURNKEEPER_HOME must not be used, or undefined: it is not a directory (a symlink to one counts
 * as its target), or another user owns it. Its `bin/turnkeeper` is what every agent's hook runs, its
 * config.json selects the store, its database and keys are the authority: a home another local user
 * made (a world-writable /tmp/tk, say) lets them replace any of these, and their code would run as this
 * user. A missing home is fine (it is created 0700); one of ours open to others is made private by
 * ensurePrivateHome.
 */
export function foreignHomeProblem(env: Env): string | undefined {
  const home = turnkeeperHome(env);
  const stat = statSync(home, { throwIfNoEntry: false });
  if (stat === undefined) return undefined;
  const uid = process.geteuid?.();
  if (!stat.isDirectory()) return `TURNKEEPER_HOME ${home} is not a directory: remove it or point TURNKEEPER_HOME elsewhere`;
  if (uid !== undefined && stat.uid !== uid)
    return `TURNKEEPER_HOME ${home} is owned by uid ${stat.uid}, not by this user (uid ${uid}): another user could replace its hook shim, config.json, database or keys; use a home of your own (unset TURNKEEPER_HOME for ~/.turnkeeper)`;
  return undefined;
}

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
