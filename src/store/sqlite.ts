// The SQLite authority's rows (spec §4): better-sqlite3 13 (Node-API), WAL, synchronous=FULL,
// busy_timeout, every write in BEGIN IMMEDIATE. This file implements the row port (port.ts) and
// nothing else: no claim policy, no receipt chaining (src/ledger/ledger.ts does both for every
// authority). Statements are prepared once per connection and cached.
import { closeSync, constants, existsSync, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { ZERO_DIGEST } from '../core/canonical';
import { checkAnchor, STORE_WIDE_KINDS, walkChain, type ChainLink, type ChainReport, type StoredReceiptRow } from '../core/receipts';
import type { Lease } from '../core/lease';
import type { Owner } from '../core/ids';
import { appendedNodes, leafHash, type TreeKey } from '../core/merkle';
import { MIGRATIONS, SCHEMA_VERSION, TREE_MIGRATION } from './schema';
import {
  CAPTURE_COLUMNS,
  captureValues,
  LEASE_COLUMNS,
  LEASE_COLUMNS_OF_L,
  leaseValues,
  TODO_COLUMNS,
  todoValues,
  toCapture,
  toLease,
  sessionTurnParams,
  toSession,
  toTodo,
  type CaptureRowRaw,
  type LeaseRowRaw,
  type SessionRowRaw,
  type TodoRowRaw,
} from './rows';
import { faultPoint } from './faults';
import { advanceAnchor, anchorPath, readAnchor, readWalSalts, walHasCommit } from './anchor';
import {
  SchemaTooNewError,
  StoreUnavailableError,
  type ReceiptPage,
  type ReceiptRow,
  type SessionRecord,
  type SessionTouch,
  type StoreHealth,
  type StoredCapture,
  type StoredReady,
  type Todo,
  type TodoDependency,
  type TodoStatus,
} from './authority';
import { appendPreparedNow, type ClaimOfTurn, type GoalRecord, type ReceiptInsert, type StorePort, type StoreTx } from './port';

/**
 * One Goal's newest receipts below `@before` (at most `@limit`): the Goal's by receipt_index_by_goal,
 * the store-wide ones (core/receipts.ts isStoreWide: Goal '' or '-', a store-wide kind) by the same
 * index and receipt_index_by_kind, and receipts past the index's last row (appended without one: kept
 * visible). Each member walks its index backwards to its LIMIT: a page costs the page, not the chain.
 */
const ONE_GOAL_PAGE = `SELECT seq, doc, hash FROM receipts WHERE seq IN (
  ${['goal = @goal', "goal = ''", "goal = '-'", ...STORE_WIDE_KINDS.map((kind) => `kind = '${kind}'`)]
    .map((where) => `SELECT seq FROM (SELECT seq FROM receipt_index WHERE ${where} AND seq < @before ORDER BY seq DESC LIMIT @limit)`)
    .join('\n  UNION ')}
  UNION SELECT seq FROM receipts WHERE seq > (SELECT COALESCE(MAX(seq), 0) FROM receipt_index) AND seq < @before
) ORDER BY seq DESC LIMIT @limit`;

export interface OpenOptions {
  readonly path: string;
  /** When false and the file does not exist, nothing is created and `openSqliteRows` returns undefined. */
  readonly create: boolean;
  readonly busyTimeoutMs?: number;
}

/**
 * Rows per page of the chain walk. Small on purpose: each page is alive across the young generation's
 * collections, so its size sets how far V8 grows the heap (10,000 rows: 225 MB peak RSS at 1M
 * receipts; 500: about 115 MB, the live heap under 10 MB at any length: bench rows B3).
 */
const VERIFY_PAGE = 500;
/**
 * SQLite's built-in busy handler backs off to 100 ms sleeps, so under contention (64 hooks at once on
 * two cores) a waiter keeps missing the moments the lock is free and starves past its deadline. We let
 * SQLite wait only this long per attempt and retry with short random sleeps until our own deadline.
 */
const SQLITE_BUSY_SLICE_MS = 20;
/** How long doctor's write-lock probe waits (StoreHealth.writeLock). */
const WRITE_LOCK_PROBE_MS = 1000;
const sleepBuffer = new Int32Array(new SharedArrayBuffer(4));
const sleepSync = (ms: number): void => void Atomics.wait(sleepBuffer, 0, 0, ms);

function withBusyRetry<T>(work: () => T, timeoutMs: number): T {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return work();
    } catch (error) {
      const busy = (error as { code?: string }).code === 'SQLITE_BUSY';
      if (!busy || Date.now() >= deadline) throw error;
      sleepSync(1 + Math.random() * 4);
    }
  }
}
/** SQLite result codes that mean "cannot use the store now", as opposed to a bug. */
const UNAVAILABLE_CODES = /^SQLITE_(BUSY|LOCKED|IOERR|CANTOPEN|CORRUPT|NOTADB|FULL|READONLY|PERM|PROTOCOL)/;

let DatabaseClass: typeof BetterSqlite3 | undefined;
function loadDriver(): typeof BetterSqlite3 {
  // Loaded on first open so that `TURNKEEPER=off` and invalid input never touch the native module.
  // require, not import(): better-sqlite3 is CommonJS, and import() of it goes through the ESM loader
  // (package resolution, a module wrapper), about 2 ms of every hook (bench row 1).
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  DatabaseClass ??= require('better-sqlite3') as typeof BetterSqlite3;
  return DatabaseClass;
}

/** Opens (or, with `create`, creates) the SQLite store. Only src/ledger/open.ts calls this. */
// async although nothing here waits: its callers get a rejection, never a synchronous throw.
// eslint-disable-next-line @typescript-eslint/require-await
export async function openSqliteRows(options: OpenOptions): Promise<SqliteRows | undefined> {
  if (!options.create && !existsSync(options.path)) return undefined;
  const Database = loadDriver();
  try {
    if (options.create) {
      mkdirSync(dirname(options.path), { recursive: true, mode: 0o700 });
      createPrivately(options.path);
    }
    refuseForeignWal(Database, options.path);
    // SQLite's own busy handler only covers short waits; `write` retries BEGIN IMMEDIATE itself.
    const db = new Database(options.path, { fileMustExist: !options.create, timeout: SQLITE_BUSY_SLICE_MS });
    let meta: Map<string, string>;
    try {
      // The write settings (WAL, synchronous=FULL, foreign keys) are applied before the first write
      // (SqliteRows.writeMode), not here: a replay only reads, and each pragma costs its own statement.
      if ((db.pragma('user_version', { simple: true }) as number) !== SCHEMA_VERSION) {
        applyWriteMode(db);
        migrate(db, options.busyTimeoutMs ?? 5000);
      }
      meta = new Map(
        (db.prepare("SELECT key, value FROM store_meta WHERE key IN ('store_id', 'legacy_goals')").all() as { key: string; value: string }[]).map((row) => [
          row.key,
          row.value,
        ]),
      );
    } catch (error) {
      db.close();
      throw error;
    }
    const file = statSync(options.path);
    return new SqliteRows(db, options.path, options.busyTimeoutMs ?? 5000, { dev: file.dev, ino: file.ino }, meta);
  } catch (error) {
    throw asStoreError(error);
  }
}

/**
 * Creates the database file 0600 before SQLite opens it, so that it is the owner's alone whatever the
 * umask or the folder's mode, and its -wal and -shm, which SQLite creates with the database file's
 * mode, are too. An existing file is left as it is.
 */
function createPrivately(path: string): void {
  try {
    closeSync(openSync(path, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o600));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

/**
 * SQLite replays whatever `-wal` file lies next to a database, even one left by another database: its
 * pages would silently replace this store's (a Todo vanished, the other chain "verified"). The anchor
 * (src/store/anchor.ts) names the log this store last wrote (its header salts) and the store's write
 * counter then. A log with other salts is accepted only if, seen through a read-only connection (which
 * cannot checkpoint, so a refused log is left unreplayed on disk), it is this store's identity, *newer*
 * than the anchor (a writer killed before it could move the anchor), and the anchored receipt holds.
 * A log generation without a commit frame is a writer in flight: it would replay nothing.
 */
function refuseForeignWal(Database: typeof BetterSqlite3, path: string): void {
  // A writer's commit frame reaches the log (and is fsynced) a moment before readers can see the
  // commit through the WAL index; a log judged in that window looks "not newer". A foreign log stays
  // foreign, so it is judged again for a short while (found by the 64-way race) before the refusal.
  const deadline = Date.now() + FOREIGN_WAL_SETTLE_MS;
  for (;;) {
    const why = foreignWalReason(Database, path);
    if (why === undefined) return;
    if (Date.now() >= deadline) {
      throw new StoreUnavailableError(
        `${path}-wal does not belong to this database: ${why} (anchor ${anchorPath(path)}); it was not replayed. ` +
          "If that log is not this store's, move it aside; see docs/recovery.md#store_unavailable",
      );
    }
    sleepSync(10 + Math.random() * 10);
  }
}

/** How long a log that looks foreign is judged again before the open is refused. */
const FOREIGN_WAL_SETTLE_MS = 750;

/** Why the `-wal` next to `path` is not this store's, or undefined when it is (or nothing would replay). */
function foreignWalReason(Database: typeof BetterSqlite3, path: string): string | undefined {
  const salts = readWalSalts(path);
  if (salts === undefined || !existsSync(path)) return undefined;
  const anchor = readAnchor(path);
  if (anchor === undefined || anchor === 'unreadable') return undefined;
  if (anchor.wal && anchor.wal.salt1 === salts.salt1 && anchor.wal.salt2 === salts.salt2) return undefined;
  if (!walHasCommit(path, salts)) return undefined;
  try {
    const look = new Database(path, { readonly: true, fileMustExist: true, timeout: SQLITE_BUSY_SLICE_MS });
    try {
      const state = anchoredState(look);
      if (state.storeId !== anchor.storeId) return 'it carries another store identity';
      if (state.writes <= anchor.writes) return `it is not newer than the last write this store anchored (write ${anchor.writes})`;
      if (checkAnchor(anchor, state).length > 0) return `it would replace receipt ${anchor.seq}`;
      return undefined;
    } finally {
      look.close();
    }
  } catch (error) {
    if ((error as { code?: string }).code === 'SQLITE_BUSY') return undefined; // a writer is mid-commit: the log is in use, so it is ours
    return `it cannot be read with this database (${(error as Error).message})`;
  }
}

/** What the anchor check reads from a store: its identity, write counter and the stored hash of one receipt. */
function anchoredState(db: BetterSqlite3.Database): { storeId: string | undefined; writes: number; hashAt(seq: number): unknown } {
  const hasMeta = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'store_meta'").get() !== undefined;
  const meta = (key: string) =>
    hasMeta ? (db.prepare('SELECT value FROM store_meta WHERE key = ?').get(key) as { value: string } | undefined)?.value : undefined;
  const hashAt = db.prepare('SELECT hash FROM receipts WHERE seq = ?');
  return { storeId: meta('store_id'), writes: Number(meta('writes') ?? 0), hashAt: (seq) => (hashAt.get(seq) as { hash: unknown } | undefined)?.hash };
}

/** WAL (persistent in the file once set), synchronous=FULL and foreign keys (per connection). */
function applyWriteMode(db: BetterSqlite3.Database): void {
  if ((db.pragma('journal_mode', { simple: true }) as string) !== 'wal') db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
}

function migrate(db: BetterSqlite3.Database, busyTimeoutMs: number): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  if (current > SCHEMA_VERSION) throw new SchemaTooNewError(current, SCHEMA_VERSION);
  if (current === SCHEMA_VERSION) return;
  withBusyRetry(
    () =>
      db
        .transaction(() => {
          // Re-read under the write lock: another process may have migrated while we waited.
          const locked = db.pragma('user_version', { simple: true }) as number;
          if (locked > SCHEMA_VERSION) throw new SchemaTooNewError(locked, SCHEMA_VERSION);
          for (let version = locked; version < SCHEMA_VERSION; version += 1) {
            db.exec(MIGRATIONS[version]!);
            if (version === TREE_MIGRATION) backfillTree(db);
          }
          db.pragma(`user_version = ${SCHEMA_VERSION}`);
        })
        .immediate(),
    busyTimeoutMs,
  );
}

/** The tree rows of receipts stored before schema v3, in seq order (one pass, in the migration's transaction). */
function backfillTree(db: BetterSqlite3.Database): void {
  const insert = db.prepare('INSERT INTO receipt_tree (level, idx, hash) VALUES (?, ?, ?)');
  const page = db.prepare('SELECT seq, doc FROM receipts WHERE seq > ? ORDER BY seq LIMIT ?');
  const edge = new Map<string, Uint8Array>();
  let index = 0;
  // In pages: better-sqlite3 runs no other statement while one iterates.
  for (let after = 0; ;) {
    const rows = page.all(after, VERIFY_PAGE) as { seq: number; doc: string }[];
    for (const row of rows) {
      for (const { key, hash } of appendedNodes(index, leafHash(Buffer.from(row.doc, 'utf8')), ([level, at]) => edge.get(`${level}/${at}`)!)) {
        insert.run(key[0], key[1], hash);
        edge.set(`${key[0]}/${key[1]}`, hash);
      }
      index += 1;
    }
    if (rows.length < VERIFY_PAGE) return;
    after = rows[rows.length - 1]!.seq;
  }
}

/** Stored subtree hashes by key, undefined where a row is missing (one primary-key lookup each). */
function readTree(one: BetterSqlite3.Statement, keys: readonly TreeKey[]): (Uint8Array | undefined)[] {
  return keys.map(([level, index]) => one.get(level, index) as Uint8Array | undefined);
}
const TREE_NODE = 'SELECT hash FROM receipt_tree WHERE level = ? AND idx = ?';

export function asStoreError(error: unknown): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && UNAVAILABLE_CODES.test(code)) {
    return new StoreUnavailableError(`${code}: ${(error as Error).message}`, { cause: error });
  }
  // The store's folder cannot be made or reached (TURNKEEPER_HOME a regular file: EEXIST/ENOTDIR;
  // read-only, full, not ours). Node's message already starts with the code.
  if (typeof code === 'string' && /^E(EXIST|NOTDIR|ACCES|PERM|ROFS|NOSPC|DQUOT|LOOP|NAMETOOLONG|IO)$/.test(code)) {
    return new StoreUnavailableError((error as Error).message, { cause: error });
  }
  return error;
}

export class SqliteRows implements StorePort {
  private readonly statements = new Map<string, BetterSqlite3.Statement>();
  /** Writes of this connection run one at a time: an await inside one must not interleave another. */
  private writeQueue: Promise<unknown> = Promise.resolve();
  /** The deadline of the hook request these rows serve (performance.now() ms): no write commits after it. */
  private commitUntil = Infinity;

  /** Set by the warm hook server for the request it opened these rows for (`StoreCache`). */
  serveUntil(deadline: number | undefined): void {
    this.commitUntil = deadline ?? Infinity;
  }
  private writeModeApplied = false;
  private readonly storeId: string | undefined;

  constructor(
    private readonly db: BetterSqlite3.Database,
    readonly path: string,
    private readonly busyTimeoutMs: number,
    private readonly file: { readonly dev: number; readonly ino: number },
    /** store_meta rows read at open (the identity, the legacy-goal flag): a replay asks for no more. */
    private readonly openedMeta: ReadonlyMap<string, string>,
  ) {
    this.storeId = openedMeta.get('store_id');
  }

  get location(): string {
    return this.path;
  }

  /** Prepared once per connection (better-sqlite3 re-prepares on every `prepare`). */
  private sql(text: string): BetterSqlite3.Statement {
    let statement = this.statements.get(text);
    if (!statement) this.statements.set(text, (statement = this.db.prepare(text)));
    return statement;
  }

  private read<T>(work: () => T): Promise<T> {
    try {
      return Promise.resolve(work());
    } catch (error) {
      return Promise.reject(asStoreError(error));
    }
  }

  write<T>(work: (tx: StoreTx) => Promise<T>): Promise<T> {
    const run = this.writeQueue.then(() => this.writeNow(work));
    this.writeQueue = run.catch(() => undefined);
    return run;
  }

  private async writeNow<T>(work: (tx: StoreTx) => Promise<T>): Promise<T> {
    let pending: { writes: number; seq: number; hash: string } | undefined;
    try {
      this.assertFileInPlace();
      if (!this.writeModeApplied) {
        applyWriteMode(this.db);
        this.writeModeApplied = true;
      }
      withBusyRetry(() => this.db.exec('BEGIN IMMEDIATE'), this.busyTimeoutMs);
      let result: T;
      try {
        result = await work(this.tx);
        if (this.storeId !== undefined) pending = this.countWrite();
        faultPoint('store.before_commit');
        // Past the hook's deadline the agent has gone on without its answer: rolled back, not committed.
        if (performance.now() >= this.commitUntil)
          throw new StoreUnavailableError(`${this.path}: the hook's deadline passed before its write could commit; nothing was written`);
        this.db.exec('COMMIT');
      } catch (error) {
        if (this.db.inTransaction) this.db.exec('ROLLBACK');
        throw error;
      }
      // After the commit, never inside it: an anchor must only ever name what was committed.
      faultPoint('store.after_commit');
      if (pending && this.storeId) advanceAnchor(this.path, { storeId: this.storeId, ...pending, wal: readWalSalts(this.path) ?? null });
      return result;
    } catch (error) {
      throw asStoreError(error);
    }
  }

  /**
   * SQLite keeps writing to a database file that was deleted or replaced while open, and those
   * writes are lost for every other process: refuse them instead (a receipt there is no receipt).
   */
  stillCurrent(): Promise<boolean> {
    try {
      this.assertFileInPlace();
      return Promise.resolve((this.db.pragma('user_version', { simple: true }) as number) === SCHEMA_VERSION);
    } catch {
      return Promise.resolve(false);
    }
  }

  private assertFileInPlace(): void {
    let now;
    try {
      now = statSync(this.path);
    } catch {
      throw new StoreUnavailableError(`the database file ${this.path} was removed while in use`);
    }
    if (now.dev !== this.file.dev || now.ino !== this.file.ino) throw new StoreUnavailableError(`the database file ${this.path} was replaced while in use`);
  }

  /** Advances the store's write counter (inside the transaction) and reads the head the anchor will name. */
  private countWrite(): { writes: number; seq: number; hash: string } {
    const writes = Number(
      (this.sql("UPDATE store_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'writes' RETURNING value").get() as { value: unknown }).value,
    );
    const head = this.headSync();
    return { writes, seq: head?.seq ?? 0, hash: head?.hash ?? ZERO_DIGEST };
  }

  private headSync(): ChainLink | undefined {
    return this.sql('SELECT seq, hash FROM receipt_head WHERE id = 1').get() as ChainLink | undefined;
  }

  private todoSync(goal: string, id: string): Todo | undefined {
    const row = this.sql('SELECT * FROM todos WHERE goal = ? AND id = ?').get(goal, id) as TodoRowRaw | undefined;
    return row && toTodo(row);
  }
  private leaseWhere(where: string, ...params: unknown[]): Lease | undefined {
    const row = this.sql(`SELECT ${LEASE_COLUMNS} FROM leases WHERE ${where}`).get(...params) as LeaseRowRaw | undefined;
    return row && toLease(row);
  }
  private readReadySync(capture: string): StoredReady | undefined {
    const row = this.sql('SELECT capture, doc, presentation, ready_digest FROM ready_captures WHERE capture = ?').get(capture) as
      { capture: string; doc: string; presentation: string; ready_digest: string } | undefined;
    return row && { capture: row.capture, canonical: row.doc, presentation: row.presentation, readyDigest: row.ready_digest };
  }

  /** The row operations of an open write transaction (SQLite's are synchronous underneath). */
  /* eslint-disable @typescript-eslint/require-await -- the port is asynchronous and SQLite answers at
     once: `async` is what turns a synchronous throw into the rejection the port promises. */
  private readonly tx: StoreTx = {
    clock: async (clientNow) => clientNow,
    todo: async (goal, id) => this.todoSync(goal, id),
    insertTodo: async (todo) => {
      this.sql(`INSERT INTO todos (${TODO_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)`).run(todoValues(todo));
    },
    setTodoStatus: async (goal, id, status: TodoStatus, now, blockReason) => {
      this.sql('UPDATE todos SET status = ?, updated_at = ?, block_reason = ? WHERE goal = ? AND id = ?').run(
        status,
        now,
        status === 'blocked' ? (blockReason ?? null) : null,
        goal,
        id,
      );
    },
    dependenciesOf: async (goal, todos) => this.dependenciesSync(goal, todos),
    insertDependencies: async (goal, todo, dependencies, now) => {
      const insert = this.sql('INSERT INTO todo_deps (goal, todo, dependency, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING');
      for (const dependency of dependencies) insert.run(goal, todo, dependency, now);
    },
    deleteDependencies: async (goal, todo, dependencies) => {
      const remove = this.sql('DELETE FROM todo_deps WHERE goal = ? AND todo = ? AND dependency = ?');
      for (const dependency of dependencies) remove.run(goal, todo, dependency);
    },
    activeLeaseOfTodo: async (goal, todo) => this.leaseWhere("goal = ? AND todo = ? AND status = 'active'", goal, todo),
    activeLeaseOfOwner: async (owner) => this.leaseWhere("owner = ? AND status = 'active'", owner),
    leaseOfCapture: async (capture) => this.leaseWhere('capture = ?', capture),
    lastEpoch: async (goal, todo) =>
      (this.sql('SELECT MAX(epoch) AS epoch FROM leases WHERE goal = ? AND todo = ?').get(goal, todo) as { epoch: number | null }).epoch ?? 0,
    insertLease: async (lease) => {
      this.sql(`INSERT INTO leases (${LEASE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(leaseValues(lease));
    },
    updateLease: async (planned, next, release) => {
      const changed = this.sql(
        `UPDATE leases SET version = ?, status = ?, renewed_at = ?, expires_at = ?, released_at = COALESCE(?, released_at), release_reason = COALESCE(?, release_reason)
         WHERE goal = ? AND todo = ? AND epoch = ? AND version = ? AND status = 'active'`,
      ).run(
        next.version,
        next.status,
        next.renewedAt,
        next.expiresAt,
        release?.at ?? null,
        release?.reason ?? null,
        planned.goal,
        planned.todo,
        planned.epoch,
        planned.version,
      ).changes;
      return changed === 1;
    },
    claimOfTurn: async (turn) =>
      this.sql(
        `SELECT c.id AS capture, l.epoch AS epoch, l.status AS status FROM captures c JOIN leases l ON l.capture = c.id
         WHERE c.goal = ? AND c.todo = ? AND c.agent = ? AND c.session = ? AND c.turn = ?
         ORDER BY l.status = 'active' DESC, l.epoch DESC LIMIT 1`,
      ).get(turn.goal, turn.todo, turn.agent, turn.session, turn.turn) as ClaimOfTurn | undefined,
    claimState: async (turn, owner, place) => ({
      // The write transaction (BEGIN IMMEDIATE) excludes every other writer: no row lock to take.
      placeGoal: place === undefined ? undefined : await this.tx.goalOfPlace(place),
      todo: this.todoSync(turn.goal, turn.todo),
      active: await this.tx.activeLeaseOfTodo(turn.goal, turn.todo),
      lastEpoch: await this.tx.lastEpoch(turn.goal, turn.todo),
      recorded: await this.tx.claimOfTurn(turn),
      ownerHolds: await this.tx.activeLeaseOfOwner(owner),
      activeCheckout: await (async () => {
        const active = await this.tx.activeLeaseOfTodo(turn.goal, turn.todo);
        return active && (await this.tx.checkoutOfCapture(active.capture));
      })(),
    }),
    insertCapture: async (c: StoredCapture) => {
      this.sql(`INSERT INTO captures (${CAPTURE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(captureValues(c));
    },
    insertReady: async (ready) => {
      this.sql('INSERT INTO ready_captures (capture, doc, presentation, ready_digest) VALUES (?, ?, ?, ?)').run(
        ready.capture,
        ready.canonical,
        ready.presentation,
        ready.readyDigest,
      );
    },
    readReady: async (capture) => this.readReadySync(capture),
    upsertSession: async (record: SessionTouch, now) => {
      const turn = sessionTurnParams(record);
      // The state's time moves only when the state changes; a turn base is written when given (null clears it).
      this.sql(
        `INSERT INTO sessions (owner, agent, session, goal, cwd, transcript_path, first_hook_at, last_hook_at, state, state_at, turn_id, turn_at, turn_head, turn_tree)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (owner) DO UPDATE SET last_hook_at = MAX(last_hook_at, excluded.last_hook_at),
           transcript_path = COALESCE(excluded.transcript_path, transcript_path), cwd = excluded.cwd,
           state_at = CASE WHEN excluded.state IS NULL OR excluded.state IS state THEN state_at ELSE excluded.state_at END,
           state = COALESCE(excluded.state, state),
           turn_id = CASE WHEN ? THEN excluded.turn_id ELSE turn_id END,
           turn_at = CASE WHEN ? THEN excluded.turn_at ELSE turn_at END,
           turn_head = CASE WHEN ? THEN excluded.turn_head ELSE turn_head END,
           turn_tree = CASE WHEN ? THEN excluded.turn_tree ELSE turn_tree END`,
      ).run(
        record.owner,
        record.agent,
        record.session,
        record.goal,
        record.cwd,
        record.transcriptPath,
        now,
        now,
        record.state ?? null,
        record.state === undefined ? null : now,
        ...turn.values,
        ...Array<number>(4).fill(turn.set ? 1 : 0),
      );
    },
    chainHead: async () => this.headSync(),
    // This transaction has excluded every other writer since its BEGIN IMMEDIATE: what it read to decide
    // (an `expect` included) cannot have moved, and the head it appends after is the one at COMMIT.
    appendAtCommit: async (receipts) => (receipts.length === 0 ? undefined : appendPreparedNow(this.tx, receipts)),
    appendReceipt: async (row: ReceiptInsert, previous) => {
      // The head is advanced as a compare-and-set on the head the caller built from.
      const head = this.headSync();
      if ((head?.seq ?? 0) !== (previous?.seq ?? 0) || (head?.hash ?? ZERO_DIGEST) !== (previous?.hash ?? ZERO_DIGEST)) {
        throw new Error(`receipt chain head moved while appending receipt ${row.seq}`);
      }
      this.sql('INSERT INTO receipts (seq, doc, hash) VALUES (?, ?, ?)').run(row.seq, row.doc, row.hash);
      this.sql('INSERT INTO receipt_head (id, seq, hash) VALUES (1, ?, ?) ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash').run(
        row.seq,
        row.hash,
      );
      this.sql('INSERT INTO receipt_index (seq, goal, todo, capture, kind) VALUES (?, ?, ?, ?, ?)').run(row.seq, row.goal, row.todo, row.capture, row.kind);
      // The Merkle tree's new rows, in the same transaction: the leaf and one node per trailing 1-bit.
      const sibling = this.sql(TREE_NODE).pluck();
      const insert = this.sql('INSERT INTO receipt_tree (level, idx, hash) VALUES (?, ?, ?)');
      for (const { key, hash } of appendedNodes(row.seq - 1, leafHash(Buffer.from(row.doc, 'utf8')), ([level, at]) => {
        const left = sibling.get(level, at) as Uint8Array | undefined;
        if (left === undefined) throw new Error(`receipt tree row (${level}, ${at}) is missing: turnkeeper verify`);
        return left;
      }))
        insert.run(key[0], key[1], hash);
    },
    treeHashes: async (keys) => readTree(this.sql(TREE_NODE).pluck(), keys),
    receiptsBetween: async (after, upTo) =>
      this.sql('SELECT seq, doc, hash FROM receipts WHERE seq > ? AND seq <= ? ORDER BY seq').all(after, upTo) as ReceiptRow[],
    recentReceiptsOfTodo: async (goal, todo, limit) =>
      (
        this.sql('SELECT r.doc AS doc FROM receipt_index i JOIN receipts r ON r.seq = i.seq WHERE i.goal = ? AND i.todo = ? ORDER BY i.seq DESC LIMIT ?').all(
          goal,
          todo,
          limit,
        ) as { doc: string }[]
      ).map((row) => row.doc),
    latestLaunchOfCapture: async (capture) =>
      this.sql(
        `SELECT r.seq AS seq, r.doc AS doc FROM receipt_index i JOIN receipts r ON r.seq = i.seq
         WHERE i.capture = ? AND i.kind = 'launch_committed' ORDER BY i.seq DESC LIMIT 1`,
      ).get(capture) as { seq: number; doc: string } | undefined,
    launchReceiptsOfTodo: async (goal, todo, limit) => this.launchReceiptsOfTodoSync(goal, todo, limit),
    goalOfPlace: async (place) => this.placeSync(place),
    checkoutOfCapture: async (capture) =>
      (this.sql('SELECT COALESCE(checkout, cwd) AS checkout FROM captures WHERE id = ?').get(capture) as { checkout: string } | undefined)?.checkout,
    rememberPlace: async (place, goal, checkout, now) => {
      this.sql(
        'INSERT INTO checkouts (place, goal, checkout, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (place) DO UPDATE SET goal = excluded.goal, checkout = excluded.checkout, updated_at = excluded.updated_at',
      ).run(place, goal, checkout, now);
    },
    rememberGoal: async (goal) => {
      this.sql(
        'INSERT INTO goals (id, key, display_name) VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE SET key = excluded.key, display_name = excluded.display_name',
      ).run(goal.id, goal.key, goal.displayName);
    },
    remapGoal: async (from, to) => {
      for (const table of ['todos', 'leases', 'captures', 'sessions', 'checkouts', 'receipt_index'])
        this.sql(`UPDATE ${table} SET goal = ? WHERE goal = ?`).run(to, from);
    },
    renameTodo: async (goal, from, to) => {
      for (const table of ['leases', 'captures', 'receipt_index']) this.sql(`UPDATE ${table} SET todo = ? WHERE goal = ? AND todo = ?`).run(to, goal, from);
      this.sql('UPDATE todos SET id = ? WHERE goal = ? AND id = ?').run(to, goal, from);
    },
    todoIdsOf: async (goal) => (this.sql('SELECT id FROM todos WHERE goal = ?').all(goal) as { id: string }[]).map((row) => row.id),
    goalCounts: async (goal) =>
      this.sql(
        `SELECT (SELECT count(*) FROM todos WHERE goal = ?) AS todos, (SELECT count(*) FROM leases WHERE goal = ?) AS leases,
                (SELECT count(*) FROM captures WHERE goal = ?) AS captures`,
      ).get(goal, goal, goal) as { todos: number; leases: number; captures: number },
    legacyGoals: async () =>
      (
        this.sql(`SELECT goal FROM todos UNION SELECT goal FROM leases UNION SELECT goal FROM captures UNION SELECT goal FROM sessions`).all() as {
          goal: string;
        }[]
      )
        .map((row) => row.goal)
        .filter((goal) => !/^goal_[0-9a-f]{24}$/.test(goal)),
    meta: async (key) => (this.sql('SELECT value FROM store_meta WHERE key = ?').get(key) as { value: string } | undefined)?.value,
    setMeta: async (key, value) => {
      if (value === null) this.sql('DELETE FROM store_meta WHERE key = ?').run(key);
      else this.sql('INSERT INTO store_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(key, value);
    },
  };
  /* eslint-enable @typescript-eslint/require-await */

  private placeSync(place: string): { goal: string; checkout: string } | undefined {
    return this.sql('SELECT goal, checkout FROM checkouts WHERE place = ?').get(place) as { goal: string; checkout: string } | undefined;
  }

  getMeta(key: string): Promise<string | undefined> {
    // Read at open: a replay asks for nothing more. (Adoption re-checks inside its own transaction.)
    if (key === 'legacy_goals' || key === 'store_id') return Promise.resolve(this.openedMeta.get(key));
    return this.read(() => (this.sql('SELECT value FROM store_meta WHERE key = ?').get(key) as { value: string } | undefined)?.value);
  }

  listGoals(): Promise<GoalRecord[]> {
    return this.read(() => this.sql('SELECT id, key, display_name AS displayName FROM goals ORDER BY display_name, id').all() as GoalRecord[]);
  }

  goalOfPlace(place: string): Promise<{ goal: string; checkout: string } | undefined> {
    return this.read(() => this.placeSync(place));
  }

  getTodo(goal: string, id: string): Promise<Todo | undefined> {
    return this.read(() => this.todoSync(goal, id));
  }

  listTodos(goal?: string): Promise<Todo[]> {
    return this.read(() => {
      const rows = (
        goal === undefined
          ? this.sql('SELECT * FROM todos ORDER BY goal, created_at, id').all()
          : this.sql('SELECT * FROM todos WHERE goal = ? ORDER BY created_at, id').all(goal)
      ) as TodoRowRaw[];
      return rows.map(toTodo);
    });
  }

  activeLeaseOfOwner(owner: Owner): Promise<Lease | undefined> {
    return this.read(() => this.leaseWhere("owner = ? AND status = 'active'", owner));
  }

  latestLeaseOfOwner(owner: Owner): Promise<{ lease: Lease; currentEpoch: number } | undefined> {
    return this.read(() => {
      // "Most recent" is the lease whose acquisition came last in the receipt chain: a wall-clock order
      // breaks when the clock is stepped (it fenced the rightful holder with a Todo finished long ago).
      const row = this.sql(
        `SELECT ${LEASE_COLUMNS_OF_L} FROM leases l
         JOIN receipt_index i ON i.capture = l.capture AND i.kind = 'lease_acquired'
         WHERE l.owner = ? ORDER BY i.seq DESC LIMIT 1`,
      ).get(owner) as LeaseRowRaw | undefined;
      if (!row) return undefined;
      const current = this.sql('SELECT MAX(epoch) AS epoch FROM leases WHERE goal = ? AND todo = ?').get(row.goal, row.todo) as { epoch: number };
      return { lease: toLease(row), currentEpoch: current.epoch };
    });
  }

  leaseOfCapture(capture: string): Promise<Lease | undefined> {
    return this.read(() => this.leaseWhere('capture = ?', capture));
  }

  readReady(capture: string): Promise<StoredReady | undefined> {
    return this.read(() => this.readReadySync(capture));
  }

  getCapture(capture: string): Promise<StoredCapture | undefined> {
    return this.read(() => {
      const row = this.sql('SELECT * FROM captures WHERE id = ?').get(capture) as CaptureRowRaw | undefined;
      return row && toCapture(row);
    });
  }

  launchReceiptRows(capture?: string): Promise<{ seq: number; doc: string }[]> {
    return this.read(() => {
      const where = capture === undefined ? '' : 'AND i.capture = ?';
      return this.sql(
        `SELECT r.seq AS seq, r.doc AS doc FROM receipt_index i JOIN receipts r ON r.seq = i.seq
         WHERE i.kind IN ('launch_committed', 'launch_hooked') ${where} ORDER BY i.seq`,
      ).all(...(capture === undefined ? [] : [capture])) as { seq: number; doc: string }[];
    });
  }

  launchReceiptsOfTodo(goal: string, todo: string, limit: number): Promise<{ seq: number; doc: string }[]> {
    return this.read(() => this.launchReceiptsOfTodoSync(goal, todo, limit));
  }
  /** Walks the (goal, todo, seq) index backwards: a Todo's launch receipts without scanning the chain. */
  private launchReceiptsOfTodoSync(goal: string, todo: string, limit: number): { seq: number; doc: string }[] {
    return this.sql(
      `SELECT r.seq AS seq, r.doc AS doc FROM receipt_index i JOIN receipts r ON r.seq = i.seq
       WHERE i.goal = ? AND i.todo = ? AND i.kind IN ('launch_committed', 'launch_hooked') ORDER BY i.seq DESC LIMIT ?`,
    ).all(goal, todo, limit) as { seq: number; doc: string }[];
  }

  receiptsOfTodo(goal: string, todo: string, limit: number): Promise<{ seq: number; doc: string }[]> {
    return this.read(
      () =>
        this.sql(
          'SELECT r.seq AS seq, r.doc AS doc FROM receipt_index i JOIN receipts r ON r.seq = i.seq WHERE i.goal = ? AND i.todo = ? ORDER BY i.seq DESC LIMIT ?',
        ).all(goal, todo, limit) as { seq: number; doc: string }[],
    );
  }

  getSession(owner: Owner): Promise<SessionRecord | undefined> {
    return this.read(() => {
      const row = this.sql('SELECT * FROM sessions WHERE owner = ?').get(owner) as SessionRowRaw | undefined;
      return row && toSession(row);
    });
  }

  listSessions(): Promise<SessionRecord[]> {
    return this.read(() => (this.sql('SELECT * FROM sessions ORDER BY last_hook_at DESC').all() as SessionRowRaw[]).map(toSession));
  }

  listLeases(): Promise<Lease[]> {
    return this.read(() => (this.sql(`SELECT ${LEASE_COLUMNS} FROM leases ORDER BY acquired_at DESC, epoch DESC`).all() as LeaseRowRaw[]).map(toLease));
  }

  activeLeaseCount(goal?: string): Promise<number> {
    // SCAN leases USING COVERING INDEX leases_one_active_per_owner: the active rows only; of one Goal,
    // a search of leases_one_active_per_todo (goal, todo).
    return this.read(
      () =>
        (
          (goal === undefined
            ? this.sql("SELECT COUNT(*) AS n FROM leases WHERE status = 'active'").get()
            : this.sql("SELECT COUNT(*) AS n FROM leases WHERE status = 'active' AND goal = ?").get(goal)) as { n: number }
        ).n,
    );
  }

  listCaptures(): Promise<StoredCapture[]> {
    return this.read(() => (this.sql('SELECT * FROM captures ORDER BY created_at DESC, id').all() as CaptureRowRaw[]).map(toCapture));
  }

  activeLeases(goal?: string): Promise<Lease[]> {
    return this.read(() =>
      (
        (goal === undefined
          ? this.sql(`SELECT ${LEASE_COLUMNS} FROM leases WHERE status = 'active' ORDER BY acquired_at DESC, epoch DESC`).all()
          : this.sql(`SELECT ${LEASE_COLUMNS} FROM leases WHERE status = 'active' AND goal = ? ORDER BY acquired_at DESC, epoch DESC`).all(
              goal,
            )) as LeaseRowRaw[]
      ).map(toLease),
    );
  }

  leasesOfCaptures(captures: readonly string[]): Promise<Lease[]> {
    if (captures.length === 0) return Promise.resolve([]);
    return this.read(() =>
      (this.sql(`SELECT ${LEASE_COLUMNS} FROM leases WHERE capture IN (SELECT value FROM json_each(?))`).all(JSON.stringify(captures)) as LeaseRowRaw[]).map(
        toLease,
      ),
    );
  }

  recentCaptures(limit: number, goal?: string): Promise<StoredCapture[]> {
    return this.read(() =>
      (
        (goal === undefined
          ? this.sql('SELECT * FROM captures ORDER BY created_at DESC, id LIMIT ?').all(limit)
          : this.sql('SELECT * FROM captures WHERE goal = ? ORDER BY created_at DESC, id LIMIT ?').all(goal, limit)) as CaptureRowRaw[]
      ).map(toCapture),
    );
  }

  capturesById(ids: readonly string[]): Promise<StoredCapture[]> {
    if (ids.length === 0) return Promise.resolve([]);
    return this.read(() =>
      (this.sql('SELECT * FROM captures WHERE id IN (SELECT value FROM json_each(?))').all(JSON.stringify(ids)) as CaptureRowRaw[]).map(toCapture),
    );
  }

  readyOfCaptures(ids: readonly string[]): Promise<StoredReady[]> {
    if (ids.length === 0) return Promise.resolve([]);
    return this.read(() =>
      (
        this.sql('SELECT capture, doc, presentation, ready_digest FROM ready_captures WHERE capture IN (SELECT value FROM json_each(?))').all(
          JSON.stringify(ids),
        ) as { capture: string; doc: string; presentation: string; ready_digest: string }[]
      ).map((row) => ({ capture: row.capture, canonical: row.doc, presentation: row.presentation, readyDigest: row.ready_digest })),
    );
  }

  private dependenciesSync(goal: string, todos: readonly string[]): TodoDependency[] {
    if (todos.length === 0) return [];
    return (
      this.sql(
        `SELECT d.goal, d.todo, d.dependency, u.status FROM todo_deps d JOIN todos u ON u.goal = d.goal AND u.id = d.dependency
         WHERE d.goal = ? AND d.todo IN (SELECT value FROM json_each(?)) ORDER BY d.todo, d.dependency`,
      ).all(goal, JSON.stringify(todos)) as TodoDependency[]
    ).map((row) => ({ goal: row.goal, todo: row.todo, dependency: row.dependency, status: row.status }));
  }

  dependenciesOfLive(goal?: string): Promise<TodoDependency[]> {
    return this.read(
      () =>
        this.sql(
          // CROSS JOIN keeps this order (SQLite never reorders it): from the live Todos to their edges, so
          // the cost follows the live rows, not every edge the Goal's done Todos ever had.
          `SELECT d.goal, d.todo, d.dependency, u.status FROM todos t
           CROSS JOIN todo_deps d ON d.goal = t.goal AND d.todo = t.id
           CROSS JOIN todos u ON u.goal = d.goal AND u.id = d.dependency
           WHERE t.status IN ('open', 'blocked')${goal === undefined ? '' : ' AND t.goal = ?'} ORDER BY d.goal, d.todo, d.dependency`,
        ).all(...(goal === undefined ? [] : [goal])) as TodoDependency[],
    );
  }

  readyTodos(goal: string, limit: number): Promise<Todo[]> {
    return this.read(() =>
      (
        this.sql(
          `SELECT t.* FROM todos t WHERE t.status = 'open' AND t.goal = ?
             AND NOT EXISTS (SELECT 1 FROM todo_deps d JOIN todos u ON u.goal = d.goal AND u.id = d.dependency
                             WHERE d.goal = t.goal AND d.todo = t.id AND u.status <> 'done')
             AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.goal = t.goal AND l.todo = t.id AND l.status = 'active')
           ORDER BY t.created_at, t.id LIMIT ?`,
        ).all(goal, limit) as TodoRowRaw[]
      ).map(toTodo),
    );
  }

  todosWithStatus(status: TodoStatus, goal?: string, limit?: number): Promise<Todo[]> {
    return this.read(() => {
      const where = goal === undefined ? 'status = ?' : 'status = ? AND goal = ?';
      const params: unknown[] = goal === undefined ? [status] : [status, goal];
      const rows = (
        limit === undefined
          ? this.sql(`SELECT * FROM todos WHERE ${where} ORDER BY goal, created_at, id`).all(...params)
          : this.sql(`SELECT * FROM todos WHERE ${where} ORDER BY goal DESC, created_at DESC, id DESC LIMIT ?`)
              .all(...params, limit)
              .reverse()
      ) as TodoRowRaw[];
      return rows.map(toTodo);
    });
  }

  receipts(page: ReceiptPage): Promise<ReceiptRow[]> {
    const before = page.beforeSeq ?? Number.MAX_SAFE_INTEGER;
    return this.read(
      () =>
        (page.goal === undefined
          ? this.sql('SELECT seq, doc, hash FROM receipts WHERE seq < ? ORDER BY seq DESC LIMIT ?').all(before, page.limit)
          : this.sql(ONE_GOAL_PAGE).all({ goal: page.goal, before, limit: page.limit })) as ReceiptRow[],
    );
  }

  verifyChain(after?: ChainLink): Promise<ChainReport> {
    return this.read(() =>
      // A read transaction gives one consistent snapshot of rows and head while hooks keep writing.
      this.db.transaction((): ChainReport => {
        const head = this.sql('SELECT seq, hash FROM receipt_head WHERE id = 1').get() as { seq: unknown; hash: unknown } | undefined;
        const report = walkChain(this.receiptRowsAfter(after?.seq ?? Number.MIN_SAFE_INTEGER), head, after);
        // The anchor outside the database: a cut tail with a fixed head still links, but not to it.
        const anchor = readAnchor(this.path);
        if (anchor === undefined || anchor === 'unreadable') return { ...report, anchor: anchor ?? 'none' };
        const breaks = checkAnchor(anchor, anchoredState(this.db));
        return { ...report, ok: report.ok && breaks.length === 0, breaks: [...report.breaks, ...breaks], anchor: { seq: anchor.seq } };
      })(),
    );
  }

  /** Receipt rows after `start` in seq order, read in pages: faster than row-by-row iteration, bounded memory. */
  private *receiptRowsAfter(start: number): Generator<StoredReceiptRow> {
    const page = this.db.prepare('SELECT seq, doc, hash FROM receipts WHERE seq > ? ORDER BY seq LIMIT ?').raw();
    for (let after = start; ;) {
      const rows = page.all(after, VERIFY_PAGE) as [number, unknown, unknown][];
      for (const [seq, doc, hash] of rows) yield { seq, doc, hash };
      if (rows.length < VERIFY_PAGE) return;
      after = rows[rows.length - 1]![0];
    }
  }

  treeHashes(keys: readonly TreeKey[]): Promise<(Uint8Array | undefined)[]> {
    return this.read(() => readTree(this.sql(TREE_NODE).pluck(), keys));
  }

  chainHead(): Promise<ChainLink | undefined> {
    return this.read(() => this.headSync());
  }

  health(): Promise<StoreHealth> {
    return this.read(() => ({
      path: this.path,
      schemaVersion: this.db.pragma('user_version', { simple: true }) as number,
      integrity: this.db.pragma('integrity_check', { simple: true }) as string,
      journalMode: this.db.pragma('journal_mode', { simple: true }) as string,
      receipts: (this.sql('SELECT COUNT(*) AS n FROM receipts').get() as { n: number }).n,
      writeLock: this.probeWriteLock(),
    }));
  }

  /**
   * Whether a write could start now, for doctor: BEGIN IMMEDIATE within WRITE_LOCK_PROBE_MS, then
   * ROLLBACK; nothing is written. Under WAL every read above works while another process holds the
   * write lock, so without this a store that every hook finds busy would look healthy.
   */
  private probeWriteLock(): 'free' | 'busy' {
    if (this.db.inTransaction) return 'free';
    try {
      withBusyRetry(() => this.db.exec('BEGIN IMMEDIATE'), WRITE_LOCK_PROBE_MS);
    } catch (error) {
      if ((error as { code?: string }).code === 'SQLITE_BUSY') return 'busy';
      throw error;
    }
    this.db.exec('ROLLBACK');
    return 'free';
  }

  /** Test and tooling access to the raw connection (tamper tests, benchmarks). */
  get connection(): BetterSqlite3.Database {
    return this.db;
  }

  close(): void {
    this.db.close();
  }
}
