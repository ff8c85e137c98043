// `turnkeeper todo done <id> --merge|--squash|--rebase|--keep-branch [--remove-worktree]` and
// "Turnkeeper: Finish Todo…" (spec §7 "Finish"): merge a Todo's branch back into the main checkout,
// optionally remove its worktree and branch, mark it done and release its lease, with one
// `todo_finished` receipt saying what git did. Every check runs before anything is touched: a store
// refusal (unknown Todo, someone else's lease) or a git one (dirty worktree, main checkout not ready,
// a conflicting merge per `git merge-tree`) leaves the repository and the store as they were.
import { decideRelease, type Lease } from '../core/lease';
import type { Authority, StatusChangeRequest } from '../store/authority';
import { worktreeSettings, WorktreeConfigError } from '../config/homeConfig';
import {
  FINISH_STRATEGIES,
  mergedBefore,
  mergeFinish,
  planFinish,
  removeFinished,
  todoBranch,
  WorktreeError,
  type FinishOutcome,
  type FinishPlan,
  type FinishStrategy,
  type WorktreeErrorCode,
} from '../checkout/worktrees';
import type { Env } from '../core/env';
import { parseReceipt } from '../core/receipts';
import { faultPoint } from '../store/faults';
import { liveSessionsIn, type LaunchProcessState, type LiveSessionIn } from '../ledger/live';
import { launchProcessState } from './liveness';

export interface FinishOptions {
  readonly store: Authority;
  readonly goal: string;
  readonly todo: string;
  /** A directory of the repository (any of its checkouts). */
  readonly cwd: string;
  readonly env: Env;
  readonly strategy: FinishStrategy;
  readonly removeWorktree: boolean;
  /** `--branch`: the Todo's branch; else `<branchPrefix><todo>` from config.json. */
  readonly branch?: string | undefined;
  readonly request: StatusChangeRequest;
  readonly now?: () => number;
  /** Whether a launched agent still runs (tests stand in for the launcher's /proc check). */
  readonly processState?: LaunchProcessState;
}

type FinishRefusalReason =
  | 'unknown_todo'
  | 'todo_not_open'
  | 'not_owner'
  | 'force_needs_reason'
  | 'worktree_config'
  /** An agent session works in the worktree --remove-worktree would remove (without --force --reason). */
  | 'session_live'
  | WorktreeErrorCode
  /** git did its part, then the lease changed hands before the store's transaction: the Todo is not marked done. */
  | 'lease_changed';

export type FinishResult =
  | {
      readonly ok: true;
      readonly plan: FinishPlan;
      readonly outcome: FinishOutcome;
      readonly released?: Lease | undefined;
    }
  | { readonly ok: false; readonly reason: FinishRefusalReason; readonly detail: string; readonly lease?: Lease | undefined };

/** The commit message of a merge or squash: names the Todo, so `git log` leads back to its receipts. */
const messageOf = (strategy: FinishStrategy, todo: string, title: string, branch: string): string =>
  strategy === 'squash'
    ? `${title}\n\nTodo ${todo} (branch ${branch}), finished with turnkeeper todo done --squash`
    : `Merge Todo ${todo} (${branch}): ${title}`;

export async function finishTodo(options: FinishOptions): Promise<FinishResult> {
  const { store, goal, todo: id, env } = options;
  const now = options.now ?? Date.now;
  const todo = await store.getTodo(goal, id);
  if (!todo) return { ok: false, reason: 'unknown_todo', detail: `Todo ${id} does not exist in ${goal} (turnkeeper todo list)` };
  if (todo.status === 'done') return { ok: false, reason: 'todo_not_open', detail: `Todo ${id} is already done (turnkeeper todo reopen ${id} first)` };
  // Who may release the lease is decided as the store will decide it, before git is touched.
  const active = (await store.listLeases()).find((lease) => lease.goal === goal && lease.todo === id && lease.status === 'active');
  if (active) {
    const decision = decideRelease(active, options.request);
    if (decision.kind === 'refuse' && decision.why !== 'no_active_lease')
      return {
        ok: false,
        reason: decision.why,
        lease: active,
        detail: `Todo ${id} is held by ${active.owner} (epoch ${active.epoch}), and finishing it releases that lease; nothing was changed. To finish someone else's Todo: add --force --reason "<why>"`,
      };
  }
  let plan: FinishPlan | undefined;
  let outcome: FinishOutcome;
  let recovered = false;
  let removedUnder: LiveSessionIn[] = [];
  try {
    // A finish of this Todo killed between git and the store (its plan recorded, no todo_finished):
    // when git made its merge then, this run completes that finish and records what git did. Planned
    // again instead, the merged branch would be 0 commits ahead and the receipt would say nothing was merged.
    const pending = await pendingFinish(store, goal, id);
    let mergedHead: string | null = null;
    if (pending) {
      mergedHead = await mergedBefore(env, pending, messageOf(pending.strategy, id, todo.title, pending.branch));
      if (mergedHead !== null) {
        plan = pending;
        recovered = true;
      }
    }
    if (!plan) {
      const branch = await todoBranch(env, options.cwd, worktreeSettings(env).branchPrefix, id, options.branch);
      plan = await planFinish(env, options.cwd, { branch, strategy: options.strategy, removeWorktree: options.removeWorktree });
      // An agent working in the worktree would lose its directory (its next hook: "No such file or
      // directory"): refused before anything is touched, unless asked with --force and a reason.
      if (plan.removeWorktree && plan.worktree) {
        removedUnder = await liveSessionsIn(store, plan.worktree, { goal, todo: id }, options.processState ?? launchProcessState);
        if (removedUnder.length > 0 && !(options.request.force && options.request.reason))
          return { ok: false, reason: 'session_live', detail: sessionLiveDetail(removedUnder, plan.worktree) };
      }
      // The intent, before git acts (spec §7 "Finish"): what a rerun after a crash finds.
      await store.appendReceipt({ kind: 'todo_finish_planned', goal, todo: id, detail: plannedDetail(plan) }, now());
      faultPoint('finish.after_plan');
      mergedHead = await mergeFinish(env, plan, messageOf(plan.strategy, id, todo.title, plan.branch));
      faultPoint('finish.after_merge');
    }
    outcome = await removeFinished(env, plan, mergedHead);
    faultPoint('finish.after_remove');
  } catch (error) {
    if (error instanceof WorktreeError) return { ok: false, reason: error.code, detail: error.message };
    if (error instanceof WorktreeConfigError) return { ok: false, reason: 'worktree_config', detail: error.message };
    throw error;
  }
  const detail = {
    strategy: plan.strategy,
    branch: plan.branch,
    branchHead: plan.branchHead,
    // What was merged: the branch's head when the merge ran (a commit made since the plan included).
    mergedHead: outcome.mergedHead,
    commits: plan.ahead,
    into: plan.into,
    checkout: plan.main,
    worktree: plan.worktree,
    headBefore: plan.before.head,
    treeBefore: plan.before.tree,
    headAfter: outcome.after.head,
    treeAfter: outcome.after.tree,
    merged: outcome.merged,
    worktreeRemoved: outcome.worktreeRemoved,
    branchDeleted: outcome.branchDeleted,
    // What was to be removed and was kept, and why (a commit or a file made after the plan).
    kept: outcome.kept,
    // Completed from the plan of a finish that was interrupted after git acted.
    ...(recovered ? { recovered: true } : {}),
    // Sessions that were working in the removed worktree (--force --reason).
    ...(removedUnder.length > 0 && outcome.worktreeRemoved ? { removedUnder: removedUnder.map((session) => session.owner) } : {}),
  };
  const changed = await store.setTodoStatus(goal, id, 'done', now(), options.request, detail);
  if (changed?.kind === 'already_done')
    return {
      ok: false,
      reason: 'todo_not_open',
      detail: `git finished (${plan.strategy} of ${plan.branch} into ${plan.into}, now ${outcome.after.head}), but Todo ${id} was finished meanwhile (another checkout, or a second run): its one todo_finished receipt is that finish's`,
    };
  if (!changed || changed.kind === 'refused')
    return {
      ok: false,
      reason: 'lease_changed',
      lease: changed?.kind === 'refused' ? changed.lease : undefined,
      detail: `git finished (${plan.strategy} of ${plan.branch} into ${plan.into}, now ${outcome.after.head}), but Todo ${id}'s lease changed hands meanwhile, so it is not marked done: turnkeeper todo done ${id} once its holder agrees`,
    };
  return { ok: true, plan, outcome, released: changed.released };
}

const isFinishStrategy = (value: string): value is FinishStrategy => (FINISH_STRATEGIES as readonly string[]).includes(value);

/** What a `todo_finish_planned` receipt records: the plan, enough to complete the finish after a crash. */
function plannedDetail(plan: FinishPlan): Record<string, string | number | boolean | null> {
  return {
    strategy: plan.strategy,
    branch: plan.branch,
    branchHead: plan.branchHead,
    commits: plan.ahead,
    into: plan.into,
    checkout: plan.main,
    worktree: plan.worktree,
    removeWorktree: plan.removeWorktree,
    headBefore: plan.before.head,
    treeBefore: plan.before.tree,
  };
}

/**
 * The plan of this Todo's last finish when nothing was recorded after it (no todo_finished, no status
 * change): a finish that stopped between its plan and its record. Read from the Todo's newest receipts.
 */
async function pendingFinish(store: Authority, goal: string, todo: string): Promise<FinishPlan | undefined> {
  for (const row of await store.receiptsOfTodo(goal, todo, 200)) {
    const doc = parseReceipt(row.doc);
    if (!doc) continue;
    if (doc.kind === 'todo_finished' || doc.kind === 'todo_status_changed') return undefined;
    if (doc.kind !== 'todo_finish_planned') continue;
    const d = doc.detail ?? {};
    const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
    const strategy = text(d.strategy);
    const [branch, branchHead, into, checkout, headBefore, treeBefore] = [d.branch, d.branchHead, d.into, d.checkout, d.headBefore, d.treeBefore].map(text);
    if (!strategy || !isFinishStrategy(strategy) || !branch || !branchHead || !into || !checkout || !headBefore || !treeBefore || typeof d.commits !== 'number')
      return undefined;
    return {
      strategy,
      branch,
      worktree: text(d.worktree) ?? null,
      worktreeMissing: false,
      removeWorktree: d.removeWorktree === true,
      main: checkout,
      into,
      before: { head: headBefore, tree: treeBefore },
      branchHead,
      ahead: d.commits,
      mergedTree: null,
    };
  }
  return undefined;
}

/** What a refused `--remove-worktree` says: each session working there, how it is known, and the ways on. */
function sessionLiveDetail(sessions: readonly LiveSessionIn[], worktree: string): string {
  const named = sessions.map(({ owner, cwd, live }) => {
    const process = live.launch?.process === 'running' ? `, launched as pid ${live.launch.pid ?? '?'}, still running` : '';
    return `${owner} (${live.state} since ${live.since}${process}, in ${cwd})`;
  });
  return (
    `an agent session is working in ${worktree}: ${named.join('; ')}. Removing the worktree would take its directory from under it; nothing was changed. ` +
    `Quit the agent first, or finish without --remove-worktree, or add --force --reason "<why>"`
  );
}
