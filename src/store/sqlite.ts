// The SQLite authority (contract §4): better-sqlite3 13 (Node-API), WAL, synchronous=FULL,
// busy_timeout, every write in BEGIN IMMEDIATE. Claim decisions come from the pure core; this file
// only reads state, asks the core, and writes the outcome atomically.
import { mkdirSync, existsSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { buildReceipt, checkAnchor, parseReceipt, walkChain, type ChainReport, type ReceiptFields, type StoredReceiptRow } from '../core/receipts';
import { ZERO_DIGEST } from '../core/canonical';
import { decideClaim, decideRelease, decideRenewal, acquiredLease, type Lease } from '../core/lease';
import { buildReadyCapture, type HistoryEntry } from '../core/ready';
import type { Owner } from '../core/ids';
import { MIGRATIONS, SCHEMA_VERSION } from './schema';
import { toCapture, toLease, toSession, toTodo, type CaptureRowRaw, type LeaseRowRaw, type SessionRowRaw, type TodoRowRaw } from './rows';
import { faultPoint } from './faults';
import { advanceAnchor, anchorPath, readAnchor, readWalSalts, walHasCommit } from './anchor';
import {
  TodoExistsError,
  type Authority,
  type ClaimInput,
  type ClaimResult,
  type LaunchReceipt,
  type ReceiptRow,
  type ReleaseRequest,
  type ReleaseResult,
  type RequesterIdentification,
  type RenewResult,
  type SessionRecord,
  type SessionTouch,
  type StoreHealth,
  type StoredCapture,
  type StoredReady,
  type Todo,
  type TodoStatus,
} from './authority';

export class StoreUnavailableError extends Error {
  constructor(readonly detail: string, options?: { cause?: unknown }) {
    super(`store unavailable: ${detail}`, options);
    this.name = 'StoreUnavailableError';
  }
}

export class SchemaTooNewError extends Error {
  constructor(readonly found: number, readonly supported: number) {
    super(
      `this database has schema version ${found}, but this Turnkeeper understands up to ${supported}; ` +
        'upgrade Turnkeeper (the database was not changed)',
    );
    this.name = 'SchemaTooNewError';
  }
}

export interface OpenOptions {
  readonly path: string;
  /** When false and the file does not exist, nothing is created and `openSqliteAuthority` returns undefined. */
  readonly create: boolean;
  readonly busyTimeoutMs?: number;
}

const HISTORY_LENGTH = 5;
const VERIFY_PAGE = 10_000;
/**
 * SQLite's built-in busy handler backs off to 100 ms sleeps, so under contention (64 hooks at once on
 * two cores) a waiter keeps missing the moments the lock is free and starves past its deadline. We let
 * SQLite wait only this long per attempt and retry with short random sleeps until our own deadline.
 */
const SQLITE_BUSY_SLICE_MS = 20;
const sleepBuffer = new Int32Array(new SharedArrayBuffer(4));
const sleepSync = (ms: number): void => void Atomics.wait(sleepBuffer, 0, 0, ms);

function immediateWithRetry<T>(db: BetterSqlite3.Database, work: () => T, timeoutMs: number): T {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return db.transaction(work).immediate();
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
async function loadDriver(): Promise<typeof BetterSqlite3> {
  // Loaded on first open so that `TURNKEEPER=off` and invalid input never touch the native module.
  DatabaseClass ??= ((await import('better-sqlite3')) as unknown as { default: typeof BetterSqlite3 }).default;
  return DatabaseClass;
}

export async function openSqliteAuthority(options: OpenOptions): Promise<SqliteAuthority | undefined> {
  if (!options.create && !existsSync(options.path)) return undefined;
  const Database = await loadDriver();
  try {
    if (options.create) mkdirSync(dirname(options.path), { recursive: true, mode: 0o700 });
    refuseForeignWal(Database, options.path);
    // SQLite's own busy handler only covers short waits; `write` retries BEGIN IMMEDIATE itself.
    const db = new Database(options.path, { fileMustExist: !options.create, timeout: SQLITE_BUSY_SLICE_MS });
    try {
      if ((db.pragma('journal_mode', { simple: true }) as string) !== 'wal') db.pragma('journal_mode = WAL');
      db.pragma('synchronous = FULL');
      db.pragma('foreign_keys = ON');
      migrate(db, options.busyTimeoutMs ?? 5000);
    } catch (error) {
      db.close();
      throw error;
    }
    const file = statSync(options.path);
    const storeId = (db.prepare("SELECT value FROM store_meta WHERE key = 'store_id'").get() as { value: string } | undefined)?.value;
    return new SqliteAuthority(db, options.path, options.busyTimeoutMs ?? 5000, { dev: file.dev, ino: file.ino }, storeId);
  } catch (error) {
    throw asStoreError(error);
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
  const salts = readWalSalts(path);
  if (salts === undefined || !existsSync(path)) return;
  const anchor = readAnchor(path);
  if (anchor === undefined || anchor === 'unreadable') return;
  if (anchor.wal && anchor.wal.salt1 === salts.salt1 && anchor.wal.salt2 === salts.salt2) return;
  if (!walHasCommit(path, salts)) return;
  let why: string | undefined;
  try {
    const look = new Database(path, { readonly: true, fileMustExist: true, timeout: SQLITE_BUSY_SLICE_MS });
    try {
      const state = anchoredState(look);
      if (state.storeId !== anchor.storeId) why = 'it carries another store identity';
      else if (state.writes <= anchor.writes) why = `it is not newer than the last write this store anchored (write ${anchor.writes})`;
      else if (checkAnchor(anchor, state).length > 0) why = `it would replace receipt ${anchor.seq}`;
    } finally {
      look.close();
    }
  } catch (error) {
    if ((error as { code?: string }).code === 'SQLITE_BUSY') return; // a writer is mid-commit: the log is in use, so it is ours
    why = `it cannot be read with this database (${(error as Error).message})`;
  }
  if (why !== undefined) {
    throw new StoreUnavailableError(
      `${path}-wal does not belong to this database: ${why} (anchor ${anchorPath(path)}); it was not replayed. ` +
        'If that log is not this store\'s, move it aside; see docs/recovery.md#store_unavailable',
    );
  }
}

/** What the anchor check reads from a store: its identity, write counter and the stored hash of one receipt. */
function anchoredState(db: BetterSqlite3.Database): { storeId: string | undefined; writes: number; hashAt(seq: number): unknown } {
  const hasMeta = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'store_meta'").get() !== undefined;
  const meta = (key: string) => (hasMeta ? (db.prepare('SELECT value FROM store_meta WHERE key = ?').get(key) as { value: string } | undefined)?.value : undefined);
  const hashAt = db.prepare('SELECT hash FROM receipts WHERE seq = ?');
  return { storeId: meta('store_id'), writes: Number(meta('writes') ?? 0), hashAt: (seq) => (hashAt.get(seq) as { hash: unknown } | undefined)?.hash };
}

function migrate(db: BetterSqlite3.Database, busyTimeoutMs: number): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  if (current > SCHEMA_VERSION) throw new SchemaTooNewError(current, SCHEMA_VERSION);
  if (current === SCHEMA_VERSION) return;
  immediateWithRetry(
    db,
    () => {
      // Re-read under the write lock: another process may have migrated while we waited.
      const locked = db.pragma('user_version', { simple: true }) as number;
      if (locked > SCHEMA_VERSION) throw new SchemaTooNewError(locked, SCHEMA_VERSION);
      for (let version = locked; version < SCHEMA_VERSION; version += 1) db.exec(MIGRATIONS[version]!);
      db.pragma(`user_version = ${SCHEMA_VERSION}`);
    },
    busyTimeoutMs,
  );
}

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

interface ReleaseRecord {
  readonly reason: string;
  readonly forced: boolean;
  readonly identifiedBy: RequesterIdentification;
  readonly requestedBy?: Owner | undefined;
  readonly requester?: string | undefined;
}

const LEASE_COLUMNS = 'goal, todo, epoch, owner, capture, version, status, acquired_at, renewed_at, expires_at';
const LEASE_COLUMNS_OF_L = LEASE_COLUMNS.split(', ').map((column) => `l.${column}`).join(', ');

export class SqliteAuthority implements Authority {
  constructor(
    private readonly db: BetterSqlite3.Database,
    readonly path: string,
    private readonly busyTimeoutMs: number,
    private readonly file: { readonly dev: number; readonly ino: number },
    private readonly storeId: string | undefined,
  ) {}

  /** What the current transaction leaves behind for the anchor: the write counter and the chain head. */
  private pendingAnchor: { writes: number; seq: number; hash: string } | undefined;

  private guard<T>(work: () => T): Promise<T> {
    try {
      return Promise.resolve(work());
    } catch (error) {
      return Promise.reject(asStoreError(error));
    }
  }

  /** Runs `work` in BEGIN IMMEDIATE: every write of this store goes through here. */
  private write<T>(work: () => T): Promise<T> {
    return this.guard(() => this.immediate(work));
  }

  private immediate<T>(work: () => T): T {
    this.assertFileInPlace();
    const result = immediateWithRetry(
      this.db,
      () => {
        const result = work();
        this.pendingAnchor = this.storeId === undefined ? undefined : this.countWrite();
        faultPoint('store.before_commit');
        return result;
      },
      this.busyTimeoutMs,
    );
    // After the commit, never inside it: an anchor must only ever name what was committed.
    faultPoint('store.after_commit');
    const pending = this.pendingAnchor;
    this.pendingAnchor = undefined;
    if (pending && this.storeId) advanceAnchor(this.path, { storeId: this.storeId, ...pending, wal: readWalSalts(this.path) ?? null });
    return result;
  }

  /**
   * SQLite keeps writing to a database file that was deleted or replaced while open, and those
   * writes are lost for every other process: refuse them instead (a receipt there is no receipt).
   */
  private assertFileInPlace(): void {
    let now;
    try {
      now = statSync(this.path);
    } catch {
      throw new StoreUnavailableError(`the database file ${this.path} was removed while in use`);
    }
    if (now.dev !== this.file.dev || now.ino !== this.file.ino) throw new StoreUnavailableError(`the database file ${this.path} was replaced while in use`);
  }

  private appendInTransaction(fields: ReceiptFields, now: number): { seq: number; hash: string } {
    const head = this.db.prepare('SELECT seq, hash FROM receipt_head WHERE id = 1').get() as
      | { seq: number; hash: string }
      | undefined;
    const receipt = buildReceipt(head, fields, now);
    const seq = receipt.document.seq;
    this.db.prepare('INSERT INTO receipts (seq, doc, hash) VALUES (?, ?, ?)').run(seq, receipt.text, receipt.hash);
    this.db
      .prepare('INSERT INTO receipt_head (id, seq, hash) VALUES (1, ?, ?) ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash')
      .run(seq, receipt.hash);
    this.db
      .prepare('INSERT INTO receipt_index (seq, goal, todo, capture, kind) VALUES (?, ?, ?, ?, ?)')
      .run(seq, fields.goal, fields.todo ?? null, fields.capture ?? null, fields.kind);
    return { seq, hash: receipt.hash };
  }

  /** Advances the store's write counter (inside the transaction) and reads the head the anchor will name. */
  private countWrite(): { writes: number; seq: number; hash: string } {
    const writes = Number((this.db.prepare("UPDATE store_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'writes' RETURNING value").get() as { value: unknown }).value);
    const head = this.db.prepare('SELECT seq, hash FROM receipt_head WHERE id = 1').get() as { seq: number; hash: string } | undefined;
    return { writes, seq: head?.seq ?? 0, hash: head?.hash ?? ZERO_DIGEST };
  }

  addTodo(todo: { goal: string; id: string; title: string; body: string }, now: number): Promise<Todo> {
    return this.write(() => {
      const exists = this.db.prepare('SELECT 1 FROM todos WHERE goal = ? AND id = ?').get(todo.goal, todo.id);
      if (exists) throw new TodoExistsError(todo.goal, todo.id);
      this.db
        .prepare('INSERT INTO todos (goal, id, title, body, status, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)')
        .run(todo.goal, todo.id, todo.title, todo.body, 'open', now, now);
      this.appendInTransaction({ kind: 'todo_added', goal: todo.goal, todo: todo.id }, now);
      return { ...todo, status: 'open' as const, createdAt: now, updatedAt: now };
    });
  }

  getTodo(goal: string, id: string): Promise<Todo | undefined> {
    return this.guard(() => {
      const row = this.db.prepare('SELECT * FROM todos WHERE goal = ? AND id = ?').get(goal, id) as TodoRowRaw | undefined;
      return row && toTodo(row);
    });
  }

  listTodos(goal?: string): Promise<Todo[]> {
    return this.guard(() => {
      const rows = (
        goal === undefined
          ? this.db.prepare('SELECT * FROM todos ORDER BY goal, created_at, id').all()
          : this.db.prepare('SELECT * FROM todos WHERE goal = ? ORDER BY created_at, id').all(goal)
      ) as TodoRowRaw[];
      return rows.map(toTodo);
    });
  }

  setTodoStatus(goal: string, id: string, status: TodoStatus, now: number): Promise<{ todo: Todo; released?: Lease } | undefined> {
    return this.write(() => {
      const row = this.db.prepare('SELECT * FROM todos WHERE goal = ? AND id = ?').get(goal, id) as TodoRowRaw | undefined;
      if (!row) return undefined;
      this.db.prepare('UPDATE todos SET status = ?, updated_at = ? WHERE goal = ? AND id = ?').run(status, now, goal, id);
      this.appendInTransaction({ kind: 'todo_status_changed', goal, todo: id, detail: { from: row.status, to: status } }, now);
      let released: Lease | undefined;
      if (status !== 'open') {
        const active = this.activeLeaseOfTodo(goal, id);
        if (active) released = this.releaseInTransaction(active, { reason: `todo_${status}`, forced: false, identifiedBy: 'todo_status' }, now);
      }
      return { todo: toTodo({ ...row, status, updated_at: now }), ...(released ? { released } : {}) };
    });
  }

  private activeLeaseOfTodo(goal: string, todo: string): Lease | undefined {
    const row = this.db
      .prepare(`SELECT ${LEASE_COLUMNS} FROM leases WHERE goal = ? AND todo = ? AND status = 'active'`)
      .get(goal, todo) as LeaseRowRaw | undefined;
    return row && toLease(row);
  }

  private releaseInTransaction(lease: Lease, why: ReleaseRecord, now: number): Lease {
    const { reason, forced, identifiedBy } = why;
    this.db
      .prepare(`UPDATE leases SET status = 'released', released_at = ?, release_reason = ? WHERE goal = ? AND todo = ? AND epoch = ?`)
      .run(now, reason, lease.goal, lease.todo, lease.epoch);
    this.appendInTransaction(
      {
        kind: 'lease_released',
        goal: lease.goal,
        todo: lease.todo,
        capture: lease.capture,
        owner: lease.owner,
        lease: { epoch: lease.epoch, version: lease.version },
        // Who asked and how they were identified, never more: `requestedBy` is only what was proven
        // (agent environment) or claimed (self_declared); `owner` above is the lease's holder.
        detail: { reason, forced, identifiedBy, requestedBy: why.requestedBy ?? null, requester: why.requester ?? null },
      },
      now,
    );
    return { ...lease, status: 'released' };
  }

  activeLeaseOfOwner(owner: Owner): Promise<Lease | undefined> {
    return this.guard(() => {
      const row = this.db
        .prepare(`SELECT ${LEASE_COLUMNS} FROM leases WHERE owner = ? AND status = 'active'`)
        .get(owner) as LeaseRowRaw | undefined;
      return row && toLease(row);
    });
  }

  latestLeaseOfOwner(owner: Owner): Promise<{ lease: Lease; currentEpoch: number } | undefined> {
    return this.guard(() => {
      // "Most recent" is the lease whose acquisition came last in the receipt chain: a wall-clock order
      // breaks when the clock is stepped (it fenced the rightful holder with a Todo finished long ago).
      const row = this.db
        .prepare(
          `SELECT ${LEASE_COLUMNS_OF_L} FROM leases l
           JOIN receipt_index i ON i.capture = l.capture AND i.kind = 'lease_acquired'
           WHERE l.owner = ? ORDER BY i.seq DESC LIMIT 1`,
        )
        .get(owner) as LeaseRowRaw | undefined;
      if (!row) return undefined;
      const current = this.db.prepare('SELECT MAX(epoch) AS epoch FROM leases WHERE goal = ? AND todo = ?').get(row.goal, row.todo) as {
        epoch: number;
      };
      return { lease: toLease(row), currentEpoch: current.epoch };
    });
  }

  leaseOfCapture(captureId: string): Promise<Lease | undefined> {
    return this.guard(() => {
      const row = this.db.prepare(`SELECT ${LEASE_COLUMNS} FROM leases WHERE capture = ?`).get(captureId) as LeaseRowRaw | undefined;
      return row && toLease(row);
    });
  }

  readReady(captureId: string): Promise<StoredReady | undefined> {
    return this.guard(() => this.readReadySync(captureId));
  }

  private readReadySync(captureId: string): StoredReady | undefined {
    const row = this.db
      .prepare('SELECT capture, doc, presentation, ready_digest FROM ready_captures WHERE capture = ?')
      .get(captureId) as { capture: string; doc: string; presentation: string; ready_digest: string } | undefined;
    return row && { capture: row.capture, canonical: row.doc, presentation: row.presentation, readyDigest: row.ready_digest };
  }

  getCapture(captureId: string): Promise<StoredCapture | undefined> {
    return this.guard(() => {
      const row = this.db.prepare('SELECT * FROM captures WHERE id = ?').get(captureId) as CaptureRowRaw | undefined;
      return row && toCapture(row);
    });
  }

  launchReceipts(captureId: string): Promise<LaunchReceipt[]> {
    return this.guard(() => this.launchRows('i.capture = ?', [captureId]));
  }

  launches(): Promise<(LaunchReceipt & { hooked: boolean })[]> {
    return this.guard(() => {
      const rows = this.launchRows('1 = 1', []);
      const hooked = new Set(rows.filter((row) => row.kind === 'launch_hooked').map((row) => row.launch));
      return rows.filter((row) => row.kind === 'launch_committed').map((row) => ({ ...row, hooked: row.launch !== null && hooked.has(row.launch) }));
    });
  }

  private launchRows(where: string, params: unknown[]): LaunchReceipt[] {
    const rows = this.db
      .prepare(
        `SELECT r.seq AS seq, r.doc AS doc FROM receipt_index i JOIN receipts r ON r.seq = i.seq
         WHERE i.kind IN ('launch_committed', 'launch_hooked') AND ${where} ORDER BY r.seq`,
      )
      .all(...params) as { seq: number; doc: string }[];
    const out: LaunchReceipt[] = [];
    for (const row of rows) {
      const doc = parseReceipt(row.doc);
      if (!doc?.capture) continue;
      const launch = doc.detail?.launch;
      out.push({ seq: row.seq, kind: doc.kind as LaunchReceipt['kind'], capture: doc.capture, launch: typeof launch === 'string' ? launch : null, at: Date.parse(doc.at) });
    }
    return out;
  }

  claim(input: ClaimInput, now: number): Promise<ClaimResult> {
    faultPoint('claim.before_transaction');
    return this.write((): ClaimResult => {
      const { capture, owner } = input;
      if (input.session) this.upsertSession(input.session, now);
      const doc = capture.document;
      // "Already recorded" means this Turn already claimed this Todo, whatever capture schema it was
      // written under: a v1 capture of the same Turn (which held cwd and binding in its identity) is
      // the same claim, so a released one is never revived by a retry from another directory.
      const recordedRow = this.db
        .prepare(
          `SELECT c.id AS capture, l.epoch AS epoch, l.status AS status FROM captures c JOIN leases l ON l.capture = c.id
           WHERE c.goal = ? AND c.todo = ? AND c.agent = ? AND c.session = ? AND c.turn = ?
           ORDER BY l.status = 'active' DESC, l.epoch DESC LIMIT 1`,
        )
        .get(doc.goal, doc.todo, doc.agent, doc.session, doc.turn) as { capture: string; epoch: number; status: 'active' | 'released' } | undefined;
      const refuse = (detail: Record<string, string | number>, extra: Partial<ReceiptFields> = {}): void => {
        this.appendInTransaction({ kind: 'claim_refused', goal: doc.goal, todo: doc.todo, owner, op: capture.op, detail, ...extra }, now);
      };

      // Contract §2 rule 6, in its order: the Todo first, then the operation, then the lease.
      const todoRow = this.db.prepare('SELECT * FROM todos WHERE goal = ? AND id = ?').get(doc.goal, doc.todo) as TodoRowRaw | undefined;
      if (!todoRow) {
        refuse({ reason: 'unknown_todo' });
        return { kind: 'unknown_todo' };
      }
      if (todoRow.status !== 'open') {
        refuse({ reason: 'todo_not_open', status: todoRow.status });
        return { kind: 'todo_not_open', status: todoRow.status };
      }
      const active = this.activeLeaseOfTodo(doc.goal, doc.todo);
      const ownerRow = this.db.prepare(`SELECT ${LEASE_COLUMNS} FROM leases WHERE owner = ? AND status = 'active'`).get(owner) as LeaseRowRaw | undefined;
      const last = this.db.prepare('SELECT MAX(epoch) AS epoch FROM leases WHERE goal = ? AND todo = ?').get(doc.goal, doc.todo) as {
        epoch: number | null;
      };
      const decision = decideClaim(
        {
          active,
          lastEpoch: last.epoch ?? 0,
          recorded: recordedRow && { capture: recordedRow.capture, epoch: recordedRow.epoch, leaseStatus: recordedRow.status },
          ownerHolds: ownerRow && toLease(ownerRow),
        },
        { owner, capture: capture.captureId, op: capture.op },
        now,
      );

      switch (decision.kind) {
        case 'replay': {
          const lease = this.db.prepare(`SELECT ${LEASE_COLUMNS} FROM leases WHERE capture = ?`).get(decision.capture) as LeaseRowRaw;
          return { kind: 'replayed', lease: toLease(lease), ready: this.readReadySync(decision.capture) };
        }
        case 'refuse':
          if (decision.reason === 'capture_released') {
            refuse({ reason: 'capture_released' }, { capture: recordedRow?.capture, lease: undefined });
            return { kind: 'capture_released', capture: recordedRow!.capture, epoch: decision.epoch };
          }
          if (decision.reason === 'session_holds_other') {
            refuse({ reason: 'session_holds_other', held: decision.held.todo, heldEpoch: decision.held.epoch });
            return { kind: 'session_holds_other', held: decision.held };
          }
          refuse(
            { reason: decision.reason, holder: decision.holder.owner, holderEpoch: decision.holder.epoch },
            { capture: capture.captureId },
          );
          return { kind: decision.reason, holder: decision.holder };
        case 'acquire':
          break;
      }

      const todo = todoRow;
      const history = this.historyOf(doc.goal, doc.todo);
      const lease = acquiredLease({ goal: doc.goal, todo: doc.todo, owner, capture: capture.captureId, epoch: decision.epoch }, now, input.ttlSeconds);
      const ready = buildReadyCapture({
        capture: capture.captureId,
        originalDigest: capture.originalDigest,
        lease: { owner, epoch: lease.epoch },
        todo: { id: todo.id, title: todo.title, body: todo.body },
        goal: doc.goal,
        history,
        preconditions: input.preconditions,
      });
      this.db
        .prepare(
          'INSERT INTO captures (id, goal, todo, agent, session, turn, cwd, binding, doc, original_digest, op, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
        )
        .run(capture.captureId, doc.goal, doc.todo, doc.agent, doc.session, doc.turn, input.cwd, input.binding, capture.canonical, capture.originalDigest, capture.op, now);
      this.db
        .prepare(`INSERT INTO leases (${LEASE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
        .run(lease.goal, lease.todo, lease.epoch, lease.owner, lease.capture, lease.version, lease.status, lease.acquiredAt, lease.renewedAt, lease.expiresAt);
      this.db
        .prepare('INSERT INTO ready_captures (capture, doc, presentation, ready_digest) VALUES (?, ?, ?, ?)')
        .run(capture.captureId, ready.canonical, ready.presentation, ready.readyDigest);
      const common = { goal: doc.goal, todo: doc.todo, capture: capture.captureId, owner, op: capture.op };
      const leaseRef = { epoch: lease.epoch, version: lease.version };
      this.appendInTransaction({ kind: 'capture_bound', ...common, detail: { originalDigest: capture.originalDigest, turn: doc.turn, binding: input.binding, cwd: input.cwd } }, now);
      this.appendInTransaction({ kind: 'lease_acquired', ...common, lease: leaseRef, detail: { expiresAt: new Date(lease.expiresAt).toISOString() } }, now);
      this.appendInTransaction({ kind: 'ready_written', ...common, lease: leaseRef, detail: { readyDigest: ready.readyDigest } }, now);
      faultPoint('claim.inside_transaction');
      return {
        kind: 'acquired',
        lease,
        ready: { capture: capture.captureId, canonical: ready.canonical, presentation: ready.presentation, readyDigest: ready.readyDigest },
      };
    });
  }

  private historyOf(goal: string, todo: string): HistoryEntry[] {
    const rows = this.db
      .prepare('SELECT r.doc AS doc FROM receipt_index i JOIN receipts r ON r.seq = i.seq WHERE i.goal = ? AND i.todo = ? ORDER BY i.seq DESC LIMIT ?')
      .all(goal, todo, HISTORY_LENGTH) as { doc: string }[];
    const entries: HistoryEntry[] = [];
    for (const { doc } of rows.reverse()) {
      const receipt = parseReceipt(doc);
      if (!receipt) continue;
      entries.push({ seq: receipt.seq, kind: receipt.kind, at: receipt.at, owner: receipt.owner, epoch: receipt.lease?.epoch });
    }
    return entries;
  }

  renew(owner: Owner, now: number, ttlSeconds: number): Promise<RenewResult> {
    return this.guard(() => {
      // Decide on a plain read first: most tool events are within the renewal interval and write nothing.
      const read = this.db.prepare(`SELECT ${LEASE_COLUMNS} FROM leases WHERE owner = ? AND status = 'active'`).get(owner) as LeaseRowRaw | undefined;
      if (!read) return { kind: 'skipped', why: 'no_active_lease' } as RenewResult;
      const first = decideRenewal(toLease(read), owner, now, ttlSeconds);
      if (first.kind === 'skip') return { kind: 'skipped', why: first.why } as RenewResult;
      return this.immediate((): RenewResult => {
          const row = this.db.prepare(`SELECT ${LEASE_COLUMNS} FROM leases WHERE owner = ? AND status = 'active'`).get(owner) as LeaseRowRaw | undefined;
          if (!row) return { kind: 'skipped', why: 'no_active_lease' };
          const decision = decideRenewal(toLease(row), owner, now, ttlSeconds);
          if (decision.kind === 'skip') return { kind: 'skipped', why: decision.why };
          const lease = decision.lease;
          this.db
            .prepare('UPDATE leases SET version = ?, renewed_at = ?, expires_at = ? WHERE goal = ? AND todo = ? AND epoch = ? AND status = ?')
            .run(lease.version, lease.renewedAt, lease.expiresAt, lease.goal, lease.todo, lease.epoch, 'active');
          this.appendInTransaction(
            {
              kind: 'lease_renewed',
              goal: lease.goal,
              todo: lease.todo,
              capture: lease.capture,
              owner,
              lease: { epoch: lease.epoch, version: lease.version },
              detail: { expiresAt: new Date(lease.expiresAt).toISOString() },
            },
            now,
          );
          return { kind: 'renewed', lease };
      });
    });
  }

  release(request: ReleaseRequest, now: number): Promise<ReleaseResult> {
    return this.write((): ReleaseResult => {
      const active = this.activeLeaseOfTodo(request.goal, request.todo);
      const decision = decideRelease(active, request);
      if (decision.kind === 'refuse') return { kind: 'refused', why: decision.why, lease: active };
      const byHolder = request.by !== undefined && request.by === active?.owner;
      const forced = request.force && !byHolder;
      const asked = byHolder ? (request.identifiedBy === 'agent_environment' ? 'released by its owner' : `released by a self-declared owner (${request.identifiedBy})`) : 'forced release';
      const reason = request.reason?.trim() || asked;
      const record: ReleaseRecord = { reason, forced, identifiedBy: forced ? 'force' : request.identifiedBy, requestedBy: request.by, requester: request.requester };
      return { kind: 'released', lease: this.releaseInTransaction(decision.lease, record, now) };
    });
  }

  appendReceipt(fields: ReceiptFields, now: number, session?: SessionTouch): Promise<{ seq: number; hash: string }> {
    return this.write(() => {
      if (session) this.upsertSession(session, now);
      return this.appendInTransaction(fields, now);
    });
  }

  private upsertSession(record: SessionTouch, now: number): void {
    this.db
      .prepare(
        `INSERT INTO sessions (owner, agent, session, goal, cwd, transcript_path, first_hook_at, last_hook_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (owner) DO UPDATE SET last_hook_at = MAX(last_hook_at, excluded.last_hook_at),
           transcript_path = COALESCE(excluded.transcript_path, transcript_path), cwd = excluded.cwd`,
      )
      .run(record.owner, record.agent, record.session, record.goal, record.cwd, record.transcriptPath, now, now);
  }

  touchSession(record: SessionTouch, now: number, minIntervalMs: number): Promise<void> {
    return this.guard(() => {
      const current = this.db.prepare('SELECT last_hook_at, transcript_path FROM sessions WHERE owner = ?').get(record.owner) as
        | { last_hook_at: number; transcript_path: string | null }
        | undefined;
      const transcriptChanged = record.transcriptPath !== null && current?.transcript_path !== record.transcriptPath;
      if (current && now - current.last_hook_at < minIntervalMs && !transcriptChanged) return;
      this.immediate(() => this.upsertSession(record, now));
    });
  }

  getSession(owner: Owner): Promise<SessionRecord | undefined> {
    return this.guard(() => {
      const row = this.db.prepare('SELECT * FROM sessions WHERE owner = ?').get(owner) as SessionRowRaw | undefined;
      return row && toSession(row);
    });
  }

  listSessions(): Promise<SessionRecord[]> {
    return this.guard(() => (this.db.prepare('SELECT * FROM sessions ORDER BY last_hook_at DESC').all() as SessionRowRaw[]).map(toSession));
  }

  listLeases(): Promise<Lease[]> {
    return this.guard(() =>
      (this.db.prepare(`SELECT ${LEASE_COLUMNS} FROM leases ORDER BY acquired_at DESC, epoch DESC`).all() as LeaseRowRaw[]).map(toLease),
    );
  }

  listCaptures(): Promise<StoredCapture[]> {
    return this.guard(() => (this.db.prepare('SELECT * FROM captures ORDER BY created_at DESC, id').all() as CaptureRowRaw[]).map(toCapture));
  }

  receipts(page: { beforeSeq?: number | undefined; limit: number }): Promise<ReceiptRow[]> {
    return this.guard(
      () =>
        this.db
          .prepare('SELECT seq, doc, hash FROM receipts WHERE seq < ? ORDER BY seq DESC LIMIT ?')
          .all(page.beforeSeq ?? Number.MAX_SAFE_INTEGER, page.limit) as ReceiptRow[],
    );
  }

  verifyChain(after?: { seq: number; hash: string }) {
    return this.guard(() => {
      // A read transaction gives one consistent snapshot of rows and head while hooks keep writing.
      return this.db.transaction((): ChainReport => {
        const head = this.db.prepare('SELECT seq, hash FROM receipt_head WHERE id = 1').get() as { seq: unknown; hash: unknown } | undefined;
        const report = walkChain(this.receiptRowsAfter(after?.seq ?? Number.MIN_SAFE_INTEGER), head, after);
        // The anchor outside the database: a cut tail with a fixed head still links, but not to it.
        const anchor = readAnchor(this.path);
        if (anchor === undefined || anchor === 'unreadable') return { ...report, anchor: anchor ?? 'none' };
        const breaks = checkAnchor(anchor, anchoredState(this.db));
        return { ...report, ok: report.ok && breaks.length === 0, breaks: [...report.breaks, ...breaks], anchor: { seq: anchor.seq } };
      })();
    });
  }

  /** Receipt rows after `start` in seq order, read in pages: faster than row-by-row iteration, bounded memory. */
  private *receiptRowsAfter(start: number): Generator<StoredReceiptRow> {
    const page = this.db.prepare('SELECT seq, doc, hash FROM receipts WHERE seq > ? ORDER BY seq LIMIT ?').raw();
    for (let after = start; ; ) {
      const rows = page.all(after, VERIFY_PAGE) as [number, unknown, unknown][];
      for (const [seq, doc, hash] of rows) yield { seq, doc, hash };
      if (rows.length < VERIFY_PAGE) return;
      after = rows[rows.length - 1]![0];
    }
  }

  health(): Promise<StoreHealth> {
    return this.guard(() => ({
      path: this.path,
      schemaVersion: this.db.pragma('user_version', { simple: true }) as number,
      integrity: this.db.pragma('integrity_check', { simple: true }) as string,
      journalMode: this.db.pragma('journal_mode', { simple: true }) as string,
      receipts: (this.db.prepare('SELECT COUNT(*) AS n FROM receipts').get() as { n: number }).n,
    }));
  }

  commitLaunch(request: import('./authority').LaunchCommit, now: number): Promise<import('./authority').LaunchCommitResult> {
    type Result = import('./authority').LaunchCommitResult;
    return this.write((): Result => {
      const { expected, receipt } = request;
      const refuse = (refusal: Omit<Extract<Result, { kind: 'refused' }>, 'kind'>): Result => {
        const detail = receipt.detail ?? {};
        this.appendInTransaction(
          {
            ...receipt,
            kind: 'launch_refused',
            detail: { reason: refusal.reason, why: refusal.why.slice(0, 500), launch: detail.launch ?? null, digest: detail.digest ?? null, pid: detail.pid ?? null },
          },
          now,
        );
        return { kind: 'refused', ...refusal };
      };
      // What resume checked, read again under the write lock: the lease row of this capture.
      const row = this.db.prepare(`SELECT ${LEASE_COLUMNS} FROM leases WHERE capture = ?`).get(expected.capture) as LeaseRowRaw | undefined;
      const lease = row && toLease(row);
      if (!lease || lease.status !== 'active' || lease.owner !== expected.owner || lease.epoch !== expected.epoch) {
        const holder = lease && this.activeLeaseOfTodo(lease.goal, lease.todo);
        if (holder && holder.capture !== expected.capture) {
          return refuse({ reason: 'lease_moved', why: `the lease moved to ${holder.owner} (epoch ${holder.epoch}) after resume checked it`, lease, holder });
        }
        return refuse({ reason: 'capture_released', why: `the lease (epoch ${expected.epoch}) was released after resume checked it`, lease });
      }
      // At most one live launch per capture: the latest one must be dead (its predecessors were
      // found dead when it was committed).
      const latest = this.db
        .prepare(
          `SELECT r.seq AS seq, r.doc AS doc FROM receipt_index i JOIN receipts r ON r.seq = i.seq
           WHERE i.capture = ? AND i.kind = 'launch_committed' ORDER BY i.seq DESC LIMIT 1`,
        )
        .get(expected.capture) as { seq: number; doc: string } | undefined;
      if (latest) {
        const detail = parseReceipt(latest.doc)?.detail ?? {};
        const text = (value: unknown) => (typeof value === 'string' ? value : null);
        const previous = {
          seq: latest.seq,
          launch: text(detail.launch),
          pid: typeof detail.pid === 'number' ? detail.pid : null,
          host: text(detail.host),
          boot: text(detail.boot),
          pidStart: text(detail.pidStart),
        };
        if (request.isLive(previous)) {
          const where = `pid ${previous.pid ?? '?'} on ${previous.host ?? 'an unknown host'}`;
          return refuse({ reason: 'launch_in_progress', why: `launch receipt #${previous.seq} of this capture is still running (${where})`, lease, previous });
        }
      }
      if (lease.version !== expected.version) {
        return refuse({ reason: 'lease_moved', why: `the lease was renewed (version ${expected.version} → ${lease.version}) after resume checked it: the session is active elsewhere`, lease });
      }
      return { kind: 'committed', ...this.appendInTransaction(receipt, now) };
    });
  }

  /** Test and tooling access to the raw connection (tamper tests, benchmarks). */
  get connection(): BetterSqlite3.Database {
    return this.db;
  }

  close(): void {
    this.db.close();
  }
}

