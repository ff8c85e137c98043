// Read-mostly commands: `status`, `show`, `verify`, `release`, `receipts`.
import { digestText } from '../core/canonical';
import { isCaptureId, isTodoId, TODO_ID_RULE } from '../core/ids';
import { isoTime } from '../core/lease';
import { parseReceipt, type ReceiptDocument } from '../core/receipts';
import { storePath } from '../store/location';
import { readAnchor } from '../store/anchor';
import { RECENT_CAPTURES, statusSnapshot, leaseView, type LiveStatus } from '../doctor/status';
import { launchProcessState } from '../launcher/liveness';
import { witnessSentence } from '../ledger/witness';
import type { Authority, ReceiptRow } from '../store/authority';
import { EXIT, goalFrom, openStore, parse, placementFrom, printJson, releaseRequester, todoIdArg, UsageError, type Io } from './io';

export async function statusCommand(args: string[], io: Io): Promise<number> {
  const usage = 'turnkeeper status [--limit <n> | --all] [--json]';
  const { values } = parse(args, { json: { type: 'boolean' }, limit: { type: 'string' }, all: { type: 'boolean' } }, { min: 0, max: 0, usage });
  // The live rows and the newest captures by default (issue 19): what it costs follows the live work.
  const recent = values.all ? undefined : Number(values.limit ?? RECENT_CAPTURES);
  if ((values.all && values.limit !== undefined) || (recent !== undefined && (!Number.isSafeInteger(recent) || recent < 0)))
    throw new UsageError(`--limit takes a whole number from 0, and not with --all\nusage: ${usage}`);
  const store = await openStore(io, false);
  const snapshot = store
    ? await statusSnapshot(store, Date.now(), { recent, processState: launchProcessState })
    : { leases: [], captures: [], silentLaunches: [], olderCaptures: false };
  const names = store ? await goalNames(store) : new Map<string, string>();
  store?.close();
  if (values.json) {
    printJson(io, snapshot);
    return EXIT.done;
  }
  io.out(hereLine(io));
  if (!store) {
    io.out(`no store at ${storePath(io.env)} yet: nothing is held (turnkeeper todo add creates it)\n`);
    return EXIT.done;
  }
  const active = snapshot.leases.filter((lease) => lease.status === 'active');
  io.out(active.length === 0 ? 'no active leases\n' : 'active leases:\n');
  // Which Goal and checkout hold each lease: worktrees of one repository share its Todos (docs/goals.md).
  const leasePlace = placeHeader(names, '  ');
  for (const lease of active) {
    io.out(leasePlace(lease.goal, lease.checkout));
    io.out(`    ${lease.todo.padEnd(24)} ${lease.owner}  epoch ${lease.epoch} v${lease.version}  until ${lease.expiresAt}  ${lease.capture}\n`);
    if (lease.live) io.out(`      ${liveLine(lease.live)}\n`);
  }
  if (snapshot.captures.length > 0) io.out('captures:\n');
  const capturePlace = placeHeader(names, '  ');
  for (const capture of snapshot.captures) {
    io.out(capturePlace(capture.goal, capture.checkout));
    io.out(`    ${capture.id}  ${capture.state.padEnd(14)} ${capture.todo.padEnd(24)} ${capture.agent}:${capture.session}\n`);
  }
  if (snapshot.olderCaptures) io.out(`  … older captures not shown (the newest ${recent} and every held one are): turnkeeper status --all, or --limit <n>\n`);
  for (const launch of snapshot.silentLaunches)
    io.out(
      `warning: the agent launched for ${launch.capture ?? `a start of Todo ${launch.todo ?? '?'}`} at ${launch.committedAt} never fired a hook (turnkeeper doctor)\n`,
    );
  return EXIT.done;
}

/** `working since …`, with the launched process when there is one: the live state of spec §9. */
function liveLine(live: LiveStatus): string {
  const words = { working: 'working', waiting: 'waiting for input', stopped: 'stopped', exited: 'exited', crashed: 'crashed' }[live.state];
  const process = live.launch ? ` · launched pid ${live.launch.pid ?? '?'} ${live.launch.process}` : '';
  return `${words} since ${live.since} · last hook ${live.lastHookAt}${process}`;
}

/** Goal id -> display name (the repository folder name), for people; ids stay in --json. */
async function goalNames(store: Authority): Promise<Map<string, string>> {
  return new Map((await store.listGoals()).map((goal) => [goal.id, goal.displayName]));
}

/** The Goal and checkout of the current directory, or why there is none. */
function hereLine(io: Io): string {
  try {
    const here = placementFrom(io, undefined);
    return `here: Goal ${here.displayName} (${here.goal}) · checkout ${here.checkout}\n`;
  } catch (error) {
    return `here: no Goal (${(error as Error).message.split('\n')[0]})\n`;
  }
}

/**
 * A line naming the Goal (and the checkout, when known), printed only when it differs from the last
 * one printed: items that follow belong to it. An item without a checkout keeps the last header.
 */
function placeHeader(names: ReadonlyMap<string, string>, indent: string): (goal: string, checkout: string | undefined) => string {
  let lastGoal: string | undefined;
  let lastCheckout: string | undefined;
  return (goal, checkout) => {
    if (goal === lastGoal && (checkout === undefined || checkout === lastCheckout)) return '';
    lastGoal = goal;
    lastCheckout = checkout;
    return `${indent}Goal ${names.get(goal) ?? goal} (${goal})${checkout === undefined ? '' : ` · checkout ${checkout}`}\n`;
  };
}

export async function showCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parse(args, { json: { type: 'boolean' } }, { min: 1, max: 1, usage: 'turnkeeper show <captureId | todo> [--json]' });
  const id = positionals[0]!;
  // A Todo id: its timeline of turns (timeline.ts). A capture id is never read as one.
  if (!isCaptureId(id) && isTodoId(id)) return (await import('./timeline')).todoTimelineCommand(id, values.json === true, io);
  if (!isCaptureId(id))
    throw new UsageError(
      `${JSON.stringify(id)} is neither a capture id (cap_ followed by 24 lower-case hex digits, as turnkeeper status lists them) nor a Todo id (${TODO_ID_RULE})`,
    );
  const store = await openStore(io, false);
  const capture = await store?.getCapture(id);
  if (!store || !capture) {
    // A refused claim names the capture it would have bound (its receipt says so), but only a claim
    // that succeeds stores one: say which receipt refused it and why, rather than "no capture".
    const refusal = store ? await refusalNaming(store, id) : undefined;
    store?.close();
    if (refusal) {
      const reason = typeof refusal.detail?.reason === 'string' ? refusal.detail.reason : undefined;
      if (values.json)
        printJson(io, {
          ok: false,
          reason: 'capture_refused',
          capture: id,
          receipt: {
            seq: refusal.seq,
            kind: refusal.kind,
            at: refusal.at,
            reason: reason ?? null,
            todo: refusal.todo ?? null,
            owner: refusal.owner ?? null,
            detail: refusal.detail ?? null,
          },
        });
      else {
        const holder =
          typeof refusal.detail?.holder === 'string'
            ? `; the Todo was held by ${refusal.detail.holder}${typeof refusal.detail.holderEpoch === 'number' ? ` (epoch ${refusal.detail.holderEpoch})` : ''}`
            : '';
        io.err(
          `capture ${id} was never stored: its claim was refused by receipt #${refusal.seq} (${refusal.kind}, ${refusal.at})` +
            `${reason ? `, reason [${reason}]` : ''}${refusal.todo ? ` for Todo ${refusal.todo}` : ''}${refusal.owner ? `, asked by ${refusal.owner}` : ''}${holder}.\n` +
            `A capture is stored only when a claim succeeds.${reason ? ` See docs/recovery.md#${reason}` : ''} (turnkeeper receipts --before ${refusal.seq + 1} --limit 1 shows the receipt)\n`,
        );
      }
      return EXIT.refused;
    }
    if (values.json) printJson(io, { ok: false, reason: 'unknown_capture', capture: id });
    else io.err(`no capture ${id} (turnkeeper status lists them)\n`);
    return EXIT.refused;
  }
  const ready = await store.readReady(id);
  const lease = await store.leaseOfCapture(id);
  store.close();
  const intact = ready !== undefined && digestText(ready.presentation) === ready.readyDigest;
  if (values.json) {
    printJson(io, {
      ok: true,
      capture: JSON.parse(capture.canonical) as unknown,
      captureId: id,
      originalDigest: capture.originalDigest,
      lease: lease ? leaseView(lease) : null,
      ready: ready ? (JSON.parse(ready.canonical) as unknown) : null,
      readyDigest: ready?.readyDigest ?? null,
      readyIntact: intact,
      presentation: ready?.presentation ?? null,
    });
    return EXIT.done;
  }
  io.out(`capture ${id} (${capture.originalDigest})\n${capture.canonical}\n`);
  if (lease) io.out(`lease: ${lease.owner} epoch ${lease.epoch} v${lease.version} ${lease.status}, expires ${isoTime(lease.expiresAt)}\n`);
  if (ready) {
    io.out(`ready capture (${ready.readyDigest}${intact ? '' : ' — DOES NOT MATCH the stored bytes: [ready_corrupted]'}):\n${ready.canonical}\n\n`);
    io.out(`${ready.presentation}\n`);
  }
  return EXIT.done;
}

/** The newest `*_refused` receipt that names `capture`, walking the chain newest first. */
async function refusalNaming(store: Authority, capture: string): Promise<ReceiptDocument | undefined> {
  const PAGE = 500;
  let before: number | undefined;
  for (;;) {
    const rows = await store.receipts({ beforeSeq: before, limit: PAGE });
    for (const row of rows) {
      // A plain substring test first: most receipts never mention the id, and parsing each costs more.
      if (!row.doc.includes(capture)) continue;
      const doc = parseReceipt(row.doc);
      if (doc && doc.capture === capture && doc.kind.endsWith('_refused')) return doc;
    }
    if (rows.length < PAGE) return undefined;
    before = rows[rows.length - 1]!.seq;
  }
}

export async function verifyCommand(args: string[], io: Io): Promise<number> {
  const { values } = parse(args, { json: { type: 'boolean' } }, { min: 0, max: 0, usage: 'turnkeeper verify [--json]' });
  const store = await openStore(io, false);
  if (!store) {
    // A missing store is not an empty, verified chain (a mistyped TURNKEEPER_DB would "verify").
    const path = storePath(io.env);
    const anchor = readAnchor(path);
    const message = `no store at ${path}${anchor && anchor !== 'unreadable' ? ` (its anchor names receipt ${anchor.seq}: the database was removed)` : ''}`;
    if (values.json) printJson(io, { ok: false, verified: 0, breaks: [], error: { code: 'no_store', message } });
    else io.err(`${message}\n`);
    return EXIT.refused;
  }
  const report = await store.verifyChain();
  store.close();
  // The shape spec §5 fixes, exactly: {ok, verified, breaks}.
  if (values.json) printJson(io, { ok: report.ok, verified: report.verified, breaks: report.breaks });
  else {
    if (report.ok) io.out(`receipt chain verifies: ${report.verified} receipts\n`);
    else {
      io.out(`receipt chain is BROKEN: ${report.verified} receipts verify, ${report.breaks.length} breaks\n`);
      for (const item of report.breaks) io.out(`  seq ${item.seq}: ${item.kind}\n`);
    }
    io.out(`${witnessSentence(report.witness, report.breaks)}\n`);
  }
  return report.ok ? EXIT.done : EXIT.refused;
}

export async function releaseCommand(args: string[], io: Io): Promise<number> {
  const usage = 'turnkeeper release <todo> [--owner <agent:session>] [--force --reason <why>] [--goal <dir>] [--json]';
  const { values, positionals } = parse(
    args,
    { force: { type: 'boolean' }, reason: { type: 'string' }, owner: { type: 'string' }, goal: { type: 'string' }, json: { type: 'boolean' } },
    { min: 1, max: 1, usage },
  );
  const todo = positionals[0]!;
  todoIdArg(todo, usage);
  const goal = goalFrom(io, values.goal);
  const request = { goal, todo, ...releaseRequester(io, values, usage) };
  const store = await openStore(io, false);
  const result = store ? await store.release(request, Date.now()) : ({ kind: 'refused', why: 'no_active_lease' } as const);
  store?.close();
  if (result.kind === 'released') {
    if (values.json) printJson(io, { ok: true, lease: leaseView(result.lease) });
    else io.out(`released ${todo} (was ${result.lease.owner}, epoch ${result.lease.epoch}); its capture ${result.lease.capture} is released for good\n`);
    return EXIT.done;
  }
  const holder = result.kind === 'refused' && 'lease' in result ? result.lease : undefined;
  if (values.json) printJson(io, { ok: false, reason: result.why, lease: holder ? leaseView(holder) : null });
  else if (result.why === 'no_active_lease') io.err(`Todo ${todo} has no active lease in ${goal}\n`);
  else
    io.err(
      `Todo ${todo} is held by ${holder?.owner} (epoch ${holder?.epoch}); to release someone else's lease: turnkeeper release ${todo} --force --reason "<why>"\n`,
    );
  return EXIT.refused;
}

export async function receiptsCommand(args: string[], io: Io): Promise<number> {
  const usage = 'turnkeeper receipts [--limit <n>] [--before <seq>] [--json]';
  const { values } = parse(args, { json: { type: 'boolean' }, limit: { type: 'string' }, before: { type: 'string' } }, { min: 0, max: 0, usage });
  const limit = Number(values.limit ?? 20);
  const before = values.before === undefined ? undefined : Number(values.before);
  if (!Number.isSafeInteger(limit) || limit < 1 || (before !== undefined && !Number.isSafeInteger(before)))
    throw new UsageError(`--limit takes a whole number from 1 and --before a receipt number\nusage: ${usage}`);
  const store = await openStore(io, false);
  let page: { row: ReceiptRow; doc: ReceiptDocument | undefined }[];
  let names = new Map<string, string>();
  const checkoutOf = new Map<string, string | undefined>();
  try {
    // Each receipt parsed once; only a well-formed one is read field by field.
    page = (store ? await store.receipts({ beforeSeq: before, limit }) : []).map((row) => ({ row, doc: parseReceipt(row.doc) }));
    if (store && !values.json) {
      // The labels of the text view: the Goals' names, and the checkout of each capture this page names (not every capture).
      names = await goalNames(store);
      for (const id of new Set(page.flatMap(({ doc }) => (doc?.capture ? [doc.capture] : [])))) checkoutOf.set(id, (await store.getCapture(id))?.checkout);
    }
  } finally {
    store?.close();
  }
  if (values.json) {
    printJson(
      io,
      page.map(({ row, doc }) => ({ seq: row.seq, hash: row.hash, doc: doc ?? null, ...(doc ? {} : { text: row.doc }) })),
    );
    return EXIT.done;
  }
  io.out(hereLine(io));
  if (!store) {
    // A missing store is not an empty log.
    io.out(`no store at ${storePath(io.env)} yet, so no receipts\n`);
    return EXIT.done;
  }
  const rows = page.map(({ row }) => row);
  const place = placeHeader(names, '');
  for (const { row, doc } of page) {
    if (!doc) {
      io.out(`  #${row.seq} (not a receipt: ${JSON.stringify(String(row.doc).slice(0, 80))}; turnkeeper verify)\n`);
      continue;
    }
    io.out(place(doc.goal, doc.capture ? checkoutOf.get(doc.capture) : undefined));
    const reason = typeof doc.detail?.reason === 'string' ? ` [${doc.detail.reason}]` : '';
    io.out(
      `  #${row.seq} ${doc.at} ${doc.kind.padEnd(18)} ${(doc.todo ?? '').padEnd(20)} ${doc.owner ?? ''}` +
        `${doc.lease ? ` epoch ${doc.lease.epoch} v${doc.lease.version}` : ''}${doc.capture ? ` ${doc.capture}` : ''}${reason}\n`,
    );
  }
  const oldest = rows.at(-1)?.seq;
  if (rows.length === 0) io.out(before === undefined ? 'no receipts yet\n' : `no receipts before #${before}\n`);
  else if (rows.length === limit && oldest !== undefined && oldest > 1)
    io.out(`older receipts: turnkeeper receipts --before ${oldest}${values.limit ? ` --limit ${limit}` : ''}\n`);
  else io.out('(the first receipt of the chain is shown; turnkeeper verify checks the chain)\n');
  return EXIT.done;
}
