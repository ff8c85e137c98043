// The hook's entry function in-process, with a real SQLite store and an injected clock: renewal
// timing and the hostile-input fuzz corpus run here (real processes cover the rest).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { runHook } from '../../src/lifecycle/hook';
import { RENEWAL_INTERVAL_MS } from '../../src/core/lease';
import { makeWorld, payload, type World } from '../support/world';

let world: World;
beforeEach(() => {
  world = makeWorld('inproc');
});
afterEach(() => world.cleanup());

async function counts() {
  const store = await world.store();
  try {
    const db = store.connection;
    const one = (sql: string) => (db.prepare(sql).get() as { n: number }).n;
    return {
      receipts: one('SELECT COUNT(*) AS n FROM receipts'),
      sessions: one('SELECT COUNT(*) AS n FROM sessions'),
      leases: one('SELECT COUNT(*) AS n FROM leases'),
      captures: one('SELECT COUNT(*) AS n FROM captures'),
      lastHook: one('SELECT COALESCE(MAX(last_hook_at), 0) AS n FROM sessions'),
    };
  } finally {
    store.close();
  }
}

describe('renewal', () => {
  it('Stop and PostToolUse from the Owner renew at most once a minute; others never renew', async () => {
    const store = await world.store();
    await store.addTodo({ goal: world.repo, id: 'fix-login', title: 'Fix login', body: '' }, 0);
    store.close();
    let now = 1_000_000;
    const run = (input: string) => runHook(input, { env: world.env, now: () => now });
    await run(payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login'));
    const lease = async () => (await (await world.store()).listLeases())[0]!;

    now += RENEWAL_INTERVAL_MS - 1;
    await run(payload.codex(world, 'Stop', 'sess-a', 'turn-1'));
    expect((await lease()).version).toBe(1);
    now += 1;
    await run(payload.codex(world, 'PostToolUse', 'sess-a', 'turn-1', { tool_name: 'Bash' }));
    expect(await lease()).toMatchObject({ version: 2, expiresAt: now + 45 * 60 * 1000 });
    now += RENEWAL_INTERVAL_MS;
    await run(payload.codex(world, 'Stop', 'sess-b', 'turn-1'));
    expect((await lease()).version).toBe(2);
    // Control: the Owner's Stop at the same moment renews.
    await run(payload.codex(world, 'Stop', 'sess-a', 'turn-1'));
    expect((await lease()).version).toBe(3);
  });
});

// ---- the hostile-input corpus -------------------------------------------------------------

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
    fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes).toString('latin1')).filter((s) => !s.trim().startsWith('{')),
    // A field of the wrong type.
    fc
      .tuple(fc.constantFrom(...fields), wrongTypes)
      // null is how agents say "absent" for optional fields (Codex sends transcript_path: null), so it is valid there.
      .filter(([field, value]) => value !== null || ['hook_event_name', 'session_id', 'cwd'].includes(field))
      .map(([field, value]) => JSON.stringify({ ...base, [field]: value })),
    // Ids outside their grammar (path traversal, NUL, shell metacharacters, too long).
    fc.tuple(fc.constantFrom('session_id', 'turn_id'), hostileStrings).map(([field, value]) => JSON.stringify({ ...base, [field]: value })),
    // Unknown events.
    fc.string({ maxLength: 30 }).filter((name) => !['SessionStart', 'UserPromptSubmit', 'PreToolUse', 'PostToolUse', 'Stop'].includes(name)).map((name) => JSON.stringify({ ...base, hook_event_name: name })),
    // Lone surrogates, written as JSON escapes so they survive to the parser.
    fc.tuple(fc.constantFrom('prompt', 'cwd', 'tool_name', 'model'), fc.constantFrom('\\ud800', '\\udfff', 'a\\udc00b')).map(([field, bad]) =>
      JSON.stringify({ ...base, [field]: `${field === 'cwd' ? w.repo : ''}@@` }).replace('@@', bad),
    ),
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

describe('hostile input corpus (in-process, real store)', () => {
  it('10,000 malformed or hostile inputs: nothing printed, nothing written, one stderr line each', async () => {
    // A store with state an attacker would like to change.
    const store = await world.store();
    await store.addTodo({ goal: world.repo, id: 'fix-login', title: 'Fix login', body: '' }, Date.now());
    store.close();
    await runHook(payload.codexPrompt(world, 'sess-owner', 'turn-1', '#todo:fix-login'), { env: world.env });
    const before = await counts();

    const corpus = hostileCorpus(world, 10_000);
    expect(corpus.length).toBeGreaterThanOrEqual(10_000);
    for (const input of corpus) {
      const result = await runHook(input, { env: world.env });
      if (result.stdout !== '' || result.stderr.length !== 1) throw new Error(`accepted hostile input ${JSON.stringify(input.slice(0, 300))}: ${JSON.stringify(result)}`);
    }
    expect(await counts()).toStrictEqual(before);

    // Control: a valid input from a new session is acted on (it writes proof of life), so the counts
    // above would have moved had any hostile input been accepted.
    await runHook(payload.codexPrompt(world, 'sess-new', 'turn-1', 'hello'), { env: world.env });
    expect((await counts()).sessions).toBe(before.sessions + 1);
  });
});
