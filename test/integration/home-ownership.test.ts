// A TURNKEEPER_HOME another local user owns (a world-writable /tmp/tk they made first) is refused by
// the store factory, `hooks install` and doctor, with the fix named: its bin/turnkeeper is what every
// agent's hook runs and its config.json selects the store, so using it would run their code as this
// user. Before, `hooks install` wrote that home's shim into the agent's config and every command used
// it silently. Control: the same commands in a home of one's own install and claim. The same holds
// for what is in a home of one's own (bin/, the shim, config.json, keys, the database): owned by
// another user, writable by others, or a symlink to another user's file. Another uid exists only for
// root (CI runs as root): those cases chown to nobody (65534) and are skipped for anyone else.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
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

const root = process.geteuid?.() === 0;
const me = () => ({ uid: process.geteuid!(), gid: process.getegid!() });

/** Every door that uses the home refuses, naming `why`; nothing is claimed. */
function expectRefused(why: RegExp, install = true): void {
  const add = world.cli(['todo', 'add', 'Other', '--id', 'other']);
  expect(add.code).not.toBe(0);
  expect(add.stderr).toMatch(why);
  const hook = world.cli(['hook'], { input: payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login') });
  expect(hook.code).toBe(0);
  expect(contextOf(hook.stdout)).toContain('[store_unavailable]');
  expect(contextOf(hook.stdout)).toMatch(why);
  expect(world.cli(['doctor']).stdout).toMatch(new RegExp(`problem: store: store unavailable: .*${why.source}`));
  if (install) {
    const again = world.cli(['hooks', 'install', '--agent', 'codex']);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toMatch(why);
    expect(again.stderr).toContain('nothing was installed');
  }
}

/** The control: the same home with `path` given back to this user (or narrowed) installs and claims. */
function expectUsable(): void {
  expect(world.cli(['hooks', 'install', '--agent', 'codex']).code).toBe(0);
  const hook = world.cli(['hook'], { input: payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login') });
  expect(contextOf(hook.stdout)).toMatch(/· epoch 1$/m);
}

describe('what is in a home of ones own', () => {
  beforeEach(() => {
    // A home in use: the shim installed, a Todo in the database.
    expect(world.cli(['hooks', 'install', '--agent', 'codex']).code).toBe(0);
    expect(world.cli(['todo', 'add', 'Fix login', '--id', 'fix-login']).code).toBe(0);
  });

  it.skipIf(!root).each([
    ['bin', true],
    [join('bin', 'turnkeeper'), true],
    ['config.json', true],
    [join('keys', 'signing.key'), true],
    // The database is the store factory's to judge: `hooks install` does not open it.
    ['turnkeeper.db', false],
  ])('%s owned by another user is refused, with the fix named', (entry, install) => {
    const path = join(world.home, entry);
    if (entry === 'config.json') writeFileSync(path, '{}\n', { mode: 0o600 });
    if (entry.startsWith('keys')) {
      mkdirSync(join(world.home, 'keys'), { recursive: true, mode: 0o700 });
      writeFileSync(path, 'not a key\n', { mode: 0o600 });
    }
    chownSync(path, 65534, 65534);
    expectRefused(new RegExp(`${path.replace(/[.]/g, '\\.')} is owned by uid 65534, not by this user .*remove it`), install);
    chownSync(path, me().uid, me().gid);
    expectUsable();
  });

  it.each([
    ['config.json', true],
    ['turnkeeper.db', false],
  ])('%s that others may write is refused: its bytes may be theirs', (entry, install) => {
    const path = join(world.home, entry);
    if (entry === 'config.json') writeFileSync(path, '{}\n', { mode: 0o600 });
    chmodSync(path, 0o666);
    expectRefused(/is writable by its group or by others \(mode 666\).*chmod go-w/, install);
    chmodSync(path, 0o600);
    expectUsable();
  });

  it.skipIf(!root)('a config.json that is a symlink to another users file is refused; to ones own, it is obeyed', () => {
    // Their file selects a store of their choosing (here a database beside it).
    const theirs = join(world.root, 'their-config.json');
    writeFileSync(theirs, JSON.stringify({ store: `sqlite:${join(world.root, 'chosen.db')}` }), { mode: 0o644 });
    chownSync(theirs, 65534, 65534);
    symlinkSync(theirs, join(world.home, 'config.json'));
    expectRefused(/config\.json is a symlink to a file owned by uid 65534/);
    expect(existsSync(join(world.root, 'chosen.db'))).toBe(false);
    // The same file as ours: the symlink is followed and what it says is done (so refusing it mattered).
    chownSync(theirs, me().uid, me().gid);
    expect(world.cli(['todo', 'add', 'Other', '--id', 'other']).code).toBe(0);
    expect(existsSync(join(world.root, 'chosen.db'))).toBe(true);
  });

  it('a config.json that is a symlink to nothing is refused: whoever creates the target would choose the store', () => {
    symlinkSync(join(world.root, 'not-yet.json'), join(world.home, 'config.json'));
    expectRefused(/config\.json is a symlink to nothing/);
  });

  it('the home and bin/ of ones own, open to others, are narrowed to 0700 and used', () => {
    chmodSync(world.home, 0o777);
    chmodSync(join(world.home, 'bin'), 0o777);
    // A read-only command narrows them too: the checks after it would otherwise race new arrivals.
    expect(world.cli(['doctor']).stdout).not.toMatch(/problem: store/);
    expect(statSync(world.home).mode & 0o777).toBe(0o700);
    expect(statSync(join(world.home, 'bin')).mode & 0o777).toBe(0o700);
    expectUsable();
  });
});
