// `turnkeeper start <todo> --agent <a>` and "Turnkeeper: Start Turn on Todo" (spec §7 "Start"):
// a new agent session on an open, unheld Todo, launched through the attested launcher in the current
// checkout. Its `launch_committed` receipt is committed before the agent's first instruction and
// names the Todo, the Turn it was given and the launch nonce, but no capture: nothing is claimed
// until the agent's first prompt event, whose hook claims the Todo with binding `launch`
// (src/hook/hook.ts, rule 3 for starts). The launch plumbing is shared with resume (plumbing.ts).
import { randomBytes } from 'node:crypto';
import type { Agent } from '../core/ids';
import { isoTime, type Lease } from '../core/lease';
import { renderGuidance, type GuidanceFacts, type ReasonCode } from '../core/reasons';
import { StoreUnavailableError, type Authority, type StartCommitRefusal, type StartCommitResult } from '../store/authority';
import { nearestTodoIds } from '../core/suggest';
import { PROFILES } from '../agents/profiles/index';
import { resolveGoal, type ResolvedGoal } from '../checkout/goal';
import { START_MARK } from '../ledger/starts';
import type { Attestation } from './attest';
import type { RunningLaunch } from './launch';
import { isLaunchLive, launchProcessState } from './liveness';
import { goneHolder } from '../ledger/live';
import { CommitRefused, type LaunchRefusal, type Refusal } from './refusals';
import { attestAgent, launchDetail, launchEnvironment, newLaunchId, recordQuietly, runLaunch, type LaunchOptions } from './plumbing';

/** Why a start is refused before anything is launched (the hook's own codes for the same facts). */
type StartReason = Extract<ReasonCode, StartCommitRefusal>;

export type StartCheck = { readonly ok: true } | Refusal<StartReason>;

/** A fresh Turn for the started session: `turn_<16 hex>` (spec §7). */
const newStartTurn = (): string => `turn_${randomBytes(8).toString('hex')}`;

/**
 * What the first prompt's claim would refuse, asked before launching: the Todo exists in this Goal,
 * is open, no one holds its lease (an expired lease is still a hold), and no earlier start of it
 * still runs. The store decides in one transaction (`Authority.commitStart` without a receipt);
 * `record` adds the refusal's `launch_refused` receipt (the CLI's start), the editor's check before
 * it opens a terminal records nothing.
 */
export async function checkStart(
  store: Authority | undefined,
  goal: ResolvedGoal,
  todoId: string,
  agent: Agent,
  now: number,
  record = false,
): Promise<StartCheck> {
  if (!store) return startRefusal({ reason: 'unknown_todo', why: 'no store yet' }, goal, todoId, agent);
  const result = await store.commitStart(
    { ...startScope(goal, todoId), ...(record ? { refusalDetail: { [START_MARK]: true, agent } } : {}), isLive: isLaunchLive },
    now,
  );
  if (result.kind !== 'refused') return { ok: true };
  const suggestions = result.reason === 'unknown_todo' ? await openTodoIdsNear(store, goal.id, todoId) : [];
  const gone = result.reason === 'lease_held' && result.holder ? await holderGone(store, result.holder) : undefined;
  return startRefusal(result, goal, todoId, agent, suggestions, gone);
}

/** Whether the holder's launched agent is gone (src/ledger/live.ts): then its capture is resumed rather than its lease taken over. */
async function holderGone(store: Authority, holder: Lease): Promise<'exited' | 'crashed' | undefined> {
  return (await goneHolder(store, holder, launchProcessState))?.state;
}

/**
 * "Did you mean": the Goal's open Todo ids near an unknown one, as the hook offers them
 * (src/core/suggest.ts). Asked only after the refusal; a store that fails the read gives none.
 */
async function openTodoIdsNear(store: Authority, goal: string, todo: string): Promise<string[]> {
  try {
    const todos = await store.listTodos(goal);
    return nearestTodoIds(
      todo,
      todos.filter((row) => row.status === 'open').map((row) => row.id),
    );
  } catch (error) {
    if (error instanceof StoreUnavailableError) return [];
    throw error;
  }
}

const startScope = (goal: ResolvedGoal, todo: string) => ({ goal: goal.id, todo, place: goal.commonDir ?? goal.checkout });

/** The guidance of a start refused by the store's check. */
function startRefusal(
  refusal: Omit<Extract<StartCommitResult, { kind: 'refused' }>, 'kind'>,
  goal: ResolvedGoal,
  todo: string,
  agent: Agent,
  suggestions: readonly string[] = [],
  gone?: 'exited' | 'crashed',
): Extract<StartCheck, { ok: false }> {
  const { holder, previous } = refusal;
  const facts: GuidanceFacts = {
    todo,
    agent,
    ...(suggestions.length > 0 ? { suggestions, command: `turnkeeper start ${suggestions[0]!} --agent ${agent}` } : {}),
    ...(refusal.status ? { status: refusal.status } : {}),
    ...(refusal.reason === 'todo_blocked' ? { waitingOn: refusal.waitingOn, blockReason: refusal.blockReason } : {}),
    ...(refusal.previousGoal ? { previousGoal: refusal.previousGoal, goal: goal.id, checkout: goal.checkout } : {}),
    ...(holder ? { holder: holder.owner, epoch: holder.epoch, expiresAt: isoTime(holder.expiresAt), checkout: refusal.holderCheckout } : {}),
    ...(holder && gone ? { holderGone: gone, capture: holder.capture } : {}),
    ...(previous ? { detail: `launch receipt #${previous.seq}, pid ${previous.pid ?? '?'} on ${previous.host ?? '?'}` } : {}),
  };
  return { ok: false, reason: refusal.reason, facts, guidance: renderGuidance(refusal.reason, facts) };
}

export interface StartOptions extends LaunchOptions {
  /** Undefined when no store exists yet: every Todo is unknown then, and nothing is created. */
  readonly store: Authority | undefined;
  readonly todo: string;
  readonly agent: Agent;
  /** The checkout to run in (its Goal is the Todo's). */
  readonly cwd: string;
  /** Set by startInWorktree (./worktreeStart.ts): the Todo's worktree branch, recorded in the launch receipt. */
  readonly worktree?: { readonly branch: string; readonly created: boolean } | undefined;
}

/**
 * The agent's command line for a new session (after argv[0]), for `turnkeeper start`. Headless runs
 * one prompt and exits; interactive opens the agent's own UI, with the prompt as its first when given.
 */
export function startArguments(agent: Agent, mode: 'headless' | 'interactive', prompt?: string, extra: readonly string[] = []): string[] {
  if (mode === 'headless' && prompt === undefined) throw new Error('a headless start needs a prompt');
  return PROFILES[agent].launch.start(mode, prompt, extra);
}

export type StartResult =
  | {
      readonly ok: true;
      readonly todo: string;
      readonly agent: Agent;
      readonly turn: string;
      readonly launchId: string;
      readonly launch: RunningLaunch;
      readonly attestation: Omit<Attestation, 'fd'>;
    }
  | Refusal<StartReason | LaunchRefusal>;

export async function startTodo(options: StartOptions): Promise<StartResult> {
  const { store, todo, agent } = options;
  const now = options.now ?? Date.now;
  const goal = resolveGoal(options.cwd);
  const base = { goal: goal.id, todo };
  const check = await checkStart(store, goal, todo, agent, now(), true);
  if (!check.ok) return check;
  // checkStart found the Todo, so a store exists.
  const authority = store!;
  const attested = await attestAgent(agent, { agentBin: options.agentBin, env: options.env, setting: options.setting });
  if (!attested.ok) {
    await recordQuietly(
      authority,
      {
        kind: 'launch_refused',
        goal: goal.id,
        detail: { [START_MARK]: true, reason: attested.reason, why: (attested.facts.detail ?? '').slice(0, 500), agent },
      },
      now(),
      todo,
    );
    return { ...attested, facts: { todo, agent, ...attested.facts } };
  }
  const { attestation } = attested;
  const turn = newStartTurn();
  const launchId = newLaunchId();
  const env = launchEnvironment(options.env, { TURNKEEPER_TODO: todo, TURNKEEPER_TURN: turn, TURNKEEPER_LAUNCH: launchId, TURNKEEPER_DB: options.storePath });
  const launched = await runLaunch<StartReason>(
    options,
    {
      attestation,
      args: startArguments(agent, options.mode, options.prompt, options.extraArgs),
      cwd: options.cwd,
      env,
      commit: async (facts) => {
        // Attestation takes seconds for a large agent: the store checks again, in the transaction
        // that appends the receipt, what checkStart saw (spec §7 "Start").
        const result = await authority.commitStart(
          {
            ...startScope(goal, todo),
            receipt: {
              kind: 'launch_committed',
              ...base,
              detail: {
                [START_MARK]: true,
                launch: launchId,
                turn,
                checkout: goal.checkout,
                ...(options.worktree ? { branch: options.worktree.branch, worktreeCreated: options.worktree.created } : {}),
                ...launchDetail(agent, facts, attestation.interpreter),
              },
            },
            refusalDetail: { [START_MARK]: true, agent, launch: launchId, digest: facts.digest, pid: facts.pid },
            isLive: isLaunchLive,
          },
          now(),
        );
        if (result.kind === 'refused') {
          const refused = startRefusal(result, goal, todo, agent);
          throw new CommitRefused(refused.reason, `the Todo changed while ${agent} was attested: ${result.why}`, refused.facts);
        }
        if (result.kind !== 'committed') throw new Error('commitStart with a receipt committed nothing');
        return { seq: result.seq, hash: result.hash };
      },
      recordRefusal: async (reason, detail, facts) => {
        await authority.appendReceipt(
          {
            kind: 'launch_refused',
            ...base,
            detail: {
              [START_MARK]: true,
              reason,
              why: detail.slice(0, 500),
              agent,
              launch: launchId,
              digest: facts.digest ?? null,
              loaderEnvironment: facts.loaderEnvironment ?? null,
            },
          },
          now(),
        );
      },
    },
    { todo, agent },
  );
  return launched.ok ? { ok: true, todo, agent, turn, launchId, launch: launched.launch, attestation: launched.attestation } : launched;
}
