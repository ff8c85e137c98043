// A command whose reader closed the pipe (`turnkeeper receipts | head -1`): only a process shows it,
// so the real dist/cli.js writes into a real pipe whose read end this test closed before the command
// wrote a byte. Node ignores SIGPIPE, so each write fails with EPIPE; the command drops what is left
// and keeps its own exit status (src/cli/stdio.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { cliProcess, makeWorld } from '../support/world';

const world = makeWorld('tk-cli-pipe');
beforeAll(() => {
  for (const id of ['fix-login', 'add-search', 'tidy-docs']) expect(world.cli(['todo', 'add', `Title of ${id}`, '--id', id]).code).toBe(0);
});
afterAll(() => world.cleanup());

/** Runs `file argv` with stdout a pipe whose read end is closed at once; its exit status and stderr. */
function withReaderGone(file: string, argv: readonly string[]): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(file, argv, { cwd: world.repo, env: world.env, stdio: ['ignore', 'pipe', 'pipe'] });
  // Closed in the same tick as the spawn: the process has not started yet, let alone written.
  child.stdout.destroy();
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolvePromise) => child.on('close', (code) => resolvePromise({ code, stderr })));
}

const cli = (...args: string[]) => {
  const run = cliProcess(args, world.env);
  return withReaderGone(run.file, run.argv);
};

describe('a reader that closed the pipe', () => {
  it('control: a plain write into such a pipe fails with EPIPE (what every command did before: exit 1, "broken pipe")', async () => {
    const plain = await withReaderGone(process.execPath, ['-e', "require('node:fs').writeSync(1, 'a line\\n')"]);
    expect(plain.code).toBe(1);
    expect(plain.stderr).toMatch(/EPIPE/);
  });

  it('receipts, status, todo list, goal: exit 0 and nothing on stderr', async () => {
    for (const args of [['receipts'], ['status'], ['todo', 'list'], ['goal'], ['receipts', '--json']]) {
      expect(await cli(...args), args.join(' ')).toStrictEqual({ code: 0, stderr: '' });
    }
  });

  it("the exit status stays the command's own: an act that was done exits 0 and stands; one that was refused still exits non-zero", async () => {
    expect(await cli('todo', 'add', 'Piped away', '--id', 'piped-away')).toStrictEqual({ code: 0, stderr: '' });
    expect(world.cli(['todo', 'list', '--json']).stdout).toContain('piped-away');
    // The same id again is refused: the refusal's line goes to stderr, which is still open.
    const refused = await cli('todo', 'add', 'Piped away', '--id', 'piped-away');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('piped-away');
    expect(refused.stderr).not.toMatch(/EPIPE/);
  });
});
