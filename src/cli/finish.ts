// `turnkeeper todo done <id> --merge|--squash|--rebase|--keep-branch [--remove-worktree]` (spec §7
// "Finish"): the CLI's shell over src/launcher/finish.ts. Plain `todo done <id>` stays in ./todo.ts.
import { FINISH_STRATEGIES, type FinishStrategy } from '../checkout/worktrees';
import { finishTodo } from '../launcher/finish';
import { counted, terminalSafe } from '../core/terminal';
import { leaseView } from '../doctor/status';
import { EXIT, goalFrom, goneNote, openStore, parse, printJson, releaseRequester, todoIdArg, unknownTodo, UsageError, type Io } from './io';
import { withGoneHolder } from '../ledger/live';
import { launchProcessState } from '../launcher/liveness';

const FLAGS = [...FINISH_STRATEGIES.map((strategy) => `--${strategy}`), '--remove-worktree'];

/** Whether a `todo done` command line asks for a finish (a strategy or --remove-worktree), which this module handles. */
export const isFinishArgs = (args: readonly string[]): boolean => args.some((arg) => FLAGS.includes(arg));

export async function finishCommand(args: string[], io: Io): Promise<number> {
  const usage =
    'turnkeeper todo done <id> --merge|--squash|--rebase|--keep-branch [--remove-worktree] [--branch <name>] [--owner <agent:session>] [--force --reason <why>] [--goal <dir>] [--json]';
  const { values, positionals } = parse(
    args,
    {
      merge: { type: 'boolean' },
      squash: { type: 'boolean' },
      rebase: { type: 'boolean' },
      'keep-branch': { type: 'boolean' },
      'remove-worktree': { type: 'boolean' },
      branch: { type: 'string' },
      force: { type: 'boolean' },
      reason: { type: 'string' },
      owner: { type: 'string' },
      goal: { type: 'string' },
      json: { type: 'boolean' },
    },
    { min: 1, max: 1, usage },
  );
  const id = todoIdArg(positionals[0]!, usage);
  const strategies = FINISH_STRATEGIES.filter((strategy) => values[strategy]);
  if (strategies.length !== 1) throw new UsageError(`give exactly one of --merge, --squash, --rebase, --keep-branch\nusage: ${usage}`);
  const strategy: FinishStrategy = strategies[0]!;
  const goal = goalFrom(io, values.goal);
  const request = releaseRequester(io, values, usage);
  const store = await openStore(io, false);
  if (!store) return unknownTodo(io, values.json, undefined, goal, id);
  try {
    // The holder's launched agent gone from this machine: its lease ends with no flag (spec §2 "Release").
    const asked = await withGoneHolder(store, { goal, todo: id }, request, launchProcessState);
    const result = await finishTodo({
      store,
      goal,
      todo: id,
      cwd: values.goal ?? io.cwd,
      env: io.env,
      strategy,
      removeWorktree: values['remove-worktree'] ?? false,
      branch: values.branch,
      request: asked,
    });
    // An unknown Todo is said as every command says it: with the Todo ids near it.
    if (!result.ok && result.reason === 'unknown_todo') return await unknownTodo(io, values.json, store, goal, id);
    if (!result.ok) {
      if (values.json)
        printJson(io, { ok: false, reason: result.reason, todo: id, goal, detail: result.detail, ...(result.lease ? { lease: leaseView(result.lease) } : {}) });
      else io.err(`refused [${result.reason}]: ${terminalSafe(result.detail)}\n`);
      return EXIT.refused;
    }
    const { plan, outcome, released } = result;
    if (values.json)
      printJson(io, {
        ok: true,
        todo: id,
        strategy,
        branch: plan.branch,
        into: plan.into,
        commits: plan.ahead,
        before: plan.before,
        after: outcome.after,
        merged: outcome.merged,
        worktreeRemoved: outcome.worktreeRemoved,
        branchDeleted: outcome.branchDeleted,
        kept: outcome.kept,
        released: released ?? null,
      });
    else {
      const verb = { merge: 'merged', squash: 'squashed', rebase: 'rebased', 'keep-branch': 'kept' }[strategy];
      const merged = outcome.merged
        ? `${verb} ${plan.branch} (${counted(plan.ahead, 'commit')}) into ${plan.into}, now ${outcome.after.head.slice(0, 12)}`
        : `nothing merged (${strategy === 'keep-branch' ? 'branch kept' : `${plan.branch} has no commits beyond ${plan.into}`})`;
      const removed = [outcome.worktreeRemoved ? `removed worktree ${plan.worktree}` : '', outcome.branchDeleted ? `deleted branch ${plan.branch}` : '']
        .filter(Boolean)
        .join(', ');
      io.out(
        `Todo ${id} is done: ${merged}${removed ? `; ${removed}` : ''}${released ? `; released the lease of ${released.owner} (epoch ${released.epoch})${goneNote(released, asked)}` : ''}\n`,
      );
      for (const line of outcome.kept) io.out(`${line}\n`);
    }
    return EXIT.done;
  } finally {
    store.close();
  }
}
