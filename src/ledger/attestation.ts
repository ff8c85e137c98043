// Launch attestations (docs/receipts.md, "Launch attestations"): a `launch_committed` receipt as an
// in-toto Statement in a DSSE envelope, with the receipt's inclusion proof in a signed checkpoint.
import { canonicalJson, digestText } from '../core/canonical';
import {
  IN_TOTO_PAYLOAD_TYPE,
  IN_TOTO_STATEMENT_TYPE,
  LAUNCH_PREDICATE_TYPE,
  preAuthEncoding,
  TURN_PREDICATE_TYPE,
  type DsseEnvelope,
} from '../core/checkpoint';
import { parseReceipt, turnPaths, type ReceiptDocument } from '../core/receipts';
import type { Authority } from '../store/authority';
import type { Env } from '../store/location';
import { checkpointsOf, SigningRefused, type ProofResult } from './checkpoints';
import { signingKey } from './keys';
export type AttestationResult =
  | { readonly ok: true; readonly envelope: DsseEnvelope; readonly statement: Record<string, unknown> }
  | {
      readonly ok: false;
      readonly reason: 'unknown_receipt' | 'not_a_launch' | 'content_altered' | 'not_in_chain' | 'no_checkpoint' | 'tree_mismatch' | 'chain_broken';
      readonly message: string;
    };

/**
 * `turnkeeper receipts attestation <seq>`: a `launch_committed` receipt as an in-toto Statement
 * (subject: the attested agent executable; predicate: what the launch committed to), or a
 * `turn_ended` one (subject: the git tree the turn left, and the commit when HEAD moved; predicate:
 * the turn's facts), signed in a DSSE envelope with this installation's key over DSSE's
 * pre-authentication encoding.
 */
export async function launchAttestation(store: Authority, env: Env, seq: number): Promise<AttestationResult> {
  const row = (await store.receipts({ beforeSeq: seq + 1, limit: 1 })).find((candidate) => Number(candidate.seq) === seq);
  if (!row) return { ok: false, reason: 'unknown_receipt', message: `no receipt #${seq}` };
  const doc = parseReceipt(row.doc);
  if (!doc || row.hash !== digestText(row.doc))
    return { ok: false, reason: 'content_altered', message: `receipt #${seq} does not match its hash: turnkeeper verify` };
  const made = doc.kind === 'turn_ended' ? turnStatement(doc) : doc.kind === 'launch_committed' ? launchStatement(doc) : undefined;
  if (made === undefined) return { ok: false, reason: 'not_a_launch', message: `receipt #${seq} is ${doc.kind}, not launch_committed or turn_ended` };
  if (made.subject.length === 0) return { ok: false, reason: 'not_a_launch', message: `receipt #${seq} names no attested digest` };
  const checkpoints = checkpointsOf(store);
  if (!checkpoints) throw new Error('this store was not opened with checkpoints');
  // The receipt must be a leaf of a signed tree that extends everything signed before: its inclusion
  // proof goes into the statement, so one attestation, one public key and the proof suffice.
  let proved: ProofResult;
  try {
    proved = await checkpoints.prove(seq);
  } catch (error) {
    if (!(error instanceof SigningRefused)) throw error;
    return { ok: false, reason: 'chain_broken', message: error.message };
  }
  if (!proved.ok) return { ok: false, reason: proved.reason, message: proved.message };
  const capture = doc.capture ? await store.getCapture(doc.capture) : undefined;
  const statement = {
    _type: IN_TOTO_STATEMENT_TYPE,
    subject: made.subject,
    predicateType: made.predicateType,
    predicate: {
      receipt: {
        seq: doc.seq,
        hash: row.hash,
        at: doc.at,
        origin: (await checkpoints.origin()) ?? null,
        document: row.doc,
        inclusion: { index: proved.index, size: proved.size, root: proved.root, proof: proved.proof, checkpoint: proved.checkpoint },
      },
      capture: doc.capture ?? null,
      todo: doc.todo ?? capture?.todo ?? null,
      goal: doc.goal,
      owner: doc.owner ?? null,
      lease: doc.lease ?? null,
      ...made.predicate,
      checkout: capture?.checkout ?? null,
    },
  };
  const payload = Buffer.from(canonicalJson(statement), 'utf8');
  const key = signingKey(env);
  const sig = key.sign(preAuthEncoding(IN_TOTO_PAYLOAD_TYPE, payload));
  return {
    ok: true,
    statement,
    envelope: { payloadType: IN_TOTO_PAYLOAD_TYPE, payload: payload.toString('base64'), signatures: [{ keyid: key.name, sig: sig.toString('base64') }] },
  };
}

type Subject = { name: string; digest: Record<string, string> };
interface Made {
  readonly subject: Subject[];
  readonly predicateType: string;
  readonly predicate: Record<string, unknown>;
}

const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);

function launchStatement(doc: ReceiptDocument): Made {
  const detail = doc.detail ?? {};
  const digestOf = (value: unknown): Record<string, string> | undefined =>
    typeof value === 'string' && /^sha256:[0-9a-f]{64}$/.test(value) ? { sha256: value.slice(7) } : undefined;
  const subject: Subject[] = [];
  const executable = digestOf(detail.digest);
  if (executable) subject.push({ name: `agent:${text(detail.agent) ?? 'unknown'}`, digest: executable });
  const closure = digestOf(detail.closure);
  if (closure) subject.push({ name: 'closure', digest: closure });
  return {
    subject,
    predicateType: LAUNCH_PREDICATE_TYPE,
    predicate: {
      launch: text(detail.launch),
      agent: text(detail.agent),
      argvDigest: text(detail.argvDigest),
      envDigest: text(detail.envDigest),
      cwd: text(detail.cwd),
      loader: text(detail.loader),
      loaderEnvironment: text(detail.loaderEnvironment),
    },
  };
}

/**
 * A turn: the subject is the tree it left (in-toto's `gitTree` digest), and the commit it left when
 * HEAD moved during the turn (`gitCommit`); the predicate is the receipt's detail as written (the
 * changed paths parsed from their JSON text). A turn whose tree is unknown attests nothing.
 */
function turnStatement(doc: ReceiptDocument): Made {
  const detail = doc.detail ?? {};
  const gitId = (value: unknown): string | undefined => (typeof value === 'string' && /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/.test(value) ? value : undefined);
  const subject: Subject[] = [];
  const tree = gitId(detail.treeAfter);
  if (tree) subject.push({ name: 'git-tree', digest: { gitTree: tree } });
  const head = gitId(detail.headAfter);
  if (tree && head && head !== detail.headBefore) subject.push({ name: 'git-commit', digest: { gitCommit: head } });
  const paths = turnPaths(detail.paths) ?? null;
  return { subject, predicateType: TURN_PREDICATE_TYPE, predicate: { ...detail, paths } };
}
