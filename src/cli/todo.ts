// `turnkeeper todo add|list|done|reopen|block|unblock`
import { todoIdFromTitle } from '../core/ids';
import { oneLine } from '../core/terminal';
import { GoalChangedError, TodoDependencyError, TodoExistsError, type Authority, type Todo, type TodoDependency } from '../store/authority';
import { leaseView } from '../doctor/status';
import { withGoneHolder } from '../ledger/live';
import { launchProcessState } from '../launcher/liveness';
import { placementOf } from '../checkout/goal';
import { finishCommand, isFinishArgs } from './finish';
import {
  EXIT,
  goalFrom,
  openStore,
  parse,
  placementFrom,
  printJson,
  releaseRequester,
  resolveGoalFrom,
  todoIdArg,
  unknownSubcommand,
  unknownTodo,
  UsageError,
  type Io,
  goneNote,
} from './io';

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
    case 'block':
      return todoBlock(rest, io);
    case 'unblock':
      return todoUnblock(rest, io);
    default:
      throw unknownSubcommand('todo', sub, ['add', 'list', 'done', 'reopen', 'block', 'unblock'], 'turnkeeper todo add|list|done|reopen|block|unblock …');
  }
}

/** `--after a --after b`, or `--after a,b`: the Todo ids, each checked. */
function afterIds(values: readonly string[] | undefined, usage: string): string[] {
  return (values ?? [])
    .flatMap((value) => value.split(','))
    .map((id) => id.trim())
    .filter((id) => id !== '')
    .map((id) => todoIdArg(id, usage));
}

/** A refused dependency (an unknown id, the Todo itself, a cycle): said plainly, nothing changed. */
function dependencyRefusal(io: Io, json: boolean | undefined, error: TodoDependencyError): number {
  const reason = error.why === 'cycle' ? 'dependency_cycle' : 'unknown_todo';
  if (json) printJson(io, { ok: false, reason, todo: error.todo, goal: error.goal, ids: error.ids });
  else io.err(`${error.message}\n`);
  return EXIT.refused;
}

async function todoAdd(args: string[], io: Io): Promise<number> {
  const usage = 'turnkeeper todo add <title> [--id <id>] [--body <text>] [--after <id>…] [--goal <dir>] [--json]';
  const { values, positionals } = parse(
    args,
    { id: { type: 'string' }, body: { type: 'string' }, after: { type: 'string', multiple: true }, goal: { type: 'string' }, json: { type: 'boolean' } },
    { min: 1, max: 1, usage },
  );
  const title = positionals[0]!.trim();
  if (title === '' || !title.isWellFormed()) throw new UsageError(`the title must be non-empty text\nusage: ${usage}`);
  const id = values.id ?? todoIdFromTitle(title);
  todoIdArg(id, usage);
  const after = afterIds(values.after, usage);
  const placement = placementFrom(io, values.goal);
  const goal = placement.goal;
  const store = (await openStore(io, true))!;
  try {
    const todo = await store.addTodo({ goal, id, title, body: values.body ?? '', after }, Date.now(), placement);
    if (values.json) printJson(io, after.length > 0 ? { ...todo, after } : todo);
    else
      io.out(
        `added Todo ${todo.id} in ${placement.displayName} (${goal})${after.length > 0 ? `, after ${after.join(', ')}` : ''}\n` +
          (after.length > 0 ? `it is ready once those are done (turnkeeper next)\n` : `prompt an agent with "#todo:${todo.id}" to work on it\n`),
      );
    return EXIT.done;
  } catch (error) {
    if (error instanceof TodoDependencyError) return dependencyRefusal(io, values.json, error);
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
  const resolved = values.all ? undefined : resolveGoalFrom(io, values.goal);
  const goal = resolved ? placementOf(resolved).goal : undefined;
  const store = await openStore(io, false);
  let todos: Todo[];
  let edges: TodoDependency[] = [];
  let olderDone = false;
  let ownGoalNote = '';
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
    if (store) edges = await store.dependenciesOfLive(goal);
    // A checkout whose origin names no Goal (a local path) has its own; with other Goals in the store,
    // one of them may be another clone of it, whose Todos are not listed here: say why.
    if (store && resolved?.originSkipped && !values.json && (await store.listGoals()).some((row) => row.id !== goal))
      ownGoalNote = `note: these are this checkout's own Todos: ${resolved.originSkipped}, so another clone of the repository has a Goal of its own; to share one: turnkeeper goal init, and commit the .turnkeeper.json it writes\n`;
  } finally {
    store?.close();
  }
  // An open Todo with an undone dependency is shown blocked: derived from the edges as read now, never stored.
  const shown = todos.map((todo) => withDependencies(todo, edges));
  if (values.json) printJson(io, shown);
  else if (todos.length === 0 && !olderDone) io.out(`no Todos${resolved ? ` in Goal ${resolved.displayName}` : ''}; add one: turnkeeper todo add "<title>"\n`);
  else
    for (const todo of shown)
      io.out(`${todo.state.padEnd(7)} ${todo.id.padEnd(24)} ${oneLine(todo.title)}${blockedNote(todo)}${values.all ? `  (${todo.goal})` : ''}\n`);
  // On stderr, so that --json stays the array it was: older done Todos exist and were left out.
  if (olderDone) io.err(`older done Todos not shown (the newest ${doneShown} are): turnkeeper todo list --limit all, or --limit <n>\n`);
  if (ownGoalNote) io.err(ownGoalNote);
  return EXIT.done;
}

/**
 * A listed Todo with what it waits for: `after` (every dependency, when it has some), `waitingOn` (the
 * undone ones) and `state`, its status as people see it (`blocked` while it waits, whatever is stored).
 */
type ListedTodo = Todo & { readonly state: Todo['status']; readonly after?: string[]; readonly waitingOn?: string[] };
function withDependencies(todo: Todo, edges: readonly TodoDependency[]): ListedTodo {
  const own = edges.filter((edge) => edge.goal === todo.goal && edge.todo === todo.id);
  const waitingOn = own.filter((edge) => edge.status !== 'done').map((edge) => edge.dependency);
  const state = todo.status === 'open' && waitingOn.length > 0 ? 'blocked' : todo.status;
  return { ...todo, state, ...(own.length > 0 ? { after: own.map((edge) => edge.dependency), waitingOn } : {}) };
}
const blockedNote = (todo: ListedTodo): string =>
  [
    todo.status === 'blocked' ? `blocked${todo.blockReason ? `: ${oneLine(todo.blockReason)}` : ''}` : '',
    todo.waitingOn?.length ? `waits on ${todo.waitingOn.join(', ')}` : '',
  ]
    .filter(Boolean)
    .map((note) => `  (${note})`)
    .join('');

/**
 * `todo done <id>`: the Todo is done, and its active lease released in the same step. Someone else's
 * lease is released only as `turnkeeper release` would: the caller is identified the same way (the
 * agent's environment, `--owner`, TURNKEEPER_OWNER), and anyone but the holder needs `--force --reason`,
 * unless the holder is an agent launched on this machine whose process is gone (src/ledger/live.ts).
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
  let asked = request;
  try {
    // The holder's launched agent gone from this machine: its lease ends with no flag (spec §2 "Release").
    if (store) asked = await withGoneHolder(store, { goal, todo: id }, request, launchProcessState);
    result = store ? await store.setTodoStatus(goal, id, 'done', Date.now(), asked) : undefined;
    if (!result) return await unknownTodo(io, values.json, store, goal, id);
  } finally {
    store?.close();
  }
  if (result.kind === 'already_done') {
    if (values.json) printJson(io, { ok: false, reason: 'already_done', todo: id, goal });
    else io.err(`Todo ${id} is already done; nothing was changed (turnkeeper todo reopen ${id} to work on it again)\n`);
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
  else
    io.out(
      `Todo ${id} is done${result.released ? `; released the lease of ${result.released.owner} (epoch ${result.released.epoch})${goneNote(result.released, asked)}` : ''}\n`,
    );
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
    if (!store || !todo) return await unknownTodo(io, values.json, store, goal, id);
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

/**
 * `todo block <id> --reason <why>`: a person's block, with its reason (status `blocked`, which releases
 * the active lease as `todo done` does: another Owner's only with `--force`). `--after <id>…` instead
 * (or as well) makes it wait on those Todos until they are done; a cycle or an unknown id is refused.
 */
async function todoBlock(args: string[], io: Io): Promise<number> {
  const usage = 'turnkeeper todo block <id> (--reason <why> | --after <id>…) [--owner <agent:session>] [--force] [--goal <dir>] [--json]';
  const { values, positionals } = parse(
    args,
    {
      reason: { type: 'string' },
      after: { type: 'string', multiple: true },
      owner: { type: 'string' },
      force: { type: 'boolean' },
      goal: { type: 'string' },
      json: { type: 'boolean' },
    },
    { min: 1, max: 1, usage },
  );
  const id = todoIdArg(positionals[0]!, usage);
  const after = afterIds(values.after, usage);
  const reason = values.reason?.trim();
  if (values.reason !== undefined && !reason) throw new UsageError(`--reason needs the words of why it is blocked\nusage: ${usage}`);
  if (!reason && after.length === 0) throw new UsageError(`say why (--reason <why>) or what it waits on (--after <id>)\nusage: ${usage}`);
  const goal = goalFrom(io, values.goal);
  const request = reason ? releaseRequester(io, values, usage) : undefined;
  const store = await openStore(io, false);
  try {
    const todo = store ? await store.getTodo(goal, id) : undefined;
    if (!store || !todo) return await unknownTodo(io, values.json, store, goal, id);
    if (todo.status === 'done') {
      if (values.json) printJson(io, { ok: false, reason: 'todo_not_open', todo: id, goal, status: todo.status });
      else io.err(`Todo ${id} is done; reopen it first if it is not: turnkeeper todo reopen ${id}\n`);
      return EXIT.refused;
    }
    let waitingOn: readonly string[] | undefined;
    if (after.length > 0) {
      try {
        waitingOn = (await store.changeDependencies(goal, id, { add: after }, Date.now()))?.waitingOn;
      } catch (error) {
        if (error instanceof TodoDependencyError) return dependencyRefusal(io, values.json, error);
        throw error;
      }
    }
    let blocked: Todo | undefined;
    if (reason) {
      const result = (await store.blockTodo(goal, id, reason, Date.now(), request))!;
      if (result.kind === 'refused') {
        const holder = result.lease;
        if (values.json) printJson(io, { ok: false, reason: result.why, todo: id, goal, lease: leaseView(holder) });
        else
          io.err(
            `Todo ${id} is held by ${holder.owner} (epoch ${holder.epoch}), and blocking it releases that lease; the block was not recorded${after.length > 0 ? ' (its dependencies were)' : ''}. ` +
              `To release someone else's lease: turnkeeper todo block ${id} --reason "<why>" --force\n`,
          );
        return EXIT.refused;
      }
      blocked = result.todo;
      const released = result.kind === 'changed' ? result.released : undefined;
      if (!values.json && released) io.out(`released the lease of ${released.owner} (epoch ${released.epoch})\n`);
    }
    if (values.json) printJson(io, { ok: true, todo: blocked ?? todo, ...(waitingOn ? { waitingOn } : {}) });
    else {
      if (reason) io.out(`Todo ${id} is blocked: ${reason}\nlift it with: turnkeeper todo unblock ${id}\n`);
      if (waitingOn) io.out(waitingOn.length > 0 ? `Todo ${id} waits on ${waitingOn.join(', ')}\n` : `Todo ${id}'s dependencies are all done\n`);
    }
    return EXIT.done;
  } finally {
    store?.close();
  }
}

/**
 * `todo unblock <id>`: lifts a person's block (the Todo is open again, the reason cleared); `--after
 * <id>…` drops those dependencies instead. Either way a receipt records it.
 */
async function todoUnblock(args: string[], io: Io): Promise<number> {
  const usage = 'turnkeeper todo unblock <id> [--after <id>…] [--goal <dir>] [--json]';
  const { values, positionals } = parse(
    args,
    { after: { type: 'string', multiple: true }, goal: { type: 'string' }, json: { type: 'boolean' } },
    { min: 1, max: 1, usage },
  );
  const id = todoIdArg(positionals[0]!, usage);
  const after = afterIds(values.after, usage);
  const goal = goalFrom(io, values.goal);
  const store = await openStore(io, false);
  try {
    const todo = store ? await store.getTodo(goal, id) : undefined;
    if (!store || !todo) return await unknownTodo(io, values.json, store, goal, id);
    if (after.length > 0) return await dropDependencies(io, store, todo, after, values.json);
    if (todo.status !== 'blocked') {
      const waitingOn = (await store.dependenciesOfLive(goal)).filter((edge) => edge.todo === id && edge.status !== 'done').map((edge) => edge.dependency);
      if (values.json) printJson(io, { ok: true, todo, changed: false, waitingOn });
      else
        io.out(
          `Todo ${id} is not blocked by a person (it is ${todo.status})${waitingOn.length > 0 ? `; it waits on ${waitingOn.join(', ')}: drop one with turnkeeper todo unblock ${id} --after <id>` : ''}\n`,
        );
      return EXIT.done;
    }
    // Unblocking releases nothing (a blocked Todo holds no lease), so no one needs to be identified.
    const result = (await store.setTodoStatus(goal, id, 'open', Date.now()))!;
    if (values.json) printJson(io, { ok: true, todo: result.todo, changed: true });
    else io.out(`Todo ${id} is open again (it was blocked${todo.blockReason ? `: ${todo.blockReason}` : ''})\n`);
    return EXIT.done;
  } finally {
    store?.close();
  }
}

async function dropDependencies(io: Io, store: Authority, todo: Todo, after: readonly string[], json: boolean | undefined): Promise<number> {
  const result = (await store.changeDependencies(todo.goal, todo.id, { remove: after }, Date.now()))!;
  const kept = after.filter((id) => !result.removed.includes(id));
  if (json) printJson(io, { ok: true, todo: result.todo, removed: result.removed, notDependencies: kept, waitingOn: result.waitingOn });
  else {
    if (result.removed.length > 0) io.out(`Todo ${todo.id} no longer waits on ${result.removed.join(', ')}\n`);
    if (kept.length > 0) io.out(`${kept.join(', ')}: not a dependency of ${todo.id}; nothing to drop\n`);
    io.out(result.waitingOn.length > 0 ? `it still waits on ${result.waitingOn.join(', ')}\n` : `it waits on nothing now\n`);
  }
  return EXIT.done;
}
