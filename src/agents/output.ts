// The exact stdout shapes each agent accepts (spec §2 "Output"), from its profile. Codex rejects
// fields it does not know, so nothing else is ever added.
import type { Agent } from '../core/ids';
import { PROFILES, type HookOutput } from './profiles/index';
export type { HookOutput } from './profiles/index';

/** Context (a ready capture or guidance) for the event as received, in the agent's shape. */
export const contextOutput = (agent: Agent, eventName: string, text: string): HookOutput => PROFILES[agent].output.context(eventName, text);

/** `turnkeeper.onConflict=block`: guidance stops the prompt instead of riding along as context. */
export const blockOutput = (agent: Agent, text: string): HookOutput => PROFILES[agent].output.block(text);

/** Denies one tool call (fencing). */
export const denyToolOutput = (agent: Agent, eventName: string, text: string): HookOutput => PROFILES[agent].output.denyTool(eventName, text);
