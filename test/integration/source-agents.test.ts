// Goose and Grok Build through the real built `turnkeeper hook`, with payloads built from their own
// source (test/support/sourcePayloads.ts; neither binary runs here: README, doctor's from_source),
// and hooks install/uninstall into fixture homes. And foreign callers (spec §2, "Foreign callers"):
// VS Code's chat agent running Claude Code's and Copilot CLI's hook files, refused by name with a
// trace doctor reports, and Grok Build running Claude Code's, served as Grok. Each refusal has its
// control: the same prompt in the agent's own shape claims.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { like } from '../support/matchers';
import { makeWorld, parseHookStdout, payload, type World } from '../support/world';
import { goose, grok, grokHookEnv, vscode } from '../support/sourcePayloads';

let world: World;
beforeEach(() => {
  world = makeWorld('tk-source-agents');
  expect(world.cli(['todo', 'add', 'Fix login', '--id', 'fix-login', '--body', 'Body of fix-login']).code).toBe(0);
});
afterEach(() => world.cleanup());

const SESSION = '019f470d-3e02-7601-b726-1133cc72ef76';
const hook = (args: string[], input: string, env?: Record<string, string | undefined>) => world.cli(['hook', ...args], { input, env });
async function owners(): Promise<string[]> {
  const store = await world.store();
  try {
    return (await store.listLeases()).filter((lease) => lease.status === 'active').map((lease) => lease.owner);
  } finally {
    store.close();
  }
}
interface Doctor {
  problems: string[];
  checks: { check: string; agent: string; scope?: string; status: string; detail: string; fix?: string }[];
  rejectedHooks: { agent: string | null; event: string | null; caller?: string | null; fields: string[]; reason: string }[];
}
const doctor = (env?: Record<string, string>): Doctor => JSON.parse(world.cli(['doctor', '--json'], { env }).stdout) as Doctor;
const trace = () => join(world.home, 'rejected-hooks.jsonl');

describe('Grok Build (from its source)', () => {
  it("its own hook claims under grok:<sessionId> with promptId as the Turn, and answers {} (Grok ignores UserPromptSubmit's output)", async () => {
    const result = hook(['--agent', 'grok'], grok.prompt(world, SESSION, 'prompt-1', 'fix #todo:fix-login'), grokHookEnv(world, 'user_prompt_submit', SESSION));
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(parseHookStdout(result.stdout)).toEqual({});
    expect(await owners()).toEqual([`grok:${SESSION}`]);
    // A retry of the same promptId replays; a tool call of the holder is not fenced (nothing printed).
    expect(hook(['--agent', 'grok'], grok.preToolUse(world, SESSION, 'prompt-1', 'search_replace')).stdout).toBe('');
    expect(hook(['--agent', 'grok'], grok.stop(world, SESSION, 'prompt-1'))).toMatchObject({ code: 0, stdout: '' });
  });

  it("through Claude Code's installed hook (Grok runs ~/.claude/settings.json) it is served as Grok, never claimed as Claude", async () => {
    const result = hook(
      ['--agent', 'claude'],
      grok.prompt(world, SESSION, 'prompt-1', 'fix #todo:fix-login'),
      grokHookEnv(world, 'user_prompt_submit', SESSION),
    );
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(parseHookStdout(result.stdout)).toEqual({});
    expect(await owners()).toEqual([`grok:${SESSION}`]);
    expect(existsSync(trace())).toBe(false);
    // Control: a Claude payload through the same hook claims as Claude (the hook is Claude's).
    const claude = hook(['--agent', 'claude'], payload.claudePrompt(world, 'claude-sess', 'p-1', 'fix #todo:fix-login'));
    expect(claude.code).toBe(0);
    expect(claude.stdout).toContain('lease_held');
  });
});

describe('fencing in the shapes their source reads', () => {
  it("Grok: a taken-over session's write is denied {decision:'deny'}, also through Claude's hook, where Claude's shape would read as allow", () => {
    hook(['--agent', 'grok'], grok.prompt(world, SESSION, 'prompt-1', 'fix #todo:fix-login'));
    const write = (agent: string) => hook(['--agent', agent], grok.preToolUse(world, SESSION, 'prompt-2', 'search_replace'));
    expect(write('grok').stdout).toBe(''); // control: while the lease is held, writes pass
    expect(world.cli(['release', 'fix-login', '--force', '--reason', 'reassign']).code).toBe(0);
    for (const agent of ['grok', 'claude']) {
      expect(parseHookStdout(write(agent).stdout), agent).toStrictEqual({ decision: 'deny', reason: like.stringContaining('[lease_fenced]') });
    }
    // A read-only tool is not fenced.
    expect(hook(['--agent', 'grok'], grok.preToolUse(world, SESSION, 'prompt-2', 'read_file')).stdout).toBe('');
  });

  it("Goose: a taken-over session's shell call is blocked {decision:'block'} (Goose's only deny besides exit 2)", () => {
    hook(['--agent', 'goose'], goose.prompt('20251108_1', 'fix #todo:fix-login'), { TURNKEEPER_TURN: 'turn-1' });
    const shell = () => hook(['--agent', 'goose'], goose.preToolUse('20251108_1', 'developer__shell'));
    expect(shell().stdout).toBe('');
    expect(world.cli(['release', 'fix-login', '--force', '--reason', 'reassign']).code).toBe(0);
    expect(parseHookStdout(shell().stdout)).toStrictEqual({ decision: 'block', reason: like.stringContaining('[lease_fenced]') });
  });
});

describe('Goose (from its source)', () => {
  it('claims under goose:<session_id> from the hook process cwd, with the launch Turn; without a Turn it refuses [no_turn] and claims nothing', async () => {
    const refused = hook(['--agent', 'goose'], goose.prompt('20251108_1', 'fix #todo:fix-login'));
    expect(refused).toMatchObject({ code: 0, stderr: '' });
    expect(parseHookStdout(refused.stdout)).toEqual({}); // Goose reads no output of UserPromptSubmit
    expect(await owners()).toEqual([]);
    const claimed = hook(['--agent', 'goose'], goose.prompt('20251108_1', 'fix #todo:fix-login'), { TURNKEEPER_TURN: 'turn-1' });
    expect(claimed).toMatchObject({ code: 0, stdout: '{}\n', stderr: '' });
    expect(await owners()).toEqual(['goose:20251108_1']);
    // The holder's own tool call: allowed with no output, which is Goose's only allow besides {"decision":"allow"}.
    expect(hook(['--agent', 'goose'], goose.preToolUse('20251108_1', 'developer__shell')).stdout).toBe('');
  });

  it('the Goal is the directory Goose runs the hook in: run outside the repository, the same prompt claims nothing (the Todo is not in that Goal)', async () => {
    const elsewhere = world.cli(['hook', '--agent', 'goose'], {
      input: goose.prompt('20251108_1', 'fix #todo:fix-login'),
      env: { TURNKEEPER_TURN: 'turn-1' },
      cwd: world.root,
    });
    expect(elsewhere.code).toBe(0);
    expect(await owners()).toEqual([]);
  });
});

describe("foreign callers: VS Code's chat agent", () => {
  it("running Claude Code's hook: nothing on stdout, no claim, a trace naming the caller, and doctor's line", async () => {
    const result = hook(['--agent', 'claude'], vscode.prompt(world, SESSION, 'fix #todo:fix-login'));
    expect(result).toMatchObject({ code: 0, stdout: '' });
    expect(result.stderr).toContain("VS Code's chat agent");
    expect(await owners()).toEqual([]);
    const entries = readFileSync(trace(), 'utf8').trim().split('\n');
    expect(entries.map((line) => JSON.parse(line) as unknown)).toEqual([
      expect.objectContaining({
        agent: 'claude',
        event: 'UserPromptSubmit',
        caller: 'vscode',
        fields: ['hookEventName', 'sessionId'],
        reason: "sent by VS Code's chat agent",
      }),
    ]);
    expect(entries[0]).not.toContain('fix-login'); // never the payload's content
    const report = doctor();
    expect(report.rejectedHooks).toEqual([expect.objectContaining({ caller: 'vscode', agent: 'claude' })]);
    expect(report.problems).toContainEqual(
      expect.stringMatching(/^VS Code's chat agent ran Claude Code's UserPromptSubmit hook \(once, last at .*\): its payload is not Claude Code's/),
    );
    // Control: the same prompt in Claude's own shape claims (so the refusal is the caller, not the prompt).
    expect(hook(['--agent', 'claude'], payload.claudePrompt(world, SESSION, 'p-1', 'fix #todo:fix-login')).code).toBe(0);
    expect(await owners()).toEqual([`claude:${SESSION}`]);
  });

  it("running Copilot CLI's .github/hooks file: refused the same way, where the old code claimed it as copilot:<sessionId>", async () => {
    const args = ['--agent', 'copilot', '--event', 'userPromptSubmitted'];
    const result = hook(args, vscode.prompt(world, SESSION, 'fix #todo:fix-login'), { TURNKEEPER_TURN: 'turn-1' });
    expect(result).toMatchObject({ code: 0, stdout: '' });
    expect(await owners()).toEqual([]);
    expect(doctor().problems).toContainEqual(expect.stringContaining("VS Code's chat agent ran Copilot CLI's UserPromptSubmit hook"));
    // Control: Copilot's own camelCase payload (no hookEventName) claims as Copilot.
    const own = JSON.parse(vscode.prompt(world, SESSION, 'fix #todo:fix-login')) as Record<string, unknown>;
    delete own.hookEventName;
    delete own.transcript_path;
    expect(hook(args, JSON.stringify(own), { TURNKEEPER_TURN: 'turn-1' }).code).toBe(0);
    expect(await owners()).toEqual([`copilot:${SESSION}`]);
  });

  it("a tool call of VS Code's through Claude's hook is refused silently too (no deny it would misread)", () => {
    expect(hook(['--agent', 'claude'], vscode.preToolUse(world, SESSION))).toMatchObject({ code: 0, stdout: '' });
  });
});

describe('start', () => {
  for (const agent of ['goose', 'grok'] as const) {
    it(`--agent ${agent} with no ${agent} installed is refused [agent_not_found], naming TURNKEEPER_${agent.toUpperCase()}_BIN; nothing starts`, () => {
      const run = world.cli(['start', 'fix-login', '--agent', agent, '--prompt', 'go', '--json'], { env: { PATH: '/usr/bin:/bin' } });
      expect(run.code).not.toBe(0);
      const result = JSON.parse(run.stdout) as { decision: string; reason: string; guidance: string };
      expect(result).toMatchObject({ decision: 'refused', reason: 'agent_not_found' });
      expect(result.guidance).toContain(`no ${agent} executable on the PATH: pass --agent-bin, set TURNKEEPER_${agent.toUpperCase()}_BIN`);
    });
  }
});

describe('hooks install and uninstall into fixture homes, and doctor', () => {
  const files = {
    grok: {
      user: (w: World) => join(w.env.HOME!, '.grok', 'hooks', 'turnkeeper.json'),
      project: (w: World) => join(w.repo, '.grok', 'hooks', 'turnkeeper.json'),
    },
    goose: {
      user: (w: World) => join(w.env.HOME!, '.agents', 'plugins', 'turnkeeper', 'hooks', 'hooks.json'),
      project: (w: World) => join(w.repo, '.agents', 'plugins', 'turnkeeper', 'hooks', 'hooks.json'),
    },
  } as const;

  for (const agent of ['grok', 'goose'] as const) {
    for (const scope of ['user', 'project'] as const) {
      it(`${agent} at ${scope} scope: Claude's matcher-group layout with the agent's command on its five events, gone again on uninstall`, () => {
        const path = files[agent][scope](world);
        expect(world.cli(['hooks', 'install', '--agent', agent, '--scope', scope]).code).toBe(0);
        const config = JSON.parse(readFileSync(path, 'utf8')) as { hooks: Record<string, { hooks: { type: string; command: string; timeout: number }[] }[]> };
        expect(Object.keys(config.hooks)).toEqual(['SessionStart', 'UserPromptSubmit', 'PreToolUse', 'PostToolUse', 'Stop']);
        for (const groups of Object.values(config.hooks)) {
          expect(groups).toEqual([{ hooks: [{ type: 'command', command: like.stringMatching(new RegExp(`hook --agent ${agent}$`)), timeout: 15 }] }]);
        }
        const status = JSON.parse(world.cli(['hooks', 'status', '--agent', agent, '--scope', scope, '--json']).stdout) as unknown;
        expect(JSON.stringify(status)).toContain('"installed":true');
        const rows = doctor().checks.filter((row) => row.agent === agent && row.check === 'from_source');
        expect(rows).toEqual([expect.objectContaining({ status: 'unknown', detail: like.stringContaining('not run against the real binary') })]);
        expect(world.cli(['hooks', 'uninstall', '--agent', agent, '--scope', scope]).code).toBe(0);
        expect(existsSync(path)).toBe(false);
        expect(doctor().checks.filter((row) => row.check === 'from_source')).toEqual([]);
      });
    }
  }

  it('grok project hooks: doctor says Grok skips them until trusted_folders.toml trusts the folder (the nearest entry wins)', () => {
    expect(world.cli(['hooks', 'install', '--agent', 'grok', '--scope', 'project']).code).toBe(0);
    const skipped = (): string[] => doctor().problems.filter((line) => line.startsWith('Grok Build skips'));
    expect(skipped()).toEqual([expect.stringContaining('records no decision for it or a parent')]);
    const store = join(world.env.HOME!, '.grok', 'trusted_folders.toml');
    mkdirSync(dirname(store), { recursive: true });
    writeFileSync(store, `[folders."${world.root}"]\ntrusted = true\ndecided_at = 1780000000\n`);
    expect(skipped()).toEqual([]); // a parent's trust cascades
    writeFileSync(store, `[folders."${world.root}"]\ntrusted = true\n\n[folders."${world.repo}"]\ntrusted = false\n`);
    expect(skipped()).toEqual([expect.stringContaining('records it untrusted')]); // the nearer decision wins
    expect(doctor({ GROK_FOLDER_TRUST: '0' }).problems.filter((line) => line.startsWith('Grok Build skips'))).toEqual([]);
  });

  it("read_by_others: Claude's user hooks are also run by Grok Build and VS Code; with Grok's own hooks too, a problem (every Grok event twice)", () => {
    expect(world.cli(['hooks', 'install', '--agent', 'claude', '--scope', 'user']).code).toBe(0);
    const alone = doctor().checks.filter((row) => row.check === 'read_by_others');
    expect(alone).toEqual([
      expect.objectContaining({ agent: 'claude', scope: 'user', status: 'ok', detail: like.stringContaining('Grok Build (served as Grok Build)') }),
    ]);
    expect(world.cli(['hooks', 'install', '--agent', 'grok', '--scope', 'user']).code).toBe(0);
    const both = doctor().checks.filter((row) => row.check === 'read_by_others');
    expect(both).toEqual([expect.objectContaining({ status: 'problem', fix: like.stringContaining('[compat.claude] hooks = false') })]);
  });
});
