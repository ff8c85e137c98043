// A file's identity as attestation records and compares it (docs/launcher.md §2 step 7).
import type { NativeStat } from './native';

export interface Identity {
  readonly dev: string;
  readonly ino: string;
  readonly size: number;
  readonly mode: number;
  readonly mtimeNs: string;
  readonly ctimeNs: string;
}

export const identityOf = (stat: NativeStat): Identity => ({
  dev: stat.dev,
  ino: stat.ino,
  size: stat.size,
  mode: stat.mode,
  mtimeNs: stat.mtimeNs,
  ctimeNs: stat.ctimeNs,
});

/** Same object, unchanged: identity plus size and both times (ctime cannot be set back by a user). */
export const sameIdentity = (a: Identity, b: Identity): boolean =>
  a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs && a.mode === b.mode;

/** The stat fields an identity key is made of: an `Identity`, or a `BigIntStats` of node:fs. */
interface KeyedStat {
  readonly dev: string | bigint;
  readonly ino: string | bigint;
  readonly size: number | bigint;
  readonly mode: number | bigint;
  readonly mtimeNs: string | bigint;
  readonly ctimeNs: string | bigint;
}

/** `dev:ino:size:mtimeNs:ctimeNs:mode`: equal keys mean the same, unchanged object (the caches' key, §2 step 11). */
export const identityKey = (stat: KeyedStat): string => `${stat.dev}:${stat.ino}:${stat.size}:${stat.mtimeNs}:${stat.ctimeNs}:${stat.mode}`;

/**
 * git's racy window: a file changed less than this before its stat signature was taken could change
 * again, same size, in the same timestamp tick, so its signature does not vouch for its bytes (§2 step 14).
 */
export const RACY_WINDOW_MS = 2000;

/** Whether an object whose ctime is `ctimeNs` is still inside the racy window at `nowMs`. */
export const isRacy = (ctimeNs: string | bigint, nowMs = Date.now()): boolean =>
  BigInt(nowMs) * 1_000_000n - BigInt(ctimeNs) < BigInt(RACY_WINDOW_MS) * 1_000_000n;
