// Shapes that several agents share (Codex and Claude speak one hook dialect; Gemini and Copilot
// borrowed parts of it). Each profile says which of these it uses.
import { homedir } from 'node:os';
import type { AgentProfile, Env, EventKind, HookOutput } from './index';

/** The five events as Codex and Claude Code name them. */
export const CLAUDE_STYLE_EVENTS: Readonly<Record<string, EventKind>> = {
  SessionStart: 'session_start',
  UserPromptSubmit: 'prompt',
  PreToolUse: 'pre_tool',
  PostToolUse: 'post_tool',
  Stop: 'stop',
};

/** `{"hookSpecificOutput":{"hookEventName","additionalContext"}}`, nothing else in it (Codex rejects unknown fields). */
export const hookSpecificContext = (eventName: string, text: string): HookOutput => ({
  hookSpecificOutput: { hookEventName: eventName, additionalContext: text },
});

/** `{"hookSpecificOutput":{"hookEventName","permissionDecision":"deny","permissionDecisionReason"}}`. */
const hookSpecificDeny = (eventName: string, text: string): HookOutput => ({
  hookSpecificOutput: { hookEventName: eventName, permissionDecision: 'deny', permissionDecisionReason: text },
});

/** `{"decision":"block","reason"}`: how Codex, Claude Code and Copilot CLI stop a prompt. */
export const decisionBlock = (text: string): HookOutput => ({ decision: 'block', reason: text });

/**
 * A top-level `systemMessage`: for the person, not sent to the model; Codex, Claude Code and Gemini
 * CLI accept it beside any output. Codex 0.171's TUI shows `↳ Hook · <line>` (`codex exec` prints no
 * hook text at all); `gemini -p` prints `Hook system message: <line>` on stderr; `claude -p` prints it
 * nowhere (docs/hook-protocol.md, "What the person sees").
 */
export const systemMessage = (output: HookOutput, line: string): HookOutput => ({ ...output, systemMessage: line });

/** The output of the Codex/Claude dialect: context and tool denials in `hookSpecificOutput`, a prompt stopped by `decision`, the person told in `systemMessage`. */
export const HOOK_SPECIFIC_OUTPUT: AgentProfile['output'] = {
  context: hookSpecificContext,
  block: decisionBlock,
  denyTool: hookSpecificDeny,
  notice: systemMessage,
};

/** A hook entry that runs `command`, with the timeout in the agent's unit. */
export const commandEntry = (command: string, timeout: number): Record<string, unknown> => ({ type: 'command', command, timeout });

/** An unset and an empty variable mean the same: the default. */
export const nonEmpty = (value: string | undefined): string | undefined => (value === undefined || value === '' ? undefined : value);

/** The user's home directory as the agent sees it: HOME, else the account's. */
export const homeOf = (env: Env): string => nonEmpty(env.HOME) ?? homedir();

/** The JSON objects of a transcript tail's whole lines (a cut first line and bad lines are skipped). */
export function jsonLines(tail: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const line of tail.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const value: unknown = JSON.parse(line);
      if (isRecord(value)) out.push(value);
    } catch {
      // a line cut by the tail, or one the agent was still writing
    }
  }
  return out;
}

export const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A line's ISO `timestamp` in ms, or undefined. */
export const lineTime = (line: Record<string, unknown>): number | undefined => {
  const at = typeof line.timestamp === 'string' ? Date.parse(line.timestamp) : NaN;
  return Number.isFinite(at) ? at : undefined;
};

/** A non-negative integer count, or undefined. */
export const count = (value: unknown): number | undefined => (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : undefined);
