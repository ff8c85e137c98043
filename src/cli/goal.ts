// `turnkeeper goal [--json]`, `goal init`, `goal move --from <goal>` (docs/goals.md): which repository
// this directory belongs to and why, a rename-proof key for teams, and carrying a repository's work to
// its new Goal after its key changed.
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { GOAL_FILE, isGoalId } from '../core/goal';
import { placementOf, resolveGoal, type ResolvedGoal } from '../checkout/goal';
import { EXIT, openStore, parse, printJson, resolveGoalFrom, UsageError, type Io } from './io';

const USAGE =
  'turnkeeper goal [--json] [--dir <dir>]  |  goal init [--key <key>] [--dir <dir>]  |  goal move --from <goal> [--rename <suffix>] [--dir <dir>] [--json]';

export async function goalCommand(args: string[], io: Io): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === 'init') return goalInit(rest, io);
  if (sub === 'move') return goalMove(rest, io);
  return goalShow(sub === undefined ? [] : args, io);
}

const RULES: Readonly<Record<ResolvedGoal['rule'], string>> = {
  turnkeeper_json: `the "goal" of ${GOAL_FILE} at the checkout root`,
  origin: 'the normalized URL of the origin remote',
  common_dir: "the repository's own git directory (no .turnkeeper.json, no usable origin)",
  not_git: 'the directory itself (outside git)',
};

async function goalShow(args: string[], io: Io): Promise<number> {
  const { values } = parse(args, { json: { type: 'boolean' }, dir: { type: 'string' } }, { min: 0, max: 0, usage: USAGE });
  const goal = resolveGoalFrom(io, values.dir);
  // What the store remembers for this repository: a different Goal means `goal move` is due.
  const store = await openStore(io, false);
  const known = await store?.goalOfPlace(placementOf(goal).place);
  store?.close();
  const changedFrom = known && known.goal !== goal.id ? known.goal : null;
  if (values.json) {
    printJson(io, {
      id: goal.id,
      key: goal.key,
      rule: goal.rule,
      name: goal.displayName,
      checkout: goal.checkout,
      commonDir: goal.commonDir,
      originSkipped: goal.originSkipped,
      changedFrom,
    });
    return EXIT.done;
  }
  io.out(`Goal ${goal.id}  (${goal.displayName})\n`);
  io.out(`  key       ${goal.key}\n  rule      ${RULES[goal.rule]}\n  checkout  ${goal.checkout}\n`);
  if (goal.commonDir) io.out(`  git dir   ${goal.commonDir}\n`);
  if (goal.originSkipped) io.out(`  origin not used: ${goal.originSkipped}\n`);
  if (changedFrom) io.out(`warning: this repository used Goal ${changedFrom} until now; run: turnkeeper goal move --from ${changedFrom}\n`);
  return EXIT.done;
}

function goalInit(args: string[], io: Io): number {
  const { values } = parse(args, { key: { type: 'string' }, dir: { type: 'string' }, json: { type: 'boolean' } }, { min: 0, max: 0, usage: USAGE });
  const goal = resolveGoalFrom(io, values.dir);
  if (goal.rule === 'not_git' || goal.commonDir === null)
    throw new UsageError(`${goal.checkout} is not in a git repository: ${GOAL_FILE} belongs at a repository's root`);
  const file = join(goal.checkout, GOAL_FILE);
  if (existsSync(file)) throw new UsageError(`${file} exists already (Goal ${goal.id}, key ${goal.key})`);
  // By default the key the repository has today, so the Goal id does not change when the file lands.
  const key = values.key ?? goal.key;
  if (key.trim() !== key || key === '' || key.length > 256 || /[\u0000-\u001f\u007f]/.test(key))
    throw new UsageError('--key must be 1-256 characters without surrounding spaces or control characters');
  writeFileSync(file, JSON.stringify({ goal: key }, null, 2) + '\n', { flag: 'wx' });
  const after = resolveGoal(goal.checkout);
  if (values.json) printJson(io, { ok: true, file, key, id: after.id, previous: goal.id });
  else {
    io.out(`wrote ${file} (key ${JSON.stringify(key)}): Goal ${after.id}\n`);
    io.out(`commit it, so every clone and worktree finds it: git add ${GOAL_FILE} && git commit -m "Turnkeeper Goal"\n`);
    if (after.id !== goal.id) io.out(`the Goal changed from ${goal.id}; carry its Todos over: turnkeeper goal move --from ${goal.id}\n`);
  }
  return EXIT.done;
}

async function goalMove(args: string[], io: Io): Promise<number> {
  const { values } = parse(
    args,
    { from: { type: 'string' }, rename: { type: 'string' }, dir: { type: 'string' }, json: { type: 'boolean' } },
    { min: 0, max: 0, usage: USAGE },
  );
  if (values.rename !== undefined && !/^[a-z0-9][a-z0-9_-]{0,20}$/.test(values.rename))
    throw new UsageError('--rename takes a short suffix of a-z, 0-9, "-" and "_" (the colliding Todos become <id>-<suffix>)');
  if (!values.from) throw new UsageError(`goal move needs --from <goal>\nusage: ${USAGE}`);
  // A path-keyed Goal of the previous release, or a Goal id.
  const from: string = values.from;
  if (!isGoalId(from) && !from.startsWith('/'))
    throw new UsageError(`--from takes a Goal id (goal_ and 24 hex digits) or, for a store of the previous release, the checkout path it used`);
  const goal = resolveGoalFrom(io, values.dir);
  const store = await openStore(io, false);
  if (!store) {
    io.err(`no store: nothing to move\n`);
    return EXIT.refused;
  }
  try {
    const result = await store.moveGoal(from, placementOf(goal), Date.now(), values.rename === undefined ? {} : { renameCollidingWith: values.rename });
    if (values.json) printJson(io, { ok: result.kind === 'moved', from: values.from, to: goal.id, ...result });
    else if (result.kind === 'moved') {
      io.out(`moved ${result.todos} Todos, ${result.leases} leases and ${result.captures} captures from ${values.from} to ${goal.id} (${goal.displayName})\n`);
      for (const r of result.renamed) io.out(`  renamed ${r.from} to ${r.to} (it collided with a Todo already in ${goal.displayName})\n`);
    } else if (result.why === 'todo_collision')
      io.err(
        `not moved: Todos ${result.todos?.join(', ')} exist under both Goals; move anyway, renaming the moving ones: turnkeeper goal move --from ${values.from} --rename moved\n`,
      );
    else if (result.why === 'same_goal') io.err(`not moved: ${values.from} is already this repository's Goal\n`);
    else io.err(`not moved: the store has nothing under ${values.from}\n`);
    return result.kind === 'moved' ? EXIT.done : EXIT.refused;
  } finally {
    store.close();
  }
}
