// Issue 8: a repository whose Goal key changes under it (an origin added, `goal init`) is never split
// silently into two Goals. Claims and `todo add` are refused with [goal_changed] until
// `turnkeeper goal move --from <old>` carries its Todos, leases and captures to the new Goal, after
// which the same lease holds, at the same epoch. Real git, real `dist/cli.js` processes; every
// refusal has its control.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { like } from '../support/matchers';
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { resolveGoal } from '../../src/checkout/goal';
import { parseReceipt, type ReceiptDocument } from '../../src/core/receipts';
import { contextOf, makeWorld, payload, type World } from '../support/world';

let world: World;
/** The Goal the repository had while it had no origin (rule c: its common git directory). */
let oldGoal: string;
beforeEach(() => {
  world = makeWorld('goalchange');
  oldGoal = world.goal;
});
afterEach(() => world.cleanup());

const git = (cwd: string, ...args: string[]) => execFileSync('git', ['-C', cwd, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
const hook = (session: string, turn: string, prompt: string, cwd = world.repo) => {
  const input = JSON.parse(payload.codexPrompt(world, session, turn, prompt)) as Record<string, unknown>;
  input.cwd = cwd;
  return world.cli(['hook'], { input: JSON.stringify(input) });
};
const captureIdOf = (text: string | undefined) => /capture (cap_[0-9a-f]{24})/.exec(text ?? '')?.[1];

function addTodo(id: string, cwd = world.repo) {
  return world.cli(['todo', 'add', `Title of ${id}`, '--id', id], { cwd });
}
function goalJson(cwd = world.repo) {
  const run = world.cli(['goal', '--json'], { cwd });
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as { id: string; key: string; rule: string; changedFrom: string | null };
}
function statusLeases() {
  const run = world.cli(['status', '--json']);
  expect(run.code, run.stderr).toBe(0);
  return (
    JSON.parse(run.stdout) as {
      leases: { goal: string; todo: string; owner: string; capture: string; epoch: number; version: number; status: string; checkout?: string }[];
    }
  ).leases;
}
function allTodos() {
  const run = world.cli(['todo', 'list', '--all', '--json']);
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as { goal: string; id: string; status: string }[];
}
async function receipts(): Promise<ReceiptDocument[]> {
  const store = await world.store();
  try {
    return (await store.receipts({ limit: 1000 })).map((row) => parseReceipt(row.doc)!).reverse();
  } finally {
    store.close();
  }
}
const verifyOk = () => (JSON.parse(world.cli(['verify', '--json']).stdout) as { ok: boolean }).ok;

/** A repository in use without an origin: a Todo, claimed by sess-a. Returns its capture id. */
function inUseWithoutOrigin(): string {
  expect(goalJson()).toMatchObject({ id: oldGoal, rule: 'common_dir', changedFrom: null });
  expect(addTodo('fix-login').code).toBe(0);
  const claim = hook('sess-a', 'turn-1', '#todo:fix-login');
  expect(contextOf(claim.stdout)).toMatch(/^Turnkeeper: Todo fix-login · capture cap_[0-9a-f]{24} · epoch 1$/m);
  return captureIdOf(contextOf(claim.stdout))!;
}
function addOrigin(url = 'https://example.invalid/x/y.git'): string {
  git(world.repo, 'remote', 'add', 'origin', url);
  const now = resolveGoal(world.repo).id;
  expect(now).not.toBe(oldGoal);
  return now;
}

describe('an origin added to a repository in use', () => {
  it('claims and todo add are refused [goal_changed] until goal move, which carries the lease over at the same epoch', async () => {
    const capture = inUseWithoutOrigin();
    // Control: before the key changes, another session is simply held off (the claim path is open).
    expect(contextOf(hook('sess-b', 'turn-0', '#todo:fix-login').stdout)).toContain('[lease_held]');
    const newGoal = addOrigin();

    // A new prompt naming a Todo: [goal_changed], naming the command that recovers, and nothing claimed.
    const before = statusLeases();
    const refused = hook('sess-b', 'turn-1', '#todo:fix-login');
    const text = contextOf(refused.stdout)!;
    expect(text).toContain('[goal_changed]');
    expect(text).toContain(`turnkeeper goal move --from ${oldGoal}`);
    expect(text).toContain(newGoal);
    expect(statusLeases()).toStrictEqual(before);
    const last = (await receipts()).at(-1)!;
    expect(last).toMatchObject({
      kind: 'claim_refused',
      goal: newGoal,
      todo: 'fix-login',
      owner: 'codex:sess-b',
      detail: { reason: 'goal_changed', previous: oldGoal },
    });
    // A Todo that does not exist anywhere is refused the same way: the key change is decided first.
    expect(contextOf(hook('sess-c', 'turn-1', '#todo:brand-new').stdout)).toContain('[goal_changed]');
    expect(statusLeases()).toStrictEqual(before);

    // `goal` says so; `todo add` is refused (exit 1) and adds nothing.
    expect(goalJson()).toMatchObject({ id: newGoal, rule: 'origin', key: 'example.invalid/x/y', changedFrom: oldGoal });
    const add = addTodo('second-task');
    expect(add.code).toBe(1);
    expect(add.stderr).toContain(oldGoal);
    expect(allTodos().map((todo) => todo.id)).toStrictEqual(['fix-login']);

    // The move.
    const move = world.cli(['goal', 'move', '--from', oldGoal, '--json']);
    expect(move.code, move.stderr).toBe(0);
    expect(JSON.parse(move.stdout)).toMatchObject({ ok: true, from: oldGoal, to: newGoal, kind: 'moved', todos: 1, leases: 1, captures: 1 });

    // The same lease, now under the new Goal: still active, same epoch, same holder and capture.
    const after = statusLeases();
    expect(after).toHaveLength(1);
    expect(after[0]).toMatchObject({
      goal: newGoal,
      todo: 'fix-login',
      owner: 'codex:sess-a',
      capture,
      epoch: before[0]!.epoch,
      version: before[0]!.version,
      status: 'active',
      checkout: world.repo,
    });
    expect(allTodos()).toStrictEqual([expect.objectContaining({ goal: newGoal, id: 'fix-login', status: 'open' })]);
    expect(allTodos().filter((todo) => todo.goal === oldGoal)).toStrictEqual([]);
    expect((await receipts()).filter((r) => r.kind === 'goal_moved')).toStrictEqual([
      expect.objectContaining({
        goal: newGoal,
        detail: like.objectContaining({ from: oldGoal, key: 'example.invalid/x/y', todos: 1, leases: 1, captures: 1 }),
      }),
    ]);
    expect(goalJson().changedFrom).toBeNull();

    // The holder's next prompt presents its capture (rule 4): no new claim, same epoch.
    const holder = hook('sess-a', 'turn-2', '#todo:fix-login');
    expect(contextOf(holder.stdout)).toMatch(new RegExp(`^Turnkeeper: Todo fix-login · capture ${capture} · epoch 1$`, 'm'));
    // Another session is held off by that lease, under the new Goal.
    const other = contextOf(hook('sess-b', 'turn-2', '#todo:fix-login').stdout)!;
    expect(other).toContain('[lease_held]');
    expect(other).toContain('codex:sess-a');
    expect(statusLeases()).toHaveLength(1);
    // And Todos can be added again.
    expect(addTodo('second-task').code).toBe(0);
    expect(verifyOk()).toBe(true);
  });

  it('the holder naming its own Todo after the key changed gets [goal_changed], not [session_holds_other]', async () => {
    const capture = inUseWithoutOrigin();
    // Control: before the change, the holder naming its Todo is presented its capture (rule 4).
    expect(contextOf(hook('sess-a', 'turn-2', '#todo:fix-login').stdout)).toMatch(new RegExp(`capture ${capture} · epoch 1$`, 'm'));
    addOrigin();
    // It holds fix-login of this very repository (under the Goal the repository used until now):
    // "this session already holds another Todo" would be false, and its recovery (`todo done
    // fix-login`, `release fix-login`) runs under the new Goal and finds nothing.
    const text = contextOf(hook('sess-a', 'turn-3', '#todo:fix-login').stdout)!;
    expect(text).toContain('[goal_changed]');
    expect(text).toContain(`turnkeeper goal move --from ${oldGoal}`);
    expect(text).not.toContain('[session_holds_other]');
    expect((await receipts()).at(-1)).toMatchObject({ kind: 'claim_refused', owner: 'codex:sess-a', detail: { reason: 'goal_changed', previous: oldGoal } });
    // A prompt that names no Todo still presents the held capture (rule 4 is not a claim).
    expect(contextOf(hook('sess-a', 'turn-4', 'carry on').stdout)).toMatch(new RegExp(`capture ${capture} · epoch 1$`, 'm'));
    expect(statusLeases()).toStrictEqual([expect.objectContaining({ goal: oldGoal, capture, epoch: 1, status: 'active' })]);
  });

  it('goal move is refused while a Todo id exists under both Goals; removing the collision lets it move', async () => {
    inUseWithoutOrigin();
    // A clone that already had the origin filed a Todo with the same id under the new Goal.
    const clone = join(world.root, 'clone2');
    execFileSync('git', ['clone', '-q', world.repo, clone], { stdio: 'ignore' });
    git(clone, 'remote', 'set-url', 'origin', 'https://example.invalid/x/y.git');
    expect(addTodo('fix-login', clone).code).toBe(0);
    const newGoal = addOrigin();
    expect(goalJson(clone).id).toBe(newGoal);

    const refused = world.cli(['goal', 'move', '--from', oldGoal]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('fix-login');
    expect(refused.stderr).toContain('both Goals');
    // Nothing moved: the lease is still under the old Goal, and the repository still refuses claims.
    expect(statusLeases()[0]).toMatchObject({ goal: oldGoal, todo: 'fix-login', status: 'active' });
    expect(
      allTodos()
        .map((todo) => `${todo.goal}/${todo.id}`)
        .sort(),
    ).toStrictEqual([`${newGoal}/fix-login`, `${oldGoal}/fix-login`].sort());
    expect((await receipts()).some((r) => r.kind === 'goal_moved')).toBe(false);
    expect(contextOf(hook('sess-b', 'turn-1', '#todo:fix-login').stdout)).toContain('[goal_changed]');

    // Control: without the collision (no command removes a Todo, so the row goes directly) it moves.
    const store = await world.store();
    store.connection.prepare('DELETE FROM todos WHERE goal = ? AND id = ?').run(newGoal, 'fix-login');
    store.close();
    const moved = world.cli(['goal', 'move', '--from', oldGoal]);
    expect(moved.code, moved.stderr).toBe(0);
    expect(moved.stdout).toContain(`moved 1 Todos, 1 leases and 1 captures from ${oldGoal} to ${newGoal}`);
    expect(statusLeases()[0]).toMatchObject({ goal: newGoal, todo: 'fix-login', status: 'active', epoch: 1 });
  });

  it("goal move carries the Todos' dependencies and block reasons (issue 20): the moved Todo still waits, by the edges' cascade", () => {
    inUseWithoutOrigin();
    expect(world.cli(['todo', 'add', 'Deploy', '--id', 'deploy', '--after', 'fix-login']).code).toBe(0);
    expect(world.cli(['todo', 'add', 'Docs', '--id', 'docs-task']).code).toBe(0);
    expect(world.cli(['todo', 'block', 'docs-task', '--reason', 'after the release']).code).toBe(0);
    const newGoal = addOrigin();
    const moved = world.cli(['goal', 'move', '--from', oldGoal]);
    expect(moved.code, moved.stderr).toBe(0);
    const listed = JSON.parse(world.cli(['todo', 'list', '--json']).stdout) as {
      goal: string;
      id: string;
      state: string;
      waitingOn?: string[];
      blockReason?: string;
    }[];
    expect(listed.map((todo) => [todo.goal, todo.id, todo.state])).toStrictEqual([
      [newGoal, 'fix-login', 'open'],
      [newGoal, 'deploy', 'blocked'],
      [newGoal, 'docs-task', 'blocked'],
    ]);
    expect(listed[1]).toMatchObject({ waitingOn: ['fix-login'] });
    expect(listed[2]).toMatchObject({ blockReason: 'after the release' });
    // The edge is the new Goal's, none is left under the old one.
    const cycle = world.cli(['todo', 'block', 'fix-login', '--after', 'deploy']);
    expect(cycle.stderr).toContain('fix-login waits on deploy waits on fix-login');
    expect(verifyOk()).toBe(true);
  });

  it('goal move of a Goal the store does not know, or of the current Goal, is refused', () => {
    inUseWithoutOrigin();
    // Before any change: the repository's Goal is already the current one.
    const same = world.cli(['goal', 'move', '--from', oldGoal]);
    expect(same.code).toBe(1);
    expect(same.stderr).toContain('already');
    const unknown = world.cli(['goal', 'move', '--from', 'goal_' + '0'.repeat(24)]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('nothing under');
    // Control: the lease was not touched by either.
    expect(statusLeases()[0]).toMatchObject({ goal: oldGoal, status: 'active', epoch: 1 });
  });
});

describe('goal init', () => {
  it('writes .turnkeeper.json with the current key, so the Goal id stays and claims go on', () => {
    inUseWithoutOrigin();
    const init = world.cli(['goal', 'init', '--json']);
    expect(init.code, init.stderr).toBe(0);
    const written = JSON.parse(init.stdout) as { file: string; key: string; id: string; previous: string };
    expect(written).toMatchObject({ file: join(world.repo, '.turnkeeper.json'), id: oldGoal, previous: oldGoal });
    expect(JSON.parse(readFileSync(written.file, 'utf8'))).toStrictEqual({ goal: written.key });
    expect(goalJson()).toMatchObject({ id: oldGoal, rule: 'turnkeeper_json', key: written.key, changedFrom: null });
    // Claims go on under the same Goal: the holder is presented, another Todo is claimed.
    expect(addTodo('second-task').code).toBe(0);
    expect(contextOf(hook('sess-b', 'turn-1', '#todo:second-task').stdout)).toMatch(/^Turnkeeper: Todo second-task · capture cap_[0-9a-f]{24} · epoch 1$/m);
    expect(contextOf(hook('sess-c', 'turn-1', '#todo:fix-login').stdout)).toContain('[lease_held]');
    // A second init does not overwrite the file.
    expect(world.cli(['goal', 'init']).code).toBe(2);

    // Control: a goal file with another key changes the id, and the next claim is [goal_changed].
    rmSync(written.file);
    const other = world.cli(['goal', 'init', '--key', 'other', '--json']);
    expect(other.code, other.stderr).toBe(0);
    const changed = JSON.parse(other.stdout) as { id: string; previous: string };
    expect(changed.previous).toBe(oldGoal);
    expect(changed.id).not.toBe(oldGoal);
    expect(goalJson()).toMatchObject({ id: changed.id, key: 'other', rule: 'turnkeeper_json', changedFrom: oldGoal });
    expect(addTodo('third-task').code).toBe(1);
    const refused = contextOf(hook('sess-d', 'turn-1', '#todo:second-task').stdout)!;
    expect(refused).toContain('[goal_changed]');
    expect(refused).toContain(`turnkeeper goal move --from ${oldGoal}`);
  });
});
