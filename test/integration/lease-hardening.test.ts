// Hardening findings on leases (spec §10): clock steps, captures revived from another directory,
// concurrent prompts of one session, and who a release is recorded as. Each test runs the real hook
// against a real SQLite store, and each has its control: the run that shows what the guard prevents.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { runHook } from '../../src/hook/hook';
import { buildCapture } from '../../src/core/capture';
import { digestText } from '../../src/core/canonical';
import { parseReceipt } from '../../src/core/receipts';
import { contextOf, makeWorld, parseHookStdout, payload, type World } from '../support/world';

let world: World;
beforeEach(() => {
  world = makeWorld('leasehard');
});
afterEach(() => world.cleanup());

const DAY = 24 * 60 * 60 * 1000;

async function addTodos(...ids: string[]) {
  const store = await world.store();
  for (const id of ids) await store.addTodo({ goal: world.goal, id, title: `Title of ${id}`, body: '' }, 0);
  store.close();
}
async function withStore<T>(work: (store: Awaited<ReturnType<World['store']>>) => T | Promise<T>): Promise<T> {
  const store = await world.store();
  try {
    return await work(store);
  } finally {
    store.close();
  }
}
const writeTool = (session: string) => payload.codex(world, 'PreToolUse', session, 'turn-x', { tool_name: 'apply_patch', tool_input: { command: 'patch' } });
const isDenied = (stdout: string) => JSON.stringify(parseHookStdout(stdout) ?? {}).includes('"deny"');

describe('finding 6: ordering by epochs and sequence numbers, never wall-clock time', () => {
  it('a clock stepped back never fences the rightful holder with a Todo it finished earlier', async () => {
    await addTodos('old-task', 'new-task');
    let now = 2_000_000_000_000;
    const run = (input: string) => runHook(input, { env: world.env, now: () => now });
    expect(contextOf((await run(payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:old-task'))).stdout)).toContain('epoch 1');
    await withStore((s) => s.release({ goal: world.goal, todo: 'old-task', by: 'codex:sess-a', identifiedBy: 'agent_environment', force: false }, now));

    now -= DAY; // the clock is stepped back a day; the same session takes another Todo
    expect(contextOf((await run(payload.codexPrompt(world, 'sess-a', 'turn-2', '#todo:new-task'))).stdout)).toContain('Todo new-task');
    const fenced = await run(writeTool('sess-a'));
    expect(isDenied(fenced.stdout), fenced.stdout).toBe(false);

    // Control: once new-task is taken from it, the same write is denied, naming new-task.
    await withStore((s) => s.release({ goal: world.goal, todo: 'new-task', identifiedBy: 'force', force: true, reason: 'test' }, now));
    const denied = await run(writeTool('sess-a'));
    expect(isDenied(denied.stdout)).toBe(true);
    expect(denied.stdout).toContain('new-task');
  });

  it('renewal after a clock step back keeps the lease and never shortens it', async () => {
    await addTodos('fix-login');
    let now = 2_000_000_000_000;
    const run = (input: string) => runHook(input, { env: world.env, now: () => now });
    await run(payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login'));
    const before = (await withStore((s) => s.listLeases()))[0]!;
    now -= DAY;
    await run(payload.codex(world, 'Stop', 'sess-a', 'turn-1'));
    const after = (await withStore((s) => s.listLeases()))[0]!;
    expect(after.status).toBe('active');
    expect(after.version).toBe(before.version + 1);
    expect(after.expiresAt).toBeGreaterThanOrEqual(before.expiresAt);
  });
});

describe('finding 7: the same Turn never revives a released lease', () => {
  async function claimThenRelease() {
    await addTodos('fix-login');
    const first = await runHook(payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login'), { env: world.env });
    expect(contextOf(first.stdout)).toContain('epoch 1');
    await withStore((s) => s.release({ goal: world.goal, todo: 'fix-login', identifiedBy: 'force', force: true, reason: 'reassigned' }, Date.now()));
  }

  it('a retry of the same Turn from a subdirectory gets [capture_released], not a new lease', async () => {
    await claimThenRelease();
    const sub = join(world.repo, 'src', 'deep');
    mkdirSync(sub, { recursive: true });
    const retry = JSON.parse(payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login')) as Record<string, unknown>;
    retry.cwd = sub;
    const result = await runHook(JSON.stringify(retry), { env: world.env });
    expect(contextOf(result.stdout)).toContain('[capture_released]');
    expect((await withStore((s) => s.listLeases())).filter((l) => l.status === 'active')).toHaveLength(0);

    // Control: a new Turn of the same session may claim the Todo again, with the next epoch.
    const next = await runHook(payload.codexPrompt(world, 'sess-a', 'turn-2', '#todo:fix-login'), { env: world.env });
    expect(contextOf(next.stdout)).toContain('epoch 2');
  });

  it('a retry of the same Turn through another binding (TURNKEEPER_TODO) gets [capture_released]', async () => {
    await claimThenRelease();
    const result = await runHook(payload.codexPrompt(world, 'sess-a', 'turn-1', 'carry on'), { env: { ...world.env, TURNKEEPER_TODO: 'fix-login' } });
    expect(contextOf(result.stdout)).toContain('[capture_released]');
  });

  it('a v1 capture of the Turn (cwd and binding in its identity) is the same claim after the upgrade', async () => {
    await addTodos('fix-login');
    // A capture written by the previous release: its document and id are v1 and must stay as they are.
    const v1Doc = JSON.stringify({
      agent: 'codex',
      binding: 'prompt',
      cwd: world.repo,
      goal: world.goal,
      schema: 'turnkeeper.capture/v1',
      session: 'sess-a',
      todo: 'fix-login',
      turn: 'turn-1',
    });
    const v1Id = 'cap_' + digestText(v1Doc).slice(7, 31);
    await withStore((s) => {
      s.connection
        .prepare(
          'INSERT INTO captures (id, goal, todo, agent, session, turn, cwd, binding, doc, original_digest, op, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
        )
        // The row's Goal as the upgrade maps it (adoptLegacyGoals); the v1 document keeps its path.
        .run(v1Id, world.goal, 'fix-login', 'codex', 'sess-a', 'turn-1', world.repo, 'prompt', v1Doc, digestText(v1Doc), 'op_legacy', 1);
      s.connection
        .prepare(
          `INSERT INTO leases (goal, todo, epoch, owner, capture, version, status, acquired_at, renewed_at, expires_at) VALUES (?, ?, 1, 'codex:sess-a', ?, 1, 'released', 1, 1, 2)`,
        )
        .run(world.goal, 'fix-login', v1Id);
    });
    const result = await runHook(payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login'), { env: world.env });
    expect(contextOf(result.stdout)).toContain('[capture_released]');
    expect(contextOf(result.stdout)).toContain(v1Id);
    expect((await withStore((s) => s.getCapture(v1Id)))?.canonical).toBe(v1Doc);
    // Control: the v2 capture of the same Turn has another id, so only the Turn lookup finds the v1 row.
    expect(buildCapture({ goal: world.goal, todo: 'fix-login', agent: 'codex', session: 'sess-a', turn: 'turn-1' }).captureId).not.toBe(v1Id);
  });
});

describe('finding 8: concurrent prompts of one session for different Todos', () => {
  it('a claim for another Todo by an Owner that holds one is refused session_holds_other, with a receipt', async () => {
    await addTodos('task-a', 'task-b');
    const input = (todo: string, turn: string) => ({
      capture: buildCapture({ goal: world.goal, todo, agent: 'codex', session: 'sess-a', turn }),
      cwd: world.repo,
      binding: 'prompt' as const,
      owner: 'codex:sess-a' as const,
      preconditions: { gitHead: null, statusDigest: null },
      ttlSeconds: 60,
    });
    await withStore(async (s) => {
      expect((await s.claim(input('task-a', 't1'), 1)).kind).toBe('acquired');
      // The claim transaction itself (not just the hook's rule 4) must see the Owner's other lease:
      // before the fix this threw "UNIQUE constraint failed: leases.owner" and wrote no receipt.
      const second = await s.claim(input('task-b', 't2'), 2);
      expect(second).toMatchObject({ kind: 'session_holds_other', held: { todo: 'task-a' } });
      const last = parseReceipt((await s.receipts({ limit: 1 }))[0]!.doc);
      expect(last).toMatchObject({ kind: 'claim_refused', todo: 'task-b', detail: { reason: 'session_holds_other', held: 'task-a' } });
      // Control: another Owner claims task-b.
      expect(
        (
          await s.claim(
            {
              ...input('task-b', 't2'),
              capture: buildCapture({ goal: world.goal, todo: 'task-b', agent: 'codex', session: 'sess-b', turn: 't2' }),
              owner: 'codex:sess-b',
            },
            3,
          )
        ).kind,
      ).toBe('acquired');
    });
  });

  it('8 concurrent hook processes of one session for 8 Todos: one claims, 7 get [session_holds_other], no internal error', async () => {
    const ids = Array.from({ length: 8 }, (_, i) => `task-${i}`);
    await addTodos(...ids);
    const results = await Promise.all(
      ids.map((id, i) => world.cliAsync(['hook'], { input: payload.codexPrompt(world, 'sess-a', `turn-${i}`, `#todo:${id}`) })),
    );
    for (const result of results) {
      expect(result.code).toBe(0);
      expect(result.stderr).not.toContain('internal error');
    }
    const contexts = results.map((r) => contextOf(r.stdout) ?? '');
    const refused = contexts.filter((c) => c.includes('[session_holds_other]'));
    expect(
      refused,
      JSON.stringify(
        results.map((r) => [r.stdout.slice(0, 160), r.stderr.slice(0, 300)]),
        null,
        1,
      ),
    ).toHaveLength(7);
    expect(contexts.filter((c) => !refused.includes(c) && /^Turnkeeper: Todo task-\d+ .* epoch 1/.test(c))).toHaveLength(1);
    const refusals = await withStore(async (s) =>
      (await s.receipts({ limit: 100 })).map((r) => parseReceipt(r.doc)!).filter((d) => d.kind === 'claim_refused'),
    );
    expect(refusals.filter((d) => d.detail?.reason === 'session_holds_other')).toHaveLength(7);
    expect((await withStore((s) => s.verifyChain())).ok).toBe(true);
  });
});

describe('finding 9: a release records who asked and how they were identified', () => {
  async function heldBy(session: string) {
    await addTodos('fix-login');
    const claimed = world.cli(['hook'], { input: payload.codexPrompt(world, session, 'turn-1', '#todo:fix-login') });
    expect(contextOf(claimed.stdout)).toContain('epoch 1');
  }
  const lastRelease = () => withStore(async (s) => parseReceipt((await s.receipts({ limit: 1 }))[0]!.doc)!);

  it('TURNKEEPER_OWNER is a self-declaration, and the receipt says so', async () => {
    await heldBy('victim1');
    const result = world.cli(['release', 'fix-login'], { env: { TURNKEEPER_OWNER: 'codex:victim1' } });
    expect(result.code, result.stderr).toBe(0);
    const receipt = await lastRelease();
    expect(receipt.kind).toBe('lease_released');
    expect(receipt.detail).toMatchObject({ identifiedBy: 'self_declared', requestedBy: 'codex:victim1', forced: false });
    expect(String(receipt.detail?.reason)).not.toBe('released by owner');
    expect(String(receipt.detail?.reason)).toContain('self-declared');
    expect(String(receipt.detail?.requester)).toMatch(/uid \d+/);
  });

  it('--owner is a self-declaration too; the agent environment is recorded as such', async () => {
    await heldBy('victim1');
    // Control for the wording: the agent's own environment is what "released by its owner" needs.
    const result = world.cli(['release', 'fix-login'], { env: { CODEX_THREAD_ID: 'victim1' } });
    expect(result.code, result.stderr).toBe(0);
    expect((await lastRelease()).detail).toMatchObject({ identifiedBy: 'agent_environment', requestedBy: 'codex:victim1', reason: 'released by its owner' });
  });

  it('a release by nobody identified is refused without --force, and a forced one names the requester', async () => {
    await heldBy('victim1');
    expect(world.cli(['release', 'fix-login']).code).toBe(1);
    const forced = world.cli(['release', 'fix-login', '--force', '--reason', 'stuck']);
    expect(forced.code, forced.stderr).toBe(0);
    expect((await lastRelease()).detail).toMatchObject({ identifiedBy: 'force', forced: true, requestedBy: null, reason: 'stuck' });
  });

  it('--owner must be <agent>:<session>', () => {
    expect(world.cli(['release', 'fix-login', '--owner', 'nobody']).code).toBe(2);
  });

  it("todo done of someone else's lease is refused like release: nothing changes, the holder and the flags are named", async () => {
    await heldBy('victim1');
    const head = (await withStore((s) => s.receipts({ limit: 1 })))[0]!.seq;
    for (const env of [{}, { CODEX_THREAD_ID: 'someone-else' }]) {
      const refused = world.cli(['todo', 'done', 'fix-login'], { env });
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('Todo fix-login is held by codex:victim1 (epoch 1)');
      expect(refused.stderr).toContain('turnkeeper todo done fix-login --force --reason "<why>"');
    }
    const json = world.cli(['todo', 'done', 'fix-login', '--json']);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: false, reason: 'not_owner', lease: { owner: 'codex:victim1', epoch: 1, status: 'active' } });
    expect(world.cli(['todo', 'done', 'fix-login', '--force']).code).toBe(2);
    await withStore(async (s) => {
      expect(await s.getTodo(world.goal, 'fix-login')).toMatchObject({ status: 'open' });
      expect(await s.activeLeaseOfOwner('codex:victim1')).toMatchObject({ status: 'active', epoch: 1 });
      expect((await s.receipts({ limit: 1 }))[0]!.seq).toBe(head);
    });

    const forced = world.cli(['todo', 'done', 'fix-login', '--force', '--reason', 'the agent is gone']);
    expect(forced.code, forced.stderr).toBe(0);
    expect(forced.stdout).toContain('Todo fix-login is done; released the lease of codex:victim1 (epoch 1)');
    const receipt = await lastRelease();
    expect(receipt).toMatchObject({ kind: 'lease_released', owner: 'codex:victim1' });
    expect(receipt.detail).toMatchObject({ identifiedBy: 'force', forced: true, requestedBy: null, reason: 'the agent is gone' });
    expect(String(receipt.detail?.requester)).toMatch(/uid \d+/);
  });

  it('control: the holder marks its own Todo done without flags (agent environment, or --owner), and a Todo no one holds needs none', async () => {
    await heldBy('victim1');
    const own = world.cli(['todo', 'done', 'fix-login'], { env: { CODEX_THREAD_ID: 'victim1' } });
    expect(own.code, own.stderr).toBe(0);
    expect((await lastRelease()).detail).toMatchObject({ identifiedBy: 'agent_environment', requestedBy: 'codex:victim1', forced: false, reason: 'todo_done' });

    await addTodos('write-docs');
    expect(contextOf(world.cli(['hook'], { input: payload.codexPrompt(world, 'victim2', 'turn-1', '#todo:write-docs') }).stdout)).toContain('epoch 1');
    const declared = world.cli(['todo', 'done', 'write-docs', '--owner', 'codex:victim2']);
    expect(declared.code, declared.stderr).toBe(0);
    expect((await lastRelease()).detail).toMatchObject({ identifiedBy: 'self_declared', requestedBy: 'codex:victim2', forced: false });

    await addTodos('free-todo');
    const free = world.cli(['todo', 'done', 'free-todo']);
    expect(free.code, free.stderr).toBe(0);
    expect(free.stdout).toBe('Todo free-todo is done\n');
  });
});
