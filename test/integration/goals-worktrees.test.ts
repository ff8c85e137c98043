// Issue 8, "One Goal per repository", through real git and real `dist/cli.js` processes: the main
// checkout of a repository, three linked worktrees and a second clone with the same origin are one
// Goal. They share Todos and leases, a lease taken in one checkout holds in all of them (and says
// where its holder works), and a release anywhere fences the holder where it works. The control for
// "one Goal" is an unrelated repository that sees none of it. In the serial project
// (vitest.config.mts): one test races 32 processes.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { resolveGoal } from '../../src/checkout/goal';
import { contextOf, makeWorld, parseHookStdout, payload, type World } from '../support/world';

const ORIGIN = 'https://example.invalid/acme/app.git';

let world: World;
/** The five checkouts: main, wt1, wt2, wt3 (linked worktrees), clone2 (another clone, same origin). */
let checkouts: string[];
let goal: string;

const git = (cwd: string, ...args: string[]) => execFileSync('git', ['-C', cwd, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

beforeEach(() => {
  world = makeWorld('worktrees');
  // The origin is there before Turnkeeper first sees the repository: its Goal is the origin's from the start.
  git(world.repo, 'remote', 'add', 'origin', ORIGIN);
  const worktrees = ['wt1', 'wt2', 'wt3'].map((name) => {
    const path = join(world.root, name);
    git(world.repo, 'worktree', 'add', '-q', '-b', `branch-${name}`, path);
    return path;
  });
  const clone = join(world.root, 'clone2');
  execFileSync('git', ['clone', '-q', world.repo, clone], { stdio: 'ignore' });
  checkouts = [world.repo, ...worktrees, clone];
  goal = resolveGoal(world.repo).id;
});
afterEach(() => world.cleanup());

const clone2 = () => checkouts[4]!;
const setCloneOrigin = () => git(clone2(), 'remote', 'set-url', 'origin', ORIGIN);

/** A Codex prompt payload whose `cwd` is `cwd`. */
function promptIn(cwd: string, session: string, turn: string, prompt: string): string {
  const input = JSON.parse(payload.codexPrompt(world, session, turn, prompt)) as Record<string, unknown>;
  input.cwd = cwd;
  return JSON.stringify(input);
}
/** A Codex PreToolUse of a writing tool (apply_patch) whose `cwd` is `cwd`. */
function writeIn(cwd: string, session: string): string {
  const input = JSON.parse(payload.codex(world, 'PreToolUse', session, 'turn-x', { tool_name: 'apply_patch', tool_input: { command: 'x' } })) as Record<
    string,
    unknown
  >;
  input.cwd = cwd;
  return JSON.stringify(input);
}
const isDenied = (stdout: string) => JSON.stringify(parseHookStdout(stdout) ?? {}).includes('"permissionDecision":"deny"');

function goalJson(cwd: string): { id: string; key: string; rule: string; checkout: string; changedFrom: string | null } {
  const run = world.cli(['goal', '--json'], { cwd });
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as { id: string; key: string; rule: string; checkout: string; changedFrom: string | null };
}
function todoIds(cwd: string): string[] {
  const run = world.cli(['todo', 'list', '--json'], { cwd });
  expect(run.code, run.stderr).toBe(0);
  return (JSON.parse(run.stdout) as { id: string }[]).map((todo) => todo.id).sort();
}
function addTodo(cwd: string, id: string): void {
  const run = world.cli(['todo', 'add', `Title of ${id}`, '--id', id], { cwd });
  expect(run.code, run.stderr).toBe(0);
}
function statusLeases(): { goal: string; todo: string; owner: string; epoch: number; status: string; checkout?: string }[] {
  const run = world.cli(['status', '--json']);
  expect(run.code, run.stderr).toBe(0);
  return (JSON.parse(run.stdout) as { leases: { goal: string; todo: string; owner: string; epoch: number; status: string; checkout?: string }[] }).leases;
}
function verify(): { ok: boolean; verified: number; breaks: unknown[] } {
  const run = world.cli(['verify', '--json']);
  return JSON.parse(run.stdout) as { ok: boolean; verified: number; breaks: unknown[] };
}

describe('one repository, five checkouts, one Goal', () => {
  it('the main checkout, three worktrees and a clone with the same origin all resolve to one Goal', () => {
    // Control first: the clone's origin is the local path it was cloned from, which is never keyed
    // (docs/goals.md), so until its URL is the repository's it is a Goal of its own.
    const before = goalJson(clone2());
    expect(before).toMatchObject({ rule: 'common_dir', checkout: clone2() });
    expect(before.id).not.toBe(goal);

    setCloneOrigin();
    const seen = checkouts.map((cwd) => goalJson(cwd));
    for (const [i, shown] of seen.entries()) {
      expect(shown).toMatchObject({ id: goal, key: 'example.invalid/acme/app', rule: 'origin', checkout: checkouts[i], changedFrom: null });
    }
    // Five different checkouts, one id.
    expect(new Set(seen.map((shown) => shown.checkout)).size).toBe(5);
    expect(new Set(seen.map((shown) => shown.id))).toStrictEqual(new Set([goal]));
  });

  it('a Todo added in any checkout is listed in all five', () => {
    setCloneOrigin();
    const ids = checkouts.map((_, i) => `task-from-${i}`);
    checkouts.forEach((cwd, i) => addTodo(cwd, ids[i]!));
    for (const cwd of checkouts) expect(todoIds(cwd)).toStrictEqual([...ids].sort());
    // Even from a subdirectory of a worktree.
    const deep = join(checkouts[2]!, 'src', 'deep');
    mkdirSync(deep, { recursive: true });
    expect(todoIds(deep)).toStrictEqual([...ids].sort());
    // And a Todo id is unique per Goal, not per checkout: adding it again in another checkout is refused.
    const again = world.cli(['todo', 'add', 'Same id elsewhere', '--id', ids[0]!], { cwd: checkouts[3] });
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('already exists');
  });

  it('32 concurrent hooks over the five checkouts race for one Todo: one lease, 31 [lease_held] naming the winner’s checkout', async () => {
    setCloneOrigin();
    addTodo(checkouts[3]!, 'fix-login');
    const racers = Array.from({ length: 32 }, (_, i) => ({ session: `racer-${i}`, cwd: checkouts[i % 5]! }));
    const runs = await Promise.all(
      racers.map((racer, i) => world.cliAsync(['hook'], { input: promptIn(racer.cwd, racer.session, `turn-${i}`, 'work on #todo:fix-login') })),
    );
    expect(runs.map((run) => run.code)).toStrictEqual(Array(32).fill(0));
    for (const run of runs) expect(run.stderr).not.toMatch(/SQLITE_BUSY|locked|internal error/i);
    const contexts = runs.map((run) => contextOf(run.stdout) ?? '');
    const winners = contexts.flatMap((text, i) => (text.startsWith('Turnkeeper: Todo fix-login') ? [i] : []));
    const held = contexts.filter((text) => text.includes('[lease_held]'));
    expect(winners).toHaveLength(1);
    expect(held).toHaveLength(31);

    const winner = racers[winners[0]!]!;
    const leases = statusLeases();
    expect(leases).toHaveLength(1);
    expect(leases[0]).toMatchObject({ goal, todo: 'fix-login', owner: `codex:${winner.session}`, epoch: 1, status: 'active', checkout: winner.cwd });
    // Every loser is told who holds it and in which checkout, whichever checkout the loser ran in.
    for (const text of held) {
      expect(text).toContain(`codex:${winner.session}`);
      expect(text).toContain(`(epoch 1) in ${winner.cwd} until`);
    }
    // The losers ran in every checkout, so the hold crossed worktrees and clones.
    const loserCheckouts = new Set(racers.filter((_, i) => i !== winners[0]).map((racer) => racer.cwd));
    expect(loserCheckouts.size).toBe(5);
    expect(verify()).toMatchObject({ ok: true, breaks: [] });
  });

  it('a release in the main checkout fences the holder working in wt1', () => {
    setCloneOrigin();
    addTodo(world.repo, 'fix-login');
    const wt1 = checkouts[1]!;
    const claim = world.cli(['hook'], { input: promptIn(wt1, 'holder', 'turn-1', '#todo:fix-login') });
    expect(contextOf(claim.stdout)).toMatch(/^Turnkeeper: Todo fix-login · capture cap_[0-9a-f]{24} · epoch 1$/m);

    // Control: before the release the holder's write in wt1 is allowed.
    const allowed = world.cli(['hook'], { input: writeIn(wt1, 'holder') });
    expect(allowed.code).toBe(0);
    expect(isDenied(allowed.stdout), allowed.stdout).toBe(false);

    const release = world.cli(['release', 'fix-login', '--force', '--reason', 'x'], { cwd: world.repo });
    expect(release.code, release.stderr).toBe(0);
    expect(release.stdout).toContain('was codex:holder');

    const denied = world.cli(['hook'], { input: writeIn(wt1, 'holder') });
    expect(denied.code).toBe(0);
    expect(isDenied(denied.stdout), denied.stdout).toBe(true);
    expect(denied.stdout).toContain('[lease_fenced]');
    expect(denied.stdout).toContain('fix-login');
    // Only the evicted holder is fenced: a session that never held a lease writes on.
    expect(isDenied(world.cli(['hook'], { input: writeIn(wt1, 'bystander') }).stdout)).toBe(false);
  });
});

describe('control: another repository is another Goal', () => {
  it('two unrelated repositories (different origins) do not see each other’s Todos or leases', () => {
    const other = join(world.root, 'other');
    mkdirSync(other);
    git(other, 'init', '-q');
    writeFileSync(join(other, 'README.md'), 'other\n');
    git(other, 'remote', 'add', 'origin', 'https://example.invalid/acme/other.git');
    expect(goalJson(other).id).not.toBe(goal);

    addTodo(world.repo, 'fix-login');
    addTodo(other, 'other-task');
    expect(todoIds(world.repo)).toStrictEqual(['fix-login']);
    expect(todoIds(checkouts[1]!)).toStrictEqual(['fix-login']);
    expect(todoIds(other)).toStrictEqual(['other-task']);

    // The same Todo id may live in both, each its own: a lease in one does not hold the other.
    addTodo(other, 'fix-login');
    const here = world.cli(['hook'], { input: promptIn(checkouts[2]!, 'sess-a', 'turn-1', '#todo:fix-login') });
    expect(contextOf(here.stdout)).toContain('epoch 1');
    const there = world.cli(['hook'], { input: promptIn(other, 'sess-b', 'turn-1', '#todo:fix-login') });
    expect(contextOf(there.stdout)).toMatch(/^Turnkeeper: Todo fix-login · capture cap_[0-9a-f]{24} · epoch 1$/m);
    // Control: within the repository the same prompt from another session is held.
    const held = world.cli(['hook'], { input: promptIn(checkouts[3]!, 'sess-c', 'turn-1', '#todo:fix-login') });
    expect(contextOf(held.stdout)).toContain('[lease_held]');
    const leases = statusLeases();
    expect(leases.map((lease) => lease.goal).sort()).toStrictEqual([goal, goalJson(other).id].sort());
  });
});
