// Issue 19 at the command line: `todo list` shows open and blocked Todos and the newest done ones
// (`--limit <n|all>`), and `status` the held captures and the newest others (`--limit <n>`, `--all`),
// each saying when it left older ones out; what is shown is printed as before.
import { afterAll, describe, expect, it } from 'vitest';
import { buildCapture } from '../../src/core/capture';
import { digestText } from '../../src/core/canonical';
import { makeWorld } from '../support/world';

const world = makeWorld('tk-live-cli');
afterAll(() => world.cleanup());

describe('todo list and status page what is not live', () => {
  it('lists open Todos and the newest done ones, says older done ones were left out, and --limit all lists them all', async () => {
    const store = await world.store();
    const T = Date.now() - 600_000;
    for (let i = 0; i < 5; i += 1) await store.addTodo({ goal: world.goal, id: `done-${i}`, title: `Done ${i}`, body: '' }, T + i);
    for (let i = 0; i < 5; i += 1) await store.setTodoStatus(world.goal, `done-${i}`, 'done', T + 100 + i);
    await store.addTodo({ goal: world.goal, id: 'open-1', title: 'Open one', body: '' }, T + 50);
    for (let i = 0; i < 3; i += 1) {
      const session = `s${i}`;
      const capture = buildCapture({ goal: world.goal, todo: `done-${i}`, agent: 'codex', session, turn: `turn-${i}` });
      await store.setTodoStatus(world.goal, `done-${i}`, 'open', T + 200 + i);
      const claimed = await store.claim(
        {
          capture,
          cwd: world.repo,
          binding: 'prompt',
          owner: `codex:${session}`,
          preconditions: { gitHead: 'a'.repeat(40), statusDigest: digestText('') },
          ttlSeconds: 3600,
        },
        T + 300 + i * 10,
      );
      expect(claimed.kind).toBe('acquired');
      if (i < 2)
        await store.setTodoStatus(world.goal, `done-${i}`, 'done', T + 301 + i * 10, {
          by: `codex:${session}`,
          identifiedBy: 'agent_environment',
          force: false,
        });
    }
    store.close();

    const all = world.cli(['todo', 'list', '--limit', 'all']);
    expect(
      all.stdout
        .split('\n')
        .filter(Boolean)
        .map((line) => line.split(/\s+/)[1]),
    ).toStrictEqual(['done-0', 'done-1', 'done-2', 'done-3', 'done-4', 'open-1']);
    expect(all.stderr).toBe('');
    const two = world.cli(['todo', 'list', '--limit', '2']);
    // done-2 is open again (claimed): open ones are all listed, done ones the newest two (done-3, done-4), in the same order.
    expect(two.stdout.split('\n').filter(Boolean)).toStrictEqual(all.stdout.split('\n').filter((line) => line && !/done-0|done-1/.test(line)));
    expect(two.stderr).toContain('older done Todos not shown (the newest 2 are): turnkeeper todo list --limit all');
    expect(JSON.parse(world.cli(['todo', 'list', '--json', '--limit', '2']).stdout)).toHaveLength(4);
    expect(world.cli(['todo', 'list', '--limit', '-1']).code).toBe(2);

    // status: the held capture (done-2's) whatever the page, and the newest others.
    const held = world.cli(['status', '--limit', '0']).stdout;
    expect(held).toMatch(/cap_\w+ +ready +done-2/);
    expect(held).not.toMatch(/released/);
    expect(held).toContain('… older captures not shown (the newest 0 and every held one are): turnkeeper status --all, or --limit <n>');
    const every = world.cli(['status', '--all']).stdout;
    expect(every.match(/cap_\w+/g)).toHaveLength(3 + 1); // three capture lines, and the one active lease's
    expect(every).not.toContain('older captures not shown');
    const json = JSON.parse(world.cli(['status', '--json', '--limit', '1']).stdout) as { captures: { todo: string }[]; olderCaptures: boolean };
    expect(json.captures.map((c) => c.todo)).toStrictEqual(['done-2']);
    expect(json.olderCaptures).toBe(true);
    expect(world.cli(['status', '--all', '--limit', '3']).code).toBe(2);
  });
});
