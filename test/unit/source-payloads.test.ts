// Goose and Grok Build payloads as their source builds them (test/support/sourcePayloads.ts), and
// VS Code's chat agent calling an agent's hook: what parseHookInput makes of each, with or without
// --agent, and the outputs each agent's profile gives. Neither agent runs here; these fixtures are
// the whole of what is known (docs/hook-protocol.md, "Goose", "Grok Build", "Foreign callers").
import { describe, expect, it } from 'vitest';
import { detectAgent, InvalidHookInput, parseHookInput, type RejectionTrace } from '../../src/agents/payload';
import { contextOutput, denyToolOutput } from '../../src/agents/output';
import { goose, grok, grokHookEnv, vscode } from '../support/sourcePayloads';
import type { World } from '../support/world';

const world = { root: '/work/w', repo: '/work/w/repo' } as World;
const SESSION = '019f470d-3e02-7601-b726-1133cc72ef76';

const refusal = (run: () => unknown): { problem: string; trace: RejectionTrace } | undefined => {
  try {
    run();
    return undefined;
  } catch (error) {
    if (error instanceof InvalidHookInput) return { problem: error.problem, trace: error.trace };
    throw error;
  }
};

describe('Grok Build payloads (HookEventEnvelope)', () => {
  it('each event reads as Grok: its snake_case hookEventName, sessionId, promptId as the Turn, cwd, transcriptPath, prompt and toolName', () => {
    expect(parseHookInput(grok.prompt(world, SESSION, 'p-1', 'fix #todo:fix-login'), 'grok')).toEqual({
      agent: 'grok',
      eventName: 'user_prompt_submit',
      kind: 'prompt',
      session: SESSION,
      turn: 'p-1',
      cwd: world.repo,
      transcriptPath: `${world.root}/${SESSION}.jsonl`,
      sessionSource: undefined,
      prompt: 'fix #todo:fix-login',
      toolName: undefined,
    });
    expect(parseHookInput(grok.sessionStart(world, SESSION), 'grok')).toMatchObject({ kind: 'session_start', turn: undefined, sessionSource: 'startup' });
    expect(parseHookInput(grok.preToolUse(world, SESSION, 'p-1', 'search_replace'), 'grok')).toMatchObject({
      kind: 'pre_tool',
      toolName: 'search_replace',
      turn: 'p-1',
    });
    expect(parseHookInput(grok.stop(world, SESSION, 'p-1'), 'grok')).toMatchObject({ kind: 'stop' });
  });

  it('detected as Grok without --agent, although Copilot also sends camelCase sessionId (Copilot was the old answer)', () => {
    const input = JSON.parse(grok.prompt(world, SESSION, 'p-1', 'x')) as Record<string, unknown>;
    expect(detectAgent(input)).toBe('grok');
    // Control: the same payload without its event name is Copilot's shape, and is still Copilot's.
    const { hookEventName: _dropped, ...copilotShaped } = input;
    expect(detectAgent(copilotShaped)).toBe('copilot');
    // Grok's runner variable alone says Grok as well.
    expect(detectAgent(copilotShaped, grokHookEnv(world, 'user_prompt_submit', SESSION))).toBe('grok');
  });

  it("through Claude Code's hook (--agent claude) it is served as Grok, under Grok's session, never as Claude", () => {
    const event = parseHookInput(grok.prompt(world, SESSION, 'p-1', 'x'), 'claude');
    expect(event).toMatchObject({ agent: 'grok', session: SESSION, turn: 'p-1' });
  });

  it("outputs: nothing Grok reads on context events (observe-only), a fence as {decision:'deny',reason}", () => {
    expect(contextOutput('grok', 'user_prompt_submit', 'the capture', 'a notice')).toEqual({});
    expect(denyToolOutput('grok', 'pre_tool_use', 'fenced')).toEqual({ decision: 'deny', reason: 'fenced' });
  });
});

describe('Goose payloads (HookContext)', () => {
  it('event, session_id, message as the prompt, tool_name; the cwd is the hook process own (Goose names one only on Stop)', () => {
    expect(parseHookInput(goose.prompt('20251108_1', 'fix #todo:fix-login'), 'goose', { processCwd: world.repo })).toEqual({
      agent: 'goose',
      eventName: 'UserPromptSubmit',
      kind: 'prompt',
      session: '20251108_1',
      turn: undefined,
      cwd: world.repo,
      transcriptPath: undefined,
      sessionSource: undefined,
      prompt: 'fix #todo:fix-login',
      toolName: undefined,
    });
    expect(parseHookInput(goose.preToolUse('20251108_1', 'developer__shell'), 'goose', { processCwd: world.repo })).toMatchObject({
      kind: 'pre_tool',
      toolName: 'developer__shell',
    });
    // Stop's own working_dir wins over the process's.
    expect(parseHookInput(goose.stop(world, '20251108_1'), 'goose', { processCwd: '/elsewhere' })).toMatchObject({ kind: 'stop', cwd: world.repo });
    expect(parseHookInput(goose.sessionStart('20251108_1'), 'goose', { processCwd: world.repo })).toMatchObject({ kind: 'session_start' });
  });

  it('detected as Goose without --agent (the old code read it as Claude and refused it: "hook_event_name: expected string")', () => {
    expect(detectAgent(JSON.parse(goose.prompt('20251108_1', 'x')) as Record<string, unknown>)).toBe('goose');
    expect(parseHookInput(goose.prompt('20251108_1', 'x'), undefined, { processCwd: world.repo }).agent).toBe('goose');
  });

  it("through another agent's hook it is refused by its shape, never read as that agent", () => {
    expect(refusal(() => parseHookInput(goose.prompt('20251108_1', 'x'), 'claude', { processCwd: world.repo }))?.problem).toBe(
      'a `event`/`session_id` payload is not a claude payload',
    );
  });

  it('no working directory at all is refused by name, not guessed', () => {
    expect(refusal(() => parseHookInput(goose.prompt('20251108_1', 'x'), 'goose'))?.problem).toBe('the goose payload names no working directory');
  });

  it("outputs: nothing Goose reads on context events, a fence as {decision:'block',reason} (its only deny besides exit 2)", () => {
    expect(contextOutput('goose', 'UserPromptSubmit', 'the capture', 'a notice')).toEqual({});
    expect(denyToolOutput('goose', 'PreToolUse', 'fenced')).toEqual({ decision: 'block', reason: 'fenced' });
  });
});

describe("VS Code's chat agent calling an agent's hook", () => {
  it('is recognised by its shape and refused, with the caller in the trace, whichever agent the hook was installed for', () => {
    for (const agent of ['claude', 'copilot', undefined] as const) {
      const found = refusal(() =>
        parseHookInput(vscode.prompt(world, SESSION, 'fix #todo:fix-login'), agent, { event: agent === 'copilot' ? 'userPromptSubmitted' : undefined }),
      );
      expect(found?.trace, String(agent)).toMatchObject({ caller: 'vscode', agent, event: 'UserPromptSubmit', source: 'payload' });
    }
    expect(refusal(() => parseHookInput(vscode.preToolUse(world, SESSION), 'claude'))?.trace).toMatchObject({ caller: 'vscode', event: 'PreToolUse' });
  });

  it('control: without hookEventName the same camelCase fields are Copilot CLI and read as Copilot (so the refusal is the shape, not the fields)', () => {
    const input = JSON.parse(vscode.prompt(world, SESSION, 'x')) as Record<string, unknown>;
    delete input.hookEventName;
    expect(parseHookInput(JSON.stringify(input), 'copilot', { event: 'userPromptSubmitted' })).toMatchObject({ agent: 'copilot', session: SESSION });
  });
});
