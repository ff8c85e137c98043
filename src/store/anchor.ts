// The chain anchor: a small sidecar file next to the database (`<db>.anchor`) holding the store's
// identity and the last receipt (seq, hash) this store committed. Whoever can write the database can
// delete the tail of the chain and fix the head row so that the chain still links; they must then
// also notice and rewrite this file. `verify` and `doctor` compare the two (spec §5). What remains
// undetectable is written in docs/receipts.md.
//
// The file is written after the commit, never inside the transaction: a process killed in between
// leaves an anchor that lags (still true), never one that names a receipt that was rolled back.
import { openSync, readFileSync, readSync, renameSync, unlinkSync, closeSync } from 'node:fs';
import type { ChainAnchor } from '../core/receipts';
import { writeAll } from '../files/atomicFile';

export const anchorPath = (databasePath: string): string => `${databasePath}.anchor`;

const ANCHOR_SCHEMA = 'turnkeeper.anchor/v1';

/** The salts of a WAL header: they change whenever SQLite restarts the log, and differ between logs. */
export interface WalSalts {
  readonly salt1: number;
  readonly salt2: number;
}

export interface StoreAnchor extends ChainAnchor {
  /** The store's write counter (store_meta `writes`) after the write this anchor records. */
  readonly writes: number;
  /** The WAL header right after that write; null when there was no log to read. */
  readonly wal: WalSalts | null;
}

/** The anchor, `undefined` when there is none, or `'unreadable'` when the file exists but is not one. */
export function readAnchor(databasePath: string): StoreAnchor | undefined | 'unreadable' {
  let text: string;
  try {
    text = readFileSync(anchorPath(databasePath), 'utf8');
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT' ? undefined : 'unreadable';
  }
  try {
    const value = JSON.parse(text) as Record<string, unknown>;
    const wal = value.wal as Record<string, unknown> | null | undefined;
    const walOk = wal === null || (typeof wal === 'object' && wal !== undefined && Number.isSafeInteger(wal.salt1) && Number.isSafeInteger(wal.salt2));
    if (
      value.schema !== ANCHOR_SCHEMA ||
      typeof value.storeId !== 'string' ||
      !Number.isSafeInteger(value.seq) ||
      typeof value.hash !== 'string' ||
      !Number.isSafeInteger(value.writes) ||
      !walOk
    ) {
      return 'unreadable';
    }
    return {
      storeId: value.storeId,
      seq: value.seq as number,
      hash: value.hash,
      writes: value.writes as number,
      wal: wal ? { salt1: wal.salt1 as number, salt2: wal.salt2 as number } : null,
    };
  } catch {
    return 'unreadable';
  }
}

/** Salts of `<db>-wal`'s header, or undefined when there is no log with a header. */
export function readWalSalts(databasePath: string): WalSalts | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(`${databasePath}-wal`, 'r');
    const header = Buffer.alloc(32);
    if (readSync(fd, header, 0, 32, 0) < 32) return undefined;
    return { salt1: header.readUInt32BE(16), salt2: header.readUInt32BE(20) };
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Whether the log's current generation (frames carrying the header's salts) holds a commit frame. A
 * writer that has just restarted the log writes its new header and frames before it commits; until
 * then nothing in the log would be replayed, so there is nothing to judge.
 */
export function walHasCommit(databasePath: string, salts: WalSalts): boolean {
  let fd: number | undefined;
  try {
    fd = openSync(`${databasePath}-wal`, 'r');
    const header = Buffer.alloc(32);
    if (readSync(fd, header, 0, 32, 0) < 32) return false;
    const pageSize = header.readUInt32BE(8);
    if (pageSize < 512 || pageSize > 65536) return true; // not a log SQLite wrote: judge it
    const frame = Buffer.alloc(24);
    for (let at = 32; readSync(fd, frame, 0, 24, at) === 24; at += 24 + pageSize) {
      if (frame.readUInt32BE(8) !== salts.salt1 || frame.readUInt32BE(12) !== salts.salt2) return false;
      if (frame.readUInt32BE(4) !== 0) return true; // "database size after commit": a commit frame
    }
    return false;
  } catch {
    return true;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Moves the anchor forward to `anchor` (never backward: concurrent writers may finish out of order, and
 * the write counter orders them). Atomic by rename; a failure leaves the previous anchor, which is still
 * true, and is not an error for the caller: the anchor detects damage, it is not the authority.
 */
export function advanceAnchor(databasePath: string, anchor: StoreAnchor): void {
  const current = readAnchor(databasePath);
  if (current !== undefined && current !== 'unreadable' && current.storeId === anchor.storeId && current.writes >= anchor.writes) return;
  const target = anchorPath(databasePath);
  // Not node:crypto: loading it costs every hook start-up (bench row S1); the name needs no secrecy,
  // `wx` refuses to follow or reuse anything already there.
  const temporary = `${target}.${process.pid}.${Math.random().toString(36).slice(2, 10)}`;
  try {
    const fd = openSync(temporary, 'wx', 0o600);
    try {
      // No fsync: after a power loss the anchor may lag or be unreadable, which verify reports as such;
      // an fsync here would double the claim's durable writes for a detector.
      writeAll(fd, JSON.stringify({ schema: ANCHOR_SCHEMA, ...anchor }) + '\n');
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, target);
  } catch {
    try {
      unlinkSync(temporary);
    } catch {
      // nothing was created
    }
  }
}
