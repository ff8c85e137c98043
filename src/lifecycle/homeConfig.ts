// The settings that live in $TURNKEEPER_HOME: `config.json` and the file `off`. Hooks run in other
// processes and read only these (spec §2 rule 1, "Renewal", "Output"; spec §4 "Selection"); the VS
// Code extension writes them from its machine-scoped settings. This module owns their schema, their
// defaults and their limits, for the reader (src/lifecycle/settings.ts, src/lifecycle/open.ts) and the
// writer (src/extension/ctx.ts) alike; package.json's `contributes.configuration` repeats the same
// numbers for the settings editor, and test/unit/home-config.test.ts holds the two together.
import { closeSync, existsSync, fstatSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as z from 'zod/mini';
import { DEFAULT_LEASE_TTL_SECONDS, RENEWAL_INTERVAL_MS } from '../core/lease';
import { turnkeeperHome, type Env } from '../store/location';
import { writeFileAtomic } from '../agents/install';

export const HOME_CONFIG_FILE = 'config.json';
export const OFF_FILE = 'off';

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
}

const fields = {
  onConflict: z.enum(ON_CONFLICT_VALUES),
  // A number in the file (a string is not accepted there, unlike the environment variable).
  leaseTtlSeconds: z.number(),
  store: z.string().check(z.trim(), z.minLength(1)),
};

export function parseHomeConfig(value: unknown): HomeConfig {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return {};
  const record = value as Record<string, unknown>;
  const out: { onConflict?: OnConflict; leaseTtlSeconds?: number; store?: string } = {};
  const onConflict = fields.onConflict.safeParse(record.onConflict);
  if (onConflict.success) out.onConflict = onConflict.data;
  const ttl = fields.leaseTtlSeconds.safeParse(record.leaseTtlSeconds);
  const seconds = ttl.success ? leaseTtlFrom(ttl.data) : undefined;
  if (seconds !== undefined) out.leaseTtlSeconds = seconds;
  const store = fields.store.safeParse(record.store);
  if (store.success) out.store = store.data;
  return out;
}

export const homeConfigPath = (env: Env): string => join(turnkeeperHome(env), HOME_CONFIG_FILE);

/** config.json as parsed JSON, or undefined when it is missing or not JSON. */
function readRaw(env: Env): unknown {
  try {
    return JSON.parse(readFileSync(homeConfigPath(env), 'utf8')) as unknown;
  } catch {
    return undefined;
  }
}

/** The validated config.json; a missing or unreadable file is `{}` (every default applies). */
export function readHomeConfig(env: Env): HomeConfig {
  return parseHomeConfig(readRaw(env));
}

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
    mkdirSync(home, { recursive: true, mode: 0o700 });
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
  mkdirSync(home, { recursive: true, mode: 0o700 });
  // Hooks read this file at any moment: replaced whole (temporary file, fsync, rename). It may name a
  // team store with its credentials, so it is the owner's alone: a new file is 0600, and an existing
  // one keeps its mode without the group and other bits.
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
