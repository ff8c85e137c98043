// Hook installation into the agents' own config files (contract §8), on real files in temp dirs.
// The property that matters most: install then uninstall gives any user file back byte for byte.
import { describe, it, expect, afterAll } from 'vitest';
import { like } from '../support/matchers';
import fc from 'fast-check';
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { parse as parseJsonc, type ParseError } from 'jsonc-parser';
import { AGENTS, type Agent } from '../../src/core/ids';
import {
  HOOK_EVENTS,
  HookConfigError,
  installedHookCommand,
  hookConfigPath,
  hooksStatus,
  installHooks as installHooksWith,
  uninstallHooks as uninstallHooksWith,
  type Env,
  type HookTarget,
  type InstallResult,
  decodeBytes,
  encodeText,
  readJsonConfig,
} from '../../src/agents/install';
import { MAX_CONFIG_BYTES, readConfigFile } from '../../src/files/boundedFile';
import { readShim, shimPath, writeShim } from '../../src/agents/shim';
import { doctorReport, installAgentHooks, uninstallAgentHooks } from '../../src/doctor/installation';
import { TURNKEEPER_COMMAND_PATTERN } from '../../src/agents/install';
import { makeWorld } from '../support/world';
import { PROFILES } from '../../src/agents/profiles/index';

const roots: string[] = [];
const tempDir = (): string => {
  const dir = mkdtempSync(join(tmpdir(), 'tk-hooks-'));
  roots.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of roots) rmSync(dir, { recursive: true, force: true });
});

// A shim path with a space and a quote: the command must survive sh quoting.
const SHIM = "/opt/turn keeper's home/bin/turnkeeper";
const commandFor = (agent: Agent): string => installedHookCommand(agent, SHIM);
const projectTarget = (agent: Agent, projectRoot: string): HookTarget => ({ agent, scope: 'project', env: {}, projectRoot });
const read = (path: string): string => readFileSync(path, 'utf8');
/** The agents whose hooks are entries in a JSON config (OpenCode's are a plugin file: its own describe below). */
const JSON_AGENTS = AGENTS.filter((agent) => PROFILES[agent].install.plugin === undefined);

// Each project root (or user env) gets its own TURNKEEPER_HOME, outside the root, standing in for
// ~/.turnkeeper; doctor/installation.ts passes `$TURNKEEPER_HOME/backups` the same way.
const homes = new Map<string, string>();
const tkHomeOf = (target: HookTarget): string => {
  const key = target.projectRoot ?? JSON.stringify(target.env);
  const home = homes.get(key) ?? tempDir();
  homes.set(key, home);
  return home;
};
const backupDirOf = (target: HookTarget): string => join(tkHomeOf(target), 'backups');
const installHooks = (target: HookTarget, command: string, options: { now?: () => Date } = {}): InstallResult =>
  installHooksWith(target, command, { backupDir: backupDirOf(target), ...options });
const uninstallHooks = (target: HookTarget, command?: string, options: { now?: () => Date } = {}): InstallResult =>
  uninstallHooksWith(target, command, { backupDir: backupDirOf(target), ...options });
/** The backups of the configs of `target`'s root, wherever they are: under TURNKEEPER_HOME, or beside the config (the old place). */
const backupsOf = (target: HookTarget): string[] => {
  const beside = existsSync(dirname(hookConfigPath(target))) ? readdirSync(dirname(hookConfigPath(target))).filter((name) => name.includes('backup')) : [];
  const home = existsSync(backupDirOf(target)) ? readdirSync(backupDirOf(target)).filter((name) => !name.endsWith('.created')) : [];
  return [...beside, ...home];
};
/** Bytes from UTF-8 text and raw byte values, in order. */
const bytes = (...parts: (string | number[])[]): Buffer =>
  Buffer.concat(parts.map((part) => (typeof part === 'string' ? Buffer.from(part, 'utf8') : Buffer.from(part))));
const hex = (path: string): string => readFileSync(path).toString('hex');
const strictParse = (text: string): unknown => JSON.parse(text.replace(/^\uFEFF/, '')) as unknown;
function jsoncParse(text: string): unknown {
  const errors: ParseError[] = [];
  const value: unknown = parseJsonc(text, errors, { allowTrailingComma: true });
  expect(errors).toEqual([]);
  return value;
}
interface Group {
  matcher?: string;
  hooks: Record<string, unknown>[];
}
const hooksOf = (value: unknown): Record<string, Group[]> => (value as { hooks: Record<string, Group[]> }).hooks;

describe('hook command and config paths', () => {
  it('quotes the shim path for sh and stays exactly `<path> hook --agent <agent>`', () => {
    expect(installedHookCommand('codex', SHIM)).toBe(`'/opt/turn keeper'\\''s home/bin/turnkeeper' hook --agent codex`);
    expect(installedHookCommand('gemini', '/h/bin/turnkeeper')).toBe(`'/h/bin/turnkeeper' hook --agent gemini`);
    // sh splits it back into the exact path and arguments.
    const words = spawnSync('sh', ['-c', `set -- ${commandFor('claude')}; printf '%s\\n' "$@"`], { encoding: 'utf8' });
    expect(words.stdout).toBe(`${SHIM}\nhook\n--agent\nclaude\n`);
  });

  it('honours HOME, CODEX_HOME, CLAUDE_CONFIG_DIR and GEMINI_CLI_HOME', () => {
    const user = (agent: Agent, env: Env): string => hookConfigPath({ agent, scope: 'user', env });
    expect(user('codex', { HOME: '/h' })).toBe('/h/.codex/hooks.json');
    expect(user('codex', { HOME: '/h', CODEX_HOME: '/c' })).toBe('/c/hooks.json');
    expect(user('claude', { HOME: '/h' })).toBe('/h/.claude/settings.json');
    expect(user('claude', { HOME: '/h', CLAUDE_CONFIG_DIR: '/cl' })).toBe('/cl/settings.json');
    expect(user('gemini', { HOME: '/h' })).toBe('/h/.gemini/settings.json');
    // GEMINI_CLI_HOME replaces the home directory; `.gemini` still goes under it.
    expect(user('gemini', { HOME: '/h', GEMINI_CLI_HOME: '/g' })).toBe('/g/.gemini/settings.json');
    expect(hookConfigPath(projectTarget('codex', '/repo'))).toBe('/repo/.codex/hooks.json');
    expect(hookConfigPath(projectTarget('claude', '/repo'))).toBe('/repo/.claude/settings.json');
    expect(hookConfigPath(projectTarget('gemini', '/repo'))).toBe('/repo/.gemini/settings.json');
    expect(() => hookConfigPath({ agent: 'codex', scope: 'project', env: {} })).toThrow(/project root/);
  });

  it('installs at the overridden user paths, and only there', () => {
    const root = tempDir();
    const env = {
      HOME: join(root, 'home'),
      CODEX_HOME: join(root, 'codex'),
      CLAUDE_CONFIG_DIR: join(root, 'claude'),
      GEMINI_CLI_HOME: join(root, 'gem'),
      COPILOT_HOME: join(root, 'cop'),
      QWEN_HOME: join(root, 'qwen'),
      GOOSE_PATH_ROOT: join(root, 'goose'),
      GROK_HOME: join(root, 'grok'),
      XDG_CONFIG_HOME: join(root, 'xdg'),
    };
    for (const agent of AGENTS) installHooks({ agent, scope: 'user', env }, commandFor(agent));
    expect(existsSync(join(root, 'goose', '.agents', 'plugins', 'turnkeeper', 'hooks', 'hooks.json'))).toBe(true);
    expect(existsSync(join(root, 'grok', 'hooks', 'turnkeeper.json'))).toBe(true);
    expect(existsSync(join(root, 'codex', 'hooks.json'))).toBe(true);
    expect(existsSync(join(root, 'claude', 'settings.json'))).toBe(true);
    expect(existsSync(join(root, 'gem', '.gemini', 'settings.json'))).toBe(true);
    expect(existsSync(join(root, 'cop', 'settings.json'))).toBe(true);
    expect(existsSync(join(root, 'qwen', 'settings.json'))).toBe(true);
    expect(existsSync(join(root, 'xdg', 'opencode', 'plugin', 'turnkeeper.js'))).toBe(true);
    // Nothing went to the defaults under HOME, which is where it would have gone without the overrides.
    expect(existsSync(join(root, 'home'))).toBe(false);
    installHooks({ agent: 'codex', scope: 'user', env: { HOME: env.HOME } }, commandFor('codex'));
    expect(existsSync(join(root, 'home', '.codex', 'hooks.json'))).toBe(true);
  });
});

describe('installHooks', () => {
  it.each(JSON_AGENTS)('creates a missing %s config with one group per event', (agent) => {
    const root = tempDir();
    const result = installHooks(projectTarget(agent, root), commandFor(agent));
    expect(result.changed).toBe(true);
    expect(result.backup).toBeUndefined();
    const text = read(result.path);
    expect(text.endsWith('}\n')).toBe(true);
    expect(text).toContain('\n  "hooks": {\n    "'); // pretty, 2 spaces
    const hooks = hooksOf(strictParse(text));
    expect(Object.keys(hooks)).toEqual(HOOK_EVENTS[agent]);
    const entry =
      agent === 'gemini'
        ? { name: 'turnkeeper', type: 'command', command: commandFor(agent), timeout: 15000 }
        : { type: 'command', command: commandFor(agent), timeout: 15 };
    // Copilot: flat entries (no matcher groups), each command naming its event, timeoutSec in seconds.
    if (agent === 'copilot') {
      for (const event of HOOK_EVENTS[agent])
        expect(hooks[event]).toEqual([{ type: 'command', command: `${commandFor(agent)} --event ${event}`, timeoutSec: 15 }]);
      return;
    }
    for (const event of HOOK_EVENTS[agent]) expect(hooks[event]).toEqual([{ hooks: [entry] }]);
    if (agent === 'codex') expect(Object.keys(hooks.SessionStart?.[0]?.hooks[0] ?? {})).toEqual(['type', 'command', 'timeout']);
  });

  it('keeps comments, other settings and other hooks of an existing JSONC file', () => {
    const root = tempDir();
    const path = join(root, '.claude', 'settings.json');
    mkdirSync(dirname(path), { recursive: true });
    const original = [
      '// my settings',
      '{',
      '    "model": "opus", /* pinned */',
      '    "permissions": { "allow": ["Bash(npm test)"], },',
      '    "hooks": {',
      '        // lint before every edit',
      '        "PreToolUse": [',
      '            { "matcher": "Edit", "hooks": [{ "type": "command", "command": "npm run lint" }] },',
      '        ],',
      '        "Notification": [{ "hooks": [{ "type": "command", "command": "notify-send hi" }] }]',
      '    }',
      '}',
      '',
    ].join('\n');
    writeFileSync(path, original);
    const result = installHooks(projectTarget('claude', root), commandFor('claude'));
    expect(result.changed).toBe(true);
    const text = read(path);
    for (const kept of ['// my settings', '/* pinned */', '// lint before every edit', '"Bash(npm test)"], },']) expect(text).toContain(kept);
    const value = jsoncParse(text) as Record<string, unknown>;
    expect(value.model).toBe('opus');
    expect(value.permissions).toEqual({ allow: ['Bash(npm test)'] });
    const hooks = hooksOf(value);
    expect(hooks.PreToolUse?.[0]).toEqual({ matcher: 'Edit', hooks: [{ type: 'command', command: 'npm run lint' }] });
    expect(hooks.PreToolUse?.[1]).toEqual({ hooks: [{ type: 'command', command: commandFor('claude'), timeout: 15 }] });
    // The person's own Notification hook stays first; Turnkeeper's (the live status `waiting`) follows it.
    expect(hooks.Notification?.[0]).toEqual({ hooks: [{ type: 'command', command: 'notify-send hi' }] });
    expect(hooks.Notification).toHaveLength(2);
    for (const event of HOOK_EVENTS.claude) expect(hooks[event]?.some((g) => g.hooks.some((h) => h.command === commandFor('claude')))).toBe(true);
    // The file's 4-space indentation is followed by what we add.
    expect(text).toContain('\n    "hooks": {\n        // lint');
    expect(text).toMatch(/\n {8}"SessionStart": \[\n {12}\{\n {16}"hooks": \[/);
    expect(uninstallHooks(projectTarget('claude', root), commandFor('claude')).changed).toBe(true);
    expect(read(path)).toBe(original);
  });

  it('is idempotent: a second install changes nothing and writes no new backup', () => {
    const root = tempDir();
    const path = join(root, '.codex', 'hooks.json');
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, '{\n  "hooks": {}\n}\n');
    const first = installHooks(projectTarget('codex', root), commandFor('codex'));
    expect(first.changed).toBe(true);
    expect(backupsOf(projectTarget('codex', root))).toHaveLength(1);
    const after = read(path);
    const mtime = statSync(path).mtimeMs;
    const second = installHooks(projectTarget('codex', root), commandFor('codex'));
    expect(second).toEqual({ path, changed: false });
    expect(read(path)).toBe(after);
    expect(statSync(path).mtimeMs).toBe(mtime);
    expect(backupsOf(projectTarget('codex', root))).toHaveLength(1);
    // A different command (another shim path) would have been added: the skip is by exact command.
    expect(installHooks(projectTarget('codex', root), installedHookCommand('codex', '/elsewhere/bin/turnkeeper')).changed).toBe(true);
  });

  it('adds only the events that lack our command', () => {
    const root = tempDir();
    const path = join(root, '.gemini', 'settings.json');
    mkdirSync(dirname(path), { recursive: true });
    const ours = { type: 'command', command: commandFor('gemini') };
    writeFileSync(path, JSON.stringify({ hooks: { BeforeTool: [{ matcher: 'x', hooks: [{ type: 'command', command: 'other' }, ours] }] } }, null, 2));
    installHooks(projectTarget('gemini', root), commandFor('gemini'));
    const hooks = hooksOf(strictParse(read(path)));
    expect(hooks.BeforeTool).toHaveLength(1); // already there, inside a user group
    for (const event of ['SessionStart', 'BeforeAgent', 'AfterTool', 'AfterAgent']) expect(hooks[event]).toHaveLength(1);
  });

  it('keeps backups under $TURNKEEPER_HOME/backups in a 0700 directory, never beside the config', () => {
    const root = tempDir();
    const target = projectTarget('claude', root);
    const path = join(root, '.claude', 'settings.json');
    mkdirSync(dirname(path), { recursive: true });
    const original = '{\n\t"env": { "SECRET": "x" }\n}';
    writeFileSync(path, original);
    chmodSync(path, 0o640);
    const now = () => new Date('2026-03-04T05:06:07.890Z');
    const result = installHooks(target, commandFor('claude'), { now });
    expect(result.changed).toBe(true);
    const backups = backupDirOf(target);
    expect(dirname(result.backup ?? '')).toBe(backups);
    // The name says which config it was, and when.
    expect(basename(result.backup ?? '')).toBe(`${root.slice(1).replace(/[^A-Za-z0-9._-]+/g, '_')}_.claude_settings.json.20260304T050607Z`);
    expect(read(result.backup ?? '')).toBe(original);
    expect(statSync(backups).mode & 0o777).toBe(0o700);
    expect(statSync(result.backup ?? '').mode & 0o777).toBe(0o600); // it may hold secrets, whatever the config's mode
    expect(statSync(path).mode & 0o777).toBe(0o640); // the config keeps its own mode
    // Nothing beside the config or anywhere else in the repository: only the config changed.
    expect(readdirSync(dirname(path))).toEqual(['settings.json']);
    expect(readdirSync(root)).toEqual(['.claude']);
    // Uninstall in the same second backs up again without overwriting the first backup.
    const removed = uninstallHooks(target, commandFor('claude'), { now });
    expect(removed.backup).toBe(`${result.backup ?? ''}-1`);
    expect(read(removed.backup ?? '')).not.toBe(original); // control: that one holds the installed file
    expect(read(result.backup ?? '')).toBe(original);
    expect(read(path)).toBe(original);
    expect(readdirSync(dirname(path))).toEqual(['settings.json']); // no temp files either
  });

  it('keeps bytes that are not UTF-8, in the config and in its backup', () => {
    const root = tempDir();
    const target = projectTarget('claude', root);
    const path = hookConfigPath(target);
    mkdirSync(dirname(path), { recursive: true });
    // `café` in UTF-8, then 0xFF (never UTF-8), a truncated sequence (C3) and a Latin-1 `é` (E9).
    const comment = bytes('// café ', [0xff], '\r\n');
    const value = bytes('"café ', [0xff, 0xc3], '"');
    const block = bytes('/* ', [0xe9, 0x80], ' */');
    const original = Buffer.concat([
      bytes('\uFEFF'),
      comment,
      bytes('{\r\n  "note": '),
      value,
      bytes(', '),
      block,
      bytes('\r\n  "hooks": {\r\n    "Stop": []\r\n  }\r\n}\r\n'),
    ]);
    // Control: a UTF-8 decode and encode would damage this file, which is what used to happen.
    expect(Buffer.from(original.toString('utf8'), 'utf8').equals(original)).toBe(false);
    writeFileSync(path, original);
    const result = installHooks(target, commandFor('claude'));
    expect(result.changed).toBe(true);
    const installed = readFileSync(path);
    expect(installed.subarray(0, 3).toString('hex')).toBe('efbbbf');
    for (const kept of [comment, value, block]) expect(installed.includes(kept)).toBe(true);
    expect(installed.includes(Buffer.from('\uFFFD', 'utf8'))).toBe(false);
    expect(hex(result.backup ?? '')).toBe(original.toString('hex'));
    expect(hooksStatus(target, commandFor('claude')).installed).toBe(true);
  });

  it('the CLI and the extension back up under $TURNKEEPER_HOME/backups, by default ~/.turnkeeper/backups', () => {
    const runtime = { runtime: process.execPath, script: '/opt/turnkeeper/dist/cli.js', electronRunAsNode: false };
    for (const [name, withHome] of [
      ['TURNKEEPER_HOME', true],
      ['default', false],
    ] as const) {
      const root = tempDir();
      const home = join(tempDir(), name);
      const env: Env = withHome ? { HOME: join(root, 'nohome'), TURNKEEPER_HOME: home } : { HOME: home };
      const tkHome = withHome ? home : join(home, '.turnkeeper');
      const path = hookConfigPath(projectTarget('gemini', root));
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, '{}');
      const result = installAgentHooks({ agent: 'gemini', scope: 'project', env, projectRoot: root }, runtime);
      expect(dirname(result.backup ?? '')).toBe(join(tkHome, 'backups'));
      expect(read(result.backup ?? '')).toBe('{}');
      expect(readdirSync(dirname(path))).toEqual(['settings.json']);
      expect(uninstallAgentHooks({ agent: 'gemini', scope: 'project', env, projectRoot: root })).toMatchObject({ changed: true });
      expect(read(path)).toBe('{}');
      expect(readdirSync(join(tkHome, 'backups'))).toHaveLength(2);
    }
  });

  it("writes through a symlinked config instead of replacing the link, keeping the target's mode", () => {
    const root = tempDir();
    const real = join(root, 'dotfiles', 'claude-settings.json');
    mkdirSync(dirname(real), { recursive: true });
    const original = '{ "model": "opus" }\n';
    writeFileSync(real, original);
    chmodSync(real, 0o640);
    mkdirSync(join(root, '.claude'));
    const link = join(root, '.claude', 'settings.json');
    symlinkSync('../dotfiles/claude-settings.json', link);
    const result = installHooks(projectTarget('claude', root), commandFor('claude'));
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readlinkSync(link)).toBe('../dotfiles/claude-settings.json');
    expect(read(real)).toContain(JSON.stringify(commandFor('claude')));
    expect(statSync(real).mode & 0o777).toBe(0o640);
    expect(read(result.backup ?? '')).toBe(original);
    expect(readdirSync(dirname(real))).toEqual(['claude-settings.json']);
    uninstallHooks(projectTarget('claude', root), commandFor('claude'));
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(read(real)).toBe(original);
  });

  it("writes through a dangling symlink (a dotfile manager's link to a file not yet there)", () => {
    const root = tempDir();
    const real = join(root, 'dotfiles', 'claude-settings.json');
    mkdirSync(dirname(real), { recursive: true });
    mkdirSync(join(root, '.claude'));
    const link = join(root, '.claude', 'settings.json');
    symlinkSync(real, link);
    const result = installHooks(projectTarget('claude', root), commandFor('claude'));
    expect(result).toMatchObject({ path: link, changed: true });
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readlinkSync(link)).toBe(real);
    expect(read(real)).toContain(JSON.stringify(commandFor('claude')));
    expect(hooksStatus(projectTarget('claude', root), commandFor('claude')).installed).toBe(true);
    // Uninstall removes the file install created and leaves the link dangling, as it was.
    expect(uninstallHooks(projectTarget('claude', root), commandFor('claude'))).toMatchObject({ changed: true, deleted: true });
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(existsSync(real)).toBe(false);
    // Control: a link into a directory that does not exist (an unmounted disk, a missing checkout)
    // is refused rather than creating that directory.
    const other = tempDir();
    mkdirSync(join(other, '.claude'));
    const nowhere = join(other, 'missing', 'dir', 'settings.json');
    symlinkSync(nowhere, join(other, '.claude', 'settings.json'));
    expect(() => installHooks(projectTarget('claude', other), commandFor('claude'))).toThrow(HookConfigError);
    expect(readlinkSync(join(other, '.claude', 'settings.json'))).toBe(nowhere);
    expect(existsSync(join(other, 'missing'))).toBe(false);
  });

  it("project scope refuses a config whose link leads out of the repository, the user's own settings say (control: at user scope the same link is written through)", () => {
    const root = tempDir();
    const outside = tempDir();
    const userSettings = join(outside, 'settings.json');
    const original = '{ "model": "opus" }\n';
    writeFileSync(userSettings, original);
    mkdirSync(join(root, '.claude'));
    const link = join(root, '.claude', 'settings.json');
    symlinkSync(userSettings, link);
    expect(() => installHooks(projectTarget('claude', root), commandFor('claude'))).toThrow(/leads to .*settings\.json, outside the project/);
    expect(() => uninstallHooks(projectTarget('claude', root))).toThrow(HookConfigError);
    expect(read(userSettings)).toBe(original);
    expect(backupsOf(projectTarget('claude', root))).toEqual([]);
    // The directory itself linked out, and a dangling link out: refused too.
    const other = tempDir();
    symlinkSync(outside, join(other, '.claude'));
    expect(() => installHooks(projectTarget('claude', other), commandFor('claude'))).toThrow(/outside the project/);
    const dangling = tempDir();
    mkdirSync(join(dangling, '.gemini'));
    symlinkSync(join(outside, 'not-yet.json'), join(dangling, '.gemini', 'settings.json'));
    expect(() => installHooks(projectTarget('gemini', dangling), commandFor('gemini'))).toThrow(/outside the project/);
    expect(existsSync(join(outside, 'not-yet.json'))).toBe(false);
    expect(read(userSettings)).toBe(original);

    // Control: the user scope writes through the same kind of link (a dotfile manager's).
    const userTarget: HookTarget = { agent: 'claude', scope: 'user', env: { CLAUDE_CONFIG_DIR: join(root, '.claude') } };
    expect(installHooks(userTarget, commandFor('claude'))).toMatchObject({ changed: true });
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(read(userSettings)).toContain(JSON.stringify(commandFor('claude')));
  });

  it('keeps tabs and CRLF line endings', () => {
    const root = tempDir();
    const path = join(root, '.codex', 'hooks.json');
    mkdirSync(dirname(path), { recursive: true });
    const original = '{\r\n\t"hooks": {\r\n\t\t"Stop": [\r\n\t\t\t{ "hooks": [ { "type": "command", "command": "say done" } ] }\r\n\t\t]\r\n\t}\r\n}\r\n';
    writeFileSync(path, original);
    installHooks(projectTarget('codex', root), commandFor('codex'));
    const text = read(path);
    expect(text.replace(/\r\n/g, '')).not.toContain('\n'); // every line break is CRLF
    expect(text).toContain('\r\n\t\t"SessionStart": [\r\n\t\t\t{\r\n\t\t\t\t"hooks": [');
    expect(text).not.toMatch(/\n {2}/);
    uninstallHooks(projectTarget('codex', root), commandFor('codex'));
    expect(read(path)).toBe(original);
  });

  // `wholeFile`: the file as a whole is unusable, so status reports the error and uninstall refuses too.
  // A non-array event only stops install, which would have to edit it.
  const invalid: [string, string, RegExp, boolean][] = [
    ['broken JSON', '{ "model": "opus", ', /not valid JSON/, true],
    ['a top-level array', '[]', /top level is not a JSON object/, true],
    ['"hooks" that is not an object', '{ "hooks": [] }', /"hooks" is not an object/, true],
    ['an event that is not an array', '{ "hooks": { "Stop": {} } }', /"hooks.Stop" is not an array/, false],
    ['a duplicated "hooks" key', '{ "hooks": {}, "hooks": {} }', /appears twice/, true],
  ];
  it.each(invalid)('refuses %s with HookConfigError and changes nothing', (_, content, message, wholeFile) => {
    const root = tempDir();
    const path = join(root, '.claude', 'settings.json');
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, content);
    const attempt = (): unknown => installHooks(projectTarget('claude', root), commandFor('claude'));
    expect(attempt).toThrow(HookConfigError);
    expect(attempt).toThrow(message);
    try {
      attempt();
    } catch (error) {
      expect((error as HookConfigError).path).toBe(path);
    }
    if (wholeFile) expect(() => uninstallHooks(projectTarget('claude', root))).toThrow(HookConfigError);
    else expect(uninstallHooks(projectTarget('claude', root))).toMatchObject({ changed: false });
    expect(read(path)).toBe(content);
    expect(readdirSync(dirname(path))).toEqual(['settings.json']); // no backup, no temp file
    const status = hooksStatus(projectTarget('claude', root), commandFor('claude'));
    expect(status).toMatchObject({ exists: true, installed: false });
    if (wholeFile) expect(status.error).toMatch(message);
    // The same directory with a valid file would have been rewritten.
    writeFileSync(path, '{}');
    expect(attempt()).toMatchObject({ changed: true });
  });
});

describe('uninstallHooks', () => {
  it('without a command removes every Turnkeeper-looking hook, and nothing of the user', () => {
    const root = tempDir();
    const path = join(root, '.claude', 'settings.json');
    mkdirSync(dirname(path), { recursive: true });
    const stale = `'/old home/bin/turnkeeper' hook --agent claude`;
    writeFileSync(
      path,
      JSON.stringify(
        {
          hooks: {
            Stop: [
              { hooks: [{ type: 'command', command: stale }] },
              {
                matcher: '',
                hooks: [
                  { type: 'command', command: 'say done' },
                  { type: 'command', command: '"/x/bin/turnkeeper" hook --agent codex' },
                ],
              },
            ],
            PreToolUse: [{ hooks: [{ type: 'command', command: 'turnkeeper-lint hook --agent claude' }] }],
          },
        },
        null,
        2,
      ),
    );
    installHooks(projectTarget('claude', root), commandFor('claude'));
    const status = hooksStatus(projectTarget('claude', root), commandFor('claude'));
    expect(status.installed).toBe(true);
    expect([...status.staleCommands].sort()).toEqual(['"/x/bin/turnkeeper" hook --agent codex', stale].sort());
    // With our exact command only ours goes; the stale ones stay.
    expect(uninstallHooks(projectTarget('claude', root), commandFor('claude')).changed).toBe(true);
    expect(read(path)).toContain(stale);
    uninstallHooks(projectTarget('claude', root));
    const hooks = hooksOf(strictParse(read(path)));
    expect(hooks).toEqual({
      Stop: [{ matcher: '', hooks: [{ type: 'command', command: 'say done' }] }],
      PreToolUse: [{ hooks: [{ type: 'command', command: 'turnkeeper-lint hook --agent claude' }] }],
    });
  });

  it('leaves a missing file missing and a file without our hooks untouched', () => {
    const root = tempDir();
    expect(uninstallHooks(projectTarget('codex', root)).changed).toBe(false);
    expect(existsSync(join(root, '.codex'))).toBe(false);
    const path = join(root, '.codex', 'hooks.json');
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, '{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"x"}]}]}}');
    expect(uninstallHooks(projectTarget('codex', root))).toEqual({ path, changed: false });
    expect(backupsOf(projectTarget('codex', root))).toEqual([]);
  });

  it('gives back the original bytes: BOM, CRLF, comments, `café` and bytes that are not UTF-8', () => {
    for (const agent of JSON_AGENTS) {
      const root = tempDir();
      const target = projectTarget(agent, root);
      const path = hookConfigPath(target);
      mkdirSync(dirname(path), { recursive: true });
      const original = bytes('\uFEFF// café ', [0xff], '\r\n{\r\n  /* ', [0xe9], ' */ "note": "café ', [0xff, 0xc3], '",\r\n  "hooks": {}\r\n}\r\n');
      writeFileSync(path, original);
      expect(installHooks(target, commandFor(agent)).changed).toBe(true);
      expect(hex(path)).not.toBe(original.toString('hex')); // control: install did change the file
      expect(uninstallHooks(target, commandFor(agent)).changed).toBe(true);
      expect(hex(path)).toBe(original.toString('hex'));
      installHooks(target, commandFor(agent));
      uninstallHooks(target); // by pattern, too
      expect(hex(path)).toBe(original.toString('hex'));
    }
  });

  it('deletes a config that install created, and only that', () => {
    const root = tempDir();
    const target = projectTarget('codex', root);
    const path = hookConfigPath(target);
    const created = installHooks(target, commandFor('codex'));
    expect(created).toEqual({ path, changed: true }); // nothing to back up
    expect(uninstallHooks(target, commandFor('codex'))).toEqual({ path, changed: true, deleted: true, backup: expect.any(String) as unknown });
    expect(existsSync(path)).toBe(false);
    expect(readdirSync(backupDirOf(target)).filter((name) => name.endsWith('.created'))).toEqual([]); // the record went with it
    // Control: a user's own `{}` plus a newline, which is exactly what would remain, stays.
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, '{}\n');
    installHooks(target, commandFor('codex'));
    expect(uninstallHooks(target, commandFor('codex'))).not.toHaveProperty('deleted');
    expect(read(path)).toBe('{}\n');
    // Created by install, then replaced by the user with their own `{}`: install edits their file, so it stays.
    rmSync(path);
    installHooks(target, commandFor('codex'));
    rmSync(path);
    writeFileSync(path, '{}\n');
    installHooks(target, commandFor('codex'));
    uninstallHooks(target, commandFor('codex'));
    expect(read(path)).toBe('{}\n');
    // Created by install, then the user added a setting: their setting stays, in the file.
    rmSync(path);
    installHooks(target, commandFor('codex'));
    writeFileSync(path, read(path).replace('{\n', '{\n  "model": "o3",\n'));
    uninstallHooks(target, commandFor('codex'));
    expect(read(path)).toBe('{\n  "model": "o3"\n}\n');
  });

  it.each([
    ['an empty root', '{}'],
    ['an empty root with inner whitespace', '{\n}\n'],
    ['an empty hooks object', '{\n  "hooks": {}\n}\n'],
    ['an empty hooks object spread over lines', '{\n  "hooks": {\n  }\n}\n'],
    ['empty event arrays', '{\n  "hooks": {\n    "Stop": [],\n    "SessionStart": [ /* none */ ]\n  }\n}\n'],
    ['a single-line file', '{"model":"o3","hooks":{"Stop":[{"hooks":[{"type":"command","command":"x"}]}]}}'],
    ['a leading BOM', '\uFEFF{\n  "a": 1\n}\n'],
  ])('round-trips %s byte for byte', (_, original) => {
    for (const agent of JSON_AGENTS) {
      const root = tempDir();
      const path = hookConfigPath(projectTarget(agent, root));
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, original);
      expect(installHooks(projectTarget(agent, root), commandFor(agent)).changed).toBe(true);
      const installed = read(path);
      if (!installed.includes('/*')) strictParse(installed); // still strict JSON for agents that need it
      expect(hooksStatus(projectTarget(agent, root), commandFor(agent)).installed).toBe(true);
      uninstallHooks(projectTarget(agent, root), commandFor(agent));
      expect(read(path)).toBe(original);
    }
  });
});

describe('hooksStatus', () => {
  it('reports missing, partial and complete installs', () => {
    const root = tempDir();
    const target = projectTarget('gemini', root);
    const none = Object.fromEntries(HOOK_EVENTS.gemini.map((event) => [event, false]));
    expect(hooksStatus(target, commandFor('gemini'))).toEqual({
      path: hookConfigPath(target),
      exists: false,
      installed: false,
      events: none,
      staleCommands: [],
    });
    const path = hookConfigPath(target);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, JSON.stringify({ hooks: { BeforeAgent: [{ hooks: [{ type: 'command', command: commandFor('gemini') }] }] } }));
    const partial = hooksStatus(target, commandFor('gemini'));
    expect(partial).toMatchObject({ exists: true, installed: false, staleCommands: [] });
    expect(partial.events).toEqual({ ...none, BeforeAgent: true });
    installHooks(target, commandFor('gemini'));
    const all = hooksStatus(target, commandFor('gemini'));
    expect(all.installed).toBe(true);
    expect(Object.values(all.events).every(Boolean)).toBe(true);
    // Another agent's command is not ours: for claude nothing is installed in this file.
    expect(hooksStatus(target, commandFor('claude')).staleCommands).toEqual([commandFor('gemini')]);
  });
});

// ---------------------------------------------------------------------------------------------
// Round-trip property over generated user configs.
//
// The generator prints JSON values itself so it can vary layout: indentation (2, 4, tab), CRLF,
// final newline or not, multi-line or inline containers, line and block comments before members,
// trailing commas, and empty containers with or without whitespace/comments inside.
// Constraint, honestly stated: the root is always an object with its own text. An empty or
// whitespace-only file is replaced whole by install and given back from a record under
// TURNKEEPER_HOME; that case is pinned by its own test below instead.

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
interface Layout {
  readonly unit: string;
  readonly eol: string;
  /** Random choices, consumed in order (cyclically) by the printer. */
  readonly choices: readonly number[];
}

function printer(layout: Layout): (value: Json) => string {
  let cursor = 0;
  const pick = (n: number): number => {
    const choice = layout.choices[cursor++ % layout.choices.length] ?? 0;
    return choice % n;
  };
  const { unit, eol } = layout;
  const emptyInterior = (indent: string): string =>
    ['', '', ' ', `${eol}${indent}`, ' /* empty */ ', `${eol}${indent}${unit}// nothing yet${eol}${indent}`][pick(6)] ?? '';
  const print = (value: Json, indent: string): string => {
    if (value === null || typeof value !== 'object') return JSON.stringify(value);
    const entries: [string | undefined, Json][] = Array.isArray(value) ? value.map((item) => [undefined, item]) : Object.entries(value);
    const [open, close] = Array.isArray(value) ? ['[', ']'] : ['{', '}'];
    if (entries.length === 0) return open + emptyInterior(indent) + close;
    const member = ([key, item]: [string | undefined, Json], inner: string): string =>
      (key === undefined ? '' : `${JSON.stringify(key)}: `) + print(item, inner);
    if (pick(4) === 0) {
      // inline
      return `${open}${entries.map((entry) => member(entry, indent)).join(', ')}${pick(5) === 0 ? ',' : ''}${close}`;
    }
    const inner = indent + unit;
    const lines = entries.map((entry, index) => {
      const comment = [``, ``, ``, `// note ${index}${eol}${inner}`, `/* note */ `][pick(5)] ?? '';
      const comma = index < entries.length - 1 ? ',' : pick(5) === 0 ? ',' : '';
      const after = index === entries.length - 1 && pick(6) === 0 ? ' // last' : '';
      return `${inner}${comment}${member(entry, inner)}${comma}${after}`;
    });
    return `${open}${eol}${lines.join(eol)}${eol}${indent}${close}`;
  };
  return (value) => print(value, '');
}

const ALL_EVENTS = [...new Set([...HOOK_EVENTS.codex, ...HOOK_EVENTS.gemini, 'Notification'])];
const scalar = fc.oneof(fc.constant(null), fc.boolean(), fc.integer(), fc.string({ maxLength: 12 }));
const userValue: fc.Arbitrary<Json> = fc.letrec<{ value: Json }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    scalar,
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), tie('value'), { maxKeys: 3 }),
  ),
})).value;
const userGroup: fc.Arbitrary<Json> = fc.record(
  {
    matcher: fc.constantFrom('Bash', 'Edit|Write', '*', ''),
    hooks: fc.array(
      fc.record(
        { type: fc.constant('command'), command: fc.constantFrom('npm run lint', 'say done', "echo 'hi'", '/usr/bin/notify'), timeout: fc.nat(600) },
        { requiredKeys: ['type', 'command'] },
      ),
      { maxLength: 2 },
    ),
  },
  { requiredKeys: ['hooks'] },
);
const userHooks: fc.Arbitrary<Json> = fc.dictionary(fc.constantFrom(...ALL_EVENTS), fc.array(userGroup, { maxLength: 2 }), { maxKeys: 4 });
const userConfig: fc.Arbitrary<Json> = fc
  .record({
    settings: fc.dictionary(
      fc.string({ minLength: 1, maxLength: 10 }).filter((key) => key !== 'hooks'),
      userValue,
      { maxKeys: 4 },
    ),
    hooks: fc.option(userHooks, { nil: undefined }),
    hooksAt: fc.nat(),
  })
  .map(({ settings, hooks, hooksAt }) => {
    if (hooks === undefined) return settings;
    const entries = Object.entries(settings);
    entries.splice(hooksAt % (entries.length + 1), 0, ['hooks', hooks]);
    return Object.fromEntries(entries);
  });
const layout = fc.record({
  unit: fc.constantFrom('  ', '    ', '\t'),
  eol: fc.constantFrom('\n', '\r\n'),
  finalNewline: fc.boolean(),
  leadingComment: fc.boolean(),
  choices: fc.array(fc.nat(1000), { minLength: 1, maxLength: 64 }),
});

describe('install then uninstall round-trips any user file', () => {
  it('property: byte-for-byte, for every agent, with comments, indentation, CRLF', () => {
    fc.assert(
      fc.property(userConfig, layout, fc.constantFrom(...JSON_AGENTS), (config, style, agent) => {
        const body = printer(style)(config);
        const original = (style.leadingComment ? `// user settings${style.eol}` : '') + body + (style.finalNewline ? style.eol : '');
        const root = mkdtempSync(join(tmpdir(), 'tk-prop-'));
        try {
          const target = projectTarget(agent, root);
          const path = hookConfigPath(target);
          mkdirSync(dirname(path), { recursive: true });
          writeFileSync(path, original);
          const command = commandFor(agent);
          expect(installHooks(target, command).changed).toBe(true);
          const installed = read(path);
          // The user's settings are unchanged, our hooks are all there.
          const before = jsoncParse(original) as Record<string, unknown>;
          const after = jsoncParse(installed) as Record<string, unknown>;
          expect({ ...after, hooks: undefined }).toEqual({ ...before, hooks: undefined });
          expect(hooksStatus(target, command).installed).toBe(true);
          // A strict JSON file stays strict JSON (Codex and Claude parse it strictly).
          let strict = true;
          try {
            JSON.parse(original);
          } catch {
            strict = false;
          }
          if (strict) JSON.parse(installed);
          // Idempotent.
          expect(installHooks(target, command).changed).toBe(false);
          // Uninstalling (by exact command, or by pattern) restores the original bytes.
          expect(uninstallHooks(target, command).changed).toBe(true);
          expect(read(path)).toBe(original);
          installHooks(target, command);
          uninstallHooks(target);
          expect(read(path)).toBe(original);
        } finally {
          rmSync(root, { recursive: true, force: true });
        }
      }),
      { numRuns: Number(process.env.TK_PROPERTY_RUNS ?? 300) },
    );
  }, 900_000);

  it('the generator reaches the shapes that matter', () => {
    const samples = fc.sample(fc.tuple(userConfig, layout), { numRuns: 600, seed: 7 }).map(([config, style]) => ({
      config: config as Record<string, unknown>,
      text: printer(style)(config),
      style,
    }));
    const share = (test: (sample: (typeof samples)[number]) => boolean): number => samples.filter(test).length;
    expect(share(({ config }) => config.hooks === undefined)).toBeGreaterThan(30);
    expect(share(({ config }) => Object.keys((config.hooks as object | undefined) ?? {}).length > 0)).toBeGreaterThan(30);
    expect(share(({ text }) => /"hooks": \{\s*(\/\*[^*]*\*\/\s*|\/\/[^\n]*\s*)?\}/.test(text))).toBeGreaterThan(5); // empty hooks
    expect(share(({ text }) => /"(SessionStart|Stop|PreToolUse|BeforeAgent)": \[\s*(\/\*[^*]*\*\/\s*)?\]/.test(text))).toBeGreaterThan(5); // empty event
    expect(share(({ text }) => text.includes('//'))).toBeGreaterThan(30);
    expect(share(({ text }) => text.includes('/*'))).toBeGreaterThan(30);
    expect(share(({ text }) => /,\s*[}\]]/.test(text))).toBeGreaterThan(30); // trailing commas
    expect(share(({ style }) => style.eol === '\r\n')).toBeGreaterThan(100);
    expect(share(({ style, text }) => style.unit === '\t' && text.includes('\n\t'))).toBeGreaterThan(50);
    expect(share(({ text }) => text === '{}')).toBeGreaterThan(3);
  });

  it('an empty or whitespace-only file is replaced by a fresh config, and uninstall gives it back', () => {
    for (const original of ['', '  \n', '\uFEFF\r\n']) {
      const root = tempDir();
      const path = hookConfigPath(projectTarget('claude', root));
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, original);
      installHooks(projectTarget('claude', root), commandFor('claude'));
      expect(hooksStatus(projectTarget('claude', root), commandFor('claude')).installed).toBe(true);
      uninstallHooks(projectTarget('claude', root), commandFor('claude'));
      expect(read(path)).toBe(original);
    }
  });

  it('property: decoding bytes to text and encoding it back gives the same bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), fc.string({ unit: 'binary', maxLength: 16 }), (raw, text) => {
        const decoded = decodeBytes(raw);
        expect(encodeText(decoded).toString('hex')).toBe(Buffer.from(raw).toString('hex'));
        // Valid UTF-8 decodes as UTF-8, so keys and commands compare as the text they are.
        const utf8 = Buffer.from(text, 'utf8');
        expect(decodeBytes(utf8)).toBe(utf8.toString('utf8'));
        expect(encodeText(decodeBytes(Buffer.concat([utf8, Buffer.from(raw)]))).equals(Buffer.concat([utf8, Buffer.from(raw)]))).toBe(true);
      }),
      { numRuns: 2000 },
    );
    // Overlong forms, encoded surrogates and code points past U+10FFFF are bytes, not characters.
    for (const sequence of [
      [0xc0, 0x80],
      [0xe0, 0x80, 0x80],
      [0xed, 0xa0, 0x80],
      [0xf4, 0x90, 0x80, 0x80],
      [0xf0, 0x9f, 0x98],
    ]) {
      expect(decodeBytes(Buffer.from(sequence))).toBe(String.fromCharCode(...sequence.map((b) => 0xdc00 + b)));
    }
    expect(decodeBytes(Buffer.from('é😀', 'utf8'))).toBe('é😀'); // control: well-formed sequences stay characters
  });

  it('property: any bytes inside a string or a block comment survive install and uninstall', () => {
    let refused = 0;
    let runs = 0;
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 24 }).map((raw) => [...raw].filter((b) => b >= 0x20 && b !== 0x22 && b !== 0x5c)), // no quote, backslash or control byte
        fc.uint8Array({ maxLength: 24 }).map((raw) => [...raw].filter((b) => b !== 0x2a)), // no `*`, so the comment cannot end early
        fc.constantFrom(...JSON_AGENTS),
        (inString, inComment, agent) => {
          runs++;
          const root = mkdtempSync(join(tmpdir(), 'tk-bytes-'));
          try {
            const target = projectTarget(agent, root);
            const path = hookConfigPath(target);
            mkdirSync(dirname(path), { recursive: true });
            const original = bytes('{\n  /* ', inComment, ' */\n  "x": "', inString, '"\n}\n');
            writeFileSync(path, original);
            try {
              installHooks(target, commandFor(agent));
            } catch (error) {
              // Only a sequence that decodes to something JSON forbids in a string may stop it, untouched.
              if (!(error instanceof HookConfigError)) throw error;
              refused++;
              expect(hex(path)).toBe(original.toString('hex'));
              return;
            }
            expect(readFileSync(path).includes(bytes('"x": "', inString, '"'))).toBe(true);
            uninstallHooks(target, commandFor(agent));
            expect(hex(path)).toBe(original.toString('hex'));
          } finally {
            rmSync(root, { recursive: true, force: true });
          }
        },
      ),
      { numRuns: 200 },
    );
    expect(refused).toBeLessThan(runs / 10);
  });
});

// ---------------------------------------------------------------------------------------------
// The shim

describe('shim', () => {
  const NODE = process.execPath;
  const script = (dir: string): string => {
    const path = join(dir, "echo args's.js");
    writeFileSync(path, 'process.stdout.write(JSON.stringify({ argv: process.argv.slice(2), electron: process.env.ELECTRON_RUN_AS_NODE ?? null }));\n');
    return path;
  };

  it('is written with mode 0755, parses with sh -n, and reports whether it changed', () => {
    const home = join(tempDir(), "tk home's");
    const target = { runtime: NODE, script: '/opt/turnkeeper/dist/cli.js', electronRunAsNode: false };
    expect(writeShim(home, target)).toBe(true);
    const path = shimPath(home);
    expect(path).toBe(join(home, 'bin', 'turnkeeper'));
    expect(statSync(path).mode & 0o777).toBe(0o755);
    // The first write creates TURNKEEPER_HOME and its bin/: private from the start (0700), not 0755.
    expect(statSync(home).mode & 0o777).toBe(0o700);
    expect(statSync(join(home, 'bin')).mode & 0o777).toBe(0o700);
    expect(spawnSync('sh', ['-n', path]).status).toBe(0);
    const content = read(path);
    expect(content.split('\n').slice(0, 2)).toEqual([
      '#!/bin/sh',
      "# Turnkeeper shim: rewritten by every install or upgrade. Agents' hook commands point here, so they never change.",
    ]);
    expect(content).not.toContain('ELECTRON_RUN_AS_NODE');
    expect(writeShim(home, target)).toBe(false);
    chmodSync(path, 0o644);
    expect(writeShim(home, target)).toBe(false);
    expect(statSync(path).mode & 0o777).toBe(0o755); // a changed mode is repaired
    expect(readShim(home)).toEqual(target);
    const upgraded = { runtime: "/usr/lib/code/it's code", script: '/new/dist/cli.js', electronRunAsNode: true };
    expect(writeShim(home, upgraded)).toBe(true);
    expect(read(path)).toContain('\nexport ELECTRON_RUN_AS_NODE=1\n');
    expect(spawnSync('sh', ['-n', path]).status).toBe(0);
    expect(readShim(home)).toEqual(upgraded);
    expect(readdirSync(join(home, 'bin'))).toEqual(['turnkeeper']); // no temp files left
  });

  it('reads back undefined when there is no shim or it is not ours', () => {
    const home = tempDir();
    expect(readShim(home)).toBeUndefined();
    mkdirSync(join(home, 'bin'));
    writeFileSync(shimPath(home), '#!/bin/sh\necho hello\n');
    expect(readShim(home)).toBeUndefined();
  });

  it('runs its script with the arguments, and the hook command from the agent config runs it', () => {
    const dir = tempDir();
    const home = join(dir, "tk home's");
    writeShim(home, { runtime: NODE, script: script(dir), electronRunAsNode: false });
    const args = ['hook', '--agent', 'codex', "it's", 'two words', '$HOME', ''];
    const direct = spawnSync(shimPath(home), args, { encoding: 'utf8' });
    expect(direct.status).toBe(0);
    expect(JSON.parse(direct.stdout)).toEqual({ argv: args, electron: null });
    // The command written into the agent's config, run the way agents run it (through a shell).
    const root = tempDir();
    const command = installedHookCommand('codex', shimPath(home));
    installHooks(projectTarget('codex', root), command);
    const written = hooksOf(strictParse(read(hookConfigPath(projectTarget('codex', root))))).Stop?.[0]?.hooks[0]?.command;
    expect(written).toBe(command);
    const viaShell = spawnSync('sh', ['-c', String(written)], { encoding: 'utf8' });
    expect(JSON.parse(viaShell.stdout)).toEqual({ argv: ['hook', '--agent', 'codex'], electron: null });
    // With electronRunAsNode the runtime gets ELECTRON_RUN_AS_NODE=1, which it did not get above.
    writeShim(home, { runtime: NODE, script: script(dir), electronRunAsNode: true });
    const electron = spawnSync('sh', ['-c', command], { encoding: 'utf8' });
    expect(JSON.parse(electron.stdout)).toEqual({ argv: ['hook', '--agent', 'codex'], electron: '1' });
  });

  it('passes on an absolute TURNKEEPER_HOME; a relative or empty one counts as unset, so the installed home stands in', () => {
    const dir = tempDir();
    const printer = join(dir, 'home.js');
    writeFileSync(printer, 'process.stdout.write(process.env.TURNKEEPER_HOME ?? "(unset)");\n');
    const installed = join(dir, 'installed home');
    writeShim(installed, { runtime: NODE, script: printer, electronRunAsNode: false, home: installed });
    const homeSeen = (value: string | undefined) => {
      const env: Record<string, string> = { PATH: process.env.PATH ?? '' };
      if (value !== undefined) env.TURNKEEPER_HOME = value;
      return spawnSync(shimPath(installed), [], { env, encoding: 'utf8' }).stdout;
    };
    expect(homeSeen('/elsewhere/home')).toBe('/elsewhere/home');
    expect(homeSeen(undefined)).toBe(installed);
    expect(homeSeen('')).toBe(installed);
    expect(homeSeen('.tk')).toBe(installed);
  });
});

// Copilot CLI (1.0.102): camelCase events whose payloads name no event, so each installed command
// names its own (`--event`); flat entries with `timeoutSec`; `.github/hooks/turnkeeper.json` (a file of
// its own) in a repository, the `hooks` key of `$COPILOT_HOME/settings.json` for the user.
describe('Copilot CLI hooks', () => {
  const COPILOT_EVENTS = ['sessionStart', 'userPromptSubmitted', 'preToolUse', 'postToolUse', 'agentStop'];
  const eventCmd = (event: string): string => `${commandFor('copilot')} --event ${event}`;

  it('lives in $COPILOT_HOME/settings.json (default ~/.copilot) and .github/hooks/turnkeeper.json, one command per camelCase event', () => {
    expect(HOOK_EVENTS.copilot).toEqual(COPILOT_EVENTS);
    expect(hookConfigPath({ agent: 'copilot', scope: 'user', env: { HOME: '/h' } })).toBe('/h/.copilot/settings.json');
    expect(hookConfigPath({ agent: 'copilot', scope: 'user', env: { HOME: '/h', COPILOT_HOME: '/c' } })).toBe('/c/settings.json');
    expect(hookConfigPath({ agent: 'copilot', scope: 'user', env: { HOME: '/h', COPILOT_HOME: '' } })).toBe('/h/.copilot/settings.json');
    expect(hookConfigPath(projectTarget('copilot', '/repo'))).toBe('/repo/.github/hooks/turnkeeper.json');
    // Every per-event command is recognised as Turnkeeper's, and sh splits it back into its words.
    for (const event of COPILOT_EVENTS) expect(TURNKEEPER_COMMAND_PATTERN.test(eventCmd(event))).toBe(true);
    expect(TURNKEEPER_COMMAND_PATTERN.test(`${commandFor('copilot')} --event rm -rf`)).toBe(false);
    const words = spawnSync('sh', ['-c', `set -- ${eventCmd('preToolUse')}; printf '%s\\n' "$@"`], { encoding: 'utf8' });
    expect(words.stdout).toBe(`${SHIM}\nhook\n--agent\ncopilot\n--event\npreToolUse\n`);
  });

  it("merges into the user's settings.json, keeps their own hooks and comments, and gives the bytes back", () => {
    const root = tempDir();
    const env = { HOME: join(root, 'home'), COPILOT_HOME: join(root, 'cop') };
    const target: HookTarget = { agent: 'copilot', scope: 'user', env };
    const path = hookConfigPath(target);
    mkdirSync(dirname(path), { recursive: true });
    const original = [
      '{',
      '  // my model',
      '  "model": "claude-sonnet-4.5",',
      '  "trustedFolders": ["/work"],',
      '  "hooks": {',
      '    "sessionStart": [{ "type": "command", "bash": "echo hi", "timeoutSec": 5 }],',
      '    "errorOccurred": [{ "type": "command", "command": "notify-send oops" }]',
      '  }',
      '}',
      '',
    ].join('\n');
    writeFileSync(path, original);
    expect(installHooks(target, commandFor('copilot')).changed).toBe(true);
    const value = jsoncParse(read(path)) as { model: string; hooks: Record<string, Record<string, unknown>[]> };
    expect(value.model).toBe('claude-sonnet-4.5');
    expect(value.hooks.sessionStart).toEqual([
      { type: 'command', bash: 'echo hi', timeoutSec: 5 },
      { type: 'command', command: eventCmd('sessionStart'), timeoutSec: 15 },
    ]);
    expect(value.hooks.errorOccurred).toHaveLength(1);
    for (const event of COPILOT_EVENTS) expect(value.hooks[event]?.some((entry) => entry.command === eventCmd(event))).toBe(true);
    expect(read(path)).toContain('// my model');
    const status = hooksStatus(target, commandFor('copilot'));
    expect(status).toMatchObject({ exists: true, installed: true, staleCommands: [] });
    expect(installHooks(target, commandFor('copilot')).changed).toBe(false);
    expect(uninstallHooks(target, commandFor('copilot')).changed).toBe(true);
    expect(read(path)).toBe(original);
  });

  it('status: a partial install, and a command filed under the wrong event, which is stale', () => {
    const root = tempDir();
    const target = projectTarget('copilot', root);
    const path = hookConfigPath(target);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(
      path,
      JSON.stringify(
        {
          version: 1,
          hooks: {
            userPromptSubmitted: [{ type: 'command', command: eventCmd('userPromptSubmitted') }],
            agentStop: [{ type: 'command', command: eventCmd('preToolUse') }],
          },
        },
        null,
        2,
      ),
    );
    const status = hooksStatus(target, commandFor('copilot'));
    expect(status.installed).toBe(false);
    expect(status.events).toEqual({ sessionStart: false, userPromptSubmitted: true, preToolUse: false, postToolUse: false, agentStop: false });
    expect(status.staleCommands).toEqual([eventCmd('preToolUse')]);
    // Uninstall without a command removes every Turnkeeper-looking entry, the misfiled one included.
    uninstallHooks(target);
    expect(strictParse(read(path))).toEqual({ version: 1 });
  });

  it('`hooks install|status|uninstall --agent copilot` round-trip through the real CLI, project and user scope', () => {
    const world = makeWorld('tk-copilot-hooks');
    try {
      const copilotHome = join(world.root, 'cop');
      const env = { COPILOT_HOME: copilotHome };
      // Project scope: a file of its own, created and then deleted whole.
      const project = join(world.repo, '.github', 'hooks', 'turnkeeper.json');
      const install = world.cli(['hooks', 'install', '--agent', 'copilot', '--scope', 'project', '--json'], { env });
      expect(install.code, install.stderr).toBe(0);
      const installed = JSON.parse(install.stdout) as { path: string; command: string; trustHint: unknown; changed: boolean };
      expect(installed).toMatchObject({ path: project, changed: true });
      // Project scope names no path of this machine (spec §8): `turnkeeper` from PATH.
      expect(installed.command).toBe('turnkeeper hook --agent copilot --event sessionStart');
      const written = strictParse(read(project)) as { hooks: Record<string, unknown[]> };
      expect(Object.keys(written.hooks)).toEqual(COPILOT_EVENTS);
      expect(written.hooks.preToolUse).toEqual([{ type: 'command', command: 'turnkeeper hook --agent copilot --event preToolUse', timeoutSec: 15 }]);
      const status = world.cli(['hooks', 'status', '--agent', 'copilot', '--scope', 'project', '--json'], { env });
      expect(JSON.parse(status.stdout)).toEqual([expect.objectContaining({ agent: 'copilot', installed: true, path: project })]);
      const all = world.cli(['hooks', 'status', '--json'], { env });
      expect((JSON.parse(all.stdout) as { agent: string }[]).map((item) => item.agent)).toEqual([...AGENTS]);
      const uninstall = world.cli(['hooks', 'uninstall', '--agent', 'copilot', '--scope', 'project', '--json'], { env });
      expect(JSON.parse(uninstall.stdout)).toMatchObject({ changed: true, deleted: true });
      expect(existsSync(project)).toBe(false);

      // User scope: the hooks key of $COPILOT_HOME/settings.json, next to the user's settings.
      mkdirSync(copilotHome, { recursive: true });
      const settings = join(copilotHome, 'settings.json');
      const before = '{\n  "model": "gpt-5"\n}\n';
      writeFileSync(settings, before);
      expect(world.cli(['hooks', 'install', '--agent', 'copilot'], { env }).code).toBe(0);
      expect((strictParse(read(settings)) as { model: string }).model).toBe('gpt-5');
      const userStatus = world.cli(['hooks', 'status', '--agent', 'copilot'], { env });
      expect(userStatus.stdout).toBe(`copilot installed  ${settings}\n`);
      expect(world.cli(['hooks', 'uninstall', '--agent', 'copilot'], { env }).code).toBe(0);
      expect(read(settings)).toBe(before);
    } finally {
      world.cleanup();
    }
  });

  it('doctor: project hooks in a folder Copilot does not trust are a problem; trustedFolders (or COPILOT_ALLOW_ALL=true) clears it', async () => {
    const root = tempDir();
    const copilotHome = join(root, 'cop');
    const repo = join(root, 'work', 'repo');
    mkdirSync(repo, { recursive: true });
    const env = { HOME: join(root, 'home'), TURNKEEPER_HOME: join(root, 'tk'), COPILOT_HOME: copilotHome };
    installAgentHooks(
      { agent: 'copilot', scope: 'project', env, projectRoot: repo },
      { runtime: process.execPath, script: '/opt/turnkeeper/dist/cli.js', electronRunAsNode: false },
    );
    const problems = async (extra: Record<string, string> = {}) =>
      (await doctorReport({ ...env, ...extra }, repo, () => Promise.resolve(undefined))).problems.filter((p) => p.startsWith('Copilot CLI'));
    expect(await problems()).toEqual([expect.stringContaining(`Copilot CLI skips ${join(repo, '.github', 'hooks')} until the folder is trusted`)]);
    // Copilot's own config.json (comments and all) with a parent folder trusted: trust covers the folders under it.
    mkdirSync(copilotHome, { recursive: true });
    writeFileSync(
      join(copilotHome, 'config.json'),
      `// User settings belong in settings.json.\n// This file is managed automatically.\n{\n  "trustedFolders": [\n    "${join(root, 'work')}"\n  ]\n}\n`,
    );
    expect(await problems()).toEqual([]);
    // A sibling that only shares a prefix is not under it.
    writeFileSync(join(copilotHome, 'config.json'), JSON.stringify({ trustedFolders: [join(root, 'work', 're')] }));
    expect(await problems()).toHaveLength(1);
    expect(await problems({ COPILOT_ALLOW_ALL: 'true' })).toEqual([]);
    // The root folder trusted covers every folder (its path ends in the separator already).
    writeFileSync(join(copilotHome, 'config.json'), JSON.stringify({ trustedFolders: ['/'] }));
    expect(await problems()).toEqual([]);
    // User-scope hooks run in any folder: no trust problem for them.
    uninstallAgentHooks({ agent: 'copilot', scope: 'project', env, projectRoot: repo });
    installAgentHooks(
      { agent: 'copilot', scope: 'user', env, projectRoot: repo },
      { runtime: process.execPath, script: '/opt/turnkeeper/dist/cli.js', electronRunAsNode: false },
    );
    expect(await problems()).toEqual([]);
  });
});

describe('OpenCode plugin', () => {
  const PLUGIN = join('.opencode', 'plugin', 'turnkeeper.js');
  const command = commandFor('opencode');

  it('lives in $XDG_CONFIG_HOME/opencode/plugin (default ~/.config/opencode/plugin) and .opencode/plugin of the project', () => {
    expect(hookConfigPath({ agent: 'opencode', scope: 'user', env: { HOME: '/h' } })).toBe('/h/.config/opencode/plugin/turnkeeper.js');
    expect(hookConfigPath({ agent: 'opencode', scope: 'user', env: { HOME: '/h', XDG_CONFIG_HOME: '/x' } })).toBe('/x/opencode/plugin/turnkeeper.js');
    expect(hookConfigPath(projectTarget('opencode', '/r'))).toBe(join('/r', PLUGIN));
  });

  it('install writes the whole plugin for the command, status reads it back, uninstall deletes it and the directory stays', () => {
    const root = tempDir();
    const target = projectTarget('opencode', root);
    const path = join(root, PLUGIN);
    expect(hooksStatus(target, command)).toMatchObject({ exists: false, installed: false });
    expect(installHooks(target, command)).toMatchObject({ path, changed: true });
    const source = read(path);
    expect(source).toContain(`const COMMAND = ${JSON.stringify(command)};`);
    expect(hooksStatus(target, command)).toEqual({
      path,
      exists: true,
      installed: true,
      events: { chatMessage: true, toolExecuteBefore: true, toolExecuteAfter: true, sessionIdle: true },
      staleCommands: [],
    });
    expect(installHooks(target, command).changed).toBe(false); // idempotent
    // Another command (an older shim path): stale, and install replaces it in place.
    const other = installedHookCommand('opencode', '/old/bin/turnkeeper');
    expect(hooksStatus(target, other)).toMatchObject({ installed: false, staleCommands: [command] });
    // Uninstall of a command that is not the installed one leaves the file (control: the right one removes it).
    expect(uninstallHooks(target, other).changed).toBe(false);
    expect(existsSync(path)).toBe(true);
    expect(uninstallHooks(target, command)).toMatchObject({ changed: true, deleted: true });
    expect(existsSync(path)).toBe(false);
    expect(existsSync(dirname(path))).toBe(true);
    // Without install's creation record (a lost backup directory) the plugin is still deleted, not emptied.
    installHooks(target, command);
    rmSync(backupDirOf(target), { recursive: true });
    expect(uninstallHooks(target, command)).toMatchObject({ changed: true, deleted: true });
    expect(existsSync(path)).toBe(false);
  });

  it("a plugin file that is not Turnkeeper's is never overwritten or removed; an edited one of ours is named, not guessed at", () => {
    const root = tempDir();
    const target = projectTarget('opencode', root);
    const path = join(root, PLUGIN);
    mkdirSync(dirname(path), { recursive: true });
    const theirs = 'export const Mine = async () => ({});\n';
    writeFileSync(path, theirs);
    expect(() => installHooks(target, command)).toThrow(HookConfigError);
    expect(read(path)).toBe(theirs);
    expect(uninstallHooks(target).changed).toBe(false);
    expect(read(path)).toBe(theirs);
    rmSync(path);
    installHooks(target, command);
    const edited = read(path).replace('TIMEOUT_MS = 15000', 'TIMEOUT_MS = 1');
    expect(edited).not.toBe(read(path)); // control: the edit changed it
    writeFileSync(path, edited);
    const edits = hooksStatus(target, command);
    expect(edits.installed).toBe(false);
    expect(edits.error).toContain('changed since Turnkeeper wrote it');
    expect(() => uninstallHooks(target, command)).toThrow(/changed since Turnkeeper wrote it/);
    expect(read(path)).toBe(edited);
    // Install puts ours back (the header says it is Turnkeeper's), and then uninstall removes it.
    expect(installHooks(target, command).changed).toBe(true);
    expect(uninstallHooks(target, command).changed).toBe(true);
  });

  it('the plugin fails open: with a hook command that fails, hangs past its timeout or prints garbage, the prompt goes on unchanged', async () => {
    const root = tempDir();
    const pluginFor = (hookCommand: string): string => {
      const dir = mkdtempSync(join(root, 'p-'));
      const target = projectTarget('opencode', dir);
      installHooks(target, hookCommand);
      return join(dir, PLUGIN);
    };
    const run = async (hookCommand: string, kind: 'prompt' | 'tool') => {
      const path = pluginFor(hookCommand);
      // A copy with a short timeout, so the hang case ends quickly; the rest of the file is what install wrote.
      const fast = path.replace(/\.js$/, '.fast.mjs');
      writeFileSync(fast, read(path).replace('TIMEOUT_MS = 15000', 'TIMEOUT_MS = 300'));
      const module = (await import(fast)) as {
        TurnkeeperPlugin: (input: { directory: string }) => Promise<Record<string, (...args: unknown[]) => Promise<void>>>;
      };
      const hooks = await module.TurnkeeperPlugin({ directory: root });
      const output = {
        message: { id: 'msg_1' },
        parts: [{ id: 'prt_0123456789abAAAAAAAAAAAAAA', type: 'text', text: 'hi #todo:fix-login', messageID: 'msg_1', sessionID: 'ses_1' }],
      };
      if (kind === 'prompt') await hooks['chat.message']!({ sessionID: 'ses_1' }, output);
      else await hooks['tool.execute.before']!({ tool: 'bash', sessionID: 'ses_1', callID: 'c' }, { args: {} });
      return output.parts;
    };
    for (const broken of ['exit 3 #', 'echo not-json #', '/nonexistent/turnkeeper', 'echo \'{"decision":1}\' #']) {
      expect(await run(broken, 'prompt'), broken).toHaveLength(1);
      await expect(run(broken, 'tool'), broken).resolves.toBeDefined();
    }
    // A hook that hangs (and a child of it that holds its stdout) is given up at the timeout, not waited for.
    const started = Date.now();
    expect(await run('sleep 30 #', 'prompt')).toHaveLength(1);
    expect(Date.now() - started).toBeLessThan(10_000);
    // Control: a hook that answers context adds one synthetic part; a denial fails the tool call.
    const parts = await run(`echo '{"additionalContext":"CTX"}' #`, 'prompt');
    expect(parts).toHaveLength(2);
    expect(parts[1]).toMatchObject({ type: 'text', text: 'CTX', synthetic: true, messageID: 'msg_1', sessionID: 'ses_1' });
    expect(String((parts[1] as { id: string }).id)).toMatch(/^prt_0123456789abz[0-9a-z]{13}$/);
    await expect(run(`echo '{"permissionDecision":"deny","permissionDecisionReason":"[lease_fenced] no"}' #`, 'tool')).rejects.toThrow('[lease_fenced] no');
    await expect(run(`echo '{"decision":"block","reason":"[lease_held] stop"}' #`, 'prompt')).rejects.toThrow('[lease_held] stop');
  });

  it('`hooks install|status|uninstall --agent opencode` round-trip through the real CLI at both scopes; doctor names OPENCODE_PURE', () => {
    const world = makeWorld('tk-opencode-hooks');
    try {
      const env = { XDG_CONFIG_HOME: join(world.root, 'xdg') };
      const project = join(world.repo, PLUGIN);
      const install = world.cli(['hooks', 'install', '--agent', 'opencode', '--scope', 'project', '--json'], { env });
      expect(install.code, install.stderr).toBe(0);
      expect(JSON.parse(install.stdout)).toMatchObject({ path: project, changed: true, command: 'turnkeeper hook --agent opencode --event chatMessage' });
      expect(read(project)).toContain('const COMMAND = "turnkeeper hook --agent opencode";');
      const status = world.cli(['hooks', 'status', '--agent', 'opencode', '--scope', 'project', '--json'], { env });
      expect(JSON.parse(status.stdout)).toEqual([expect.objectContaining({ agent: 'opencode', installed: true, path: project })]);
      const doctor = (extra: Record<string, string> = {}) =>
        JSON.parse(world.cli(['doctor', '--json'], { env: { ...env, ...extra } }).stdout) as {
          checks: { check: string; agent: string; status: string }[];
          problems: string[];
        };
      expect(doctor().checks).toContainEqual(expect.objectContaining({ check: 'config_syntax', agent: 'opencode', status: 'ok' }));
      expect(doctor().problems.join('\n')).not.toContain('OPENCODE_PURE');
      expect(doctor({ OPENCODE_PURE: '1' }).problems.join('\n')).toContain('OPENCODE_PURE is set');
      expect(JSON.parse(world.cli(['hooks', 'uninstall', '--agent', 'opencode', '--scope', 'project', '--json'], { env }).stdout)).toMatchObject({
        changed: true,
        deleted: true,
      });
      expect(existsSync(project)).toBe(false);

      const user = join(world.root, 'xdg', 'opencode', 'plugin', 'turnkeeper.js');
      expect(world.cli(['hooks', 'install', '--agent', 'opencode'], { env }).code).toBe(0);
      expect(read(user)).toContain(`hook --agent opencode`);
      expect(world.cli(['hooks', 'status', '--agent', 'opencode'], { env }).stdout).toBe(`opencode installed  ${user}\n`);
      expect(world.cli(['hooks', 'uninstall', '--agent', 'opencode'], { env }).code).toBe(0);
      expect(existsSync(user)).toBe(false);
    } finally {
      world.cleanup();
    }
  });
});

describe("doctor's on_path check for the editor", () => {
  it('with shimOnTerminalPath the shim counts as on PATH although the given PATH lacks it (control: without it, or without a shim, a problem)', async () => {
    const root = tempDir();
    const repo = join(root, 'repo');
    mkdirSync(repo);
    const tkHome = join(root, 'tk');
    const env = { HOME: join(root, 'home'), TURNKEEPER_HOME: tkHome, PATH: '/usr/bin:/bin' };
    installAgentHooks(
      { agent: 'claude', scope: 'project', env, projectRoot: repo },
      { runtime: process.execPath, script: '/opt/turnkeeper/dist/cli.js', electronRunAsNode: false },
    );
    const onPath = async (options?: { shimOnTerminalPath?: boolean }) =>
      (await doctorReport(env, repo, () => Promise.resolve(undefined), options)).checks.find((check) => check.check === 'on_path');
    expect(await onPath()).toMatchObject({ status: 'problem' });
    expect(await onPath({ shimOnTerminalPath: true })).toMatchObject({ status: 'ok', detail: like.stringContaining(shimPath(tkHome)) });
    rmSync(shimPath(tkHome));
    expect(await onPath({ shimOnTerminalPath: true })).toMatchObject({ status: 'problem' });
  });
});

describe('a repository whose config is not a regular file', () => {
  // A repository can commit `.claude/settings.json -> /dev/zero` (git keeps symlinks) or, through a
  // checkout script, leave a FIFO there. Every config read is bounded: a regular file of at most a few
  // MiB, or a problem named in the answer; nothing reads without end or blocks on an open.
  const run = (world: ReturnType<typeof makeWorld>, args: string[]) =>
    spawnSync(process.execPath, [join(__dirname, '../../dist/cli.js'), ...args], {
      cwd: world.repo,
      env: world.env,
      encoding: 'utf8',
      timeout: 20_000,
      input: '',
    });

  it.each([
    ['a symlink to /dev/zero', (path: string) => symlinkSync('/dev/zero', path), /character device, not a regular file/],
    ['a FIFO', (path: string) => spawnSync('mkfifo', [path]), /a FIFO, not a regular file/],
  ])('%s: hooks status, hooks install and doctor answer at once and name it (control: a normal file)', (_name, plant, kind) => {
    const world = makeWorld('tk-hostile-config');
    try {
      const path = join(world.repo, '.claude', 'settings.json');
      mkdirSync(dirname(path));
      plant(path);
      const status = run(world, ['hooks', 'status', '--agent', 'claude', '--scope', 'project', '--json']);
      expect(status.signal).toBeNull(); // not killed by the timeout
      expect(status.status).toBe(0);
      expect((JSON.parse(status.stdout) as { error?: string }[])[0]!.error).toMatch(kind);
      const install = run(world, ['hooks', 'install', '--agent', 'claude', '--scope', 'project']);
      expect(install.signal).toBeNull();
      expect(install.status).toBe(1);
      expect(install.stderr).toMatch(kind);
      const doctor = run(world, ['doctor', '--json']);
      expect(doctor.signal).toBeNull();
      expect(doctor.stdout).toContain(path);
      // In process too (the extension calls these): a problem, not a hang or a throw.
      expect(hooksStatus(projectTarget('claude', world.repo), 'x').error).toMatch(kind);
      expect(readJsonConfig(path)).toBeUndefined();
      expect(readConfigFile(path)).toMatchObject({ kind: 'refused', problem: like.stringMatching(kind) });

      // Control: the same path as a normal file is read and installed into.
      rmSync(path);
      writeFileSync(path, '{ "model": "opus" }\n');
      expect(run(world, ['hooks', 'install', '--agent', 'claude', '--scope', 'project']).status).toBe(0);
      const after = JSON.parse(run(world, ['hooks', 'status', '--agent', 'claude', '--scope', 'project', '--json']).stdout) as {
        installed: boolean;
        error?: string;
      }[];
      expect(after[0]).toMatchObject({ installed: true });
      expect(after[0]!.error).toBeUndefined();
      expect(readJsonConfig(path)).toMatchObject({ model: 'opus' });
    } finally {
      world.cleanup();
    }
  });

  it('a config over the size cap is refused unread (control: one just under it is read)', () => {
    const root = tempDir();
    const path = join(root, 'big.json');
    writeFileSync(path, `{"a":"${'x'.repeat(MAX_CONFIG_BYTES)}"}`);
    expect(readConfigFile(path)).toMatchObject({ kind: 'refused', problem: like.stringMatching(/over the \d+-byte limit/) });
    writeFileSync(path, `{"a":"${'x'.repeat(MAX_CONFIG_BYTES - 10)}"}`);
    expect(readConfigFile(path)).toMatchObject({ kind: 'bytes' });
  });
});
