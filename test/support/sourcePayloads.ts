// Hook payloads of agents and programs that cannot run here, built field for field from the types in
// their own source (nothing here was recorded from a real binary):
// - Grok Build: `HookEventEnvelope` and `HookPayload` in github.com/xai-org/grok-build 19d42e3,
//   crates/codegen/xai-grok-hooks/src/event.rs (camelCase, `hookEventName` in snake_case, the event's
//   fields flattened in);
// - Goose: `HookContext` in github.com/block/goose crates/goose/src/hooks/mod.rs 0825b57 (field names
//   as written, `matcher_context` serialised even when None, the others skipped when None; the
//   UserPromptSubmit call site adds only the message, Stop adds last_assistant_message and working_dir);
// - VS Code's chat agent: `IHookCommandInput` plus the caller's input in github.com/microsoft/vscode
//   src/vs/workbench/contrib/chat/common/hooks/ (hooksCommandTypes.ts, hooksExecutionService.ts):
//   `timestamp`, `cwd`, `sessionId`, `hookEventName`, `transcript_path`, then `prompt` or
//   `tool_name`/`tool_input`/`tool_use_id`.
import { join } from 'node:path';
import type { World } from './world';

const TIMESTAMP = '2026-12-02T03:00:00.000Z';

const grokBase = (world: World, event: string, session: string, promptId: string | undefined) => ({
  hookEventName: event,
  sessionId: session,
  cwd: world.repo,
  workspaceRoot: world.repo,
  timestamp: TIMESTAMP,
  transcriptPath: join(world.root, `${session}.jsonl`),
  ...(promptId !== undefined ? { promptId } : {}),
  permissionMode: 'default',
});

export const grok = {
  sessionStart: (world: World, session: string) =>
    JSON.stringify({ ...grokBase(world, 'session_start', session, undefined), source: 'startup', modelId: 'grok-4' }),
  prompt: (world: World, session: string, promptId: string, prompt: string) =>
    JSON.stringify({ ...grokBase(world, 'user_prompt_submit', session, promptId), prompt }),
  preToolUse: (world: World, session: string, promptId: string, toolName: string) =>
    JSON.stringify({
      ...grokBase(world, 'pre_tool_use', session, promptId),
      toolName,
      toolUseId: 'call_0001',
      toolInput: { path: 'README.md', old_string: 'demo', new_string: 'demo!' },
      toolInputTruncated: false,
    }),
  stop: (world: World, session: string, promptId: string) =>
    JSON.stringify({
      ...grokBase(world, 'stop', session, promptId),
      reason: 'end_turn',
      stopHookActive: false,
      lastAssistantMessage: 'done',
      backgroundTasks: [],
      sessionCrons: [],
    }),
};

/** The variables Grok Build's runner sets on every hook process (runner/command.rs). */
export const grokHookEnv = (world: World, event: string, session: string): Record<string, string> => ({
  GROK_HOOK_EVENT: event,
  GROK_HOOK_NAME: 'turnkeeper',
  GROK_SESSION_ID: session,
  GROK_WORKSPACE_ROOT: world.repo,
  CLAUDE_PROJECT_DIR: world.repo,
});

export const goose = {
  sessionStart: (session: string) => JSON.stringify({ event: 'SessionStart', session_id: session, matcher_context: null }),
  prompt: (session: string, prompt: string) => JSON.stringify({ event: 'UserPromptSubmit', session_id: session, matcher_context: prompt, message: prompt }),
  preToolUse: (session: string, toolName: string) =>
    JSON.stringify({
      event: 'PreToolUse',
      session_id: session,
      matcher_context: toolName,
      tool_call_id: 'call_0001',
      tool_name: toolName,
      tool_input: { command: 'ls' },
    }),
  stop: (world: World, session: string) =>
    JSON.stringify({ event: 'Stop', session_id: session, matcher_context: null, last_assistant_message: 'done', working_dir: world.repo }),
};

export const vscode = {
  prompt: (world: World, session: string, prompt: string) =>
    JSON.stringify({
      timestamp: TIMESTAMP,
      cwd: world.repo,
      sessionId: session,
      hookEventName: 'UserPromptSubmit',
      transcript_path: join(world.root, `${session}.jsonl`),
      prompt,
    }),
  preToolUse: (world: World, session: string) =>
    JSON.stringify({
      timestamp: TIMESTAMP,
      cwd: world.repo,
      sessionId: session,
      hookEventName: 'PreToolUse',
      tool_name: 'editFiles',
      tool_input: { files: ['README.md'] },
      tool_use_id: 'toolu_0001',
    }),
};
