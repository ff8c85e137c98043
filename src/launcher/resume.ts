// `turnkeeper resume` and "Turnkeeper: Resume Captured Turn" (spec §7): decide whether a capture
// may be resumed, then relaunch its agent on its own session through the attested launcher, with
// the launch receipt committed before the agent's first instruction.
import { existsSync } from 'node:fs';
import { digestText } from '../core/canonical';
import type { Agent } from '../core/ids';
import { PROFILES } from '../agents/profiles/index';
import type { Lease } from '../core/lease';
import { renderGuidance, type GuidanceFacts, type ReasonCode } from '../core/reasons';
import type { Preconditions, ReadyDocument } from '../core/ready';
import type { Authority, LaunchCommitResult, StoredCapture } from '../store/authority';
import { checkoutGit, preconditionsOf } from '../checkout/workspace';
import { changesBetween, treeStateOf } from '../checkout/turnChanges';
import { resolveGoal } from '../checkout/goal';
import { parseReceipt } from '../core/receipts';
import { releaseAttestation, type Attestation } from './attest';
import { launchArgv, type RunningLaunch } from './launch';
import { isLaunchLive } from './liveness';
import { attestAgent, launchDetail, launchEnvironment, newLaunchId, recordQuietly, runLaunch, type LaunchOptions } from './plumbing';
import { CommitRefused, type LaunchRefusal, type Refusal } from './refusals';

type ResumeReason = Extract<
  ReasonCode,
  | 'unknown_capture'
  | 'unbound_capture'
  | 'capture_released'
  | 'lease_moved'
  | 'ready_corrupted'
  | 'precondition_changed'
  | 'transcript_missing'
  | 'checkout_missing'
  | 'launch_in_progress'
>;

/** What checkResume found: everything resumeCapture needs, so a caller that checked need not check again. */
export interface ResumePlan {
  readonly capture: StoredCapture;
  readonly lease: Lease;
  readonly ready: ReadyDocument;
  readonly transcriptPath: string;
  readonly drift: string | undefined;
}

export type ResumeCheck = { readonly ok: true; readonly plan: ResumePlan } | (Refusal<ResumeReason> & { readonly goal?: string });

const refusal = (reason: ResumeReason, facts: GuidanceFacts, goal?: string): ResumeCheck => ({
  ok: false,
  reason,
  facts,
  guidance: renderGuidance(reason, facts),
  ...(goal ? { goal } : {}),
});

/** Every eligibility rule of spec §7, in order; reads only. */
export interface CheckOptions {
  readonly acceptDrift: boolean;
  /** A checkout's git state now (runs git twice); a caller checking many captures passes a cached one. */
  readonly workspace?: (checkout: string) => Preconditions;
}

/** preconditionsOf, once per checkout: for checking a list of captures (the resume pick) with two git runs per checkout, not 2N. */
export function cachedWorkspace(): (checkout: string) => Preconditions {
  const seen = new Map<string, Preconditions>();
  return (checkout) => {
    let state = seen.get(checkout);
    if (!state) seen.set(checkout, (state = preconditionsOf(checkout)));
    return state;
  };
}

/** The command that recreates a removed worktree where the capture ran, at its branch (or commit). */
function recreateCommand(capture: Pick<StoredCapture, 'checkout' | 'commonDir' | 'branch'>, commit: string | null): string {
  const where = capture.commonDir ? `git --git-dir=${shellWord(capture.commonDir)} ` : 'git ';
  const at = capture.branch ? ` ${shellWord(capture.branch)}` : commit ? ` --detach ${commit}` : '';
  return `${where}worktree add ${shellWord(capture.checkout)}${at}`;
}

const shellWord = (text: string): string => (/^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`);

export async function checkResume(store: Authority, captureId: string, options: CheckOptions): Promise<ResumeCheck> {
  const found = await store.getCapture(captureId);
  if (!found) return refusal('unknown_capture', { capture: captureId });
  const capture = found;
  const facts: GuidanceFacts = { capture: captureId, todo: capture.todo, agent: capture.agent };
  const refuse = (reason: ResumeReason, more: GuidanceFacts = {}) => refusal(reason, { ...facts, ...more }, capture.goal);
  if (capture.turn === null) return refuse('unbound_capture');
  const lease = await store.leaseOfCapture(captureId);
  if (!lease) return refuse('unbound_capture');
  if (lease.status !== 'active') {
    const holder = (await store.listLeases()).find((other) => other.goal === lease.goal && other.todo === lease.todo && other.status === 'active');
    if (holder) return refuse('lease_moved', { holder: holder.owner, epoch: holder.epoch });
    return refuse('capture_released', { epoch: lease.epoch });
  }
  // Active (or expired but still held) by the capture's own Owner and epoch: the lease row is the capture's.
  const ready = await store.readReady(captureId);
  if (!ready || digestText(ready.presentation) !== ready.readyDigest) return refuse('ready_corrupted');
  const readyDocument = JSON.parse(ready.canonical) as ReadyDocument;
  // Resume runs in the capture's own checkout: a removed worktree is said plainly, with the command
  // that recreates it, instead of relaunching the agent somewhere else.
  if (!existsSync(capture.checkout)) {
    return refuse('checkout_missing', { checkout: capture.checkout, command: recreateCommand(capture, readyDocument.preconditions.gitHead) });
  }
  // As at capture time: no drift (two git runs per checkout, cached by a caller checking many). Else
  // what the session's hooks recorded decides: '' is the checkout as the session left it, undefined
  // that nothing was recorded (or it could not be read), and the capture-time drift stands.
  const sinceCapture = driftSinceCapture(capture, readyDocument, options);
  const sinceRecorded = sinceCapture === undefined ? undefined : await driftSinceRecordedOrNone(store, capture, lease);
  const drift = sinceRecorded === undefined ? sinceCapture : sinceRecorded || undefined;
  if (drift && !options.acceptDrift) return refuse('precondition_changed', { detail: drift });
  const session = await store.getSession(lease.owner);
  const transcriptPath = session?.transcriptPath ?? null;
  if (!transcriptPath || !existsSync(transcriptPath)) {
    return refuse('transcript_missing', { detail: transcriptPath ? `${transcriptPath} is gone` : 'the session never reported a transcript' });
  }
  return { ok: true, plan: { capture, lease, ready: readyDocument, transcriptPath, drift } };
}

/** At capture time: HEAD and a digest of `git status` (the ready capture's preconditions). */
function driftSinceCapture(capture: StoredCapture, ready: ReadyDocument, options: CheckOptions): string | undefined {
  const now = (options.workspace ?? preconditionsOf)(capture.checkout);
  const then = ready.preconditions;
  if (now.gitHead !== then.gitHead) return `git HEAD moved from ${then.gitHead ?? 'none'} to ${now.gitHead ?? 'none'}`;
  return now.statusDigest !== then.statusDigest ? 'git status differs from capture time' : undefined;
}

/** How many of the Todo's newest receipts are searched for the capture's last turn end. */
const TURN_END_LOOKBACK = 500;
/** Wall time the tree of now and its diff may take: a resume is a person waiting, not a hook. */
const DRIFT_GIT_BUDGET_MS = 8000;
/** How many changed paths a drift names. */
const DRIFT_PATHS = 5;

/**
 * Drift measured from the state the session left, as its hooks recorded it (spec §7 "Resume"): the tree and HEAD of its last `turn_ended` of this lease, else the base its claim's turn
 * recorded. What the agent did in a turn that ended is its own work, not drift; what changed after,
 * or in a turn that never ended (killed mid-turn, nothing recorded it), is, and is named with its
 * paths. Undefined when the checkout is what was recorded, and also when nothing was recorded (no tree:
 * outside git, or git failed): then the capture-time check decides.
 */
async function driftSinceRecorded(store: Authority, capture: StoredCapture, lease: Lease): Promise<string | undefined> {
  const recorded = await recordedState(store, capture, lease);
  if (!recorded) return undefined;
  let gitDir: string | null;
  try {
    gitDir = resolveGoal(capture.checkout).gitDir;
  } catch {
    return undefined;
  }
  const git = checkoutGit(capture.checkout, DRIFT_GIT_BUDGET_MS);
  const now = treeStateOf(capture.checkout, gitDir, process.env, Date.now, git);
  if (now.tree === null) return undefined;
  if (now.tree === recorded.tree && now.head === recorded.head) return '';
  const parts: string[] = [];
  if (now.head !== recorded.head) parts.push(`git HEAD moved from ${short(recorded.head)} to ${short(now.head)}`);
  const changes = changesBetween(capture.checkout, recorded.tree, now.tree, process.env, git);
  if (changes && changes.count > 0) {
    const named = changes.paths.slice(0, DRIFT_PATHS).map((line) => line.replace('\t', ' '));
    const more = changes.count > named.length ? `, and ${changes.count - named.length} more` : '';
    parts.push(`${changes.count} ${changes.count === 1 ? 'path' : 'paths'} changed: ${named.join(', ')}${more}`);
  } else if (now.tree !== recorded.tree) parts.push('the working tree differs');
  return `since ${recorded.what} (${recorded.at}), ${parts.join('; ')}`;
}

/** driftSinceRecorded, failing to "nothing recorded" (a store read or a file git cannot stat): the capture-time check then decides. */
async function driftSinceRecordedOrNone(store: Authority, capture: StoredCapture, lease: Lease): Promise<string | undefined> {
  try {
    return await driftSinceRecorded(store, capture, lease);
  } catch {
    return undefined;
  }
}

const short = (head: string | null): string => head?.slice(0, 12) ?? 'none';

/** The session's last recorded tree: its last turn end of this lease, else its claim's turn base. */
async function recordedState(
  store: Authority,
  capture: StoredCapture,
  lease: Lease,
): Promise<{ readonly tree: string; readonly head: string | null; readonly at: string; readonly what: string } | undefined> {
  for (const row of await store.receiptsOfTodo(capture.goal, capture.todo, TURN_END_LOOKBACK)) {
    if (!row.doc.includes('"turn_ended"')) continue;
    const doc = parseReceipt(row.doc);
    if (doc?.kind !== 'turn_ended' || doc.capture !== capture.id || doc.lease?.epoch !== lease.epoch) continue;
    const tree = doc.detail?.treeAfter;
    const head = doc.detail?.headAfter;
    // One with no base (a stop that no prompt of the session began: a payload sent on its own) ends
    // no turn the session worked: passed over. Else the newest turn end decides, and one that recorded
    // no tree leaves nothing to compare.
    if (typeof doc.detail?.treeBefore !== 'string') continue;
    if (typeof tree !== 'string') return undefined;
    return { tree, head: typeof head === 'string' ? head : null, at: doc.at, what: 'its last turn ended' };
  }
  const base = (await store.getSession(lease.owner))?.turnBase;
  if (!base?.tree || base.turn !== capture.turn) return undefined;
  return { tree: base.tree, head: base.head, at: new Date(base.at).toISOString(), what: 'its turn began' };
}

/** What the person reads before accepting a plan's drift: the precondition_changed guidance, as a refusal would give it. */
export const driftGuidance = (plan: ResumePlan): string =>
  renderGuidance('precondition_changed', { capture: plan.capture.id, todo: plan.capture.todo, agent: plan.capture.agent, detail: plan.drift });

const DEFAULT_PROMPT = 'Continue the interrupted turn from where it stopped.';

/** The agent's own resume command line (after argv[0]). */
export function resumeArguments(
  agent: Agent,
  session: string,
  mode: 'headless' | 'interactive',
  prompt = DEFAULT_PROMPT,
  extra: readonly string[] = [],
): string[] {
  return PROFILES[agent].launch.resume(session, mode, prompt, extra);
}

export interface ResumeOptions extends LaunchOptions {
  readonly store: Authority;
  readonly captureId: string;
  readonly acceptDrift: boolean;
  readonly dryRun: boolean;
  /**
   * A plan the caller already checked (the editor checks once, asks about drift, then launches):
   * not checked again here, its git state included; the launch's commit still re-checks the lease
   * and every other live launch in its own transaction (spec §6). Its drift counts as accepted.
   */
  readonly plan?: ResumePlan | undefined;
  /** The capture's deleted worktree was recreated for this resume (./worktreeStart.ts): said in the launch receipt. */
  readonly recreatedWorktree?: boolean | undefined;
}

export type ResumeResult =
  | {
      readonly ok: true;
      readonly dryRun: true;
      readonly capture: string;
      readonly agent: Agent;
      readonly binary: string;
      readonly digest: string;
      readonly argv: string[];
    }
  | {
      readonly ok: true;
      readonly dryRun: false;
      readonly capture: string;
      readonly agent: Agent;
      readonly launch: RunningLaunch;
      readonly attestation: Omit<Attestation, 'fd'>;
    }
  | Refusal<ResumeReason | LaunchRefusal>;

export async function resumeCapture(options: ResumeOptions): Promise<ResumeResult> {
  const { store } = options;
  const now = options.now ?? Date.now;
  const check: ResumeCheck = options.plan
    ? { ok: true, plan: options.plan }
    : await checkResume(store, options.captureId, { acceptDrift: options.acceptDrift });
  if (!check.ok) {
    // An unknown capture has no Goal to file a receipt under; every other refusal is recorded.
    if (check.goal)
      await recordQuietly(
        store,
        { kind: 'resume_refused', goal: check.goal, capture: options.captureId, detail: { reason: check.reason } },
        now(),
        check.facts.todo,
      );
    return { ok: false, reason: check.reason, guidance: check.guidance, facts: check.facts };
  }
  const { capture, lease } = check.plan;
  const attested = await attestAgent(capture.agent, { agentBin: options.agentBin, env: options.env, setting: options.setting });
  if (!attested.ok) return launchRefusal(store, capture, lease, attested, now());
  const { attestation } = attested;
  const args = resumeArguments(capture.agent, capture.session, options.mode, options.prompt, options.extraArgs);
  if (options.dryRun) {
    releaseAttestation(attestation);
    return {
      ok: true,
      dryRun: true,
      capture: capture.id,
      agent: capture.agent,
      binary: attestation.resolved,
      digest: attestation.digest,
      argv: launchArgv(attestation, args),
    };
  }
  const launchId = newLaunchId();
  const env = launchEnvironment(options.env, {
    TURNKEEPER_CAPTURE: capture.id,
    TURNKEEPER_TURN: capture.turn!,
    TURNKEEPER_DB: options.storePath,
    TURNKEEPER_LAUNCH: launchId,
  });
  const receiptBase = {
    goal: capture.goal,
    todo: capture.todo,
    capture: capture.id,
    owner: lease.owner,
    lease: { epoch: lease.epoch, version: lease.version },
  };
  const launched = await runLaunch<ResumeReason>(
    options,
    {
      attestation,
      args,
      // Where the hook ran, inside the capture's checkout; the checkout root when that folder is gone.
      cwd: existsSync(capture.cwd) ? capture.cwd : capture.checkout,
      env,
      // One transaction re-checks what checkResume saw (the lease, and no other live launch of this
      // capture) and writes the receipt; a refusal there kills the parked agent (spec §6).
      commit: async (facts) => {
        const detail = {
          launch: launchId,
          ...launchDetail(capture.agent, facts, attestation.interpreter),
          driftAccepted: check.plan.drift ?? null,
          ...(options.recreatedWorktree ? { worktreeRecreated: true } : {}),
        };
        const result = await store.commitLaunch(
          {
            expected: { capture: capture.id, owner: lease.owner, epoch: lease.epoch, version: lease.version },
            receipt: { kind: 'launch_committed', ...receiptBase, detail },
            isLive: isLaunchLive,
          },
          now(),
        );
        if (result.kind === 'refused') throw new CommitRefused(result.reason, result.why, commitFacts(result));
        return { seq: result.seq, hash: result.hash };
      },
      recordRefusal: async (reason, detail, facts) => {
        await store.appendReceipt(
          {
            kind: 'launch_refused',
            ...receiptBase,
            detail: { reason, why: detail.slice(0, 500), digest: facts.digest ?? null, loaderEnvironment: facts.loaderEnvironment ?? null },
          },
          now(),
        );
      },
    },
    { capture: capture.id, todo: capture.todo, agent: capture.agent },
  );
  return launched.ok
    ? { ok: true, dryRun: false, capture: capture.id, agent: capture.agent, launch: launched.launch, attestation: launched.attestation }
    : launched;
}

/** The guidance facts of a commit-time refusal. */
function commitFacts(result: Extract<LaunchCommitResult, { kind: 'refused' }>): GuidanceFacts {
  switch (result.reason) {
    case 'lease_moved': {
      const holder = result.holder ?? result.lease;
      return { holder: holder?.owner, epoch: holder?.epoch };
    }
    case 'capture_released':
      return { epoch: result.lease?.epoch };
    case 'launch_in_progress': {
      const previous = result.previous;
      return { detail: previous ? `launch receipt #${previous.seq}, pid ${previous.pid ?? '?'} on ${previous.host ?? '?'}` : undefined };
    }
  }
}

async function launchRefusal(store: Authority, capture: StoredCapture, lease: Lease, refusal: Refusal<LaunchRefusal>, now: number): Promise<ResumeResult> {
  await recordQuietly(
    store,
    {
      kind: 'launch_refused',
      goal: capture.goal,
      capture: capture.id,
      owner: lease.owner,
      lease: { epoch: lease.epoch, version: lease.version },
      detail: { reason: refusal.reason, why: (refusal.facts.detail ?? '').slice(0, 500) },
    },
    now,
    capture.todo,
  );
  return { ...refusal, facts: { capture: capture.id, todo: capture.todo, agent: capture.agent, ...refusal.facts } };
}
