// The hook keeps its promises when its surroundings are broken (contract §2, §10): it exits 0 even
// when stdout and stderr cannot be written, and a TURNKEEPER_HOME that is not a directory gives
// [store_unavailable] guidance, not silence. Each case runs next to its control.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, openSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cliProcess, contextOf, makeWorld, payload, type World } from '../support/world';

let world: World;
beforeEach(() => {
  world = makeWorld('robust');
});
afterEach(() => world.cleanup());

const addTodo = (id: string) => expect(world.cli(['todo', 'add', `Title of ${id}`, '--id', id]).code).toBe(0);

/** The real hook with stdout and stderr sent to `out` and `err` (a path such as /dev/full, or 'pipe'). */
function hookTo(out: string, err: string, input: string) {
  const fds: number[] = [];
  const target = (path: string) => {
    if (path === 'pipe') return 'pipe' as const;
    const fd = openSync(path, 'w');
    fds.push(fd);
    return fd;
  };
  try {
    const run = cliProcess(['hook'], world.env);
    const result = spawnSync(run.file, run.argv, {
      input,
      env: run.env,
      cwd: world.repo,
      encoding: 'utf8',
      stdio: ['pipe', target(out), target(err)],
    });
    return { code: result.status, signal: result.signal, stdout: result.stdout ?? '', stderr: result.stderr ?? '', error: result.error };
  } finally {
    for (const fd of fds) closeSync(fd);
  }
}

describe.skipIf(!existsSync('/dev/full'))('contract §10: the hook exits 0 even when stdout or stderr cannot be written', () => {
  it('a claim whose output cannot be written (stdout and stderr on /dev/full) exits 0, and the claim stands', () => {
    addTodo('fix-login');
    const result = hookTo('/dev/full', '/dev/full', payload.codexPrompt(world, 'sess-a', 'turn-1', 'do #todo:fix-login'));
    expect(result.error).toBeUndefined();
    expect(result).toMatchObject({ code: 0, signal: null });
    // The lost output is what rule 4 is for: the next hook of the session presents the stored capture.
    const again = hookTo('pipe', 'pipe', payload.codexPrompt(world, 'sess-a', 'turn-2', 'go on'));
    expect(again.code).toBe(0);
    expect(contextOf(again.stdout)).toContain('Turnkeeper: Todo fix-login · capture cap_');
  });

  it('control: the same claim with writable stdout and stderr exits 0 and prints the ready capture', () => {
    addTodo('fix-login');
    const result = hookTo('pipe', 'pipe', payload.codexPrompt(world, 'sess-a', 'turn-1', 'do #todo:fix-login'));
    expect(result.code).toBe(0);
    expect(contextOf(result.stdout)).toContain('Turnkeeper: Todo fix-login · capture cap_');
  });

  it('invalid input whose stderr line cannot be written exits 0; control: with a pipe the line is printed', () => {
    const broken = hookTo('/dev/full', '/dev/full', '{"session_id": ');
    expect(broken).toMatchObject({ code: 0, signal: null });
    const control = hookTo('pipe', 'pipe', '{"session_id": ');
    expect(control).toMatchObject({ code: 0, stdout: '' });
    expect(control.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('stdout unwritable, stderr writable: exit 0, one stderr line that says why, no internal error', () => {
    addTodo('fix-login');
    const result = hookTo('/dev/full', 'pipe', payload.codexPrompt(world, 'sess-a', 'turn-1', 'do #todo:fix-login'));
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/ENOSPC/);
    expect(result.stderr).not.toMatch(/internal error/);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
  });
});

describe('a TURNKEEPER_HOME that is a regular file', () => {
  it('a bound prompt gets [store_unavailable] guidance, exit 0', () => {
    const file = join(world.root, 'not-a-dir');
    writeFileSync(file, 'x');
    const result = world.cli(['hook'], { input: payload.codexPrompt(world, 'sess-a', 'turn-1', 'do #todo:fix-login'), env: { TURNKEEPER_HOME: file } });
    expect(result.code).toBe(0);
    expect(contextOf(result.stdout)).toContain('[store_unavailable]');
    expect(result.stderr).not.toMatch(/internal error/);
  });

  it('control: a normal TURNKEEPER_HOME gives a claim', () => {
    addTodo('fix-login');
    const result = world.cli(['hook'], { input: payload.codexPrompt(world, 'sess-a', 'turn-1', 'do #todo:fix-login') });
    expect(result.code).toBe(0);
    expect(contextOf(result.stdout)).toContain('Turnkeeper: Todo fix-login · capture cap_');
  });
});
