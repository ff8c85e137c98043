// The store interface: everything the lifecycle, the CLI and the extension need from an authority.
// SQLite implements it today; a PostgreSQL authority for teams implements the same interface and must
// pass the same conformance suite (test/integration/authority.conformance.ts). Methods are async so
// that a networked authority fits without changing callers.
import type { Binding, BuiltCapture } from '../core/capture';
import type { ChainReport } from '../core/receipts';
import type { Lease } from '../core/lease';
import type { Agent, Owner } from '../core/ids';
import type { Preconditions } from '../core/ready';
import type { ReceiptFields } from '../core/receipts';
import type { FeedMode } from './port';
import type { TreeKey } from '../core/merkle';

export type TodoStatus = 'open' | 'done' | 'blocked';

export interface Todo {
  readonly goal: string;
  readonly id: string;
  readonly title: string;
  readonly body: string;
  readonly status: TodoStatus;
  readonly createdAt: number;
  readonly updatedAt: number;
  /** Why a person blocked it (`todo block --reason`); only while its status is `blocked`. */
  readonly blockReason?: string;
}

/**
 * One dependency edge (schema v5): `todo` waits until `dependency` is done. Whether a Todo waits is
 * derived from its edges and their statuses when read, never stored (docs/spec.md §3 "Dependencies").
 */
export interface TodoDependency {
  readonly goal: string;
  readonly todo: string;
  readonly dependency: string;
  /** The dependency's status as read. */
  readonly status: TodoStatus;
}

/** `todo block|unblock --after`: the edges added and removed (only those that changed), and what the Todo now waits on. */
export interface DependencyChange {
  readonly todo: Todo;
  readonly added: readonly string[];
  readonly removed: readonly string[];
  readonly waitingOn: readonly string[];
}

/** A dependency was refused: an id that is no Todo of the Goal, or an edge that would close a cycle. */
export class TodoDependencyError extends Error {
  constructor(
    readonly why: 'unknown_todo' | 'cycle',
    readonly goal: string,
    readonly todo: string,
    /** The unknown ids; or the cycle, from the Todo back to itself (`a`, `b`, `a`: a after b after a). */
    readonly ids: readonly string[],
  ) {
    super(
      why === 'unknown_todo'
        ? `no Todo ${ids.join(', ')} in ${goal}: a dependency must be a Todo of the same Goal (turnkeeper todo list)`
        : `${ids.join(' waits on ')}: that would be a cycle, so nothing was changed`,
    );
    this.name = 'TodoDependencyError';
  }
}

export interface StoredCapture {
  readonly id: string;
  readonly goal: string;
  readonly todo: string;
  readonly agent: Agent;
  readonly session: string;
  /** null for legacy or imported captures: readable, never executable. */
  readonly turn: string | null;
  readonly cwd: string;
  readonly binding: string;
  readonly canonical: string;
  readonly originalDigest: string;
  readonly op: string | null;
  readonly createdAt: number;
  /** The worktree root the capture ran in (its preconditions and its resume are this checkout's). */
  readonly checkout: string;
  /** The repository's common git directory; null outside git and for captures of the previous release. */
  readonly commonDir: string | null;
  /** The branch checked out at capture time (to recreate a removed worktree); null when detached or unknown. */
  readonly branch: string | null;
}

/** Where a hook ran, beside the Goal: what `[goal_changed]`, status and resume need. */
export interface Placement {
  /** Realpath of the worktree root (outside git: the directory). */
  readonly checkout: string;
  /** The repository's common git directory, or null outside git. */
  readonly commonDir: string | null;
  /** The registry key of the place: its common git directory, else the checkout. */
  readonly place: string;
  readonly goalKey: string;
  readonly displayName: string;
}

export interface StoredReady {
  readonly capture: string;
  readonly canonical: string;
  /** The exact bytes the hooks present. */
  readonly presentation: string;
  readonly readyDigest: string;
}

export interface ClaimInput {
  readonly capture: BuiltCapture;
  /** Where the hook ran and how the Todo was bound: stored beside the capture, never in its identity. */
  readonly cwd: string;
  readonly binding: Binding;
  /** The checkout and repository the hook ran in; absent in tests of the bare authority. */
  readonly placement?: Placement | undefined;
  readonly branch?: string | null | undefined;
  readonly owner: Owner;
  readonly preconditions: Preconditions;
  readonly ttlSeconds: number;
  /** Proof of life recorded in the same transaction, so a hook takes the write lock once. */
  readonly session?: SessionTouch | undefined;
}

/**
 * What a hook records of its session. `state`, when given, is the live state this event puts the
 * session in: stored (with the time) only when it differs from the stored one. `turnBase`, when
 * given, starts a turn: stored as is.
 */
export type SessionTouch = Omit<SessionRecord, 'firstHookAt' | 'lastHookAt' | 'state' | 'stateAt' | 'turnBase'> & {
  readonly state?: SessionState | undefined;
  readonly turnBase?: TurnBase | null | undefined;
};

/**
 * A session's live state from its own hooks (spec §9 "Live status"): `working` after a prompt or a
 * tool event, `waiting` after a notification or permission event, `stopped` after the stop event.
 * `exited` and `crashed` are never stored: status derives them from the launcher's liveness.
 */
export type SessionState = 'working' | 'waiting' | 'stopped';
export const SESSION_STATES: readonly SessionState[] = ['working', 'waiting', 'stopped'];

/** Where a session's current turn began: its prompt, with the checkout's git HEAD and tree digest then (null outside git, or when git failed). */
interface TurnBase {
  readonly turn: string | null;
  readonly at: number;
  readonly head: string | null;
  readonly tree: string | null;
}

export type ClaimResult =
  | { readonly kind: 'acquired'; readonly lease: Lease; readonly ready: StoredReady }
  | { readonly kind: 'replayed'; readonly lease: Lease; readonly ready: StoredReady | undefined }
  | { readonly kind: 'unknown_todo' }
  | { readonly kind: 'todo_not_open'; readonly status: TodoStatus }
  /**
   * `status` 'blocked': a person blocked it (`blockReason`, null when they gave none); 'open': a new lease
   * would not wait for its undone dependencies (`waitingOn`, also listed for a person's block).
   */
  | { readonly kind: 'todo_blocked'; readonly status: TodoStatus; readonly waitingOn: readonly string[]; readonly blockReason: string | null }
  | { readonly kind: 'capture_released'; readonly capture: string; readonly epoch: number }
  | { readonly kind: 'lease_held' | 'lease_expired_hold'; readonly holder: Lease; readonly holderCheckout?: string | undefined }
  /** The place last used another Goal: nothing is claimed until `turnkeeper goal move`. */
  | { readonly kind: 'goal_changed'; readonly previous: string; readonly current: string }
  /** The Owner already holds another Todo (a concurrent prompt of the same session won the race). */
  | { readonly kind: 'session_holds_other'; readonly held: Lease };

export type GoalMoveResult =
  | {
      readonly kind: 'moved';
      readonly todos: number;
      readonly leases: number;
      readonly captures: number;
      readonly renamed: readonly { from: string; to: string }[];
    }
  | { readonly kind: 'refused'; readonly why: 'same_goal' | 'unknown_goal' | 'todo_collision'; readonly todos?: readonly string[] };

export type RenewResult = { readonly kind: 'renewed'; readonly lease: Lease } | { readonly kind: 'skipped'; readonly why: string };

/**
 * How the one asking for a release was identified (spec §10): an agent's own environment
 * (CODEX_THREAD_ID, …), a self-declaration (`--owner`, TURNKEEPER_OWNER: anyone can type it), a
 * forced release, or a Todo status change. The receipt records this, never more than was proven.
 */
export type RequesterIdentification = 'agent_environment' | 'self_declared' | 'force' | 'holder_gone' | 'todo_status' | 'unidentified';

/**
 * The holder of a Todo's active lease is an agent Turnkeeper launched on this machine, and its process
 * is gone (spec §9 "Live status": `exited` or `crashed`), as the launcher of the one asking saw it.
 * It speaks for that lease only (its owner and epoch): a lease claimed again since is another's.
 */
export interface HolderGone {
  readonly owner: Owner;
  readonly epoch: number;
  readonly state: 'exited' | 'crashed';
  /** The launch receipt's id of the agent that is gone. */
  readonly launch: string | null;
}

export interface ReleaseRequest {
  readonly goal: string;
  readonly todo: string;
  readonly by?: Owner | undefined;
  readonly identifiedBy: RequesterIdentification;
  /** The operating-system account that ran the command (who asked, whatever they claimed). */
  readonly requester?: string | undefined;
  readonly force: boolean;
  readonly reason?: string | undefined;
  /** Set by `todo done` when the holder's launched agent is gone: no `force` is needed then. */
  readonly holderGone?: HolderGone | undefined;
}
export type ReleaseResult =
  | { readonly kind: 'released'; readonly lease: Lease }
  | { readonly kind: 'refused'; readonly why: 'no_active_lease' | 'not_owner' | 'force_needs_reason'; readonly lease?: Lease | undefined };

/**
 * Who asks for a status change (`todo done`): one that releases the Todo's active lease is decided as
 * a release is, so another Owner's lease needs `force` and a reason. Omitted: no one identified.
 */
export type StatusChangeRequest = Omit<ReleaseRequest, 'goal' | 'todo'>;
export type StatusChangeResult =
  | { readonly kind: 'changed'; readonly todo: Todo; readonly released?: Lease }
  /** Nothing was changed: the Todo keeps its status and `lease` stays active. */
  | { readonly kind: 'refused'; readonly why: 'not_owner' | 'force_needs_reason'; readonly todo: Todo; readonly lease: Lease }
  /** Nothing was changed: the Todo was done already when the write read it (a second finish, a run twice). */
  | { readonly kind: 'already_done'; readonly todo: Todo };

export interface SessionRecord {
  readonly owner: Owner;
  readonly agent: Agent;
  readonly session: string;
  readonly goal: string;
  readonly cwd: string;
  readonly transcriptPath: string | null;
  readonly firstHookAt: number;
  readonly lastHookAt: number;
  /** Null: no hook since the store learnt live states, or only a SessionStart. */
  readonly state: SessionState | null;
  readonly stateAt: number | null;
  readonly turnBase: TurnBase | null;
}

export interface ReceiptRow {
  readonly seq: number;
  readonly doc: string;
  readonly hash: string | null;
}

/** A page of receipts, newest first: `limit` rows with seq < `beforeSeq`, of one Goal (and the store-wide ones) when `goal` is given. */
export interface ReceiptPage {
  readonly beforeSeq?: number | undefined;
  readonly limit: number;
  readonly goal?: string | undefined;
}

export interface LaunchReceipt {
  readonly seq: number;
  readonly kind: 'launch_committed' | 'launch_hooked';
  /** The Goal the receipt names (the Goal of its Todo when it was written). */
  readonly goal?: string;
  /** The resumed capture; null for a start (`turnkeeper start`), which claims at its first prompt. */
  readonly capture: string | null;
  readonly todo: string | null;
  readonly agent: string | null;
  /** The launch nonce the launcher put in the agent's environment (TURNKEEPER_LAUNCH). */
  readonly launch: string | null;
  readonly at: number;
  /** A `launch_committed` receipt's process facts (pid, host, boot, start time), for liveness. */
  readonly process?: PreviousLaunch;
}

export interface ClockSkew {
  /** Server minus client, in ms (positive: the client is behind). */
  readonly skewMs: number;
  /** The measurement's uncertainty: half the round trip. */
  readonly boundMs: number;
  readonly roundTripMs: number;
}

export interface StoreHealth {
  readonly path: string;
  readonly schemaVersion: number;
  readonly integrity: string;
  readonly journalMode: string;
  readonly receipts: number;
  /** SQLite: whether the write lock could be taken within a second (doctor); absent for a team server. */
  readonly writeLock?: 'free' | 'busy';
}

/** The store cannot be used now (locked past the wait, unreadable, full, a foreign log, unreachable). */
export class StoreUnavailableError extends Error {
  constructor(
    readonly detail: string,
    options?: { cause?: unknown },
  ) {
    super(`store unavailable: ${detail}`, options);
    this.name = 'StoreUnavailableError';
  }
}

/**
 * A networked store lost the connection after COMMIT was sent: the transaction may or may not have
 * committed. Callers re-read and decide (spec §4); they never redo a write blindly.
 */
export class AmbiguousCommitError extends StoreUnavailableError {
  constructor(location: string, options?: { cause?: unknown }) {
    super(`the connection to ${location} was lost while committing; the outcome is unknown until re-read`, options);
    this.name = 'AmbiguousCommitError';
  }
}

/** The store was written by a newer Turnkeeper; it is refused, never rewritten. */
export class SchemaTooNewError extends Error {
  constructor(
    readonly found: number,
    readonly supported: number,
  ) {
    super(
      `this database has schema version ${found}, but this Turnkeeper understands up to ${supported}; ` + 'upgrade Turnkeeper (the database was not changed)',
    );
    this.name = 'SchemaTooNewError';
  }
}

/** The place (repository) last used another Goal: `turnkeeper goal move --from <previous>` first. */
export class GoalChangedError extends Error {
  constructor(
    readonly previous: string,
    readonly current: string,
  ) {
    super(`this repository used Goal ${previous} until now, and its key now gives ${current}; run: turnkeeper goal move --from ${previous}`);
    this.name = 'GoalChangedError';
  }
}

export class TodoExistsError extends Error {
  constructor(
    readonly goal: string,
    readonly todo: string,
  ) {
    super(`Todo ${todo} already exists in ${goal}`);
    this.name = 'TodoExistsError';
  }
}

export interface Authority {
  /** Where the store is, for messages: a file path, or a server address without credentials. */
  readonly location: string;
  /**
   * With a placement, refused (`GoalChangedError`) when that place last used another Goal; else the place
   * is remembered. `after`: the Todos it waits on (`TodoDependencyError` for an unknown id or itself).
   */
  addTodo(
    todo: { goal: string; id: string; title: string; body: string; after?: readonly string[] | undefined },
    now: number,
    placement?: Placement,
  ): Promise<Todo>;
  getTodo(goal: string, id: string): Promise<Todo | undefined>;
  listTodos(goal?: string): Promise<Todo[]>;
  /**
   * Marking a Todo done or blocked also releases its active lease (one transaction); another Owner's
   * only with `force` and a reason, as `release` (refused: nothing changes). Undefined: no such Todo.
   */
  /**
   * `finished` (todo done with a git strategy): a `todo_finished` receipt with this detail, in the same
   * transaction, after the status change and before the release.
   */
  setTodoStatus(
    goal: string,
    id: string,
    status: TodoStatus,
    now: number,
    request?: StatusChangeRequest,
    finished?: ReceiptFields['detail'],
  ): Promise<StatusChangeResult | undefined>;
  /** `todo block --reason`: status `blocked` with the reason, decided and recorded as setTodoStatus (it releases the active lease). */
  blockTodo(goal: string, id: string, reason: string, now: number, request?: StatusChangeRequest): Promise<StatusChangeResult | undefined>;
  /**
   * Adds and removes dependency edges of one Todo in one transaction with a `todo_dependencies_changed`
   * receipt (none when nothing changed). `TodoDependencyError` for an unknown id, the Todo itself, or a
   * cycle: nothing is changed then. Undefined: no such Todo.
   */
  changeDependencies(
    goal: string,
    id: string,
    change: { readonly add?: readonly string[]; readonly remove?: readonly string[] },
    now: number,
  ): Promise<DependencyChange | undefined>;
  /** The edges of every open and blocked Todo (of `goal`), each with its dependency's status (port.ts). */
  dependenciesOfLive(goal?: string): Promise<TodoDependency[]>;
  /** `turnkeeper next`: open, every dependency done, no active lease; oldest first, at most `limit`. */
  readyTodos(goal: string, limit: number): Promise<Todo[]>;

  activeLeaseOfOwner(owner: Owner): Promise<Lease | undefined>;
  /** The Owner's most recent lease in any status, with the Todo's highest epoch: what fencing needs. */
  latestLeaseOfOwner(owner: Owner): Promise<{ lease: Lease; currentEpoch: number } | undefined>;
  leaseOfCapture(captureId: string): Promise<Lease | undefined>;
  readReady(captureId: string): Promise<StoredReady | undefined>;
  getCapture(captureId: string): Promise<StoredCapture | undefined>;
  /** Launch receipts (`launch_committed`, `launch_hooked`) naming this capture, oldest first (spec §2 rule 3). */
  launchReceipts(captureId: string): Promise<LaunchReceipt[]>;
  /** Every `launch_committed` with whether a hook of that launch ever reported (proof of life). */
  launches(): Promise<(LaunchReceipt & { readonly hooked: boolean })[]>;

  /** The Goal a place (a repository's common git directory, or a directory outside git) last used. */
  goalOfPlace(place: string): Promise<{ goal: string; checkout: string } | undefined>;
  /** Path-keyed Goals of a previous release's store that the upgrade could not map (Todo ids collided). */
  legacyGoalsLeft(): Promise<string[]>;
  /** Goal ids with the key and display name they were last seen with. */
  listGoals(): Promise<{ id: string; key: string; displayName: string }[]>;
  /**
   * `turnkeeper goal move --from <old>`: every Todo, lease (open or not) and capture of Goal `from`
   * becomes Goal `to`'s, in one transaction with a `goal_moved` receipt; refused when a Todo id exists
   * in both. The place is remembered under `to`.
   */
  moveGoal(from: string, to: Placement & { readonly goal: string }, now: number, options?: { readonly renameCollidingWith?: string }): Promise<GoalMoveResult>;

  /** Capture + lease + ready capture + receipts in one write transaction, or a typed refusal. */
  claim(input: ClaimInput, now: number): Promise<ClaimResult>;
  renew(owner: Owner, now: number, ttlSeconds: number): Promise<RenewResult>;
  release(request: ReleaseRequest, now: number): Promise<ReleaseResult>;
  appendReceipt(fields: ReceiptFields, now: number, session?: SessionTouch): Promise<{ seq: number; hash: string }>;

  /** Proof of life; writes only when the stored time is older than `minIntervalMs`. */
  touchSession(record: SessionTouch, now: number, minIntervalMs: number): Promise<void>;
  getSession(owner: Owner): Promise<SessionRecord | undefined>;
  listSessions(): Promise<SessionRecord[]>;

  listLeases(): Promise<Lease[]>;
  /** How many leases are active, of `goal` only when given (the editor's status bar, before any view reads the rest): one indexed count. */
  activeLeaseCount(goal?: string): Promise<number>;
  listCaptures(): Promise<StoredCapture[]>;
  /** The live rows status and the views read (src/store/port.ts has each one's index). */
  activeLeases(goal?: string): Promise<Lease[]>;
  leasesOfCaptures(captures: readonly string[]): Promise<Lease[]>;
  recentCaptures(limit: number, goal?: string): Promise<StoredCapture[]>;
  capturesById(ids: readonly string[]): Promise<StoredCapture[]>;
  readyOfCaptures(ids: readonly string[]): Promise<StoredReady[]>;
  todosWithStatus(status: TodoStatus, goal?: string, limit?: number): Promise<Todo[]>;
  /**
   * Newest first, `limit` rows with seq < `beforeSeq` (all when undefined). With `goal`, only the
   * receipts `receipt_index` files under that Goal (it follows `goal move`) and the store-wide ones
   * (`isStoreWide`: checkpoints, clock skews, imports, Goal `-`); a row past the index's last row is kept. Each page is
   * read by index, newest first (`receipt_index_by_goal`, `receipt_index_by_kind`): it costs the page, not the chain.
   */
  receipts(page: ReceiptPage): Promise<ReceiptRow[]>;
  /** Stored hashes of complete subtrees of the receipts' Merkle tree (src/core/merkle.ts), undefined where none. */
  treeHashes(keys: readonly TreeKey[]): Promise<(Uint8Array | undefined)[]>;
  /** Walks the whole chain, or only the rows after a prefix already verified (`after`). */
  verifyChain(after?: { seq: number; hash: string }): Promise<ChainReport>;
  health(): Promise<StoreHealth>;
  /**
   * For a networked store: the client's clock against the server's (one server read bracketed by two
   * local reads; the bound is half the round trip). Undefined for a local store, which has one clock.
   */
  measureClockSkew(clientClock: () => number): Promise<ClockSkew | undefined>;
  /**
   * Records `clock_skew_detected` when |skew| exceeds 1 s plus the bound, at most once an hour per host
   * (judged on the server's clock); returns whether it wrote.
   */
  noteClockSkew(skew: ClockSkew, host: string, clientNow: number): Promise<boolean>;
  /** The server's version string, for doctor; undefined for a local store. */
  serverVersion(): Promise<string | undefined>;
  /**
   * Follows the store's changes made by other processes and machines: a team server's LISTEN/NOTIFY
   * feed (with polling while it is down, or for good where notifications do not reach it: `onMode`
   * says which). Undefined for a local file, which the caller watches itself.
   */
  follow(onChange: (headSeq: number | undefined) => void, onMode?: (mode: FeedMode) => void): Promise<(() => void) | undefined>;
  close(): void;

  /**
   * Spec §6, exclusivity and freshness: in ONE write transaction, re-check what resume checked
   * (the capture's lease is active, same Owner, epoch and version) and that the capture's latest
   * committed launch is no longer alive, then append `launch_committed`; otherwise append
   * `launch_refused` with the reason and commit nothing else. The caller kills the parked agent on
   * a refusal: it never runs.
   */
  commitLaunch(request: LaunchCommit, now: number): Promise<LaunchCommitResult>;
  /**
   * Spec §7 "Start", in ONE write transaction: the Todo exists and is open, the place still uses
   * the Goal, nobody holds the Todo's lease, and the Todo's latest start is no longer alive; then
   * append the start's `launch_committed` (or, without one, nothing: the check before attestation).
   * A refusal appends `launch_refused` and commits nothing else.
   */
  commitStart(request: StartCommit, now: number): Promise<StartCommitResult>;
  /** The Todo's newest `launch_committed` and `launch_hooked` receipts, newest first, at most `limit` (indexed). */
  launchReceiptsOfTodo(goal: string, todo: string, limit: number): Promise<{ seq: number; doc: string }[]>;
  /** The Todo's newest receipts of any kind, newest first, at most `limit` (indexed): `show <todo>`. */
  receiptsOfTodo(goal: string, todo: string, limit: number): Promise<{ seq: number; doc: string }[]>;
}

export interface StartCommit {
  readonly goal: string;
  readonly todo: string;
  /** The repository's place (its common git directory, or the checkout): it must still use `goal`. */
  readonly place: string;
  /** The start's `launch_committed`; absent for the check made before attestation, which appends nothing when it passes. */
  readonly receipt?: ReceiptFields | undefined;
  /**
   * What a refusal receipt's detail carries besides `reason` and `why` (the start mark, agent, nonce,
   * digest, pid). Absent: a refusal is answered but not recorded (the editor's check before it opens a terminal).
   */
  readonly refusalDetail?: Readonly<Record<string, string | number | boolean | null>> | undefined;
  /** Is the Todo's latest start still running? Decided by the launcher, as for commitLaunch. */
  readonly isLive: (previous: PreviousLaunch) => boolean;
}

export type StartCommitRefusal =
  'unknown_todo' | 'todo_not_open' | 'todo_blocked' | 'goal_changed' | 'lease_held' | 'lease_expired_hold' | 'launch_in_progress';

export type StartCommitResult =
  | { readonly kind: 'committed'; readonly seq: number; readonly hash: string }
  | { readonly kind: 'clear' }
  | {
      readonly kind: 'refused';
      readonly reason: StartCommitRefusal;
      readonly why: string;
      readonly status?: TodoStatus | undefined;
      /** `todo_blocked`: the undone dependencies, and a person's block reason (null: none given or not blocked by a person). */
      readonly waitingOn?: readonly string[] | undefined;
      readonly blockReason?: string | null | undefined;
      readonly previousGoal?: string | undefined;
      /** The Todo's active lease (`lease_held`, `lease_expired_hold`) and the checkout its capture ran in. */
      readonly holder?: Lease | undefined;
      readonly holderCheckout?: string | undefined;
      /** The start still alive (`launch_in_progress`). */
      readonly previous?: PreviousLaunch | undefined;
    };

export interface LaunchCommit {
  /** The lease as resume checked it. */
  readonly expected: { readonly capture: string; readonly owner: Owner; readonly epoch: number; readonly version: number };
  /** The `launch_committed` receipt; its detail names pid, host, boot and pidStart for the next launch's liveness test. */
  readonly receipt: ReceiptFields;
  /**
   * Is that earlier launch's process still alive? Decided by the launcher, called inside the
   * transaction (the store reads no /proc). Only the latest launch is asked: each launch was
   * committed only after its predecessor was found dead, so the earlier ones are dead too.
   */
  readonly isLive: (previous: PreviousLaunch) => boolean;
}

/** What a `launch_committed` receipt says about its process; null where an older receipt lacks it. */
export interface PreviousLaunch {
  readonly seq: number;
  readonly launch: string | null;
  readonly pid: number | null;
  /** The host name, for display. */
  readonly host: string | null;
  /** The machine's identity (/etc/machine-id, else the host name): what liveness compares. Null in receipts written before it. */
  readonly machine: string | null;
  readonly boot: string | null;
  readonly pidStart: string | null;
}

type LaunchCommitRefusal = 'capture_released' | 'lease_moved' | 'launch_in_progress';

export type LaunchCommitResult =
  | { readonly kind: 'committed'; readonly seq: number; readonly hash: string }
  | {
      readonly kind: 'refused';
      readonly reason: LaunchCommitRefusal;
      /** One sentence for the guidance and the `launch_refused` receipt. */
      readonly why: string;
      /** The capture's lease as the transaction found it. */
      readonly lease?: Lease | undefined;
      /** The Todo's active lease when it belongs to another capture (`lease_moved`). */
      readonly holder?: Lease | undefined;
      /** The launch still alive (`launch_in_progress`). */
      readonly previous?: PreviousLaunch | undefined;
    };
