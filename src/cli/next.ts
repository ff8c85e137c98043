// `turnkeeper next`: the Todos an agent could start now, oldest first (docs/spec.md §8). Ready means
// open, every dependency done, and no active lease: a held Todo (even one whose lease expired, which is
// a hold, not a release) is someone's, and a claim of it would be refused. Derived in one indexed query
// (port.ts `readyTodos`) from the rows as they are, so two machines marking Todos done at once never
// leave a stale "blocked" behind.
import type { Authority } from '../store/authority';
import { oneLine } from '../core/terminal';
import { EXIT, goalFrom, openStore, parse, printJson, resolveGoalFrom, UsageError, type Io } from './io';

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
  let none = '';
  try {
    // One more than shown: whether more are ready, without counting them all.
    ready = store ? await store.readyTodos(goal, limit + 1) : [];
    if (ready.length === 0 && !values.json) none = await whyNoneReady(store, goal, () => resolveGoalFrom(io, values.goal).displayName);
  } finally {
    store?.close();
  }
  const more = ready.length > limit;
  if (more) ready = ready.slice(0, limit);
  if (values.json) printJson(io, ready);
  else if (ready.length === 0) io.out(`${none}\n`);
  else {
    for (const todo of ready) io.out(`${todo.id.padEnd(24)} ${oneLine(todo.title)}\n`);
    io.out(`start one: turnkeeper start ${ready[0]!.id} --agent <agent>, or prompt an agent with "#todo:${ready[0]!.id}"\n`);
  }
  // On stderr, so that --json stays the array.
  if (more) io.err(`more ready Todos than the ${limit} shown: turnkeeper next --limit <n>\n`);
  return EXIT.done;
}

/**
 * Why nothing is ready, in the words a person acts on: no Todo yet, every one done, or how many open
 * ones are held or wait and how many a person blocked. The Goal by its name (docs/goals.md).
 */
async function whyNoneReady(store: Authority | undefined, goal: string, nameHere: () => string): Promise<string> {
  const todos = store ? await store.listTodos(goal) : [];
  // The store's name for the Goal; before it has one (no Todo was ever added), the name it will get here.
  const name = (store ? (await store.listGoals()).find((row) => row.id === goal)?.displayName : undefined) ?? nameHere();
  const count = (status: string) => todos.filter((todo) => todo.status === status).length;
  if (todos.length === 0) return `no Todos in Goal ${name} yet: turnkeeper todo add "<title>"`;
  const open = count('open');
  const blocked = count('blocked');
  if (open === 0 && blocked === 0) return `every Todo of Goal ${name} is done (${todos.length}): turnkeeper todo add "<title>" for the next one`;
  const parts = [
    ...(open > 0 ? [`${open} open ${open === 1 ? 'one is' : 'ones are'} held or ${open === 1 ? 'waits' : 'wait'} on another Todo`] : []),
    ...(blocked > 0 ? [`${blocked} ${blocked === 1 ? 'is' : 'are'} blocked`] : []),
  ];
  return `no ready Todos in Goal ${name}: ${parts.join(', ')} (turnkeeper todo list)`;
}
