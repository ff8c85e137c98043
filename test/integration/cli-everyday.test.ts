// What the everyday commands say (spec §8), called in-process (main(argv, io)); the claim that holds a
// Todo is a real hook's:
// - `turnkeeper next` when nothing is ready says which case it is, in the words a person acts on (no
//   Todo yet, every one done, how many are held or wait and how many are blocked), and the Goal by
//   its name;
// - a title with a line break stays one row in `todo list` and `next`, and is stored as written;
// - `todo list` in a clone whose origin is a local path (its own Goal) says so once another Goal exists.
import { afterAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { basename, join } from 'node:path';
import { makeWorld, payload } from '../support/world';
import { runMain } from '../support/inProcessCli';

const world = makeWorld('tk-cli-everyday');
afterAll(() => world.cleanup());
const cli = (...argv: string[]) => runMain(argv, { env: world.env, cwd: world.repo });
const ok = async (...argv: string[]) => {
  const run = await cli(...argv);
  expect(run.code, `${argv.join(' ')}: ${run.stderr}`).toBe(0);
  return run;
};
/** The Goal's display name: the repository folder's, as `goal` prints it (docs/goals.md). */
const name = basename(world.repo);

describe('next with nothing ready', () => {
  it('says there is no Todo yet, and how to add one', async () => {
    expect((await ok('next')).stdout).toBe(`no Todos in Goal ${name} yet: turnkeeper todo add "<title>"\n`);
  });

  it('counts the open ones held or waiting and the blocked ones; the JSON stays []', async () => {
    await ok('todo', 'add', 'Fix login', '--id', 'fix-login');
    await ok('todo', 'add', 'Write docs', '--id', 'write-docs', '--after', 'fix-login');
    await ok('todo', 'add', 'Ship it', '--id', 'ship-it');
    // Control: before any hold, the ready ones are listed.
    expect((await ok('next')).stdout).toMatch(/^fix-login +Fix login\nship-it +Ship it\n/);
    // A real claim holds fix-login (write-docs waits on it); a person blocks ship-it.
    const claim = await runMain(['hook'], { env: world.env, cwd: world.repo, input: payload.codexPrompt(world, 's1', 't1', 'please work on #todo:fix-login') });
    expect(claim.stdout).toContain('Turnkeeper: Todo fix-login');
    await ok('todo', 'block', 'ship-it', '--reason', 'waiting for the release window');
    expect((await ok('next')).stdout).toBe(
      `no ready Todos in Goal ${name}: 2 open ones are held or wait on another Todo, 1 is blocked (turnkeeper todo list)\n`,
    );
    expect(JSON.parse((await ok('next', '--json')).stdout)).toStrictEqual([]);
  });

  it('says every Todo is done, and how many', async () => {
    await ok('todo', 'done', 'fix-login', '--force', '--reason', 'test: done by hand');
    await ok('todo', 'done', 'write-docs');
    await ok('todo', 'unblock', 'ship-it');
    await ok('todo', 'done', 'ship-it');
    expect((await ok('next')).stdout).toBe(`every Todo of Goal ${name} is done (3): turnkeeper todo add "<title>" for the next one\n`);
  });
});

describe('a title with a line break', () => {
  it('is one row in todo list and next, its break shown as \\n; stored as written (control: the JSON)', async () => {
    await ok('todo', 'add', 'Line one\nline two', '--id', 'two-lines');
    await ok('todo', 'block', 'two-lines', '--reason', 'first\nsecond');
    const list = (await ok('todo', 'list')).stdout.split('\n').filter((line) => line.includes('two-lines'));
    expect(list).toStrictEqual(['blocked two-lines                Line one\\nline two  (blocked: first\\nsecond)']);
    await ok('todo', 'unblock', 'two-lines');
    expect((await ok('next')).stdout.split('\n')[0]).toBe('two-lines                Line one\\nline two');
    const stored = JSON.parse((await ok('todo', 'list', '--json')).stdout) as { id: string; title: string }[];
    expect(stored.find((todo) => todo.id === 'two-lines')?.title).toBe('Line one\nline two');
  });
});

describe('two clones of a repository whose origin is a local path', () => {
  it("todo list says its Todos are this checkout's own once the store holds another Goal, and how to share one (control: alone, no note)", async () => {
    const upstream = join(world.root, 'upstream');
    execFileSync('git', ['clone', '-q', '--bare', world.repo, upstream]);
    const clones = ['one', 'two'].map((name) => {
      const dir = join(world.root, 'clones', name, 'app');
      execFileSync('git', ['clone', '-q', upstream, dir]);
      return dir;
    });
    const home = join(world.root, 'clones-home');
    const env = { ...world.env, TURNKEEPER_HOME: home };
    const inClone = (dir: string, ...argv: string[]) => runMain(argv, { env, cwd: dir });
    expect((await inClone(clones[0]!, 'todo', 'add', 'Fix login', '--id', 'fix-login')).code).toBe(0);
    // Control: one Goal in the store, nothing to explain.
    const alone = await inClone(clones[0]!, 'todo', 'list');
    expect(alone.stdout).toMatch(/^open +fix-login/);
    expect(alone.stderr).toBe('');
    // The second clone is a Goal of its own: its list is empty, and says why.
    const other = await inClone(clones[1]!, 'todo', 'list');
    expect(other.stdout).toBe('no Todos in Goal app; add one: turnkeeper todo add "<title>"\n');
    expect(other.stderr).toMatch(
      /^note: these are this checkout's own Todos: the origin URL is a local path.*; to share one: turnkeeper goal init, and commit the \.turnkeeper\.json it writes\n$/,
    );
    // --json stays the array alone.
    const json = await inClone(clones[1]!, 'todo', 'list', '--json');
    expect(JSON.parse(json.stdout)).toStrictEqual([]);
    expect(json.stderr).toBe('');
  });
});
