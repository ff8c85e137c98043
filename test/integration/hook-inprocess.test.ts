// The hook's entry function in-process, with a real SQLite store and an injected clock: renewal
// timing and the hostile-input fuzz corpus run here (real processes cover the rest).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runHook } from '../../src/hook/hook';
import { RENEWAL_INTERVAL_MS } from '../../src/core/lease';
import { makeWorld, payload, type World } from '../support/world';
import { hostileCorpus } from '../support/hostileCorpus';

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
    await store.addTodo({ goal: world.goal, id: 'fix-login', title: 'Fix login', body: '' }, 0);
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

  it('a broken .turnkeeper.json does not stop the Owner renewing (control: the same Stop before it broke)', async () => {
    const store = await world.store();
    await store.addTodo({ goal: world.goal, id: 'fix-login', title: 'Fix login', body: '' }, 0);
    store.close();
    let now = 1_000_000;
    const run = (input: string) => runHook(input, { env: world.env, now: () => now });
    await run(payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login'));
    const lease = async () => {
      const reader = await world.store();
      try {
        return (await reader.listLeases())[0]!;
      } finally {
        reader.close();
      }
    };
    now += RENEWAL_INTERVAL_MS;
    await run(payload.codex(world, 'Stop', 'sess-a', 'turn-1'));
    expect((await lease()).version).toBe(2);
    writeFileSync(join(world.repo, '.turnkeeper.json'), '{"goal": ');
    now += RENEWAL_INTERVAL_MS;
    const broken = await run(payload.codex(world, 'Stop', 'sess-a', 'turn-1'));
    expect(broken.stdout).toBe('');
    expect(await lease()).toMatchObject({ version: 3, expiresAt: now + 45 * 60 * 1000 });
  });
});

describe('reads a held context event makes', () => {
  it('a claim presents the ready capture it wrote without reading it back; only a prompt reads the capture for its Turn', async () => {
    const store = await world.store();
    await store.addTodo({ goal: world.goal, id: 'fix-login', title: 'Fix login', body: '' }, 0);
    const calls: string[] = [];
    const counted = new Proxy(store, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver) as unknown;
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          if (property === 'readReady' || property === 'getCapture') calls.push(String(property));
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    const run = async (input: string) => {
      calls.length = 0;
      const result = await runHook(input, { env: world.env, openStore: () => Promise.resolve(counted) });
      return {
        text: (JSON.parse(result.stdout) as { hookSpecificOutput: { additionalContext: string } }).hookSpecificOutput.additionalContext,
        calls: [...calls],
      };
    };
    try {
      const claimed = await run(payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login'));
      expect(claimed.text).toMatch(/· epoch 1\n/);
      expect(claimed.calls).toStrictEqual([]);
      // The agent recorded the capture in its transcript: later context events get the reminder.
      writeFileSync(join(world.root, 'sess-a.jsonl'), JSON.stringify({ type: 'response_item', text: claimed.text }) + '\n');
      const resumed = await run(payload.codex(world, 'SessionStart', 'sess-a', undefined, { source: 'resume' }));
      expect(resumed.text).toContain('This session still holds the lease');
      expect(resumed.calls).toStrictEqual(['readReady']);
      const later = await run(payload.codexPrompt(world, 'sess-a', 'turn-2', 'go on'));
      expect(later.text).toContain('This session still holds the lease');
      expect(later.calls).toStrictEqual(['readReady', 'getCapture']);
    } finally {
      store.close();
    }
  });
});

describe('hostile input corpus (in-process, real store)', () => {
  it('10,000 malformed or hostile inputs: nothing printed, nothing written, one stderr line each', async () => {
    // A store with state an attacker would like to change.
    const store = await world.store();
    await store.addTodo({ goal: world.goal, id: 'fix-login', title: 'Fix login', body: '' }, Date.now());
    store.close();
    await runHook(payload.codexPrompt(world, 'sess-owner', 'turn-1', '#todo:fix-login'), { env: world.env });
    const before = await counts();

    const corpus = hostileCorpus(world, 10_000);
    expect(corpus.length).toBeGreaterThanOrEqual(10_000);
    for (const input of corpus) {
      const result = await runHook(input, { env: world.env });
      if (result.stdout !== '' || result.stderr.length !== 1)
        throw new Error(`accepted hostile input ${JSON.stringify(input.slice(0, 300))}: ${JSON.stringify(result)}`);
    }
    expect(await counts()).toStrictEqual(before);

    // Control: a valid input from a new session is acted on (it writes proof of life), so the counts
    // above would have moved had any hostile input been accepted.
    await runHook(payload.codexPrompt(world, 'sess-new', 'turn-1', 'hello'), { env: world.env });
    expect((await counts()).sessions).toBe(before.sessions + 1);
  });
});
