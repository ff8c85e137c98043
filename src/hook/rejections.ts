// Hook inputs Turnkeeper refused (spec §2 rule 2), as doctor reads them. A refused input prints
// nothing and writes nothing to the store, so without a trace an agent whose payloads changed shape
// looks exactly like one whose hooks never run. The trace is one file in TURNKEEPER_HOME: private
// (0600, in the 0700 home), bounded (appended to, and compacted to the newest MAX_REJECTIONS entries
// of a few hundred bytes each once it passes COMPACT_AT_BYTES), and without the payload's content:
// the time, the agent and the event, where the problem was (field paths) and why in Turnkeeper's
// words, the input's size, and the launch (TURNKEEPER_LAUNCH) that started the agent, when one did.
// An append racing a compaction may be lost: a trace, not a ledger.
import { closeSync, constants, fchmodSync, fstatSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { writeAll, writeFileAtomic } from '../files/atomicFile';
import { readConfigFile } from '../files/boundedFile';
import { FOREIGN_CALLERS, type ForeignCaller, type RejectionTrace } from '../agents/payload';
import { isAgent, isLaunchId, type Agent } from '../core/ids';
import { ensurePrivateHome, turnkeeperHome, type Env } from '../store/location';

const REJECTIONS_FILE = 'rejected-hooks.jsonl';
/** Entries kept: enough to tell one agent's repeated refusal from another's, never an unbounded log. */
const MAX_REJECTIONS = 32;
/** Past this size an append compacts the file to the newest MAX_REJECTIONS (an entry is at most about 1.5 KiB). */
const COMPACT_AT_BYTES = 16 * 1024;
/** A file larger than this was not written by Turnkeeper: it is read as empty (and the next compaction replaces it). */
const MAX_FILE_BYTES = 64 * 1024;
const MAX_REASON = 200;
const MAX_FIELD = 128;
const MAX_FIELDS = 8;
/** How long doctor reports a refusal: as long as it keeps a silent launch whose agent exited. */
export const REJECTION_KEPT_MS = 24 * 3600_000;

export interface Rejection {
  readonly at: string;
  readonly agent: Agent | null;
  readonly event: string | null;
  readonly source: RejectionTrace['source'];
  readonly fields: readonly string[];
  readonly reason: string;
  /** The input's size in bytes. */
  readonly bytes: number;
  /** The launch whose agent ran the hook (TURNKEEPER_LAUNCH), or null. */
  readonly launch: string | null;
  /**
   * The program that called the hook when its payload says it is not the agent (`vscode`: VS Code's
   * chat agent running Claude Code's or Copilot's hook files), or null. Older entries have none.
   */
  readonly caller?: ForeignCaller | null;
}

const rejectionsPath = (env: Env): string => join(turnkeeperHome(env), REJECTIONS_FILE);

const SOURCES: ReadonlySet<string> = new Set<RejectionTrace['source']>(['payload', 'environment', 'checkout']);
const EVENT = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;
const isString = (value: unknown, max: number): value is string => typeof value === 'string' && value.length <= max && value.isWellFormed();

/** One line of the file, or undefined when it is not an entry Turnkeeper writes (the home is the user's: anything may be there). */
function entryOf(line: string): Rejection | undefined {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const entry = value as Record<string, unknown>;
  const ok =
    isString(entry.at, 64) &&
    Number.isFinite(Date.parse(entry.at)) &&
    (entry.agent === null || (typeof entry.agent === 'string' && isAgent(entry.agent))) &&
    (entry.event === null || (typeof entry.event === 'string' && EVENT.test(entry.event))) &&
    typeof entry.source === 'string' &&
    SOURCES.has(entry.source) &&
    Array.isArray(entry.fields) &&
    entry.fields.length <= MAX_FIELDS &&
    entry.fields.every((field) => isString(field, MAX_FIELD)) &&
    isString(entry.reason, MAX_REASON) &&
    Number.isSafeInteger(entry.bytes) &&
    (entry.launch === null || (typeof entry.launch === 'string' && isLaunchId(entry.launch))) &&
    (entry.caller === undefined || entry.caller === null || (FOREIGN_CALLERS as readonly unknown[]).includes(entry.caller));
  return ok ? (entry as unknown as Rejection) : undefined;
}

function readAll(env: Env): Rejection[] {
  const read = readConfigFile(rejectionsPath(env), MAX_FILE_BYTES);
  if (read.kind !== 'bytes') return [];
  return read.bytes
    .toString('utf8')
    .split('\n')
    .flatMap((line) => entryOf(line) ?? []);
}

/**
 * Adds one refusal to the trace: one append (O_APPEND, so refusals of concurrent hooks do not
 * interleave), and once the file passes COMPACT_AT_BYTES an atomic rewrite down to the newest
 * MAX_REJECTIONS (an append racing that rewrite may be lost). Throws when the home cannot be written;
 * the hook catches that (it fails open: a trace it cannot leave changes nothing for the agent).
 */
export function recordRejection(env: Env, trace: RejectionTrace, bytes: number, now: number): void {
  const launch = env.TURNKEEPER_LAUNCH;
  const entry: Rejection = {
    at: new Date(now).toISOString(),
    agent: trace.agent ?? null,
    event: trace.event !== undefined && EVENT.test(trace.event) ? trace.event : null,
    source: trace.source,
    fields: trace.fields.slice(0, MAX_FIELDS).map((field) => field.slice(0, MAX_FIELD)),
    reason: trace.reason.slice(0, MAX_REASON),
    bytes,
    launch: launch !== undefined && isLaunchId(launch) ? launch : null,
    ...(trace.caller !== undefined ? { caller: trace.caller } : {}),
  };
  ensurePrivateHome(env);
  const path = rejectionsPath(env);
  // Never through a symlink, and never into a file others may read.
  const fd = openSync(path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
  let size: number;
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new Error(`${path} is not a regular file`);
    if ((stat.mode & 0o077) !== 0) fchmodSync(fd, 0o600);
    writeAll(fd, JSON.stringify(entry) + '\n');
    size = fstatSync(fd).size;
  } finally {
    closeSync(fd);
  }
  if (size > COMPACT_AT_BYTES) {
    const kept = readAll(env).slice(-MAX_REJECTIONS);
    writeFileAtomic(path, kept.map((item) => JSON.stringify(item) + '\n').join(''), 0o600);
  }
}

/** The newest MAX_REJECTIONS refusals of the last REJECTION_KEPT_MS, oldest first; none when the file is missing or unreadable. */
export function recentRejections(env: Env, now: number): Rejection[] {
  return readAll(env)
    .slice(-MAX_REJECTIONS)
    .filter((entry) => now - Date.parse(entry.at) <= REJECTION_KEPT_MS);
}
