// Deterministic fault points for crash tests (in the manner of SQLite's own test harness).
// Production never arms them: only the test-only variable TURNKEEPER_TEST_FAULT does, naming one
// point and an action (kill, stop, throw, ioerr), e.g. `claim.inside_transaction=kill`.
/** The steps of a claim (a hook's write): races.test.ts kills a hook at each. */
export const CLAIM_FAULT_POINTS = [
  'claim.before_transaction',
  'claim.inside_transaction',
  'claim.after_commit',
  'store.before_commit',
  /** Committed, anchor not yet moved: the window in which a killed writer leaves the anchor behind. */
  'store.after_commit',
] as const;
/** The steps of a finish (src/launcher/finish.ts): its plan recorded, before git; merged, before removal; removed, before its record. todo-worktrees.test.ts kills a finish at each. */
export const FINISH_FAULT_POINTS = ['finish.after_plan', 'finish.after_merge', 'finish.after_remove'] as const;
export type FaultPoint = (typeof CLAIM_FAULT_POINTS)[number] | (typeof FINISH_FAULT_POINTS)[number];

const armed = process.env.TURNKEEPER_TEST_FAULT;

export function faultPoint(point: FaultPoint): void {
  if (armed === undefined) return;
  const [name, action] = armed.split('=');
  if (name !== point) return;
  if (action === 'kill') process.kill(process.pid, 'SIGKILL');
  // The process stops itself there until the test continues it (SIGCONT): a server stopped mid-request.
  if (action === 'stop') process.kill(process.pid, 'SIGSTOP');
  if (action === 'throw') throw new Error(`fault injected at ${point}`);
  // A disk error as SQLite reports one, for tests of what a failed write leaves behind.
  if (action === 'ioerr') throw Object.assign(new Error(`disk I/O error (injected at ${point})`), { code: 'SQLITE_IOERR' });
}
