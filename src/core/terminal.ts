// Text that reaches a terminal (spec §8): stored text (Todo titles and bodies, paths, hook commands
// read from a cloned repository's config, receipts of a shared store) never reaches it raw. A control
// character in it could clear the screen (`ESC[2J`), plant a link (OSC 8), write the clipboard (OSC 52)
// or reorder what the reader sees (bidi overrides), so each one is shown escaped instead. Pure: no I/O.

/**
 * What a terminal must never receive raw: C0 controls except `\n` and `\t`, DEL, C1 controls, the bidi
 * controls (embeddings, overrides, isolates, marks) and lone surrogates. With the `u` flag a surrogate
 * range matches only a surrogate that is not half of a pair.
 */
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]/gu;

const hex = (code: number, width: number): string => code.toString(16).padStart(width, '0');

/**
 * `\x1b` for C0 controls, `\u009b` / `\u202e` for the rest: visible and plain ASCII. Only C0 uses the
 * `\x` form, which is not JSON, because JSON.stringify never leaves a C0 control raw.
 */
const visible = (char: string): string => {
  const code = char.charCodeAt(0);
  return code < 0x20 ? `\\x${hex(code, 2)}` : `\\u${hex(code, 4)}`;
};

/**
 * Text with every unsafe character shown escaped; text without one comes back unchanged. JSON text as
 * JSON.stringify writes it stays JSON with the same value: the only unsafe characters it can hold raw are
 * DEL, C1 and bidi controls, inside strings, and they become `\uXXXX` escapes.
 */
export const terminalSafe = (text: string): string => text.replace(UNSAFE, visible);

/** A count and its noun, in the singular for one: `counted(1, 'path')` is "1 path", `counted(2, 'path')` "2 paths". */
export const counted = (count: number, noun: string): string => `${count} ${count === 1 ? noun : `${noun}s`}`;

/**
 * Stored text on a row of a list (a Todo's title, a block's reason): one line, its line breaks shown
 * as `\n` like the other escapes, so a title with a newline neither breaks the list nor passes for
 * two rows. The text itself is kept as it was written; only its display is one line.
 */
export const oneLine = (text: string): string => text.replace(/\r?\n/g, '\\n');
