// A mistyped command, subcommand, flag or Todo id (spec §8): a usage error in a line or two that
// names what was not understood and what is near it ("did you mean status?"), never the whole usage
// nor Node's parser text; nothing is written. Called in-process (main(argv, io)): what is checked is
// what a command says, not what a process does.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeWorld } from '../support/world';
import { runMain } from '../support/inProcessCli';

const world = makeWorld('tk-cli-mistakes');
afterAll(() => world.cleanup());
const cli = (...argv: string[]) => runMain(argv, { env: world.env, cwd: world.repo });

describe('a mistyped command, subcommand or flag', () => {
  it('an unknown command: two lines, the nearest commands, exit 2; the full usage is not printed; nothing is written', async () => {
    const typo = await cli('stauts');
    expect(typo.code).toBe(2);
    expect(typo.stderr).toBe('unknown command "stauts" (did you mean status or start?)\nturnkeeper --help lists the commands\n');
    expect(typo.stdout).toBe('');
    // Control: a word near no command gets no guess, and the same two-line form.
    const far = await cli('frobnicate');
    expect(far.stderr).toBe('unknown command "frobnicate"\nturnkeeper --help lists the commands\n');
    // Under --json: the same in the JSON error.
    const json = await cli('stauts', '--json');
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stdout)).toStrictEqual({
      ok: false,
      error: { code: 'usage', message: 'unknown command "stauts" (did you mean status or start?); turnkeeper --help lists the commands' },
    });
    expect(world.dbExists()).toBe(false);
  });

  it('an unknown subcommand names itself and the subcommands near it, then the usage', async () => {
    for (const [argv, near] of [
      [['todo', 'ad', 'x'], 'add'],
      [['hooks', 'instal', '--agent', 'codex'], 'install'],
      [['keys', 'shw'], 'show'],
      [['store', 'int'], 'init'],
      [['hook-server', 'stat'], 'status'],
    ] as const) {
      const run = await cli(...argv);
      expect(run.code, argv.join(' ')).toBe(2);
      expect(run.stderr.split('\n')[0], argv.join(' ')).toBe(`unknown subcommand "${argv[1]}" of turnkeeper ${argv[0]} (did you mean ${near}?)`);
      expect(run.stderr.split('\n')[1], argv.join(' ')).toMatch(/^usage: turnkeeper /);
    }
    // No subcommand at all: which ones there are.
    expect((await cli('todo')).stderr.split('\n')[0]).toBe('turnkeeper todo needs a subcommand: add, list, done, reopen, block, unblock');
    expect(world.dbExists()).toBe(false);
  });

  it("an unknown flag: the flags near it, not Node's parser text (control: the message Node gives)", async () => {
    const typo = await cli('status', '--limt', '3');
    expect(typo.code).toBe(2);
    expect(typo.stderr).toBe('unknown option --limt (did you mean --limit?)\nusage: turnkeeper status [--limit <n> | --all] [--json]\n');
    expect((await cli('receipts', '--limt', '2')).stderr.split('\n')[0]).toBe('unknown option --limt (did you mean --limit?)');
    // Control: a flag near none is named alone.
    expect((await cli('status', '--bogus')).stderr.split('\n')[0]).toBe('unknown option --bogus');
    // Control: what Node's parseArgs says of it, which the person used to get.
    const { parseArgs } = await import('node:util');
    expect(() => parseArgs({ args: ['--limt'], options: { limit: { type: 'string' } }, allowPositionals: true, strict: true })).toThrow(
      /To specify a positional argument/,
    );
    // Other parse errors keep their own sentence.
    expect((await cli('status', '--limit')).stderr.split('\n')[0]).toMatch(/--limit/);
  });
});

describe('a mistyped Todo id', () => {
  beforeAll(async () => {
    expect((await cli('todo', 'add', 'Fix login', '--id', 'fix-login')).code).toBe(0);
    expect((await cli('todo', 'add', 'Write docs', '--id', 'write-docs')).code).toBe(0);
  });

  it('todo done (a finish too), reopen and show name the Todo ids near it; exit 1, nothing changed', async () => {
    const before = (await cli('receipts', '--json')).stdout;
    for (const argv of [
      ['todo', 'done', 'fix-lgoin'],
      ['todo', 'reopen', 'fix-lgoin'],
      ['show', 'fix-lgoin'],
      ['todo', 'done', 'fix-lgoin', '--merge'],
    ]) {
      const run = await cli(...argv);
      expect(run.code, argv.join(' ')).toBe(1);
      expect(run.stderr, argv.join(' ')).toMatch(
        /^Todo fix-lgoin does not exist in Goal goal_[0-9a-f]+ \(did you mean fix-login\?\); turnkeeper todo list names them\n$/,
      );
    }
    const json = await cli('todo', 'done', 'fix-lgoin', '--json');
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: false, reason: 'unknown_todo', todo: 'fix-lgoin', suggestions: ['fix-login'] });
    // Control: an id near none gets no guess.
    const far = await cli('todo', 'done', 'zzz-unrelated');
    expect(far.stderr).not.toContain('did you mean');
    expect(JSON.parse((await cli('todo', 'done', 'zzz-unrelated', '--json')).stdout)).toMatchObject({ suggestions: [] });
    // Nothing was written by any of them.
    expect((await cli('receipts', '--json')).stdout).toBe(before);
    expect((await cli('todo', 'list')).stdout).toMatch(/fix-login +Fix login/);
  });

  it('start: the guidance names the nearest open Todo and the start command that takes it', async () => {
    const run = await cli('start', 'fix-lgoin', '--agent', 'codex');
    expect(run.code).toBe(1);
    const said = run.stdout + run.stderr;
    expect(said).toContain('Turnkeeper [unknown_todo]: Todo fix-lgoin does not exist in this workspace. Did you mean fix-login?');
    expect(said).toContain('Recover: turnkeeper start fix-login --agent codex   # or add it: turnkeeper todo add "<title>" --id fix-lgoin');
    // Control: far from every id, the recovery is to add it or list them.
    const far = await cli('start', 'zzz-unrelated', '--agent', 'codex');
    expect(far.stdout + far.stderr).toContain('Recover: turnkeeper todo add "<title>" --id zzz-unrelated   # or: turnkeeper todo list');
  });
});
