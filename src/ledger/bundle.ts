// Export bundles and their offline check (docs/receipts.md, "Export and offline verification"): the
// stored documents from a seq to a freshly signed head, with that checkpoint in the header line, and
// what `verify --bundle` and `verify --proof` check of them without a store.
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { bundleHeaderLine, bundleLinesOfChunks, parseCheckpoint, verifyBundle, type BundleReport } from '../core/checkpoint';
import type { ChainReport } from '../core/receipts';
import { leafHash, verifyInclusion } from '../core/merkle';
import type { Authority } from '../store/authority';
import { noteVerifier, type TrustedKey } from './keys';
import { base64Of, bytesOf, checkpointsOf, type WrittenCheckpoint } from './checkpoints';
// ---- export, offline verification, launch attestations ----

/** The chain does not verify: nothing is signed over a broken chain. */
export class ExportRefused extends Error {
  constructor(readonly report: ChainReport) {
    super(
      `the receipt chain does not verify (${report.breaks.map((item) => `seq ${item.seq}: ${item.kind}`).join(', ')}): nothing was exported or signed; turnkeeper verify`,
    );
    this.name = 'ExportRefused';
  }
}

/** Receipts per page read by an export: as VERIFY_PAGE in store/sqlite.ts, small pages keep the heap small. */
const EXPORT_PAGE = 250;
/**
 * About how many characters an export hands `write` at a time: under V8's large-object size (128 KiB),
 * so the strings it joins are collected young; joined pages of 4 MiB were old-space garbage that grew
 * the heap to 160 MB at 1M receipts before a full collection.
 */
const EXPORT_WRITE = 1 << 16;

/**
 * `turnkeeper receipts export`: verifies the chain, writes a checkpoint of its head (store and
 * witness), then the bundle: a header line carrying that signed checkpoint, and every stored document
 * from `from` to the signed head, exactly as stored, one per line. The documents are read a page at a
 * time and written as they are read, in chunks of about EXPORT_WRITE characters: memory does not grow
 * with the chain (bench rows B3).
 */
export async function exportBundle(
  store: Authority,
  goal: string,
  from: number,
  write: (chunk: string) => void,
): Promise<{ readonly from: number; readonly to: number; readonly checkpoint: WrittenCheckpoint }> {
  const checkpoints = checkpointsOf(store);
  if (!checkpoints) throw new Error('this store was not opened with checkpoints');
  const report = await store.verifyChain();
  if (!report.ok) throw new ExportRefused(report);
  const checkpoint = await checkpoints.checkpointNow(goal);
  const to = checkpoint.seq;
  const first = Math.max(1, Math.min(from, to));
  write(bundleHeaderLine({ origin: checkpoint.origin, from: first, to, checkpoint: checkpoint.note, prefix: await checkpoints.prefixOf(first - 1) }) + '\n');
  let pending: string[] = [];
  let pendingLength = 0;
  const flush = () => {
    if (pending.length > 0) write(pending.join('\n') + '\n');
    pending = [];
    pendingLength = 0;
  };
  for (let start = first; start <= to; start += EXPORT_PAGE) {
    const end = Math.min(start + EXPORT_PAGE, to + 1);
    // Newest first (the store's page order): walked backwards into seq order.
    const rows = await store.receipts({ beforeSeq: end, limit: end - start });
    for (let i = rows.length - 1; i >= 0; i -= 1) {
      const row = rows[i]!;
      if (Number(row.seq) < start) continue;
      if (pendingLength + row.doc.length > EXPORT_WRITE) flush();
      pending.push(row.doc);
      pendingLength += row.doc.length + 1;
    }
  }
  flush();
  return { from: first, to, checkpoint };
}

/** The bundle file cannot be opened or read, or is not a regular file: nothing was verified. */
export class BundleUnreadable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BundleUnreadable';
  }
}

/** How much of a bundle file is read at a time; with one line (core/checkpoint.ts MAX_BUNDLE_LINE), all it holds. */
const BUNDLE_CHUNK = 1 << 20;

/**
 * `verify --bundle`: verifies the bundle file at `path` with these keys (no store), reading it as a
 * stream: one chunk and one line at a time, the Merkle tree folded as the lines pass (TreeBuilder keeps
 * O(log n) hashes), so memory does not grow with the bundle. A regular file only, opened O_NONBLOCK:
 * a FIFO is refused, not waited on; /dev/zero and other devices are refused before a byte is read.
 */
export function verifyBundleFile(path: string, keys: readonly TrustedKey[]): BundleReport {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    throw new BundleUnreadable((error as Error).message);
  }
  try {
    let regular = false;
    try {
      regular = fstatSync(fd).isFile();
    } catch (error) {
      throw new BundleUnreadable((error as Error).message);
    }
    if (!regular) throw new BundleUnreadable('not a regular file');
    return verifyBundle(bundleLinesOfChunks(chunksOf(fd)), noteVerifier(keys));
  } finally {
    closeSync(fd);
  }
}

/** The file's bytes in chunks, one buffer reused for every read (bundleLinesOfChunks copies what it keeps). */
function* chunksOf(fd: number): Generator<Uint8Array> {
  const buffer = Buffer.allocUnsafe(BUNDLE_CHUNK);
  for (;;) {
    let read: number;
    try {
      read = readSync(fd, buffer, 0, buffer.length, null);
    } catch (error) {
      throw new BundleUnreadable((error as Error).message);
    }
    if (read === 0) return;
    yield buffer.subarray(0, read);
  }
}

type ProofVerdict =
  | { readonly ok: true; readonly origin: string; readonly seq: number; readonly size: number; readonly signer: string }
  | { readonly ok: false; readonly reason: 'not_a_proof' | 'signature_invalid' | 'untrusted_key' | 'checkpoint_mismatch' | 'not_included' };

/** `verify --proof`: an inclusion proof (receipts prove --json) and a document, with these keys only. */
export function checkInclusionProof(
  proof: { index?: unknown; size?: unknown; root?: unknown; proof?: unknown; checkpoint?: unknown },
  document: Buffer,
  keys: readonly TrustedKey[],
): ProofVerdict {
  const hashes =
    Array.isArray(proof.proof) && proof.proof.every((item) => typeof item === 'string') ? proof.proof.map((item) => Buffer.from(item, 'base64')) : undefined;
  const note = parseCheckpoint(proof.checkpoint);
  if (!note || note.root === undefined || !hashes || !Number.isSafeInteger(proof.index) || typeof proof.root !== 'string')
    return { ok: false, reason: 'not_a_proof' };
  const verdict = noteVerifier(keys)(note);
  if (!verdict.ok) return { ok: false, reason: verdict.kind };
  if (proof.size !== note.seq || proof.root !== base64Of(note.root)) return { ok: false, reason: 'checkpoint_mismatch' };
  if (!verifyInclusion(proof.index as number, note.seq, leafHash(document), hashes, bytesOf(note.root))) return { ok: false, reason: 'not_included' };
  return { ok: true, origin: note.origin, seq: (proof.index as number) + 1, size: note.seq, signer: verdict.signer };
}

/** Which key signed which checkpoints of a bundle: "which machine signed what". */
export function signersOf(report: BundleReport): { key: string | null; checkpoints: number[] }[] {
  const bySigner = new Map<string | null, number[]>();
  for (const item of report.checkpoints) {
    const list = bySigner.get(item.signer) ?? [];
    list.push(item.seq);
    bySigner.set(item.signer, list);
  }
  return [...bySigner].map(([key, checkpoints]) => ({ key, checkpoints }));
}
