import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REASON_CODES, REASONS, RESUME_REASON_CODES, renderGuidance } from '../../src/core/reasons';
import { RECEIPT_KINDS } from '../../src/core/receipts';
import { LAUNCH_REFUSALS } from '../../src/launcher/refusals';

describe('reason codes', () => {
  it('render guidance with the code in brackets, the facts and a recovering command', () => {
    for (const code of [...REASON_CODES, ...RESUME_REASON_CODES]) {
      const text = renderGuidance(code, { todo: 'fix-login', heldTodo: 'other-todo', holder: 'codex:s1', epoch: 3, capture: 'cap_0123456789abcdef01234567' });
      expect(text).toContain(`[${code}]`);
      expect(text).toMatch(/\nRecover: \S/);
      expect(text).toContain(`docs/recovery.md#${code}`);
      expect(text.length).toBeLessThan(8000);
    }
  });

  it('form the closed set that spec §2 lists', () => {
    const implemented: string[] = [...REASON_CODES, ...RESUME_REASON_CODES];
    expect([...implemented].sort()).toStrictEqual(Object.keys(REASONS).sort());
    // Read from the spec itself, not a copy of it: a code added on either side shows.
    const spec = readFileSync(resolve(__dirname, '../../docs/spec.md'), 'utf8');
    const sentence = /The reason codes are a closed set: ([^.]+)\./.exec(spec)?.[1] ?? '';
    const listed = [...sentence.matchAll(/`([a-z_]+)`/g)].map((match) => match[1]!);
    expect(listed.length, 'the closed-set sentence of docs/spec.md §2').toBeGreaterThan(10);
    for (const code of listed) expect(implemented, code).toContain(code);
    for (const code of REASON_CODES) expect(listed, code).toContain(code);
  });

  it('each have a section in docs/recovery.md', () => {
    const path = resolve(__dirname, '../../docs/recovery.md');
    expect(existsSync(path)).toBe(true);
    const headings = new Set(
      readFileSync(path, 'utf8')
        .split('\n')
        .filter((line) => line.startsWith('## '))
        .map((line) => line.slice(3).trim()),
    );
    for (const code of [...REASON_CODES, ...RESUME_REASON_CODES]) expect(headings, code).toContain(code);
  });
});

describe('closed sets the docs list one by one', () => {
  const rows = (doc: string): Set<string> =>
    new Set([...readFileSync(resolve(__dirname, '../../docs', doc), 'utf8').matchAll(/^\| `([a-z_]+)` +\|/gm)].map((match) => match[1]!));

  it('every receipt kind has its row (and writer) in docs/receipts.md', () => {
    const documented = rows('receipts.md');
    for (const kind of RECEIPT_KINDS) expect(documented, kind).toContain(kind);
  });

  it('every launch refusal has its row in docs/recovery.md', () => {
    const documented = rows('recovery.md');
    for (const code of LAUNCH_REFUSALS) expect(documented, code).toContain(code);
  });
});
