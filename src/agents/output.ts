// The exact stdout shapes each agent accepts (spec §2 "Output"), from its profile. Codex rejects
// fields it does not know, so nothing else is ever added.
import type { Agent } from '../core/ids';
import { PROFILES, type HookOutput } from './profiles/index';
export type { HookOutput } from './profiles/index';

/** Context (a ready capture or guidance) for the event as received, in the agent's shape. */
export function contextOutput(agent: Agent, eventName: string, text: string): HookOutput;
/** The Codex/Claude shape, for a caller that does not name the agent (kept while callers move over). */
export function contextOutput(eventName: string, text: string): HookOutput;
export function contextOutput(...args: [Agent, string, string] | [string, string]): HookOutput {
  return args.length === 3 ? PROFILES[args[0]].output.context(args[1], args[2]) : PROFILES.claude.output.context(args[0], args[1]);
}

/** `turnkeeper.onConflict=block`: guidance stops the prompt instead of riding along as context. */
export const blockOutput = (agent: Agent, text: string): HookOutput => PROFILES[agent].output.block(text);

/** Denies one tool call (fencing). */
export const denyToolOutput = (agent: Agent, eventName: string, text: string): HookOutput => PROFILES[agent].output.denyTool(eventName, text);
