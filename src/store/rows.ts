// Row shapes of the store schemas (schema.ts, postgresSchema.ts: the same column names) and their
// mapping to the Authority's types both ways: a row read, and the values of a row to insert.
import type { Agent, Owner } from '../core/ids';
import type { Lease } from '../core/lease';
import { SESSION_STATES, type SessionRecord, type SessionState, type SessionTouch, type StoredCapture, type Todo, type TodoStatus } from './authority';

export interface LeaseRowRaw {
  goal: string;
  todo: string;
  epoch: number;
  owner: string;
  capture: string;
  version: number;
  status: 'active' | 'released';
  acquired_at: number;
  renewed_at: number;
  expires_at: number;
}
/** A lease row's columns, in the order of `leaseValues`. */
export const LEASE_COLUMNS = 'goal, todo, epoch, owner, capture, version, status, acquired_at, renewed_at, expires_at';
/** LEASE_COLUMNS of the table aliased `l`, for a join. */
export const LEASE_COLUMNS_OF_L = LEASE_COLUMNS.split(', ')
  .map((column) => `l.${column}`)
  .join(', ');
export const leaseValues = (l: Lease): unknown[] => [l.goal, l.todo, l.epoch, l.owner, l.capture, l.version, l.status, l.acquiredAt, l.renewedAt, l.expiresAt];
export const toLease = (row: LeaseRowRaw): Lease => ({
  goal: row.goal,
  todo: row.todo,
  epoch: row.epoch,
  owner: row.owner as Owner,
  capture: row.capture,
  version: row.version,
  status: row.status,
  acquiredAt: row.acquired_at,
  renewedAt: row.renewed_at,
  expiresAt: row.expires_at,
});

export interface TodoRowRaw {
  goal: string;
  id: string;
  title: string;
  body: string;
  status: TodoStatus;
  created_at: number;
  updated_at: number;
  /** Schema v5; absent from rows read under an older schema. */
  block_reason?: string | null;
}
/** A Todo row's columns, in the order of `todoValues`. */
export const TODO_COLUMNS = 'goal, id, title, body, status, created_at, updated_at';
export const todoValues = (t: Todo): unknown[] => [t.goal, t.id, t.title, t.body, t.status, t.createdAt, t.updatedAt];
export const toTodo = (row: TodoRowRaw): Todo => ({
  goal: row.goal,
  id: row.id,
  title: row.title,
  body: row.body,
  status: row.status,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
  // Only when a person blocked it with a reason, so Todos without one compare as before.
  ...(row.block_reason ? { blockReason: row.block_reason } : {}),
});

export interface CaptureRowRaw {
  id: string;
  goal: string;
  todo: string;
  agent: Agent;
  session: string;
  turn: string | null;
  cwd: string;
  binding: string;
  doc: string;
  original_digest: string;
  op: string | null;
  created_at: number;
  checkout: string | null;
  common_dir: string | null;
  branch: string | null;
}
/** A capture row's columns, in the order of `captureValues`. */
export const CAPTURE_COLUMNS = 'id, goal, todo, agent, session, turn, cwd, binding, doc, original_digest, op, created_at, checkout, common_dir, branch';
export const captureValues = (c: StoredCapture): unknown[] => [
  c.id,
  c.goal,
  c.todo,
  c.agent,
  c.session,
  c.turn,
  c.cwd,
  c.binding,
  c.canonical,
  c.originalDigest,
  c.op,
  c.createdAt,
  c.checkout,
  c.commonDir,
  c.branch,
];
export const toCapture = (row: CaptureRowRaw): StoredCapture => ({
  id: row.id,
  goal: row.goal,
  todo: row.todo,
  agent: row.agent,
  session: row.session,
  turn: row.turn,
  cwd: row.cwd,
  binding: row.binding,
  canonical: row.doc,
  originalDigest: row.original_digest,
  op: row.op,
  createdAt: row.created_at,
  checkout: row.checkout ?? row.cwd,
  commonDir: row.common_dir,
  branch: row.branch,
});

export interface SessionRowRaw {
  owner: string;
  agent: Agent;
  session: string;
  goal: string;
  cwd: string;
  transcript_path: string | null;
  first_hook_at: number;
  last_hook_at: number;
  state: string | null;
  state_at: number | null;
  turn_id: string | null;
  turn_at: number | null;
  turn_head: string | null;
  turn_tree: string | null;
}
export const toSession = (row: SessionRowRaw): SessionRecord => ({
  owner: row.owner as Owner,
  agent: row.agent,
  session: row.session,
  goal: row.goal,
  cwd: row.cwd,
  transcriptPath: row.transcript_path,
  firstHookAt: row.first_hook_at,
  lastHookAt: row.last_hook_at,
  // A state this version does not know (a newer one wrote it) reads as none.
  state: SESSION_STATES.includes(row.state as SessionState) ? (row.state as SessionState) : null,
  stateAt: row.state_at,
  turnBase: row.turn_at === null ? null : { turn: row.turn_id, at: row.turn_at, head: row.turn_head, tree: row.turn_tree },
});

/**
 * The turn columns of a session upsert: `set` when the touch names a turn base (a TurnBase starts a
 * turn, null ends it), and the values (turn, at, head, tree) to write then.
 */
export function sessionTurnParams(record: SessionTouch): { set: boolean; values: [string | null, number | null, string | null, string | null] } {
  const base = record.turnBase;
  if (base === undefined) return { set: false, values: [null, null, null, null] };
  if (base === null) return { set: true, values: [null, null, null, null] };
  return { set: true, values: [base.turn, base.at, base.head, base.tree] };
}
