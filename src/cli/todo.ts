// `turnkeeper todo add|list|done|reopen`
import { todoIdFromTitle } from '../core/ids';
import { GoalChangedError, TodoExistsError, type Todo } from '../store/authority';
import { leaseView } from '../doctor/status';
import { finishCommand, isFinishArgs } from './finish';
import { EXIT, goalFrom, openStore, parse, placementFrom, printJson, releaseRequester, todoIdArg, UsageError, type Io } from './io';

export async function todoCommand(args: string[], io: Io): Promise<number> {
  const [sub, ...rest] = args;
  switch (sub) {
    case 'add':
      return todoAdd(rest, io);
    case 'list':
      return todoList(rest, io);
    case 'done':
      // With a git strategy it is a finish (./finish.ts): merge the Todo's branch back first.
      return isFinishArgs(rest) ? finishCommand(rest, io) : todoDone(rest, io);
    case 'reopen':
      return todoReopen(rest, io);
    default:
      throw new UsageError('usage: turnkeeper todo add|list|done|reopen …');
  }
}

async function todoAdd(args: string[], io: Io): Promise<number> {
  const usage = 'turnkeeper todo add <title> [--id <id>] [--body <text>] [--goal <dir>] [--json]';
  const { values, positionals } = parse(
    args,
    { id: { type: 'string' }, body: { type: 'string' }, goal: { type: 'string' }, json: { type: 'boolean' } },
    { min: 1, max: 1, usage },
  );
  const title = positionals[0]!.trim();
  if (title === '' || !title.isWellFormed()) throw new UsageError(`the title must be non-empty text\nusage: ${usage}`);
  const id = values.id ?? todoIdFromTitle(title);
  todoIdArg(id, usage);
  const placement = placementFrom(io, values.goal);
  const goal = placement.goal;
  const store = (await openStore(io, true))!;
  try {
    const todo = await store.addTodo({ goal, id, title, body: values.body ?? '' }, Date.now(), placement);
    if (values.json) printJson(io, todo);
    else io.out(`added Todo ${todo.id} in ${placement.displayName} (${goal})\nprompt an agent with "#todo:${todo.id}" to work on it\n`);
    return EXIT.done;
  } catch (error) {
    if (error instanceof GoalChangedError) {
      if (values.json) printJson(io, { ok: false, reason: 'goal_changed', previous: error.previous, goal });
      else io.err(`${error.message}\n`);
      return EXIT.refused;
    }
    if (!(error instanceof TodoExistsError)) throw error;
    if (values.json) printJson(io, { ok: false, reason: 'todo_exists', todo: id, goal });
    else io.err(`Todo ${id} already exists in ${goal} (turnkeeper todo list)\n`);
    return EXIT.refused;
  } finally {
    store.close();
  }
}

/** How many done Todos `todo list` shows by default (the newest); open and blocked ones are all shown. */
const DONE_TODOS_SHOWN = 50;

async function todoList(args: string[], io: Io): Promise<number> {
  const usage = 'turnkeeper todo list [--goal <dir> | --all] [--limit <n|all>] [--json]';
  const { values } = parse(
    args,
    { json: { type: 'boolean' }, goal: { type: 'string' }, all: { type: 'boolean' }, limit: { type: 'string' } },
    { min: 0, max: 0, usage },
  );
  const doneShown = values.limit === 'all' ? undefined : Number(values.limit ?? DONE_TODOS_SHOWN);
  if (doneShown !== undefined && (!Number.isSafeInteger(doneShown) || doneShown < 0))
    throw new UsageError(`--limit takes a whole number from 0, or all\nusage: ${usage}`);
  const goal = values.all ? undefined : goalFrom(io, values.goal);
  const store = await openStore(io, false);
  let todos: Todo[];
  let olderDone = false;
  try {
    // Open and blocked Todos all, done ones the newest `doneShown` (one indexed query each, issue 19),
    // in the list order of before (Goal, creation, id).
    const [open, blocked, done] = store
      ? await Promise.all([
          store.todosWithStatus('open', goal),
          store.todosWithStatus('blocked', goal),
          store.todosWithStatus('done', goal, doneShown === undefined ? undefined : doneShown + 1),
        ])
      : [[], [], []];
    if (doneShown !== undefined && done.length > doneShown) {
      olderDone = true;
      done.shift();
    }
    todos = [...open, ...blocked, ...done].sort(
      (a, b) => (a.goal < b.goal ? -1 : a.goal > b.goal ? 1 : 0) || a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
    );
  } finally {
    store?.close();
  }
  if (values.json) printJson(io, todos);
  else if (todos.length === 0 && !olderDone) io.out(`no Todos${goal ? ` in ${goal}` : ''}; add one: turnkeeper todo add "<title>"\n`);
  else for (const todo of todos) io.out(`${todo.status.padEnd(7)} ${todo.id.padEnd(24)} ${todo.title}${values.all ? `  (${todo.goal})` : ''}\n`);
  // On stderr, so that --json stays the array it was: older done Todos exist and were left out.
  if (olderDone) io.err(`older done Todos not shown (the newest ${doneShown} are): turnkeeper todo list --limit all, or --limit <n>\n`);
  return EXIT.done;
}

/**
 * `todo done <id>`: the Todo is done, and its active lease released in the same step. Someone else's
 * lease is released only as `turnkeeper release` would: the caller is identified the same way (the
 * agent's environment, `--owner`, TURNKEEPER_OWNER), and anyone but the holder needs `--force --reason`.
 */
async function todoDone(args: string[], io: Io): Promise<number> {
  const usage = 'turnkeeper todo done <id> [--owner <agent:session>] [--force --reason <why>] [--goal <dir>] [--json]';
  const { values, positionals } = parse(
    args,
    { force: { type: 'boolean' }, reason: { type: 'string' }, owner: { type: 'string' }, goal: { type: 'string' }, json: { type: 'boolean' } },
    { min: 1, max: 1, usage },
  );
  const id = positionals[0]!;
  todoIdArg(id, usage);
  const goal = goalFrom(io, values.goal);
  const request = releaseRequester(io, values, usage);
  const store = await openStore(io, false);
  let result;
  try {
    result = store ? await store.setTodoStatus(goal, id, 'done', Date.now(), request) : undefined;
  } finally {
    store?.close();
  }
  if (!result) {
    if (values.json) printJson(io, { ok: false, reason: 'unknown_todo', todo: id, goal });
    else io.err(`Todo ${id} does not exist in ${goal} (turnkeeper todo list)\n`);
    return EXIT.refused;
  }
  if (result.kind === 'refused') {
    const holder = result.lease;
    if (values.json) printJson(io, { ok: false, reason: result.why, todo: id, goal, lease: leaseView(holder) });
    else
      io.err(
        `Todo ${id} is held by ${holder.owner} (epoch ${holder.epoch}), and marking it done releases that lease; nothing was changed. ` +
          `To release someone else's lease: turnkeeper todo done ${id} --force --reason "<why>"\n`,
      );
    return EXIT.refused;
  }
  if (values.json) printJson(io, { ok: true, todo: result.todo, released: result.released ?? null });
  else io.out(`Todo ${id} is done${result.released ? `; released the lease of ${result.released.owner} (epoch ${result.released.epoch})` : ''}\n`);
  return EXIT.done;
}

/**
 * `todo reopen <id>`: a done (or blocked) Todo becomes open again, so a new turn can claim it. The
 * lease that `todo done` released stays released (spec §2 "Release"): the next claim acquires a new
 * one at epoch + 1, and the old capture stays readable only. A `todo_status_changed` receipt says so.
 */
async function todoReopen(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parse(
    args,
    { goal: { type: 'string' }, json: { type: 'boolean' } },
    { min: 1, max: 1, usage: 'turnkeeper todo reopen <id> [--goal <dir>] [--json]' },
  );
  const id = positionals[0]!;
  todoIdArg(id);
  const goal = goalFrom(io, values.goal);
  const store = await openStore(io, false);
  try {
    const todo = store ? await store.getTodo(goal, id) : undefined;
    if (!store || !todo) {
      if (values.json) printJson(io, { ok: false, reason: 'unknown_todo', todo: id, goal });
      else io.err(`Todo ${id} does not exist in ${goal} (turnkeeper todo list)\n`);
      return EXIT.refused;
    }
    if (todo.status === 'open') {
      // Nothing to do, and nothing written: reopening an open Todo is not an event.
      if (values.json) printJson(io, { ok: true, todo, changed: false });
      else io.out(`Todo ${id} is already open\n`);
      return EXIT.done;
    }
    // Reopening releases nothing, so no one needs to be identified.
    const result = (await store.setTodoStatus(goal, id, 'open', Date.now()))!;
    if (values.json) printJson(io, { ok: true, todo: result.todo, changed: true, from: todo.status });
    else io.out(`Todo ${id} is open again (was ${todo.status}); a turn that names #todo:${id} acquires a new lease\n`);
    return EXIT.done;
  } finally {
    store?.close();
  }
}
