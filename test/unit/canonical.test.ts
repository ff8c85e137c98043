import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { canonicalJson, CanonicalDomainError, digestBytesBulk, digestDocument, digestText, digestTextBulk } from '../../src/core/canonical';
import { bundleLinesOf } from '../../src/core/checkpoint';
import { buildCapture, captureIdOf, claimOperationId } from '../../src/core/capture';

// The project's value domain: no floats, safe integers, well-formed strings, plain objects.
const domainValue = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constant(null),
    fc.boolean(),
    fc.maxSafeInteger(),
    fc.string({ unit: 'grapheme' }),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.string({ unit: 'grapheme', maxLength: 6 }), tie('value'), { maxKeys: 4, noNullPrototype: true }),
  ),
})).value;

/** Rebuilds every object of `value` with its keys inserted in a shuffled order. */
function shuffleKeys(value: unknown, seed: number): unknown {
  if (Array.isArray(value)) return value.map((item, index) => shuffleKeys(item, seed + index));
  if (value === null || typeof value !== 'object') return value;
  const entries = Object.entries(value);
  entries.sort((a, b) => ((a[0].length * 31 + seed) % 7) - ((b[0].length * 17 + seed) % 5));
  if (seed % 2 === 1) entries.reverse();
  return Object.fromEntries(entries.map(([key, item]) => [key, shuffleKeys(item, seed + 1)]));
}

describe('canonical JSON (RFC 8785 over the project domain)', () => {
  it('is independent of key insertion order', () => {
    fc.assert(
      fc.property(domainValue, fc.nat(1000), (value, seed) => {
        expect(canonicalJson(shuffleKeys(value, seed))).toBe(canonicalJson(value));
      }),
      { numRuns: 500 },
    );
  });

  it('is injective: distinct values never share a canonical text (round trip recovers the value)', () => {
    fc.assert(
      fc.property(domainValue, domainValue, (a, b) => {
        const ta = canonicalJson(a);
        const tb = canonicalJson(b);
        expect(JSON.parse(ta)).toStrictEqual(a);
        if (ta === tb) expect(a).toStrictEqual(b);
      }),
      { numRuns: 500 },
    );
  });

  it('matches the RFC 8785 ordering and escaping on a known vector', () => {
    expect(canonicalJson({ b: 1, a: [true, null, 'é\u0007'], '\u20ac': 2, '\r': 3 })).toBe('{"\\r":3,"a":[true,null,"é\\u0007"],"b":1,"€":2}');
  });

  it('refuses values outside the domain with a typed error', () => {
    for (const bad of [1.5, Number.MAX_SAFE_INTEGER + 2, NaN, '\ud800', { k: '\udc00x' }, [undefined], new Date(0), () => 1]) {
      expect(() => canonicalJson(bad)).toThrow(CanonicalDomainError);
    }
    // Control: the same shapes inside the domain pass.
    expect(canonicalJson([1, Number.MAX_SAFE_INTEGER, 'ok', { k: 'x' }])).toBe('[1,9007199254740991,"ok",{"k":"x"}]');
  });

  it('digests the canonical bytes', () => {
    expect(digestDocument({ b: 2, a: 1 })).toBe(digestText('{"a":1,"b":2}'));
    expect(digestText('')).toBe('sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });
});

describe('digests of bytes (bundles: hash what was stored)', () => {
  it('equal the digest of the text the bytes encode, for every string', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), (text) => {
        expect(digestBytesBulk(Buffer.from(text, 'utf8'))).toBe(digestText(text));
        expect(digestTextBulk(text)).toBe(digestText(text));
      }),
    );
  });

  it('bundle lines are hashed over their bytes as in the file, not over a re-encoding (control: valid UTF-8 agrees)', () => {
    const bytes = Buffer.concat([Buffer.from('first\n'), Buffer.from([0x61, 0xff, 0x62]), Buffer.from('\nlast')]);
    const lines = [...bundleLinesOf(bytes)];
    expect(lines.map((line) => line.text)).toStrictEqual(['first', 'a\ufffdb', 'last']);
    expect(lines[0]!.hash).toBe(digestText('first'));
    // The invalid byte is hashed as it is: the decoded text (with U+FFFD) has another digest.
    expect(lines[1]!.hash).not.toBe(digestText('a\ufffdb'));
    expect(lines[1]!.hash).toBe(digestBytesBulk(Buffer.from([0x61, 0xff, 0x62])));
    expect(lines[2]!.hash).toBe(digestText('last'));
  });
});

describe('capture ids', () => {
  const fields = { goal: '/repo', todo: 'fix-login', agent: 'codex', session: 's1', turn: 't1' } as const;

  it('derives capture id and op from the original digest, as the contract spells out', () => {
    const built = buildCapture(fields);
    expect(built.canonical).toBe('{"agent":"codex","goal":"/repo","schema":"turnkeeper.capture/v2","session":"s1","todo":"fix-login","turn":"t1"}');
    expect(built.originalDigest).toBe(digestText(built.canonical));
    expect(built.captureId).toBe('cap_' + built.originalDigest.slice(7, 31));
    expect(built.captureId).toBe(captureIdOf(built.originalDigest));
    expect(built.op).toBe(claimOperationId(built.originalDigest));
    expect(built.op).toMatch(/^op_[0-9a-f]{32}$/);
  });

  it('rebuilds the same document for the same Turn and Todo, and a different one for another Turn', () => {
    expect(buildCapture({ ...fields }).op).toBe(buildCapture(fields).op);
    expect(buildCapture({ ...fields, turn: 't2' }).op).not.toBe(buildCapture(fields).op);
  });

  it('keeps where the hook ran and how the Todo was bound out of the identity (v2)', () => {
    // A caller that passes its placement along must not change the capture: the same Turn from a
    // subdirectory or through another binding is the same capture (and a released one stays released).
    const fromSubdirectory = buildCapture({ ...fields, cwd: '/repo/src/deep', binding: 'env' } as typeof fields);
    expect(fromSubdirectory.captureId).toBe(buildCapture(fields).captureId);
    expect(fromSubdirectory.canonical).not.toContain('cwd');
  });
});
