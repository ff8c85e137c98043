// `turnkeeper store init [--hook-role <role>]`: create or migrate the selected store's schema (a team
// server's is never created by a hook) and print what was created.
import { describeSelection, initializeStore, openAuthority, selectStore } from '../ledger/open';
import { TodoExistsError } from '../store/authority';
import { EXIT, parse, printJson, unknownSubcommand, UsageError, type Io } from './io';

const USAGE = 'turnkeeper store init [--hook-role <role>] [--json]  |  store copy --to <postgres://…|sqlite:<path>> [--json]';

export async function storeCommand(args: string[], io: Io): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === 'copy') return storeCopy(rest, io);
  if (sub !== 'init') throw unknownSubcommand('store', sub, ['init', 'copy'], USAGE);
  const { values } = parse(rest, { 'hook-role': { type: 'string' }, json: { type: 'boolean' } }, { min: 0, max: 0, usage: USAGE });
  const selection = selectStore(io.env);
  if (values['hook-role'] !== undefined && selection.kind !== 'postgres')
    throw new UsageError('--hook-role is for a PostgreSQL team store (TURNKEEPER_STORE=postgres://…)');
  const report = await initializeStore(io.env, { hookRole: values['hook-role'] });
  if (values.json) printJson(io, { ok: true, ...report });
  else {
    io.out(`store ${describeSelection(selection)} at schema version ${report.schemaVersion}\n`);
    for (const line of report.created) io.out(`  created ${line}\n`);
    for (const line of report.revoked) io.out(`  revoked ${line}\n`);
    for (const line of report.unchanged) io.out(`  ${line}\n`);
    if (report.created.length === 0 && report.revoked.length === 0) io.out('  nothing to create: it was up to date\n');
  }
  return EXIT.done;
}

/**
 * From solo to team without retyping: the selected store's Todos are added to the target store, and a
 * `history_imported` receipt there names the source chain's head (its seq and hash), so the old chain
 * stays verifiable against the new one. Leases and captures are not copied: they belong to agent
 * sessions of the old store; agents claim again in the new one.
 */
async function storeCopy(args: string[], io: Io): Promise<number> {
  const { values } = parse(args, { to: { type: 'string' }, json: { type: 'boolean' } }, { min: 0, max: 0, usage: USAGE });
  if (!values.to) throw new UsageError(`store copy needs --to <store>\nusage: ${USAGE}`);
  const from = await openAuthority(io.env, { create: false });
  if (!from) {
    io.err(`no store at ${describeSelection(selectStore(io.env))}: nothing to copy\n`);
    return EXIT.refused;
  }
  const to = await openAuthority({ ...io.env, TURNKEEPER_STORE: values.to }, { create: true });
  try {
    if (to!.location === from.location) throw new UsageError('--to names the store being copied');
    const todos = await from.listTodos();
    const head = (await from.receipts({ limit: 1 }))[0];
    const chain = await from.verifyChain();
    let copied = 0;
    const skipped: string[] = [];
    for (const todo of todos) {
      try {
        const added = await to!.addTodo({ goal: todo.goal, id: todo.id, title: todo.title, body: todo.body }, Date.now());
        if (todo.status === 'blocked' && todo.blockReason) await to!.blockTodo(added.goal, added.id, todo.blockReason, Date.now());
        else if (todo.status !== 'open') await to!.setTodoStatus(added.goal, added.id, todo.status, Date.now());
        copied += 1;
      } catch (error) {
        if (!(error instanceof TodoExistsError)) throw error;
        skipped.push(`${todo.id} (${todo.goal})`);
      }
    }
    // The dependencies of the open and blocked Todos copied (a done Todo waits on nothing), once all
    // Todos are there; an edge whose Todo was already in the target is left to the target's own.
    const skippedIds = new Set(skipped);
    for (const edge of await from.dependenciesOfLive())
      if (!skippedIds.has(`${edge.todo} (${edge.goal})`)) await to!.changeDependencies(edge.goal, edge.todo, { add: [edge.dependency] }, Date.now());
    const goal = todos[0]?.goal ?? '-';
    const receipt = await to!.appendReceipt(
      {
        kind: 'history_imported',
        goal,
        detail: { from: from.location, headSeq: head?.seq ?? 0, headHash: head?.hash ?? null, chainVerified: chain.ok, todos: copied },
      },
      Date.now(),
    );
    const note = 'Leases and captures are not copied: agents claim their Todos again in the new store.';
    if (values.json) printJson(io, { ok: true, from: from.location, to: to!.location, copied, skipped, receipt, note });
    else {
      io.out(
        `copied ${copied} Todos from ${from.location} to ${to!.location}${skipped.length ? ` (${skipped.length} already there: ${skipped.join(', ')})` : ''}\n`,
      );
      io.out(
        `the source chain's head (#${head?.seq ?? 0}) is named by receipt #${receipt.seq} there${chain.ok ? '' : ' — note: the source chain does NOT verify'}\n${note}\n`,
      );
    }
    return EXIT.done;
  } finally {
    from.close();
    to?.close();
  }
}
