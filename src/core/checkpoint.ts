// Signed checkpoints, export bundles and launch attestations (docs/receipts.md, "Checkpoints"). Pure:
// text formats, their parsers and the bundle walk. Signing and verifying are injected (node:crypto
// lives in src/ledger/keys.ts, so nothing here costs a hook its start-up).
//
// A checkpoint is a C2SP signed note (c2sp.org/signed-note) whose text is a c2sp.org/tlog-checkpoint:
//
//   turnkeeper/store/<store id>          origin: the store's identity (store_meta store_id)
//   41                                   tree size: the chain's head seq (leaves are receipts 1..41)
//   <base64 of the 32-byte Merkle root>  root hash: RFC 6962 root over the stored documents (merkle.ts)
//   head <base64 of the head hash>       extension line: the head receipt's hash (`sha256:<hex>`)
//   time 2026-11-30T12:29:38.791Z        extension line: when it was signed
//
//   — <key name> <base64(4-byte key hash || 64-byte Ed25519 signature)>
//
// The `head` line is the version switch: a note without one is a version 1 checkpoint (written before
// the Merkle tree), whose third line is the head hash itself; it stays readable and is verified as
// before. The signature covers the text above the blank line, byte for byte. A launch attestation is an
// in-toto Statement in a DSSE envelope signed over DSSE's pre-authentication encoding (PAE).
import { digestBytesBulk, isDigest, ZERO_DIGEST } from './canonical';
import { parseReceipt, type ChainBreak } from './receipts';
import { TreeBuilder } from './merkle';

const ORIGIN_PREFIX = 'turnkeeper/store/';
export const originOf = (storeId: string): string => `${ORIGIN_PREFIX}${storeId}`;

/** The signed statement of a chain's state. */
export interface CheckpointBody {
  readonly origin: string;
  /** The head seq the checkpoint covers (the chain has receipts 1..seq). */
  readonly seq: number;
  /** The head receipt's hash, `sha256:<hex>`. */
  readonly hash: string;
  /** When it was signed, ISO-8601 UTC with milliseconds. */
  readonly time: string;
  /** The RFC 6962 root of receipts 1..seq, `sha256:<hex>`; absent in a version 1 note. */
  readonly root?: string;
}

export interface NoteSignature {
  readonly name: string;
  /** The first 4 bytes of SHA-256(name || 0x0A || 0x01 || public key): which key, per signed-note. */
  readonly keyHash: Buffer;
  readonly signature: Buffer;
}

export interface ParsedCheckpoint extends CheckpointBody {
  /** 2: the third line is the Merkle root (a `head` line names the head); 1: it is the head hash. */
  readonly version: 1 | 2;
  /** The signed bytes: the note text up to and including the newline before the blank line. */
  readonly text: string;
  readonly signatures: readonly NoteSignature[];
}

const SIGNATURE_PREFIX = '\u2014 ';
const NAME = /^[^\s+]+$/;
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** The note text a checkpoint signs (its body, ending in a newline). */
export function checkpointText(body: CheckpointBody): string {
  if (!isDigest(body.hash)) throw new Error(`not a digest: ${body.hash}`);
  if (!NAME.test(body.origin)) throw new Error(`origin ${JSON.stringify(body.origin)} has whitespace or '+'`);
  if (!Number.isSafeInteger(body.seq) || body.seq < 0) throw new Error(`head seq ${body.seq} is not a count`);
  const base64 = (digest: string) => Buffer.from(digest.slice('sha256:'.length), 'hex').toString('base64');
  if (body.root === undefined) return `${body.origin}\n${body.seq}\n${base64(body.hash)}\ntime ${body.time}\n`;
  if (!isDigest(body.root)) throw new Error(`not a digest: ${body.root}`);
  return `${body.origin}\n${body.seq}\n${base64(body.root)}\nhead ${base64(body.hash)}\ntime ${body.time}\n`;
}

/** `sha256:<hex>` of a 32-byte hash given in base64; undefined unless it is one, in canonical base64. */
function digestOfBase64(text: string | undefined): string | undefined {
  if (text === undefined || !BASE64.test(text)) return undefined;
  const bytes = Buffer.from(text, 'base64');
  return bytes.length === 32 && bytes.toString('base64') === text ? `sha256:${bytes.toString('hex')}` : undefined;
}

/** A signed note: the text, a blank line, one signature line per signer. */
export function signedNote(text: string, signatures: readonly NoteSignature[]): string {
  return `${text}\n${signatures.map((s) => `${SIGNATURE_PREFIX}${s.name} ${Buffer.concat([s.keyHash, s.signature]).toString('base64')}\n`).join('')}`;
}

/** Parses a signed checkpoint note; undefined unless it has the form above (signatures not checked). */
export function parseCheckpoint(note: unknown): ParsedCheckpoint | undefined {
  if (typeof note !== 'string') return undefined;
  const split = note.indexOf('\n\n');
  if (split < 0 || !note.endsWith('\n')) return undefined;
  const text = note.slice(0, split + 1);
  const lines = text.slice(0, -1).split('\n');
  if (lines.length < 3) return undefined;
  const [origin, size, root, ...extensions] = lines as [string, string, string, ...string[]];
  if (!NAME.test(origin) || !/^(0|[1-9]\d{0,15})$/.test(size)) return undefined;
  const third = digestOfBase64(root);
  if (third === undefined) return undefined;
  const headLines = extensions.filter((line) => line.startsWith('head '));
  if (headLines.length > 1) return undefined;
  const head = headLines.length === 1 ? digestOfBase64(headLines[0]!.slice('head '.length)) : undefined;
  if (headLines.length === 1 && head === undefined) return undefined;
  const time = extensions.find((line) => line.startsWith('time '))?.slice('time '.length);
  // No line of the body is empty: the first blank line is where the signatures begin.
  if (time === undefined || !ISO_TIME.test(time)) return undefined;
  const signatures: NoteSignature[] = [];
  for (const line of note.slice(split + 2, -1).split('\n')) {
    if (!line.startsWith(SIGNATURE_PREFIX)) return undefined;
    const [name, blob, ...rest] = line.slice(SIGNATURE_PREFIX.length).split(' ');
    if (rest.length > 0 || name === undefined || !NAME.test(name) || blob === undefined || !BASE64.test(blob)) return undefined;
    const bytes = Buffer.from(blob, 'base64');
    if (bytes.length < 5) return undefined;
    signatures.push({ name, keyHash: bytes.subarray(0, 4), signature: bytes.subarray(4) });
  }
  if (signatures.length === 0) return undefined;
  const versioned = head === undefined ? { version: 1 as const, hash: third } : { version: 2 as const, hash: head, root: third };
  return { origin, seq: Number(size), ...versioned, time, text, signatures };
}

/** How a checkpoint's signatures fared: the signer trusted and valid, or why not. */
type NoteVerdict = { readonly ok: true; readonly signer: string } | { readonly ok: false; readonly kind: 'signature_invalid' | 'untrusted_key' };

/** Checks a parsed note's signatures against trusted keys (src/ledger/keys.ts makes one). */
export type NoteVerifier = (note: ParsedCheckpoint) => NoteVerdict;

// ---- receipts of kind `checkpoint` ----

export const CHECKPOINT_KIND = 'checkpoint';

/** The detail of a `checkpoint` receipt: the signed note and, for people, what it says. */
export function checkpointDetail(note: string, body: CheckpointBody, key: string): Record<string, string | number> {
  return { note, signedSeq: body.seq, signedHash: body.hash, ...(body.root === undefined ? {} : { signedRoot: body.root }), key };
}

// ---- export bundles ----

const BUNDLE_SCHEMA = 'turnkeeper.bundle/v1';

export interface BundleHeader {
  readonly schema: typeof BUNDLE_SCHEMA;
  readonly origin: string;
  readonly from: number;
  readonly to: number;
  /** The signed note covering the bundle's last receipt (`to`). */
  readonly checkpoint: string;
  /**
   * Base64 hashes of the complete subtrees of receipts 1..from-1 (merkle.ts subtreesOf), so that a
   * bundle that starts later still yields every signed root; absent when `from` is 1.
   */
  readonly prefix?: readonly string[];
}

/** The bundle's first line; every following line is one stored receipt document, as stored. */
export const bundleHeaderLine = (header: Omit<BundleHeader, 'schema'>): string =>
  JSON.stringify({
    schema: BUNDLE_SCHEMA,
    origin: header.origin,
    from: header.from,
    to: header.to,
    checkpoint: header.checkpoint,
    ...(header.prefix && header.prefix.length > 0 ? { prefix: header.prefix } : {}),
  });

function parseBundleHeader(line: string | null | undefined): BundleHeader | undefined {
  if (line === undefined || line === null) return undefined;
  try {
    const value = JSON.parse(line) as Record<string, unknown>;
    if (
      value.schema !== BUNDLE_SCHEMA ||
      typeof value.origin !== 'string' ||
      !Number.isSafeInteger(value.from) ||
      !Number.isSafeInteger(value.to) ||
      typeof value.checkpoint !== 'string' ||
      (value.prefix !== undefined && !(Array.isArray(value.prefix) && value.prefix.every((item) => typeof item === 'string')))
    )
      return undefined;
    return value as unknown as BundleHeader;
  } catch {
    return undefined;
  }
}

interface SignedCheckpoint {
  /** The receipt carrying it (0 for the bundle header's). */
  readonly at: number;
  readonly seq: number;
  readonly signer: string | null;
}

export interface BundleReport {
  readonly ok: boolean;
  readonly verified: number;
  readonly breaks: ChainBreak[];
  readonly origin: string | null;
  readonly from: number | null;
  readonly to: number | null;
  /** Every checkpoint met (the in-chain ones and the header's), with the key that signed it. */
  readonly checkpoints: SignedCheckpoint[];
  /** The walk stopped after MAX_BUNDLE_BREAKS breaks (a file of junk names millions): the rest is unread. */
  readonly stopped?: true;
}

/** A bundle's walk stops after this many breaks: enough to say what is wrong, bounded for a file of junk. */
export const MAX_BUNDLE_BREAKS = 1000;

/**
 * One line of a bundle: its text (null for a line longer than MAX_BUNDLE_LINE, which is never held),
 * the digest of its bytes as given (`sha256:<hex>`), and its Merkle leaf hash.
 */
export interface BundleLine {
  readonly text: string | null;
  readonly hash: string;
  readonly leaf: Uint8Array;
}

/**
 * The longest bundle line held as text: 1 MiB. A stored receipt is a few hundred bytes (the largest, a
 * `checkpoint`, under 1 KB), so a longer line is not a receipt; it is hashed as it streams (its
 * digest still links the next one) and named `content_altered` without being held: a file with no
 * newline in it costs no more memory than one with many.
 */
export const MAX_BUNDLE_LINE = 1 << 20;

/** SHA-256(0x00 || bytes) through Node's OpenSSL: merkle.ts leafHash, for bulk work. */
function leafHashBulk(bytes: Uint8Array): Uint8Array {
  nodeCrypto ??= process.getBuiltinModule('node:crypto');
  return nodeCrypto.createHash('sha256').update(LEAF_PREFIX).update(bytes).digest();
}
const LEAF_PREFIX = Uint8Array.of(0);
let nodeCrypto: typeof import('node:crypto') | undefined;

/** A line split across chunks: its parts so far, or, past MAX_BUNDLE_LINE, only its running hashes. */
interface PartialLine {
  parts: Buffer[];
  bytes: number;
  digest?: import('node:crypto').Hash;
  leaf?: import('node:crypto').Hash;
}

const wholeLine = (line: Uint8Array): BundleLine => ({
  text: Buffer.from(line.buffer, line.byteOffset, line.byteLength).toString('utf8'),
  hash: digestBytesBulk(line),
  leaf: leafHashBulk(line),
});

function extendLine(partial: PartialLine, bytes: Buffer): void {
  if (partial.digest === undefined && partial.bytes + bytes.length > MAX_BUNDLE_LINE) {
    nodeCrypto ??= process.getBuiltinModule('node:crypto');
    partial.digest = nodeCrypto.createHash('sha256');
    partial.leaf = nodeCrypto.createHash('sha256').update(LEAF_PREFIX);
    for (const part of partial.parts) {
      partial.digest.update(part);
      partial.leaf.update(part);
    }
    partial.parts = [];
  }
  if (partial.digest) {
    partial.digest.update(bytes);
    partial.leaf!.update(bytes);
  } else partial.parts.push(Buffer.from(bytes)); // a copy: the reader reuses the chunk's memory for the next read
  partial.bytes += bytes.length;
}

function finishLine(partial: PartialLine, tail: Buffer): BundleLine {
  if (partial.digest === undefined && partial.bytes + tail.length <= MAX_BUNDLE_LINE)
    return wholeLine(partial.parts.length === 0 ? tail : Buffer.concat([...partial.parts, tail]));
  extendLine(partial, tail);
  return { text: null, hash: 'sha256:' + partial.digest!.digest('hex'), leaf: partial.leaf!.digest() };
}

/**
 * A bundle's lines from its bytes in chunks of any size (a file read piece by piece: `verify --bundle`
 * holds one chunk and one line, never the file), each hashed over its bytes exactly as in the file (no
 * decode and re-encode): "hash what was stored", and twice as fast as hashing the decoded text. Lines
 * split at every 0x0a; what follows the last one (empty after a final newline) is the last line. A
 * chunk is read only until the next is asked for, so a caller may reuse its memory.
 */
export function* bundleLinesOfChunks(chunks: Iterable<Uint8Array>): Generator<BundleLine> {
  let partial: PartialLine = { parts: [], bytes: 0 };
  for (const chunk of chunks) {
    const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let start = 0;
    for (let end = bytes.indexOf(0x0a, start); end >= 0; end = bytes.indexOf(0x0a, start)) {
      yield finishLine(partial, bytes.subarray(start, end));
      partial = { parts: [], bytes: 0 };
      start = end + 1;
    }
    if (start < bytes.length) extendLine(partial, bytes.subarray(start));
  }
  yield finishLine(partial, Buffer.alloc(0));
}

/** A bundle's lines from its bytes in memory (bundleLinesOfChunks of one chunk). */
export const bundleLinesOf = (bytes: Buffer): Generator<BundleLine> => bundleLinesOfChunks([bytes]);

/** The prefix of a bundle that starts at `from` as a tree builder; undefined when it does not fit. */
function treeOfPrefix(header: BundleHeader): TreeBuilder | undefined {
  try {
    return new TreeBuilder(
      header.from - 1,
      (header.prefix ?? []).map((item) => Buffer.from(item, 'base64')),
    );
  } catch {
    return undefined;
  }
}

const rootOf = (tree: TreeBuilder | undefined, size: number): string | undefined =>
  tree && tree.size === size ? `sha256:${Buffer.from(tree.root()).toString('hex')}` : undefined;

/**
 * Verifies an export bundle with no store: every document hashed over its bytes as given, every
 * link, every checkpoint's signature against trusted keys, every checkpoint against the receipt it
 * names, and that the documents end exactly at the header's signed checkpoint.
 */
export function verifyBundle(lines: Iterable<BundleLine>, verifyNote: NoteVerifier): BundleReport {
  const breaks: ChainBreak[] = [];
  const checkpoints: SignedCheckpoint[] = [];
  let header: BundleHeader | undefined;
  let first = true;
  let expectedSeq = 0;
  let previousHash: string | undefined;
  let verified = 0;
  let lastSeq: number | undefined;
  let lastHash: string | undefined;
  // The Merkle tree of the documents as given, from the header's prefix: every version 2 checkpoint's
  // root must be the root of the documents up to its head.
  let tree: TreeBuilder | undefined;
  const checkRoot = (note: ParsedCheckpoint, at: number): boolean => {
    if (note.root === undefined || note.root === rootOf(tree, note.seq)) return true;
    breaks.push({ seq: at || note.seq, kind: 'tree_mismatch' });
    return false;
  };
  const checkNote = (note: ParsedCheckpoint, at: number, origin: string | undefined): boolean => {
    const verdict = verifyNote(note);
    checkpoints.push({ at, seq: note.seq, signer: verdict.ok ? verdict.signer : null });
    if (!verdict.ok) breaks.push({ seq: at || note.seq, kind: verdict.kind });
    else if (origin !== undefined && note.origin !== origin) breaks.push({ seq: at || note.seq, kind: 'checkpoint_mismatch' });
    return verdict.ok;
  };
  let stopped = false;
  for (const { text: line, hash, leaf } of lines) {
    if (breaks.length >= MAX_BUNDLE_BREAKS) {
      stopped = true;
      break;
    }
    if (first) {
      first = false;
      header = parseBundleHeader(line);
      if (!header) {
        breaks.push({ seq: 0, kind: 'content_altered' });
        return finish();
      }
      expectedSeq = header.from;
      tree = treeOfPrefix(header);
      continue;
    }
    if (line === '') continue; // the newline after the last document
    const doc = line === null ? undefined : parseReceipt(line);
    let broken = false;
    const seq = doc?.seq ?? expectedSeq;
    const afterGap = seq !== expectedSeq;
    if (afterGap) {
      breaks.push({ seq: expectedSeq, kind: 'missing' });
      broken = true;
    }
    if (!doc) {
      breaks.push({ seq, kind: 'content_altered' });
      broken = true;
    } else if (!afterGap) {
      // The first document of a bundle that starts at 1 links to genesis; one that starts later links
      // to a receipt the bundle does not hold, which the signed head vouches for through the links.
      const expectedPrev = previousHash ?? (seq === 1 ? ZERO_DIGEST : doc.prevHash);
      if (doc.prevHash !== expectedPrev) {
        breaks.push({ seq, kind: 'link_broken' });
        broken = true;
      }
    }
    if (doc?.kind === CHECKPOINT_KIND) {
      const note = parseCheckpoint(doc.detail?.note);
      if (!note) {
        breaks.push({ seq, kind: 'signature_invalid' });
        broken = true;
      } else if (!checkNote(note, seq, header?.origin)) {
        broken = true;
      } else if (note.seq !== seq - 1 || note.hash !== doc.prevHash) {
        // A checkpoint is written right after the head it signs: it must name the receipt before it
        // (whose hash the link above ties to the bytes of that receipt).
        breaks.push({ seq, kind: 'checkpoint_mismatch' });
        broken = true;
      } else if (!checkRoot(note, seq)) broken = true;
    }
    if (!broken) verified += 1;
    // A gap or a reordering leaves the tree out of step: no root after it matches.
    if (tree && tree.size === seq - 1) tree.push(leaf);
    else tree = undefined;
    previousHash = hash;
    expectedSeq = seq + 1;
    lastSeq = seq;
    lastHash = hash;
  }
  return finish();

  function finish(): BundleReport {
    if (header) {
      const note = parseCheckpoint(header.checkpoint);
      if (!note) breaks.push({ seq: header.to, kind: 'signature_invalid' });
      else if (checkNote(note, 0, header.origin)) {
        // The documents must reach the signed head exactly: a bundle cut before it, or one whose head
        // is not the one signed (another checkpoint put in its place), is named.
        if (lastSeq === undefined || lastSeq < note.seq) breaks.push({ seq: note.seq, kind: 'truncated_after_checkpoint' });
        else if (lastSeq > note.seq || lastHash !== note.hash) breaks.push({ seq: note.seq, kind: 'checkpoint_mismatch' });
        else checkRoot(note, 0);
      }
    }
    return {
      ok: breaks.length === 0,
      verified,
      breaks,
      origin: header?.origin ?? null,
      from: header?.from ?? null,
      to: lastSeq ?? null,
      checkpoints,
      ...(stopped ? { stopped: true as const } : {}),
    };
  }
}

// ---- DSSE and in-toto ----

export const IN_TOTO_PAYLOAD_TYPE = 'application/vnd.in-toto+json';
export const IN_TOTO_STATEMENT_TYPE = 'https://in-toto.io/Statement/v1';
export const LAUNCH_PREDICATE_TYPE = 'https://turnkeeper.dev/attestation/launch/v1';
/** A `turn_ended` receipt's predicate: what one agent turn changed (docs/receipts.md, "Turn attestations"). */
export const TURN_PREDICATE_TYPE = 'https://turnkeeper.dev/attestation/turn/v1';

/** DSSE's pre-authentication encoding: "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body. */
export function preAuthEncoding(payloadType: string, payload: Buffer): Buffer {
  const type = Buffer.from(payloadType, 'utf8');
  return Buffer.concat([Buffer.from(`DSSEv1 ${type.length} `), type, Buffer.from(` ${payload.length} `), payload]);
}

export interface DsseEnvelope {
  readonly payloadType: string;
  /** Base64 of the payload bytes. */
  readonly payload: string;
  readonly signatures: { readonly keyid: string; readonly sig: string }[];
}
