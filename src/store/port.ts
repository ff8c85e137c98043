// The row port: what an authority (SQLite today, PostgreSQL for teams) implements. Row reads and
// writes only, no policy: which claim wins, what a refusal records, how receipts chain and what a
// ready capture says live above it, in src/ledger/ledger.ts, once for every authority.
import type { ChainLink, PreparedReceipt, ChainReport } from '../core/receipts';
import type { TreeKey } from '../core/merkle';
import type { Lease } from '../core/lease';
import type { Owner } from '../core/ids';
import type {
  ReceiptPage,
  ReceiptRow,
  SessionRecord,
  SessionTouch,
  StoreHealth,
  StoredCapture,
  StoredReady,
  Todo,
  TodoDependency,
  TodoStatus,
} from './authority';

/** A receipt row to append: the stored text, its hash, and the lookup columns beside the chain. */
export interface ReceiptInsert {
  readonly seq: number;
  readonly doc: string;
  readonly hash: string;
  readonly goal: string;
  readonly todo: string | null;
  readonly capture: string | null;
  readonly kind: string;
}

/** The Turn's earlier claim of a Todo, whatever capture schema it was written under. */
export interface ClaimOfTurn {
  readonly capture: string;
  readonly epoch: number;
  readonly status: 'active' | 'released';
}

/**
 * Everything a claim decides from (core/lease.ts `decideClaim`, and the Todo's own status), read
 * without locking a row: the Todo, its active lease and highest epoch, the Turn's earlier claim and the
 * Owner's active lease.
 */
export interface ClaimSnapshot {
  readonly todo: Todo | undefined;
  readonly active: Lease | undefined;
  readonly lastEpoch: number;
  readonly recorded: ClaimOfTurn | undefined;
  readonly ownerHolds: Lease | undefined;
  /** The checkout the active lease's capture ran in (a refusal names it). */
  readonly activeCheckout: string | undefined;
  /** The Goal the claim's place last used (`goalOfPlace`), when a place was given. */
  readonly placeGoal: { goal: string; checkout: string } | undefined;
}

/** A receipt prepared before its place in the chain is known (core/receipts.ts), with its lookup columns. */
export interface PreparedAppend {
  readonly receipt: PreparedReceipt;
  readonly goal: string;
  readonly todo: string | null;
  readonly capture: string | null;
  readonly kind: string;
}

/**
 * What must still hold, once the chain head is locked, for a claim refused because another session
 * holds the Todo (lease_held, lease_expired_hold) to be recorded: the Todo open, its active lease the
 * one the refusal names (capture, epoch, version), the Turn without a claim of it and the Owner without
 * an active lease.
 */
export interface HeldElsewhere {
  readonly turn: { goal: string; todo: string; agent: string; session: string; turn: string };
  readonly owner: Owner;
  readonly holder: Pick<Lease, 'capture' | 'epoch' | 'version'>;
}

/** Appends prepared receipts after the head, one after another, in the open transaction (the head locked by its read). Returns the last. */
export async function appendPreparedNow(tx: Pick<StoreTx, 'chainHead' | 'appendReceipt'>, receipts: readonly PreparedAppend[]): Promise<ChainLink> {
  let head = await tx.chainHead();
  for (const { receipt, ...lookup } of receipts) {
    const built = receipt.at(head);
    await tx.appendReceipt({ seq: built.document.seq, doc: built.text, hash: built.hash, ...lookup }, head);
    head = { seq: built.document.seq, hash: built.hash };
  }
  if (!head) throw new Error('no receipt to append');
  return head;
}

/** The error (SQLSTATE 40001, retried from fresh reads) a write fails with when what it decided from moved. */
export const decisionMoved = (what: string): Error => Object.assign(new Error(`${what} moved while this write decided`), { code: '40001' });

/** Row operations inside one write transaction. Every method may be called only while it is open. */
export interface StoreTx {
  /**
   * The time this transaction decides with, in ms. SQLite: the caller's clock (`clientNow`). A team
   * server: its own `clock_timestamp()`, so lease times never depend on a client's clock (spec §4).
   */
  clock(clientNow: number): Promise<number>;
  todo(goal: string, id: string): Promise<Todo | undefined>;
  insertTodo(todo: Todo): Promise<void>;
  /** Sets the status; `blockReason` is stored with `blocked` and cleared with any other status. */
  setTodoStatus(goal: string, id: string, status: TodoStatus, now: number, blockReason?: string | null): Promise<void>;
  /**
   * The dependency edges of these Todos of `goal`, with each dependency's status, ordered by (todo,
   * dependency). With `lock`, a team server first locks the rows of these Todos (FOR SHARE) and reads the
   * edges in a statement after the lock: the cycle check walks the graph this way, so two machines adding
   * the two halves of a cycle meet on a row (one waits, or a deadlock retries one) and the second sees
   * the first. A claim's check reads without it (its Todo row is locked already).
   */
  dependenciesOf(goal: string, todos: readonly string[], lock?: boolean): Promise<TodoDependency[]>;
  insertDependencies(goal: string, todo: string, dependencies: readonly string[], now: number): Promise<void>;
  deleteDependencies(goal: string, todo: string, dependencies: readonly string[]): Promise<void>;

  activeLeaseOfTodo(goal: string, todo: string): Promise<Lease | undefined>;
  activeLeaseOfOwner(owner: Owner): Promise<Lease | undefined>;
  leaseOfCapture(capture: string): Promise<Lease | undefined>;
  /** Highest epoch ever issued for the Todo, 0 when never leased. */
  lastEpoch(goal: string, todo: string): Promise<number>;
  insertLease(lease: Lease): Promise<void>;
  /**
   * Compare-and-set on one lease row: writes `next` only if the row `(goal, todo, epoch)` is still
   * active with the `version` the caller planned from. Returns whether it wrote.
   */
  updateLease(
    planned: Pick<Lease, 'goal' | 'todo' | 'epoch' | 'version'>,
    next: Lease,
    release?: { readonly at: number; readonly reason: string },
  ): Promise<boolean>;

  claimOfTurn(turn: { goal: string; todo: string; agent: string; session: string; turn: string }): Promise<ClaimOfTurn | undefined>;
  /**
   * The claim's inputs in one read (a team server: one statement, one round trip), locking nothing;
   * with `lockTodo`, the Todo's row is locked first (a team server: FOR UPDATE, then the read in a
   * statement of its own that sees what the transactions it waited for committed; one round trip).
   * A team server locks the row only as this transaction's unlocked read saw it: when it changed in
   * between (another claim committed), nothing is locked and the write is decided again
   * (decisionMoved), so claims that waited for one winner are let go together, not one by one.
   * Under READ COMMITTED it sees what is committed when it runs: after `chainHead()` has locked the
   * head, no write that changes a lease or a Todo can commit before this transaction does (every such
   * write appends a receipt), so what it reads then stays true until COMMIT.
   */
  claimState(
    turn: { goal: string; todo: string; agent: string; session: string; turn: string },
    owner: Owner,
    place?: string,
    options?: { readonly lockTodo?: boolean },
  ): Promise<ClaimSnapshot>;
  insertCapture(capture: StoredCapture): Promise<void>;
  insertReady(ready: StoredReady): Promise<void>;
  readReady(capture: string): Promise<StoredReady | undefined>;

  upsertSession(record: SessionTouch, now: number): Promise<void>;

  chainHead(): Promise<ChainLink | undefined>;
  /**
   * Appends `receipts`, in order, after the chain head as it is when this transaction commits: the
   * last thing the transaction does (nothing after it reads them). With `expect`, only if it still
   * holds once the head is locked; otherwise the write fails with decisionMoved (and is decided again).
   * A team server locks the head, checks, appends and commits in one message, so no client's turn
   * falls inside the time every other write waits for the head (postgres.ts `commitText`). SQLite,
   * whose write transaction excludes every other writer from its start, appends at once. Returns the
   * last receipt's link when they were appended at once, undefined when they wait for COMMIT (their
   * seqs are then StorePort.appendedAtCommit's, once the write has committed).
   */
  appendAtCommit(receipts: readonly PreparedAppend[], expect?: HeldElsewhere): Promise<ChainLink | undefined>;
  /** Inserts the row and advances the head from `previous`; fails if the head moved meanwhile. */
  appendReceipt(row: ReceiptInsert, previous: ChainLink | undefined): Promise<void>;
  /**
   * Stored hashes of complete subtrees of the receipt tree (src/core/merkle.ts), in the order asked,
   * undefined where there is no row. Reads this transaction's own appends.
   */
  treeHashes(keys: readonly TreeKey[]): Promise<(Uint8Array | undefined)[]>;
  /** Receipt rows with after < seq <= upTo, in seq order (the receipts since the last signed checkpoint). */
  receiptsBetween(after: number, upTo: number): Promise<ReceiptRow[]>;
  /** Stored docs of the Todo's newest receipts, newest first. */
  recentReceiptsOfTodo(goal: string, todo: string, limit: number): Promise<string[]>;
  /** The checkout a capture ran in. */
  checkoutOfCapture(capture: string): Promise<string | undefined>;
  /** The capture's newest `launch_committed` receipt. */
  latestLaunchOfCapture(capture: string): Promise<{ seq: number; doc: string } | undefined>;
  /** The Todo's newest `launch_committed` and `launch_hooked` receipts, newest first, at most `limit` (the (goal, todo, seq) index). */
  launchReceiptsOfTodo(goal: string, todo: string, limit: number): Promise<{ seq: number; doc: string }[]>;

  /** The Goal a place (common git dir, or a directory outside git) last used. */
  goalOfPlace(place: string): Promise<{ goal: string; checkout: string } | undefined>;
  rememberPlace(place: string, goal: string, checkout: string, now: number): Promise<void>;
  rememberGoal(goal: GoalRecord): Promise<void>;
  /** Moves every row of Goal `from` (Todos, leases, captures, sessions, places, the receipt lookup) to `to`. */
  remapGoal(from: string, to: string): Promise<void>;
  todoIdsOf(goal: string): Promise<string[]>;
  /** How many Todos, leases and captures `goal` has, read in this transaction (a Goal move records them). */
  goalCounts(goal: string): Promise<{ todos: number; leases: number; captures: number }>;
  /** Renames a Todo of `goal` everywhere rows name it (Todo, leases, captures, the receipt lookup); receipts keep their text. */
  renameTodo(goal: string, from: string, to: string): Promise<void>;
  /** Goals named by rows but written as paths (stores of the previous release). */
  legacyGoals(): Promise<string[]>;
  setMeta(key: string, value: string | null): Promise<void>;
  meta(key: string): Promise<string | undefined>;
}

/** How a change feed learns of changes: live notifications, or a poll of the head (with why). */
export type FeedMode = { readonly kind: 'listen' } | { readonly kind: 'polling'; readonly everyMs: number; readonly reason: string };

export interface GoalRecord {
  readonly id: string;
  readonly key: string;
  readonly displayName: string;
}

export interface StorePort {
  /** Where this store is, for messages: a path, or a redacted server address. */
  readonly location: string;
  /** Runs `work` in one write transaction (SQLite: BEGIN IMMEDIATE), committing when it resolves. */
  write<T>(work: (tx: StoreTx) => Promise<T>): Promise<T>;

  getTodo(goal: string, id: string): Promise<Todo | undefined>;
  listTodos(goal?: string): Promise<Todo[]>;
  activeLeaseOfOwner(owner: Owner): Promise<Lease | undefined>;
  /** The Owner's lease acquired last in chain order, with the Todo's highest epoch. */
  latestLeaseOfOwner(owner: Owner): Promise<{ lease: Lease; currentEpoch: number } | undefined>;
  leaseOfCapture(capture: string): Promise<Lease | undefined>;
  readReady(capture: string): Promise<StoredReady | undefined>;
  getCapture(capture: string): Promise<StoredCapture | undefined>;
  /** `launch_committed` and `launch_hooked` receipts, of one capture or all, oldest first. */
  launchReceiptRows(capture?: string): Promise<{ seq: number; doc: string }[]>;
  /** The Todo's newest `launch_committed` and `launch_hooked` receipts, newest first, at most `limit`. */
  launchReceiptsOfTodo(goal: string, todo: string, limit: number): Promise<{ seq: number; doc: string }[]>;
  /** The Todo's newest receipts of any kind, newest first, at most `limit` (the (goal, todo, seq) index): `show <todo>`. */
  receiptsOfTodo(goal: string, todo: string, limit: number): Promise<{ seq: number; doc: string }[]>;
  getSession(owner: Owner): Promise<SessionRecord | undefined>;
  listSessions(): Promise<SessionRecord[]>;
  listLeases(): Promise<Lease[]>;
  /**
   * How many leases are active (of `goal` only, when given): one count over the partial index
   * `leases_one_active_per_owner`, or `leases_one_active_per_todo` (goal, todo) for one Goal.
   */
  activeLeaseCount(goal?: string): Promise<number>;
  listCaptures(): Promise<StoredCapture[]>;
  // ---- live rows (issue 19): what status, the views and `todo list` read on every change, each an
  // indexed query whose cost follows the live rows or the page shown (test/integration/live-rows.test.ts).
  /** Active leases (of `goal` only, when given), newest acquisition first: the partial indexes of active leases. */
  activeLeases(goal?: string): Promise<Lease[]>;
  /** The leases of these captures, any status (leases_by_capture). */
  leasesOfCaptures(captures: readonly string[]): Promise<Lease[]>;
  /** The newest `limit` captures (of `goal` only, when given), newest first (captures_recent, captures_recent_of_goal). */
  recentCaptures(limit: number, goal?: string): Promise<StoredCapture[]>;
  /** These captures, by id, in no order. */
  capturesById(ids: readonly string[]): Promise<StoredCapture[]>;
  /** The ready captures of these captures, by id, in no order. */
  readyOfCaptures(ids: readonly string[]): Promise<StoredReady[]>;
  /**
   * Todos of one status (of `goal` only, when given) in list order (goal, created_at, id); with `limit`,
   * only the last `limit` of them, the newest (todos_by_status).
   */
  todosWithStatus(status: TodoStatus, goal?: string, limit?: number): Promise<Todo[]>;
  /**
   * The dependency edges of every open and blocked Todo (of `goal` only, when given), with each
   * dependency's status, ordered by (goal, todo, dependency): todos_by_status, then the edges' and the
   * Todos' primary keys. What `todo list` and the Todos view derive "waiting" from.
   */
  dependenciesOfLive(goal?: string): Promise<TodoDependency[]>;
  /**
   * `turnkeeper next`: the Goal's ready Todos, oldest first (created_at, id), at most `limit`: open, every
   * dependency done, and no active lease (todos_by_status in order; each test a primary-key or
   * partial-index probe).
   */
  readyTodos(goal: string, limit: number): Promise<Todo[]>;
  /** Newest first; with `goal`, only that Goal's receipts (by `receipt_index_by_goal`) and the store-wide ones (`isStoreWide`), each page by index. */
  receipts(page: ReceiptPage): Promise<ReceiptRow[]>;
  /** Stored hashes of complete subtrees of the receipt tree, in the order asked (undefined: no row). */
  treeHashes(keys: readonly TreeKey[]): Promise<(Uint8Array | undefined)[]>;
  /** The head row (seq and hash of the newest receipt), undefined for an empty chain. */
  chainHead(): Promise<ChainLink | undefined>;
  /** Walks the chain in one snapshot (and compares the store's anchor, where it has one). */
  verifyChain(after?: ChainLink): Promise<ChainReport>;
  health(): Promise<StoreHealth>;
  getMeta(key: string): Promise<string | undefined>;
  /** A networked store's own clock (ms), for the skew measurement; absent for a local file. */
  serverClock?(): Promise<number>;
  /** The seqs the last write appended at its COMMIT (StoreTx.appendAtCommit), once it committed. */
  appendedAtCommit?(): { readonly first: number; readonly last: number } | undefined;
  /**
   * A networked store's clock as its last write's BEGIN read it, bracketed by this process's Date.now()
   * before that BEGIN was sent and after its answer came: a skew measurement that costs no round trip.
   */
  lastClockSample?(): { readonly server: number; readonly sentAt: number; readonly answeredAt: number } | undefined;
  /** A networked store's server version, for doctor. */
  serverVersion?(): Promise<string>;
  /**
   * A networked store's change feed: calls `onChange` with each new chain head; resolves to a stop
   * function. `onMode` is told whether changes arrive live or are polled (and why), once known.
   */
  follow?(onChange: (headSeq: number | undefined) => void, pollMs?: number, onMode?: (mode: FeedMode) => void): Promise<() => void>;
  listGoals(): Promise<GoalRecord[]>;
  goalOfPlace(place: string): Promise<{ goal: string; checkout: string } | undefined>;
  /**
   * Whether this open connection still speaks for the store it opened: the same file (SQLite) and the
   * schema version it was opened at. A process that keeps a store open across requests (the warm hook
   * server: StoreCache in src/ledger/open.ts) asks before each one; a moved file or a migration by
   * another release means open it again, which then says what is wrong as a fresh open would.
   */
  stillCurrent(): Promise<boolean>;
  close(): void;
}
