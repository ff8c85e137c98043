// A session's live state (spec §9 "Live status"), one rule for everyone who asks: status and the
// editor (each active lease's holder) and a finish that would remove a worktree (each session working
// in it). Whether a launched process still runs is the launcher's to say: passed in as processState.
import { isoTime, type Lease } from '../core/lease';
import { startOfCapture } from './starts';
import type { Authority, HolderGone, LaunchReceipt, PreviousLaunch, SessionRecord, SessionState, StatusChangeRequest } from '../store/authority';

/**
 * A claimed Todo's live state (spec §9 "Live status"): the holder's own hooks say `working`, `waiting`
 * or `stopped`; the launcher's liveness of the agent Turnkeeper launched for it says `exited` (gone
 * after its stop event) or `crashed` (gone without one).
 */
type LiveState = SessionState | 'exited' | 'crashed';

export interface LiveStatus {
  readonly state: LiveState;
  /** When it entered that state: the hook that set it; for `crashed`, the last hook before the process went. */
  readonly since: string;
  /** The holder's last hook, proof of life (refreshed at most every 15 s while nothing changes). */
  readonly lastHookAt: string;
  /** The agent Turnkeeper launched for this lease and whether it still runs; absent for an agent started by hand. */
  readonly launch?: { readonly launch: string | null; readonly pid: number | null; readonly process: 'running' | 'exited' | 'unknown' };
}

/**
 * Whether a launch's process still runs: the launcher's liveness rule (src/launcher/liveness.ts),
 * passed in by the shells, which may use the launcher; 'unknown' for a process of another machine.
 */
export type LaunchProcessState = (launch: PreviousLaunch) => 'running' | 'exited' | 'unknown';

/** A session working in a directory a finish would remove (finishTodo refuses it, spec §7 "Finish"). */
export interface LiveSessionIn {
  readonly owner: string;
  readonly cwd: string;
  readonly live: LiveStatus;
}

/**
 * The sessions working in `dir` now: a session whose directory is `dir` or inside it and whose live
 * state (the rule status shows, liveStatusOf) is working or waiting, or whose launch (the newest of
 * Todo `todo` whose hooks fired, a start or a resume) still runs here. A session started by hand and stopped between
 * turns cannot be told from one whose agent has quit: it is not counted.
 */
export async function liveSessionsIn(
  store: Authority,
  dir: string,
  todo: { readonly goal: string; readonly todo: string },
  processState: LaunchProcessState | undefined,
): Promise<LiveSessionIn[]> {
  const inside = (cwd: string) => cwd === dir || cwd.startsWith(dir.endsWith('/') ? dir : `${dir}/`);
  const sessions = (await store.listSessions()).filter((session) => session.goal === todo.goal && inside(session.cwd));
  if (sessions.length === 0) return [];
  // Only a launch whose agent's hooks fired (launch_hooked) speaks for a session: an agent started by
  // hand in the same worktree after a launch that exited is judged by its own hooks.
  const launch = (await store.launches())
    .filter((l) => l.hooked && l.todo === todo.todo && (l.goal === undefined || l.goal === todo.goal))
    .reduce<LaunchReceipt | undefined>((newest, l) => (newest === undefined || l.seq > newest.seq ? l : newest), undefined);
  const out: LiveSessionIn[] = [];
  for (const session of sessions) {
    const live = liveStatusOf(session, launch, processState);
    const working = live?.state === 'working' || live?.state === 'waiting';
    const running = live !== undefined && live.state !== 'exited' && live.state !== 'crashed' && live.launch?.process === 'running';
    if (live && (working || running)) out.push({ owner: session.owner, cwd: session.cwd, live });
  }
  return out;
}

/**
 * The launch that speaks for an active lease: the newest of its capture (a resume), or of its Todo
 * with no capture (a start, which claims at its first prompt).
 */
export function launchOfLease(launches: readonly LaunchReceipt[], lease: Lease): LaunchReceipt | undefined {
  return launches
    .filter((l) => l.capture === lease.capture || (l.capture === null && l.todo === lease.todo && (l.goal === undefined || l.goal === lease.goal)))
    .reduce<LaunchReceipt | undefined>((newest, l) => (newest === undefined || l.seq > newest.seq ? l : newest), undefined);
}

/**
 * The rule, for a session and the launch of its lease: a launched process that is gone is `crashed`
 * when the session's last state is `working` or `waiting` (since its last hook), else `exited` (since
 * its stop event, or the launch's commit when no hook fired since). Otherwise the stored state, since
 * it was set. A process of another machine (`unknown`) keeps the stored state.
 */
export function liveStatusOf(
  session: SessionRecord | undefined,
  launch: LaunchReceipt | undefined,
  processState: LaunchProcessState | undefined,
): LiveStatus | undefined {
  const process = launch?.process && processState ? processState(launch.process) : undefined;
  const launchView = launch ? { launch: { launch: launch.launch, pid: launch.process?.pid ?? null, process: process ?? 'unknown' } } : {};
  // A session whose hooks predate the launch is an earlier run of it: the launch's own facts decide.
  const current = session && launch && session.lastHookAt < launch.at ? undefined : session;
  if (process === 'exited') {
    // Crashed: gone in the middle of a turn (its last state working or waiting). Gone between turns,
    // or before any (no hook since the launch, or only a SessionStart), it exited.
    const midTurn = current?.state === 'working' || current?.state === 'waiting';
    const since = current === undefined ? launch!.at : midTurn ? current.lastHookAt : (current.stateAt ?? current.lastHookAt);
    return { state: midTurn ? 'crashed' : 'exited', since: isoTime(since), lastHookAt: isoTime(current?.lastHookAt ?? launch!.at), ...launchView };
  }
  if (!session || session.state === null) return undefined;
  return { state: session.state, since: isoTime(session.stateAt ?? session.lastHookAt), lastHookAt: isoTime(session.lastHookAt), ...launchView };
}

/**
 * Whether an active lease's holder is an agent Turnkeeper launched on this machine whose process is
 * gone (`exited` or `crashed`, the rule above): then its capture is resumed rather than its lease taken
 * over (`start`), and the person may end it without force (`todo done`). Undefined for a holder that
 * runs, one of another machine, or one started by hand (nothing says whether it still runs).
 */
export async function goneHolder(store: Authority, lease: Lease, processState: LaunchProcessState): Promise<HolderGone | undefined> {
  const launch = launchOfLease(await store.launches(), lease);
  if (!launch || !(await launchedHolder(store, lease, launch))) return undefined;
  const state = liveStatusOf(await store.getSession(lease.owner), launch, processState)?.state;
  if (state !== 'exited' && state !== 'crashed') return undefined;
  return { owner: lease.owner, epoch: lease.epoch, state, launch: launch.launch };
}

/**
 * Whether the launch is the holder itself, not only a launch of its Todo: a resume of the lease's
 * capture, or the start whose agent's hook claimed it (its `launch_hooked` names the capture or the
 * holder). A session started by hand that claimed the Todo after a start's agent quit is its own.
 */
async function launchedHolder(store: Authority, lease: Lease, launch: LaunchReceipt): Promise<boolean> {
  if (launch.capture !== null) return launch.capture === lease.capture;
  return (await startOfCapture(store, lease))?.seq === launch.seq;
}

/**
 * A `todo done` (plain or a finish) by someone other than the holder, without --force and not from
 * an agent's session: when the Todo's holder is a launched agent that exited from this machine
 * between turns, the request names it, and the store lets it end that lease (src/core/lease.ts
 * decideRelease); otherwise the request as it was.
 */
export async function withGoneHolder(
  store: Authority,
  todo: { readonly goal: string; readonly todo: string },
  request: StatusChangeRequest,
  processState: LaunchProcessState,
): Promise<StatusChangeRequest> {
  // An agent's own session asking (its environment identified it) is not the person who launched
  // the holder; --force --reason is its way, recorded as such.
  if (request.force || request.identifiedBy === 'agent_environment') return request;
  const active = (await store.listLeases()).find((lease) => lease.goal === todo.goal && lease.todo === todo.todo && lease.status === 'active');
  if (!active || active.owner === request.by) return request;
  // Exited between turns only: one gone mid-turn (crashed) is resumed first, and a session the
  // person went on with by hand (its hooks are not the launch's) reads as crashed while it works.
  const gone = await goneHolder(store, active, processState);
  return gone?.state === 'exited' ? { ...request, holderGone: gone } : request;
}
