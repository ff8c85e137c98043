// What every command gets: its arguments, environment, working directory and output streams.
// Commands return an exit code: 0 done, 1 refused (the output names the reason), 2 usage error.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { Env } from '../store/location';
import type { Authority, Placement } from '../store/authority';
import { openAuthority } from '../ledger/open';
import { placementOf, resolveGoal, type ResolvedGoal } from '../checkout/goal';
import { GoalError } from '../core/goal';
import { terminalSafe } from '../core/terminal';
import { didYouMean, nearestTodoIds } from '../core/suggest';
import { isOwner, isTodoId, TODO_ID_RULE } from '../core/ids';
import { holderIsGone, type Lease } from '../core/lease';
import { callerOwner, requesterOf } from '../config/settings';
import { StoreUnavailableError, type StatusChangeRequest } from '../store/authority';

export interface Io {
  readonly env: Env;
  readonly cwd: string;
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  readonly readStdin: (limit: number) => Promise<Buffer>;
  /** Whether a person is at a terminal: stdin and stdout are both one (absent: no). */
  readonly atTerminal?: () => boolean;
}

export const EXIT = { done: 0, refused: 1, usage: 2 } as const;

export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

export type Options = NonNullable<ParseArgsConfig['options']>;

/** A Todo id given on the command line, or a usage error that states the rule in words (spec §8). */
export function todoIdArg(id: string, usage?: string): string {
  if (isTodoId(id)) return id;
  const hint = id.toLowerCase() !== id && isTodoId(id.toLowerCase()) ? ` (did you mean ${id.toLowerCase()}?)` : '';
  throw new UsageError(`${JSON.stringify(id)} is not a Todo id${hint}: a Todo id is ${TODO_ID_RULE}${usage ? `\nusage: ${usage}` : ''}`);
}

/**
 * Who asks for a lease to be released, and how they were identified, from `--owner`, `--force` and
 * `--reason` (release, and `todo done` of a held Todo): `--force` needs a reason, which goes into the
 * receipt; an `--owner` must be `<agent>:<session>`.
 */
export function releaseRequester(
  io: Io,
  values: { readonly owner?: string | undefined; readonly force?: boolean | undefined; readonly reason?: string | undefined },
  usage: string,
): StatusChangeRequest {
  if (values.force && !values.reason?.trim()) throw new UsageError(`--force needs --reason <why>: the reason goes into the receipt\nusage: ${usage}`);
  const caller = callerOwner(io.env, values.owner);
  if (caller && !isOwner(caller.owner)) throw new UsageError(`--owner ${JSON.stringify(caller.owner)} is not <agent>:<session>\nusage: ${usage}`);
  return {
    by: caller?.owner,
    identifiedBy: caller?.identifiedBy ?? 'unidentified',
    requester: requesterOf(io.env),
    force: values.force ?? false,
    reason: values.reason,
  };
}

/** parseArgs with usage errors instead of exceptions a user has to decode. */
export function parse<T extends Options>(args: string[], options: T, positionals: { min: number; max: number; usage: string }) {
  let parsed;
  try {
    parsed = parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError(`${parseArgsProblem(error as Error & { code?: string }, options)}\nusage: ${positionals.usage}`);
  }
  if (parsed.positionals.length < positionals.min || parsed.positionals.length > positionals.max) {
    throw new UsageError(`usage: ${positionals.usage}`);
  }
  return parsed;
}

/**
 * What parseArgs refused, in one sentence: an unknown flag with the flags near it (`--limt`: did you
 * mean --limit?), instead of Node's advice about positionals that start with a dash; its other
 * messages (a missing value, a value given to a boolean) say it well enough as they are.
 */
function parseArgsProblem(error: Error & { code?: string }, options: Options): string {
  const unknown = error.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? /^Unknown option '([^']+)'/.exec(error.message)?.[1] : undefined;
  if (unknown === undefined) return error.message;
  const flags = Object.entries(options).flatMap(([name, option]) => [`--${name}`, ...(option.short ? [`-${option.short}`] : [])]);
  return `unknown option ${unknown}${didYouMean(unknown, flags)}`;
}

/**
 * A subcommand `command` does not have (`todo ad`): a usage error that names it and the subcommands
 * near it, then the command's usage.
 */
export function unknownSubcommand(command: string, given: string | undefined, subcommands: readonly string[], usage: string): UsageError {
  if (given === undefined) return new UsageError(`turnkeeper ${command} needs a subcommand: ${subcommands.join(', ')}\nusage: ${usage}`);
  return new UsageError(`unknown subcommand ${JSON.stringify(given)} of turnkeeper ${command}${didYouMean(given, subcommands)}\nusage: ${usage}`);
}

/**
 * A Todo id the Goal does not have: one sentence naming the Todo ids near it (a typo of `fix-login`
 * gets "did you mean fix-login?"), or JSON with the same `suggestions`; exit 1. `store` is still
 * open (undefined when none exists yet: nothing to suggest).
 */
export async function unknownTodo(io: Io, json: boolean | undefined, store: Authority | undefined, goal: string, id: string): Promise<number> {
  let suggestions: string[] = [];
  try {
    if (store)
      suggestions = nearestTodoIds(
        id,
        (await store.listTodos(goal)).map((todo) => todo.id),
      );
  } catch (error) {
    // A suggestion is a courtesy: a store that cannot answer now gives none, the refusal stands.
    if (!(error instanceof StoreUnavailableError)) throw error;
  }
  if (json) printJson(io, { ok: false, reason: 'unknown_todo', todo: id, goal, suggestions });
  else io.err(`Todo ${id} does not exist in Goal ${goal}${didYouMean(id, suggestions)}; turnkeeper todo list names them\n`);
  return EXIT.refused;
}

export async function openStore(io: Io, create: boolean): Promise<Authority | undefined> {
  return openAuthority(io.env, { create, busyTimeoutMs: 5000 });
}

/** Goal of `--goal <dir>`, or of the current directory: the repository's Goal id (docs/goals.md). */
export function goalFrom(io: Io, dir: string | undefined): string {
  return placementFrom(io, dir).goal;
}

/**
 * The Goal of `dir`, or of the current directory, and how it was found (docs/goals.md); a usage error
 * that says what is wrong when there is none.
 */
export function resolveGoalFrom(io: Io, dir: string | undefined): ResolvedGoal {
  try {
    return resolveGoal(dir ?? io.cwd);
  } catch (error) {
    if (error instanceof GoalError) throw new UsageError(`${error.message}${error.path ? ` (${error.path})` : ''}; see docs/goals.md`);
    throw new UsageError(`no such directory: ${dir ?? io.cwd}`);
  }
}

/** The Goal and where it was found (checkout, repository), for commands that record the place. */
export function placementFrom(io: Io, dir: string | undefined): Placement & { readonly goal: string } {
  return placementOf(resolveGoalFrom(io, dir));
}

/**
 * JSON on stdout. JSON.stringify escapes C0 controls; the DEL, C1 and bidi characters it leaves raw are
 * written as `\uXXXX` too (also when `io` is not the escaping one main.ts makes), so the text is still
 * JSON, parses to the same values, and is safe on a terminal.
 */
export const printJson = (io: Io, value: unknown): void => io.out(terminalSafe(JSON.stringify(value, null, 2)) + '\n');

/** What a release of a gone holder's lease adds to `todo done`'s line: whose agent was gone, and how. */
export const goneNote = (released: Lease, request: StatusChangeRequest): string =>
  request.holderGone && holderIsGone(released, request.holderGone) ? `, whose launched agent ${request.holderGone.state}` : '';
