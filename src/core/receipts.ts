// Receipts and the chain walk (spec §5). A receipt's hash is the digest of its document *as
// stored*; verification hashes the stored text and never re-renders it, so any byte edit shows.
import { canonicalJson, digestTextBulk, isDigest, ZERO_DIGEST } from './canonical';

const RECEIPT_SCHEMA = 'turnkeeper.receipt/v1';

export const RECEIPT_KINDS = [
  'todo_added',
  'todo_status_changed',
  /** `todo done --merge|--squash|--rebase|--keep-branch`: what finishing did to git (src/launcher/finish.ts). */
  'todo_finished',
  /** A finish about to touch git: its plan, so a finish killed between git and the store is completed truthfully by the next one. */
  'todo_finish_planned',
  /** `todo block|unblock --after`: dependency edges added or removed (`todo add --after` records them in `todo_added`). */
  'todo_dependencies_changed',
  'capture_bound',
  'lease_acquired',
  'ready_written',
  'lease_renewed',
  'lease_released',
  'claim_refused',
  'launch_committed',
  /** The first hook event of a launched agent: its hooks fired (proof of life for launches). */
  'launch_hooked',
  'launch_refused',
  'resume_refused',
  /** The stop event of a lease holder's turn: what the turn changed, and what its transcript says of it (spec §5). */
  'turn_ended',
  /** A Goal named by path (stores of the previous release) was mapped to its repository's Goal id. */
  'goal_migrated',
  /** `turnkeeper goal move`: a repository's Todos, leases and captures carried to its new Goal. */
  'goal_moved',
  /** A client's clock differs from the team server's by more than 1 s plus the measurement bound. */
  'clock_skew_detected',
  /** `turnkeeper store copy`: Todos copied in from another store, whose chain head this names. */
  'history_imported',
  /** A signed checkpoint of the head before it (src/core/checkpoint.ts, src/ledger/checkpoints.ts). */
  'checkpoint',
] as const;
type ReceiptKind = (typeof RECEIPT_KINDS)[number];

/**
 * Receipts about the whole store rather than one repository: a signed checkpoint covers the chain of
 * every Goal, a clock skew is the machine's, an import copies a store. They name a Goal all the same
 * (the one at hand when written, or `-`), so a per-repository reading keeps them by kind, and keeps
 * any receipt whose Goal is `-` or empty.
 */
export const STORE_WIDE_KINDS: readonly string[] = ['checkpoint', 'clock_skew_detected', 'history_imported'];

/** Whether a receipt is about the whole store (STORE_WIDE_KINDS, or no Goal of its own). */
export const isStoreWide = (doc: { readonly kind: string; readonly goal: string }): boolean =>
  STORE_WIDE_KINDS.includes(doc.kind) || doc.goal === '' || doc.goal === '-';

export interface ReceiptFields {
  readonly kind: ReceiptKind;
  readonly goal: string;
  readonly todo?: string | undefined;
  readonly capture?: string | undefined;
  readonly owner?: string | undefined;
  readonly lease?: { readonly epoch: number; readonly version: number } | undefined;
  readonly op?: string | undefined;
  readonly detail?: Readonly<Record<string, ReceiptDetailValue>> | undefined;
}

/** A value of a receipt's `detail`: a scalar, or a list of strings (a turn's changed paths). */
export type ReceiptDetailValue = string | number | boolean | null | readonly string[];

/**
 * A turn_ended receipt's `paths`: its list, or, in a receipt of an earlier build, the list's JSON
 * text; undefined for anything else.
 */
export function turnPaths(value: ReceiptDetailValue | undefined): readonly string[] | undefined {
  let list: unknown = value;
  if (typeof value === 'string') {
    try {
      list = JSON.parse(value);
    } catch {
      return undefined;
    }
  }
  return Array.isArray(list) ? list.filter((item): item is string => typeof item === 'string') : undefined;
}

export interface ReceiptDocument extends ReceiptFields {
  readonly schema: typeof RECEIPT_SCHEMA;
  readonly seq: number;
  readonly prevHash: string;
  readonly at: string;
}

export interface ChainLink {
  readonly seq: number;
  readonly hash: string;
}

/** A receipt with its place in the chain: the document, its canonical text (what gets stored) and hash. */
export interface BuiltReceipt {
  readonly document: ReceiptDocument;
  readonly text: string;
  readonly hash: string;
}

/**
 * A receipt whose place in the chain is not known yet: everything but `seq` and `prevHash` is in its
 * canonical text already, and `at(head)` puts it after `head`. A store appends under a lock on the
 * chain head, which every other write waits for; preparing first leaves only a text substitution and
 * one digest to do while that lock is held (the canonical form and the hash's first call cost a
 * cold process milliseconds, and a process among many on a busy host waits for the CPU between
 * them: docs/testing.md, "The burst").
 *
 * The text is made with marker values for the two fields and each marker is replaced by the real
 * value. That is only the text of the real document when each marker occurs once in it (the
 * document's own field): `detail` values are strings and numbers a caller chose, so a marker that
 * occurs again there makes `at` build the whole text afresh instead. Either way the result is exactly
 * `canonicalJson` of the document, which the unit test checks on both paths.
 */
export interface PreparedReceipt {
  at(head: ChainLink | undefined): BuiltReceipt;
  /**
   * The canonical text with RECEIPT_SEQ_MARKER_TEXT and RECEIPT_PREV_HASH_MARKER_TEXT, each once, for
   * whoever puts it after the head itself (a team server, in the statement that appends it: the two
   * markers replaced by `"seq":<n>` and `"prevHash":"<hash>"`, the hash the digest of the result);
   * undefined when a marker occurs again in it.
   */
  readonly template: string | undefined;
}

const SEQ_MARKER = Number.MAX_SAFE_INTEGER;
const PREV_HASH_MARKER = 'sha256:' + 'f'.repeat(64);
export const RECEIPT_SEQ_MARKER_TEXT = `"seq":${SEQ_MARKER}`;
export const RECEIPT_PREV_HASH_MARKER_TEXT = `"prevHash":"${PREV_HASH_MARKER}"`;
const SEQ_MARKER_TEXT = RECEIPT_SEQ_MARKER_TEXT;
const PREV_HASH_MARKER_TEXT = RECEIPT_PREV_HASH_MARKER_TEXT;
const occursOnce = (text: string, part: string): boolean => {
  const at = text.indexOf(part);
  return at >= 0 && text.indexOf(part, at + 1) < 0;
};

export function prepareReceipt(fields: ReceiptFields, atMs: number): PreparedReceipt {
  const documentAt = (head: ChainLink | undefined): ReceiptDocument => ({
    schema: RECEIPT_SCHEMA,
    seq: (head?.seq ?? 0) + 1,
    prevHash: head?.hash ?? ZERO_DIGEST,
    at: new Date(atMs).toISOString(),
    ...fields,
  });
  const template = canonicalJson(documentAt({ seq: SEQ_MARKER - 1, hash: PREV_HASH_MARKER }));
  const substitutable = occursOnce(template, SEQ_MARKER_TEXT) && occursOnce(template, PREV_HASH_MARKER_TEXT);
  // The digest's first call loads OpenSSL's SHA-256 (milliseconds in a cold process): here, not under the lock.
  digestTextBulk(template);
  return {
    template: substitutable ? template : undefined,
    at(head) {
      const document = documentAt(head);
      const text =
        substitutable && isDigest(document.prevHash)
          ? template.replace(SEQ_MARKER_TEXT, `"seq":${document.seq}`).replace(PREV_HASH_MARKER_TEXT, `"prevHash":${JSON.stringify(document.prevHash)}`)
          : canonicalJson(document);
      return { document, text, hash: digestTextBulk(text) };
    },
  };
}

/** The next receipt after `head`: its canonical text (what gets stored) and hash. */
export function buildReceipt(head: ChainLink | undefined, fields: ReceiptFields, atMs: number): BuiltReceipt {
  return prepareReceipt(fields, atMs).at(head);
}

export const BREAK_KINDS = [
  'content_altered',
  'hash_missing',
  'link_broken',
  'missing',
  'head_mismatch',
  /** The anchor outside the store names a receipt that is no longer there (the tail was cut). */
  'truncated_after_checkpoint',
  /** The anchor's receipt is there with another hash, or the store is another store. */
  'checkpoint_mismatch',
  'signature_invalid',
  'untrusted_key',
  /** A signed checkpoint (the store's own or a witnessed one) is not a prefix of the chain now: the history forked. */
  'fork',
  /** The stored Merkle tree, or a signed root, is not the tree of the stored documents. */
  'tree_mismatch',
  /**
   * The witness saw another store identity (origin) at this store's location, and none of the one it
   * shows now: store_meta.store_id was rewritten (or the store recreated), which would blind the witness.
   */
  'store_identity_changed',
] as const;
type BreakKind = (typeof BREAK_KINDS)[number];
export interface ChainBreak {
  readonly seq: number;
  readonly kind: BreakKind;
}
/** What the witness outside the store said of it (src/ledger/checkpoints.ts compares them). */
export type WitnessState =
  | {
      readonly state: 'checked';
      readonly path: string;
      readonly seq: number;
      readonly receipt: number | null;
      readonly signer: string | null;
      readonly time: string;
    }
  | { readonly state: 'none' | 'off' | 'unreadable'; readonly path: string | null }
  /** The witness is in a place others can write (a shared folder, a file another user owns): not used. */
  | { readonly state: 'refused'; readonly path: string; readonly reason: string }
  /** The witness holds checkpoints of another origin at this store's location, and none of this one. */
  | { readonly state: 'replaced'; readonly path: string; readonly origin: string; readonly seq: number };

export interface ChainReport {
  readonly ok: boolean;
  readonly verified: number;
  readonly breaks: ChainBreak[];
  /** The last row walked and the hash the next one must link to (lets a reader continue from here). */
  readonly end?: ChainLink;
  /** The anchor the store was compared with: the receipt it names, or why there was none to compare. */
  readonly anchor?: { readonly seq: number } | 'none' | 'unreadable';
  /** The witness the store was compared with, when checkpoints are on (src/ledger/checkpoints.ts). */
  readonly witness?: WitnessState;
}

/** A stored row, exactly as read: columns may hold anything, a reader must never crash on them. */
export interface StoredReceiptRow {
  readonly seq: number;
  readonly doc: unknown;
  readonly hash: unknown;
}

/**
 * Walks rows in `seq` order and names every break. Streaming: rows come from an iterator so a long
 * chain is never held in memory.
 */
export function walkChain(rows: Iterable<StoredReceiptRow>, head: { seq: unknown; hash: unknown } | undefined, after?: ChainLink): ChainReport {
  const walker = new ChainWalker(after);
  for (const row of rows) walker.push(row);
  return walker.finish(head);
}

/**
 * The chain walk, one row at a time: for readers that get rows in asynchronous pages (a server
 * cursor). `walkChain` is this walker over an iterable.
 */
export class ChainWalker {
  private readonly breaks: ChainBreak[] = [];
  private verified = 0;
  private expectedSeq: number;
  private previousHash: string;
  private lastSeq: number;

  /** `after`: a prefix already verified (the extension re-checks only what hooks appended since). */
  constructor(after?: ChainLink) {
    this.expectedSeq = (after?.seq ?? 0) + 1;
    this.previousHash = after?.hash ?? ZERO_DIGEST;
    this.lastSeq = after?.seq ?? 0;
  }

  push(row: StoredReceiptRow): void {
    const { breaks } = this;
    let rowBroken = false;
    const afterGap = row.seq !== this.expectedSeq;
    if (afterGap) {
      breaks.push({ seq: this.expectedSeq, kind: 'missing' });
      rowBroken = true;
    }
    const text = typeof row.doc === 'string' ? row.doc : undefined;
    const computed = text === undefined ? undefined : digestTextBulk(text);
    const storedHash = typeof row.hash === 'string' && row.hash !== '' ? row.hash : undefined;
    if (storedHash === undefined) {
      breaks.push({ seq: row.seq, kind: 'hash_missing' });
      rowBroken = true;
    }
    const link = text === undefined ? undefined : chainLinkOf(text);
    if (computed === undefined || link === undefined || link.seq !== row.seq || (storedHash !== undefined && storedHash !== computed)) {
      breaks.push({ seq: row.seq, kind: 'content_altered' });
      rowBroken = true;
    } else if (!afterGap && link.prevHash !== this.previousHash) {
      breaks.push({ seq: row.seq, kind: 'link_broken' });
      rowBroken = true;
    }
    if (!rowBroken) this.verified += 1;
    // Link the next row to what is stored (or, lacking that, to the content) so one break is named once.
    this.previousHash = storedHash ?? computed ?? ZERO_DIGEST;
    this.lastSeq = row.seq;
    this.expectedSeq = row.seq + 1;
  }

  finish(head: { seq: unknown; hash: unknown } | undefined): ChainReport {
    const { breaks, verified, lastSeq, previousHash } = this;
    const headSeq = head?.seq;
    const headHash = head?.hash;
    if (lastSeq === 0 && (head === undefined || headSeq === 0)) return { ok: breaks.length === 0, verified, breaks };
    if (headSeq !== lastSeq || headHash !== previousHash) {
      breaks.push({ seq: typeof headSeq === 'number' ? headSeq : lastSeq, kind: 'head_mismatch' });
    }
    return { ok: breaks.length === 0, verified, breaks, end: { seq: lastSeq, hash: previousHash } };
  }
}

// Every stored document is parsed as a receipt (spec §5: no fast path skips the parse). An earlier
// version read the link from the canonical tail alone, so a row of non-JSON text that kept a valid
// tail and hash verified, and readers then printed nonsense from it.
function chainLinkOf(text: string): { seq: number; prevHash: string } | undefined {
  const parsed = parseReceipt(text);
  return parsed && { seq: parsed.seq, prevHash: parsed.prevHash };
}

/**
 * Parses a stored receipt; undefined unless it is a well-formed receipt document: a JSON object (not
 * an array) with the schema, a positive integer seq, digests where digests go, a kind, an ISO
 * time, and the optional members of the right types.
 */
export function parseReceipt(text: string): ReceiptDocument | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const doc = value as Record<string, unknown>;
  const optional = (name: string, type: 'string' | 'object') => doc[name] === undefined || (typeof doc[name] === type && doc[name] !== null);
  if (
    doc.schema !== RECEIPT_SCHEMA ||
    !Number.isSafeInteger(doc.seq) ||
    (doc.seq as number) < 1 ||
    !isDigest(doc.prevHash) ||
    typeof doc.kind !== 'string' ||
    !KIND_GRAMMAR.test(doc.kind) ||
    typeof doc.at !== 'string' ||
    !ISO_TIME.test(doc.at) ||
    typeof doc.goal !== 'string' ||
    !optional('todo', 'string') ||
    !optional('capture', 'string') ||
    !optional('owner', 'string') ||
    !optional('op', 'string') ||
    !optional('lease', 'object') ||
    !optional('detail', 'object') ||
    Array.isArray(doc.detail) ||
    Array.isArray(doc.lease)
  ) {
    return undefined;
  }
  return doc as unknown as ReceiptDocument;
}

// Any well-formed kind, not only the ones this version writes: a newer Turnkeeper's receipts must
// still verify here (a team may run two versions against one store).
const KIND_GRAMMAR = /^[a-z][a-z_]{0,63}$/;
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/**
 * The store's anchor: the last (seq, hash) the store itself wrote, kept outside the database (a sidecar
 * file) so that deleting the tail of the chain and fixing the head row cannot pass unnoticed.
 */
export interface ChainAnchor {
  readonly storeId: string;
  readonly seq: number;
  readonly hash: string;
}

/**
 * Compares the store with its anchor: the receipt the anchor names must still be there with the same
 * hash, in a store with the same identity. `hashAt` reads the stored hash of one seq.
 */
export function checkAnchor(anchor: ChainAnchor, store: { readonly storeId: string | undefined; hashAt(seq: number): unknown }): ChainBreak[] {
  if (store.storeId !== anchor.storeId) return [{ seq: anchor.seq, kind: 'checkpoint_mismatch' }];
  if (anchor.seq === 0) return []; // anchored before the first receipt: nothing to compare yet
  const hash = store.hashAt(anchor.seq);
  if (hash === undefined) return [{ seq: anchor.seq, kind: 'truncated_after_checkpoint' }];
  if (hash !== anchor.hash) return [{ seq: anchor.seq, kind: 'checkpoint_mismatch' }];
  return [];
}
