// A TURNKEEPER_HOME another local user owns (a world-writable /tmp/tk they made first) is refused by
// the store factory, `hooks install` and doctor, with the fix named: its bin/turnkeeper is what every
// agent's hook runs and its config.json selects the store, so using it would run their code as this
// user. Before, `hooks install` wrote that home's shim into the agent's config and every command used
// it silently. Control: the same commands in a home of one's own install and claim.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { contextOf, makeWorld, payload, type World } from '../support/world';

let world: World;
let foreign: string;
beforeEach(() => {
  world = makeWorld('home-ownership');
  // Root can give a folder to another user; anyone else finds one root owns (the test's tmp root's parent).
  foreign = join(world.root, 'their-home');
  mkdirSync(foreign);
  chmodSync(foreign, 0o777);
  if (process.geteuid?.() === 0) chownSync(foreign, 65534, 65534);
  else foreign = '/tmp';
});
afterEach(() => world.cleanup());

describe('a TURNKEEPER_HOME owned by another user', () => {
  it('hooks install, todo add, a hook and doctor refuse it and name the fix; nothing is written there', () => {
    const env = { TURNKEEPER_HOME: foreign };
    const install = world.cli(['hooks', 'install', '--agent', 'codex'], { env });
    expect(install.code).not.toBe(0);
    expect(install.stderr).toMatch(/is owned by uid \d+, not by this user .*use a home of your own.*nothing was installed/);
    expect(existsSync(join(world.env.HOME!, '.codex', 'hooks.json'))).toBe(false);

    const add = world.cli(['todo', 'add', 'Fix login', '--id', 'fix-login'], { env });
    expect(add.code).not.toBe(0);
    expect(add.stderr).toContain('store unavailable: TURNKEEPER_HOME');

    // The hook fails open: the prompt goes on, told why, and nothing is claimed or written.
    const hook = world.cli(['hook'], { input: payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login'), env });
    expect(hook.code).toBe(0);
    expect(contextOf(hook.stdout)).toContain('[store_unavailable]');
    expect(contextOf(hook.stdout)).toContain('is owned by uid');

    const doctor = world.cli(['doctor'], { env });
    expect(doctor.stdout).toMatch(/problem: store: store unavailable: TURNKEEPER_HOME .* is owned by uid/);
    if (foreign !== '/tmp') expect(readdirSync(foreign)).toEqual([]);
  });

  it('control: a home of ones own installs the shim and claims', () => {
    expect(world.cli(['hooks', 'install', '--agent', 'codex']).code).toBe(0);
    expect(existsSync(join(world.home, 'bin', 'turnkeeper'))).toBe(true);
    expect(world.cli(['todo', 'add', 'Fix login', '--id', 'fix-login']).code).toBe(0);
    expect(contextOf(world.cli(['hook'], { input: payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login') }).stdout)).toMatch(/· epoch 1$/m);
  });
});
