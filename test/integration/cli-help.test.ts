// The command line's own consistency (contract §8): every command answers --help with exit 0, the
// top-level help lists every flag a command parses, --json errors are JSON, and an old Node is told
// which Node it needs instead of crashing in a native module.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI, makeWorld, payload } from '../support/world';
import { runMain } from '../support/inProcessCli';
import { HELP } from '../../src/cli/help';
import { usageLinesOf } from '../../src/cli/main';

const world = makeWorld('tk-cli-help');
afterAll(() => world.cleanup());

const topHelp = world.cli(['--help']);
/** The usage lines, each with its fixed words (`todo add`, `hooks install`, `status`, …). */
const usageLines = topHelp.stdout
  .split('\n')
  .filter((line) => /^ {2}[a-z]/.test(line))
  .map((line) => {
    const words = line.trim().split(/\s+/);
    // A fixed word starts with a letter (`hook-server`), a flag with a dash (`--bundle`).
    const fixed = words.slice(0, words.findIndex((word) => !/^[a-z][a-z|-]*$/.test(word)) >>> 0);
    return { line, form: fixed.map((word) => word.split('|')[0]!) };
  });
const forms = usageLines.map((usage) => usage.form);

describe('turnkeeper --help and --version', () => {
  it('prints the usage on stdout with exit 0; no command at all is a usage error on stderr (control)', () => {
    expect(topHelp.code).toBe(0);
    expect(topHelp.stdout).toMatch(/^usage: turnkeeper/);
    expect(forms.length).toBeGreaterThan(15);
    const none = world.cli([]);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/^usage: turnkeeper/);
  });

  it("answers --help on every command form with exit 0 and that command's usage, without touching a store", () => {
    for (const form of forms) {
      const result = world.cli([...form, '--help']);
      expect(result.code, `${form.join(' ')} --help: ${result.stderr}`).toBe(0);
      expect(result.stdout, form.join(' ')).toContain(`turnkeeper ${form[0]}`);
      expect(world.cli([...form, '-h']).code).toBe(0);
    }
    expect(world.dbExists()).toBe(false);
    // Control: the same command with a flag it does not know is a usage error.
    expect(world.cli(['status', '--bogus']).code).toBe(2);
  });

  it('says for every command what it does, what each flag of its usage means, and an example (in-process)', async () => {
    const commands = [...new Set(forms.map((form) => form[0]!))];
    expect(Object.keys(HELP).sort()).toStrictEqual([...commands].sort());
    for (const command of commands) {
      const help = await runMain([command, '--help'], { env: world.env, cwd: world.repo });
      expect(help.code, command).toBe(0);
      expect(help.stdout, command).toMatch(new RegExp(`^turnkeeper ${command}: [A-Z].+\\.\n`));
      const usage = usageLinesOf(command).join('\n');
      const flagsSection = help.stdout.split('\nflags:\n')[1]?.split('\n\n')[0] ?? '';
      for (const flag of new Set(usage.match(/--[a-z][a-z-]*/g) ?? []))
        expect(flagsSection, `${command} --help: ${flag}`).toMatch(new RegExp(`^  ${flag} +\\S`, 'm'));
      expect(help.stdout, command).toMatch(/\nexamples:\n {2}\S/);
    }
  });

  it('prints the version of the package it runs from', () => {
    const manifest = JSON.parse(readFileSync(resolve(__dirname, '../../package.json'), 'utf8')) as { version: string };
    const result = world.cli(['--version']);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(`turnkeeper ${manifest.version}\n`);
  });

  it('lists in the top-level help every flag a command of src/cli parses', () => {
    const dir = resolve(__dirname, '../../src/cli');
    const flags = new Set<string>();
    for (const file of readdirSync(dir).filter((name) => name.endsWith('.ts'))) {
      const source = readFileSync(join(dir, file), 'utf8');
      for (const match of source.matchAll(/['"]?([a-z][a-z-]*)['"]?: \{ type: '(?:string|boolean)'/g)) flags.add(match[1]!);
    }
    expect(flags.size).toBeGreaterThan(10);
    const missing = [...flags].filter((flag) => !new RegExp(`--${flag}(?![a-z-])`).test(topHelp.stdout));
    expect(missing, 'flags parsed by src/cli but missing from `turnkeeper --help`').toEqual([]);
  });
});

describe('--json errors are JSON', () => {
  const jsonForms = usageLines.filter((usage) => usage.line.includes('--json')).map((usage) => usage.form);

  it('a usage error under --json is {"ok":false,"error":{"code","message"}} on stdout with exit 2', () => {
    expect(jsonForms.length).toBeGreaterThan(10);
    for (const form of jsonForms) {
      const result = world.cli([...form, '--no-such-flag', '--json']);
      expect(result.code, form.join(' ')).toBe(2);
      const parsed = JSON.parse(result.stdout) as { ok: boolean; error: { code: string; message: string } };
      expect(parsed.ok).toBe(false);
      expect(parsed.error.code).toBe('usage');
      expect(parsed.error.message).toContain('--no-such-flag');
    }
    // An invalid id under --json is JSON too, and says the grammar in words.
    const bad = world.cli(['todo', 'done', 'Fix-Login', '--json']);
    expect(bad.code).toBe(2);
    expect((JSON.parse(bad.stdout) as { error: { message: string } }).error.message).toMatch(/lower-case letters/);
    expect(bad.stdout).not.toContain('^[a-z0-9]');
    // Control: without --json the same error is prose on stderr and stdout stays empty.
    const prose = world.cli(['todo', 'done', 'Fix-Login']);
    expect(prose.code).toBe(2);
    expect(prose.stdout).toBe('');
    expect(prose.stderr).toMatch(/lower-case letters/);
    // Every command that takes a Todo id says the rule the same way, with the id it may have meant.
    for (const form of [
      ['todo', 'done', 'Fix-Login'],
      ['release', 'Fix-Login'],
      ['start', 'Fix-Login', '--agent', 'codex'],
    ]) {
      expect(world.cli(form).stderr, form.join(' ')).toContain('(did you mean fix-login?)');
    }
  });

  it('an unknown command under --json is a JSON usage error', () => {
    const result = world.cli(['no-such-command', '--json']);
    expect(result.code).toBe(2);
    expect((JSON.parse(result.stdout) as { error: { code: string } }).error.code).toBe('usage');
  });
});

// The system Node of this machine is older than the one Turnkeeper needs (the project pins Node 24).
const OLD_NODE = '/usr/bin/node';
const oldVersion = existsSync(OLD_NODE) ? spawnSync(OLD_NODE, ['--version'], { encoding: 'utf8' }).stdout.trim() : '';
const isOld = /^v(\d+)\./.test(oldVersion) && Number(/^v(\d+)\./.exec(oldVersion)![1]) < 22;

describe.skipIf(!isOld)(`an old Node (${OLD_NODE} ${oldVersion})`, () => {
  const run = (args: string[], input = '') => spawnSync(OLD_NODE, [CLI, ...args], { cwd: world.repo, env: { ...world.env }, input, encoding: 'utf8' });

  it('is told which Node is needed, exit 2, for every command', () => {
    for (const args of [['status'], ['doctor'], ['--version'], ['todo', 'list', '--json']]) {
      const result = run(args);
      expect(result.signal, args.join(' ')).toBeNull();
      expect(result.status, args.join(' ')).toBe(2);
      expect(result.stderr).toMatch(new RegExp(`needs Node 22\\.\\d+\\.\\d+ or newer; this is Node ${oldVersion.slice(1).replace(/\./g, '\\.')}`));
      expect(result.stdout).toBe('');
    }
    expect(world.dbExists()).toBe(false);
  });

  it('fails open in a hook: one stderr line, nothing on stdout, exit 0', () => {
    const payload = JSON.stringify({
      session_id: 's1',
      turn_id: 't1',
      cwd: world.repo,
      hook_event_name: 'UserPromptSubmit',
      model: 'm',
      permission_mode: 'default',
      prompt: 'work on #todo:fix-login',
    });
    const result = run(['hook', '--agent', 'codex'], payload);
    expect(result.status).toBe(0);
    expect(result.stdout).toBe('');
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(/needs Node 22/);
    expect(world.dbExists()).toBe(false);
    // Control: the same hook on the pinned Node runs (and, with no Todo, prints guidance or nothing, exit 0).
    const current = world.cli(['hook', '--agent', 'codex'], { input: payload });
    expect(current.code).toBe(0);
    expect(current.stderr).not.toMatch(/needs Node/);
  });
});

describe('status and receipts name the Goal and checkout, and receipts pages', () => {
  it('says "no store at" when there is none, instead of an empty list (control: after a claim, the lists)', () => {
    const fresh = makeWorld('tk-cli-status');
    try {
      const status = fresh.cli(['status']);
      expect(status.code).toBe(0);
      expect(status.stdout).toContain(`no store at ${fresh.db} yet`);
      expect(fresh.cli(['receipts']).stdout).toContain(`no store at ${fresh.db} yet, so no receipts`);
      expect(fresh.dbExists()).toBe(false);

      expect(fresh.cli(['todo', 'add', 'Fix login', '--id', 'fix-login']).code).toBe(0);
      const hook = fresh.cli(['hook', '--agent', 'codex'], { input: payload.codexPrompt(fresh, 'sess-a', 'turn-1', 'please work on #todo:fix-login') });
      expect(hook.stdout).toContain('Turnkeeper: Todo fix-login');
      const name = basename(fresh.repo);
      const listed = fresh.cli(['status']).stdout;
      expect(listed).toContain(`here: Goal ${name} (${fresh.goal}) · checkout ${fresh.repo}\n`);
      expect(listed).toMatch(
        new RegExp(
          `active leases:\\n  Goal ${name} \\(${fresh.goal}\\) · checkout ${fresh.repo.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\n    fix-login +codex:sess-a  epoch 1`,
        ),
      );

      // Four receipts (todo_added, capture_bound, lease_acquired, ready_written): two per page.
      const first = fresh.cli(['receipts', '--limit', '2']).stdout;
      expect(first).toContain(`Goal ${name} (${fresh.goal}) · checkout ${fresh.repo}\n`);
      expect(first).toMatch(/#4 .*ready_written/);
      const next = /older receipts: (turnkeeper receipts --before \d+ --limit 2)\n/.exec(first)?.[1];
      expect(next).toBe('turnkeeper receipts --before 3 --limit 2');
      const second = fresh.cli(next!.split(' ').slice(1)).stdout;
      expect(second).toMatch(/#2 .*capture_bound/);
      expect(second).toMatch(/#1 .*todo_added/);
      expect(second).not.toContain('older receipts');
      expect(second).toContain('the first receipt of the chain is shown');
    } finally {
      fresh.cleanup();
    }
  });
});
