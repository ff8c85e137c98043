import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { buildReceipt, prepareReceipt, turnPaths, walkChain, BREAK_KINDS, type StoredReceiptRow } from '../../src/core/receipts';
import { canonicalJson, digestText, ZERO_DIGEST } from '../../src/core/canonical';

interface Table {
  rows: { seq: number; doc: unknown; hash: unknown }[];
  head: { seq: number; hash: string } | undefined;
}

function chain(length: number): Table {
  const rows: Table['rows'] = [];
  let head: Table['head'];
  for (let i = 0; i < length; i += 1) {
    const receipt = buildReceipt(head, { kind: 'lease_renewed', goal: '/repo', todo: 'fix-login', lease: { epoch: 1, version: i + 1 } }, 1_700_000_000_000 + i);
    rows.push({ seq: receipt.document.seq, doc: receipt.text, hash: receipt.hash });
    head = { seq: receipt.document.seq, hash: receipt.hash };
  }
  return { rows, head };
}

const walk = (table: Table) => walkChain(table.rows as StoredReceiptRow[], table.head);

type Mutation =
  | { kind: 'edit'; index: number; rehash: boolean }
  | { kind: 'delete'; index: number }
  | { kind: 'swap'; a: number; b: number }
  | { kind: 'truncate'; keep: number }
  | { kind: 'drop_hash'; index: number }
  | { kind: 'garbage'; index: number };

function mutate(table: Table, m: Mutation): Table {
  const rows = table.rows.map((row) => ({ ...row }));
  switch (m.kind) {
    case 'edit': {
      const row = rows[m.index]!;
      row.doc = (row.doc as string).replace('"version":', '"version":1');
      if (m.rehash) row.hash = digestText(row.doc as string);
      break;
    }
    case 'delete':
      rows.splice(m.index, 1);
      break;
    case 'swap': {
      // Reordering: the contents of two rows trade places, the seq column stays.
      const a = rows[m.a]!;
      const b = rows[m.b]!;
      [a.doc, b.doc, a.hash, b.hash] = [b.doc, a.doc, b.hash, a.hash];
      break;
    }
    case 'truncate':
      rows.length = m.keep;
      break;
    case 'drop_hash':
      rows[m.index]!.hash = null;
      break;
    case 'garbage':
      rows[m.index]!.doc = '{"not": json';
      break;
  }
  return { rows, head: table.head };
}

const mutation = (length: number): fc.Arbitrary<Mutation> =>
  fc.oneof(
    fc.record({ kind: fc.constant('edit' as const), index: fc.nat(length - 1), rehash: fc.boolean() }),
    fc.record({ kind: fc.constant('delete' as const), index: fc.nat(length - 1) }),
    fc
      .tuple(fc.nat(length - 1), fc.nat(length - 1))
      .filter(([a, b]) => a !== b)
      .map(([a, b]) => ({ kind: 'swap' as const, a, b })),
    fc.record({ kind: fc.constant('truncate' as const), keep: fc.nat(length - 1) }),
    fc.record({ kind: fc.constant('drop_hash' as const), index: fc.nat(length - 1) }),
    fc.record({ kind: fc.constant('garbage' as const), index: fc.nat(length - 1) }),
  );

describe('receipt chain walk', () => {
  it('verifies an untouched chain (the control for every mutation below)', () => {
    for (const length of [0, 1, 2, 17]) expect(walk(chain(length))).toMatchObject({ ok: true, verified: length, breaks: [] });
  });

  it('continues from a verified prefix: the tail alone is walked, and a break in it is named', () => {
    const whole = chain(10);
    const prefix = walkChain(whole.rows.slice(0, 5) as StoredReceiptRow[], { seq: 5, hash: whole.rows[4]!.hash });
    expect(prefix).toMatchObject({ ok: true, verified: 5, end: { seq: 5, hash: whole.rows[4]!.hash } });
    const tail = walkChain(whole.rows.slice(5) as StoredReceiptRow[], whole.head, prefix.end);
    expect(tail).toMatchObject({ ok: true, verified: 5, end: whole.head });
    const tampered = mutate(whole, { kind: 'edit', index: 7, rehash: false });
    expect(walkChain(tampered.rows.slice(5) as StoredReceiptRow[], whole.head, prefix.end).breaks).toStrictEqual([{ seq: 8, kind: 'content_altered' }]);
    // Control: a tail that does not link to the prefix is named too.
    expect(walkChain(whole.rows.slice(6) as StoredReceiptRow[], whole.head, prefix.end).breaks).toStrictEqual([{ seq: 6, kind: 'missing' }]);
  });

  it('names every edit, deletion, reordering or truncation', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 20 }).chain((length) => fc.tuple(fc.constant(length), mutation(length))),
        ([length, m]) => {
          const report = walk(mutate(chain(length), m));
          expect(report.ok).toBe(false);
          expect(report.breaks.length).toBeGreaterThan(0);
          for (const item of report.breaks) expect(BREAK_KINDS).toContain(item.kind);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('names the specific break where it is unambiguous', () => {
    const base = chain(5);
    expect(walk(mutate(base, { kind: 'edit', index: 2, rehash: false })).breaks).toStrictEqual([{ seq: 3, kind: 'content_altered' }]);
    expect(walk(mutate(base, { kind: 'edit', index: 2, rehash: true })).breaks).toStrictEqual([{ seq: 4, kind: 'link_broken' }]);
    expect(walk(mutate(base, { kind: 'edit', index: 4, rehash: true })).breaks).toStrictEqual([{ seq: 5, kind: 'head_mismatch' }]);
    expect(walk(mutate(base, { kind: 'delete', index: 1 })).breaks).toStrictEqual([{ seq: 2, kind: 'missing' }]);
    expect(walk(mutate(base, { kind: 'truncate', keep: 3 })).breaks).toStrictEqual([{ seq: 5, kind: 'head_mismatch' }]);
    expect(walk(mutate(base, { kind: 'drop_hash', index: 0 })).breaks).toStrictEqual([{ seq: 1, kind: 'hash_missing' }]);
    expect(walk(mutate(base, { kind: 'garbage', index: 3 })).breaks).toContainEqual({ seq: 4, kind: 'content_altered' });
  });

  it('reads rows of any type without crashing', () => {
    const rows: StoredReceiptRow[] = [
      { seq: 1, doc: Buffer.from('x'), hash: 42 },
      { seq: 2, doc: null, hash: undefined },
      { seq: 3, doc: '[]', hash: digestText('[]') },
    ];
    const report = walkChain(rows, { seq: 'x', hash: null });
    expect(report.ok).toBe(false);
    expect(report.breaks.map((b) => b.kind)).toContain('content_altered');
  });
});

describe('a receipt prepared before its place in the chain (prepareReceipt)', () => {
  const heads = fc.option(fc.record({ seq: fc.integer({ min: 0, max: 2 ** 40 }), hash: fc.stringMatching(/^sha256:[0-9a-f]{64}$/) }), { nil: undefined });
  // detail values that collide with the markers prepareReceipt substitutes, beside arbitrary ones.
  const detailValue = fc.oneof(
    fc.string(),
    fc.integer(),
    fc.constant(Number.MAX_SAFE_INTEGER),
    fc.constant('sha256:' + 'f'.repeat(64)),
    fc.constant(`"seq":${Number.MAX_SAFE_INTEGER}`),
    // A turn's changed paths are a list.
    fc.array(fc.oneof(fc.string(), fc.constant(`"seq":${Number.MAX_SAFE_INTEGER}`)), { maxLength: 3 }),
  );
  const fields = fc.record({
    kind: fc.constant('claim_refused' as const),
    goal: fc.string(),
    todo: fc.option(fc.string(), { nil: undefined }),
    detail: fc.option(fc.dictionary(fc.constantFrom('seq', 'prevHash', 'reason', 'schema', 'x'), detailValue), { nil: undefined }),
  });

  it('is, at any head, exactly the canonical text and digest of the document (a marker repeated in detail included)', () => {
    fc.assert(
      fc.property(heads, fields, fc.integer({ min: 0, max: 4_102_444_800_000 }), (head, receipt, at) => {
        const built = prepareReceipt(receipt, at).at(head);
        expect(built.document).toStrictEqual({
          schema: 'turnkeeper.receipt/v1',
          seq: (head?.seq ?? 0) + 1,
          prevHash: head?.hash ?? ZERO_DIGEST,
          at: new Date(at).toISOString(),
          ...receipt,
        });
        expect(built.text).toBe(canonicalJson(built.document));
        expect(built.hash).toBe(digestText(built.text));
      }),
      { numRuns: 500 },
    );
  });

  it("a turn's paths: the list a receipt holds, or an earlier build's JSON text of it; anything else is no list", () => {
    expect(turnPaths(['A\tnew.txt', 'M\ta.txt'])).toEqual(['A\tnew.txt', 'M\ta.txt']);
    expect(turnPaths('["A\\tnew.txt"]')).toEqual(['A\tnew.txt']);
    expect(turnPaths('[]')).toEqual([]);
    for (const other of ['not json', '{"a":1}', 3, null, undefined]) expect(turnPaths(other)).toBeUndefined();
  });

  it('control: a detail that repeats a marker is found (the substitution alone would have written it twice)', () => {
    const marker = { kind: 'claim_refused' as const, goal: 'g', detail: { seq: Number.MAX_SAFE_INTEGER, prevHash: 'sha256:' + 'f'.repeat(64) } };
    const built = prepareReceipt(marker, 0).at({ seq: 4, hash: 'sha256:' + 'a'.repeat(64) });
    expect(built.text).toContain(`"detail":{"prevHash":"sha256:${'f'.repeat(64)}","seq":${Number.MAX_SAFE_INTEGER}}`);
    expect(built.text).toContain(`"prevHash":"sha256:${'a'.repeat(64)}","schema":"turnkeeper.receipt/v1","seq":5`);
    expect(JSON.parse(built.text)).toMatchObject({ seq: 5, detail: { seq: Number.MAX_SAFE_INTEGER } });
  });
});
