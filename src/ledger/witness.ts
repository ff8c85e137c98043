// The witness of the signed checkpoints (docs/receipts.md, "Checkpoints"): a file outside the store
// of one JSON line per checkpoint, appended after each commit that signed, read as a regular file only,
// and compared with the store by `verify` and `doctor` (a cut tail with a fixed head and a rewritten
// anchor is named). The witness detects; it is not the authority.
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseReceipt, type ChainBreak, type WitnessState } from '../core/receipts';
import { digestText } from '../core/canonical';
import type { NoteVerifier, ParsedCheckpoint } from '../core/checkpoint';
import { turnkeeperHome, type Env } from '../store/location';
import type { ReceiptRow } from '../store/authority';
import { readHomeConfig } from '../config/homeConfig';
import { writeAll } from '../files/atomicFile';

/** What a witness line records of a checkpoint. */
export interface WitnessedCheckpoint {
  readonly origin: string;
  readonly seq: number;
  readonly receipt: number | null;
  readonly note: string;
}

const WITNESS_SCHEMA = 'turnkeeper.witness/v1';
/** The tail of the witness file read by verify: far more than the newest checkpoints of any store. */
const WITNESS_TAIL_BYTES = 1 << 20;

/** One sentence on the witness for a person (verify, doctor): where it is and what it said. */
export function witnessSentence(witness: WitnessState | undefined, breaks: readonly ChainBreak[]): string {
  const cut = breaks.find((item) => item.kind === 'truncated_after_checkpoint' || item.kind === 'checkpoint_mismatch');
  if (witness === undefined) return 'witness: not compared';
  if (witness.state !== 'checked') {
    if (witness.state === 'off') return 'witness: off (witness in config.json)';
    if (witness.state === 'unreadable') return `witness: ${witness.path ?? '?'} cannot be read`;
    return `witness: ${witness.path ?? '?'} holds no checkpoint of this store yet (turnkeeper checkpoint writes one)`;
  }
  const said = `witness: ${witness.path} holds the checkpoint of receipt #${witness.seq}${witness.signer ? ` signed by ${witness.signer}` : ''} at ${witness.time}`;
  return cut ? `${said}; the store disagrees: ${cut.kind} at #${cut.seq}` : `${said}; the store agrees`;
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
  readonly origin: string;
  /** The head the checkpoint signs. */
  readonly seq: number;
  /** The receipt that carries it, or null (a release's checkpoint, kept out of the chain). */
  readonly receipt: number | null;
  readonly text: string;
}

/**
 * The witness opened as a regular file only: never through a symlink (O_NOFOLLOW: a link to config.json
 * would have every checkpoint appended into it) and never blocking (O_NONBLOCK: a FIFO in its place
 * would hang every verify, doctor and checkpointing claim); anything but a regular file is refused.
 */
function openWitness(path: string, flags: number): number {
  const fd = openSync(path, flags | constants.O_NOFOLLOW | constants.O_NONBLOCK, 0o600);
  if (!fstatSync(fd).isFile()) {
    closeSync(fd);
    throw new Error(`${path} is not a regular file`);
  }
  return fd;
}

/** Appends one checkpoint to the witness file (O_APPEND: concurrent writers never interleave a line). */
export function appendWitness(path: string, written: WitnessedCheckpoint): void {
  const entry = { schema: WITNESS_SCHEMA, origin: written.origin, seq: written.seq, receipt: written.receipt, checkpoint: written.note };
  const fd = openWitness(path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT);
  try {
    writeAll(fd, JSON.stringify(entry) + '\n');
  } finally {
    closeSync(fd);
  }
}

/** The witness's entries (its last megabyte), `[]` when there is no file, `'unreadable'` when unreadable. */
export function readWitness(path: string): WitnessEntry[] | 'unreadable' {
  let text: string;
  let fd: number | undefined;
  try {
    fd = openWitness(path, constants.O_RDONLY);
    const size = fstatSync(fd).size;
    const length = Math.min(size, WITNESS_TAIL_BYTES);
    const buffer = Buffer.alloc(length);
    readSync(fd, buffer, 0, length, size - length);
    text = buffer.toString('utf8');
    if (length < size) text = text.slice(text.indexOf('\n') + 1);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT' ? [] : 'unreadable';
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  const entries: WitnessEntry[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    try {
      const value = JSON.parse(line) as Record<string, unknown>;
      const receipt = value.receipt === null ? null : Number.isSafeInteger(value.receipt) ? (value.receipt as number) : undefined;
      if (
        value.schema === WITNESS_SCHEMA &&
        typeof value.origin === 'string' &&
        Number.isSafeInteger(value.seq) &&
        receipt !== undefined &&
        typeof value.checkpoint === 'string'
      ) {
        entries.push({ origin: value.origin, seq: value.seq as number, receipt, text: value.checkpoint });
      }
    } catch {
      // a torn or foreign line: skipped (a forged one would also need a trusted signature)
    }
  }
  return entries;
}

/** The witnessed checkpoints of `origin` at its highest head (one, unless the history forked). */
export function newestOf(entries: readonly WitnessEntry[], origin: string): WitnessEntry[] {
  let highest = -1;
  for (const entry of entries) if (entry.origin === origin && entry.seq > highest) highest = entry.seq;
  return entries.filter((entry) => entry.origin === origin && entry.seq === highest);
}
