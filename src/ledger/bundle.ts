// Export bundles and their offline check (docs/receipts.md, "Export and offline verification"): the
// stored documents from a seq to a freshly signed head, with that checkpoint in the header line, and
// what `verify --bundle` and `verify --proof` check of them without a store.
import { bundleHeaderLine, bundleLinesOf, parseCheckpoint, verifyBundle, type BundleReport } from '../core/checkpoint';
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

const EXPORT_PAGE = 10_000;

/**
 * `turnkeeper receipts export`: verifies the chain, writes a checkpoint of its head (store and
 * witness), then the bundle: a header line carrying that signed checkpoint, and every stored document
 * from `from` to the signed head, exactly as stored, one per line.
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
  for (let start = first; start <= to; start += EXPORT_PAGE) {
    const end = Math.min(start + EXPORT_PAGE, to + 1);
    const rows = await store.receipts({ beforeSeq: end, limit: end - start });
    const docs: string[] = [];
    for (let i = rows.length - 1; i >= 0; i -= 1) if (Number(rows[i]!.seq) >= start) docs.push(rows[i]!.doc);
    if (docs.length > 0) write(docs.join('\n') + '\n');
  }
  return { from: first, to, checkpoint };
}

/** Verifies a bundle's bytes with these keys (no store). */
export function verifyBundleBytes(bytes: Buffer, keys: readonly TrustedKey[]): BundleReport {
  return verifyBundle(bundleLinesOf(bytes), noteVerifier(keys));
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
