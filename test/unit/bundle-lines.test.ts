// A bundle's lines read in chunks (verify --bundle streams the file) are the lines of the whole bytes:
// the same text and the same digests wherever the chunks split, and a line longer than MAX_BUNDLE_LINE
// is hashed whole but never held.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { digestBytesBulk } from '../../src/core/canonical';
import { bundleLinesOf, bundleLinesOfChunks, MAX_BUNDLE_LINE, type BundleLine } from '../../src/core/checkpoint';
import { leafHash } from '../../src/core/merkle';

const plain = (lines: Iterable<BundleLine>) => [...lines].map((line) => ({ text: line.text, hash: line.hash, leaf: Buffer.from(line.leaf).toString('hex') }));

/** `bytes` cut at `cuts` (sorted, deduplicated offsets), each chunk in a buffer the reader then overwrites. */
function* reusedChunks(bytes: Buffer, cuts: number[]): Generator<Uint8Array> {
  const offsets = [...new Set([0, ...cuts.map((cut) => cut % (bytes.length + 1)), bytes.length])].sort((a, b) => a - b);
  const scratch = Buffer.alloc(bytes.length + 1);
  for (let i = 1; i < offsets.length; i += 1) {
    const chunk = scratch.subarray(0, offsets[i]! - offsets[i - 1]!);
    bytes.copy(chunk, 0, offsets[i - 1], offsets[i]);
    yield chunk;
    chunk.fill(0x2a); // what the next read would do to a kept reference
  }
}

describe('bundle lines from chunks', () => {
  it('are the lines of the whole bytes, wherever the chunks split (also invalid UTF-8, empty lines, no final newline)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.array(fc.nat(), { maxLength: 12 }), (raw, cuts) => {
        // Newlines often enough to make many lines.
        const bytes = Buffer.from(raw.map((byte) => (byte % 7 === 0 ? 0x0a : byte)));
        expect(plain(bundleLinesOfChunks(reusedChunks(bytes, cuts)))).toStrictEqual(plain(bundleLinesOf(bytes)));
      }),
    );
  });

  it('a line past MAX_BUNDLE_LINE has no text but the digests of all its bytes; the lines around it are whole (control: one at the limit is held)', () => {
    const long = Buffer.alloc(MAX_BUNDLE_LINE + 1, 0x61);
    const atLimit = Buffer.alloc(MAX_BUNDLE_LINE, 0x62);
    const bytes = Buffer.concat([Buffer.from('first\n'), long, Buffer.from('\n'), atLimit, Buffer.from('\nlast')]);
    const lines = [...bundleLinesOfChunks(reusedChunks(bytes, [3, 100, 70_000, MAX_BUNDLE_LINE, MAX_BUNDLE_LINE + 9, 2 * MAX_BUNDLE_LINE]))];
    expect(lines.map((line) => line.text?.length ?? null)).toStrictEqual([5, null, MAX_BUNDLE_LINE, 4]);
    expect(lines[1]!.hash).toBe(digestBytesBulk(long));
    expect(Buffer.from(lines[1]!.leaf)).toStrictEqual(Buffer.from(leafHash(long)));
    expect(lines[2]!.hash).toBe(digestBytesBulk(atLimit));
    // In memory, the same: a line that long is not held either.
    expect(plain(bundleLinesOf(bytes))).toStrictEqual(plain(lines));
  });
});
