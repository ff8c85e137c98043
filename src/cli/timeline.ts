// `turnkeeper show <todo>`: a Todo's timeline of turns (spec §8): its claims, launches, the
// `turn_ended` receipt of every turn with what it changed, its releases and status changes, oldest
// first, from the Todo's own receipts (the (goal, todo, seq) index; renewals and the claim's other
// receipts are left out). `show <captureId>` stays the capture's view (inspect.ts).
import { parseReceipt, turnPaths, type ReceiptDetailValue, type ReceiptDocument } from '../core/receipts';
import { EXIT, goalFrom, openStore, printJson, unknownTodo, type Io } from './io';
import { checkoutGit, type CheckoutGit } from '../checkout/workspace';
import { counted, terminalSafe } from '../core/terminal';
import type { Authority } from '../store/authority';

/** The kinds a timeline shows. */
const TIMELINE_KINDS = new Set(['lease_acquired', 'launch_committed', 'turn_ended', 'lease_released', 'todo_status_changed', 'claim_refused']);

/** How many of the Todo's newest receipts are read (renewals included): a long-lived Todo shows its recent history. */
const TIMELINE_READ = 2000;

/** Changed path names printed per turn in text; --json has every name the receipt holds. */
const PATHS_SHOWN = 10;

export interface TimelineEntry {
  readonly seq: number;
  readonly at: string;
  readonly kind: string;
  readonly owner: string | null;
  readonly capture: string | null;
  readonly epoch: number | null;
  readonly detail: Readonly<Record<string, ReceiptDetailValue>>;
  /** A turn's changed paths, parsed from its receipt (`<status>\t<path>`). */
  readonly paths?: readonly string[];
  /** The commits a turn made (its HEAD moved), newest first, as git reads them now. */
  readonly commits?: readonly { readonly id: string; readonly subject: string }[];
}

const pathsOf = (doc: ReceiptDocument): readonly string[] | undefined => turnPaths(doc.detail?.paths);

export async function todoTimelineCommand(todo: string, json: boolean, io: Io): Promise<number> {
  const goal = goalFrom(io, undefined);
  const store = await openStore(io, false);
  const rows = store ? await store.receiptsOfTodo(goal, todo, TIMELINE_READ) : [];
  const known = store ? await store.getTodo(goal, todo) : undefined;
  let open: OpenTurn | undefined;
  try {
    if (!known) return await unknownTodo(io, json, store, goal, todo);
    open = await openTurnOf(store!, goal, todo);
  } finally {
    store?.close();
  }
  const git = checkoutGit(io.cwd, COMMITS_GIT_BUDGET_MS, io.env);
  const entries: TimelineEntry[] = [];
  for (const row of [...rows].reverse()) {
    const doc = parseReceipt(row.doc);
    if (!doc || !TIMELINE_KINDS.has(doc.kind)) continue;
    const paths = doc.kind === 'turn_ended' ? pathsOf(doc) : undefined;
    const commits = doc.kind === 'turn_ended' ? commitsOf(git, doc.detail?.headBefore, doc.detail?.headAfter) : undefined;
    entries.push({
      seq: doc.seq,
      at: doc.at,
      kind: doc.kind,
      owner: doc.owner ?? null,
      capture: doc.capture ?? null,
      epoch: doc.lease?.epoch ?? null,
      detail: doc.detail ?? {},
      ...(paths ? { paths } : {}),
      ...(commits ? { commits } : {}),
    });
  }
  const turns = entries.filter((entry) => entry.kind === 'turn_ended').length;
  if (json) {
    printJson(io, { ok: true, goal, todo, status: known.status, turns, partial: rows.length === TIMELINE_READ, entries, openTurn: open ?? null });
    return EXIT.done;
  }
  io.out(`Todo ${todo} (${known.status}): ${turns} turn${turns === 1 ? '' : 's'}\n`);
  if (rows.length === TIMELINE_READ) io.out(`  (its newest ${TIMELINE_READ} receipts only)\n`);
  for (const entry of entries) io.out(timelineLine(entry));
  if (open)
    io.out(
      `  ${open.at} turn${open.turn ? ` ${open.turn}` : ''} began (${open.owner}) and has no end recorded: still at work, or the agent was stopped mid-turn (turnkeeper status)\n`,
    );
  return EXIT.done;
}

/** Wall time the commit listing of a whole timeline may take. */
const COMMITS_GIT_BUDGET_MS = 4000;
/** Commits listed per turn. */
const COMMITS_SHOWN = 10;

/** A turn whose prompt recorded its base and whose stop has not come: the holder's session's turn base. */
interface OpenTurn {
  readonly owner: string;
  readonly turn: string | null;
  readonly at: string;
}

async function openTurnOf(store: Authority, goal: string, todo: string): Promise<OpenTurn | undefined> {
  const holder = (await store.listLeases()).find((lease) => lease.goal === goal && lease.todo === todo && lease.status === 'active');
  const base = holder ? (await store.getSession(holder.owner))?.turnBase : undefined;
  return holder && base ? { owner: holder.owner, turn: base.turn, at: new Date(base.at).toISOString() } : undefined;
}

/**
 * The commits a turn made (HEAD before to HEAD after), newest first: short id and subject, read from
 * this checkout's repository (every worktree of it shares the objects). Undefined when HEAD did not
 * move or git cannot say (a commit since collected, another repository). Through the hardened runner
 * (no filter, hook or pager), and --no-show-signature: log.showSignature would run gpg.program, which
 * the checkout's config names.
 */
function commitsOf(git: CheckoutGit | undefined, before: unknown, after: unknown): { id: string; subject: string }[] | undefined {
  // Object ids only: a receipt's text reaches git's command line, and `--output=<file>` is an option too.
  const id = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/;
  if (typeof before !== 'string' || typeof after !== 'string' || before === after || !git || !id.test(before) || !id.test(after)) return undefined;
  // One more than is shown, to tell "10" from "more than 10".
  const out = git.run(['log', '--no-show-signature', '--no-decorate', `--max-count=${COMMITS_SHOWN + 1}`, '--format=%h%x09%s', `${before}..${after}`, '--']);
  if (out === null) return undefined;
  return out
    .split('\n')
    .filter((line) => line.includes('\t'))
    .map((line) => ({ id: line.slice(0, line.indexOf('\t')), subject: line.slice(line.indexOf('\t') + 1) }));
}

const num = (value: unknown): number | undefined => (typeof value === 'number' ? value : undefined);

function timelineLine(entry: TimelineEntry): string {
  const head = `  #${entry.seq} ${entry.at} `;
  const who = entry.owner ?? '?';
  const d = entry.detail;
  switch (entry.kind) {
    case 'lease_acquired':
      return `${head}claimed by ${who}, epoch ${entry.epoch ?? '?'} (${entry.capture ?? '?'})\n`;
    case 'launch_committed':
      return `${head}launched ${typeof d.agent === 'string' ? d.agent : 'an agent'}${num(d.pid) !== undefined ? ` (pid ${num(d.pid)})` : ''}\n`;
    case 'lease_released':
      return `${head}released, epoch ${entry.epoch ?? '?'}${typeof d.reason === 'string' ? `: ${d.reason}` : ''}\n`;
    case 'todo_status_changed':
      return `${head}status ${typeof d.from === 'string' ? `${d.from} -> ` : ''}${typeof d.to === 'string' ? d.to : '?'}\n`;
    case 'claim_refused':
      return `${head}claim refused for ${who}${typeof d.reason === 'string' ? ` [${d.reason}]` : ''}\n`;
    case 'turn_ended': {
      const changed = num(d.changed);
      const what =
        changed === undefined
          ? 'changes unknown'
          : `${changed} path${changed === 1 ? '' : 's'} changed (+${num(d.added) ?? 0} ~${num(d.modified) ?? 0} -${num(d.deleted) ?? 0})`;
      const duration = num(d.durationMs) !== undefined ? ` in ${Math.round(num(d.durationMs)! / 1000)} s` : '';
      const model = typeof d.model === 'string' ? `, ${d.model}` : '';
      const tokens =
        num(d.inputTokens) !== undefined || num(d.outputTokens) !== undefined
          ? `, ${num(d.inputTokens) ?? '?'} in / ${num(d.outputTokens) ?? '?'} out tokens`
          : '';
      const turn = typeof d.turn === 'string' ? ` ${d.turn}` : '';
      const tree =
        typeof d.treeAfter === 'string'
          ? `\n      tree ${typeof d.treeBefore === 'string' ? `${d.treeBefore.slice(0, 12)} -> ` : ''}${d.treeAfter.slice(0, 12)}`
          : '';
      const moved = typeof d.headBefore === 'string' && typeof d.headAfter === 'string' && d.headBefore !== d.headAfter;
      const commitList = entry.commits ?? [];
      const listed = commitList.slice(0, COMMITS_SHOWN);
      const commits = moved
        ? `\n      HEAD ${String(d.headBefore).slice(0, 12)} -> ${String(d.headAfter).slice(0, 12)}` +
          (commitList.length > COMMITS_SHOWN
            ? `: more than ${COMMITS_SHOWN} commits`
            : commitList.length > 0
              ? `: ${counted(commitList.length, 'commit')}`
              : '') +
          listed.map((commit) => `\n        ${commit.id} ${terminalSafe(commit.subject)}`).join('')
        : '';
      const shown = (entry.paths ?? []).slice(0, PATHS_SHOWN).map((path) => `\n      ${path.replace('\t', '  ')}`);
      const more = changed !== undefined && changed > shown.length && shown.length > 0 ? `\n      … ${changed - shown.length} more` : '';
      return `${head}turn${turn} ended (${who}): ${what}${duration}${model}${tokens}${commits}${tree}${shown.join('')}${more}\n`;
    }
    default:
      return `${head}${entry.kind}\n`;
  }
}
