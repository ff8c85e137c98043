// No git command a claim runs may start a program that the checkout (its config, attributes, hooks,
// files) or the agent's environment names (spec §10, src/checkout/workspace.ts): a sandboxed agent
// can often write its checkout, and the hook runs outside the sandbox. Each door below is planted
// with a program that creates a marker file; a real claim through the built hook must leave no
// marker, and the same git with the same setup, run plainly, must create it (else the test would
// prove nothing).
//
// Most doors open when `git status` has to look at a file's content, which it does when the file's
// stat no longer matches the index entry (or the entry is racily clean). Instead of racing the clock,
// `unsettle` gives the file a new mtime with the same content and size: deterministic, and git must
// hash it, through its filter, to learn it is unchanged. Turnkeeper's status never writes the index
// (--no-optional-locks), so the file is still unsettled when the plain git runs after it.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { digestText } from '../../src/core/canonical';
import { preconditionsOf } from '../../src/checkout/workspace';
import { contextOf, makeWorld, payload, type World } from '../support/world';

let world: World;
let marker: string;
let program: string;
beforeEach(() => {
  world = makeWorld('git-safety');
  marker = join(world.root, 'marker');
  // Outside the checkout: the door is the config naming it, not where it lives. It passes its input
  // through, so as a filter it changes nothing and as a pager it prints nothing to the test.
  program = join(world.root, 'planted.sh');
  writeFileSync(program, `#!/bin/sh\ntouch '${marker}'\ncat\n`);
  chmodSync(program, 0o755);
});
afterEach(() => world.cleanup());

const STATUS = ['status', '--porcelain=v1', '-z', '--untracked-files=all'];

/** Plain git in `cwd`, as a person (or the agent) runs it: the world's environment plus `env`. */
function plainGit(cwd: string, args: string[], env: Record<string, string> = {}) {
  return spawnSync('git', args, { cwd, env: { ...world.env, ...env }, encoding: 'utf8' });
}

function commit(repo: string, files: Record<string, string>): void {
  for (const [name, text] of Object.entries(files)) writeFileSync(join(repo, name), text);
  execFileSync('git', ['-C', repo, 'add', '.']);
  execFileSync('git', ['-C', repo, '-c', 'user.email=t@example.invalid', '-c', 'user.name=t', 'commit', '-qm', 'more']);
}

let tick = 0;
/** A new mtime, same content: the index entry no longer matches the file's stat. */
function unsettle(file: string): void {
  tick += 1;
  const when = new Date(Date.UTC(2001, 0, 1, 0, 0, tick));
  utimesSync(file, when, when);
}

/** A real claim through the built hook; returns the status digest its capture stored. */
async function claim(env: Record<string, string> = {}): Promise<string | null> {
  expect(world.cli(['todo', 'add', 'Fix login', '--id', 'fix-login']).code).toBe(0);
  const hook = world.cli(['hook'], { input: payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login'), env });
  expect(hook.code).toBe(0);
  expect(contextOf(hook.stdout)).toMatch(/· epoch 1$/m);
  const store = await world.store();
  try {
    const [capture] = await store.listCaptures();
    const ready = await store.readReady(capture!.id);
    return (JSON.parse(ready!.canonical) as { preconditions: { statusDigest: string | null } }).preconditions.statusDigest;
  } finally {
    store.close();
  }
}

describe('a claim runs no program the checkout names', () => {
  it.each([
    ['clean', '* filter=x\n', { 'filter.x.clean': 'PROGRAM' }],
    // `required` would fail the status outright if the disabled driver counted as failing.
    ['process', '* filter=x\n', { 'filter.x.process': 'PROGRAM', 'filter.x.required': 'true' }],
    // A driver name with dots: git takes the subsection from the first to the last dot.
    ['clean, a dotted name', '* filter=we.i.rd\n', { 'filter.we.i.rd.clean': 'PROGRAM' }],
  ])('a filter driver (%s) that the committed .gitattributes names and .git/config defines', async (_door, attributes, config) => {
    commit(world.repo, { '.gitattributes': attributes });
    for (const [key, value] of Object.entries(config)) execFileSync('git', ['-C', world.repo, 'config', key, value.replace('PROGRAM', program)]);
    unsettle(join(world.repo, 'README.md'));
    const digest = await claim();
    expect(existsSync(marker)).toBe(false);
    const plain = plainGit(world.repo, STATUS);
    expect(existsSync(marker)).toBe(true);
    // The filter passes content through: with it or without, the status reads the same.
    expect(digest).toBe(digestText(plain.stdout));
  });

  it('a filter driver whose name holds `=`, which no -c option can name: the status is not run', async () => {
    commit(world.repo, { '.gitattributes': '* filter=we=ird\n' });
    execFileSync('git', ['-C', world.repo, 'config', 'filter.we=ird.clean', program]);
    unsettle(join(world.repo, 'README.md'));
    // The claim is made; only its status digest is missing.
    expect(await claim()).toBeNull();
    expect(existsSync(marker)).toBe(false);
    plainGit(world.repo, STATUS);
    expect(existsSync(marker)).toBe(true);
  });

  it('core.fsmonitor in .git/config', async () => {
    execFileSync('git', ['-C', world.repo, 'config', 'core.fsmonitor', program]);
    await claim();
    expect(existsSync(marker)).toBe(false);
    plainGit(world.repo, STATUS);
    expect(existsSync(marker)).toBe(true);
  });

  // git status writes the refreshed index when it may, and every index write runs post-index-change.
  it.each(['core.hooksPath', '.git/hooks'])('a post-index-change hook (%s)', async (where) => {
    const hooks = where === '.git/hooks' ? join(world.repo, '.git', 'hooks') : join(world.root, 'hooks');
    mkdirSync(hooks, { recursive: true });
    writeFileSync(join(hooks, 'post-index-change'), `#!/bin/sh\ntouch '${marker}'\n`);
    chmodSync(join(hooks, 'post-index-change'), 0o755);
    if (where === 'core.hooksPath') execFileSync('git', ['-C', world.repo, 'config', 'core.hooksPath', hooks]);
    unsettle(join(world.repo, 'README.md'));
    await claim();
    expect(existsSync(marker)).toBe(false);
    plainGit(world.repo, STATUS);
    expect(existsSync(marker)).toBe(true);
  });

  it('a pager (core.pager with pager.status, and GIT_PAGER in the agent environment)', async () => {
    execFileSync('git', ['-C', world.repo, 'config', 'core.pager', program]);
    execFileSync('git', ['-C', world.repo, 'config', 'pager.status', 'true']);
    await claim({ GIT_PAGER: program, PAGER: program });
    expect(existsSync(marker)).toBe(false);
    // git pages only onto a terminal: `script` gives the same command one.
    const script = spawnSync('script', ['-qec', `git ${STATUS.join(' ')}`, '/dev/null'], {
      cwd: world.repo,
      env: { ...world.env, GIT_PAGER: program },
      stdio: ['ignore', 'ignore', 'ignore'],
    });
    expect(script.status).toBe(0);
    expect(existsSync(marker)).toBe(true);
  });

  it('GIT_CONFIG_PARAMETERS in the agent environment naming a filter the committed .gitattributes uses', async () => {
    commit(world.repo, { '.gitattributes': '* filter=envx\n' });
    const env = { GIT_CONFIG_PARAMETERS: `'filter.envx.clean'='${program}'` };
    unsettle(join(world.repo, 'README.md'));
    await claim(env);
    expect(existsSync(marker)).toBe(false);
    plainGit(world.repo, STATUS, env);
    expect(existsSync(marker)).toBe(true);
  });

  it("a submodule's own config naming a filter its .gitattributes uses", async () => {
    const sub = join(world.root, 'sub');
    execFileSync('git', ['init', '-q', sub]);
    commit(sub, { 's.txt': 'inside\n', '.gitattributes': '* filter=y\n' });
    execFileSync('git', ['-C', world.repo, '-c', 'protocol.file.allow=always', 'submodule', 'add', '-q', sub, 'sub']);
    commit(world.repo, {});
    const inner = join(world.repo, 'sub');
    execFileSync('git', ['-C', inner, 'config', 'filter.y.clean', program]);
    unsettle(join(inner, 's.txt'));
    await claim();
    expect(existsSync(marker)).toBe(false);
    // The superproject's status runs `git status` in the submodule, which reads the submodule's config.
    plainGit(world.repo, STATUS);
    expect(existsSync(marker)).toBe(true);
  });

  it.each(['an entry inside it', 'a relative entry'])('a `git` inside the checkout that PATH finds (%s)', async (kind) => {
    const bin = join(world.repo, 'bin');
    mkdirSync(bin);
    writeFileSync(join(bin, 'git'), `#!/bin/sh\ntouch '${marker}'\n`);
    chmodSync(join(bin, 'git'), 0o755);
    // A relative entry is relative to the working directory: the hook's is the checkout.
    const env = { PATH: `${kind === 'a relative entry' ? 'bin' : bin}:${world.env.PATH}` };
    // The claim finds the real git further along PATH: it still records a status.
    expect(await claim(env)).toMatch(/^sha256:/);
    expect(existsSync(marker)).toBe(false);
    spawnSync('git', ['--version'], { cwd: world.repo, env: { ...world.env, ...env } });
    expect(existsSync(marker)).toBe(true);
  });
});

describe('the status digest of an ordinary checkout', () => {
  it("is the digest of a person's own git status (resume compares it with the capture's)", async () => {
    writeFileSync(join(world.repo, 'README.md'), 'changed\n');
    writeFileSync(join(world.repo, 'new file.txt'), 'untracked\n');
    mkdirSync(join(world.repo, 'dir'));
    writeFileSync(join(world.repo, 'dir', 'staged.txt'), 'staged\n');
    execFileSync('git', ['-C', world.repo, 'add', 'dir']);
    const expected = digestText(plainGit(world.repo, STATUS).stdout);
    expect(await claim()).toBe(expected);
    expect(preconditionsOf(world.repo).statusDigest).toBe(expected);
  });
});
