// The RFC 6962 tree of src/core/merkle.ts against the RFC's recursive definitions, computed naively:
// roots, inclusion and consistency proofs from stored subtree hashes, the RFC 9162 verifiers, and the
// streaming builder. Go's sumdb/tlog checks the same outputs in test/integration/tlog-verify.test.ts.
import { describe, expect, it } from 'vitest';
import {
  appendedNodes,
  consistencyProof,
  inclusionProof,
  leafHash,
  nodeHash,
  subtreesOf,
  TreeBuilder,
  treeRoot,
  verifyConsistency,
  verifyInclusion,
  type HashReader,
  type TreeKey,
} from '../../src/core/merkle';

const leaves = Array.from({ length: 70 }, (_, i) => leafHash(Buffer.from(`receipt ${i + 1}`)));
const split = (n: number) => {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
};
/** RFC 6962 MTH(D[lo:hi)), by its definition. */
const mth = (lo: number, hi: number): Uint8Array => (hi - lo === 1 ? leaves[lo]! : nodeHash(mth(lo, lo + split(hi - lo)), mth(lo + split(hi - lo), hi)));
const path = (m: number, lo: number, hi: number): Uint8Array[] => {
  if (hi - lo <= 1) return [];
  const k = split(hi - lo);
  return m < lo + k ? [...path(m, lo, lo + k), mth(lo + k, hi)] : [...path(m, lo + k, hi), mth(lo, lo + k)];
};
const subproof = (m: number, lo: number, hi: number, whole: boolean): Uint8Array[] => {
  if (m === hi - lo) return whole ? [] : [mth(lo, hi)];
  const k = split(hi - lo);
  return m <= k ? [...subproof(m, lo, lo + k, whole), mth(lo + k, hi)] : [...subproof(m - k, lo + k, hi, false), mth(lo, lo + k)];
};

// The stored hashes, built as the store builds them: one append at a time.
const stored = new Map<string, Uint8Array>();
for (let i = 0; i < leaves.length; i += 1)
  for (const { key, hash } of appendedNodes(i, leaves[i]!, ([level, index]) => stored.get(`${level}/${index}`)!)) stored.set(`${key[0]}/${key[1]}`, hash);
let reads = 0;
const read: HashReader = (keys: readonly TreeKey[]) => {
  reads += keys.length;
  return Promise.resolve(keys.map(([level, index]) => stored.get(`${level}/${index}`)!));
};

describe('RFC 6962 tree from stored subtree hashes', () => {
  it('stores exactly the complete aligned subtrees, each equal to its MTH', () => {
    for (const [key, hash] of stored) {
      const [level, index] = key.split('/').map(Number) as [number, number];
      expect(hash).toEqual(mth(index * 2 ** level, (index + 1) * 2 ** level));
    }
    expect(stored.size).toBe(2 * leaves.length - [...leaves.length.toString(2)].filter((bit) => bit === '1').length);
  });

  it('roots, inclusion and consistency proofs equal the RFC definitions, and verify', async () => {
    for (let size = 1; size <= leaves.length; size += 1) {
      const root = await treeRoot(size, read);
      expect(root).toEqual(mth(0, size));
      expect(subtreesOf(0, size).length).toBeLessThanOrEqual(Math.log2(size) + 1);
      const builder = new TreeBuilder();
      for (let i = 0; i < size; i += 1) builder.push(leaves[i]!);
      expect(builder.root()).toEqual(root);
      for (let index = 0; index < size; index += 1) {
        const proof = await inclusionProof(index, size, read);
        expect(proof).toEqual(path(index, 0, size));
        expect(verifyInclusion(index, size, leaves[index]!, proof, root)).toBe(true);
        expect(verifyInclusion(index, size, leaves[(index + 1) % leaves.length]!, proof, root)).toBe(false);
      }
      for (let from = 1; from <= size; from += 1) {
        const proof = await consistencyProof(from, size, read);
        expect(proof).toEqual(subproof(from, 0, size, true));
        expect(verifyConsistency(from, size, mth(0, from), root, proof)).toBe(true);
        if (from < size) expect(verifyConsistency(from, size, mth(0, from), mth(0, size - 1), proof)).toBe(false);
        if (from < size && from > 1) expect(verifyConsistency(from, size, mth(1, from + 1), root, proof)).toBe(false);
      }
    }
  });

  it('a proof reads O(log n) stored hashes', async () => {
    reads = 0;
    await inclusionProof(37, 69, read);
    expect(reads).toBeLessThanOrEqual(2 * Math.ceil(Math.log2(69)));
    reads = 0;
    await consistencyProof(37, 69, read);
    expect(reads).toBeLessThanOrEqual(2 * Math.ceil(Math.log2(69)));
  });

  it('the builder resumes from a stored prefix', async () => {
    for (const start of [0, 1, 5, 32, 45]) {
      const builder = new TreeBuilder(start, await read(subtreesOf(0, start)));
      for (let i = start; i < 70; i += 1) builder.push(leaves[i]!);
      expect(builder.root()).toEqual(mth(0, 70));
    }
  });
});
