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
