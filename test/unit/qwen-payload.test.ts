// Qwen Code's hook payloads (src/agents/profiles/qwen.ts), as the real Qwen Code 0.24.4 sent them to a
// logging hook (`qwen -p` against a loopback model; test/e2e/qwen.test.ts runs the same binary). Each
// case has its control: what would happen without the Qwen rule.
import { describe, expect, it } from 'vitest';
import { InvalidHookInput, isWriteTool, parseHookInput } from '../../src/agents/payload';

const SESSION = '477d8cbb-84ab-42ff-bc83-eb5dbdd43377';
const base = {
  session_id: SESSION,
  transcript_path: `/tmp/qx/home/.qwen/projects/-tmp-qx-repo/chats/${SESSION}.jsonl`,
  cwd: '/tmp/qx/repo',
  timestamp: '2026-12-02T03:23:42.406Z',
  permission_mode: 'yolo',
};
const SESSION_START = { ...base, hook_event_name: 'SessionStart', source: 'startup', model: 'mock-model' };
const PROMPT = {
  ...base,
  hook_event_name: 'UserPromptSubmit',
  prompt_id: `${SESSION}########0`,
  prompt: 'hello RUNTOOL please',
  submitted_prompt: 'hello RUNTOOL please',
};
/** What Qwen fires after the tool result, before the next model call: the same prompt_id, no prompt text. */
const CONTINUATION = { ...base, hook_event_name: 'UserPromptSubmit', prompt_id: `${SESSION}########0`, prompt: '' };
const PRE_TOOL = {
  ...base,
  hook_event_name: 'PreToolUse',
  prompt_id: `${SESSION}########0`,
  tool_name: 'run_shell_command',
  tool_input: { command: 'touch /tmp/qx/marker', description: 'x' },
  tool_use_id: 'toolu_1796181823364_00eeije4w',
  tool_call_id: 'call_1',
};
/** The environment Qwen gives its hook processes (the part detection reads). */
const HOOK_ENV = { QWEN_CODE_SESSION_ID: SESSION };

const problemOf = (run: () => unknown): string | undefined => {
  try {
    run();
    return undefined;
  } catch (error) {
    if (error instanceof InvalidHookInput) return error.problem;
    throw error;
  }
};

describe('Qwen Code payloads', () => {
  it('prompt_id `<session>########<n>` is the Turn `<session>:<n>` (control: read as a Claude payload the whole payload is refused)', () => {
    expect(parseHookInput(JSON.stringify(PROMPT), 'qwen')).toMatchObject({
      agent: 'qwen',
      eventName: 'UserPromptSubmit',
      kind: 'prompt',
      session: SESSION,
      turn: `${SESSION}:0`,
      prompt: 'hello RUNTOOL please',
      transcriptPath: base.transcript_path,
    });
    expect(parseHookInput(JSON.stringify(PRE_TOOL), 'qwen')).toMatchObject({ kind: 'pre_tool', turn: `${SESSION}:0`, toolName: 'run_shell_command' });
    expect(problemOf(() => parseHookInput(JSON.stringify(PROMPT), 'claude'))).toBe('prompt_id: id outside its grammar');
  });

  it('a prompt_id the Turn grammar refuses otherwise is no Turn, never a dropped payload (control: a well-formed one is kept as it is)', () => {
    const foreign = parseHookInput(JSON.stringify({ ...PROMPT, prompt_id: 'another session########1' }), 'qwen');
    expect(foreign).toMatchObject({ kind: 'prompt', session: SESSION, turn: undefined });
    expect(parseHookInput(JSON.stringify({ ...PROMPT, prompt_id: 'turn-7' }), 'qwen').turn).toBe('turn-7');
  });

  it('the tool-result continuation (UserPromptSubmit with prompt "") renews like a PostToolUse (control: a prompt with text is a prompt)', () => {
    expect(parseHookInput(JSON.stringify(CONTINUATION), 'qwen')).toMatchObject({ eventName: 'UserPromptSubmit', kind: 'post_tool', turn: `${SESSION}:0` });
    expect(parseHookInput(JSON.stringify({ ...CONTINUATION, prompt: 'go on' }), 'qwen').kind).toBe('prompt');
    // Only Qwen reads an empty prompt so: Claude's stays a prompt.
    expect(parseHookInput(JSON.stringify({ ...CONTINUATION, prompt_id: 'p-1' }), 'claude').kind).toBe('prompt');
  });

  it('detected without --agent, before Codex whose detector its SessionStart meets (control: without the Qwen marks it reads as Codex)', () => {
    expect(parseHookInput(JSON.stringify(SESSION_START), undefined, { env: HOOK_ENV }).agent).toBe('qwen');
    expect(parseHookInput(JSON.stringify(PROMPT)).agent).toBe('qwen');
    expect(parseHookInput(JSON.stringify(SESSION_START)).agent).toBe('codex');
    // Another session's QWEN_CODE_SESSION_ID (a Claude run from a Qwen shell tool) is not this payload's.
    expect(
      parseHookInput(JSON.stringify({ ...SESSION_START, model: undefined, timestamp: undefined }), undefined, { env: { QWEN_CODE_SESSION_ID: 'other' } }).agent,
    ).toBe('claude');
  });

  it("Qwen's shell and file tools are fenced, its read-only tools are not", () => {
    for (const tool of ['run_shell_command', 'write_file', 'edit', 'notebook_edit']) expect(isWriteTool('qwen', tool), tool).toBe(true);
    for (const tool of ['read_file', 'grep_search', 'glob', 'web_fetch']) expect(isWriteTool('qwen', tool), tool).toBe(false);
  });
});
