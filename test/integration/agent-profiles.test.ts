// The agent profiles (src/agents/profiles/): one file per agent holds what Turnkeeper knows about it,
// and the tables other layers used to keep (events, timeouts, trust hints, resume and start
// arguments, binaries, runtimes) are read from them. These tests pin each profile's facts and hold
// the profiles to the rest of the project: the launcher's injection table covers every runtime, each
// agent is a pinned devDependency whose bin is where its install shape says, and each has an editor
// setting that an untrusted workspace cannot change.
import { describe, expect, it } from 'vitest';
import { readFileSync, realpathSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { AGENTS } from '../../src/core/ids';
import { binarySetting, binaryVariable, DETECT_ORDER, FALLBACK_AGENT, PROFILES } from '../../src/agents/profiles/index';
import { HOOK_EVENTS } from '../../src/agents/install';
import { TRUST_HINT } from '../../src/doctor/installation';
import { INJECTION_VARIABLES } from '../../src/launcher/environment';
import { resumeArguments } from '../../src/launcher/resume';
import { resolveAgentBinary } from '../../src/launcher/plumbing';
import { startArguments } from '../../src/launcher/start';

const ROOT = resolve(__dirname, '../..');
const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  devDependencies: Record<string, string>;
  capabilities: { untrustedWorkspaces: { restrictedConfigurations: string[] } };
  contributes: {
    configuration: { properties: Record<string, { scope?: string; markdownDescription?: string }> } | { properties: Record<string, { scope?: string }> }[];
  };
};
const settings = (): Record<string, { scope?: string; markdownDescription?: string }> => {
  const configuration = manifest.contributes.configuration;
  return Array.isArray(configuration) ? Object.fromEntries(configuration.flatMap((c) => Object.entries(c.properties))) : configuration.properties;
};

describe('agent profiles', () => {
  it('one profile per agent, keyed by its own name, with installed events of the five kinds (OpenCode: no session start), and notification events where it has them', () => {
    expect(Object.keys(PROFILES)).toEqual([...AGENTS]);
    for (const agent of AGENTS) {
      const profile = PROFILES[agent];
      expect(profile.agent).toBe(agent);
      // OpenCode's plugin has no hook before a prompt that could carry context: a launch binds at the first prompt.
      const kinds = Object.values(profile.events.installed).filter((kind) => kind !== 'notification');
      const expected = agent === 'opencode' ? ['post_tool', 'pre_tool', 'prompt', 'stop'] : ['post_tool', 'pre_tool', 'prompt', 'session_start', 'stop'];
      expect(kinds.sort(), agent).toEqual(expected);
      for (const [name, kind] of Object.entries(profile.events.installed)) expect(profile.events.accepted[name], `${agent} ${name}`).toBe(kind);
      expect(HOOK_EVENTS[agent]).toEqual(Object.keys(profile.events.installed));
      expect(TRUST_HINT[agent]).toBe(profile.trust.hint);
    }
  });

  it('the facts each agent was observed with: events, Turn source, timeouts in the field and unit each reads', () => {
    expect(HOOK_EVENTS).toEqual({
      codex: ['SessionStart', 'UserPromptSubmit', 'PreToolUse', 'PostToolUse', 'Stop', 'PermissionRequest'],
      claude: ['SessionStart', 'UserPromptSubmit', 'PreToolUse', 'PostToolUse', 'Stop', 'Notification', 'PermissionRequest'],
      gemini: ['SessionStart', 'BeforeAgent', 'BeforeTool', 'AfterTool', 'AfterAgent', 'Notification'],
      copilot: ['sessionStart', 'userPromptSubmitted', 'preToolUse', 'postToolUse', 'agentStop'],
      qwen: ['SessionStart', 'UserPromptSubmit', 'PreToolUse', 'PostToolUse', 'Stop'],
      opencode: ['chatMessage', 'toolExecuteBefore', 'toolExecuteAfter', 'sessionIdle'],
      goose: ['SessionStart', 'UserPromptSubmit', 'PreToolUse', 'PostToolUse', 'Stop'],
      grok: ['SessionStart', 'UserPromptSubmit', 'PreToolUse', 'PostToolUse', 'Stop'],
    });
    expect(AGENTS.map((agent) => PROFILES[agent].payload.turnField)).toEqual([
      'turn_id',
      'prompt_id',
      undefined,
      undefined,
      'prompt_id',
      'turn_id',
      undefined,
      'prompt_id',
    ]);
    expect(AGENTS.map((agent) => PROFILES[agent].events.source)).toEqual([
      'payload',
      'payload',
      'payload',
      'command',
      'payload',
      'command',
      'payload',
      'payload',
    ]);
    // The written entry, with the profile's timeout: seconds for Codex, Claude and Copilot (timeoutSec), milliseconds for Gemini.
    expect(AGENTS.map((agent) => PROFILES[agent].install.entry('c', PROFILES[agent].install.timeout))).toEqual([
      { type: 'command', command: 'c', timeout: 15 },
      { type: 'command', command: 'c', timeout: 15 },
      { name: 'turnkeeper', type: 'command', command: 'c', timeout: 15_000 },
      { type: 'command', command: 'c', timeoutSec: 15 },
      { type: 'command', command: 'c', timeout: 15 },
      // OpenCode's entry is unused (its plugin file replaces the JSON); the plugin enforces 15 000 ms itself.
      { type: 'command', command: 'c', timeout: 15_000 },
      { type: 'command', command: 'c', timeout: 15 },
      { type: 'command', command: 'c', timeout: 15 },
    ]);
    // How each parses its hook config (doctor's config_syntax): Copilot's parser is not established.
    expect(AGENTS.map((agent) => PROFILES[agent].install.syntax)).toEqual([
      'json',
      'json',
      'json-comments',
      undefined,
      'json-comments',
      'module',
      'json',
      'json',
    ]);
    // Detection: every agent but the fallback has a detector, tried in the spec's order (§2).
    expect(DETECT_ORDER).toEqual(['qwen', 'codex', 'gemini', 'grok', 'copilot', 'goose']);
    expect(FALLBACK_AGENT).toBe('claude');
    // OpenCode's plugin always passes --agent opencode: it needs no detector, and is never detected.
    for (const agent of AGENTS) expect(PROFILES[agent].payload.detect === undefined, agent).toBe(agent === FALLBACK_AGENT || agent === 'opencode');
  });

  it('resume and start command lines, per agent and mode', () => {
    const extra = ['--x'];
    expect(AGENTS.map((agent) => resumeArguments(agent, 'S', 'headless', 'go', extra))).toEqual([
      ['exec', '--x', 'resume', 'S', 'go'],
      ['-p', '--x', '--resume', 'S', '--', 'go'],
      ['--x', '--resume', 'S', '-p', 'go'],
      ['--resume=S', '--no-auto-update', '--x', '-p', 'go'],
      ['--x', '--resume', 'S', '--prompt=go'],
      ['run', '--x', '--session', 'S', '--', 'go'],
      ['run', '--resume', '--session-id', 'S', '--x', '-t', 'go'],
      ['--resume', 'S', '--x', '-p', 'go'],
    ]);
    expect(AGENTS.map((agent) => resumeArguments(agent, 'S', 'interactive', 'go', extra))).toEqual([
      // Codex's TUI on its embedded app server: a shared daemon would run the hooks in another environment.
      ['resume', '--no-daemon', '--x', 'S'],
      ['--x', '--resume', 'S'],
      ['--x', '--resume', 'S'],
      ['--resume=S', '--no-auto-update', '--x'],
      ['--x', '--resume', 'S'],
      ['--x', '--session', 'S'],
      ['session', '--resume', '--session-id', 'S', '--x'],
      ['--resume', 'S', '--x'],
    ]);
    expect(AGENTS.map((agent) => startArguments(agent, 'headless', 'go', extra))).toEqual([
      ['exec', '--x', 'go'],
      ['-p', '--x', '--', 'go'],
      ['--x', '-p', 'go'],
      ['--no-auto-update', '--x', '-p', 'go'],
      ['--x', '--prompt=go'],
      ['run', '--x', '--', 'go'],
      ['run', '--x', '-t', 'go'],
      ['--x', '-p', 'go'],
    ]);
    expect(AGENTS.map((agent) => startArguments(agent, 'interactive', 'go', extra))).toEqual([
      ['--no-daemon', '--x', 'go'],
      ['--x', '--', 'go'],
      ['--x', '-i', 'go'],
      ['--no-auto-update', '--x', '-i', 'go'],
      ['--x', '--prompt-interactive=go'],
      ['--x', '--prompt', 'go'],
      ['run', '-s', '--x', '-t', 'go'],
      ['--x', '--', 'go'],
    ]);
    expect(AGENTS.map((agent) => startArguments(agent, 'interactive', undefined))).toEqual([
      ['--no-daemon'],
      [],
      [],
      ['--no-auto-update'],
      [],
      [],
      ['session'],
      [],
    ]);
    expect(() => startArguments('copilot', 'headless', undefined)).toThrow(/needs a prompt/);
  });

  it('every runtime an agent is built on is in the launcher injection table', () => {
    const runtimes = new Set(INJECTION_VARIABLES.map((group) => group.runtime));
    expect(AGENTS.map((agent) => PROFILES[agent].launch.runtime)).toEqual(['native', 'bun', 'node', 'node', 'node', 'bun', 'native', 'native']);
    for (const agent of AGENTS) {
      const runtime = PROFILES[agent].launch.runtime;
      // A native executable has only the dynamic loader in front of it; the loader's group applies to every agent.
      expect(runtimes.has(runtime === 'native' ? 'dynamic loader' : runtime), agent).toBe(true);
    }
  });

  it('each agent npm ships is a pinned devDependency whose bin is where its install shape says; the others are native and source-only', () => {
    for (const agent of AGENTS) {
      const { shape, executable } = PROFILES[agent].launch;
      if (shape.npmPackage === undefined || shape.bin === undefined) {
        // Goose and Grok Build: native binaries from their own installers, facts read from their source.
        expect(shape.kind, agent).toBe('native');
        expect(PROFILES[agent].fromSource, agent).toMatch(/^github\.com\//);
        continue;
      }
      expect(manifest.devDependencies[shape.npmPackage], shape.npmPackage).toMatch(/^\d+\.\d+\.\d+$/);
      expect(realpathSync(join(ROOT, 'node_modules', '.bin', executable))).toBe(realpathSync(join(ROOT, 'node_modules', shape.npmPackage, shape.bin)));
    }
    expect(AGENTS.filter((agent) => PROFILES[agent].fromSource !== undefined)).toEqual(['goose', 'grok']);
  });

  it('each agent has a machine-scoped path setting that untrusted workspaces cannot set, and a TURNKEEPER_<AGENT>_BIN', () => {
    const properties = settings();
    for (const agent of AGENTS) {
      const setting = binarySetting(agent);
      expect(properties[setting]?.scope, setting).toBe('machine');
      expect(manifest.capabilities.untrustedWorkspaces.restrictedConfigurations).toContain(setting);
    }
    expect(AGENTS.map(binaryVariable)).toEqual([
      'TURNKEEPER_CODEX_BIN',
      'TURNKEEPER_CLAUDE_BIN',
      'TURNKEEPER_GEMINI_BIN',
      'TURNKEEPER_COPILOT_BIN',
      'TURNKEEPER_QWEN_BIN',
      'TURNKEEPER_OPENCODE_BIN',
      'TURNKEEPER_GOOSE_BIN',
      'TURNKEEPER_GROK_BIN',
    ]);
    // PATH lookup uses the profile's executable name; the variable wins over PATH.
    const bin = join(ROOT, 'node_modules', '.bin');
    expect(resolveAgentBinary('copilot', { env: { PATH: bin } })).toBe(join(bin, 'copilot'));
    expect(resolveAgentBinary('copilot', { env: { PATH: bin, TURNKEEPER_COPILOT_BIN: '/opt/copilot' } })).toBe('/opt/copilot');
  });

  it("Codex's shared app-server daemon: `app-server --managed-daemon` of doctor's CODEX_HOME (the variable, else ~/.codex), and only Codex has one", () => {
    const daemon = PROFILES.codex.launch.sharedDaemon!;
    const running = (argv: string[], environ: Record<string, string> | undefined) => ({ pid: 1, argv, environ: () => environ });
    const argv = ['/x/codex', 'app-server', '--managed-daemon', '--listen', 'unix://'];
    expect(daemon.matches(running(argv, { CODEX_HOME: '/h/.codex' }), { CODEX_HOME: '/h/.codex' })).toBe(true);
    // Codex's default home on both sides, and one side naming it.
    expect(daemon.matches(running(argv, { HOME: '/h' }), { HOME: '/h' })).toBe(true);
    expect(daemon.matches(running(argv, { HOME: '/h' }), { CODEX_HOME: '/h/.codex', HOME: '/elsewhere' })).toBe(true);
    // Controls: another CODEX_HOME, a plain app-server (doctor's own hooks/list), an environment it cannot read.
    expect(daemon.matches(running(argv, { CODEX_HOME: '/other' }), { CODEX_HOME: '/h/.codex' })).toBe(false);
    expect(daemon.matches(running(['/x/codex', 'app-server'], { CODEX_HOME: '/h/.codex' }), { CODEX_HOME: '/h/.codex' })).toBe(false);
    expect(daemon.matches(running(argv, undefined), { CODEX_HOME: '/h/.codex' })).toBe(false);
    expect(daemon.stop).toMatch(/^codex app-server daemon stop/);
    expect(daemon.launchSwitch).toBe('--no-daemon');
    expect(AGENTS.filter((agent) => PROFILES[agent].launch.sharedDaemon !== undefined)).toEqual(['codex']);
  });
});
