// "Nothing is signed that does not extend what was signed before" (docs/receipts.md, "Before anything
// is signed"). Pure over an injected reader of the store's rows: before a checkpoint, an export or an
// attestation is signed, every checkpoint signed before (the store's own newest and the witnessed ones,
// their signatures already checked) must still be a prefix of the chain; the receipts since the newest
// of them must walk from its head to the chain's head; and the root about to be signed is computed from
// that signed prefix's stored subtrees (checked against its signed root) and the documents walked, and
// must equal the stored tree's root, with a consistency proof from each earlier root to it.
import { digestTextBulk, ZERO_DIGEST } from './canonical';
import type { ParsedCheckpoint } from './checkpoint';
import { consistencyProof, subtreesOf, TreeBuilder, treeRoot, verifyConsistency, type HashReader, type TreeKey } from './merkle';
import { ChainWalker, type ChainBreak, type ChainLink } from './receipts';

export interface ChainReader {
  treeHashes(keys: readonly TreeKey[]): Promise<(Uint8Array | undefined)[]>;
  /** Rows with after < seq <= upTo, in seq order. */
  receiptsBetween(after: number, upTo: number): Promise<readonly { readonly seq: number; readonly doc: string; readonly hash: string | null }[]>;
}

/** A stored subtree hash a root or a proof needs is not there. */
export class TreeIncomplete extends Error {
  constructor(readonly key: TreeKey) {
    super(`the receipt tree has no node (${key[0]}, ${key[1]})`);
    this.name = 'TreeIncomplete';
  }
}

/** The reader's stored hashes as merkle.ts reads them: a missing one throws TreeIncomplete. */
export function hashReaderOf(reader: Pick<ChainReader, 'treeHashes'>): HashReader {
  return async (keys) => {
    const found = await reader.treeHashes(keys);
    return found.map((hash, i) => {
      if (hash === undefined || hash.length !== 32) throw new TreeIncomplete(keys[i]!);
      return hash;
    });
  };
}

const digestOfHash = (hash: Uint8Array): string => `sha256:${Buffer.from(hash).toString('hex')}`;

/** The stored tree's root at `size`, or undefined when a node it needs is missing. */
export async function storedRoot(reader: Pick<ChainReader, 'treeHashes'>, size: number): Promise<string | undefined> {
  try {
    return digestOfHash(await treeRoot(size, hashReaderOf(reader)));
  } catch (error) {
    if (error instanceof TreeIncomplete) return undefined;
    throw error;
  }
}

const WALK_PAGE = 10_000;
const LEAF_PREFIX = Uint8Array.of(0);
let nodeCrypto: typeof import('node:crypto') | undefined;
/** merkle.ts leafHash through Node's OpenSSL: a signer has loaded it already (keys.ts). */
function leafOfText(text: string): Uint8Array {
  nodeCrypto ??= process.getBuiltinModule('node:crypto');
  return nodeCrypto.createHash('sha256').update(LEAF_PREFIX).update(text, 'utf8').digest();
}

export type Extension =
  | { readonly ok: true; readonly root: string }
  | { readonly ok: false; readonly breaks: ChainBreak[] }
  /** More than `maxWalk` receipts since the newest note signed over the tree: not walked now. */
  | { readonly ok: false; readonly deferred: number; readonly breaks: [] };

/**
 * Whether the chain at `head` extends every note of `signed` (trusted, of this origin), and the root to
 * sign if so. Reads O(k + log n) rows for the k receipts since the newest version 2 note; with none (a
 * store that was never signed over its tree), the whole chain once.
 */
export async function checkExtension(reader: ChainReader, head: ChainLink, signed: readonly ParsedCheckpoint[], maxWalk = Infinity): Promise<Extension> {
  const breaks: ChainBreak[] = [];
  const name = (item: ChainBreak) => {
    if (!breaks.some((known) => known.seq === item.seq && known.kind === item.kind)) breaks.push(item);
  };
  const held: ParsedCheckpoint[] = [];
  for (const note of signed) {
    if (note.seq === 0) continue;
    if (note.seq > head.seq) {
      name({ seq: note.seq, kind: 'truncated_after_checkpoint' });
      continue;
    }
    const row = (await reader.receiptsBetween(note.seq - 1, note.seq))[0];
    if (!row || row.hash !== note.hash || digestTextBulk(row.doc) !== note.hash) {
      name({ seq: note.seq, kind: 'fork' });
      continue;
    }
    if (note.root !== undefined && (await storedRoot(reader, note.seq)) !== note.root) {
      name({ seq: note.seq, kind: 'tree_mismatch' });
      continue;
    }
    held.push(note);
  }
  if (breaks.length > 0) return { ok: false, breaks };

  // Walk from the newest note signed over the tree: its prefix is vouched for by its signed root.
  const base = held.filter((note) => note.root !== undefined).reduce<ParsedCheckpoint | undefined>((a, b) => (a && a.seq >= b.seq ? a : b), undefined);
  const start = base?.seq ?? 0;
  if (head.seq - start > maxWalk) return { ok: false, deferred: head.seq - start, breaks: [] };
  const read = hashReaderOf(reader);
  let builder: TreeBuilder;
  try {
    builder = new TreeBuilder(start, await read(subtreesOf(0, start)));
  } catch (error) {
    if (!(error instanceof TreeIncomplete)) throw error;
    return { ok: false, breaks: [{ seq: start, kind: 'tree_mismatch' }] };
  }
  const walker = new ChainWalker(base ? { seq: base.seq, hash: base.hash } : { seq: 0, hash: ZERO_DIGEST });
  for (let after = start; after < head.seq;) {
    const rows = await reader.receiptsBetween(after, Math.min(head.seq, after + WALK_PAGE));
    if (rows.length === 0) break;
    for (const row of rows) {
      walker.push(row);
      builder.push(leafOfText(row.doc));
    }
    after = rows[rows.length - 1]!.seq;
  }
  for (const item of walker.finish(head).breaks) name(item);
  if (breaks.length > 0) return { ok: false, breaks };
  const root = digestOfHash(builder.root());
  if (builder.size !== head.seq || (await storedRoot(reader, head.seq)) !== root) return { ok: false, breaks: [{ seq: head.seq, kind: 'tree_mismatch' }] };

  // Each earlier root is a prefix of the new one: a consistency proof from the stored tree, checked.
  const rootBytes = Buffer.from(root.slice('sha256:'.length), 'hex');
  for (const note of held) {
    if (note.root === undefined || note.seq === head.seq) continue;
    const proof = await consistencyProof(note.seq, head.seq, read).catch((error: unknown) => {
      if (error instanceof TreeIncomplete) return [];
      throw error;
    });
    if (!verifyConsistency(note.seq, head.seq, Buffer.from(note.root.slice('sha256:'.length), 'hex'), rootBytes, proof)) name({ seq: note.seq, kind: 'fork' });
  }
  if (breaks.length > 0) return { ok: false, breaks };
  return { ok: true, root };
}
