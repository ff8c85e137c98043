// `turnkeeper doctor` checks what each agent will actually do with Turnkeeper's hooks (spec §8): whether
// the agent can parse its config, whether the real Codex trusts the hooks (and loads a project's), whether
// the hooks are installed at both scopes, and whether a project-scope config finds `turnkeeper` on PATH.
// Each row is shown flagged and, as its control, clean. `hooks install` refuses a config its agent
// cannot parse.
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { like } from '../support/matchers';
import { codexBinaryPath, makeCodexHome, cleanupCodexHome, trustAllHooks, type CodexHome } from '../support/codexHarness';
import { makeWorld, type World } from '../support/world';
import { PROFILES } from '../../src/agents/profiles/index';
import { HOOK_EVENTS } from '../../src/agents/install';
/** Turnkeeper's hooks for Codex: the five and PermissionRequest (the live status `waiting`). */
const CODEX_HOOKS = HOOK_EVENTS.codex.length;

interface Row {
  check: string;
  agent: string;
  scope?: string;
  path?: string;
  status: 'ok' | 'problem' | 'unknown';
  detail: string;
  fix?: string;
}

let world: World;
let codex: CodexHome;
let env: Record<string, string>;

beforeEach(() => {
  world = makeWorld('tk-doctor-agents');
  codex = makeCodexHome({ prefix: 'tk-doctor-codex-' });
  writeFileSync(join(codex.codexHome, 'config.toml'), 'check_for_update_on_startup = false\n[analytics]\nenabled = false\n');
  env = { HOME: codex.home, CODEX_HOME: codex.codexHome, TURNKEEPER_CODEX_BIN: codexBinaryPath(), PATH: '/usr/bin:/bin' };
});
afterEach(() => {
  cleanupCodexHome(codex);
  world.cleanup();
});

function doctor(extra: Record<string, string> = {}): { code: number | null; rows: Row[]; problems: string[]; text: string } {
  const run = world.cli(['doctor', '--json'], { env: { ...env, ...extra } });
  const report = JSON.parse(run.stdout) as { checks: Row[]; problems: string[] };
  const text = world.cli(['doctor'], { env: { ...env, ...extra } }).stdout;
  return { code: run.code, rows: report.checks, problems: report.problems, text };
}
const row = (rows: Row[], check: string, scope?: string): Row | undefined => rows.find((r) => r.check === check && (scope === undefined || r.scope === scope));
const install = (agent: string, scope = 'user', extra: Record<string, string> = {}) =>
  world.cli(['hooks', 'install', '--agent', agent, '--scope', scope], { env: { ...env, ...extra } });

describe('codex_trust: asked of the real Codex', () => {
  it('untrusted hooks are a problem with the /hooks fix; trusted the way /hooks does it, the row is clean', async () => {
    expect(install('codex').code).toBe(0);
    const before = doctor();
    expect(before.code).toBe(1);
    expect(row(before.rows, 'codex_trust', 'user')).toMatchObject({ status: 'problem', fix: like.stringContaining('/hooks') });
    expect(row(before.rows, 'codex_trust', 'user')!.detail).toMatch(
      new RegExp(`Codex skips ${CODEX_HOOKS} of Turnkeeper's ${CODEX_HOOKS} hooks .*\\(untrusted: `),
    );
    expect(before.text).toMatch(new RegExp(`^PROBLEM codex user codex_trust: Codex skips ${CODEX_HOOKS} `, 'm'));
    expect(before.text).toMatch(/^ {8}fix: open codex in .* type \/hooks/m);
    // A check's problem is shown once, as its row; the count still has it.
    expect(before.text).not.toMatch(/^problem: Codex skips/m);
    expect(before.text).toMatch(new RegExp(`^${before.problems.length} problems?\\n$`, 'm'));

    await trustAllHooks(codex.codexHome, { ...codex.env, ...env }, world.repo);
    const after = doctor();
    expect(row(after.rows, 'codex_trust', 'user')).toMatchObject({
      status: 'ok',
      detail: like.stringMatching(new RegExp(`trusts and will run all ${CODEX_HOOKS} `)),
    });
    expect(after.code).toBe(0);
    expect(after.text).toMatch(/no problems found\n$/);

    // A changed hook is untrusted again (Codex compares the hash): a different timeout, say.
    const path = join(codex.codexHome, 'hooks.json');
    writeFileSync(path, readFileSync(path, 'utf8').replace('"timeout": 15', '"timeout": 16'));
    expect(row(doctor().rows, 'codex_trust', 'user')!.detail).toMatch(new RegExp(`Codex skips 1 of Turnkeeper's ${CODEX_HOOKS} hooks .*\\(modified: `));
  });

  it("a project's .codex is not loaded until the project is trusted, then its hooks need trust too; trusted, it is clean", async () => {
    expect(install('codex', 'project').code).toBe(0);
    const shimDir = { PATH: `${world.home}/bin:/usr/bin:/bin` };
    expect(row(doctor(shimDir).rows, 'codex_trust', 'project')).toMatchObject({
      status: 'problem',
      detail: like.stringMatching(/only once the project is trusted/),
    });
    appendFileSync(join(codex.codexHome, 'config.toml'), `\n[projects.${JSON.stringify(world.repo)}]\ntrust_level = "trusted"\n`);
    expect(row(doctor(shimDir).rows, 'codex_trust', 'project')).toMatchObject({
      status: 'problem',
      detail: like.stringMatching(new RegExp(`skips ${CODEX_HOOKS} of Turnkeeper's ${CODEX_HOOKS} hooks`)),
    });
    await trustAllHooks(codex.codexHome, { ...codex.env, ...env }, world.repo);
    expect(row(doctor(shimDir).rows, 'codex_trust', 'project')).toMatchObject({ status: 'ok' });
  });

  it('CODEX_HOME behind a symlink: the hooks are matched by file, not by spelling (control: the row is the same as with the real path)', async () => {
    const link = join(world.root, 'codex-home-link');
    symlinkSync(codex.codexHome, link);
    const linked = { CODEX_HOME: link };
    expect(install('codex', 'user', linked).code).toBe(0);
    const untrusted = row(doctor(linked).rows, 'codex_trust', 'user')!;
    expect(untrusted).toMatchObject({ status: 'problem', path: join(link, 'hooks.json') });
    expect(untrusted.detail).toMatch(new RegExp(`Codex skips ${CODEX_HOOKS} of Turnkeeper's ${CODEX_HOOKS} hooks`));
    await trustAllHooks(codex.codexHome, { ...codex.env, ...env, ...linked }, world.repo);
    expect(row(doctor(linked).rows, 'codex_trust', 'user')).toMatchObject({
      status: 'ok',
      detail: like.stringMatching(new RegExp(`trusts and will run all ${CODEX_HOOKS} `)),
    });
    expect(row(doctor().rows, 'codex_trust', 'user')).toMatchObject({ status: 'ok' });
  });

  it('Codex listing none of the hooks with no warning is unknown, naming what it lists, not a guess (control: listed, it is a verdict)', () => {
    expect(install('codex').code).toBe(0);
    expect(row(doctor().rows, 'codex_trust', 'user')!.status).toBe('problem');
    appendFileSync(join(codex.codexHome, 'config.toml'), '\n[features]\nhooks = false\n');
    const off = row(doctor().rows, 'codex_trust', 'user')!;
    expect(off).toMatchObject({
      status: 'unknown',
      detail: like.stringMatching(/Codex lists none of Turnkeeper's hooks in .*hooks\.json, and no warning about it; the hooks it lists come from /),
    });
    expect(off.fix).toContain('hooks = false');
  });

  it('without a codex to ask the row is unknown and says how to make it checkable (control: with one it is a verdict)', () => {
    expect(install('codex').code).toBe(0);
    const run = world.cli(['doctor', '--json'], { env: { ...env, TURNKEEPER_CODEX_BIN: '' } });
    const unknown = row((JSON.parse(run.stdout) as { checks: Row[] }).checks, 'codex_trust', 'user');
    expect(unknown).toMatchObject({ status: 'unknown', fix: like.stringContaining('TURNKEEPER_CODEX_BIN') });
    expect(row(doctor().rows, 'codex_trust', 'user')!.status).toBe('problem');
  });
});

describe('which codex doctor runs', () => {
  // Doctor runs codex with the repository as its working directory: a relative PATH entry
  // (node_modules/.bin, .) or a relative TURNKEEPER_CODEX_BIN would run a program the repository ships.
  const plantCodex = (dir: string, marker: string): void => {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'codex'), `#!/bin/sh\necho ran > ${JSON.stringify(marker)}\nexit 3\n`, { mode: 0o755 });
  };

  it('a codex reached through a relative PATH entry or a relative TURNKEEPER_CODEX_BIN is never run (control: one in an absolute PATH entry is)', () => {
    expect(install('codex').code).toBe(0);
    const marker = join(world.root, 'repository-codex-ran');
    plantCodex(join(world.repo, 'node_modules', '.bin'), marker);
    const relativePath = doctor({ TURNKEEPER_CODEX_BIN: '', PATH: 'node_modules/.bin:/usr/bin:/bin' });
    expect(existsSync(marker)).toBe(false);
    expect(row(relativePath.rows, 'codex_trust', 'user')).toMatchObject({
      status: 'unknown',
      detail: like.stringContaining('not in an absolute PATH directory'),
    });
    const relativeBin = doctor({ TURNKEEPER_CODEX_BIN: 'node_modules/.bin/codex' });
    expect(existsSync(marker)).toBe(false);
    expect(row(relativeBin.rows, 'codex_trust', 'user')).toMatchObject({
      status: 'unknown',
      detail: like.stringContaining('TURNKEEPER_CODEX_BIN is not an absolute path'),
    });

    // Control: the same PATH entry given as an absolute path is found, and asked.
    doctor({ TURNKEEPER_CODEX_BIN: '', PATH: `${join(world.repo, 'node_modules', '.bin')}:/usr/bin:/bin` });
    expect(existsSync(marker)).toBe(true);
  });
});

describe("config_syntax: the agent's own parser", () => {
  it("a comment in Codex's hooks.json makes Codex ignore the file: flagged by doctor and by Codex itself (control: the same file without it)", () => {
    expect(install('codex').code).toBe(0);
    const path = join(codex.codexHome, 'hooks.json');
    expect(row(doctor().rows, 'config_syntax', 'user')).toMatchObject({ status: 'ok', path });
    writeFileSync(path, `// my hooks\n${readFileSync(path, 'utf8')}`);
    const rows = doctor().rows;
    expect(row(rows, 'config_syntax', 'user')).toMatchObject({
      status: 'problem',
      detail: like.stringMatching(/reads it as strict JSON, and .* has a comment at line 1/),
    });
    expect(row(rows, 'codex_trust', 'user')).toMatchObject({
      status: 'problem',
      detail: like.stringMatching(/does not load .*failed to parse hooks config/),
    });
  });

  it('hooks install refuses to merge into a Claude settings.json with a comment, and leaves it as it was (control: Gemini allows comments)', () => {
    const claudeDir = join(world.root, 'claude');
    mkdirSync(claudeDir);
    const settings = join(claudeDir, 'settings.json');
    const original = '{\n  // my model\n  "model": "opus"\n}\n';
    writeFileSync(settings, original);
    const refused = install('claude', 'user', { CLAUDE_CONFIG_DIR: claudeDir });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/Claude Code reads it as strict JSON, and this file has a comment at line 2, so Claude Code ignores the whole file/);
    expect(readFileSync(settings, 'utf8')).toBe(original);

    const geminiHome = join(world.root, 'gem');
    mkdirSync(join(geminiHome, '.gemini'), { recursive: true });
    const geminiSettings = join(geminiHome, '.gemini', 'settings.json');
    writeFileSync(geminiSettings, original);
    expect(install('gemini', 'user', { GEMINI_CLI_HOME: geminiHome }).code).toBe(0);
    expect(
      row(
        doctor({ GEMINI_CLI_HOME: geminiHome }).rows.filter((r) => r.agent === 'gemini'),
        'config_syntax',
        'user',
      ),
    ).toMatchObject({ status: 'ok' });
    // A trailing comma is another matter: Gemini strips comments, not commas.
    writeFileSync(geminiSettings, readFileSync(geminiSettings, 'utf8').replace(/\n}\n$/, ',\n}\n'));
    expect(
      row(
        doctor({ GEMINI_CLI_HOME: geminiHome }).rows.filter((r) => r.agent === 'gemini'),
        'config_syntax',
        'user',
      ),
    ).toMatchObject({
      status: 'problem',
      detail: like.stringMatching(/has a trailing comma/),
    });
  });
});

describe('both_scopes and on_path', () => {
  it('both scopes run every hook twice: install warns and doctor flags it (control: one scope is clean)', () => {
    expect(install('codex').code).toBe(0);
    expect(row(doctor().rows, 'both_scopes')).toMatchObject({ status: 'ok', agent: 'codex' });
    const second = install('codex', 'project');
    expect(second.stdout).toMatch(/warning: Turnkeeper's codex hooks are also installed in .*: codex will run every hook twice/);
    expect(row(doctor().rows, 'both_scopes')).toMatchObject({
      status: 'problem',
      fix: like.stringContaining('turnkeeper hooks uninstall --agent codex --scope user'),
    });
    expect(world.cli(['hooks', 'uninstall', '--agent', 'codex', '--scope', 'user'], { env }).code).toBe(0);
    expect(row(doctor().rows, 'both_scopes')).toMatchObject({ status: 'ok' });
  });

  it('a project config runs `turnkeeper` from PATH and names no path of this machine; without turnkeeper on PATH that is a problem (control: the shim on PATH)', () => {
    expect(install('codex', 'project').code).toBe(0);
    const config = readFileSync(join(world.repo, '.codex', 'hooks.json'), 'utf8');
    expect(config).toContain('"command": "turnkeeper hook --agent codex"');
    expect(config).not.toContain(world.root);
    expect(row(doctor().rows, 'on_path')).toMatchObject({ status: 'problem', fix: like.stringContaining('VS Code terminal') });
    expect(row(doctor({ PATH: `${world.home}/bin:/usr/bin:/bin` }).rows, 'on_path')).toMatchObject({
      status: 'ok',
      detail: like.stringContaining(`${world.home}/bin/turnkeeper`),
    });
  });

  it('a project config an earlier Turnkeeper wrote with an absolute shim path is replaced by the PATH form, not kept beside it', () => {
    const path = join(world.repo, '.codex', 'hooks.json');
    mkdirSync(join(world.repo, '.codex'));
    const old = `'/home/alice/.turnkeeper/bin/turnkeeper' hook --agent codex`;
    writeFileSync(path, JSON.stringify({ hooks: { UserPromptSubmit: [{ hooks: [{ type: 'command', command: old, timeout: 15 }] }] } }, null, 2) + '\n');
    expect(install('codex', 'project').code).toBe(0);
    const after = readFileSync(path, 'utf8');
    expect(after).not.toContain('/home/alice');
    expect(after.match(/turnkeeper hook --agent codex/g)).toHaveLength(HOOK_EVENTS.codex.length);
    // One edit, not an uninstall and an install: one write, so one backup (the original bytes).
    const backups = readdirSync(join(world.home, 'backups')).filter((name) => !name.endsWith('.created'));
    expect(backups).toHaveLength(1);
    expect(readFileSync(join(world.home, 'backups', backups[0]!), 'utf8')).toContain(old);
    // Control: uninstall gives back an empty config of the user's own (the old entry was ours too).
    expect(world.cli(['hooks', 'uninstall', '--agent', 'codex', '--scope', 'project'], { env }).code).toBe(0);
    expect(readFileSync(path, 'utf8')).not.toContain('turnkeeper');
  });
});

describe("agent_version: the agent's own --version against the version Turnkeeper was tested with", () => {
  it('the pinned Codex is the tested version; a newer one is unknown, named, with what to do (control: an older one is ok and says older)', () => {
    expect(install('codex').code).toBe(0);
    expect(row(doctor().rows, 'agent_version')).toMatchObject({ agent: 'codex', status: 'ok', detail: 'Codex CLI 0.171.0' });
    const fake = (version: string): string => {
      const path = join(world.root, `codex-${version}`);
      writeFileSync(path, `#!/bin/sh\n[ "$1" = --version ] && echo "codex-cli ${version}" && exit 0\nexit 3\n`, { mode: 0o755 });
      return path;
    };
    const newer = doctor({ TURNKEEPER_CODEX_BIN: fake('0.172.0') });
    expect(row(newer.rows, 'agent_version')).toMatchObject({
      status: 'unknown',
      detail: like.stringContaining('Codex CLI 0.172.0 is newer than the 0.171.0 Turnkeeper was tested with'),
      fix: like.stringContaining('pin 0.171.0'),
    });
    expect(newer.text).toMatch(/unknown codex agent_version: Codex CLI 0\.172\.0 is newer/);
    expect(row(doctor({ TURNKEEPER_CODEX_BIN: fake('0.99.3') }).rows, 'agent_version')).toMatchObject({
      status: 'ok',
      detail: 'Codex CLI 0.99.3, older than the 0.171.0 Turnkeeper was tested with',
    });
  });

  it("every profile's tested version is the one package.json pins for the end-to-end tests", () => {
    const pinned = (JSON.parse(readFileSync(join(__dirname, '../../package.json'), 'utf8')) as { devDependencies: Record<string, string> }).devDependencies;
    expect({
      codex: PROFILES.codex.testedVersion,
      claude: PROFILES.claude.testedVersion,
      gemini: PROFILES.gemini.testedVersion,
      copilot: PROFILES.copilot.testedVersion,
      qwen: PROFILES.qwen.testedVersion,
    }).toStrictEqual({
      codex: pinned['@openai/codex'],
      claude: pinned['@anthropic-ai/claude-code'],
      gemini: pinned['@google/gemini-cli'],
      copilot: pinned['@github/copilot'],
      qwen: pinned['@qwen-code/qwen-code'],
    });
  });
});
