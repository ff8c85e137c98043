// Property (spec §10): any sequence of claims, releases, clock steps (forward and back), renewals and
// retries of the same Turn from other directories or through another binding never yields two active
// holders, never revives a released capture, never fences the current holder, and keeps epochs gap-free.
// The real hook runs in-process against a real SQLite store, with an injected clock.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { runHook } from '../../src/hook/hook';
import { openSqliteAuthority } from '../../src/ledger/open';
import { makeWorld, parseHookStdout, payload, type World } from '../support/world';

const TODOS = ['task-a', 'task-b'] as const;
// Few sessions, Turns and Todos: the bad interleavings (claim, release, retry of the same Turn; holder
// of one Todo after a clock step back) need the same names to come back often.
const SESSIONS = ['s1', 's2'] as const;
const HOUR = 60 * 60 * 1000;

const session = fc.constantFrom(...SESSIONS);
const todo = fc.constantFrom(...TODOS);
// The fencing property needs a holder whose newest lease is not its latest by wall clock: a claim, the
// clock stepped back, that lease released, a claim of the other Todo by the same session, then a
// write tool. So clock steps go back three times in four, and a prompt is often followed at once by a
// write tool of the same session (the check runs right where a new lease was just taken).
const action = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      type: fc.constant('prompt' as const),
      session,
      turn: fc.nat(1),
      todo,
      subdirectory: fc.boolean(),
      viaEnv: fc.boolean(),
      thenWrite: fc.boolean(),
    }),
  },
  { weight: 2, arbitrary: fc.record({ type: fc.constant('release' as const), todo, byHolder: fc.boolean() }) },
  {
    weight: 2,
    arbitrary: fc.record({
      type: fc.constant('clock' as const),
      delta: fc.oneof({ weight: 3, arbitrary: fc.integer({ min: -48 * HOUR, max: -1 }) }, { weight: 1, arbitrary: fc.integer({ min: 0, max: 48 * HOUR }) }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ type: fc.constant('write_tool' as const), session }) },
  { weight: 1, arbitrary: fc.record({ type: fc.constant('stop' as const), session }) },
);

let world: World;
beforeAll(() => {
  world = makeWorld('leaseprops');
  mkdirSync(join(world.repo, 'sub', 'deeper'), { recursive: true });
});
afterAll(() => world.cleanup());

describe('lease properties over real hooks', () => {
  it('never two holders, never a revived capture, never a fenced holder, epochs without gaps', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(action, { minLength: 1, maxLength: 25 }), async (actions) => {
        // A fresh store per run, in the same repository.
        const db = join(world.root, `run-${run++}.db`);
        const env = { ...world.env, TURNKEEPER_DB: db };
        const store = (await openSqliteAuthority({ path: db, create: true }))!;
        try {
          for (const id of TODOS) await store.addTodo({ goal: world.goal, id, title: id, body: '' }, 0);
          let now = 2_000_000_000_000;
          const everReleased = new Set<string>();
          const hook = (input: string, extra: Record<string, string> = {}) =>
            runHook(input, { env: { ...env, ...extra }, now: () => now, openStore: () => Promise.resolve(store) });

          /** A write tool of `session`: denied only if it holds no active lease (the holder is never fenced). */
          const writeTool = async (session: string) => {
            const result = await hook(payload.codex(world, 'PreToolUse', session, 'turn-x', { tool_name: 'apply_patch', tool_input: { command: 'x' } }));
            const holds = (await store.listLeases()).some((l) => l.owner === `codex:${session}` && l.status === 'active');
            const denied = JSON.stringify(parseHookStdout(result.stdout) ?? {}).includes('"deny"');
            // The current holder is never fenced, whatever the clock did.
            if (holds) expect(denied, `codex:${session} holds a lease and its write tool was denied`).toBe(false);
          };

          for (const step of actions) {
            switch (step.type) {
              case 'prompt': {
                const input = JSON.parse(payload.codexPrompt(world, step.session, `turn-${step.turn}`, step.viaEnv ? 'go on' : `#todo:${step.todo}`)) as Record<
                  string,
                  unknown
                >;
                if (step.subdirectory) input.cwd = join(world.repo, 'sub', 'deeper');
                const result = await hook(JSON.stringify(input), step.viaEnv ? { TURNKEEPER_TODO: step.todo } : {});
                expect(result.stderr.join('\n')).not.toContain('internal error');
                if (step.thenWrite) await writeTool(step.session);
                break;
              }
              case 'release': {
                const active = (await store.listLeases()).find((l) => l.todo === step.todo && l.status === 'active');
                if (!active) break;
                const request = step.byHolder
                  ? { goal: world.goal, todo: step.todo, by: active.owner, identifiedBy: 'agent_environment' as const, force: false }
                  : { goal: world.goal, todo: step.todo, identifiedBy: 'force' as const, force: true, reason: 'property' };
                expect((await store.release(request, now)).kind).toBe('released');
                break;
              }
              case 'clock':
                now += step.delta;
                break;
              case 'write_tool':
                await writeTool(step.session);
                break;
              case 'stop':
                await hook(payload.codex(world, 'Stop', step.session, 'turn-x'));
                break;
            }

            const leases = await store.listLeases();
            for (const todo of TODOS) {
              const ofTodo = leases.filter((l) => l.todo === todo);
              expect(ofTodo.filter((l) => l.status === 'active').length).toBeLessThanOrEqual(1);
              // Epochs are exactly 1..n: no gap, no reuse, whatever the clock did.
              expect(ofTodo.map((l) => l.epoch).sort((a, b) => a - b)).toStrictEqual(ofTodo.map((_, i) => i + 1));
            }
            // Released captures first, so a capture released and active again within one step is seen.
            for (const lease of leases) if (lease.status === 'released') everReleased.add(lease.capture);
            for (const lease of leases) {
              if (lease.status !== 'released') expect(everReleased.has(lease.capture), `capture ${lease.capture} came back`).toBe(false);
            }
            // One capture per Turn and Todo, whatever directory or binding the retries came through.
            const captures = await store.listCaptures();
            const turns = captures.map((c) => `${c.session}/${c.turn}/${c.todo}`);
            expect(new Set(turns).size).toBe(turns.length);
          }
          expect((await store.verifyChain()).ok).toBe(true);
        } finally {
          store.close();
        }
      }),
      // 200 runs: with the fencing bug back (latestLeaseOfOwner in wall-clock order), seeds 1-16 all
      // failed within 71 (commit fcebd4a; rerun by putting the wall-clock order back and setting the seed).
      { numRuns: 200 },
    );
  });
});
