// Settings the hook reads from its environment and from $TURNKEEPER_HOME (which the VS Code
// extension writes). Files are read only when a value is needed, to keep the replay path short.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { userInfo } from 'node:os';
import { DEFAULT_LEASE_TTL_SECONDS } from '../core/lease';
import { turnkeeperHome, type Env } from '../store/location';
import { isSessionId, ownerOf, type Agent, type Owner } from '../core/ids';

/** Spec §2 rule 1: env TURNKEEPER=off, or a file named `off` in TURNKEEPER_HOME. */
export const isTurnedOff = (env: Env): boolean => env.TURNKEEPER === 'off' || existsSync(join(turnkeeperHome(env), 'off'));

export function leaseTtlSeconds(env: Env): number {
  const fromEnv = Number(env.TURNKEEPER_LEASE_TTL);
  if (Number.isSafeInteger(fromEnv) && fromEnv > 0) return fromEnv;
  const fromFile = readHomeConfig(env).leaseTtlSeconds;
  return typeof fromFile === 'number' && Number.isSafeInteger(fromFile) && fromFile > 0 ? fromFile : DEFAULT_LEASE_TTL_SECONDS;
}

export type OnConflict = 'context' | 'block';
export function onConflict(env: Env): OnConflict {
  const value = env.TURNKEEPER_ON_CONFLICT ?? readHomeConfig(env).onConflict;
  return value === 'block' ? 'block' : 'context';
}

/**
 * This process's clock. `TURNKEEPER_TEST_CLOCK_OFFSET_MS` (test-only, like TURNKEEPER_TEST_FAULT) skews
 * it, so tests can show that lease times follow a team server's clock, not a client's.
 */
export function clientClock(env: Env): () => number {
  const offset = Number(env.TURNKEEPER_TEST_CLOCK_OFFSET_MS);
  return Number.isSafeInteger(offset) && offset !== 0 ? () => Date.now() + offset : Date.now;
}

/** How long a hook waits for a locked store before it gives up with [store_unavailable]. */
export function hookBusyTimeoutMs(env: Env): number {
  const value = Number(env.TURNKEEPER_BUSY_TIMEOUT_MS);
  // 4 s: under a burst of hooks on two busy cores each commit waits its turn behind scheduling
  // latency; still well inside the 15 s hook timeout Turnkeeper installs.
  return Number.isSafeInteger(value) && value >= 0 ? value : 4000;
}

interface HomeConfig {
  readonly onConflict?: unknown;
  readonly leaseTtlSeconds?: unknown;
}
function readHomeConfig(env: Env): HomeConfig {
  try {
    const value: unknown = JSON.parse(readFileSync(join(turnkeeperHome(env), 'config.json'), 'utf8'));
    return typeof value === 'object' && value !== null ? (value as HomeConfig) : {};
  } catch {
    return {};
  }
}

/**
 * Who is running a command such as `turnkeeper release` or `todo done`, and how we know. An agent's
 * shell tool carries its session in the environment the agent set (CODEX_THREAD_ID, …), so an agent
 * can release its own lease without --force: `agent_environment`. `--owner` and TURNKEEPER_OWNER are
 * what someone typed: `self_declared`. Neither is an authority boundary against the same OS user; the
 * point is that the receipt says which it was (spec §10) instead of presenting a claim as a fact.
 */
export interface Caller {
  readonly owner: Owner;
  readonly identifiedBy: 'agent_environment' | 'self_declared';
}
export function callerOwner(env: Env, declared?: string): Caller | undefined {
  const explicit = declared ?? env.TURNKEEPER_OWNER;
  if (explicit) return { owner: explicit as Owner, identifiedBy: 'self_declared' };
  const candidates: [Agent, string | undefined][] = [
    ['codex', env.CODEX_THREAD_ID ?? env.CODEX_SESSION_ID],
    ['claude', env.CLAUDE_CODE_SESSION_ID],
    ['gemini', env.GEMINI_SESSION_ID],
  ];
  for (const [agent, session] of candidates) if (session && isSessionId(session)) return { owner: ownerOf(agent, session), identifiedBy: 'agent_environment' };
  return undefined;
}

/** The operating-system account running this process: recorded as who asked for a release. */
export function requesterOf(env: Env): string {
  try {
    return `${userInfo().username} (uid ${process.getuid?.() ?? '?'})`;
  } catch {
    return env.USER ?? 'unknown';
  }
}
