// The policy of the store, once for every authority (spec §2, §4, §5): what a claim, a renewal, a
// release and a launch commit decide and record, and how receipts chain. It runs the pure decisions
// of src/core over the row port (src/store/port.ts) inside one write transaction each, so a SQLite
// and a PostgreSQL authority differ only in their row operations.
import { parseReceipt, prepareReceipt, type ReceiptFields } from '../core/receipts';
import {
  acquiredLease,
  decideClaim,
  decideRelease,
  decideRenewal,
  holderIsGone,
  isExpired,
  type ClaimDecision,
  type ClaimRequest,
  type ClaimState,
  type Lease,
} from '../core/lease';
import { buildReadyCapture, type HistoryEntry } from '../core/ready';
import { isTodoId, type Owner } from '../core/ids';
import { goalIdOf, localKeyOf } from '../core/goal';
import {
  AmbiguousCommitError,
  GoalChangedError,
  TodoDependencyError,
  TodoExistsError,
  type Authority,
  type ClaimInput,
  type ClockSkew,
  type ClaimResult,
  type GoalMoveResult,
  type Placement,
  type LaunchCommit,
  type LaunchCommitResult,
  type LaunchReceipt,
  type PreviousLaunch,
  type ReceiptPage,
  type StartCommit,
  type StartCommitResult,
  type ReleaseRequest,
  type ReleaseResult,
  type RenewResult,
  type RequesterIdentification,
  type SessionTouch,
  type StatusChangeRequest,
  type StatusChangeResult,
  type Todo,
  type DependencyChange,
  type TodoDependency,
  type TodoStatus,
} from '../store/authority';
import type { TreeKey } from '../core/merkle';
import {
  appendPreparedNow,
  decisionMoved,
  type ClaimSnapshot,
  type PreparedAppend,
  type FeedMode,
  type HeldElsewhere,
  type StorePort,
  type StoreTx,
} from '../store/port';
import { faultPoint } from '../store/faults';
import { latestStartOfTodo, startOfCapture } from './starts';
import type { Checkpoints } from './checkpoints';

const HISTORY_LENGTH = 5;

/**
 * Appends receipts in the open transaction, in order: each is prepared (its canonical text) first, then
 * the head is read (on a team store that read locks it until COMMIT) and each is put after the one
 * before. Receipts a transaction writes together are appended in one call, so no canonical text is
 * made while the head is locked (core/receipts.ts `prepareReceipt` says why). Returns the last.
 */
async function append(tx: StoreTx, fields: ReceiptFields | readonly ReceiptFields[], now: number): Promise<{ seq: number; hash: string }> {
  return appendPreparedNow(tx, prepared(Array.isArray(fields) ? fields : [fields], now));
}

/** Each receipt prepared (its canonical text) with its lookup columns, before the head is read. */
const prepared = (fields: readonly ReceiptFields[], now: number): PreparedAppend[] =>
  fields.map((one) => ({ receipt: prepareReceipt(one, now), goal: one.goal, todo: one.todo ?? null, capture: one.capture ?? null, kind: one.kind }));

/**
 * Appends receipts as the transaction's last act, after the chain head as it is at COMMIT (port.ts
 * `appendAtCommit`): prepared here, put after the head by the store. With `expect`, only if it still holds then.
 */
async function appendAtCommit(tx: StoreTx, fields: readonly ReceiptFields[], now: number, expect?: HeldElsewhere): Promise<void> {
  await tx.appendAtCommit(prepared(fields, now), expect);
}

interface ReleaseRecord {
  readonly reason: string;
  readonly forced: boolean;
  readonly identifiedBy: RequesterIdentification;
  readonly requestedBy?: Owner | undefined;
  readonly requester?: string | undefined;
}

/** Writes a release (compare-and-set on the version it read) and its receipt. */
async function releaseIn(tx: StoreTx, lease: Lease, why: ReleaseRecord, now: number): Promise<Lease> {
  const released: Lease = { ...lease, status: 'released' };
  // The Todo row is locked, so no other release or claim of it runs meanwhile; a renewal by the holder
  // (which locks only the lease) can still have moved the version. That is a conflict to decide again
  // from fresh reads, as a serialization failure is (a team store retries the transaction), never an
  // internal error.
  if (!(await tx.updateLease(lease, released, { at: now, reason: why.reason }))) throw decisionMoved(`lease ${lease.todo} epoch ${lease.epoch}`);
  await append(
    tx,
    {
      kind: 'lease_released',
      goal: lease.goal,
      todo: lease.todo,
      capture: lease.capture,
      owner: lease.owner,
      lease: { epoch: lease.epoch, version: lease.version },
      // Who asked and how they were identified, never more: `requestedBy` is only what was proven
      // (agent environment) or claimed (self_declared); `owner` above is the lease's holder.
      detail: {
        reason: why.reason,
        forced: why.forced,
        identifiedBy: why.identifiedBy,
        requestedBy: why.requestedBy ?? null,
        requester: why.requester ?? null,
      },
    },
    now,
  );
  return released;
}

/** Each id once, in the order given. */
const once = (ids: readonly string[]): string[] => [...new Set(ids)];

/**
 * Refuses dependencies of `todo` on ids that are no Todo of the Goal, on itself, or that would close a
 * cycle: a walk of the edges from each new dependency, in this transaction (a team server locks every
 * Todo the walk visits, port.ts `dependenciesOf`), that meets `todo` again names the cycle.
 */
async function checkDependencies(tx: StoreTx, goal: string, todo: string, dependencies: readonly string[]): Promise<void> {
  const unknown: string[] = [];
  for (const id of dependencies) if (id !== todo && !(await tx.todo(goal, id))) unknown.push(id);
  if (unknown.length > 0) throw new TodoDependencyError('unknown_todo', goal, todo, unknown);
  if (dependencies.includes(todo)) throw new TodoDependencyError('cycle', goal, todo, [todo, todo]);
  // parent.get(x): the Todo that waits on x on the path walked from `todo` (undefined: a new dependency).
  const parent = new Map<string, string | undefined>(dependencies.map((id) => [id, undefined]));
  let frontier = [...dependencies];
  while (frontier.length > 0) {
    const next: string[] = [];
    for (const edge of await tx.dependenciesOf(goal, frontier, true)) {
      if (edge.dependency === todo) {
        const path = [edge.todo];
        for (let at = parent.get(edge.todo); at !== undefined; at = parent.get(at)) path.unshift(at);
        throw new TodoDependencyError('cycle', goal, todo, [todo, ...path, todo]);
      }
      if (parent.has(edge.dependency)) continue;
      parent.set(edge.dependency, edge.todo);
      next.push(edge.dependency);
    }
    frontier = next;
  }
}

/** The undone dependencies among these edges, in id order. */
const undone = (edges: readonly TodoDependency[]): string[] =>
  edges
    .filter((edge) => edge.status !== 'done')
    .map((edge) => edge.dependency)
    .sort();

/** decideClaim's inputs from a claim's snapshot. */
const claimStateOf = (state: ClaimSnapshot): ClaimState => ({
  active: state.active,
  lastEpoch: state.lastEpoch,
  recorded: state.recorded && { capture: state.recorded.capture, epoch: state.recorded.epoch, leaseStatus: state.recorded.status },
  ownerHolds: state.ownerHolds,
});

/**
 * The claim's decision when it is a refusal because another session holds the open Todo (lease_held,
 * lease_expired_hold), decided in rule 6's order from `state`; undefined for every other outcome.
 */
function heldElsewhere(state: ClaimSnapshot, request: ClaimRequest, now: number): Extract<ClaimDecision, { holder: Lease }> | undefined {
  if (state.todo?.status !== 'open') return undefined;
  const decision = decideClaim(claimStateOf(state), request, now);
  return decision.kind === 'refuse' && (decision.reason === 'lease_held' || decision.reason === 'lease_expired_hold') ? decision : undefined;
}

export class Ledger implements Authority {
  /**
   * `checkpoints`: when given (the factory's stores), every write transaction goes through it, so a
   * transaction whose receipts cross a checkpoint interval also signs the head (./checkpoints.ts), and
   * `verifyChain` compares the witness too. Tests' bare ledgers have none.
   */
  constructor(
    readonly rows: StorePort,
    readonly checkpoints?: Checkpoints,
  ) {}

  /** One write transaction: through the checkpoints when there are some, else straight to the rows. */
  private write<T>(work: (tx: StoreTx) => Promise<T>): Promise<T> {
    return this.checkpoints ? this.checkpoints.write(work) : this.rows.write(work);
  }

  get location(): string {
    return this.rows.location;
  }

  addTodo(
    todo: { goal: string; id: string; title: string; body: string; after?: readonly string[] | undefined },
    clientNow: number,
    placement?: Placement,
  ): Promise<Todo> {
    return this.write(async (tx) => {
      const now = await tx.clock(clientNow);
      if (placement) {
        const known = await tx.goalOfPlace(placement.place);
        if (known && known.goal !== todo.goal) throw new GoalChangedError(known.goal, todo.goal);
        if (!known) {
          await tx.rememberPlace(placement.place, todo.goal, placement.checkout, now);
          await tx.rememberGoal({ id: todo.goal, key: placement.goalKey, displayName: placement.displayName });
        }
      }
      if (await tx.todo(todo.goal, todo.id)) throw new TodoExistsError(todo.goal, todo.id);
      const after = once(todo.after ?? []);
      // A new Todo has no dependants, so only itself can close a cycle; checked all the same.
      await checkDependencies(tx, todo.goal, todo.id, after);
      const stored: Todo = { goal: todo.goal, id: todo.id, title: todo.title, body: todo.body, status: 'open', createdAt: now, updatedAt: now };
      await tx.insertTodo(stored);
      await tx.insertDependencies(todo.goal, todo.id, after, now);
      await append(tx, { kind: 'todo_added', goal: todo.goal, todo: todo.id, ...(after.length > 0 ? { detail: { after: after.join(' ') } } : {}) }, now);
      return stored;
    });
  }

  setTodoStatus(
    goal: string,
    id: string,
    status: TodoStatus,
    clientNow: number,
    request: StatusChangeRequest = { identifiedBy: 'unidentified', force: false },
    finished?: ReceiptFields['detail'],
  ): Promise<StatusChangeResult | undefined> {
    return this.changeStatus(goal, id, status, clientNow, request, undefined, finished);
  }

  blockTodo(
    goal: string,
    id: string,
    reason: string,
    clientNow: number,
    request: StatusChangeRequest = { identifiedBy: 'unidentified', force: false },
  ): Promise<StatusChangeResult | undefined> {
    return this.changeStatus(goal, id, 'blocked', clientNow, request, reason);
  }

  changeDependencies(
    goal: string,
    id: string,
    change: { readonly add?: readonly string[]; readonly remove?: readonly string[] },
    clientNow: number,
  ): Promise<DependencyChange | undefined> {
    return this.write(async (tx): Promise<DependencyChange | undefined> => {
      const now = await tx.clock(clientNow);
      const todo = await tx.todo(goal, id);
      if (!todo) return undefined;
      const had = new Set((await tx.dependenciesOf(goal, [id])).map((edge) => edge.dependency));
      const added = once(change.add ?? []).filter((dependency) => !had.has(dependency));
      const removed = once(change.remove ?? []).filter((dependency) => had.has(dependency) && !added.includes(dependency));
      await checkDependencies(tx, goal, id, added);
      if (added.length === 0 && removed.length === 0) return { todo, added, removed, waitingOn: undone(await tx.dependenciesOf(goal, [id])) };
      await tx.insertDependencies(goal, id, added, now);
      await tx.deleteDependencies(goal, id, removed);
      const waitingOn = undone(await tx.dependenciesOf(goal, [id]));
      await append(
        tx,
        { kind: 'todo_dependencies_changed', goal, todo: id, detail: { added: added.join(' '), removed: removed.join(' '), waitingOn: waitingOn.join(' ') } },
        now,
      );
      return { todo, added, removed, waitingOn };
    });
  }

  dependenciesOfLive(goal?: string): Promise<TodoDependency[]> {
    return this.rows.dependenciesOfLive(goal);
  }

  readyTodos(goal: string, limit: number): Promise<Todo[]> {
    return this.rows.readyTodos(goal, limit);
  }

  private changeStatus(
    goal: string,
    id: string,
    status: TodoStatus,
    clientNow: number,
    request: StatusChangeRequest,
    blockReason: string | undefined,
    finished?: ReceiptFields['detail'],
  ): Promise<StatusChangeResult | undefined> {
    return this.write(async (tx): Promise<StatusChangeResult | undefined> => {
      const now = await tx.clock(clientNow);
      const todo = await tx.todo(goal, id);
      if (!todo) return undefined;
      // Read with the Todo's row locked: of two finishes (two checkouts, a run twice) one records
      // done and its todo_finished, the other finds it done and records nothing.
      if (status === 'done' && todo.status === 'done') return { kind: 'already_done', todo };
      // A status other than open releases the active lease: decided as `release` decides, before
      // anything is written, so another Owner's lease needs force and a reason, and a refusal changes
      // nothing (the Todo keeps its status, the lease stays active).
      const active = status === 'open' ? undefined : await tx.activeLeaseOfTodo(goal, id);
      let record: ReleaseRecord | undefined;
      if (active) {
        const decision = decideRelease(active, request);
        if (decision.kind === 'refuse')
          return { kind: 'refused', why: decision.why === 'force_needs_reason' ? decision.why : 'not_owner', todo, lease: active };
        const byHolder = request.by === active.owner;
        const gone = !byHolder && !request.force && holderIsGone(active, request.holderGone) ? request.holderGone : undefined;
        record = {
          reason: request.reason?.trim() || (gone ? `todo_${status}: its launched agent ${gone.state}` : `todo_${status}`),
          forced: !byHolder && !gone,
          identifiedBy: byHolder ? request.identifiedBy : gone ? 'holder_gone' : 'force',
          requestedBy: request.by,
          requester: request.requester,
        };
      }
      await tx.setTodoStatus(goal, id, status, now, blockReason ?? null);
      await append(
        tx,
        {
          kind: 'todo_status_changed',
          goal,
          todo: id,
          detail: { from: todo.status, to: status, ...(blockReason !== undefined ? { reason: blockReason } : {}) },
        },
        now,
      );
      if (finished) await append(tx, { kind: 'todo_finished', goal, todo: id, detail: finished }, now);
      const released = active && record ? await releaseIn(tx, active, record, now) : undefined;
      const { blockReason: _previous, ...rest } = todo;
      const changed: Todo = { ...rest, status, updatedAt: now, ...(status === 'blocked' && blockReason ? { blockReason } : {}) };
      return { kind: 'changed', todo: changed, ...(released ? { released } : {}) };
    });
  }

  async claim(input: ClaimInput, clientNow: number): Promise<ClaimResult> {
    try {
      return await this.claimOnce(input, clientNow);
    } catch (error) {
      if (!(error instanceof AmbiguousCommitError)) throw error;
      // The COMMIT's answer was lost (spec §4): re-read and decide. A claim is idempotent per Turn: if
      // it committed, the Turn's recorded claim is found and replayed; if not, it is decided afresh.
      return this.claimOnce(input, clientNow);
    }
  }

  private claimOnce(input: ClaimInput, clientNow: number): Promise<ClaimResult> {
    faultPoint('claim.before_transaction');
    return this.write(async (tx): Promise<ClaimResult> => {
      const now = await tx.clock(clientNow);
      const { capture, owner } = input;
      if (input.session) await tx.upsertSession(input.session, now);
      const doc = capture.document;
      const refusal = (detail: Record<string, string | number>, extra: Partial<ReceiptFields> = {}): ReceiptFields => ({
        kind: 'claim_refused',
        goal: doc.goal,
        todo: doc.todo,
        owner,
        op: capture.op,
        detail,
        ...extra,
      });
      const refuse = (detail: Record<string, string | number>, extra: Partial<ReceiptFields> = {}) => append(tx, refusal(detail, extra), now);

      // A place (repository) whose Goal key changed under it (an origin added, `goal init` later) would
      // silently split one repository into two Goals: refuse until `turnkeeper goal move`.
      const placement = input.placement;
      // Everything the claim decides from, in one read (port.ts `claimState`), taken without a lock.
      const snapshot = await tx.claimState(doc, owner, placement?.place);
      if (placement) {
        const known = snapshot.placeGoal;
        if (known && known.goal !== doc.goal) {
          await refuse({ reason: 'goal_changed', previous: known.goal });
          return { kind: 'goal_changed', previous: known.goal, current: doc.goal };
        }
        if (!known) {
          await tx.rememberPlace(placement.place, doc.goal, placement.checkout, now);
          await tx.rememberGoal({ id: doc.goal, key: placement.goalKey, displayName: placement.displayName });
        }
      }

      // A claim refused because another session holds the Todo changes no row, and under a burst most
      // claims are that (every prompt naming a held Todo). It is decided from one unlocked read and
      // recorded once the chain head is locked and what it was decided from still holds there (port.ts
      // `HeldElsewhere`): no lease or Todo changes without a receipt, so none can commit in between.
      // Those claims never queue on the Todo's row behind each other, each holding it while it waits
      // for the head (docs/testing.md, "The burst"). Every other outcome is decided with the row locked.
      const request = { owner, capture: capture.captureId, op: capture.op };
      const seen = heldElsewhere(snapshot, request, now);
      if (seen) {
        const holderCheckout = snapshot.activeCheckout;
        await appendAtCommit(
          tx,
          [
            refusal(
              { reason: seen.reason, holder: seen.holder.owner, holderEpoch: seen.holder.epoch, ...(holderCheckout ? { holderCheckout } : {}) },
              { capture: capture.captureId },
            ),
          ],
          now,
          { turn: doc, owner, holder: seen.holder },
        );
        return { kind: seen.reason, holder: seen.holder, holderCheckout };
      }

      // Rule 6, in its order: the Todo first, then the operation, then the lease. The Todo row is
      // locked first, and everything read again after the lock (claims of one Todo decide in turn).
      const state = await tx.claimState(doc, owner, undefined, { lockTodo: true });
      const todo = state.todo;
      if (!todo) {
        await refuse({ reason: 'unknown_todo' });
        return { kind: 'unknown_todo' };
      }
      if (todo.status === 'blocked') {
        const waitingOn = undone(await tx.dependenciesOf(doc.goal, [todo.id]));
        const reason = todo.blockReason ?? null;
        await refuse({
          reason: 'todo_blocked',
          status: 'blocked',
          ...(reason ? { blockReason: reason } : {}),
          ...(waitingOn.length > 0 ? { waitingOn: waitingOn.join(' ') } : {}),
        });
        return { kind: 'todo_blocked', status: 'blocked', waitingOn, blockReason: reason };
      }
      if (todo.status !== 'open') {
        await refuse({ reason: 'todo_not_open', status: todo.status });
        return { kind: 'todo_not_open', status: todo.status };
      }
      // "Already recorded" means this Turn already claimed this Todo, whatever capture schema it was
      // written under: a v1 capture of the same Turn (cwd and binding in its identity) is the same
      // claim, so a released one is never revived by a retry from another directory.
      // Claimed by another session while this claim waited for the row: decided again from the start,
      // where the unlocked read above now finds it held. Recorded here instead, the refusal would keep
      // the row locked while it waits for the chain head, and every claim queued behind it would wait
      // for that too.
      if (heldElsewhere(state, request, now)) throw decisionMoved(`the lease of ${doc.todo}`);
      const decision = decideClaim(claimStateOf(state), request, now);

      switch (decision.kind) {
        case 'replay':
          return { kind: 'replayed', lease: (await tx.leaseOfCapture(decision.capture))!, ready: await tx.readReady(decision.capture) };
        case 'refuse':
          if (decision.reason === 'capture_released') {
            await refuse({ reason: 'capture_released' }, { capture: state.recorded?.capture });
            return { kind: 'capture_released', capture: state.recorded!.capture, epoch: decision.epoch };
          }
          if (decision.reason === 'session_holds_other') {
            await refuse({ reason: 'session_holds_other', held: decision.held.todo, heldEpoch: decision.held.epoch });
            return { kind: 'session_holds_other', held: decision.held };
          }
          {
            const holderCheckout = await tx.checkoutOfCapture(decision.holder.capture);
            await refuse(
              { reason: decision.reason, holder: decision.holder.owner, holderEpoch: decision.holder.epoch, ...(holderCheckout ? { holderCheckout } : {}) },
              { capture: capture.captureId },
            );
            return { kind: decision.reason, holder: decision.holder, holderCheckout };
          }
        case 'acquire':
          break;
      }
      // A new lease waits for the Todo's dependencies (a holder keeps its lease if one is reopened
      // meanwhile, and its Turn's retries replay above): the person is told which ones.
      const waitingOn = undone(await tx.dependenciesOf(doc.goal, [doc.todo]));
      if (waitingOn.length > 0) {
        await refuse({ reason: 'todo_blocked', waitingOn: waitingOn.join(' ') });
        return { kind: 'todo_blocked', status: 'open', waitingOn, blockReason: null };
      }

      const history = historyOf(await tx.recentReceiptsOfTodo(doc.goal, doc.todo, HISTORY_LENGTH));
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
      await tx.insertCapture({
        id: capture.captureId,
        goal: doc.goal,
        todo: doc.todo,
        agent: doc.agent,
        session: doc.session,
        turn: doc.turn,
        cwd: input.cwd,
        binding: input.binding,
        canonical: capture.canonical,
        originalDigest: capture.originalDigest,
        op: capture.op,
        createdAt: now,
        checkout: placement?.checkout ?? input.cwd,
        commonDir: placement?.commonDir ?? null,
        branch: input.branch ?? null,
      });
      await tx.insertLease(lease);
      const stored = { capture: capture.captureId, canonical: ready.canonical, presentation: ready.presentation, readyDigest: ready.readyDigest };
      await tx.insertReady(stored);
      const common = { goal: doc.goal, todo: doc.todo, capture: capture.captureId, owner, op: capture.op };
      const leaseRef = { epoch: lease.epoch, version: lease.version };
      await appendAtCommit(
        tx,
        [
          { kind: 'capture_bound', ...common, detail: { originalDigest: capture.originalDigest, turn: doc.turn, binding: input.binding, cwd: input.cwd } },
          { kind: 'lease_acquired', ...common, lease: leaseRef, detail: { expiresAt: new Date(lease.expiresAt).toISOString() } },
          { kind: 'ready_written', ...common, lease: leaseRef, detail: { readyDigest: ready.readyDigest } },
        ],
        now,
      );
      faultPoint('claim.inside_transaction');
      return { kind: 'acquired', lease, ready: stored };
    });
  }

  async renew(owner: Owner, clientNow: number, ttlSeconds: number): Promise<RenewResult> {
    // Decide on a plain read first: most tool events are within the renewal interval and write nothing.
    const read = await this.rows.activeLeaseOfOwner(owner);
    if (!read) return { kind: 'skipped', why: 'no_active_lease' };
    const first = decideRenewal(read, owner, clientNow, ttlSeconds);
    if (first.kind === 'skip') return { kind: 'skipped', why: first.why };
    return this.write(async (tx): Promise<RenewResult> => {
      const now = await tx.clock(clientNow);
      const current = await tx.activeLeaseOfOwner(owner);
      if (!current) return { kind: 'skipped', why: 'no_active_lease' };
      const decision = decideRenewal(current, owner, now, ttlSeconds);
      if (decision.kind === 'skip') return { kind: 'skipped', why: decision.why };
      const lease = decision.lease;
      if (!(await tx.updateLease(current, lease))) return { kind: 'skipped', why: 'moved' };
      await append(
        tx,
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
  }

  release(request: ReleaseRequest, clientNow: number): Promise<ReleaseResult> {
    return this.write(async (tx): Promise<ReleaseResult> => {
      const now = await tx.clock(clientNow);
      // Lock the Todo row (FOR UPDATE on a team store), as a claim does: two releases of one lease
      // decide one after the other, and the second finds it released instead of failing its write.
      await tx.todo(request.goal, request.todo);
      const active = await tx.activeLeaseOfTodo(request.goal, request.todo);
      const decision = decideRelease(active, request);
      if (decision.kind === 'refuse') return { kind: 'refused', why: decision.why, lease: active };
      const byHolder = request.by !== undefined && request.by === active?.owner;
      const gone = !byHolder && !request.force && holderIsGone(active!, request.holderGone) ? request.holderGone : undefined;
      const forced = request.force && !byHolder;
      const asked = byHolder
        ? request.identifiedBy === 'agent_environment'
          ? 'released by its owner'
          : `released by a self-declared owner (${request.identifiedBy})`
        : gone
          ? `its launched agent ${gone.state}`
          : 'forced release';
      const record: ReleaseRecord = {
        reason: request.reason?.trim() || asked,
        forced,
        identifiedBy: forced ? 'force' : gone ? 'holder_gone' : request.identifiedBy,
        requestedBy: request.by,
        requester: request.requester,
      };
      return { kind: 'released', lease: await releaseIn(tx, active!, record, now) };
    });
  }

  appendReceipt(fields: ReceiptFields, clientNow: number, session?: SessionTouch): Promise<{ seq: number; hash: string }> {
    return this.write(async (tx) => {
      const now = await tx.clock(clientNow);
      if (session) await tx.upsertSession(session, now);
      return append(tx, fields, now);
    });
  }

  async touchSession(record: SessionTouch, now: number, minIntervalMs: number): Promise<void> {
    // A turn's start or end is always written: no read to decide it.
    if (record.turnBase !== undefined) return this.write((tx) => tx.upsertSession(record, now));
    const current = await this.rows.getSession(record.owner);
    const transcriptChanged = record.transcriptPath !== null && current?.transcriptPath !== record.transcriptPath;
    // A new live state, or a turn's start or end, is written at once; an unchanged state waits for the interval like proof of life.
    const stateChanged = record.state !== undefined && current?.state !== record.state;
    if (current && now - current.lastHookAt < minIntervalMs && !transcriptChanged && !stateChanged && record.turnBase === undefined) return;
    await this.write((tx) => tx.upsertSession(record, now));
  }

  commitLaunch(request: LaunchCommit, clientNow: number): Promise<LaunchCommitResult> {
    type Refused = Extract<LaunchCommitResult, { kind: 'refused' }>;
    return this.write(async (tx): Promise<LaunchCommitResult> => {
      const now = await tx.clock(clientNow);
      const { expected, receipt } = request;
      const refuse = async (refusal: Omit<Refused, 'kind'>): Promise<LaunchCommitResult> => {
        const detail = receipt.detail ?? {};
        await append(
          tx,
          {
            ...receipt,
            kind: 'launch_refused',
            detail: {
              reason: refusal.reason,
              why: refusal.why.slice(0, 500),
              launch: detail.launch ?? null,
              digest: detail.digest ?? null,
              pid: detail.pid ?? null,
            },
          },
          now,
        );
        return { kind: 'refused', ...refusal };
      };
      // What resume checked, read again under the write lock: the lease row of this capture.
      const lease = await tx.leaseOfCapture(expected.capture);
      if (!lease || lease.status !== 'active' || lease.owner !== expected.owner || lease.epoch !== expected.epoch) {
        const holder = lease && (await tx.activeLeaseOfTodo(lease.goal, lease.todo));
        if (holder && holder.capture !== expected.capture) {
          return refuse({ reason: 'lease_moved', why: `the lease moved to ${holder.owner} (epoch ${holder.epoch}) after resume checked it`, lease, holder });
        }
        return refuse({ reason: 'capture_released', why: `the lease (epoch ${expected.epoch}) was released after resume checked it`, lease });
      }
      // At most one live launch per capture: the latest one must be dead (its predecessors were
      // found dead when it was committed). A capture claimed by a started agent has one launch its
      // index row cannot name: the start, committed before any capture existed (spec §7 "Start").
      const resumed = await tx.latestLaunchOfCapture(expected.capture);
      const startRow = resumed ? undefined : await startOfCapture(tx, lease);
      const started = startRow && previousLaunchOf(startRow);
      const latest = resumed ? previousLaunchOf(resumed) : started;
      if (latest && request.isLive(latest)) {
        const where = `pid ${latest.pid ?? '?'} on ${latest.host ?? 'an unknown host'}`;
        const which = started ? `the start (launch receipt #${latest.seq}) that claimed this capture` : `launch receipt #${latest.seq} of this capture`;
        return refuse({ reason: 'launch_in_progress', why: `${which} is still running (${where})`, lease, previous: latest });
      }
      if (lease.version !== expected.version) {
        return refuse({
          reason: 'lease_moved',
          why: `the lease was renewed (version ${expected.version} → ${lease.version}) after resume checked it: the session is active elsewhere`,
          lease,
        });
      }
      return { kind: 'committed', ...(await append(tx, receipt, now)) };
    });
  }

  commitStart(request: StartCommit, clientNow: number): Promise<StartCommitResult> {
    type Refused = Extract<StartCommitResult, { kind: 'refused' }>;
    return this.write(async (tx): Promise<StartCommitResult> => {
      const now = await tx.clock(clientNow);
      const { goal, todo: todoId } = request;
      const refuse = async (refusal: Omit<Refused, 'kind'>): Promise<StartCommitResult> => {
        if (request.refusalDetail)
          await append(
            tx,
            { kind: 'launch_refused', goal, todo: todoId, detail: { ...request.refusalDetail, reason: refusal.reason, why: refusal.why.slice(0, 500) } },
            now,
          );
        return { kind: 'refused', ...refusal };
      };
      // What the first prompt's claim would meet, in the claim's own order (rule 6).
      const todo = await tx.todo(goal, todoId);
      if (!todo) return refuse({ reason: 'unknown_todo', why: `no Todo ${todoId} in ${goal}` });
      const waitingOn = undone(await tx.dependenciesOf(goal, [todoId]));
      if (todo.status === 'blocked' || (todo.status === 'open' && waitingOn.length > 0))
        return refuse({
          reason: 'todo_blocked',
          why:
            todo.status === 'blocked' ? `Todo ${todoId} is blocked: ${todo.blockReason ?? 'by a person'}` : `Todo ${todoId} waits on ${waitingOn.join(', ')}`,
          status: todo.status,
          waitingOn,
          blockReason: todo.blockReason ?? null,
        });
      if (todo.status !== 'open') return refuse({ reason: 'todo_not_open', why: `Todo ${todoId} is ${todo.status}`, status: todo.status });
      const place = await tx.goalOfPlace(request.place);
      if (place && place.goal !== goal)
        return refuse({ reason: 'goal_changed', why: `${request.place} used Goal ${place.goal} until now`, previousGoal: place.goal });
      const holder = await tx.activeLeaseOfTodo(goal, todoId);
      if (holder) {
        const reason = isExpired(holder, now) ? 'lease_expired_hold' : 'lease_held';
        return refuse({
          reason,
          why: `Todo ${todoId} is held by ${holder.owner} (epoch ${holder.epoch})`,
          holder,
          holderCheckout: await tx.checkoutOfCapture(holder.capture),
        });
      }
      // One live start per Todo: a started agent that has not claimed yet holds no lease, so two
      // starts would both launch and only their first prompts would decide.
      const startRow = await latestStartOfTodo(tx, goal, todoId);
      const latest = startRow && previousLaunchOf(startRow);
      if (latest && request.isLive(latest)) {
        return refuse({
          reason: 'launch_in_progress',
          why: `the start of launch receipt #${latest.seq} (pid ${latest.pid ?? '?'} on ${latest.host ?? 'an unknown host'}) is still running and has not claimed Todo ${todoId} yet`,
          previous: latest,
        });
      }
      if (!request.receipt) return { kind: 'clear' };
      return { kind: 'committed', ...(await append(tx, request.receipt, now)) };
    });
  }

  moveGoal(
    from: string,
    to: Placement & { readonly goal: string },
    clientNow: number,
    options: { readonly renameCollidingWith?: string } = {},
  ): Promise<GoalMoveResult> {
    return this.write(async (tx): Promise<GoalMoveResult> => {
      const now = await tx.clock(clientNow);
      if (from === to.goal) return { kind: 'refused', why: 'same_goal' };
      const moving = await tx.todoIdsOf(from);
      const known = await tx.goalOfPlace(to.place);
      if (moving.length === 0 && known?.goal !== from) return { kind: 'refused', why: 'unknown_goal' };
      const present = new Set(await tx.todoIdsOf(to.goal));
      const collisions = moving.filter((id) => present.has(id));
      const suffix = options.renameCollidingWith;
      if (collisions.length > 0 && suffix === undefined) return { kind: 'refused', why: 'todo_collision', todos: collisions };
      // `--rename <suffix>`: the moving side's colliding Todos become `<id>-<suffix>` (rows only; the
      // receipts keep the names they were written with, and goal_moved records each rename).
      const renamed: { from: string; to: string }[] = [];
      for (const id of collisions) {
        const newId = `${id}-${suffix}`;
        if (!isTodoId(newId) || present.has(newId) || moving.includes(newId)) return { kind: 'refused', why: 'todo_collision', todos: [newId] };
        await tx.renameTodo(from, id, newId);
        renamed.push({ from: id, to: newId });
      }
      const counts = await tx.goalCounts(from);
      await tx.remapGoal(from, to.goal);
      // A path-keyed Goal the upgrade had to leave is no longer left once it is moved.
      const left = await tx.meta('legacy_goals');
      if (left?.startsWith('left: ')) {
        const rest = left
          .slice('left: '.length)
          .split(' ')
          .filter((path) => path !== '' && path !== from);
        await tx.setMeta('legacy_goals', rest.length === 0 ? 'done' : `left: ${rest.join(' ')}`);
      }
      await tx.rememberGoal({ id: to.goal, key: to.goalKey, displayName: to.displayName });
      await tx.rememberPlace(to.place, to.goal, to.checkout, now);
      await append(
        tx,
        {
          kind: 'goal_moved',
          goal: to.goal,
          detail: {
            from,
            key: to.goalKey,
            todos: counts.todos,
            leases: counts.leases,
            captures: counts.captures,
            renamed: renamed.map((r) => `${r.from}->${r.to}`).join(' ') || null,
          },
        },
        now,
      );
      return { kind: 'moved', ...counts, renamed };
    });
  }

  /**
   * Maps Goals that the previous release named by path (the checkout root) to Goal ids, once: each
   * path is resolved as a hook would resolve it today (a path that is gone gets its `local:` key).
   * Receipts are never rewritten; a `goal_migrated` receipt records each mapping. A path whose Todos
   * collide with the target Goal's is left as it is, for `turnkeeper goal move` (doctor names it).
   */
  async adoptLegacyGoals(
    resolve: (path: string) => { id: string; key: string; displayName: string } | undefined,
    clientNow: number,
  ): Promise<{ adopted: number; left: string[] }> {
    if ((await this.rows.getMeta('legacy_goals')) !== 'pending') return { adopted: 0, left: [] };
    return this.write(async (tx) => {
      const now = await tx.clock(clientNow);
      let adopted = 0;
      const left: string[] = [];
      for (const path of await tx.legacyGoals()) {
        const resolved = resolve(path) ?? { id: goalIdOf(localKeyOf(path)), key: localKeyOf(path), displayName: path.split('/').pop() || path };
        const present = new Set(await tx.todoIdsOf(resolved.id));
        if ((await tx.todoIdsOf(path)).some((id) => present.has(id))) {
          left.push(path);
          continue;
        }
        await tx.remapGoal(path, resolved.id);
        await tx.rememberGoal(resolved);
        await append(tx, { kind: 'goal_migrated', goal: resolved.id, detail: { from: path, key: resolved.key } }, now);
        adopted += 1;
      }
      await tx.setMeta('legacy_goals', left.length === 0 ? 'done' : `left: ${left.join(' ')}`);
      return { adopted, left };
    });
  }

  async measureClockSkew(clientClock: () => number): Promise<ClockSkew | undefined> {
    if (!this.rows.serverClock) return undefined;
    // The clock the last write's BEGIN read, when there was one: no round trip of its own. Its bracket
    // is this process's Date.now(); the client clock is that plus its offset (settings.ts clientClock).
    const sample = this.rows.lastClockSample?.();
    if (sample) {
      const offset = clientClock() - Date.now();
      const before = sample.sentAt + offset;
      const after = sample.answeredAt + offset;
      return { skewMs: Math.round(sample.server - (before + after) / 2), boundMs: (after - before) / 2, roundTripMs: after - before };
    }
    const before = clientClock();
    const server = await this.rows.serverClock();
    const after = clientClock();
    return { skewMs: Math.round(server - (before + after) / 2), boundMs: (after - before) / 2, roundTripMs: after - before };
  }

  noteClockSkew(skew: ClockSkew, host: string, clientNow: number): Promise<boolean> {
    if (Math.abs(skew.skewMs) <= 1000 + skew.boundMs) return Promise.resolve(false);
    return this.write(async (tx) => {
      const now = await tx.clock(clientNow);
      // At most once an hour per host, on the server's clock (store_meta holds the last time per host).
      const key = `clock_skew_noted:${host}`;
      const last = Number((await tx.meta(key)) ?? 0);
      if (now - last < 60 * 60 * 1000) return false;
      await tx.setMeta(key, String(now));
      await append(
        tx,
        {
          kind: 'clock_skew_detected',
          goal: '-',
          detail: { host, skewMs: skew.skewMs, boundMs: Math.round(skew.boundMs), roundTripMs: Math.round(skew.roundTripMs) },
        },
        now,
      );
      return true;
    });
  }

  async serverVersion(): Promise<string | undefined> {
    return this.rows.serverVersion?.();
  }

  async follow(onChange: (headSeq: number | undefined) => void, onMode?: (mode: FeedMode) => void): Promise<(() => void) | undefined> {
    return this.rows.follow?.(onChange, undefined, onMode);
  }

  async launchReceipts(captureId: string): Promise<LaunchReceipt[]> {
    return launchReceiptsOf(await this.rows.launchReceiptRows(captureId));
  }

  async launches(): Promise<(LaunchReceipt & { hooked: boolean })[]> {
    const rows = launchReceiptsOf(await this.rows.launchReceiptRows());
    const hooked = new Set(rows.filter((row) => row.kind === 'launch_hooked').map((row) => row.launch));
    return rows.filter((row) => row.kind === 'launch_committed').map((row) => ({ ...row, hooked: row.launch !== null && hooked.has(row.launch) }));
  }

  // Reads go straight to the rows.
  getTodo = (goal: string, id: string) => this.rows.getTodo(goal, id);
  goalOfPlace = (place: string) => this.rows.goalOfPlace(place);
  legacyGoalsLeft = async (): Promise<string[]> => {
    const flag = await this.rows.getMeta('legacy_goals');
    return flag?.startsWith('left: ')
      ? flag
          .slice('left: '.length)
          .split(' ')
          .filter((path) => path !== '')
      : [];
  };
  listGoals = () => this.rows.listGoals();
  listTodos = (goal?: string) => this.rows.listTodos(goal);
  activeLeaseOfOwner = (owner: Owner) => this.rows.activeLeaseOfOwner(owner);
  latestLeaseOfOwner = (owner: Owner) => this.rows.latestLeaseOfOwner(owner);
  leaseOfCapture = (capture: string) => this.rows.leaseOfCapture(capture);
  readReady = (capture: string) => this.rows.readReady(capture);
  launchReceiptsOfTodo = (goal: string, todo: string, limit: number) => this.rows.launchReceiptsOfTodo(goal, todo, limit);
  receiptsOfTodo = (goal: string, todo: string, limit: number) => this.rows.receiptsOfTodo(goal, todo, limit);
  getCapture = (capture: string) => this.rows.getCapture(capture);
  getSession = (owner: Owner) => this.rows.getSession(owner);
  listSessions = () => this.rows.listSessions();
  listLeases = () => this.rows.listLeases();
  activeLeaseCount = (goal?: string) => this.rows.activeLeaseCount(goal);
  listCaptures = () => this.rows.listCaptures();
  activeLeases = (goal?: string) => this.rows.activeLeases(goal);
  leasesOfCaptures = (captures: readonly string[]) => this.rows.leasesOfCaptures(captures);
  recentCaptures = (limit: number, goal?: string) => this.rows.recentCaptures(limit, goal);
  capturesById = (ids: readonly string[]) => this.rows.capturesById(ids);
  readyOfCaptures = (ids: readonly string[]) => this.rows.readyOfCaptures(ids);
  todosWithStatus = (status: TodoStatus, goal?: string, limit?: number) => this.rows.todosWithStatus(status, goal, limit);
  receipts = (page: ReceiptPage) => this.rows.receipts(page);
  treeHashes = (keys: readonly TreeKey[]) => this.rows.treeHashes(keys);
  verifyChain = (after?: { seq: number; hash: string }) => (this.checkpoints ? this.checkpoints.verifyChain(after) : this.rows.verifyChain(after));
  health = () => this.rows.health();
  close = () => this.rows.close();
}

function historyOf(docsNewestFirst: string[]): HistoryEntry[] {
  const entries: HistoryEntry[] = [];
  for (const doc of [...docsNewestFirst].reverse()) {
    const receipt = parseReceipt(doc);
    if (receipt) entries.push({ seq: receipt.seq, kind: receipt.kind, at: receipt.at, owner: receipt.owner, epoch: receipt.lease?.epoch });
  }
  return entries;
}

/** What a `launch_committed` receipt says about its process (pid, host, boot, start time), for the liveness test. */
function previousLaunchOf(row: { seq: number; doc: string }): PreviousLaunch {
  return processOf(row.seq, parseReceipt(row.doc)?.detail);
}

function processOf(seq: number, detail: Readonly<Record<string, unknown>> = {}): PreviousLaunch {
  const text = (value: unknown) => (typeof value === 'string' ? value : null);
  return {
    seq,
    launch: text(detail.launch),
    pid: typeof detail.pid === 'number' ? detail.pid : null,
    host: text(detail.host),
    machine: text(detail.machine),
    boot: text(detail.boot),
    pidStart: text(detail.pidStart),
  };
}

function launchReceiptsOf(rows: { seq: number; doc: string }[]): LaunchReceipt[] {
  const out: LaunchReceipt[] = [];
  for (const row of rows) {
    const doc = parseReceipt(row.doc);
    if (!doc) continue;
    const launch = doc.detail?.launch;
    const agent = doc.detail?.agent;
    // A resume names its capture; a start names only its Todo (it claims at its first prompt).
    if (!doc.capture && doc.detail?.start !== true && doc.kind === 'launch_committed') continue;
    out.push({
      seq: row.seq,
      kind: doc.kind as LaunchReceipt['kind'],
      goal: doc.goal,
      capture: doc.capture ?? null,
      todo: doc.todo ?? null,
      agent: typeof agent === 'string' ? agent : null,
      launch: typeof launch === 'string' ? launch : null,
      at: Date.parse(doc.at),
      ...(doc.kind === 'launch_committed' ? { process: processOf(row.seq, doc.detail) } : {}),
    });
  }
  return out;
}
