// `turnkeeper store init [--hook-role <role>]`: create or migrate the selected store's schema (a team
// server's is never created by a hook) and print what was created.
import { describeSelection, initializeStore, selectStore } from '../lifecycle/open';
import { EXIT, parse, printJson, UsageError, type Io } from './io';

const USAGE = 'turnkeeper store init [--hook-role <role>] [--json]';

export async function storeCommand(args: string[], io: Io): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'init') throw new UsageError(`usage: ${USAGE}`);
  const { values } = parse(rest, { 'hook-role': { type: 'string' }, json: { type: 'boolean' } }, { min: 0, max: 0, usage: USAGE });
  const selection = selectStore(io.env);
  if (values['hook-role'] !== undefined && selection.kind !== 'postgres') throw new UsageError('--hook-role is for a PostgreSQL team store (TURNKEEPER_STORE=postgres://…)');
  const report = await initializeStore(io.env, { hookRole: values['hook-role'] });
  if (values.json) printJson(io, { ok: true, ...report });
  else {
    io.out(`store ${describeSelection(selection)} at schema version ${report.schemaVersion}\n`);
    for (const line of report.created) io.out(`  created ${line}\n`);
    if (report.created.length === 0) io.out('  nothing to create: it was up to date\n');
  }
  return EXIT.done;
}
