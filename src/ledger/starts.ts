// A started agent (spec §7 "Start"): `turnkeeper start` commits a `launch_committed` receipt that
// names the Todo and the launch nonce but no capture (nothing is claimed until the agent's first
// prompt). This module is the one reader of that receipt shape: for the hook (rule 3 for starts) and
// for the ledger's transactions (one live start per Todo, and the start behind a capture); the
// launcher writes it (src/launcher/start.ts). Every read is one indexed query of the Todo's launch
// receipts, through an authority or an open transaction alike.
import { isOwner, type Owner } from '../core/ids';
import { parseReceipt } from '../core/receipts';

/** Where a Todo's launch receipts are read: an authority, or the row port inside a transaction. */
export interface TodoLaunches {
  launchReceiptsOfTodo(goal: string, todo: string, limit: number): Promise<{ seq: number; doc: string }[]>;
}

/** `detail.start` of a start's `launch_committed`: what tells it apart from a resume's receipt. */
export const START_MARK = 'start';

/**
 * How many of the Todo's newest launch receipts (`launch_committed`, `launch_hooked`) a hook reads to
 * find its start. They come from the `(goal, todo, seq)` index, so other Todos' receipts never count;
 * launches of one Todo follow its lease and one live start per Todo (`Authority.commitStart`), so a
 * start's own receipts are among its Todo's newest few.
 */
const LOOKBACK = 64;

export interface StartRecord {
  readonly seq: number;
  readonly goal: string;
  readonly todo: string;
  /** An Agent name as the receipt recorded it (a receipt from a newer release may name another). */
  readonly agent: string;
  /** The Turn the launcher put in TURNKEEPER_TURN. */
  readonly turn: string | null;
  readonly launch: string;
  /** The Owner whose hook first reported this launch (`launch_hooked`), if any: a start belongs to one session. */
  readonly hookedBy: Owner | undefined;
}

/** The committed start of this Goal's Todo with this launch nonce, or undefined: one indexed read. */
export async function findStart(
  store: TodoLaunches,
  launch: string,
  scope: { readonly goal: string; readonly todo: string },
): Promise<StartRecord | undefined> {
  let hookedBy: Owner | undefined;
  for (const row of await store.launchReceiptsOfTodo(scope.goal, scope.todo, LOOKBACK)) {
    // Most rows are not this launch's: a substring test before parsing keeps the read cheap.
    if (!row.doc.includes(launch)) continue;
    const doc = parseReceipt(row.doc);
    if (!doc || doc.detail?.launch !== launch) continue;
    // Newest first: the last launch_hooked seen is the oldest, the first session that hooked.
    if (doc.kind === 'launch_hooked' && isOwner(doc.owner)) hookedBy = doc.owner;
    if (doc.kind !== 'launch_committed') continue;
    if (doc.detail[START_MARK] !== true || doc.todo === undefined) return undefined;
    const turn = doc.detail.turn;
    return { seq: doc.seq, goal: doc.goal, todo: doc.todo, agent: String(doc.detail.agent), turn: typeof turn === 'string' ? turn : null, launch, hookedBy };
  }
  return undefined;
}

/** The Todo's newest start `launch_committed` (its row), for one live start per Todo. */
export async function latestStartOfTodo(store: TodoLaunches, goal: string, todo: string): Promise<{ seq: number; doc: string } | undefined> {
  for (const row of await store.launchReceiptsOfTodo(goal, todo, LOOKBACK)) {
    const doc = parseReceipt(row.doc);
    if (doc?.kind === 'launch_committed' && doc.capture === undefined && doc.detail?.[START_MARK] === true) return row;
  }
  return undefined;
}

/**
 * The start whose agent claimed a capture (its row), or undefined: the `launch_hooked` of the
 * capture's Owner (it names the capture when the claiming prompt was the first hook, no capture when
 * a SessionStart came first) gives the nonce of the Todo's start `launch_committed`.
 */
export async function startOfCapture(
  store: TodoLaunches,
  lease: { goal: string; todo: string; capture: string; owner: Owner },
): Promise<{ seq: number; doc: string } | undefined> {
  let nonce: unknown;
  for (const row of await store.launchReceiptsOfTodo(lease.goal, lease.todo, LOOKBACK)) {
    const doc = parseReceipt(row.doc);
    if (!doc) continue;
    if (nonce === undefined) {
      const mine = doc.capture === lease.capture || (doc.capture === undefined && doc.owner === lease.owner);
      if (doc.kind === 'launch_hooked' && mine) nonce = doc.detail?.launch;
      continue;
    }
    if (doc.kind === 'launch_committed' && doc.capture === undefined && doc.detail?.[START_MARK] === true && doc.detail.launch === nonce) return row;
  }
  return undefined;
}
