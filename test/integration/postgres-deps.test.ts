// Issue 20 item 5 on a team server, two machines at once: each writes one half of a dependency cycle
// in its own connection. The cycle check walks the graph in the write transaction, locking each Todo
// it visits (port.ts `dependenciesOf`), so the two transactions meet on a row: one waits for the other
// and then sees its edge, or a deadlock retries one. Whatever the interleaving, one half is refused.
// The control shows the database alone would take both halves; and with the walk's locks taken out
// (the FOR SHARE of dependenciesOf and the FOR UPDATE of each new dependency's row) this test let a
// cycle through within a few rounds when it was written (round 3 of 12).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { initializeStore, openAuthority } from '../../src/ledger/open';
import { TodoDependencyError, type Authority } from '../../src/store/authority';
import { pgEnv, usePostgres } from '../support/postgres';

const server = usePostgres({ beforeAll, afterAll });
const GOAL = 'goal_0123456789abcdef01234567';
const T0 = 1_800_000_000_000;
const ROUNDS = 12;

let url: string;
let machines: Authority[] = [];
beforeAll(async () => {
  await server().createDatabase('deps');
  url = server().url('deps');
  await initializeStore(pgEnv(url));
  // Two authorities, as two machines open them: two connections, two processes' worth of state.
  machines = [(await openAuthority(pgEnv(url), { create: false }))!, (await openAuthority(pgEnv(url), { create: false }))!];
}, 120_000);
afterAll(() => {
  for (const machine of machines) machine.close();
});

describe('two machines writing the two halves of a cycle at once', () => {
  it(`refuses one half every time (${ROUNDS} rounds), with a typed error; the chain verifies`, async () => {
    const [a, b] = machines as [Authority, Authority];
    for (let round = 0; round < ROUNDS; round += 1) {
      const [left, right, middle] = [`left-${round}`, `right-${round}`, `middle-${round}`];
      for (const id of [left, right, middle]) await a.addTodo({ goal: GOAL, id, title: id, body: '' }, T0 + round);
      // Odd rounds make it a three-Todo cycle: middle waits on right already, so left -> middle -> right -> left.
      if (round % 2 === 1) await a.changeDependencies(GOAL, middle, { add: [right] }, T0 + round);
      const results = await Promise.allSettled([
        a.changeDependencies(GOAL, left, { add: [round % 2 === 1 ? middle : right] }, T0 + round),
        b.changeDependencies(GOAL, right, { add: [left] }, T0 + round),
      ]);
      expect(
        results.map((result) => result.status),
        `round ${round}`,
      ).toContain('fulfilled');
      const refused = results.filter((result) => result.status === 'rejected');
      expect(refused, `round ${round}`).toHaveLength(1);
      expect(refused[0]!.reason).toBeInstanceOf(TodoDependencyError);
      expect((refused[0]!.reason as TodoDependencyError).why).toBe('cycle');
    }
    const edges = await a.dependenciesOfLive(GOAL);
    expect(edges).toHaveLength(ROUNDS + ROUNDS / 2);
    expect((await b.verifyChain()).ok).toBe(true);
  });

  it('control: two transactions inserting the two halves without the check both commit (the database alone does not refuse a cycle)', async () => {
    const [a] = machines as [Authority];
    await a.addTodo({ goal: GOAL, id: 'raw-left', title: 'raw', body: '' }, T0);
    await a.addTodo({ goal: GOAL, id: 'raw-right', title: 'raw', body: '' }, T0);
    const clients = [new pg.Client({ connectionString: url }), new pg.Client({ connectionString: url })] as const;
    try {
      for (const client of clients) await client.connect();
      for (const client of clients) await client.query('BEGIN');
      await clients[0].query(`INSERT INTO turnkeeper.todo_deps VALUES ($1, 'raw-left', 'raw-right', 0)`, [GOAL]);
      await clients[1].query(`INSERT INTO turnkeeper.todo_deps VALUES ($1, 'raw-right', 'raw-left', 0)`, [GOAL]);
      for (const client of clients) await client.query('COMMIT');
    } finally {
      for (const client of clients) await client.end().catch(() => undefined);
    }
    const raw = (await a.dependenciesOfLive(GOAL)).filter((edge) => edge.todo.startsWith('raw-'));
    expect(raw.map((edge) => `${edge.todo}>${edge.dependency}`)).toStrictEqual(['raw-left>raw-right', 'raw-right>raw-left']);
    // And what such a cycle leaves is undone by dropping an edge.
    expect((await a.changeDependencies(GOAL, 'raw-left', { remove: ['raw-right'] }, T0))?.removed).toStrictEqual(['raw-right']);
  });
});
