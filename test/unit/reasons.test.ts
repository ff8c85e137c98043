import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REASON_CODES, REASONS, RESUME_REASON_CODES, renderGuidance, renderNotice, type ReasonCode } from '../../src/core/reasons';
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

  it("render the person's notice as one short line with the code, for the refusals the hook answers with context", () => {
    // The codes spec §2 "What the person sees" lists, read from the spec itself: a notice added or
    // dropped on either side shows.
    const spec = readFileSync(resolve(__dirname, '../../docs/spec.md'), 'utf8');
    const paragraph = /\*\*What the person sees\.\*\* ([\s\S]+?) as context carry/.exec(spec)?.[1] ?? '';
    const told = [...paragraph.matchAll(/`([a-z_]+)`/g)].map((match) => match[1]! as ReasonCode);
    expect(told.length, 'the list of docs/spec.md §2 "What the person sees"').toBeGreaterThan(10);
    const facts = { todo: 'fix-login', heldTodo: 'other-todo', holder: 'codex:s1', epoch: 3, capture: 'cap_0123456789abcdef01234567', agent: 'codex' };
    for (const code of [...REASON_CODES, ...RESUME_REASON_CODES]) {
      const notice = renderNotice(code, facts);
      if (!told.includes(code)) {
        expect(notice, code).toBeUndefined();
        continue;
      }
      expect(notice, code).toMatch(new RegExp(`^Turnkeeper \\[${code}\\]: \\S`));
      expect(notice, code).not.toContain('\n');
      expect(notice!.length, notice).toBeLessThan(200);
    }
  });

  it('keep a notice on one line with no control character, whatever the facts hold', () => {
    const notice = renderNotice('invalid_todo_mention', { detail: '#todo:Fix\u001b[2J\nLogin\u202e' });
    expect(notice).toBe(
      'Turnkeeper [invalid_todo_mention]: #todo:Fix\\x1b[2J Login\\u202e is not a Todo id; nothing was claimed. List them: turnkeeper todo list',
    );
  });

  it('say "did you mean" for an unknown Todo to the model and the person; control: no suggestion, no question', () => {
    const near = { todo: 'fix-ad', suggestions: ['fix-add', 'fix-adb'] };
    expect(renderGuidance('unknown_todo', near)).toContain('Todo fix-ad does not exist in this workspace. Did you mean fix-add or fix-adb?');
    expect(renderGuidance('unknown_todo', near)).toContain('Recover: send the prompt again with #todo:fix-add');
    expect(renderNotice('unknown_todo', near)).toBe(
      'Turnkeeper [unknown_todo]: No Todo fix-ad here; nothing was claimed. Did you mean #todo:fix-add or #todo:fix-adb?',
    );
    for (const facts of [{ todo: 'fix-ad' }, { todo: 'fix-ad', suggestions: [] }]) {
      expect(renderGuidance('unknown_todo', facts)).not.toContain('Did you mean');
      expect(renderNotice('unknown_todo', facts)).toBe('Turnkeeper [unknown_todo]: No Todo fix-ad here; nothing was claimed. List them: turnkeeper todo list');
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
