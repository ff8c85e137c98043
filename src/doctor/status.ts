// The status snapshot shared by `turnkeeper status` and the extension's views (spec §8).
import { captureState, type CaptureState } from '../core/capture';
import { digestTextBulk } from '../core/canonical';
import { isExpired, isoTime, type Lease } from '../core/lease';
import type { Authority, StoredCapture } from '../store/authority';
import { launchOfLease, liveStatusOf, type LaunchProcessState, type LiveStatus } from '../ledger/live';

// The live-state rule lives in src/ledger/live.ts (a finish asks it too); its types are named here for the shells.
export type { LaunchProcessState, LiveStatus } from '../ledger/live';

export interface LeaseView {
  readonly goal: string;
  readonly todo: string;
  readonly owner: string;
  readonly capture: string;
  readonly epoch: number;
  readonly version: number;
  readonly status: 'active' | 'released';
  readonly expiresAt: string;
  /** The checkout (worktree root) the holder works in, from its capture; absent when unknown. */
  readonly checkout?: string | undefined;
  /** An active lease's live state; absent when its holder's hooks have said none yet (or a released lease). */
  readonly live?: LiveStatus | undefined;
}

export interface CaptureView {
  readonly id: string;
  readonly goal: string;
  readonly todo: string;
  readonly agent: string;
  readonly session: string;
  readonly turn: string | null;
  readonly state: CaptureState;
  readonly originalDigest: string;
  readonly readyDigest: string | null;
  readonly checkout: string;
}

export interface SilentLaunch {
  /** The resumed capture, or null for a start. */
  readonly capture: string | null;
  readonly todo: string | null;
  /** The Goal its receipt names, when it names one: what the editor's views scope by. */
  readonly goal?: string;
  readonly agent: string | null;
  readonly launch: string | null;
  readonly seq: number;
  readonly committedAt: string;
  /** Whether its agent still runs, when the caller could tell (a launch of this machine). */
  readonly process?: 'running' | 'exited' | 'unknown';
  /** The machine it was launched on (the receipt's host name). */
  readonly host?: string | null;
}

export interface StatusSnapshot {
  readonly leases: LeaseView[];
  readonly captures: CaptureView[];
  /** Launches whose agent fired no hook within a minute: usually a hook the agent skips silently. */
  readonly silentLaunches: SilentLaunch[];
  /** Captures older than those listed exist (a bounded snapshot: SnapshotOptions.recent); they are read on demand. */
  readonly olderCaptures?: boolean;
}

/** Spec §2 "Proof of life": how long a launched agent has to fire its first hook. */
export const FIRST_HOOK_DEADLINE_MS = 60_000;

/**
 * Launches whose agent fired no hook within FIRST_HOOK_DEADLINE_MS, except those a later launch has
 * answered: a launch of the same agent, or of the same Todo, committed after it whose hooks fired. The
 * warning is there to say an agent's hooks are skipped (an untrusted hook, a folder not trusted);
 * once a later launch of that agent reports, or the Todo's work went on through a launch that does,
 * the old launch has nothing left to say, and the status bar's warning and doctor's problem go away.
 * Todos are matched by id (a launch receipt names no Goal here).
 */
/** How long a silent launch whose process is gone stays listed: long enough to be seen once, then it ages out. */
export const EXITED_SILENT_LAUNCH_KEPT_MS = 24 * 3600_000;

/**
 * Launches whose agent fired no hook within FIRST_HOOK_DEADLINE_MS. With `processState`, each says
 * whether its agent still runs (its hooks are being skipped, or it has not been prompted yet) or has
 * exited (it quit or failed before a first hook: a person quitting a TUI unprompted is not a fault),
 * and an exited one ages out after EXITED_SILENT_LAUNCH_KEPT_MS.
 */
export async function silentLaunches(store: Authority, now: number, processState?: LaunchProcessState): Promise<SilentLaunch[]> {
  const launches = await store.launches();
  // The seq of the newest launch that fired its hooks, per agent and per Todo.
  const newest = (key: (launch: (typeof launches)[number]) => string | null): Map<string, number> => {
    const seqs = new Map<string, number>();
    for (const launch of launches) {
      const value = key(launch);
      if (launch.hooked && value !== null) seqs.set(value, Math.max(seqs.get(value) ?? 0, launch.seq));
    }
    return seqs;
  };
  const hookedAgent = newest((launch) => launch.agent);
  const hookedTodo = newest((launch) => launch.todo);
  const answered = (launch: (typeof launches)[number]): boolean =>
    (launch.agent !== null && (hookedAgent.get(launch.agent) ?? 0) > launch.seq) || (launch.todo !== null && (hookedTodo.get(launch.todo) ?? 0) > launch.seq);
  return launches
    .filter((launch) => !launch.hooked && now - launch.at > FIRST_HOOK_DEADLINE_MS && !answered(launch))
    .map((launch) => ({
      capture: launch.capture,
      todo: launch.todo,
      ...(launch.goal ? { goal: launch.goal } : {}),
      agent: launch.agent,
      launch: launch.launch,
      seq: launch.seq,
      committedAt: isoTime(launch.at),
      ...(processState && launch.process ? { process: processState(launch.process), host: launch.process.host } : {}),
    }))
    .filter((launch) => launch.process !== 'exited' || now - Date.parse(launch.committedAt) <= EXITED_SILENT_LAUNCH_KEPT_MS);
}

/**
 * The number of active leases, for the editor's status bar, which shows it from the window's start,
 * before any view reads the snapshot (docs/decisions.md, "The extension"): of the workspace's Goal
 * when there is one, as the Leases view. Nothing else is read.
 */
export function activeLeaseCount(store: Authority, goal?: string): Promise<number> {
  // One count over a partial index (WHERE status = 'active'): per owner, or per (goal, todo).
  return store.activeLeaseCount(goal);
}

/**
 * The snapshot of one repository (Goal): its leases, its captures and the silent launches that name
 * it (or, a resume, one of its captures). Undefined `goal`: the whole store, unchanged. Which
 * launches are silent is decided over the whole store before this (a later launch of the same agent
 * answers an old one in any repository: trust is the agent's, not the repository's).
 */
function snapshotOfGoal(snapshot: StatusSnapshot, goal: string | undefined): StatusSnapshot {
  if (goal === undefined) return snapshot;
  const captures = snapshot.captures.filter((capture) => capture.goal === goal);
  const ours = new Set(captures.map((capture) => capture.id));
  return {
    ...snapshot,
    leases: snapshot.leases.filter((lease) => lease.goal === goal),
    captures,
    silentLaunches: snapshot.silentLaunches.filter(
      (launch) => (launch.capture !== null && ours.has(launch.capture)) || (launch.capture === null && launch.goal === goal),
    ),
  };
}

export const leaseView = (lease: Lease, checkout?: string): LeaseView => ({
  goal: lease.goal,
  todo: lease.todo,
  owner: lease.owner,
  capture: lease.capture,
  epoch: lease.epoch,
  version: lease.version,
  status: lease.status,
  expiresAt: isoTime(lease.expiresAt),
  ...(checkout ? { checkout } : {}),
});

/** How many of the newest captures status and the Captures view show beside the live ones, by default. */
export const RECENT_CAPTURES = 50;

export interface SnapshotOptions {
  /** One Goal's snapshot (as snapshotOfGoal): its leases and captures are the only ones read. */
  readonly goal?: string | undefined;
  /**
   * The newest this many captures (and their leases) beside every capture of an active lease; older
   * ones are paged on demand (`olderCaptures` says there are some). Undefined: every capture and lease.
   */
  readonly recent?: number | undefined;
  /** The launcher's liveness (the shells pass it: doctor may not import the launcher): `exited` and `crashed` need it. */
  readonly processState?: LaunchProcessState | undefined;
}

const newestCaptureFirst = (a: StoredCapture, b: StoredCapture): number => b.createdAt - a.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
const newestLeaseFirst = (a: Lease, b: Lease): number => b.acquiredAt - a.acquiredAt || b.epoch - a.epoch;

/**
 * The snapshot status and the views show. With `recent`, its cost follows the live rows and the page
 * shown, not the store's history: the active leases and their captures, the newest `recent` captures
 * and their leases, each an indexed query (test/integration/live-rows.test.ts pins the plans), and
 * the ready capture's digest checked only for the captures shown whose lease is active, the one state
 * the check decides (captureState: a released or unbound capture is that whatever its bytes).
 */
export async function statusSnapshot(store: Authority, now: number, options: SnapshotOptions = {}): Promise<StatusSnapshot> {
  const { goal, recent } = options;
  let leases: Lease[];
  let storedCaptures: StoredCapture[];
  let olderCaptures = false;
  if (recent === undefined) {
    leases = (await store.listLeases()).filter((lease) => goal === undefined || lease.goal === goal);
    storedCaptures = (await store.listCaptures()).filter((capture) => goal === undefined || capture.goal === goal);
  } else {
    const active = await store.activeLeases(goal);
    const newest = await store.recentCaptures(recent + 1, goal);
    olderCaptures = newest.length > recent;
    const shown = newest.slice(0, recent);
    const shownIds = new Set(shown.map((capture) => capture.id));
    const held = await store.capturesById(active.map((lease) => lease.capture).filter((id) => !shownIds.has(id)));
    storedCaptures = [...shown, ...held].sort(newestCaptureFirst);
    const byKey = new Map<string, Lease>();
    for (const lease of [...active, ...(await store.leasesOfCaptures([...shownIds]))]) byKey.set(`${lease.goal}\n${lease.todo}\n${lease.epoch}`, lease);
    leases = [...byKey.values()].sort(newestLeaseFirst);
  }
  const leaseByCapture = new Map(leases.map((lease) => [lease.capture, lease]));
  const checkoutOf = new Map(storedCaptures.map((capture) => [capture.id, capture.checkout]));
  const readyOf = new Map((await store.readyOfCaptures(storedCaptures.map((capture) => capture.id))).map((ready) => [ready.capture, ready]));
  const captures = storedCaptures.map((capture): CaptureView => {
    const lease = leaseByCapture.get(capture.id);
    const ready = readyOf.get(capture.id);
    return {
      id: capture.id,
      goal: capture.goal,
      todo: capture.todo,
      agent: capture.agent,
      session: capture.session,
      turn: capture.turn,
      state: captureState({
        turn: capture.turn,
        leaseStatus: lease?.status,
        leaseExpired: lease !== undefined && isExpired(lease, now),
        // Hashed only where it decides the state (an active lease's capture), with the bulk digest:
        // status is never on a hook's path.
        readyIntact: lease?.status === 'active' && ready !== undefined && digestTextBulk(ready.presentation) === ready.readyDigest,
      }),
      originalDigest: capture.originalDigest,
      readyDigest: ready?.readyDigest ?? null,
      checkout: capture.checkout,
    };
  });
  const live = await liveStatuses(store, leases, options.processState);
  const snapshot: StatusSnapshot = {
    leases: leases.map((lease) => ({ ...leaseView(lease, checkoutOf.get(lease.capture)), ...(live.has(lease) ? { live: live.get(lease) } : {}) })),
    captures,
    silentLaunches: await silentLaunches(store, now),
    olderCaptures,
  };
  return snapshotOfGoal(snapshot, goal);
}

/**
 * The live state of each active lease: its holder's session row (one read per active lease) and,
 * with `processState`, the newest launch of its capture (a resume) or of its Todo with no capture
 * (a start), whose process the launcher's liveness rule judges.
 */
async function liveStatuses(store: Authority, leases: readonly Lease[], processState: LaunchProcessState | undefined): Promise<Map<Lease, LiveStatus>> {
  const out = new Map<Lease, LiveStatus>();
  const active = leases.filter((lease) => lease.status === 'active');
  if (active.length === 0) return out;
  const launches = processState ? await store.launches() : [];
  for (const lease of active) {
    const session = await store.getSession(lease.owner);
    const status = liveStatusOf(session, launchOfLease(launches, lease), processState);
    if (status) out.set(lease, status);
  }
  return out;
}
