// Hook payloads (src/agents/payload.ts): optional string fields an agent sends empty mean "absent".
// Gemini CLI 0.61 sends `"transcript_path": ""` when it has no chat file yet; before this rule the
// whole payload was refused (rule 2) and the hook did nothing. Each case has its control.
import { describe, expect, it } from 'vitest';
import { InvalidHookInput, parseHookInput } from '../../src/agents/payload';

/** A Gemini CLI 0.61 SessionStart as it arrives when the session has no chat file yet (shape: docs/notes/claude-gemini-hooks-observed.md). */
const GEMINI_NO_CHAT_FILE = {
  session_id: '55c18457-3edb-4e99-a04d-ad6c27aa918b',
  transcript_path: '',
  cwd: '/tmp/work',
  hook_event_name: 'SessionStart',
  timestamp: '2026-11-30T12:15:45.147Z',
  source: 'startup',
};

const problemOf = (run: () => unknown): string | undefined => {
  try {
    run();
    return undefined;
  } catch (error) {
    if (error instanceof InvalidHookInput) return error.problem;
    throw error;
  }
};

describe('an empty optional string is absent', () => {
  it('Gemini 0.61 transcript_path "": accepted, with no transcript (the old code refused it: "transcript_path: not an absolute path")', () => {
    const event = parseHookInput(JSON.stringify(GEMINI_NO_CHAT_FILE), 'gemini');
    expect(event).toMatchObject({ agent: 'gemini', kind: 'session_start', session: GEMINI_NO_CHAT_FILE.session_id, transcriptPath: undefined });
    expect(event.sessionSource).toBe('startup');
    // Detected as Gemini without --agent too.
    expect(parseHookInput(JSON.stringify(GEMINI_NO_CHAT_FILE)).agent).toBe('gemini');
  });

  it('control: a transcript_path that is not empty keeps the path rules', () => {
    expect(problemOf(() => parseHookInput(JSON.stringify({ ...GEMINI_NO_CHAT_FILE, transcript_path: 'chats/x.json' }), 'gemini'))).toBe(
      'transcript_path: not an absolute path',
    );
    expect(parseHookInput(JSON.stringify({ ...GEMINI_NO_CHAT_FILE, transcript_path: '/tmp/x.json' }), 'gemini').transcriptPath).toBe('/tmp/x.json');
  });

  it('every optional field of the snake_case payloads: "" reads as absent (the old code refused turn_id and prompt_id "")', () => {
    const codex = { session_id: 's-1', cwd: '/tmp/work', hook_event_name: 'UserPromptSubmit', model: 'gpt', permission_mode: 'default', turn_id: 't-1' };
    for (const field of ['transcript_path', 'prompt_id', 'prompt', 'tool_name', 'timestamp', 'source']) {
      expect(
        problemOf(() => parseHookInput(JSON.stringify({ ...codex, [field]: '' }), 'codex')),
        field,
      ).toBeUndefined();
    }
    const event = parseHookInput(JSON.stringify({ ...codex, turn_id: '', prompt: '', tool_name: '' }), 'codex');
    expect(event).toMatchObject({ turn: undefined, prompt: undefined, toolName: undefined });
    // A Claude prompt_id "" is no Turn: env TURNKEEPER_TURN may still give one (spec §1).
    expect(parseHookInput(JSON.stringify({ ...codex, turn_id: undefined, model: undefined, prompt_id: '' }), 'claude').turn).toBeUndefined();
    // An empty turn_id does not make a payload Codex's: detection reads the same absent field.
    expect(parseHookInput(JSON.stringify({ session_id: 's-1', cwd: '/tmp/work', hook_event_name: 'UserPromptSubmit', turn_id: '' })).agent).toBe('claude');
  });

  it('Copilot\'s camelCase transcriptPath "" is absent: the session\'s events.jsonl stands in (control: the fallback is what an absent one gets)', () => {
    const stop = { sessionId: 'b7f1e0a2-0000-4000-8000-000000000001', cwd: '/tmp/work', timestamp: 1767225600000 };
    const env = { COPILOT_HOME: '/tmp/copilot' };
    const absent = parseHookInput(JSON.stringify(stop), 'copilot', { event: 'agentStop', env });
    const empty = parseHookInput(JSON.stringify({ ...stop, transcriptPath: '' }), 'copilot', { event: 'agentStop', env });
    expect(empty.transcriptPath).toBe(absent.transcriptPath);
    expect(empty.transcriptPath).toMatch(/^\/tmp\/copilot\//);
  });

  it('control: required fields stay required when empty (session_id, cwd, hook_event_name)', () => {
    const withChat = { ...GEMINI_NO_CHAT_FILE, transcript_path: '/tmp/chats/session.json' };
    expect(problemOf(() => parseHookInput(JSON.stringify({ ...withChat, session_id: '' }), 'gemini'))).toBe('session_id: id outside its grammar');
    expect(problemOf(() => parseHookInput(JSON.stringify({ ...withChat, cwd: '' }), 'gemini'))).toBe('cwd: not an absolute path');
    expect(problemOf(() => parseHookInput(JSON.stringify({ ...withChat, hook_event_name: '' }), 'gemini'))).toBe('unknown gemini event ""');
  });
});
