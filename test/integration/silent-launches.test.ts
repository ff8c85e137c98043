// Launches whose agent fired no hook (src/lifecycle/status.ts `silentLaunches`): the status bar's
// warning, the Captures view's mark and doctor's problem. A silent launch stops counting once a later
// launch of the same agent, or of the same Todo, fired its hooks; each case has its control.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FIRST_HOOK_DEADLINE_MS, silentLaunches } from '../../src/lifecycle/status';
import type { SqliteAuthority } from '../../src/lifecycle/open';
import { makeWorld, type World } from '../support/world';

let world: World;
let store: SqliteAuthority;
beforeEach(async () => {
  world = makeWorld('tk-silent');
  store = await world.store();
});
afterEach(() => {
  store.close();
  world.cleanup();
});

const T0 = Date.parse('2026-12-01T10:00:00Z');
/** Long after every launch's first-hook deadline. */
const LATER = T0 + 60 * 60_000;
let launches = 0;

/** A `turnkeeper start` of `todo` by `agent` at `at`, as the launcher commits it; returns its launch id. */
async function start(agent: string, todo: string, at: number): Promise<string> {
  const launch = `launch-${(launches += 1)}`;
  await store.appendReceipt({ kind: 'launch_committed', goal: world.goal, todo, detail: { start: true, launch, agent } }, at);
  return launch;
}
/** The launched agent's first hook (hook.ts recordLaunchHooked). */
async function hooked(launch: string, agent: string, todo: string, at: number): Promise<void> {
  await store.appendReceipt({ kind: 'launch_hooked', goal: world.goal, todo, owner: `${agent}:sess-${launch}`, detail: { launch, event: 'SessionStart' } }, at);
}
const silent = async (now = LATER) => (await silentLaunches(store, now)).map((launch) => `${launch.agent} ${launch.todo}`);

describe('a silent launch', () => {
  it('counts after the deadline while nothing later answers it (control: within the deadline it does not yet)', async () => {
    await start('codex', 'fix-login', T0);
    expect(await silent(T0 + FIRST_HOOK_DEADLINE_MS - 1)).toEqual([]);
    expect(await silent()).toEqual(['codex fix-login']);
  });

  it('stops counting once a later launch of the same agent fired its hooks (another Todo)', async () => {
    await start('codex', 'fix-login', T0);
    const later = await start('codex', 'write-docs', T0 + 120_000);
    // The later launch is silent too, for now: both count.
    expect(await silent()).toEqual(['codex fix-login', 'codex write-docs']);
    await hooked(later, 'codex', 'write-docs', T0 + 121_000);
    expect(await silent()).toEqual([]);
  });

  it('stops counting once a later launch of the same Todo fired its hooks (another agent)', async () => {
    await start('codex', 'fix-login', T0);
    await hooked(await start('claude', 'fix-login', T0 + 120_000), 'claude', 'fix-login', T0 + 121_000);
    expect(await silent()).toEqual([]);
  });

  it('control: an earlier launch that fired, or a later one of another agent and Todo, answers nothing', async () => {
    await hooked(await start('codex', 'write-docs', T0), 'codex', 'write-docs', T0 + 1000);
    await start('codex', 'fix-login', T0 + 120_000);
    await hooked(await start('gemini', 'other', T0 + 240_000), 'gemini', 'other', T0 + 241_000);
    expect(await silent()).toEqual(['codex fix-login']);
  });

  it('control: a later launch of the same agent that is silent as well answers nothing', async () => {
    await start('codex', 'fix-login', T0);
    await start('codex', 'fix-login', T0 + 120_000);
    expect(await silent()).toEqual(['codex fix-login', 'codex fix-login']);
  });
});
