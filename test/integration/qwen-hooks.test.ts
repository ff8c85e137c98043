// Qwen Code (0.24.4) hooks: Claude-shaped matcher groups in the `hooks` key of $QWEN_HOME/settings.json
// (default ~/.qwen; `~` and `~/` expand as Qwen's Storage expands them) and of the project's
// .qwen/settings.json, with the timeout in seconds; installed and removed through the real CLI at both
// scopes, the user's own settings kept byte for byte; and doctor's trust check, which only matters when
// the user turned Qwen's folder trust on. test/e2e/qwen.test.ts runs the real Qwen against them.
import { afterAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { HOOK_EVENTS, hookConfigPath, installedHookCommand, TURNKEEPER_COMMAND_PATTERN } from '../../src/agents/install';
import { doctorReport, installAgentHooks, uninstallAgentHooks } from '../../src/doctor/installation';
import { makeWorld } from '../support/world';
import { BIN } from '../support/agentHarness';

const roots: string[] = [];
const tempDir = (): string => {
  const dir = mkdtempSync(join(tmpdir(), 'tk-qwen-hooks-'));
  roots.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of roots) rmSync(dir, { recursive: true, force: true });
});
const RUNTIME = { runtime: process.execPath, script: '/opt/turnkeeper/dist/cli.js', electronRunAsNode: false };

describe('Qwen Code hooks', () => {
  it('live in $QWEN_HOME/settings.json (default ~/.qwen, ~ expanded as Qwen does) and .qwen/settings.json, the five Claude-style events', () => {
    expect(HOOK_EVENTS.qwen).toEqual(['SessionStart', 'UserPromptSubmit', 'PreToolUse', 'PostToolUse', 'Stop']);
    const user = (env: Record<string, string>) => hookConfigPath({ agent: 'qwen', scope: 'user', env });
    expect(user({ HOME: '/h' })).toBe('/h/.qwen/settings.json');
    expect(user({ HOME: '/h', QWEN_HOME: '/q' })).toBe('/q/settings.json');
    expect(user({ HOME: '/h', QWEN_HOME: '' })).toBe('/h/.qwen/settings.json');
    expect(user({ HOME: '/h', QWEN_HOME: '~' })).toBe('/h/settings.json');
    expect(user({ HOME: '/h', QWEN_HOME: '~/cfg/qwen' })).toBe('/h/cfg/qwen/settings.json');
    expect(hookConfigPath({ agent: 'qwen', scope: 'project', env: {}, projectRoot: '/repo' })).toBe('/repo/.qwen/settings.json');
    expect(TURNKEEPER_COMMAND_PATTERN.test(installedHookCommand('qwen', '/h/.turnkeeper/bin/turnkeeper'))).toBe(true);
  });

  it('`hooks install|status|uninstall --agent qwen` round-trip through the real CLI, user and project scope', () => {
    const world = makeWorld('tk-qwen-hooks');
    try {
      const home = join(world.root, 'home');
      const env = { HOME: home };
      // User scope: merged into the user's own settings (comments kept), given back byte for byte.
      const settings = join(home, '.qwen', 'settings.json');
      mkdirSync(join(home, '.qwen'), { recursive: true });
      const before = '// mine\n{\n  "security": { "auth": { "selectedType": "openai" } }\n}\n';
      writeFileSync(settings, before);
      const install = world.cli(['hooks', 'install', '--agent', 'qwen', '--json'], { env });
      expect(install.code, install.stderr).toBe(0);
      const written = JSON.parse(readFileSync(settings, 'utf8').replace('// mine\n', '')) as { security: unknown; hooks: Record<string, unknown> };
      expect(written.security).toEqual({ auth: { selectedType: 'openai' } });
      expect(Object.keys(written.hooks)).toEqual(HOOK_EVENTS.qwen);
      const command = `'${world.home}/bin/turnkeeper' hook --agent qwen`;
      expect(written.hooks.PreToolUse).toEqual([{ hooks: [{ type: 'command', command, timeout: 15 }] }]);
      expect(world.cli(['hooks', 'status', '--agent', 'qwen'], { env }).stdout).toBe(`qwen    installed  ${settings}\n`);
      expect(world.cli(['hooks', 'uninstall', '--agent', 'qwen'], { env }).code).toBe(0);
      expect(readFileSync(settings, 'utf8')).toBe(before);

      // Project scope: `turnkeeper` from PATH (no path of this machine in a file a repository commits).
      const project = join(world.repo, '.qwen', 'settings.json');
      const projectInstall = world.cli(['hooks', 'install', '--agent', 'qwen', '--scope', 'project', '--json'], { env });
      expect(projectInstall.code, projectInstall.stderr).toBe(0);
      expect(JSON.parse(projectInstall.stdout)).toMatchObject({ path: project, changed: true, command: 'turnkeeper hook --agent qwen' });
      const status = world.cli(['hooks', 'status', '--agent', 'qwen', '--scope', 'project', '--json'], { env });
      expect(JSON.parse(status.stdout)).toEqual([expect.objectContaining({ agent: 'qwen', installed: true, path: project })]);
      const uninstall = world.cli(['hooks', 'uninstall', '--agent', 'qwen', '--scope', 'project', '--json'], { env });
      expect(JSON.parse(uninstall.stdout)).toMatchObject({ changed: true, deleted: true });
    } finally {
      world.cleanup();
    }
  });

  it('a settings.json Qwen would reset (a trailing comma) is refused, untouched (control: comments pass, as Qwen strips them)', () => {
    const world = makeWorld('tk-qwen-syntax');
    try {
      const home = join(world.root, 'home');
      const settings = join(home, '.qwen', 'settings.json');
      mkdirSync(join(home, '.qwen'), { recursive: true });
      const broken = '{\n  "model": { "name": "qwen3" },\n}\n';
      writeFileSync(settings, broken);
      const refused = world.cli(['hooks', 'install', '--agent', 'qwen'], { env: { HOME: home } });
      expect(refused.code).not.toBe(0);
      expect(readFileSync(settings, 'utf8')).toBe(broken);
      writeFileSync(settings, '// comment\n{\n  "model": { "name": "qwen3" }\n}\n');
      expect(world.cli(['hooks', 'install', '--agent', 'qwen'], { env: { HOME: home } }).code).toBe(0);
    } finally {
      world.cleanup();
    }
  });

  it("doctor asks the real qwen its version (the tested one: ok) and reads its settings as Qwen does: a trailing comma is config_syntax's problem", () => {
    const world = makeWorld('tk-qwen-doctor');
    try {
      const home = join(world.root, 'home');
      const env = { HOME: home, TURNKEEPER_QWEN_BIN: join(BIN, 'qwen'), PATH: `${dirname(process.execPath)}:/usr/bin:/bin` };
      expect(world.cli(['hooks', 'install', '--agent', 'qwen'], { env }).code).toBe(0);
      type Row = { check: string; agent?: string; status: string; detail: string };
      const rows = () => (JSON.parse(world.cli(['doctor', '--json'], { env }).stdout) as { checks: Row[] }).checks.filter((r) => r.agent === 'qwen');
      expect(rows().find((r) => r.check === 'agent_version')).toMatchObject({ status: 'ok', detail: 'Qwen Code 0.24.4' });
      expect(rows().find((r) => r.check === 'config_syntax' && r.status === 'problem')).toBeUndefined();
      // A trailing comma: Qwen would reset this file to {} and run none of its hooks.
      const settings = join(home, '.qwen', 'settings.json');
      writeFileSync(settings, readFileSync(settings, 'utf8').replace(/\n}\n$/, ',\n}\n'));
      expect(rows().find((r) => r.check === 'config_syntax')).toMatchObject({ status: 'problem' });
    } finally {
      world.cleanup();
    }
  });

  it('doctor: project hooks are a problem only with folder trust on and the folder untrusted; TRUST_FOLDER or a TRUST_PARENT clears it', async () => {
    const root = tempDir();
    const qwenHome = join(root, 'qh');
    const repo = join(root, 'work', 'repo');
    mkdirSync(repo, { recursive: true });
    mkdirSync(qwenHome, { recursive: true });
    const env = { HOME: join(root, 'home'), TURNKEEPER_HOME: join(root, 'tk'), QWEN_HOME: qwenHome };
    installAgentHooks({ agent: 'qwen', scope: 'project', env, projectRoot: repo }, RUNTIME);
    const problems = async () => (await doctorReport(env, repo, () => Promise.resolve(undefined))).problems.filter((p) => p.startsWith('Qwen Code skips'));
    // Folder trust is off by default: every folder is trusted.
    expect(await problems()).toEqual([]);
    writeFileSync(join(qwenHome, 'settings.json'), '// mine\n{ "security": { "folderTrust": { "enabled": true } } }\n');
    expect(await problems()).toEqual([expect.stringContaining(`Qwen Code skips ${join(repo, '.qwen', 'settings.json')} until the folder is trusted`)]);
    writeFileSync(join(qwenHome, 'trustedFolders.json'), JSON.stringify({ [join(root, 'work')]: 'TRUST_FOLDER' }));
    expect(await problems()).toEqual([]);
    // A sibling that only shares a prefix is not under it; DO_NOT_TRUST trusts nothing.
    writeFileSync(join(qwenHome, 'trustedFolders.json'), JSON.stringify({ [join(root, 'work', 're')]: 'TRUST_FOLDER', [repo]: 'DO_NOT_TRUST' }));
    expect(await problems()).toHaveLength(1);
    // The deepest rule wins: DO_NOT_TRUST on the repository beats TRUST_FOLDER on its parent (control: without it, trusted).
    writeFileSync(join(qwenHome, 'trustedFolders.json'), JSON.stringify({ [join(root, 'work')]: 'TRUST_FOLDER', [repo]: 'DO_NOT_TRUST' }));
    expect(await problems()).toHaveLength(1);
    writeFileSync(join(qwenHome, 'trustedFolders.json'), JSON.stringify({ [root]: 'DO_NOT_TRUST', [join(root, 'work')]: 'TRUST_FOLDER' }));
    expect(await problems()).toEqual([]);
    // TRUST_PARENT on a file or folder trusts its parent, and what is under it.
    writeFileSync(join(qwenHome, 'trustedFolders.json'), JSON.stringify({ [join(repo, 'README.md')]: 'TRUST_PARENT' }));
    expect(await problems()).toEqual([]);
    // User-scope hooks run in every folder: no trust problem for them.
    writeFileSync(join(qwenHome, 'trustedFolders.json'), '{}');
    expect(await problems()).toHaveLength(1);
    uninstallAgentHooks({ agent: 'qwen', scope: 'project', env, projectRoot: repo });
    installAgentHooks({ agent: 'qwen', scope: 'user', env, projectRoot: repo }, RUNTIME);
    expect(await problems()).toEqual([]);
  });
});
