// The exact stdout shapes each agent accepts (spec §2 "Output"). Codex rejects fields it does
// not know, so nothing else is ever added.
import type { Agent } from '../core/ids';

export type HookOutput = Readonly<Record<string, unknown>>;

export const contextOutput = (eventName: string, text: string): HookOutput => ({
  hookSpecificOutput: { hookEventName: eventName, additionalContext: text },
});

/** `turnkeeper.onConflict=block`: guidance stops the prompt instead of riding along as context. */
export const blockOutput = (agent: Agent, text: string): HookOutput =>
  agent === 'gemini' ? { decision: 'deny', reason: text } : { decision: 'block', reason: text };

/** Denies one tool call (fencing). */
export const denyToolOutput = (agent: Agent, eventName: string, text: string): HookOutput =>
  agent === 'gemini'
    ? { decision: 'deny', reason: text }
    : { hookSpecificOutput: { hookEventName: eventName, permissionDecision: 'deny', permissionDecisionReason: text } };
