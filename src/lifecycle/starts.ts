// A started agent (spec §7 "Start"): `turnkeeper start` commits a `launch_committed` receipt that
// names the Todo and the launch nonce but no capture (nothing is claimed until the agent's first
// prompt). This module is the one reader of that receipt shape, for the hook (rule 3 for starts) and
// the tests; the launcher writes it (src/launcher/start.ts).
import { isOwner, type Agent, type Owner } from '../core/ids';
import { parseReceipt } from '../core/receipts';
import type { Authority } from '../store/authority';

/** `detail.start` of a start's `launch_committed`: what tells it apart from a resume's receipt. */
export const START_MARK = 'start';

/**
 * How far back, in receipts, a hook looks for its start's `launch_committed`. A start's receipt has
 * no capture, so the store's per-capture index cannot find it; the hook reads the newest receipts
 * instead, and only until the first hook of the start (after which the session holds a lease or has
 * been answered). A start whose first hook comes after this many other receipts gets
 * `[not_live_bound]`: start it again (docs/launcher.md "Start").
 */
export const START_LOOKBACK = 20_000;
const PAGE = 500;

export interface StartRecord {
  readonly seq: number;
  readonly goal: string;
  readonly todo: string;
  readonly agent: Agent | string;
  /** The Turn the launcher put in TURNKEEPER_TURN. */
  readonly turn: string | null;
  readonly launch: string;
  /** The Owner whose hook first reported this launch (`launch_hooked`), if any: a start belongs to one session. */
  readonly hookedBy: Owner | undefined;
}

/** The committed start with this launch nonce among the newest `lookback` receipts, or undefined. */
export async function findStart(store: Authority, launch: string, lookback = START_LOOKBACK): Promise<StartRecord | undefined> {
  let hookedBy: Owner | undefined;
  let before: number | undefined;
  for (let read = 0; read < lookback; ) {
    const rows = await store.receipts({ beforeSeq: before, limit: Math.min(PAGE, lookback - read) });
    if (rows.length === 0) return undefined;
    read += rows.length;
    for (const row of rows) {
      before = row.seq;
      // Most rows are not this launch's: a substring test before parsing keeps the walk cheap.
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
  }
  return undefined;
}
