// The settings that live in $TURNKEEPER_HOME: `config.json` and the file `off`. Hooks run in other
// processes and read only these (spec §2 rule 1, "Renewal", "Output"; spec §4 "Selection"); the VS
// Code extension writes them from its machine-scoped settings. This module owns their schema, their
// defaults and their limits, for the readers (src/config/settings.ts, open.ts, checkpoints.ts) and the
// writer (src/extension/ctx.ts) alike; package.json's `contributes.configuration` repeats the same
// numbers for the settings editor, and test/unit/home-config.test.ts holds the two together.
import { closeSync, existsSync, fstatSync, openSync, readFileSync, rmSync, statSync, writeFileSync, type BigIntStats } from 'node:fs';
import { join } from 'node:path';
import * as z from 'zod/mini';
import { DEFAULT_LEASE_TTL_SECONDS, RENEWAL_INTERVAL_MS } from '../core/lease';
import { ensurePrivateHome, turnkeeperHome, type Env } from '../store/location';
import { StoreUnavailableError } from '../store/authority';
import { writeFileAtomic } from '../files/atomicFile';

const HOME_CONFIG_FILE = 'config.json';
const OFF_FILE = 'off';

export const ON_CONFLICT_VALUES = ['context', 'block'] as const;
export type OnConflict = (typeof ON_CONFLICT_VALUES)[number];

/**
 * One rule for the lease time to live, wherever it comes from (TURNKEEPER_LEASE_TTL, config.json, the
 * editor setting): whole seconds, at least one renewal interval. A shorter TTL would let a busy holder's
 * lease look expired between two renewals (renewals are at most once a minute, spec §2 "Renewal"), and
 * the guidance would then offer a takeover of a turn that is still working. A smaller value counts as
 * the minimum; a value that is not a whole number is ignored (the next source applies).
 */
export const LEASE_TTL_SECONDS = { default: DEFAULT_LEASE_TTL_SECONDS, minimum: RENEWAL_INTERVAL_MS / 1000 } as const;

export function leaseTtlFrom(value: unknown): number | undefined {
  const number = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isSafeInteger(number) || number <= 0) return undefined;
  return Math.max(number, LEASE_TTL_SECONDS.minimum);
}

/** What the hooks' settings are when nothing sets them. */
export const HOME_CONFIG_DEFAULTS = { onConflict: 'context' as OnConflict, leaseTtlSeconds: LEASE_TTL_SECONDS.default };

/** config.json, each field validated on its own: one bad field does not discard the others. */
export interface HomeConfig {
  readonly onConflict?: OnConflict;
  readonly leaseTtlSeconds?: number;
  /** The store selection (spec §4): `postgres://…`, `postgresql://…` or `sqlite:<path>`; read by open.ts. */
  readonly store?: string;
  /** The checkpoint witness file (docs/receipts.md, "Checkpoints"), or `off`; read by checkpoints.ts. */
  readonly witness?: string;
  /** Automatic checkpoints every N receipts, 0 for none; read by checkpoints.ts. */
  readonly checkpointEvery?: number;
  /**
   * Where `start --worktree` puts a Todo's worktree and how its branch is named; read through
   * worktreeSettings, which throws WorktreeConfigError for an invalid value (kept here as `invalid`)
   * rather than put worktrees somewhere the person did not choose.
   */
  readonly worktrees?: WorktreeSettings | { readonly invalid: string };
}

/** `worktrees` in config.json (docs/spec.md §7 "Start in a worktree"). */
export interface WorktreeSettings {
  /**
   * The path of a Todo's worktree: absolute, or relative to the main checkout's parent folder, with
   * `{repo}` (the main checkout's folder name) and `{todo}` (the Todo id); without `{todo}` it names
   * the folder that holds one worktree per Todo.
   */
  readonly location: string;
  /** Prepended to the Todo id to name its branch. */
  readonly branchPrefix: string;
}

export const WORKTREE_DEFAULTS: WorktreeSettings = { location: '{repo}.worktrees/{todo}', branchPrefix: 'todo/' };

/** An invalid `worktrees` value in config.json: nothing is created until it is fixed. */
export class WorktreeConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WorktreeConfigError';
  }
}

/**
 * Why a branch prefix cannot begin a branch name (git check-ref-format's rules that a prefix can
 * break on its own), or undefined when it can: no control characters, spaces or any of ~^:?*[\,
 * no `..`, `@{`, `//`, no leading `-` or `/`, no component starting with `.` or ending with `.lock`.
 */
export function branchPrefixProblem(prefix: string): string | undefined {
  if (/[\x00-\x20\x7f~^:?*[\\]/.test(prefix)) return 'it holds a space, a control character or one of ~^:?*[\\';
  if (prefix.includes('..') || prefix.includes('@{') || prefix.includes('//')) return 'it holds "..", "@{" or "//"';
  if (prefix.startsWith('-') || prefix.startsWith('/')) return 'it starts with "-" or "/"';
  if (prefix.split('/').some((part, i, all) => part.startsWith('.') || (i < all.length - 1 && part.endsWith('.lock'))))
    return 'a component starts with "." or ends with ".lock"';
  return undefined;
}

function parseWorktrees(value: unknown): WorktreeSettings | { readonly invalid: string } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { invalid: 'worktrees must be an object {location, branchPrefix}' };
  const record = value as Record<string, unknown>;
  const unknown = Object.keys(record).filter((key) => key !== 'location' && key !== 'branchPrefix');
  if (unknown.length > 0) return { invalid: `worktrees has unknown key ${JSON.stringify(unknown[0])} (known: location, branchPrefix)` };
  const location = record.location ?? WORKTREE_DEFAULTS.location;
  if (typeof location !== 'string' || location.trim() === '' || location.includes('\0')) return { invalid: 'worktrees.location must be a non-empty path' };
  const placeholder = /\{([^}]*)\}/g.exec(location.replace(/\{(repo|todo)\}/g, ''));
  if (placeholder) return { invalid: `worktrees.location names {${placeholder[1]}}: only {repo} and {todo} are known` };
  const branchPrefix = record.branchPrefix ?? WORKTREE_DEFAULTS.branchPrefix;
  if (typeof branchPrefix !== 'string') return { invalid: 'worktrees.branchPrefix must be a string' };
  const problem = branchPrefixProblem(branchPrefix);
  if (problem) return { invalid: `worktrees.branchPrefix ${JSON.stringify(branchPrefix)} cannot begin a branch name: ${problem}` };
  return { location, branchPrefix };
}

// Built on first use: most hooks find no config.json, and building schemas is start-up time.
const makeFields = () => ({
  onConflict: z.enum(ON_CONFLICT_VALUES),
  // Numbers in the file (a string is not accepted there, unlike the environment variables).
  leaseTtlSeconds: z.number(),
  store: z.string().check(z.trim(), z.minLength(1)),
  witness: z.string().check(z.trim(), z.minLength(1)),
  checkpointEvery: z.int().check(z.nonnegative()),
});
let schemas: ReturnType<typeof makeFields> | undefined;

export function parseHomeConfig(value: unknown): HomeConfig {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return {};
  const record = value as Record<string, unknown>;
  const fields = (schemas ??= makeFields());
  const out: { -readonly [K in keyof HomeConfig]: HomeConfig[K] } = {};
  const onConflict = fields.onConflict.safeParse(record.onConflict);
  if (onConflict.success) out.onConflict = onConflict.data;
  const ttl = fields.leaseTtlSeconds.safeParse(record.leaseTtlSeconds);
  const seconds = ttl.success ? leaseTtlFrom(ttl.data) : undefined;
  if (seconds !== undefined) out.leaseTtlSeconds = seconds;
  const store = fields.store.safeParse(record.store);
  if (store.success) out.store = store.data;
  const witness = fields.witness.safeParse(record.witness);
  if (witness.success) out.witness = witness.data;
  const every = fields.checkpointEvery.safeParse(record.checkpointEvery);
  if (every.success) out.checkpointEvery = every.data;
  if (record.worktrees !== undefined) out.worktrees = parseWorktrees(record.worktrees);
  return out;
}

/** config.json's `worktrees` with its defaults; WorktreeConfigError naming the file when it is invalid. */
export function worktreeSettings(env: Env): WorktreeSettings {
  const value = readHomeConfig(env).worktrees;
  if (value === undefined) return WORKTREE_DEFAULTS;
  if ('invalid' in value) throw new WorktreeConfigError(`${homeConfigPath(env)}: ${value.invalid}; fix or remove it`);
  return value;
}

const homeConfigPath = (env: Env): string => join(turnkeeperHome(env), HOME_CONFIG_FILE);

/**
 * The file as last read by this process, and the identity it had then. A hook asks for several keys
 * (the store, the lease TTL, onConflict, the witness, checkpointEvery) and reads the file once; the
 * extension, which lives long and writes the file, sees a change by its identity (inode, size,
 * modification time), and its own writes drop the memo.
 */
let memo: { readonly path: string; readonly identity: string; readonly config: HomeConfig } | undefined;

/**
 * A file modified less than this long before it was read may change again within the same tick of
 * the file system's clock with the same size: its memo is not trusted (git's "racily clean" rule).
 */
const RACY_MS = 2000;

/**
 * The validated config.json; a missing file is `{}` (every default applies). A file that exists but
 * cannot be read, or is not JSON, is StoreUnavailableError naming it: it may hold the team store's
 * selection, and reading it as `{}` would quietly send this process to the local SQLite file while
 * the team server holds the same Todos (two holders). One bad field still only drops that field.
 */
export function readHomeConfig(env: Env): HomeConfig {
  const path = homeConfigPath(env);
  let fd: number;
  try {
    // A stat per call; the file is opened only when it exists and is not the one read last.
    const identity = identityOf(statSync(path, { bigint: true }));
    if (memo?.path === path && memo.identity === identity) return memo.config;
    fd = openSync(path, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ENOTDIR') return {};
    throw new StoreUnavailableError(`${path} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'}): fix its permissions or remove it`);
  }
  try {
    const stat = fstatSync(fd, { bigint: true });
    let config: HomeConfig;
    try {
      config = parseHomeConfig(JSON.parse(readFileSync(fd, 'utf8')) as unknown);
    } catch (error) {
      throw new StoreUnavailableError(
        `${path} is not valid JSON (${(error as Error).message}): fix or remove it; Turnkeeper takes no settings, and no store, from a file it cannot parse`,
      );
    }
    const settled = Number(stat.mtimeMs) < Date.now() - RACY_MS;
    memo = settled ? { path, identity: identityOf(stat), config } : undefined;
    return config;
  } finally {
    closeSync(fd);
  }
}

const identityOf = (stat: BigIntStats): string => `${stat.dev}:${stat.ino}:${stat.size}:${stat.mtimeNs}:${stat.ctimeNs}`;

/** Spec §2 rule 1: env TURNKEEPER=off, or a file named `off` in TURNKEEPER_HOME. */
export const isTurnedOff = (env: Env): boolean => env.TURNKEEPER === 'off' || existsSync(join(turnkeeperHome(env), OFF_FILE));

/**
 * The writer's half, for the editor. `enabled=false` is the file `off`; onConflict and the lease TTL
 * go into config.json, keeping every other key (the `store` selection, keys of a newer Turnkeeper).
 * Nothing is created while everything is at its default and TURNKEEPER_HOME does not exist yet, so a
 * window that never used Turnkeeper leaves no trace. Returns whether a file changed.
 */
export function writeHookSettings(env: Env, wanted: { readonly enabled: boolean; readonly onConflict: OnConflict; readonly leaseTtlSeconds: number }): boolean {
  const home = turnkeeperHome(env);
  let changed = false;
  const off = join(home, OFF_FILE);
  if (wanted.enabled && existsSync(off)) {
    rmSync(off, { force: true });
    changed = true;
  } else if (!wanted.enabled && !existsSync(off)) {
    ensurePrivateHome(env);
    writeFileSync(off, 'Turnkeeper is turned off by the VS Code setting turnkeeper.enabled\n', { mode: 0o600 });
    changed = true;
  }
  const path = homeConfigPath(env);
  const current = readCurrent(path);
  if (current !== undefined && current.raw === undefined) {
    // Hand-written and broken (it may hold a `store` selection): say so rather than replace it.
    throw new Error(`${path} is not valid JSON: fix or remove it; Turnkeeper did not overwrite it`);
  }
  const raw = current?.raw;
  const kept = typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? (raw as Record<string, unknown>) : {};
  const ttl = leaseTtlFrom(wanted.leaseTtlSeconds) ?? LEASE_TTL_SECONDS.default;
  const next = { ...kept, onConflict: wanted.onConflict, leaseTtlSeconds: ttl };
  const atDefaults = wanted.onConflict === HOME_CONFIG_DEFAULTS.onConflict && ttl === HOME_CONFIG_DEFAULTS.leaseTtlSeconds;
  if (current === undefined && atDefaults && !existsSync(home)) return changed;
  const text = `${JSON.stringify(next, null, 2)}\n`;
  if (current?.text === text) return changed;
  ensurePrivateHome(env);
  // Hooks read this file at any moment: replaced whole (temporary file, fsync, rename). It may name a
  // team store with its credentials, so it is the owner's alone: a new file is 0600, and an existing
  // one keeps its mode without the group and other bits.
  memo = undefined;
  writeFileAtomic(path, text, current === undefined ? 0o600 : current.mode & 0o700);
  return true;
}

/** config.json as it is now: its text, its JSON (undefined when not JSON) and its mode; undefined when missing. */
function readCurrent(path: string): { readonly text: string; readonly raw: unknown; readonly mode: number } | undefined {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    const mode = fstatSync(fd).mode & 0o7777;
    const text = readFileSync(fd, 'utf8');
    let raw: unknown;
    try {
      raw = JSON.parse(text) as unknown;
    } catch {
      raw = undefined;
    }
    return { text, raw, mode };
  } finally {
    closeSync(fd);
  }
}
