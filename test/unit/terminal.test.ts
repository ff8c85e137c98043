// Contract §8: output meant for a terminal shows control characters from stored text escaped.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { terminalSafe } from '../../src/core/terminal';

/** Every code point a terminal must not receive raw, judged one code point at a time (independent of the module's regex). */
function forbidden(codePoint: number): boolean {
  if (codePoint === 0x0a || codePoint === 0x09) return false;
  if (codePoint <= 0x1f || (codePoint >= 0x7f && codePoint <= 0x9f)) return true;
  if (codePoint === 0x061c || codePoint === 0x200e || codePoint === 0x200f) return true;
  if (codePoint >= 0x202a && codePoint <= 0x202e) return true;
  if (codePoint >= 0x2066 && codePoint <= 0x2069) return true;
  return codePoint >= 0xd800 && codePoint <= 0xdfff; // only a lone surrogate survives codePointAt as one
}
const hasForbidden = (text: string): boolean => [...text].some((char) => forbidden(char.codePointAt(0)!));

// Strings rich in the interesting characters: controls, bidi, surrogate halves, pairs, plain text.
const interesting = fc.constantFrom(
  '\u0000',
  '\u0007',
  '\b',
  '\t',
  '\n',
  '\u000b',
  '\r',
  '\u001b',
  '\u001f',
  '\u007f',
  '\u0080',
  '\u009b',
  '\u009f',
  '\u00a0',
  '\u061c',
  '\u200b',
  '\u200e',
  '\u200f',
  '\u202a',
  '\u202e',
  '\u202f',
  '\u2066',
  '\u2069',
  '\u206a',
  '\ud800',
  '\udfff',
  '😀',
  'é',
  'a',
  ' ',
  '\\',
  '[',
  ']',
  '2J',
  'x1b',
);
const hostile = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 60 }),
  fc.array(interesting, { maxLength: 40 }).map((parts) => parts.join('')),
);

describe('terminalSafe', () => {
  it('leaves no forbidden code point in its output, and changes nothing in text that had none', () => {
    fc.assert(
      fc.property(hostile, (text) => {
        const safe = terminalSafe(text);
        expect(hasForbidden(safe)).toBe(false);
        if (!hasForbidden(text)) expect(safe).toBe(text);
        else expect(safe).not.toBe(text);
      }),
      { numRuns: 2000 },
    );
  });

  it('shows each control visibly and keeps newlines, tabs and surrogate pairs', () => {
    expect(terminalSafe('\u001b]8;;https://evil.example/\u001b\\click\u001b]8;;\u001b\\')).toBe('\\x1b]8;;https://evil.example/\\x1b\\click\\x1b]8;;\\x1b\\');
    expect(terminalSafe('\u001b]52;c;cm0gLXJmIH4K\u0007')).toBe('\\x1b]52;c;cm0gLXJmIH4K\\x07');
    expect(terminalSafe('a\u001b[2Jb')).toBe('a\\x1b[2Jb');
    expect(terminalSafe('\u009b31m\u007f')).toBe('\\u009b31m\\u007f');
    expect(terminalSafe('txt.exe\u202efdp.sh')).toBe('txt.exe\\u202efdp.sh');
    expect(terminalSafe('\u2066\u061c\u200e\u200f')).toBe('\\u2066\\u061c\\u200e\\u200f');
    expect(terminalSafe('a\r\nb')).toBe('a\\x0d\nb');
    expect(terminalSafe('lone \ud800 and \udc00')).toBe('lone \\ud800 and \\udc00');
    expect(terminalSafe('line 1\n\tline 2 😀 é\u00a0')).toBe('line 1\n\tline 2 😀 é\u00a0');
  });
});

describe('terminalSafe over JSON text', () => {
  it('writes what JSON.stringify leaves raw as \\u escapes: still JSON, the same value, nothing forbidden', () => {
    fc.assert(
      fc.property(hostile, (text) => {
        const json = terminalSafe(JSON.stringify({ text }, null, 2));
        expect(hasForbidden(json)).toBe(false);
        expect((JSON.parse(json) as { text: string }).text).toBe(text);
      }),
      { numRuns: 2000 },
    );
  });

  it('control: JSON.stringify alone leaves C1 and bidi characters raw', () => {
    const raw = JSON.stringify('\u009b\u202e\u007f');
    expect(hasForbidden(raw)).toBe(true);
    expect(terminalSafe(raw)).toBe('"\\u009b\\u202e\\u007f"');
  });
});
