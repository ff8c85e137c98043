// Commands that used to answer with silence or a wrong "all clear" where the user needed guidance:
// `doctor` on a store another process keeps locked, `show` of the capture a refused claim names, and
// `todo reopen`, the command docs/recovery.md recommends after `todo done` (spec §8).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { contextOf, holdWriteLock, makeWorld, payload, type World } from '../support/world';

let world: World;
beforeEach(() => {
  world = makeWorld('guidance');
});
afterEach(() => world.cleanup());

const addTodo = (id: string) => expect(world.cli(['todo', 'add', `Title of ${id}`, '--id', id]).code).toBe(0);
const hook = (input: string) => world.cli(['hook'], { input });

describe('doctor on a store that stays locked', () => {
  it('says the store is busy and what that means for hooks, instead of "no problems found"', async () => {
    addTodo('fix-login');
    const holder = await holdWriteLock(world.db);
    try {
      const text = await world.cliAsync(['doctor']);
      expect(text.stdout).not.toContain('no problems found');
      expect(text.stdout).toMatch(/problem: store: .*write lock.*busy/);
      expect(text.stdout).toContain('[store_unavailable]');
      const json = await world.cliAsync(['doctor', '--json']);
      const report = JSON.parse(json.stdout) as { ok: boolean; store: { writeLock?: string }; problems: string[] };
      expect(report.ok).toBe(false);
      expect(report.store.writeLock).toBe('busy');
    } finally {
      await holder.release();
    }
    // Control: the same store, unlocked, has no store problem.
    const after = JSON.parse((await world.cliAsync(['doctor', '--json'])).stdout) as { store: { writeLock?: string }; problems: string[] };
    expect(after.store.writeLock).toBe('free');
    expect(after.problems.filter((problem) => problem.startsWith('store:'))).toStrictEqual([]);
  });
});

describe('show <captureId> of a refused claim', () => {
  it('names the refusing receipt and its reason instead of "no capture"', () => {
    addTodo('fix-login');
    expect(contextOf(hook(payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login')).stdout)).toMatch(/^Turnkeeper: Todo fix-login/);
    expect(contextOf(hook(payload.codexPrompt(world, 'sess-b', 'turn-1', '#todo:fix-login')).stdout)).toContain('[lease_held]');
    const receipts = JSON.parse(world.cli(['receipts', '--json']).stdout) as {
      seq: number;
      doc: { kind: string; capture?: string; detail?: { reason?: string } };
    }[];
    const refused = receipts.find((row) => row.doc.kind === 'claim_refused')!;
    expect(refused.doc.detail?.reason).toBe('lease_held');
    const id = refused.doc.capture!;
    expect(id).toMatch(/^cap_[0-9a-f]{24}$/);

    const text = world.cli(['show', id]);
    expect(text.code).toBe(1);
    expect(text.stderr).not.toContain('no capture');
    expect(text.stderr).toContain(`capture ${id} was never stored`);
    expect(text.stderr).toContain(`receipt #${refused.seq} (claim_refused`);
    expect(text.stderr).toContain('[lease_held]');
    expect(text.stderr).toContain('held by codex:sess-a (epoch 1)');
    expect(text.stderr).toContain('docs/recovery.md#lease_held');
    const json = JSON.parse(world.cli(['show', id, '--json']).stdout) as Record<string, unknown>;
    expect(json).toMatchObject({
      ok: false,
      reason: 'capture_refused',
      capture: id,
      receipt: { seq: refused.seq, kind: 'claim_refused', reason: 'lease_held', todo: 'fix-login', owner: 'codex:sess-b' },
    });

    // Control: an id no receipt names is still "no capture".
    const unknown = world.cli(['show', 'cap_000000000000000000000000']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no capture cap_000000000000000000000000');
  });
});

describe('todo reopen', () => {
  it('opens a done Todo again; the released capture stays released and a new turn acquires epoch 2', () => {
    addTodo('fix-login');
    expect(contextOf(hook(payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login')).stdout)).toMatch(/· epoch 1$/m);
    expect(world.cli(['todo', 'done', 'fix-login', '--owner', 'codex:sess-a']).code).toBe(0);
    // While it is done, a prompt naming it is [todo_not_open], whose recovery now names the reopen.
    const notOpen = contextOf(hook(payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login')).stdout)!;
    expect(notOpen).toContain('[todo_not_open]');
    expect(notOpen).toContain('turnkeeper todo reopen fix-login');

    const reopened = world.cli(['todo', 'reopen', 'fix-login']);
    expect(reopened.code, reopened.stderr).toBe(0);
    expect(reopened.stdout).toContain('Todo fix-login is open again (was done)');
    const listed = JSON.parse(world.cli(['todo', 'list', '--json']).stdout) as { id: string; status: string }[];
    expect(listed).toMatchObject([{ id: 'fix-login', status: 'open' }]);
    const receipts = JSON.parse(world.cli(['receipts', '--json', '--limit', '1']).stdout) as { doc: { kind: string; detail: unknown } }[];
    expect(receipts[0]!.doc).toMatchObject({ kind: 'todo_status_changed', detail: { from: 'done', to: 'open' } });

    // The released Turn stays released (spec §2 "Release"); a new Turn acquires a new lease.
    expect(contextOf(hook(payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login')).stdout)).toContain('[capture_released]');
    expect(contextOf(hook(payload.codexPrompt(world, 'sess-a', 'turn-2', '#todo:fix-login')).stdout)).toMatch(/· epoch 2$/m);
  });

  it('says so for an open Todo (writing nothing), refuses an unknown one, and checks the grammar', async () => {
    addTodo('fix-login');
    const store = await world.store();
    const before = (await store.health()).receipts;
    store.close();
    const open = world.cli(['todo', 'reopen', 'fix-login', '--json']);
    expect(open.code).toBe(0);
    expect(JSON.parse(open.stdout)).toMatchObject({ ok: true, changed: false });
    const after = await world.store();
    expect((await after.health()).receipts).toBe(before);
    after.close();

    const unknown = world.cli(['todo', 'reopen', 'no-such-todo', '--json']);
    expect(unknown.code).toBe(1);
    expect(JSON.parse(unknown.stdout)).toMatchObject({ ok: false, reason: 'unknown_todo' });
    expect(world.cli(['todo', 'reopen', 'Bad']).code).toBe(2);
  });
});
