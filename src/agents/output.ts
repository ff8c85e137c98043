// The exact stdout shapes each agent accepts (spec §2 "Output"), from its profile. Codex rejects
// fields it does not know, so nothing the profile does not name is ever added.
import type { Agent } from '../core/ids';
import { PROFILES, type HookOutput } from './profiles/index';
export type { HookOutput } from './profiles/index';

/**
 * Context (a ready capture or guidance) for the event as received, in the agent's shape; with a
 * `notice`, that line for the person too, where the agent has a field its user sees.
 */
export function contextOutput(agent: Agent, eventName: string, text: string, notice?: string): HookOutput {
  const { output } = PROFILES[agent];
  const context = output.context(eventName, text);
  return notice === undefined || output.notice === undefined ? context : output.notice(context, notice);
}

/** `turnkeeper.onConflict=block`: guidance stops the prompt instead of riding along as context. */
export const blockOutput = (agent: Agent, text: string): HookOutput => PROFILES[agent].output.block(text);

/** Denies one tool call (fencing). */
export const denyToolOutput = (agent: Agent, eventName: string, text: string): HookOutput => PROFILES[agent].output.denyTool(eventName, text);
