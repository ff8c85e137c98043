// The witness of the signed checkpoints (docs/receipts.md, "Checkpoints"): a file outside the store
// of one JSON line per checkpoint, appended after each commit that signed, read as a regular file only,
// and compared with the store by `verify` and `doctor` (a cut tail with a fixed head and a rewritten
// anchor is named). The witness detects; it is not the authority.
import { closeSync, constants, fstatSync, openSync, readSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseReceipt, type ChainBreak, type WitnessState } from '../core/receipts';
import { digestText } from '../core/canonical';
import type { NoteVerifier, ParsedCheckpoint } from '../core/checkpoint';
import { turnkeeperHome, type Env } from '../store/location';
import type { ReceiptRow } from '../store/authority';
import { readHomeConfig } from '../config/homeConfig';
import { writeAll } from '../files/atomicFile';

/** What a witness line records of a checkpoint. */
export interface WitnessedCheckpoint {
  /** The store's location (StorePort.location: the SQLite path, or host:port/database): what the witness pins the origin to. */
  readonly store: string;
  readonly origin: string;
  readonly seq: number;
  readonly receipt: number | null;
  readonly note: string;
}

/** v2 adds `store`; v1 lines (no location) are still read, and pin nothing. */
const WITNESS_SCHEMA = 'turnkeeper.witness/v2';
const WITNESS_SCHEMAS = new Set(['turnkeeper.witness/v1', WITNESS_SCHEMA]);
/** The witness is scanned in chunks of this size: memory follows the lines kept, not the file. */
const SCAN_CHUNK = 1 << 16;
/** A line longer than this is no witness line (a checkpoint note is well under 2 KiB): skipped. */
const MAX_LINE = 64 * 1024;

/** One sentence on the witness for a person (verify, doctor): where it is and what it said. */
export function witnessSentence(witness: WitnessState | undefined, breaks: readonly ChainBreak[]): string {
  const cut = breaks.find((item) => item.kind === 'truncated_after_checkpoint' || item.kind === 'checkpoint_mismatch');
  if (witness === undefined) return 'witness: not compared';
  switch (witness.state) {
    case 'off':
      return 'witness: off (witness in config.json)';
    case 'unreadable':
      return `witness: ${witness.path ?? '?'} cannot be read`;
    case 'refused':
      return `witness: ${witness.path} is not used: ${witness.reason}`;
    case 'replaced':
      return (
        `witness: ${witness.path} holds checkpoints of another store at this location (${witness.origin}, up to receipt #${witness.seq}) and none of this one: ` +
        `the store's identity changed (store_meta.store_id rewritten, or the store recreated). If you recreated it yourself, move the witness aside (mv ${witness.path} ${witness.path}.old)`
      );
    case 'none':
      return `witness: ${witness.path ?? '?'} holds no checkpoint of this store yet (turnkeeper checkpoint writes one)`;
    case 'checked': {
      const said = `witness: ${witness.path} holds the checkpoint of receipt #${witness.seq}${witness.signer ? ` signed by ${witness.signer}` : ''} at ${witness.time}`;
      return cut ? `${said}; the store disagrees: ${cut.kind} at #${cut.seq}` : `${said}; the store agrees`;
    }
  }
}

/**
 * The witness file: `witness` in config.json (a relative path is under TURNKEEPER_HOME), else
 * `$TURNKEEPER_HOME/witness.jsonl`; null when config.json says `off`. Never from the environment: an
 * agent's environment can carry a repository's `.env`, and a path from there would have every hook
 * append lines to any file the user can write (docs/team.md, "What an agent's environment can do").
 */
export function witnessPath(env: Env): string | null {
  const chosen = readHomeConfig(env).witness;
  if (chosen === 'off') return null;
  return resolve(turnkeeperHome(env), chosen ?? 'witness.jsonl');
}

/** One witnessed checkpoint against the store's rows at its head and at its carrier. */
export function compareOne(
  note: ParsedCheckpoint | undefined,
  verdict: ReturnType<NoteVerifier>,
  entry: WitnessEntry,
  at: (seq: number) => ReceiptRow | undefined,
): ChainBreak | undefined {
  const where = entry.receipt ?? entry.seq;
  if (!note || !verdict.ok) return { seq: where, kind: verdict.ok ? 'signature_invalid' : verdict.kind };
  if (note.origin !== entry.origin || note.seq !== entry.seq) return { seq: where, kind: 'checkpoint_mismatch' };
  const signed = at(note.seq);
  const carrier = entry.receipt === null ? undefined : at(entry.receipt);
  if (note.seq > 0 && signed === undefined && carrier === undefined) return { seq: where, kind: 'truncated_after_checkpoint' };
  if (note.seq > 0 && (signed === undefined || signed.hash !== note.hash || digestText(signed.doc) !== note.hash))
    return { seq: note.seq, kind: 'checkpoint_mismatch' };
  if (entry.receipt === null) return undefined;
  if (carrier === undefined) return { seq: entry.receipt, kind: 'truncated_after_checkpoint' };
  if (parseReceipt(carrier.doc)?.detail?.note !== entry.text) return { seq: entry.receipt, kind: 'checkpoint_mismatch' };
  return undefined;
}

export interface WitnessEntry {
  /** The store's location when the line was written (null: a v1 line, which pins nothing). */
  readonly store: string | null;
  readonly origin: string;
  /** The head the checkpoint signs. */
  readonly seq: number;
  /** The receipt that carries it, or null (a release's checkpoint, kept out of the chain). */
  readonly receipt: number | null;
  readonly text: string;
}

/** Why the witness must not be used (another user could replace, cut or delete it), or undefined. */
class WitnessRefused extends Error {
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(`${path}: ${reason}`);
    this.name = 'WitnessRefused';
  }
}

/**
 * Whether others can write the witness or the folder it is in (docs/receipts.md, "A witness in a
 * shared folder"): a witness another user can replace, cut or delete blinds the comparison, so one in
 * a folder others may write (unless it is sticky, like /tmp: there only the owner may remove the file)
 * or a file another user owns or may write is refused, with the fix.
 */
function sharedProblem(path: string, file: { uid: number; mode: number } | undefined): string | undefined {
  const uid = process.geteuid?.();
  if (uid === undefined) return undefined;
  if (file !== undefined) {
    if (file.uid !== uid) return `it is owned by uid ${file.uid}, not by this user: use a witness of your own`;
    if ((file.mode & 0o022) !== 0) return `others may write it (mode ${(file.mode & 0o777).toString(8)}): chmod go-w ${path}`;
  }
  const folder = statSync(dirname(path), { throwIfNoEntry: false });
  if (folder === undefined) return undefined;
  if (folder.uid !== uid && folder.uid !== 0) return `its folder is owned by uid ${folder.uid}: keep the witness in a folder of your own`;
  if ((folder.mode & 0o022) !== 0 && (folder.mode & 0o1000) === 0)
    return `others may write its folder (mode ${(folder.mode & 0o777).toString(8)}), and so replace or delete it: chmod go-w ${dirname(path)}, or keep the witness elsewhere`;
  return undefined;
}

/**
 * The witness opened as a regular file only: never through a symlink (O_NOFOLLOW: a link to config.json
 * would have every checkpoint appended into it) and never blocking (O_NONBLOCK: a FIFO in its place
 * would hang every verify, doctor and checkpointing claim); anything but a regular file is refused, and
 * so is a witness others may write (sharedProblem).
 */
function openWitness(path: string, flags: number): number {
  const fd = openSync(path, flags | constants.O_NOFOLLOW | constants.O_NONBLOCK, 0o600);
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new Error(`${path} is not a regular file`);
    const shared = sharedProblem(path, stat);
    if (shared) throw new WitnessRefused(path, shared);
    return fd;
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

/** Appends one checkpoint to the witness file (O_APPEND: concurrent writers never interleave a line). */
export function appendWitness(path: string, written: WitnessedCheckpoint): void {
  // Before O_CREAT: a witness created in a folder others may write could be replaced at once.
  const shared = sharedProblem(path, undefined);
  if (shared) throw new WitnessRefused(path, shared);
  const entry = {
    schema: WITNESS_SCHEMA,
    store: written.store,
    origin: written.origin,
    seq: written.seq,
    receipt: written.receipt,
    checkpoint: written.note,
  };
  const fd = openWitness(path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT);
  try {
    writeAll(fd, JSON.stringify(entry) + '\n');
  } finally {
    closeSync(fd);
  }
}

export type WitnessRead =
  { readonly kind: 'entries'; readonly entries: WitnessEntry[] } | { readonly kind: 'unreadable' } | { readonly kind: 'refused'; readonly reason: string };

/**
 * The witness's entries of these origins or store locations, read as a stream of chunks: the whole
 * file is scanned and only their lines are held, so lines of other stores (however many) cannot push
 * this store's out of view, and memory follows this store's lines. A line that names none of them
 * is skipped before it is parsed (a hook's automatic checkpoint scans the file inside its write).
 * No file: no entries.
 */
export function readWitness(path: string, of: { readonly origin: string | undefined; readonly store: string }): WitnessRead {
  const needles = [of.origin, of.store].filter((text): text is string => text !== undefined).map((text) => Buffer.from(JSON.stringify(text)));
  const keep = (entry: WitnessEntry) => entry.origin === of.origin || entry.store === of.store;
  const entries: WitnessEntry[] = [];
  let fd: number | undefined;
  try {
    fd = openWitness(path, constants.O_RDONLY);
    const chunk = Buffer.alloc(SCAN_CHUNK);
    let pending = Buffer.alloc(0);
    let skipping = false;
    const line = (bytes: Buffer) => {
      if (!needles.some((needle) => bytes.includes(needle))) return;
      const entry = parseLine(bytes);
      if (entry && keep(entry)) entries.push(entry);
    };
    for (;;) {
      const read = readSync(fd, chunk, 0, chunk.length, null);
      if (read === 0) break;
      let data = pending.length > 0 ? Buffer.concat([pending, chunk.subarray(0, read)]) : chunk.subarray(0, read);
      for (let newline = data.indexOf(10); newline !== -1; newline = data.indexOf(10)) {
        if (!skipping) line(data.subarray(0, newline));
        skipping = false;
        data = data.subarray(newline + 1);
      }
      // A line longer than any witness line is skipped to its end, never held whole.
      if (data.length > MAX_LINE) {
        skipping = true;
        data = Buffer.alloc(0);
      }
      pending = Buffer.from(data);
    }
    if (!skipping && pending.length > 0) line(pending);
  } catch (error) {
    if (error instanceof WitnessRefused) return { kind: 'refused', reason: error.reason };
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return { kind: 'unreadable' };
    // No witness yet: one could not be kept where others may write either.
    const shared = sharedProblem(path, undefined);
    return shared ? { kind: 'refused', reason: shared } : { kind: 'entries', entries: [] };
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  return { kind: 'entries', entries };
}

function parseLine(bytes: Buffer): WitnessEntry | undefined {
  try {
    const value = JSON.parse(bytes.toString('utf8')) as Record<string, unknown>;
    const receipt = value.receipt === null ? null : Number.isSafeInteger(value.receipt) ? (value.receipt as number) : undefined;
    const store = value.store === undefined ? null : typeof value.store === 'string' ? value.store : undefined;
    if (
      typeof value.schema === 'string' &&
      WITNESS_SCHEMAS.has(value.schema) &&
      store !== undefined &&
      typeof value.origin === 'string' &&
      Number.isSafeInteger(value.seq) &&
      receipt !== undefined &&
      typeof value.checkpoint === 'string'
    )
      return { store, origin: value.origin, seq: value.seq as number, receipt, text: value.checkpoint };
  } catch {
    // a torn or foreign line: skipped (a forged one would also need a trusted signature)
  }
  return undefined;
}

/** The witnessed checkpoints of `origin` at its highest head (one, unless the history forked). */
export function newestOf(entries: readonly WitnessEntry[], origin: string): WitnessEntry[] {
  let highest = -1;
  for (const entry of entries) if (entry.origin === origin && entry.seq > highest) highest = entry.seq;
  return entries.filter((entry) => entry.origin === origin && entry.seq === highest);
}

/**
 * The newest entry the witness holds of another origin than `origin` at this store's location: the
 * witness pinned that identity to the location, and the store now shows another (store_meta.store_id
 * rewritten, which would leave the witness nothing to compare; or the store recreated, which its owner
 * acknowledges by moving the witness aside).
 */
export function replacedIdentity(entries: readonly WitnessEntry[], store: string, origin: string | undefined): WitnessEntry | undefined {
  let other: WitnessEntry | undefined;
  for (const entry of entries) if (entry.store === store && entry.origin !== origin && (other === undefined || entry.seq >= other.seq)) other = entry;
  return other;
}
