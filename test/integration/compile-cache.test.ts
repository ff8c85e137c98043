// Contract §10 and §2 rule 1 for Node's compile cache, through the real dist/cli.js: the cache lives in
// a private directory under TURNKEEPER_HOME (never in a shared temporary directory another user can
// fill first), an unsafe cache directory is not used, and an off hook opens and creates nothing.
// The "other local user" is uid 65534 (tests run as root). strace shows every path the hook and its
// children touched: the strongest evidence, in tests of their own, skipped (and so seen) without strace.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI, contextOf, makeWorld, payload, type World } from '../support/world';

const OTHER = 65534;
const asRoot = process.geteuid?.() === 0;
const STRACE = ['/usr/bin/strace', '/bin/strace'].find((path) => existsSync(path));
const NEEDS_STRACE = STRACE ? '' : ' [skipped: strace is not installed]';

let world: World;
let shared: string;
let sharedTmp: string;
beforeEach(() => {
  world = makeWorld('cc');
  // A shared TMPDIR like /tmp: world-writable and sticky, reachable by the other user.
  shared = realpathSync(mkdtempSync(join(tmpdir(), 'cc-shared-')));
  chmodSync(shared, 0o755);
  sharedTmp = join(shared, 'tmp');
  mkdirSync(sharedTmp);
  chmodSync(sharedTmp, 0o1777);
});
afterEach(() => {
  world.cleanup();
  rmSync(shared, { recursive: true, force: true });
});

/** Every entry under `dir`, with owner and mode, so a before/after comparison sees any change. */
function listing(dir: string): string[] {
  if (!existsSync(dir)) return ['(missing)'];
  const out: string[] = [];
  const walk = (path: string, rel: string): void => {
    for (const name of readdirSync(path).sort()) {
      const stat = lstatSync(join(path, name));
      out.push(`${rel}${name} uid=${stat.uid} mode=${(stat.mode & 0o7777).toString(8)}${stat.isDirectory() ? '/' : ''}`);
      if (stat.isDirectory()) walk(join(path, name), `${rel}${name}/`);
    }
  };
  walk(dir, '');
  return out;
}

const filesUnder = (dir: string): number => listing(dir).filter((line) => !line.endsWith('/') && line !== '(missing)').length;

/** The real hook as its own process, with the world's env plus `env`; under strace (written to `trace`) when given. */
function hook(input: string | Buffer, env: Record<string, string | undefined> = {}, trace?: string) {
  const merged: Record<string, string> = { ...world.env, TMPDIR: sharedTmp };
  for (const [key, value] of Object.entries(env)) {
    if (value === undefined) delete merged[key];
    else merged[key] = value;
  }
  const argv = [process.execPath, CLI, 'hook'];
  if (trace && !STRACE) throw new Error('a traced hook needs strace: skip the test without it');
  const [bin, ...args] = trace ? [STRACE!, '-f', '-qq', '-e', 'trace=%file', '-o', trace, ...argv] : argv;
  const result = spawnSync(bin!, args, { input, env: merged, cwd: world.repo, encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr, error: result.error };
}

/**
 * `todo add` through the CLI, with a TMPDIR of its own and the compile cache off: only the hooks under
 * test see the shared TMPDIR and the cache directory. It does make TURNKEEPER_HOME private (0700), as
 * every command that opens the store does.
 */
function addTodo(id: string): void {
  const own = join(world.root, 'cli-tmp');
  mkdirSync(own, { recursive: true });
  expect(world.cli(['todo', 'add', `Title of ${id}`, '--id', id], { env: { TMPDIR: own, NODE_DISABLE_COMPILE_CACHE: '1' } }).code).toBe(0);
}
const claimInput = (session: string, todo: string) => payload.codexPrompt(world, session, 'turn-1', `do #todo:${todo}`);
const cacheDir = () => join(world.home, 'compile-cache');

describe.skipIf(!asRoot)('compile cache: never in a shared TMPDIR', () => {
  /** The other user plants the folder Node would use by default, open to everyone; our home is private. */
  function plantOthersCache(): void {
    execFileSync('setpriv', [
      '--reuid',
      String(OTHER),
      '--regid',
      String(OTHER),
      '--clear-groups',
      'mkdir',
      '-m',
      '0777',
      join(sharedTmp, 'node-compile-cache'),
    ]);
    expect(lstatSync(join(sharedTmp, 'node-compile-cache')).uid).toBe(OTHER);
    mkdirSync(world.home, { mode: 0o700 });
    addTodo('fix-login');
  }

  it('a TMPDIR/node-compile-cache another user created first is neither read nor written; the cache is a 0700 dir in TURNKEEPER_HOME', () => {
    plantOthersCache();
    const before = listing(sharedTmp);

    const result = hook(claimInput('sess-a', 'fix-login'));
    expect(result.code).toBe(0);
    expect(contextOf(result.stdout)).toContain('Turnkeeper: Todo fix-login · capture cap_');

    expect(listing(sharedTmp)).toEqual(before);
    // The cache is ours, private, and in use (entries were written for this runtime).
    const stat = lstatSync(cacheDir());
    expect(stat.isDirectory()).toBe(true);
    expect(stat.uid).toBe(process.geteuid!());
    expect(stat.mode & 0o7777).toBe(0o700);
    expect(filesUnder(cacheDir())).toBeGreaterThan(0);
  });

  it("control: Node's own default (enableCompileCache() with no directory) writes into the planted folder", () => {
    plantOthersCache();
    const before = listing(sharedTmp);
    const script = "require('node:module').enableCompileCache(); require(process.argv[1]);";
    const result = spawnSync(process.execPath, ['-e', script, join(CLI, '..', 'pg.js')], {
      env: { PATH: process.env.PATH, TMPDIR: sharedTmp },
      encoding: 'utf8',
    });
    expect(result.status, result.stderr).toBe(0);
    expect(listing(sharedTmp)).not.toEqual(before);
    expect(filesUnder(join(sharedTmp, 'node-compile-cache'))).toBeGreaterThan(0);
  });

  it.skipIf(!STRACE)(`under strace: no process of the hook (node, git, …) names the shared TMPDIR in any file system call${NEEDS_STRACE}`, () => {
    plantOthersCache();
    const trace = join(world.root, 'trace.txt');
    const result = hook(claimInput('sess-a', 'fix-login'), {}, trace);
    expect(result.code).toBe(0);
    expect(contextOf(result.stdout)).toContain('Turnkeeper: Todo fix-login · capture cap_');
    const lines = readFileSync(trace, 'utf8').split('\n');
    expect(lines.length).toBeGreaterThan(20);
    expect(lines.filter((line) => line.includes(sharedTmp))).toEqual([]);
    // Control: the trace does see the paths the hook uses (its own cache directory).
    expect(lines.some((line) => line.includes(cacheDir()))).toBe(true);
  });

  it('TURNKEEPER_HOME is never created for the cache, and no other directory is used instead', () => {
    const result = hook(payload.codex(world, 'SessionStart', 'sess-a', undefined, { source: 'startup' }));
    expect(result).toMatchObject({ code: 0, stdout: '' });
    expect(existsSync(world.home)).toBe(false);
    expect(listing(sharedTmp)).toEqual([]);
  });
});

describe.skipIf(!asRoot)('rule 1: an off hook opens and creates nothing', () => {
  // HOME, TURNKEEPER_HOME and TMPDIR exist and are empty (but for the `off` file); the hook may not
  // change any of them. Root ignores permission bits, so the evidence is listings and strace.
  const dirs = () => ({ HOME: join(world.root, 'userhome'), TURNKEEPER_HOME: world.home, TMPDIR: sharedTmp });
  const snapshot = () => Object.values(dirs()).map((dir) => [dir, listing(dir)]);
  beforeEach(() => {
    mkdirSync(dirs().HOME, { recursive: true });
    mkdirSync(world.home, { mode: 0o700 });
  });

  /** Paths under the three directories that a traced run touched, and whether it loaded the bundle. */
  function touched(trace: string): { paths: string[]; bundle: boolean } {
    const text = readFileSync(trace, 'utf8');
    const paths = [...text.matchAll(/"([^"]+)"/g)].map((m) => m[1]!).filter((path) => Object.values(dirs()).some((dir) => path.startsWith(dir)));
    return { paths: [...new Set(paths)], bundle: /(turnkeeper|hook)\.js"/.test(text) };
  }

  const cases: [string, Record<string, string>, () => void][] = [
    ['env TURNKEEPER=off', { TURNKEEPER: 'off' }, () => {}],
    ['a file named off in TURNKEEPER_HOME', {}, () => writeFileSync(join(world.home, 'off'), '')],
  ];
  /** 2 MiB of payload: the hook still reads stdin to its end, so the agent never gets EPIPE. */
  const bigInput = () => claimInput('sess-a', 'fix-login').replace('do #todo', `${'x'.repeat(2 * 1024 * 1024)} #todo`);

  for (const [name, env, setup] of cases) {
    it(`${name}: nothing printed, nothing created in HOME, TURNKEEPER_HOME or TMPDIR`, () => {
      setup();
      const before = snapshot();
      const result = hook(bigInput(), { ...dirs(), ...env });
      expect(result.error).toBeUndefined();
      expect(result).toMatchObject({ code: 0, stdout: '', stderr: '' });
      expect(snapshot()).toEqual(before);
      // Another command while off: it runs, but without creating the cache directory.
      const status = world.cli(['status'], { env: { ...dirs(), ...env } });
      expect(status.code).not.toBeNull();
      expect(snapshot()).toEqual(before);

      // Control: the same hook with Turnkeeper on creates the store and the cache.
      rmSync(join(world.home, 'off'), { force: true });
      const on = hook(claimInput('sess-a', 'fix-login'), dirs());
      expect(on.code).toBe(0);
      expect(contextOf(on.stdout)).toContain('[unknown_todo]');
      expect(snapshot()).not.toEqual(before);
      expect(existsSync(cacheDir())).toBe(true);
    });

    it.skipIf(!STRACE)(
      `${name}, under strace: the bundle is not even loaded, no path under the three directories touched but the off file${NEEDS_STRACE}`,
      () => {
        setup();
        const trace = join(world.root, 'trace.txt');
        const result = hook(bigInput(), { ...dirs(), ...env }, trace);
        expect(result).toMatchObject({ code: 0, stdout: '', stderr: '' });
        const seen = touched(trace);
        expect(seen.bundle).toBe(false);
        // At most the check for the `off` file itself.
        expect(seen.paths.filter((path) => path !== join(world.home, 'off'))).toEqual([]);

        // Control: with Turnkeeper on, the same trace sees the bundle loaded.
        rmSync(join(world.home, 'off'), { force: true });
        const on = hook(claimInput('sess-a', 'fix-login'), dirs(), trace);
        expect(on.code).toBe(0);
        expect(touched(trace).bundle).toBe(true);
      },
    );
  }
});

describe.skipIf(!asRoot)('an unsafe cache directory is not used; the hook still works', () => {
  const target = () => join(world.root, 'elsewhere');
  const cases: [string, () => string][] = [
    [
      'owned by another user',
      () => {
        mkdirSync(cacheDir(), { mode: 0o700 });
        chownSync(cacheDir(), OTHER, OTHER);
        return cacheDir();
      },
    ],
    [
      'mode 0777',
      () => {
        mkdirSync(cacheDir());
        chmodSync(cacheDir(), 0o777);
        return cacheDir();
      },
    ],
    [
      'a symlink (to a private directory of ours)',
      () => {
        mkdirSync(target(), { mode: 0o700 });
        symlinkSync(target(), cacheDir());
        return target();
      },
    ],
    [
      'inside a world-writable TURNKEEPER_HOME',
      () => {
        chmodSync(world.home, 0o777);
        mkdirSync(cacheDir(), { mode: 0o700 });
        return cacheDir();
      },
    ],
  ];
  for (const [name, plant] of cases) {
    it(`${name}`, () => {
      mkdirSync(world.home, { mode: 0o700 });
      // The Todo first: opening the store narrows a world-writable TURNKEEPER_HOME to 0700.
      addTodo('fix-login');
      const watched = plant();
      const before = listing(watched);
      const result = hook(claimInput('sess-a', 'fix-login'));
      expect(result.code).toBe(0);
      expect(contextOf(result.stdout)).toContain('Turnkeeper: Todo fix-login · capture cap_');
      // Nothing compiled was written to (or through) the unsafe directory, and no fallback was used.
      expect(listing(watched)).toEqual(before);
      expect(filesUnder(watched)).toBe(0);
      expect(listing(sharedTmp)).toEqual([]);
    });
  }

  it('a relative TURNKEEPER_HOME (a repository .env can set one) is under the checkout: its cache is not used', () => {
    // What a clone under umask 077 gives: the repository's own 0700 folder, owned by us.
    const shipped = join(world.repo, '.tk', 'compile-cache');
    mkdirSync(shipped, { recursive: true, mode: 0o700 });
    const result = hook(payload.codex(world, 'SessionStart', 'sess-a', undefined, { source: 'startup' }), { TURNKEEPER_HOME: '.tk' });
    expect(result).toMatchObject({ code: 0, stdout: '' });
    expect(filesUnder(shipped)).toBe(0);
    // Control: the same folder named by its absolute path is a private cache of ours, and used.
    hook(payload.codex(world, 'SessionStart', 'sess-a', undefined, { source: 'startup' }), { TURNKEEPER_HOME: join(world.repo, '.tk') });
    expect(filesUnder(shipped)).toBeGreaterThan(0);
  });

  it('a relative TURNKEEPER_HOME counts as unset: a config.json the repository ships there chooses nothing', () => {
    // The repository's `.tk/config.json` names a store of its choosing; read from a relative home, the
    // claim's database would be created inside the checkout.
    const planted = join(world.repo, '.tk');
    mkdirSync(planted, { recursive: true });
    writeFileSync(join(planted, 'config.json'), JSON.stringify({ store: 'sqlite:planted.db' }));
    const added = world.cli(['todo', 'add', 'Relative home', '--id', 'relative-home'], { env: { TURNKEEPER_HOME: '.tk' } });
    expect(added.code, added.stderr).toBe(0);
    expect(readdirSync(planted)).toEqual(['config.json']);
    // The default home under HOME holds the store instead.
    expect(existsSync(join(world.root, 'userhome', '.turnkeeper', 'turnkeeper.db'))).toBe(true);
  });

  it('control: a private 0700 cache directory of ours is used', () => {
    mkdirSync(world.home, { mode: 0o700 });
    mkdirSync(cacheDir(), { mode: 0o700 });
    addTodo('fix-login');
    const result = hook(claimInput('sess-a', 'fix-login'));
    expect(contextOf(result.stdout)).toContain('Turnkeeper: Todo fix-login · capture cap_');
    expect(filesUnder(cacheDir())).toBeGreaterThan(0);
  });

  it('NODE_DISABLE_COMPILE_CACHE turns it off without creating the directory', () => {
    mkdirSync(world.home, { mode: 0o700 });
    const result = hook(payload.codex(world, 'SessionStart', 'sess-a', undefined, { source: 'startup' }), { NODE_DISABLE_COMPILE_CACHE: '1' });
    expect(result).toMatchObject({ code: 0, stdout: '' });
    expect(existsSync(cacheDir())).toBe(false);
    expect(listing(sharedTmp)).toEqual([]);
  });
});
