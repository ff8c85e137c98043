// The one place that opens a store (spec §4 "Selection"). The hook, the CLI and the extension ask for
// an `Authority`; which authority that is (SQLite file or a team server) is decided here, from env
// `TURNKEEPER_STORE`, then `store` in `$TURNKEEPER_HOME/config.json`, then the machine-scoped editor
// setting, then the per-user SQLite file. One authority, no fallback: a selected store that cannot be
// used is an error, never a quiet switch to another one. A lint rule keeps src/store/sqlite out of
// every other import.
//
// The editor setting reaches this module by one channel only: the environment variable
// `TURNKEEPER_STORE_SETTING`, which the extension sets in its own environment and in the environment
// of everything it runs (the CLI, a started or resumed agent, whose hooks therefore select the same
// store as the window). There is no parameter for it: a second channel would let the extension and
// the agents it launches disagree.
import type BetterSqlite3 from 'better-sqlite3';
import { StoreUnavailableError, type Authority } from '../store/authority';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { ensurePrivateHome, foreignHomeProblem, storeFileProblem, storePath, turnkeeperHome, type Env } from '../store/location';
import { asStoreError, openSqliteRows, type OpenOptions, type SqliteRows } from '../store/sqlite';
import { DEADLINE_RESERVE_MS, loadPg, openPostgresRows, redactedLocation, type PostgresRows } from '../store/postgres';
import { CONNECTIONS_PER_HOME, takeConnectionSlot } from '../store/connectionSlots';
import { Ledger } from './ledger';
import { resolveGoal } from '../checkout/goal';
import { readHomeConfig } from '../config/homeConfig';
import { Checkpoints } from './checkpoints';

export interface AuthorityOptions {
  /** Create the store when it does not exist (a claim, `todo add`); otherwise a missing store is `undefined`. */
  readonly create: boolean;
  /** How long a write waits for the store's lock before `StoreUnavailableError`. */
  readonly busyTimeoutMs?: number;
  /**
   * When everything done with a team store must be over (a performance.now() time): a hook's own
   * deadline. Waits for a connection slot end early enough to leave the work time, and a write's bound
   * never runs past it.
   */
  readonly deadline?: number;
}

/** What a person may see of the selected store: the SQLite path, or `team: host:port/db` (never credentials). */
export function describeSelection(selection: StoreSelection): string {
  return selection.kind === 'sqlite' ? selection.path : `team: ${redactedLocation(selection.url)}`;
}

export type StoreSelection =
  | { readonly kind: 'sqlite'; readonly path: string; readonly from: 'TURNKEEPER_STORE' | 'config.json' | 'setting' | 'TURNKEEPER_DB' | 'default' }
  | { readonly kind: 'postgres'; readonly url: string; readonly from: 'TURNKEEPER_STORE' | 'config.json' | 'setting' };

/** Which store this environment selects (no I/O beyond reading config.json). */
export function selectStore(env: Env): StoreSelection {
  const fromEnv = env.TURNKEEPER_STORE?.trim();
  if (fromEnv) return parseSelection(env, fromEnv, 'TURNKEEPER_STORE');
  const fromConfig = configuredStore(env);
  if (fromConfig) return parseSelection(env, fromConfig, 'config.json');
  const setting = env.TURNKEEPER_STORE_SETTING?.trim();
  if (setting) return parseSelection(env, setting, 'setting');
  return { kind: 'sqlite', path: storePath(env), from: env.TURNKEEPER_DB ? 'TURNKEEPER_DB' : 'default' };
}

function parseSelection(env: Env, value: string, from: 'TURNKEEPER_STORE' | 'config.json' | 'setting'): StoreSelection {
  if (/^postgres(ql)?:\/\//i.test(value)) return { kind: 'postgres', url: value, from };
  // A relative path is under TURNKEEPER_HOME, never the working directory of whoever runs (a hook runs
  // in the agent's checkout; spec §10).
  if (value.startsWith('sqlite:')) return { kind: 'sqlite', path: resolve(turnkeeperHome(env), value.slice('sqlite:'.length)), from };
  // A bare path in the editor setting (the older `turnkeeper.storePath`) names a SQLite file.
  if (from === 'setting' && value.startsWith('/')) return { kind: 'sqlite', path: value, from };
  throw new StoreUnavailableError(`${from} names a store Turnkeeper does not know: use postgres://… or sqlite:<path>`);
}

/** `store` in $TURNKEEPER_HOME/config.json, read through its one schema (./homeConfig.ts). */
function configuredStore(env: Env): string | undefined {
  return readHomeConfig(env).store;
}

/** Opens the selected authority; `undefined` when it does not exist and `create` is false. */
export async function openAuthority(env: Env, options: AuthorityOptions): Promise<Authority | undefined> {
  const selection = trustedSelection(env);
  // A write may create files in TURNKEEPER_HOME (the database, its anchor, the witness, keys): the
  // folder is made private first, even when another writer created it 0755.
  if (options.create) secureHome(env);
  if (selection.kind === 'postgres') {
    // One authority, no fallback: an unreachable team store is StoreUnavailableError, never SQLite.
    // Bounded for hooks (spec §4, docs/team.md "Bounds"): a server that does not answer (no TCP
    // handshake) fails the connect within 2 s; one that answers gets 4 s for TLS and authentication (a hook: as long as it keeps answering, see connectClient)
    // (a burst's SCRAM exchanges queue on the server or the pooler); a live server that says it is busy
    // (connection slots full) is asked again for up to 10 s more, never past 1.5 s before a hook's own
    // deadline, so a burst queues (and a write's BEGIN may wait 4 s for a pooled server connection). A read outside a write gets the busy timeout too: behind a pooler it waits in the
    // pooler's queue for a server connection, which a burst fills. One write transaction, its
    // waits for row locks and its retries included, gets the busy timeout (4 s by default, as a
    // SQLite writer waits for the file's lock), enforced by the server itself (statement_timeout): a
    // claim that waits its turn behind others is the server's queue, not a stall. What is left of the
    // 15 s hook timeout Turnkeeper installs covers start-up and one reconnect after a lost COMMIT.
    // A hook (it has a deadline) first takes one of its home's few team-connection slots (connectionSlots.ts).
    // The driver is loaded before the wait: tens of milliseconds of CPU on a busy host that a hook
    // holding a slot would otherwise spend while the hooks queued behind it wait.
    if (options.deadline !== undefined) loadPg();
    const slot =
      options.deadline === undefined ? undefined : await takeConnectionSlot(turnkeeperHome(env), CONNECTIONS_PER_HOME, options.deadline - DEADLINE_RESERVE_MS);
    try {
      const rows = await openPostgresRows(postgresBounds(selection.url, options));
      if (slot) rows.whenClosed(() => slot.release());
      return new Ledger(rows, new Checkpoints(rows, env));
    } catch (error) {
      slot?.release();
      throw error;
    }
  }
  return openSqliteAuthority({ path: selection.path, create: options.create, busyTimeoutMs: options.busyTimeoutMs, checkpoints: env });
}

/** A team-store connection's bounds (the comment above says why); a hook's, with busyTimeoutMs set, are the tighter ones. */
function postgresBounds(url: string, options: AuthorityOptions): Parameters<typeof openPostgresRows>[0] {
  const hook = options.busyTimeoutMs !== undefined;
  return {
    url,
    answerTimeoutMs: 2000,
    connectTimeoutMs: 4000,
    connectQueueMs: 10_000,
    deadline: options.deadline,
    statementTimeoutMs: hook ? Math.max(options.busyTimeoutMs, 1) : 3000,
    transactionTimeoutMs: hook ? Math.max(options.busyTimeoutMs, 1) : 6000,
  };
}

/**
 * The stores of a process that serves many hooks (the warm hook server, src/cli/hookServer.ts). A team
 * store's rows stay open across requests: its connection (TLS, SCRAM) is most of a team-store hook, and
 * a hook then makes no new server connection. Rows that no longer speak for their store (a migration by
 * another release: StorePort.stillCurrent) are closed and opened again, which says what is wrong as a
 * fresh open would. A SQLite store is opened afresh for each request, as the cold hook opens it: its
 * open checks what a held connection would not see again (a -wal file another database left, a log
 * written around the anchor: test/integration/chain-damage.test.ts), and costs about a millisecond
 * once the driver is loaded. Every request goes through the whole selection (trustedSelection: the
 * home's and the database's ownership, config.json) and gets its own Ledger and Checkpoints, built
 * from its own environment (the witness, signing). The caller runs one request per store at a time
 * on kept rows (they are one connection: a read inside another request's open transaction would see
 * its rows) and hands each authority back to `release`.
 *
 * A kept connection authenticated once, when it opened. It serves requests for KEPT_CONNECTION_MS at
 * most and is then opened afresh, so a role revoked (NOLOGIN, a new password, a pg_hba line) stops
 * the warm path within that time as it stops a cold hook at once.
 */
/** How long the warm hook server's kept team-store connection serves requests before it authenticates again. */
export const KEPT_CONNECTION_MS = 60_000;

export class StoreCache {
  private readonly open = new Map<string, PostgresRows>();
  private readonly openedAt = new Map<string, number>();
  private readonly maxAgeMs: number;

  constructor(env: Env = process.env) {
    // Test-only, and only shorter (like TURNKEEPER_TEST_FAULT, fixed when the process starts).
    const test = Number(env.TURNKEEPER_TEST_KEPT_CONNECTION_MS);
    this.maxAgeMs = Number.isFinite(test) && test > 0 ? Math.min(test, KEPT_CONNECTION_MS) : KEPT_CONNECTION_MS;
  }

  /** The key of the kept rows a request of this environment shares (the store, the bounds they were opened with); undefined for one that opens its own. */
  keyOf(env: Env, options: AuthorityOptions): string | undefined {
    const selection = selectStore(env);
    return selection.kind === 'sqlite' ? undefined : JSON.stringify([selection.url, options.busyTimeoutMs ?? null]);
  }

  async authority(env: Env, options: AuthorityOptions): Promise<Authority | undefined> {
    const selection = trustedSelection(env);
    if (options.create) secureHome(env);
    if (selection.kind === 'sqlite') {
      const authority = await openSqliteAuthority({ path: selection.path, create: options.create, busyTimeoutMs: options.busyTimeoutMs, checkpoints: env });
      // This request's deadline: no write of it commits after it (these rows are its alone).
      (authority?.rows as SqliteRows | undefined)?.serveUntil(options.deadline);
      return authority;
    }
    const key = JSON.stringify([selection.url, options.busyTimeoutMs ?? null]);
    let rows = this.open.get(key);
    if (rows !== undefined && (performance.now() - this.openedAt.get(key)! >= this.maxAgeMs || !(await rows.stillCurrent()))) {
      this.evict(key);
      rows = undefined;
    }
    if (rows === undefined) {
      rows = await openPostgresRows(postgresBounds(selection.url, options));
      this.open.set(key, rows);
      this.openedAt.set(key, performance.now());
    }
    // This request's deadline: no write of it commits after it (cleared by `release`).
    rows.serveUntil(options.deadline);
    return new Ledger(rows, new Checkpoints(rows, env));
  }

  /** The end of a request's use of an authority: a kept team store stays open, anything else is closed. */
  release(authority: Authority): void {
    const kept = authority instanceof Ledger ? [...this.open.values()].find((rows) => rows === authority.rows) : undefined;
    if (kept) return kept.serveUntil(undefined);
    authority.close();
  }

  /** Closes one store's rows (after a request that found them broken); the next request opens them again. */
  evict(key: string): void {
    const rows = this.open.get(key);
    this.open.delete(key);
    this.openedAt.delete(key);
    try {
      rows?.close();
    } catch {
      // Closing a broken connection may fail too; it is dropped either way.
    }
  }

  closeAll(): void {
    for (const key of [...this.open.keys()]) this.evict(key);
  }
}

/**
 * selectStore, after the home (before its config.json is read: a home another user owns or may write
 * chooses nothing for this one) and the selected SQLite files (another user's database is their
 * authority) are found to be this user's alone (src/store/location.ts).
 */
function trustedSelection(env: Env): StoreSelection {
  const foreign = foreignHomeProblem(env);
  if (foreign) throw new StoreUnavailableError(foreign);
  const selection = selectStore(env);
  const database = selection.kind === 'sqlite' ? storeFileProblem(selection.path) : undefined;
  if (database) throw new StoreUnavailableError(database);
  return selection;
}

function secureHome(env: Env): void {
  try {
    ensurePrivateHome(env);
  } catch (error) {
    throw asStoreError(error);
  }
}

export interface StoreInitReport {
  readonly store: string;
  readonly kind: 'sqlite' | 'postgres';
  readonly schemaVersion: number;
  readonly created: readonly string[];
}

/**
 * `turnkeeper store init`: creates (or migrates) the selected store's schema and says what it did. For
 * a team server, optionally grants a hook role what hooks need (rows, and receipts append-only).
 */
export async function initializeStore(
  env: Env,
  options: { readonly hookRole?: string | undefined } = {},
): Promise<StoreInitReport & { readonly unchanged: readonly string[]; readonly revoked: readonly string[] }> {
  const selection = trustedSelection(env);
  if (selection.kind === 'sqlite') {
    const existed = existsSync(selection.path);
    const authority = (await openSqliteAuthority({ path: selection.path, create: true }))!;
    const version = (await authority.health()).schemaVersion;
    authority.close();
    return {
      store: selection.path,
      kind: 'sqlite',
      schemaVersion: version,
      created: existed ? [] : [`SQLite database ${selection.path} (schema ${version})`],
      unchanged: [],
      revoked: [],
    };
  }
  const before = await openPostgresRows({ url: selection.url, initialize: false }).then(
    (store) => (store.close(), true),
    () => false,
  );
  const rows = await openPostgresRows({ url: selection.url, initialize: true, statementTimeoutMs: 30_000 });
  const created = before ? [] : ['schema turnkeeper: tables, unique indexes, the receipt head row, the append-only and NOTIFY triggers'];
  const unchanged: string[] = [];
  const revoked: string[] = [];
  try {
    if (options.hookRole) {
      // The role's privileges read before and after the GRANTs: only what was not in place is
      // "created", and a second run says the grants were already there.
      const role = options.hookRole;
      const grants = await import('../store/postgresGrants');
      const had = await grants.privilegesOf(selection.url, role);
      await rows.grantHookRole(role);
      const { added, removed } = grants.privilegeChanges(had, await grants.privilegesOf(selection.url, role));
      if (added.length > 0) created.push(`grants for role ${role}: ${grants.describePrivileges(added)}`);
      if (removed.length > 0) revoked.push(`from role ${role}: ${grants.describePrivileges(removed)}`);
      if (had.length > removed.length)
        unchanged.push(
          added.length + removed.length === 0 ? `grants for role ${role} were already granted` : `the other grants for role ${role} were already granted`,
        );
    }
    return { store: `team: ${rows.location}`, kind: 'postgres', schemaVersion: Number(await rows.getMeta('schema_version')), created, unchanged, revoked };
  } finally {
    rows.close();
  }
}

/** A SQLite authority with its connection in reach: for tests, benchmarks and tamper tools. */
export type SqliteAuthority = Ledger & { readonly connection: BetterSqlite3.Database; readonly path: string };

/** `checkpoints`: the environment whose key and witness sign and check the chain (the factory's stores; tests' bare stores have none). */
export async function openSqliteAuthority(options: OpenOptions & { readonly checkpoints?: Env }): Promise<SqliteAuthority | undefined> {
  const rows = await openSqliteRows(options);
  if (!rows) return undefined;
  const ledger = Object.assign(new Ledger(rows, options.checkpoints ? new Checkpoints(rows, options.checkpoints) : undefined), {
    connection: rows.connection,
    path: rows.path,
  });
  await adoptLegacyGoals(ledger);
  return ledger;
}

/**
 * A store of the previous release names its Goals by checkout path; the first process that opens it
 * after the upgrade maps them to Goal ids (one read of store_meta on every other open).
 */
async function adoptLegacyGoals(ledger: Ledger): Promise<void> {
  try {
    await ledger.adoptLegacyGoals((path) => {
      try {
        const goal = resolveGoal(path);
        return { id: goal.id, key: goal.key, displayName: goal.displayName };
      } catch {
        return undefined; // gone or unreadable: its local key (the ledger's default)
      }
    }, Date.now());
  } catch (error) {
    ledger.close();
    throw error;
  }
}
