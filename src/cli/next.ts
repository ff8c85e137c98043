// `turnkeeper next`: the Todos an agent could start now, oldest first (docs/spec.md §8). Ready means
// open, every dependency done, and no active lease: a held Todo (even one whose lease expired, which is
// a hold, not a release) is someone's, and a claim of it would be refused. Derived in one indexed query
// (port.ts `readyTodos`) from the rows as they are, so two machines marking Todos done at once never
// leave a stale "blocked" behind.
import { EXIT, goalFrom, openStore, parse, printJson, UsageError, type Io } from './io';

/** How many ready Todos `next` shows unless told (`--limit`). */
const NEXT_SHOWN = 10;

export async function nextCommand(args: string[], io: Io): Promise<number> {
  const usage = 'turnkeeper next [--goal <dir>] [--limit <n>] [--json]';
  const { values } = parse(args, { goal: { type: 'string' }, limit: { type: 'string' }, json: { type: 'boolean' } }, { min: 0, max: 0, usage });
  const limit = Number(values.limit ?? NEXT_SHOWN);
  if (!Number.isSafeInteger(limit) || limit < 1) throw new UsageError(`--limit takes a whole number from 1\nusage: ${usage}`);
  const goal = goalFrom(io, values.goal);
  const store = await openStore(io, false);
  let ready;
  try {
    // One more than shown: whether more are ready, without counting them all.
    ready = store ? await store.readyTodos(goal, limit + 1) : [];
  } finally {
    store?.close();
  }
  const more = ready.length > limit;
  if (more) ready = ready.slice(0, limit);
  if (values.json) printJson(io, ready);
  else if (ready.length === 0) io.out(`no ready Todos in ${goal}: each open one is held or waits on another (turnkeeper todo list)\n`);
  else {
    for (const todo of ready) io.out(`${todo.id.padEnd(24)} ${todo.title}\n`);
    io.out(`start one: turnkeeper start ${ready[0]!.id} --agent <agent>, or prompt an agent with "#todo:${ready[0]!.id}"\n`);
  }
  // On stderr, so that --json stays the array.
  if (more) io.err(`more ready Todos than the ${limit} shown: turnkeeper next --limit <n>\n`);
  return EXIT.done;
}
