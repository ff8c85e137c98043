// The receipt log as an RFC 6962 Merkle tree (docs/receipts.md, "The Merkle tree"). Pure: leaf and node
// hashes, which stored subtree hashes a root or a proof needs, assembling proofs from them, and the
// verifiers of RFC 9162 §2.1.3.2 (inclusion) and §2.1.4.2 (consistency), which Go's sumdb/tlog
// (`CheckRecord`, `CheckTree`) implement too.
//
// Leaf i (0-based) is receipt seq i+1: SHA-256(0x00 || the stored document's bytes). An interior node is
// SHA-256(0x01 || left || right). The store keeps the hash of every complete, aligned subtree: key
// (level, index) covers leaves [index·2^level, (index+1)·2^level). Appending leaf i adds (0, i) and one
// node per trailing 1-bit of i, so every root and every proof is a handful of those rows: at most one
// range per proof is incomplete, and it is the fold of at most log2(n) complete subtrees.
import { sha256 } from '@noble/hashes/sha2.js';

export type TreeKey = readonly [level: number, index: number];

/** Stored complete-subtree hashes, by key; a missing one is the caller's failure. */
export type HashReader = (keys: readonly TreeKey[]) => Promise<readonly Uint8Array[]>;

const LEAF = Uint8Array.of(0);
const NODE = Uint8Array.of(1);

const concat = (...parts: Uint8Array[]): Uint8Array => {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
};

/** SHA-256(0x00 || bytes): a leaf, over the document's stored UTF-8 bytes. */
export const leafHash = (bytes: Uint8Array): Uint8Array => sha256(concat(LEAF, bytes));
/** SHA-256(0x01 || left || right). */
export const nodeHash = (left: Uint8Array, right: Uint8Array): Uint8Array => sha256(concat(NODE, left, right));
/** The root of the empty tree: SHA-256 of nothing. */
const EMPTY_ROOT: Uint8Array = sha256(new Uint8Array(0));

const pow2 = (level: number): number => 2 ** level;
const half = (value: number): number => Math.floor(value / 2);
const odd = (value: number): boolean => value % 2 === 1;

/** The largest power of two strictly below n (n ≥ 2). */
function splitOf(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/**
 * The complete aligned subtrees that make up [lo, hi), left to right, largest first. For the ranges a
 * root or a proof uses (lo aligned to a power of two ≥ hi - lo), their right fold is RFC 6962's MTH.
 */
export function subtreesOf(lo: number, hi: number): TreeKey[] {
  const out: TreeKey[] = [];
  while (lo < hi) {
    let level = 0;
    while (lo % pow2(level + 1) === 0 && lo + pow2(level + 1) <= hi) level += 1;
    out.push([level, lo / pow2(level)]);
    lo += pow2(level);
  }
  return out;
}

/** MTH from the hashes of `subtreesOf(lo, hi)`: H(s1, H(s2, … H(sk-1, sk))). */
function fold(hashes: readonly Uint8Array[]): Uint8Array {
  let hash = hashes[hashes.length - 1]!;
  for (let i = hashes.length - 2; i >= 0; i -= 1) hash = nodeHash(hashes[i]!, hash);
  return hash;
}

/** The new stored hashes when leaf `index` is appended: (0, index), then one per trailing 1-bit. */
export function appendedNodes(index: number, leaf: Uint8Array, left: (key: TreeKey) => Uint8Array): { key: TreeKey; hash: Uint8Array }[] {
  const out: { key: TreeKey; hash: Uint8Array }[] = [{ key: [0, index], hash: leaf }];
  let hash = leaf;
  for (let level = 0, at = index; odd(at); level += 1, at = half(at)) {
    hash = nodeHash(left([level, at - 1]), hash);
    out.push({ key: [level + 1, half(at)], hash });
  }
  return out;
}

/** RFC 6962 PATH(m, D[lo:hi)): the ranges whose MTHs are the inclusion proof, leaf level first. */
function inclusionRanges(m: number, lo: number, hi: number, out: [number, number][]): void {
  if (hi - lo <= 1) return;
  const k = splitOf(hi - lo);
  if (m < lo + k) {
    inclusionRanges(m, lo, lo + k, out);
    out.push([lo + k, hi]);
  } else {
    inclusionRanges(m, lo + k, hi, out);
    out.push([lo, lo + k]);
  }
}

/** RFC 6962 SUBPROOF(m, D[lo:hi), b): the ranges whose MTHs prove the tree of m leaves a prefix. */
function consistencyRanges(m: number, lo: number, hi: number, whole: boolean, out: [number, number][]): void {
  const n = hi - lo;
  if (m === n) {
    if (!whole) out.push([lo, hi]);
    return;
  }
  const k = splitOf(n);
  if (m <= k) {
    consistencyRanges(m, lo, lo + k, whole, out);
    out.push([lo + k, hi]);
  } else {
    consistencyRanges(m - k, lo + k, hi, false, out);
    out.push([lo, lo + k]);
  }
}

/** The MTHs of `ranges`, with one batched read of the stored hashes they need. */
async function hashRanges(ranges: readonly [number, number][], read: HashReader): Promise<Uint8Array[]> {
  const parts = ranges.map(([lo, hi]) => subtreesOf(lo, hi));
  const hashes = await read(parts.flat());
  let at = 0;
  return parts.map((keys) => {
    const slice = hashes.slice(at, at + keys.length);
    at += keys.length;
    return fold(slice);
  });
}

/** The root of the tree of the first `size` leaves (at most log2(size) stored hashes). */
export async function treeRoot(size: number, read: HashReader): Promise<Uint8Array> {
  if (size === 0) return EMPTY_ROOT;
  return (await hashRanges([[0, size]], read))[0]!;
}

/** The inclusion proof of leaf `index` in the tree of `size` leaves (RFC 6962 §2.1.1; Go tlog.ProveRecord). */
export async function inclusionProof(index: number, size: number, read: HashReader): Promise<Uint8Array[]> {
  if (!(Number.isSafeInteger(index) && Number.isSafeInteger(size) && index >= 0 && index < size))
    throw new RangeError(`leaf ${index} is not in a tree of ${size}`);
  const ranges: [number, number][] = [];
  inclusionRanges(index, 0, size, ranges);
  return hashRanges(ranges, read);
}

/** The consistency proof of the tree of `from` leaves in the tree of `to` (RFC 6962 §2.1.2; Go tlog.ProveTree). */
export async function consistencyProof(from: number, to: number, read: HashReader): Promise<Uint8Array[]> {
  if (!(Number.isSafeInteger(from) && Number.isSafeInteger(to) && from >= 1 && from <= to)) throw new RangeError(`no consistency proof from ${from} to ${to}`);
  const ranges: [number, number][] = [];
  consistencyRanges(from, 0, to, true, ranges);
  return hashRanges(ranges, read);
}

const same = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && a.every((byte, i) => byte === b[i]);

/** RFC 9162 §2.1.3.2: does `proof` place `leaf` at `index` of the tree of `size` leaves with `root`? */
export function verifyInclusion(index: number, size: number, leaf: Uint8Array, proof: readonly Uint8Array[], root: Uint8Array): boolean {
  if (!(index >= 0 && index < size)) return false;
  let fn = index;
  let sn = size - 1;
  let hash = leaf;
  for (const sibling of proof) {
    if (sibling.length !== 32 || sn === 0) return false;
    if (odd(fn) || fn === sn) {
      hash = nodeHash(sibling, hash);
      if (!odd(fn))
        while (!odd(fn) && fn !== 0) {
          fn = half(fn);
          sn = half(sn);
        }
    } else hash = nodeHash(hash, sibling);
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0 && same(hash, root);
}

/** RFC 9162 §2.1.4.2: does `proof` show the tree (`from`, `fromRoot`) a prefix of (`to`, `toRoot`)? */
export function verifyConsistency(from: number, to: number, fromRoot: Uint8Array, toRoot: Uint8Array, proof: readonly Uint8Array[]): boolean {
  if (!(from >= 1 && from <= to) || proof.some((hash) => hash.length !== 32)) return false;
  if (from === to) return proof.length === 0 && same(fromRoot, toRoot);
  const path = Number.isInteger(Math.log2(from)) ? [fromRoot, ...proof] : [...proof];
  if (path.length === 0) return false;
  let fn = from - 1;
  let sn = to - 1;
  while (odd(fn)) {
    fn = half(fn);
    sn = half(sn);
  }
  let fr = path[0]!;
  let sr = path[0]!;
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (odd(fn) || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      if (!odd(fn))
        while (!odd(fn) && fn !== 0) {
          fn = half(fn);
          sn = half(sn);
        }
    } else sr = nodeHash(sr, c);
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0 && same(fr, fromRoot) && same(sr, toRoot);
}

/**
 * Computes roots as leaves stream in, from an optional prefix (the complete subtrees of the first
 * `start` leaves, as `subtreesOf(0, start)` names them): the bundle walk and the checks before signing.
 */
export class TreeBuilder {
  /** The right edge: complete subtree hashes, largest first, with their levels. */
  private readonly edge: { level: number; hash: Uint8Array }[] = [];
  private count: number;

  constructor(start = 0, prefix: readonly Uint8Array[] = []) {
    const keys = subtreesOf(0, start);
    if (keys.length !== prefix.length) throw new RangeError(`a prefix of ${start} leaves has ${keys.length} subtrees, not ${prefix.length}`);
    keys.forEach(([level], i) => this.edge.push({ level, hash: prefix[i]! }));
    this.count = start;
  }

  get size(): number {
    return this.count;
  }

  push(leaf: Uint8Array): void {
    let hash = leaf;
    let level = 0;
    while (this.edge.length > 0 && this.edge[this.edge.length - 1]!.level === level) {
      hash = nodeHash(this.edge.pop()!.hash, hash);
      level += 1;
    }
    this.edge.push({ level, hash });
    this.count += 1;
  }

  root(): Uint8Array {
    return this.edge.length === 0 ? EMPTY_ROOT : fold(this.edge.map((node) => node.hash));
  }
}
