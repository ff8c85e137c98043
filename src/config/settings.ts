// Settings the hook reads from its environment and from $TURNKEEPER_HOME (which the VS Code
// extension writes). The file's schema, defaults and limits live in ./homeConfig.ts, shared with the
// writer. Files are read only when a value is needed, to keep the replay path short.
import { userInfo } from 'node:os';
import { type Env } from '../store/location';
import { AGENTS, isSessionId, ownerOf, type Owner } from '../core/ids';
import { PROFILES } from '../agents/profiles/index';
import { isTurnedOff, LEASE_TTL_SECONDS, leaseTtlFrom, readHomeConfig, type OnConflict } from './homeConfig';

/** Spec §2 rule 1: env TURNKEEPER=off, or a file named `off` in TURNKEEPER_HOME. */
export { isTurnedOff };
export type { OnConflict };

/** Spec §2 "Renewal": TURNKEEPER_LEASE_TTL, else config.json, else 45 min; one rule for all (homeConfig.ts). */
export function leaseTtlSeconds(env: Env): number {
  return leaseTtlFrom(env.TURNKEEPER_LEASE_TTL) ?? readHomeConfig(env).leaseTtlSeconds ?? LEASE_TTL_SECONDS.default;
}

/** Spec §2 "Output": `block` from TURNKEEPER_ON_CONFLICT, else from config.json; anything else is context. */
export function onConflict(env: Env): OnConflict {
  const value = env.TURNKEEPER_ON_CONFLICT ?? readHomeConfig(env).onConflict;
  return value === 'block' ? 'block' : 'context';
}

/**
 * The client's clock as a team server sees it: what the clock-skew measurement compares with the
 * server's (measureClockSkew, noteClockSkew), and the `now` a hook hands a team store, which decides
 * lease and receipt times with its own clock. `TURNKEEPER_TEST_CLOCK_OFFSET_MS` (test-only, like
 * TURNKEEPER_TEST_FAULT) skews it, so tests can show that lease times follow the server and that the
 * skew is measured. Never the clock of a SQLite ledger, which records this process's time itself: an
 * agent's environment (a repository's `.env`) must not move the times the chain records.
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

/**
 * How long the warm hook server (src/cli/hookServer.ts) stays up with no hook to answer. Ten minutes:
 * a person between two prompts keeps it, a machine left alone is back to no process within the hour's
 * first quarter. It holds a store connection while it lives. The variable can only shorten it: the
 * server is started by a hook, with the agent's environment, which a repository can set (Gemini CLI
 * loads its `.env`), and a repository must not keep a process of the person's alive for longer.
 */
export function hookServerIdleMs(env: Env): number {
  const value = Number(env.TURNKEEPER_HOOK_SERVER_IDLE_MS);
  return Number.isSafeInteger(value) && value > 0 ? Math.min(value, HOOK_SERVER_IDLE_MS) : HOOK_SERVER_IDLE_MS;
}

const HOOK_SERVER_IDLE_MS = 600_000;

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
  // Each agent's profile names the variables it sets for its tools, first found wins (in AGENTS order).
  for (const agent of AGENTS) {
    const session = PROFILES[agent].sessionEnv.map((name) => env[name]).find((value) => value !== undefined && value !== '');
    if (session && isSessionId(session)) return { owner: ownerOf(agent, session), identifiedBy: 'agent_environment' };
  }
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
