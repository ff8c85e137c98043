// Receipts and the chain walk (contract §5). A receipt's hash is the digest of its document *as
// stored*; verification hashes the stored text and never re-renders it, so any byte edit shows.
import { canonicalJson, digestText, digestTextBulk, isDigest, ZERO_DIGEST } from './canonical';

export const RECEIPT_SCHEMA = 'turnkeeper.receipt/v1';

export const RECEIPT_KINDS = [
  'todo_added',
  'todo_status_changed',
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
] as const;
export type ReceiptKind = (typeof RECEIPT_KINDS)[number];

export interface ReceiptFields {
  readonly kind: ReceiptKind;
  readonly goal: string;
  readonly todo?: string | undefined;
  readonly capture?: string | undefined;
  readonly owner?: string | undefined;
  readonly lease?: { readonly epoch: number; readonly version: number } | undefined;
  readonly op?: string | undefined;
  readonly detail?: Readonly<Record<string, string | number | boolean | null>> | undefined;
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

/** The next receipt after `head`: its canonical text (what gets stored) and hash. */
export function buildReceipt(
  head: ChainLink | undefined,
  fields: ReceiptFields,
  atMs: number,
): { readonly document: ReceiptDocument; readonly text: string; readonly hash: string } {
  const document: ReceiptDocument = {
    schema: RECEIPT_SCHEMA,
    seq: (head?.seq ?? 0) + 1,
    prevHash: head?.hash ?? ZERO_DIGEST,
    at: new Date(atMs).toISOString(),
    ...fields,
  };
  const text = canonicalJson(document);
  return { document, text, hash: digestText(text) };
}

export const BREAK_KINDS = ['content_altered', 'hash_missing', 'link_broken', 'missing', 'head_mismatch'] as const;
export type BreakKind = (typeof BREAK_KINDS)[number];
export interface ChainBreak {
  readonly seq: number;
  readonly kind: BreakKind;
}
export interface ChainReport {
  readonly ok: boolean;
  readonly verified: number;
  readonly breaks: ChainBreak[];
  /** The last row walked and the hash the next one must link to (lets a reader continue from here). */
  readonly end?: ChainLink;
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
  const breaks: ChainBreak[] = [];
  let verified = 0;
  // `after`: a prefix already verified (the extension re-checks only what hooks appended since).
  let expectedSeq = (after?.seq ?? 0) + 1;
  let previousHash = after?.hash ?? ZERO_DIGEST;
  let lastSeq = after?.seq ?? 0;
  for (const row of rows) {
    let rowBroken = false;
    const afterGap = row.seq !== expectedSeq;
    if (afterGap) {
      breaks.push({ seq: expectedSeq, kind: 'missing' });
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
    } else if (!afterGap && link.prevHash !== previousHash) {
      breaks.push({ seq: row.seq, kind: 'link_broken' });
      rowBroken = true;
    }
    if (!rowBroken) verified += 1;
    // Link the next row to what is stored (or, lacking that, to the content) so one break is named once.
    previousHash = storedHash ?? computed ?? ZERO_DIGEST;
    lastSeq = row.seq;
    expectedSeq = row.seq + 1;
  }
  const headSeq = head?.seq;
  const headHash = head?.hash;
  if (lastSeq === 0 && (head === undefined || headSeq === 0)) return { ok: breaks.length === 0, verified, breaks };
  if (headSeq !== lastSeq || headHash !== previousHash) {
    breaks.push({ seq: typeof headSeq === 'number' ? headSeq : lastSeq, kind: 'head_mismatch' });
  }
  return { ok: breaks.length === 0, verified, breaks, end: { seq: lastSeq, hash: previousHash } };
}

// In canonical (RFC 8785) order a receipt ends with `"prevHash":"sha256:<hex>","schema":"…","seq":N`
// and then only `,"todo":"…"` may follow; every earlier member sorts before "prevHash". Reading the
// link from that tail is what lets `verify` check ~10^5 receipts a second; a document that does not
// have exactly this shape is parsed in full, and is a break unless it is a well-formed receipt.
const TAIL_MARK = '"prevHash":"sha256:';
const TAIL_SCHEMA = `","schema":"${RECEIPT_SCHEMA}","seq":`;

function chainLinkOf(text: string): { seq: number; prevHash: string } | undefined {
  const at = text.lastIndexOf(TAIL_MARK);
  if (at > 0 && text.charCodeAt(0) === 0x7b && text.charCodeAt(text.length - 1) === 0x7d) {
    const hexStart = at + TAIL_MARK.length;
    const schemaAt = hexStart + 64;
    if (text.startsWith(TAIL_SCHEMA, schemaAt) && isLowerHex(text, hexStart, schemaAt)) {
      const seqStart = schemaAt + TAIL_SCHEMA.length;
      let seq = 0;
      let seqEnd = seqStart;
      for (let code = text.charCodeAt(seqEnd); code >= 0x30 && code <= 0x39; code = text.charCodeAt(++seqEnd)) seq = seq * 10 + (code - 0x30);
      const closes = seqEnd === text.length - 1 || text.startsWith(',"todo":"', seqEnd);
      if (seqEnd > seqStart && seqEnd - seqStart < 16 && closes) return { seq, prevHash: text.slice(at + TAIL_MARK.length - 7, schemaAt) };
    }
  }
  const parsed = parseReceipt(text);
  return parsed && { seq: parsed.seq, prevHash: parsed.prevHash };
}

function isLowerHex(text: string, from: number, to: number): boolean {
  for (let i = from; i < to; i += 1) {
    const code = text.charCodeAt(i);
    if (!((code >= 0x30 && code <= 0x39) || (code >= 0x61 && code <= 0x66))) return false;
  }
  return true;
}

/** Parses a stored receipt; undefined when it is not a well-formed receipt document. */
export function parseReceipt(text: string): ReceiptDocument | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const doc = value as Partial<ReceiptDocument>;
  if (doc.schema !== RECEIPT_SCHEMA || typeof doc.seq !== 'number' || !isDigest(doc.prevHash) || typeof doc.kind !== 'string') {
    return undefined;
  }
  return doc as ReceiptDocument;
}
