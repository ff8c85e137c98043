// Signed checkpoints, export bundles and launch attestations (docs/receipts.md, "Checkpoints"). Pure:
// text formats, their parsers and the bundle walk. Signing and verifying are injected (node:crypto
// lives in src/ledger/keys.ts, so nothing here costs a hook its start-up).
//
// A checkpoint is a C2SP signed note (c2sp.org/signed-note) whose text follows c2sp.org/tlog-checkpoint:
//
//   turnkeeper/store/<store id>          origin: the store's identity (store_meta store_id)
//   41                                   the chain's head seq (the tlog "tree size")
//   <base64 of the head hash's 32 bytes> the chain's head hash (the tlog "root hash")
//   time 2026-11-30T12:29:38.791Z        extension line: when it was signed
//
//   — <key name> <base64(4-byte key hash || 64-byte Ed25519 signature)>
//
// The signature covers the text above the blank line, byte for byte. A launch attestation is an
// in-toto Statement in a DSSE envelope signed over DSSE's pre-authentication encoding (PAE).
import { digestBytesBulk, isDigest, ZERO_DIGEST } from './canonical';
import { parseReceipt, type ChainBreak } from './receipts';

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
}

export interface NoteSignature {
  readonly name: string;
  /** The first 4 bytes of SHA-256(name || 0x0A || 0x01 || public key): which key, per signed-note. */
  readonly keyHash: Buffer;
  readonly signature: Buffer;
}

export interface ParsedCheckpoint extends CheckpointBody {
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
  return `${body.origin}\n${body.seq}\n${Buffer.from(body.hash.slice('sha256:'.length), 'hex').toString('base64')}\ntime ${body.time}\n`;
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
  if (!NAME.test(origin) || !/^(0|[1-9]\d{0,15})$/.test(size) || !BASE64.test(root)) return undefined;
  const rootBytes = Buffer.from(root, 'base64');
  if (rootBytes.length !== 32 || rootBytes.toString('base64') !== root) return undefined;
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
  return { origin, seq: Number(size), hash: `sha256:${rootBytes.toString('hex')}`, time, text, signatures };
}

/** How a checkpoint's signatures fared: the signer trusted and valid, or why not. */
type NoteVerdict = { readonly ok: true; readonly signer: string } | { readonly ok: false; readonly kind: 'signature_invalid' | 'untrusted_key' };

/** Checks a parsed note's signatures against trusted keys (src/ledger/keys.ts makes one). */
export type NoteVerifier = (note: ParsedCheckpoint) => NoteVerdict;

// ---- receipts of kind `checkpoint` ----

export const CHECKPOINT_KIND = 'checkpoint';

/** The detail of a `checkpoint` receipt: the signed note and, for people, what it says. */
export function checkpointDetail(note: string, body: CheckpointBody, key: string): Record<string, string | number> {
  return { note, signedSeq: body.seq, signedHash: body.hash, key };
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
}

/** The bundle's first line; every following line is one stored receipt document, as stored. */
export const bundleHeaderLine = (header: Omit<BundleHeader, 'schema'>): string =>
  JSON.stringify({ schema: BUNDLE_SCHEMA, origin: header.origin, from: header.from, to: header.to, checkpoint: header.checkpoint });

function parseBundleHeader(line: string | undefined): BundleHeader | undefined {
  if (line === undefined) return undefined;
  try {
    const value = JSON.parse(line) as Record<string, unknown>;
    if (
      value.schema !== BUNDLE_SCHEMA ||
      typeof value.origin !== 'string' ||
      !Number.isSafeInteger(value.from) ||
      !Number.isSafeInteger(value.to) ||
      typeof value.checkpoint !== 'string'
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
}

/** One line of a bundle: its text, and the digest of its bytes as given (`sha256:<hex>`). */
export interface BundleLine {
  readonly text: string;
  readonly hash: string;
}

/**
 * A bundle's lines, each hashed over its bytes exactly as in the file (no decode and re-encode): "hash
 * what was stored", and twice as fast as hashing the decoded text of a 100,000-line bundle.
 */
export function* bundleLinesOf(bytes: Buffer): Generator<BundleLine> {
  for (let start = 0; start <= bytes.length;) {
    let end = bytes.indexOf(0x0a, start);
    if (end < 0) end = bytes.length;
    const line = bytes.subarray(start, end);
    yield { text: line.toString('utf8'), hash: digestBytesBulk(line) };
    start = end + 1;
  }
}

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
  const checkNote = (note: ParsedCheckpoint, at: number, origin: string | undefined): boolean => {
    const verdict = verifyNote(note);
    checkpoints.push({ at, seq: note.seq, signer: verdict.ok ? verdict.signer : null });
    if (!verdict.ok) breaks.push({ seq: at || note.seq, kind: verdict.kind });
    else if (origin !== undefined && note.origin !== origin) breaks.push({ seq: at || note.seq, kind: 'checkpoint_mismatch' });
    return verdict.ok;
  };
  for (const { text: line, hash } of lines) {
    if (first) {
      first = false;
      header = parseBundleHeader(line);
      if (!header) {
        breaks.push({ seq: 0, kind: 'content_altered' });
        return finish();
      }
      expectedSeq = header.from;
      continue;
    }
    if (line === '') continue; // the newline after the last document
    const doc = parseReceipt(line);
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
      }
    }
    if (!broken) verified += 1;
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
    };
  }
}

// ---- DSSE and in-toto ----

export const IN_TOTO_PAYLOAD_TYPE = 'application/vnd.in-toto+json';
export const IN_TOTO_STATEMENT_TYPE = 'https://in-toto.io/Statement/v1';
export const LAUNCH_PREDICATE_TYPE = 'https://turnkeeper.dev/attestation/launch/v1';

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
