// Malformed and hostile hook inputs, each invalid by construction: bad JSON, wrong types, ids
// outside their grammar (path traversal, NUL, shell metacharacters), unknown events, lone
// surrogates, bad paths, missing fields, and a few huge or deeply nested documents.
import fc from 'fast-check';
import { payload, type World } from './world';

const validBase = (w: World) => JSON.parse(payload.codexPrompt(w, 'sess-f', 'turn-f', '#todo:fix-login')) as Record<string, unknown>;
const hostileStrings = fc.constantFrom(
  '../../etc/passwd',
  '..',
  '',
  ' ',
  'a\u0000b',
  '/',
  'x'.repeat(129),
  '-leading-dash',
  'sp ace',
  '$(touch /tmp/pwned)',
  '`id`',
  'semi;colon',
  '\u202e',
  'emoji😀',
);
const wrongTypes = fc.constantFrom<unknown>(1, -1, 1.5, true, null, [], {}, ['a'], { $ne: 1 });
const fields = ['hook_event_name', 'session_id', 'cwd', 'turn_id', 'prompt', 'transcript_path', 'model', 'permission_mode', 'tool_name'];

/** Inputs the hook must reject: each is invalid by construction. */
function hostileInput(w: World): fc.Arbitrary<string> {
  const base = validBase(w);
  return fc.oneof(
    // Not JSON, or JSON that is not an object.
    fc.string({ maxLength: 200 }).filter((s) => {
      try {
        const value: unknown = JSON.parse(s);
        return typeof value !== 'object' || value === null || Array.isArray(value);
      } catch {
        return true;
      }
    }),
    fc
      .uint8Array({ maxLength: 300 })
      .map((bytes) => Buffer.from(bytes).toString('latin1'))
      .filter((s) => !s.trim().startsWith('{')),
    // A field of the wrong type.
    fc
      .tuple(fc.constantFrom(...fields), wrongTypes)
      // null is how agents say "absent" for optional fields (Codex sends transcript_path: null), so it is valid there.
      .filter(([field, value]) => value !== null || ['hook_event_name', 'session_id', 'cwd'].includes(field))
      .map(([field, value]) => JSON.stringify({ ...base, [field]: value })),
    // Ids outside their grammar (path traversal, NUL, shell metacharacters, too long).
    fc
      .tuple(fc.constantFrom('session_id', 'turn_id'), hostileStrings)
      // An empty optional field is absent, as null is (Gemini sends transcript_path: ""): valid for turn_id.
      .filter(([field, value]) => value !== '' || field === 'session_id')
      .map(([field, value]) => JSON.stringify({ ...base, [field]: value })),
    // Unknown events.
    fc
      .string({ maxLength: 30 })
      .filter((name) => !['SessionStart', 'UserPromptSubmit', 'PreToolUse', 'PostToolUse', 'Stop', 'PermissionRequest', 'Notification'].includes(name))
      .map((name) => JSON.stringify({ ...base, hook_event_name: name })),
    // Lone surrogates, written as JSON escapes so they survive to the parser.
    fc
      .tuple(fc.constantFrom('prompt', 'cwd', 'tool_name', 'model'), fc.constantFrom('\\ud800', '\\udfff', 'a\\udc00b'))
      .map(([field, bad]) => JSON.stringify({ ...base, [field]: `${field === 'cwd' ? w.repo : ''}@@` }).replace('@@', bad)),
    // Paths that are not absolute, carry NUL, or do not exist.
    fc.constantFrom('relative/dir', 'a\u0000b', '/definitely/not/here', '').map((cwd) => JSON.stringify({ ...base, cwd })),
    // Required fields missing.
    fc.constantFrom('hook_event_name', 'session_id', 'cwd').map((field) => {
      const copy: Record<string, unknown> = { ...base };
      delete copy[field];
      return JSON.stringify(copy);
    }),
  );
}

export function hostileCorpus(w: World, size: number, seed = 42): string[] {
  const huge = JSON.stringify({ ...validBase(w), prompt: '#todo:fix-login ' + 'y'.repeat(1024 * 1024 + 10) });
  return [...fc.sample(hostileInput(w), { numRuns: size - 3, seed }), huge, '{"a":' + '['.repeat(5000) + ']'.repeat(5000) + '}', '\u0000'];
}
