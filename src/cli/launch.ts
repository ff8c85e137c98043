// `turnkeeper attest <path>`, `turnkeeper resume <captureId>` and `turnkeeper start <todo>` (spec §6–§8).
import { AGENTS, isAgent, isCaptureId } from '../core/ids';
import { attest, releaseAttestation } from '../launcher/attest';
import type { RunningLaunch } from '../launcher/launch';
import { LaunchRefused } from '../launcher/refusals';
import { resumeCapture } from '../launcher/resume';
import { startTodo, type StartResult } from '../launcher/start';
import { recreateCaptureCheckout, startInWorktree } from '../launcher/worktreeStart';
import { WorktreeError, type TodoWorktree } from '../checkout/worktrees';
import { WorktreeConfigError } from '../config/homeConfig';
import { resolve } from 'node:path';
import { storePath } from '../store/location';
import { constants } from 'node:os';
import { StoreUnavailableError, type Authority } from '../store/authority';
import { startOfCapture } from '../ledger/starts';
import { EXIT, openStore, parse, placementFrom, printJson, todoIdArg, UsageError, type Io } from './io';

export async function attestCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parse(args, { json: { type: 'boolean' } }, { min: 1, max: 1, usage: 'turnkeeper attest <path> [--json]' });
  try {
    const attestation = await attest(positionals[0]!.startsWith('/') ? positionals[0]! : `${io.cwd}/${positionals[0]!}`);
    releaseAttestation(attestation);
    const report = {
      ok: true,
      digest: attestation.digest,
      size: attestation.identity.size,
      entrypoint: attestation.entrypoint,
      identity: { dev: attestation.identity.dev, ino: attestation.identity.ino },
      chain: attestation.chain.map((hop) => hop.path),
      resolved: attestation.resolved,
      ...(attestation.interpreter ? { interpreter: { path: attestation.interpreter.path, digest: attestation.interpreter.digest } } : {}),
      ...(Object.keys(attestation.environment).length > 0 ? { environment: attestation.environment } : {}),
    };
    if (values.json) printJson(io, report);
    else io.out(`${report.resolved}\n  ${report.entrypoint}, ${report.size} bytes, ${report.digest}\n  chain: ${report.chain.join(' -> ')}\n`);
    return EXIT.done;
  } catch (error) {
    return printRefusal(io, values.json ?? false, error);
  }
}

/** A launcher refusal as `--json` or a line on stderr (exit 1); anything else is rethrown. */
export function printRefusal(io: Io, json: boolean, error: unknown): number {
  if (!(error instanceof LaunchRefused)) throw error;
  if (json) printJson(io, { ok: false, reason: error.reason, detail: error.detail });
  else io.err(`refused [${error.reason}]: ${error.detail}\n`);
  return EXIT.refused;
}

/** The options resume and start share, and the agent's own arguments after `--`. */
const LAUNCH_OPTIONS = {
  json: { type: 'boolean' },
  'agent-bin': { type: 'string' },
  interactive: { type: 'boolean' },
  headless: { type: 'boolean' },
  prompt: { type: 'string' },
  'allow-loader-env': { type: 'string', multiple: true },
} as const;

function splitAgentArgs(argv: string[]): { args: string[]; extraArgs: string[] } {
  const split = argv.indexOf('--');
  return split < 0 ? { args: argv, extraArgs: [] } : { args: argv.slice(0, split), extraArgs: argv.slice(split + 1) };
}

/**
 * Follows a running agent: its output goes to stderr (with --json our stdout carries the decision),
 * a headless agent gets end-of-file on stdin at once (it would read more prompt from a pipe), and
 * the exit is awaited.
 */
function followLaunch(io: Io, launch: RunningLaunch): Promise<AgentExit> {
  launch.stdout?.on('data', (chunk: Buffer) => io.err(chunk.toString()));
  launch.stderr?.on('data', (chunk: Buffer) => io.err(chunk.toString()));
  launch.stdin?.destroy();
  return launch.exited;
}

type AgentExit = { code: number | null; signal: number | null };

/** "on SIGKILL", "with code 3". */
function howItEnded(exit: AgentExit): string {
  if (exit.signal === null) return `with code ${exit.code ?? '?'}`;
  const name = Object.entries(constants.signals).find(([, number]) => number === exit.signal)?.[0];
  return `on ${name ?? `signal ${exit.signal}`}`;
}

/**
 * What a start or resume says when its agent ended other than by exiting 0 (spec §7): how it ended,
 * and what is left to do. A capture it holds (the one its first prompt claimed, or the one resumed)
 * is picked up with `resume`; with none, nothing is held and the start is run again. The command
 * then exits 1: a launch whose agent died is not a success a script may take for one.
 */
function agentEndedReport(
  agent: string,
  exit: AgentExit,
  todo: string,
  capture: string | null | undefined,
): { ended: string; recover: string; sentence: string } {
  const ended = howItEnded(exit);
  if (capture === undefined) {
    // The store did not answer: whether it holds the Todo is not known, so nothing is said of it.
    const recover = 'turnkeeper status';
    return { ended, recover, sentence: `turnkeeper: ${agent} ended ${ended}; what it holds of ${todo}: ${recover}` };
  }
  if (capture !== null) {
    const recover = `turnkeeper resume ${capture}`;
    return { ended, recover, sentence: `turnkeeper: ${agent} ended ${ended} while it held ${todo} (capture ${capture}); pick its turn up: ${recover}` };
  }
  const recover = `turnkeeper start ${todo} --agent ${agent}`;
  return { ended, recover, sentence: `turnkeeper: ${agent} ended ${ended}; it holds nothing of ${todo}. Start it again: ${recover}` };
}

/**
 * The capture of `todo` that the start with launch receipt `launchSeq` claimed and still holds, null
 * when there is none, undefined when the store did not answer (the agent has run: its report must not fail).
 */
async function captureOfStart(store: Authority, goal: string, todo: string, launchSeq: number): Promise<string | null | undefined> {
  try {
    const lease = (await store.activeLeases(goal)).find((row) => row.todo === todo);
    if (!lease) return null;
    return (await startOfCapture(store, lease))?.seq === launchSeq ? lease.capture : null;
  } catch (error) {
    if (error instanceof StoreUnavailableError) return undefined;
    throw error;
  }
}

/**
 * What a resumed capture holds now: its Todo, and the capture itself while its lease is active (null
 * once released); the capture undefined when the store did not answer.
 */
async function heldByCapture(store: Authority, captureId: string): Promise<[todo: string, capture: string | null | undefined]> {
  try {
    const lease = await store.leaseOfCapture(captureId);
    return [lease?.todo ?? captureId, lease?.status === 'active' ? captureId : null];
  } catch (error) {
    if (error instanceof StoreUnavailableError) return [captureId, undefined];
    throw error;
  }
}

/**
 * How a resume runs its agent: as asked (--interactive, --headless); else headless when the caller
 * reads a machine's answer (--json) or gave the prompt (--prompt, one turn, as `start` does); else
 * interactive for a person at a terminal (stdin and stdout both one) and headless for a pipe or CI.
 */
function resumeMode(values: { interactive?: boolean; headless?: boolean; json?: boolean; prompt?: string }, io: Io, usage: string): 'interactive' | 'headless' {
  if (values.interactive && values.headless) throw new UsageError(`give --interactive or --headless, not both\nusage: ${usage}`);
  if (values.interactive && values.json) throw new UsageError(`--json runs the agent headless: leave out --interactive\nusage: ${usage}`);
  if (values.interactive) return 'interactive';
  if (values.headless || values.json || values.prompt !== undefined) return 'headless';
  return io.atTerminal?.() ? 'interactive' : 'headless';
}

export async function resumeCommand(argv: string[], io: Io): Promise<number> {
  const usage =
    'turnkeeper resume <captureId> [--dry-run] [--json] [--accept-drift] [--recreate-worktree] [--agent-bin <path>] [--interactive | --headless] [--prompt <text>] [--allow-loader-env <name>]… [-- <agent args>]';
  const { args, extraArgs } = splitAgentArgs(argv);
  const { values, positionals } = parse(
    args,
    { ...LAUNCH_OPTIONS, 'dry-run': { type: 'boolean' }, 'accept-drift': { type: 'boolean' }, 'recreate-worktree': { type: 'boolean' } },
    { min: 1, max: 1, usage },
  );
  const captureId = positionals[0]!;
  if (!isCaptureId(captureId))
    throw new UsageError(
      `${JSON.stringify(captureId)} is not a capture id: cap_ followed by 24 lower-case hex digits, as turnkeeper status lists them\nusage: ${usage}`,
    );
  const store = await openStore(io, false);
  if (!store) {
    if (values.json) printJson(io, { ok: false, decision: 'refused', reason: 'unknown_capture', capture: captureId });
    else io.err(`no Turnkeeper store yet, so no capture ${captureId}\n`);
    return EXIT.refused;
  }
  try {
    let recreatedWorktree = false;
    if (values['recreate-worktree']) {
      // Asked for by name, so done even with --dry-run (which then shows the launch in it); a
      // checkout that exists is left alone.
      try {
        const recreated = await recreateCaptureCheckout(store, captureId, io.env);
        recreatedWorktree = recreated !== undefined;
        if (recreated && !values.json)
          io.err(`turnkeeper: recreated worktree ${recreated.path}${recreated.branch ? ` on branch ${recreated.branch}` : ' (detached)'}\n`);
      } catch (error) {
        return printWorktreeRefusal(io, values.json ?? false, error);
      }
    }
    const result = await resumeCapture({
      store,
      storePath: storePath(io.env),
      captureId,
      env: io.env,
      acceptDrift: values['accept-drift'] ?? false,
      dryRun: values['dry-run'] ?? false,
      agentBin: values['agent-bin'],
      mode: resumeMode(values, io, usage),
      // With --json our stdout carries the decision, so the agent's output goes to stderr.
      stdio: values.json ? 'pipe' : 'inherit',
      prompt: values.prompt,
      extraArgs,
      allowLoaderVariables: values['allow-loader-env'],
      recreatedWorktree,
    });
    if (!result.ok) {
      if (values.json) printJson(io, { ok: false, decision: 'refused', capture: captureId, reason: result.reason, guidance: result.guidance });
      else io.err(`${result.guidance}\n`);
      return EXIT.refused;
    }
    if (result.dryRun) {
      if (values.json) printJson(io, { ok: true, decision: 'dry_run', capture: captureId, agent: result.agent, digest: result.digest, argv: result.argv });
      else io.out(`would resume ${captureId} with: ${result.argv.join(' ')}\n  attested ${result.digest}\n`);
      return EXIT.done;
    }
    const { launch } = result;
    if (!values.json) io.err(`turnkeeper: launch receipt #${launch.receipt.seq} committed; ${result.agent} is running (pid ${launch.pid})\n`);
    const exit = await followLaunch(io, launch);
    const died = exit.signal !== null || exit.code !== 0;
    const report = died ? agentEndedReport(result.agent, exit, ...(await heldByCapture(store, captureId))) : undefined;
    if (values.json) {
      printJson(io, {
        ok: true,
        decision: 'launched',
        capture: captureId,
        agent: result.agent,
        pid: launch.pid,
        receipt: launch.receipt,
        digest: result.attestation.digest,
        exit,
        ...(report ? { ended: report.ended, recover: report.recover } : {}),
      });
    } else if (report) io.err(`${report.sentence}\n`);
    return died ? EXIT.refused : EXIT.done;
  } finally {
    store.close();
  }
}

/**
 * `--worktree` takes a path when the next word is one (not an option), else it means the configured
 * location: written `--worktree=` for parseArgs, which has no optional values.
 */
function optionalWorktreeValue(args: string[]): string[] {
  return args.flatMap((arg, i) => (arg === '--worktree' && (i + 1 >= args.length || args[i + 1]!.startsWith('-')) ? ['--worktree='] : [arg]));
}

export async function startCommand(argv: string[], io: Io): Promise<number> {
  const usage = `turnkeeper start <todo> --agent ${AGENTS.join('|')} [--worktree [<path>]] [--branch <name>] [--prompt <text>] [--interactive | --headless] [--json] [--agent-bin <path>] [--allow-loader-env <name>]… [-- <agent args>]`;
  const { args, extraArgs } = splitAgentArgs(argv);
  const { values, positionals } = parse(
    optionalWorktreeValue(args),
    { ...LAUNCH_OPTIONS, agent: { type: 'string' }, worktree: { type: 'string' }, branch: { type: 'string' } },
    { min: 1, max: 1, usage },
  );
  if (values.branch !== undefined && values.worktree === undefined) throw new UsageError(`--branch goes with --worktree\nusage: ${usage}`);
  const todo = todoIdArg(positionals[0]!, usage);
  if (!isAgent(values.agent)) throw new UsageError(`--agent must be one of ${AGENTS.join(', ')}\nusage: ${usage}`);
  // Interactive by default (the user types the first prompt); --prompt alone runs one headless turn.
  if (values.interactive && values.headless) throw new UsageError(`give --interactive or --headless, not both\nusage: ${usage}`);
  if (values.headless && values.prompt === undefined) throw new UsageError(`--headless runs one turn: give its --prompt\nusage: ${usage}`);
  const mode = values.prompt !== undefined && !values.interactive ? 'headless' : 'interactive';
  if (values.json && mode === 'interactive') throw new UsageError(`--json runs the agent headless: give --prompt (without --interactive)\nusage: ${usage}`);
  const here = placementFrom(io, undefined); // a checkout that names its repository wrongly is a usage error, said before anything opens
  const store = await openStore(io, false);
  try {
    const options = {
      store,
      storePath: storePath(io.env),
      todo,
      agent: values.agent,
      cwd: io.cwd,
      env: io.env,
      agentBin: values['agent-bin'],
      mode,
      // With --json our stdout carries the decision, so the agent's output goes to stderr.
      stdio: values.json ? 'pipe' : 'inherit',
      prompt: values.prompt,
      extraArgs,
      allowLoaderVariables: values['allow-loader-env'],
    } as const;
    let result: StartResult;
    let worktree: TodoWorktree | undefined;
    if (values.worktree === undefined) result = await startTodo(options);
    else {
      try {
        const worktreePath = values.worktree === '' ? undefined : resolve(io.cwd, values.worktree);
        ({ worktree, ...result } = await startInWorktree({ ...options, worktreePath, branch: values.branch }));
      } catch (error) {
        return printWorktreeRefusal(io, values.json ?? false, error);
      }
      if (worktree && !values.json) io.err(`turnkeeper: ${worktree.created ? 'created' : 'reusing'} worktree ${worktree.path} on branch ${worktree.branch}\n`);
    }
    if (!result.ok) {
      if (values.json) printJson(io, { ok: false, decision: 'refused', todo, agent: values.agent, reason: result.reason, guidance: result.guidance });
      else io.err(`${result.guidance}\n`);
      return EXIT.refused;
    }
    const { launch } = result;
    if (!values.json)
      io.err(`turnkeeper: launch receipt #${launch.receipt.seq} committed; ${result.agent} is running on ${todo} (pid ${launch.pid}, turn ${result.turn})\n`);
    const exit = await followLaunch(io, launch);
    const died = exit.signal !== null || exit.code !== 0;
    const report = died && store ? agentEndedReport(result.agent, exit, todo, await captureOfStart(store, here.goal, todo, launch.receipt.seq)) : undefined;
    if (values.json) {
      printJson(io, {
        ok: true,
        decision: 'launched',
        todo,
        agent: result.agent,
        turn: result.turn,
        launch: result.launchId,
        pid: launch.pid,
        receipt: launch.receipt,
        digest: result.attestation.digest,
        ...(worktree ? { worktree: worktree.path, branch: worktree.branch, worktreeCreated: worktree.created } : {}),
        exit,
        ...(report ? { ended: report.ended, recover: report.recover } : {}),
      });
    } else if (report) io.err(`${report.sentence}\n`);
    return died ? EXIT.refused : EXIT.done;
  } finally {
    store?.close();
  }
}

/** A worktree or worktree-config refusal (nothing was launched) as `--json` or a line on stderr; anything else is rethrown. */
export function printWorktreeRefusal(io: Io, json: boolean, error: unknown): number {
  const reason = error instanceof WorktreeError ? error.code : error instanceof WorktreeConfigError ? 'worktree_config' : undefined;
  if (reason === undefined) throw error;
  if (json) printJson(io, { ok: false, decision: 'refused', reason, detail: (error as Error).message });
  else io.err(`refused [${reason}]: ${(error as Error).message}\n`);
  return EXIT.refused;
}
