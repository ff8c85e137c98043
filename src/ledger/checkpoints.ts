// Signed checkpoints of the receipt chain and their witness (docs/receipts.md, "Checkpoints").
//
// A checkpoint signs the chain's head (origin = the store's identity, head seq and hash, time) with
// this installation's key. It is kept in the store (store_meta `checkpoint`: the newest; and, for the
// ones written every N receipts, on demand and on export, a `checkpoint` receipt appended right after
// the head it signs, so the chain carries its own signed history) and in a witness outside the store
// (./witness.ts). `verify` and `doctor` compare the store with the newest witnessed checkpoint, so a
// cut tail with a fixed head and a rewritten anchor is named too. Export bundles are ./bundle.ts's,
// launch attestations ./attestation.ts's; both sign through this module's checks.
//
// A release is checkpointed too, but out of the chain (store_meta and the witness): the release stays
// the newest receipt of its Todo, as every reader of the log expects, and is still signed.
//
// Automatic checkpoints come from the Ledger's collaborator `Checkpoints`, which the one store factory
// (open.ts) hands every authority it opens and through which the Ledger runs each write transaction:
// after the transaction's own receipts, in the same transaction; the witness line is appended after the commit (never naming what was rolled back). A
// write that appends nothing (a replay) does nothing here: no key, no node:crypto, no config read.
import { buildReceipt, parseReceipt, type ChainBreak, type ChainLink, type ChainReport, type WitnessState } from '../core/receipts';
import {
  CHECKPOINT_KIND,
  checkpointDetail,
  checkpointText,
  originOf,
  parseCheckpoint,
  signedNote,
  type NoteVerifier,
  type ParsedCheckpoint,
} from '../core/checkpoint';
import { checkExtension, hashReaderOf, storedRoot, TreeIncomplete } from '../core/signedPrefix';
import { consistencyProof, inclusionProof, leafHash, verifyInclusion, subtreesOf } from '../core/merkle';
import type { Env } from '../store/location';
import type { StorePort, StoreTx } from '../store/port';
import type { Authority, ReceiptRow } from '../store/authority';
import { noteVerifier, signingKey, signNote, trustedKeys, type SigningKey } from './keys';
import { readHomeConfig } from '../config/homeConfig';
import { appendWitness, compareOne, newestOf, readWitness, replacedIdentity, witnessPath, type WitnessEntry } from './witness';
import { Ledger } from './ledger';

const DEFAULT_CHECKPOINT_EVERY = 100;
/** store_meta key of the newest checkpoint this store signed (any machine). */
const CHECKPOINT_META = 'checkpoint';
/** A chain report with the witness's say (core's ChainReport carries it as an optional field). */
export type CheckpointedReport = ChainReport;

/** Automatic checkpoints every N receipts (`TURNKEEPER_CHECKPOINT_EVERY`, `checkpointEvery`); 0 turns them off. */
function checkpointEvery(env: Env): number {
  const fromEnv = env.TURNKEEPER_CHECKPOINT_EVERY;
  const value = fromEnv !== undefined && fromEnv !== '' ? Number(fromEnv) : readHomeConfig(env).checkpointEvery;
  return value !== undefined && Number.isSafeInteger(value) && value >= 0 ? value : DEFAULT_CHECKPOINT_EVERY;
}

export interface WrittenCheckpoint {
  readonly origin: string;
  /** The head it signs. */
  readonly seq: number;
  readonly hash: string;
  /** The Merkle root of receipts 1..seq. */
  readonly root: string;
  /** The `checkpoint` receipt that carries it (seq + 1), or null for one kept out of the chain (a release's). */
  readonly receipt: number | null;
  readonly note: string;
  readonly key: string;
}

/** The checkpoint machinery of an authority opened by the factory (undefined for a bare one). */
export function checkpointsOf(authority: Authority): Checkpoints | undefined {
  return authority instanceof Ledger ? authority.checkpoints : undefined;
}

export class Checkpoints {
  private every: number | undefined;
  private storeId: string | undefined;

  constructor(
    private readonly rows: StorePort,
    private readonly env: Env,
  ) {}

  get witness(): string | null {
    return witnessPath(this.env);
  }

  async origin(): Promise<string | undefined> {
    this.storeId ??= await this.rows.getMeta('store_id');
    return this.storeId === undefined ? undefined : originOf(this.storeId);
  }

  /** The newest checkpoint kept in the store (store_meta), parsed; undefined when none. */
  async latest(): Promise<ParsedCheckpoint | undefined> {
    return parseCheckpoint(await this.rows.getMeta(CHECKPOINT_META));
  }

  async write<T>(work: (tx: StoreTx) => Promise<T>): Promise<T> {
    let written: WrittenCheckpoint | undefined;
    /** The Goal of receipts the store appends at COMMIT, whose seqs this transaction never sees. */
    let deferredGoal: string | undefined;
    const result = await this.rows.write(async (tx) => {
      written = undefined; // a retried transaction starts over
      let first: number | undefined;
      let last = 0;
      let released = false;
      let goal = '';
      deferredGoal = undefined;
      const watched: StoreTx = {
        ...tx,
        appendReceipt: (row, previous) => {
          first ??= row.seq;
          last = row.seq;
          goal = row.goal;
          released ||= row.kind === 'lease_released';
          return tx.appendReceipt(row, previous);
        },
        appendAtCommit: async (receipts, expect) => {
          const link = await tx.appendAtCommit(receipts, expect);
          if (link) {
            first ??= link.seq - receipts.length + 1;
            last = link.seq;
            goal = receipts.at(-1)!.goal;
          } else if (receipts.length > 0) deferredGoal = receipts.at(-1)!.goal;
          return link;
        },
      };
      const value = await work(watched);
      const due = first === undefined ? 'none' : this.due(first, last, released);
      if (due !== 'none') {
        // A checkpoint that cannot be signed (an unsafe keys directory) never fails the decision: the
        // key is loaded and signed with before any statement of the checkpoint, so the only errors
        // caught are the key's. A statement that fails is the transaction's failure and propagates:
        // caught here, the store would be asked to COMMIT a transaction with half an append in it.
        const key = this.keyOrNothing();
        try {
          if (key) written = await this.sign(tx, goal, due === 'chain', key, AUTOMATIC_WALK_LIMIT);
        } catch (error) {
          // A head that does not extend what was signed is never signed; the decision stands, and
          // verify names the fork. A walk too long for a hook (the first checkpoint over the tree of a
          // large upgraded store) is left to `turnkeeper checkpoint`. Only these are caught: both are
          // thrown by the check, before anything is written.
          if (!(error instanceof SigningRefused) && !(error instanceof SigningDeferred)) throw error;
          if (this.env.TURNKEEPER_DEBUG) process.stderr.write(`turnkeeper: no checkpoint: ${error.message}\n`);
        }
      }
      return value;
    });
    if (!written && deferredGoal !== undefined) written = await this.afterCommit(deferredGoal);
    if (written) this.witnessQuietly(written);
    return result;
  }

  /**
   * A checkpoint due for receipts the store appended in its COMMIT (StoreTx.appendAtCommit), whose
   * seqs were known only then: signed in a transaction of its own, over the head as it is by then. The
   * decision it follows is committed whatever happens here: a checkpoint that cannot be written now
   * waits for the next receipts that cross a multiple of N, as one the key refused does.
   */
  private async afterCommit(goal: string): Promise<WrittenCheckpoint | undefined> {
    const appended = this.rows.appendedAtCommit?.();
    if (!appended || this.due(appended.first, appended.last, false) !== 'chain') return undefined;
    const key = this.keyOrNothing();
    if (!key) return undefined;
    try {
      return await this.rows.write((tx) => this.sign(tx, goal, true, key, AUTOMATIC_WALK_LIMIT));
    } catch (error) {
      // Whatever failed here, the decision stands (committed); a refused head is verify's to name.
      if (this.env.TURNKEEPER_DEBUG) process.stderr.write(`turnkeeper: no checkpoint: ${(error as Error).message}\n`);
      return undefined;
    }
  }

  /** 'chain' when the receipts crossed a multiple of N; 'meta' for a release (kept out of the chain). */
  private due(first: number, last: number, released: boolean): 'chain' | 'meta' | 'none' {
    this.every ??= checkpointEvery(this.env);
    if (this.every === 0) return 'none';
    if (Math.floor((first - 1) / this.every) !== Math.floor(last / this.every)) return 'chain';
    return released ? 'meta' : 'none';
  }

  /**
   * Signs the head of the open transaction, keeps it in store_meta and, `inChain`, appends the
   * `checkpoint` receipt that carries it. First the head must extend every checkpoint signed before
   * (the store's newest and the witnessed one): otherwise `SigningRefused`, and nothing is written.
   */
  private async sign(
    tx: StoreTx,
    goal: string,
    inChain: boolean,
    key: SigningKey = signingKey(this.env),
    maxWalk = Infinity,
  ): Promise<WrittenCheckpoint | undefined> {
    const origin = await this.origin();
    const head = await tx.chainHead();
    if (origin === undefined || head === undefined) return undefined;
    const before = this.signedBefore(origin, await tx.meta(CHECKPOINT_META));
    if (before.replaced) throw new SigningRefused([{ seq: before.replaced.seq, kind: 'store_identity_changed' }]);
    const extension = await checkExtension(tx, head, before.notes, maxWalk);
    if ('deferred' in extension) throw new SigningDeferred(extension.deferred);
    const breaks = extension.ok ? [] : [...extension.breaks];
    // The witness also knows which receipt carried its newest checkpoint: rewritten, the history after
    // the signed head forked, even though the signed head itself is intact.
    for (const carrier of before.carriers) {
      const row = carrier.seq > head.seq ? undefined : (await tx.receiptsBetween(carrier.seq - 1, carrier.seq))[0];
      if (row === undefined) breaks.push({ seq: carrier.seq, kind: 'truncated_after_checkpoint' });
      else if (parseReceipt(row.doc)?.detail?.note !== carrier.text) breaks.push({ seq: carrier.seq, kind: 'fork' });
    }
    if (!extension.ok || breaks.length > 0) throw new SigningRefused(breaks);
    const now = await tx.clock(Date.now());
    const body = { origin, seq: head.seq, hash: head.hash, root: extension.root, time: new Date(now).toISOString() };
    const text = checkpointText(body);
    const note = signedNote(text, [signNote(key, text)]);
    await tx.setMeta(CHECKPOINT_META, note);
    const written = { origin, seq: head.seq, hash: head.hash, root: extension.root, note, key: key.name };
    if (!inChain) return { ...written, receipt: null };
    const receipt = buildReceipt(head, { kind: 'checkpoint', goal, detail: checkpointDetail(note, body, key.name) }, now);
    await tx.appendReceipt({ seq: receipt.document.seq, doc: receipt.text, hash: receipt.hash, goal, todo: null, capture: null, kind: CHECKPOINT_KIND }, head);
    return { ...written, receipt: receipt.document.seq };
  }

  /**
   * The checkpoints a new one must extend: the store's newest (store_meta) and the witness's newest of
   * this origin, each only when signed by a trusted key (an untrusted or broken note is `verify`'s to
   * name; it cannot vouch for a prefix, nor block a signature); and the witness's entry of another
   * origin at this store's location, when it has one (the store's identity changed: nothing is signed).
   */
  private signedBefore(
    origin: string,
    meta: string | undefined,
  ): { notes: ParsedCheckpoint[]; carriers: { seq: number; text: string }[]; replaced: WitnessEntry | undefined } {
    const verify = noteVerifier(trustedKeys(this.env));
    const trusted = (note: ParsedCheckpoint | undefined): note is ParsedCheckpoint => note !== undefined && note.origin === origin && verify(note).ok;
    const notes: ParsedCheckpoint[] = [];
    const carriers: { seq: number; text: string }[] = [];
    const add = (note: ParsedCheckpoint) => {
      if (!notes.some((known) => known.text === note.text)) notes.push(note);
    };
    const own = parseCheckpoint(meta);
    if (trusted(own)) add(own);
    const path = this.witness;
    const store = this.rows.location;
    const read = path === null ? undefined : readWitness(path, { origin, store });
    const entries = read?.kind === 'entries' ? read.entries : [];
    for (const entry of newestOf(entries, origin)) {
      const note = parseCheckpoint(entry.text);
      if (!trusted(note) || note.seq !== entry.seq) continue;
      add(note);
      if (entry.receipt !== null) carriers.push({ seq: entry.receipt, text: entry.text });
    }
    return { notes, carriers, replaced: replacedIdentity(entries, store, origin) };
  }

  /** This installation's signing key, or undefined (with a line under TURNKEEPER_DEBUG) when it cannot be loaded. */
  private keyOrNothing(): SigningKey | undefined {
    try {
      return signingKey(this.env);
    } catch (error) {
      if (this.env.TURNKEEPER_DEBUG) process.stderr.write(`turnkeeper: no checkpoint: ${(error as Error).message}\n`);
      return undefined;
    }
  }

  /** `turnkeeper checkpoint`, and every export: a checkpoint now, in the chain, store_meta and the witness. */
  async checkpointNow(goal: string): Promise<WrittenCheckpoint & { readonly receipt: number }> {
    const written = await this.rows.write((tx) => this.sign(tx, goal, true));
    if (!written || written.receipt === null) throw new Error('the store has no receipts or no identity (store_meta store_id) to sign');
    this.witnessQuietly(written);
    return { ...written, receipt: written.receipt };
  }

  /**
   * The inclusion proof of receipt `seq` in a signed checkpoint: of tree size `size` (the store's
   * newest checkpoint of that size, or the `checkpoint` receipt right after receipt `size`), else the
   * store's newest one when it covers the receipt, else a new checkpoint of the head (which first
   * checks that the head extends what was signed). The proof is read from the stored tree (O(log n)
   * rows) and checked against the signed root before it is handed out: a receipt that is not the
   * leaf the signed tree holds (past the head, or rewritten) is refused.
   */
  async prove(seq: number, size?: number, goal = ''): Promise<ProofResult> {
    const head = await this.rows.chainHead();
    if (head === undefined || seq > head.seq)
      return { ok: false, reason: 'not_in_chain', message: `receipt #${seq} is past the chain's head (#${head?.seq ?? 0}): it is in no signed tree` };
    if (size !== undefined && (size < seq || size > head.seq))
      return { ok: false, reason: 'no_checkpoint', message: `--size ${size} must be between receipt #${seq} and the head #${head.seq}` };
    const row = (await this.rows.receipts({ beforeSeq: seq + 1, limit: 1 })).find((candidate) => Number(candidate.seq) === seq);
    if (!row) return { ok: false, reason: 'unknown_receipt', message: `no receipt #${seq}` };
    const origin = await this.origin();
    const usable = (note: ParsedCheckpoint | undefined): note is ParsedCheckpoint & { root: string } =>
      note !== undefined && note.root !== undefined && note.origin === origin && this.trusted(note);
    let note: ParsedCheckpoint | undefined;
    if (size === undefined) {
      note = await this.latest();
      if (!usable(note) || note.seq < seq) note = parseCheckpoint((await this.checkpointNow(goal)).note);
    } else {
      note = await this.latest();
      if (note?.seq !== size) {
        const carrier = (await this.rows.receipts({ beforeSeq: size + 2, limit: 1 })).find((candidate) => Number(candidate.seq) === size + 1);
        const carried = carrier ? parseReceipt(carrier.doc) : undefined;
        note = carried?.kind === CHECKPOINT_KIND ? parseCheckpoint(carried.detail?.note) : undefined;
      }
      if (note?.seq !== size) note = undefined;
    }
    if (!usable(note))
      return {
        ok: false,
        reason: 'no_checkpoint',
        message: `no signed checkpoint of tree size ${size ?? seq} over the Merkle tree: turnkeeper checkpoint signs the head`,
      };
    const read = hashReaderOf(this.rows);
    if ((await storedRoot(this.rows, note.seq)) !== note.root)
      return { ok: false, reason: 'tree_mismatch', message: `the stored receipt tree at size ${note.seq} is not the signed one: turnkeeper verify` };
    let proof: Uint8Array[];
    try {
      proof = await inclusionProof(seq - 1, note.seq, read);
    } catch (error) {
      if (!(error instanceof TreeIncomplete)) throw error;
      return { ok: false, reason: 'tree_mismatch', message: `${error.message}: turnkeeper verify` };
    }
    if (!verifyInclusion(seq - 1, note.seq, leafHash(Buffer.from(row.doc, 'utf8')), proof, bytesOf(note.root)))
      return {
        ok: false,
        reason: 'not_in_chain',
        message: `receipt #${seq} as stored is not the leaf the signed tree of size ${note.seq} holds: turnkeeper verify`,
      };
    return {
      ok: true,
      index: seq - 1,
      size: note.seq,
      root: base64Of(note.root),
      proof: proof.map((hash) => Buffer.from(hash).toString('base64')),
      checkpoint: signedNote(note.text, note.signatures),
      document: row.doc,
      hash: row.hash ?? '',
    };
  }

  /**
   * Receipts since the store's newest checkpoint signed over the Merkle tree, when more than an
   * automatic checkpoint walks (AUTOMATIC_WALK_LIMIT): hooks then skip signing until `turnkeeper
   * checkpoint` signs them once. Undefined when automatic checkpoints can sign (doctor reports it).
   */
  async unsignedBacklog(): Promise<{ readonly receipts: number; readonly limit: number } | undefined> {
    const head = await this.headSeq();
    const note = await this.latest();
    const since = head - (note?.root !== undefined ? note.seq : 0);
    return since > AUTOMATIC_WALK_LIMIT ? { receipts: since, limit: AUTOMATIC_WALK_LIMIT } : undefined;
  }

  async headSeq(): Promise<number> {
    return (await this.rows.chainHead())?.seq ?? 0;
  }

  /**
   * Whether a trusted key signed the note, remembered per note text once it did (proofs against one
   * checkpoint, asked again and again by a long-lived process, check its signature once). The keys are
   * read when a note is first checked: a first checkpoint creates this installation's key.
   */
  private trusted(note: ParsedCheckpoint): boolean {
    const whole = signedNote(note.text, note.signatures);
    if (this.trustedNotes.has(whole)) return true;
    if (!noteVerifier(trustedKeys(this.env))(note).ok) return false;
    if (this.trustedNotes.size >= 64) this.trustedNotes.clear();
    this.trustedNotes.add(whole);
    return true;
  }
  private readonly trustedNotes = new Set<string>();

  /** `turnkeeper receipts consistency`: the tree of `from` receipts a prefix of the tree of `to` (Go tlog.CheckTree). */
  async consistency(from: number, to: number): Promise<{ from: number; to: number; proof: string[] }> {
    const head = await this.rows.chainHead();
    if (!(from >= 1 && from <= to && to <= (head?.seq ?? 0)))
      throw new RangeError(`no consistency proof from ${from} to ${to}: 1 <= from <= to <= ${head?.seq ?? 0}`);
    const proof = await consistencyProof(from, to, hashReaderOf(this.rows));
    return { from, to, proof: proof.map((hash) => Buffer.from(hash).toString('base64')) };
  }

  /** Base64 hashes of the complete subtrees of receipts 1..count: a bundle's `prefix`. */
  async prefixOf(count: number): Promise<string[]> {
    return (await hashReaderOf(this.rows)(subtreesOf(0, count))).map((hash) => Buffer.from(hash).toString('base64'));
  }

  private witnessQuietly(written: WrittenCheckpoint): void {
    const path = this.witness;
    if (path === null) return;
    try {
      appendWitness(path, { ...written, store: this.rows.location });
    } catch (error) {
      // The witness detects; it is not the authority. A checkpoint it missed is still in the store.
      if (this.env.TURNKEEPER_DEBUG) process.stderr.write(`turnkeeper: witness ${path}: ${(error as Error).message}\n`);
    }
  }

  async verifyChain(after?: ChainLink): Promise<CheckpointedReport> {
    const report = await this.rows.verifyChain(after);
    const { witness, breaks } = await this.compareWitness();
    const merged = [...report.breaks];
    for (const item of breaks) if (!merged.some((known) => known.seq === item.seq && known.kind === item.kind)) merged.push(item);
    return { ...report, ok: merged.length === 0, breaks: merged, witness };
  }

  /**
   * The store against every witnessed checkpoint of its origin (docs/receipts.md, "The witness"): each
   * must be signed by a trusted key; the receipt it signs must be there with its hash (else the tail was
   * cut, or the history forked), its signed root must be the stored tree's at its size, and a
   * `checkpoint` receipt that carried it must still carry the same note. A witness that pinned another
   * origin to this store's location is `store_identity_changed`. The state reported is the newest entry's.
   */
  async compareWitness(verify: NoteVerifier = noteVerifier(trustedKeys(this.env))): Promise<{ witness: WitnessState; breaks: ChainBreak[] }> {
    const path = this.witness;
    if (path === null) return { witness: { state: 'off', path: null }, breaks: [] };
    const origin = await this.origin();
    const store = this.rows.location;
    const read = readWitness(path, { origin, store });
    if (read.kind === 'unreadable') return { witness: { state: 'unreadable', path }, breaks: [] };
    if (read.kind === 'refused') return { witness: { state: 'refused', path, reason: read.reason }, breaks: [] };
    const breaks: ChainBreak[] = [];
    const name = (found: ChainBreak) => {
      if (!breaks.some((known) => known.seq === found.seq && known.kind === found.kind)) breaks.push(found);
    };
    const replaced = replacedIdentity(read.entries, store, origin);
    if (replaced) name({ seq: replaced.seq, kind: 'store_identity_changed' });
    // Every entry of this origin, once per note: a fork the store matched at one head is named at another.
    const ours = [...new Map(read.entries.filter((entry) => entry.origin === origin).map((entry) => [entry.text, entry])).values()];
    if (ours.length === 0) {
      const witness: WitnessState = replaced ? { state: 'replaced', path, origin: replaced.origin, seq: replaced.seq } : { state: 'none', path };
      return { witness, breaks };
    }
    const rows = new Map<number, ReceiptRow | undefined>();
    const at = (seq: number): ReceiptRow | undefined => rows.get(seq);
    const roots = new Map<number, string | undefined>();
    let newest: WitnessState | undefined;
    let newestSeq = -1;
    for (const entry of ours) {
      // The signed head and its carrier (normally seq + 1): one indexed page of at most two rows.
      const top = entry.receipt ?? entry.seq;
      if (!rows.has(top) || !rows.has(entry.seq)) {
        const page = await this.rows.receipts({ beforeSeq: top + 1, limit: top + 1 - Math.min(entry.seq, top) });
        for (const seq of [entry.seq, top])
          rows.set(
            seq,
            page.find((row) => Number(row.seq) === seq),
          );
      }
      const note = parseCheckpoint(entry.text);
      const verdict = note ? verify(note) : ({ ok: false, kind: 'signature_invalid' } as const);
      if (entry.seq >= newestSeq) {
        newestSeq = entry.seq;
        newest = { state: 'checked', path, seq: entry.seq, receipt: entry.receipt, signer: verdict.ok ? verdict.signer : null, time: note?.time ?? '' };
      }
      let found = compareOne(note, verdict, entry, at);
      // A version 2 note also names the tree: the stored tree's root at its size must be the signed one.
      if (!found && note?.root !== undefined && note.seq > 0) {
        if (!roots.has(note.seq)) roots.set(note.seq, await storedRoot(this.rows, note.seq));
        if (roots.get(note.seq) !== note.root) found = { seq: note.seq, kind: 'tree_mismatch' };
      }
      if (found) name(found);
    }
    return { witness: newest ?? { state: 'none', path }, breaks };
  }
}

// ---- refusals, proofs ----

/** The head does not extend a checkpoint signed before (a fork, a cut tail, a rewritten tree): nothing is signed. */
export class SigningRefused extends Error {
  constructor(readonly breaks: ChainBreak[]) {
    super(
      `the receipt chain does not extend what was signed before (${breaks.map((item) => `seq ${item.seq}: ${item.kind}`).join(', ')}): nothing was signed; turnkeeper verify`,
    );
    this.name = 'SigningRefused';
  }
}

/** An automatic checkpoint would walk more receipts than a hook may (AUTOMATIC_WALK_LIMIT): left to `turnkeeper checkpoint`. */
class SigningDeferred extends Error {
  constructor(readonly receipts: number) {
    super(`${receipts} receipts since the last checkpoint signed over the Merkle tree: turnkeeper checkpoint signs them`);
    this.name = 'SigningDeferred';
  }
}

/**
 * The most receipts an automatic checkpoint (inside a hook's write) walks since the last one signed
 * over the tree: about 0.2 s. Only the first checkpoint of a large store upgraded to schema v3 walks
 * more; `turnkeeper checkpoint` (or an export) does it once, and automatic ones resume.
 */
const AUTOMATIC_WALK_LIMIT = 10_000;

/** `turnkeeper receipts prove`: one receipt's inclusion in a signed checkpoint (Go tlog.CheckRecord checks it). */
interface InclusionProof {
  readonly index: number;
  readonly size: number;
  /** Base64 of the Merkle root the checkpoint signs. */
  readonly root: string;
  /** Base64 hashes, leaf level first (RFC 6962 PATH). */
  readonly proof: string[];
  /** The signed note of tree size `size`. */
  readonly checkpoint: string;
}

export type ProofResult =
  | ({ readonly ok: true; readonly document: string; readonly hash: string } & InclusionProof)
  | { readonly ok: false; readonly reason: 'unknown_receipt' | 'not_in_chain' | 'no_checkpoint' | 'tree_mismatch'; readonly message: string };

export const base64Of = (digest: string): string => Buffer.from(digest.slice('sha256:'.length), 'hex').toString('base64');
export const bytesOf = (digest: string): Buffer => Buffer.from(digest.slice('sha256:'.length), 'hex');
