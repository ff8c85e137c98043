// Installing the hooks, and checking an installation (`doctor`): shared by the CLI and the
// extension, which differ only in the runtime the shim runs (node, or the extension host itself).
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { hostname } from 'node:os';
import { AGENTS, type Agent } from '../core/ids';
import { FOREIGN_CALLER_NAMES } from '../agents/payload';
import {
  eventCommand,
  HookConfigError,
  installedHookCommand,
  hookConfigPath,
  hooksStatus,
  HOOK_EVENTS,
  installHooks,
  readJsonConfig,
  uninstallHooks,
  type Scope,
} from '../agents/install';
import { byAgent, PROFILES, type RunningProcess } from '../agents/profiles/index';
import { readShim, shimPath, writeShim } from '../agents/shim';
import type { Authority, StoreHealth } from '../store/authority';
import type { ChainReport } from '../core/receipts';
import { closuresDir, foreignHomeProblem, SNAPSHOT_NAME, storePath, treeSize, turnkeeperHome, type Env } from '../store/location';
import { silentLaunches, type LaunchProcessState, type SilentLaunch } from './status';
import { clientClock, hookBusyTimeoutMs } from '../config/settings';
import { agentChecks, strictSyntaxProblem, type AgentCheck } from './agentChecks';
import { recentRejections, type Rejection } from '../hook/rejections';
import { checkpointsOf } from '../ledger/checkpoints';
import { witnessSentence } from '../ledger/witness';
import { readConfigFile } from '../files/boundedFile';

/** What the user does so the agent runs its hooks (each agent's profile). */
export const TRUST_HINT: Readonly<Record<Agent, string>> = byAgent((profile) => profile.trust.hint);

export interface Runtime {
  /** The executable the shim runs: node, or the extension host binary. */
  readonly runtime: string;
  /** Turnkeeper's dist/cli.js. */
  readonly script: string;
  readonly electronRunAsNode: boolean;
}

export interface InstallRequest {
  readonly agent: Agent;
  readonly scope: Scope;
  readonly env: Env;
  readonly projectRoot: string;
}

/**
 * Backups of the agents' configs, and the records of configs install created, live here: never
 * beside the config, which may be in a repository that teammates commit.
 */
const hookBackupDir = (env: Env): string => join(turnkeeperHome(env), 'backups');

/**
 * The command an agent's config runs. At user scope the shim's absolute path under TURNKEEPER_HOME; at
 * project scope, a config teammates commit, `turnkeeper` from PATH: no path of this machine (spec §8).
 * Either stays byte-identical across Turnkeeper updates.
 */
function scopeCommand(agent: Agent, scope: Scope, env: Env): string {
  return scope === 'project' ? `turnkeeper hook --agent ${agent}` : installedHookCommand(agent, shimPath(turnkeeperHome(env)));
}

const otherScope = (scope: Scope): Scope => (scope === 'user' ? 'project' : 'user');

export function installAgentHooks(request: InstallRequest, runtime: Runtime) {
  const home = turnkeeperHome(request.env);
  // The shim written here is what the agent's config will run: never into a home another user owns.
  const foreign = foreignHomeProblem(request.env);
  if (foreign) throw new Error(`${foreign}; nothing was installed`);
  // An agent that reads its config as strict JSON ignores a file with comments (and every hook in it):
  // merging into it would install nothing. Refused before anything is written, the shim included.
  const path = hookConfigPath(request);
  const unreadable = strictSyntaxProblem(request.agent, path);
  if (unreadable !== undefined) throw new HookConfigError(path, unreadable);
  // The shim is rewritten to point at this Turnkeeper; the command in the agent's config stays the same.
  const shimChanged = writeShim(home, { ...runtime, home, db: request.env.TURNKEEPER_DB });
  const base = scopeCommand(request.agent, request.scope, request.env);
  const options = { backupDir: hookBackupDir(request.env) };
  // A project config an earlier Turnkeeper wrote with this machine's shim path: replaced, not kept beside.
  const result = installHooks(request, base, options, request.scope === 'project');
  // An agent whose payloads name no event gets one command per event: show the first as the example.
  const command = eventCommand(request.agent, base, HOOK_EVENTS[request.agent][0] ?? '');
  // Both scopes for one agent run every hook twice (spec §8): flagged here and by doctor.
  const other = agentHooksStatus({ ...request, scope: otherScope(request.scope) });
  return {
    ...result,
    shim: shimPath(home),
    shimChanged,
    command,
    trustHint: TRUST_HINT[request.agent],
    ...(other.installed ? { alsoInstalledAt: other.path } : {}),
  };
}

export function uninstallAgentHooks(request: InstallRequest) {
  return uninstallHooks(request, scopeCommand(request.agent, request.scope, request.env), { backupDir: hookBackupDir(request.env) });
}

export function agentHooksStatus(request: InstallRequest) {
  return hooksStatus(request, scopeCommand(request.agent, request.scope, request.env));
}

/** What doctor learnt of the store: its health, chain and server, or why it could not look. */
interface DoctorStore extends Partial<StoreHealth> {
  readonly path: string;
  readonly exists: boolean;
  /** The chain walk, with the witness compared (src/ledger/checkpoints.ts). */
  readonly chain?: ChainReport;
  readonly error?: string;
  readonly [fact: string]: unknown;
}

export interface DoctorReport {
  readonly ok: boolean;
  readonly store: DoctorStore;
  readonly shim: { path: string; exists: boolean; target: unknown; targetExists: boolean };
  readonly hooks: (ReturnType<typeof agentHooksStatus> & { agent: Agent; scope: Scope })[];
  readonly sessions: { owner: string; lastHookAt: string; transcriptPath: string | null }[];
  readonly silentLaunches: SilentLaunch[];
  /** Hook inputs Turnkeeper refused in the last day (spec §2 rule 2; src/hook/rejections.ts), oldest first. */
  readonly rejectedHooks: Rejection[];
  /** Disk use of the attested closures of script-shaped agents (docs/launcher.md §9); `turnkeeper closures prune` frees it. */
  readonly closures: { dir: string; snapshots: number; bytes: number };
  /** What each agent will do with the installed hooks (agentChecks.ts): one row per check, problems with their fix. */
  readonly checks: AgentCheck[];
  /** Everything wrong, for people: `otherProblems`, then each problem row of `checks` with its fix. */
  readonly problems: string[];
  /** The problems that are not rows of `checks` (store, shim, stale commands, trust steps, silent launches): what a view that lists the rows adds below them. */
  readonly otherProblems: string[];
}

export interface DoctorOptions {
  /**
   * The terminals the user starts agents from have $TURNKEEPER_HOME/bin on PATH although `env` has
   * not: the extension adds it to VS Code's terminals only and passes its own process.env. The
   * on_path check then counts the shim as found.
   */
  readonly shimOnTerminalPath?: boolean;
  /** Whether a launch's process still runs (the shells pass the launcher's liveness rule); without it, silent launches say no cause. */
  readonly launchProcessState?: LaunchProcessState;
  /** This machine's processes (the shells pass the launcher backend's list): where doctor looks for an agent's shared daemon. */
  readonly runningProcesses?: () => readonly RunningProcess[];
}

/**
 * The variable every launch puts in its agent's environment (src/launcher/start.ts, resume.ts): a
 * daemon without it was started without Turnkeeper, so no hook it runs can report any launch.
 */
const LAUNCH_VARIABLE = 'TURNKEEPER_LAUNCH';

/** A shared daemon of an agent with silent launches, started without Turnkeeper (its profile's `launch.sharedDaemon`). */
interface ForeignDaemon {
  readonly agent: Agent;
  readonly pids: readonly number[];
}

/** Searched only for agents with silent launches whose profile has a shared daemon: no /proc scan otherwise. */
function foreignDaemons(agents: ReadonlySet<Agent>, env: Env, list: (() => readonly RunningProcess[]) | undefined): ForeignDaemon[] {
  const withDaemon = [...agents].filter((agent) => PROFILES[agent].launch.sharedDaemon !== undefined);
  if (withDaemon.length === 0 || !list) return [];
  const processes = list();
  return withDaemon.flatMap((agent) => {
    const daemon = PROFILES[agent].launch.sharedDaemon!;
    const pids = processes
      .filter((process) => daemon.matches(process, env) && process.environ()?.[LAUNCH_VARIABLE] === undefined)
      .map((process) => process.pid);
    return pids.length > 0 ? [{ agent, pids }] : [];
  });
}

function foreignDaemonProblem(daemon: ForeignDaemon, silentCount: number): string {
  const shared = PROFILES[daemon.agent].launch.sharedDaemon!;
  const name = PROFILES[daemon.agent].displayName;
  return `${shared.name} started without Turnkeeper is running (pid ${daemon.pids.join(', ')}): a ${name} session attached to it runs its turns and hooks in the daemon, with the daemon's environment instead of the launch's, so its hooks cannot report the launch (${silentCount} silent ${name} launch${silentCount === 1 ? '' : 'es'}). Fix: ${shared.stop}, or start the agent through Turnkeeper (turnkeeper start, resume), which passes ${shared.launchSwitch}.`;
}

/** Store health, the receipt chain, the shim, hooks per agent and scope, launches whose hooks never fired. */
export async function doctorReport(
  env: Env,
  projectRoot: string,
  open: () => Promise<Authority | undefined>,
  options: DoctorOptions = {},
): Promise<DoctorReport> {
  const home = turnkeeperHome(env);
  const problems: string[] = [];
  let store: DoctorStore = { path: storePath(env), exists: false };
  let sessions: DoctorReport['sessions'] = [];
  let silent: SilentLaunch[] = [];
  const silentAgents = new Map<number, Agent | undefined>();
  try {
    const authority = await open();
    if (authority) {
      try {
        const health = await authority.health();
        const chain = await authority.verifyChain();
        // A team server: its version, one round trip, and this client's clock against the server's.
        const serverVersion = await authority.serverVersion();
        const skew = await authority.measureClockSkew(clientClock(env));
        store = {
          exists: true,
          ...health,
          chain,
          ...(serverVersion
            ? { authority: authority.location, serverVersion, roundTripMs: skew?.roundTripMs, clockSkewMs: skew?.skewMs, clockSkewBoundMs: skew?.boundMs }
            : {}),
        };
        if (skew && Math.abs(skew.skewMs) > 1000 + skew.boundMs) {
          problems.push(
            `this machine's clock is ${Math.abs(skew.skewMs)} ms ${skew.skewMs > 0 ? 'behind' : 'ahead of'} the team server's (±${Math.round(skew.boundMs)} ms): lease times follow the server, but fix the clock (NTP)`,
          );
          await authority.noteClockSkew(skew, hostname(), clientClock(env)());
        }
        if (health.writeLock === 'busy') {
          problems.push(
            `store: the write lock of ${authority.location} is busy: another process has held it for over a second, so hooks that claim wait ${hookBusyTimeoutMs(env)} ms (TURNKEEPER_BUSY_TIMEOUT_MS) and then answer [store_unavailable]; find the holder with: lsof ${authority.location}`,
          );
        }
        if (health.integrity !== 'ok') problems.push(`integrity_check: ${health.integrity}`);
        if (!chain.ok) problems.push(`receipt chain broken at seq ${chain.breaks[0]?.seq} (${chain.breaks[0]?.kind}): turnkeeper verify`);
        if (chain.witness?.state === 'refused') problems.push(witnessSentence(chain.witness, chain.breaks));
        const backlog = await checkpointsOf(authority)?.unsignedBacklog();
        if (backlog !== undefined)
          problems.push(
            `${backlog.receipts} receipts since the last checkpoint signed over the receipt tree: automatic checkpoints (inside hooks) walk at most ${backlog.limit.toLocaleString('en-US')} and are skipped until then; turnkeeper checkpoint signs them once`,
          );
        // The upgrade maps path-keyed Goals to repositories, except where Todo ids would collide.
        for (const path of await authority.legacyGoalsLeft()) {
          problems.push(
            `Todos of ${path} still use that path as their Goal (their ids collide with its repository's Todos): turnkeeper goal move --from ${path} --rename moved --dir ${path}`,
          );
        }
        sessions = (await authority.listSessions()).map((s) => ({
          owner: s.owner,
          lastHookAt: new Date(s.lastHookAt).toISOString(),
          transcriptPath: s.transcriptPath,
        }));
        silent = await silentLaunches(authority, Date.now(), options.launchProcessState);
        for (const launch of silent)
          silentAgents.set(
            launch.seq,
            (launch.capture ? (await authority.getCapture(launch.capture))?.agent : undefined) ?? (launch.agent as Agent | null) ?? undefined,
          );
      } finally {
        authority.close();
      }
    }
  } catch (error) {
    store = { path: storePath(env), exists: true, error: (error as Error).message };
    problems.push(`store: ${(error as Error).message}`);
  }
  const target = readShim(home);
  const shim = {
    path: shimPath(home),
    exists: target !== undefined,
    target: target ?? null,
    targetExists: target !== undefined && existsSync(target.runtime) && existsSync(target.script),
  };
  if (target && !shim.targetExists) problems.push('the hook shim points at a missing runtime or script: turnkeeper hooks install --agent <agent>');
  const hooks = AGENTS.flatMap((agent) =>
    (['user', 'project'] as const).map((scope) => ({ agent, scope, ...agentHooksStatus({ agent, scope, env, projectRoot }) })),
  );
  for (const item of hooks) {
    if (item.staleCommands.length > 0) {
      problems.push(
        `${item.agent} ${item.scope} hooks use another command (${item.staleCommands[0]}): turnkeeper hooks install --agent ${item.agent} --scope ${item.scope}`,
      );
    }
    // What the agent itself will do with an installed hook: its own trust step (each profile's check).
    const trustProblem = item.installed
      ? PROFILES[item.agent].trust.check?.({ env, scope: item.scope, projectRoot, readConfig: readJsonConfig, readText })
      : undefined;
    if (trustProblem !== undefined) problems.push(trustProblem);
  }
  if (!hooks.some((item) => item.installed)) problems.push(`no agent has Turnkeeper hooks installed: turnkeeper hooks install --agent <${AGENTS.join('|')}>`);
  const checks = await agentChecks({
    env,
    projectRoot,
    files: hooks.map((item) => ({ ...item, command: scopeCommand(item.agent, item.scope, env) })),
    shimOnTerminalPath: options.shimOnTerminalPath ?? false,
  });
  // Refused hook inputs, one problem per agent, event and cause; then silent launches by cause, now
  // that the agents' own checks are known: a launch whose hooks ran and were refused is said to be
  // that, and a trust hint is given only where the agent's hooks are not known to be trusted.
  const rejectedHooks = recentRejections(env, Date.now());
  problems.push(...rejectionProblems(rejectedHooks));
  const daemons = foreignDaemons(
    new Set(silent.filter((launch) => launch.process !== 'unknown').flatMap((launch) => silentAgents.get(launch.seq) ?? [])),
    env,
    options.runningProcesses,
  );
  for (const launch of silent) problems.push(silentLaunchProblem(launch, silentAgents.get(launch.seq), checks, rejectedHooks, daemons));
  for (const daemon of daemons)
    problems.push(
      foreignDaemonProblem(daemon, silent.filter((launch) => launch.process !== 'unknown' && silentAgents.get(launch.seq) === daemon.agent).length),
    );
  const all = [...problems, ...checks.filter((check) => check.status === 'problem').map((check) => `${check.detail}${check.fix ? `. Fix: ${check.fix}` : ''}`)];
  return {
    ok: all.length === 0,
    store,
    shim,
    hooks,
    sessions,
    silentLaunches: silent,
    rejectedHooks,
    closures: closureDiskUse(closuresDir(env)),
    checks,
    problems: all,
    otherProblems: problems,
  };
}

/** A small text file's content for a trust check, or undefined (missing, not a regular file, too large). */
function readText(path: string): string | undefined {
  const read = readConfigFile(path);
  return read.kind === 'bytes' ? read.bytes.toString('utf8') : undefined;
}

/** Where a refused input went wrong, as one clause: `transcript_path: not an absolute path`. */
const rejectionCause = (rejection: Rejection): string => `${rejection.fields.join(', ')}: ${rejection.reason}`;

/** One problem per agent, event, source and cause of the refused hook inputs, newest last; each goes a day after its last refusal. */
function rejectionProblems(rejections: readonly Rejection[]): string[] {
  const groups = new Map<string, Rejection[]>();
  for (const rejection of rejections) {
    const key = JSON.stringify([rejection.agent, rejection.event, rejection.source, rejection.fields, rejection.reason]);
    groups.set(key, [...(groups.get(key) ?? []), rejection]);
  }
  return [...groups.values()].map((group) => {
    const last = group.at(-1)!;
    const profile = last.agent ? PROFILES[last.agent] : undefined;
    const who = profile?.displayName ?? 'an agent';
    const times = `${group.length === 1 ? 'once' : `${group.length} times`}, last at ${last.at}`;
    const event = last.event ? `${last.event} ` : '';
    const ignored = 'Turnkeeper ignored the event (spec §2 rule 2): no Todo is claimed and no context reaches the model from it.';
    const ages = 'This entry goes a day after the last one.';
    if (last.caller) {
      const caller = FOREIGN_CALLER_NAMES[last.caller];
      return `${caller} ran ${profile ? `${who}'s ` : 'a '}${event}hook (${times}): its payload is not ${who}'s, so Turnkeeper answered nothing (the empty answer it accepts) and claimed nothing under ${who}'s name. ${caller} runs ${profile ? `${who}'s` : "agents'"} hook files by default. Fix: nothing is broken; to stop the calls, turn those files off in VS Code's chat.hookFilesLocations setting. ${ages}`;
    }
    if (last.source === 'environment')
      return `a ${event}hook of ${who} ran with ${last.fields.join(', ')} outside its grammar (${times}). ${ignored} Fix: that variable is the launcher's; unset it in the agent's environment, or start the agent through turnkeeper start or resume. ${ages}`;
    if (last.source === 'checkout')
      return `a ${event}hook of ${who} ran in a checkout whose Goal cannot be named (${last.reason}; ${times}). ${ignored} Fix: run turnkeeper goal in that checkout. ${ages}`;
    const tested = profile ? `run the ${who} version Turnkeeper was tested with (${profile.testedVersion}), or upgrade Turnkeeper; ` : '';
    return `${who} sent a ${event}payload Turnkeeper could not read (${rejectionCause(last)}; ${times}). ${ignored} Fix: ${tested}if the versions match, report it with this line (the payload itself was not kept). ${ages}`;
  });
}

/** What a person reads of one launch that fired no hook, by what is known of its process. */
function silentLaunchProblem(
  launch: SilentLaunch,
  agent: Agent | undefined,
  checks: readonly AgentCheck[],
  rejections: readonly Rejection[],
  daemons: readonly ForeignDaemon[],
): string {
  const what = `the agent launched for ${launch.capture ?? `a start of Todo ${launch.todo ?? '?'}`} at ${launch.committedAt}`;
  // Its hooks ran, and Turnkeeper refused what they read: not a skipped hook, whatever the process did since.
  const refused = rejections.filter((rejection) => launch.launch !== null && rejection.launch === launch.launch).at(-1);
  if (refused)
    return `${what} ran its hooks, but Turnkeeper rejected the ${refused.source === 'payload' ? 'payload' : refused.source} (${rejectionCause(refused)}), so no hook was accepted: see the problem about the rejected ${refused.event ?? 'hook'} input.`;
  // A daemon of this machine that no launch started runs the hooks of whatever attaches to it: the likelier cause than trust.
  const daemon = launch.process !== 'unknown' ? daemons.find((item) => item.agent === agent) : undefined;
  if (daemon)
    return `${what} ${launch.process === 'exited' ? 'exited without' : 'has not'} reported a hook: it may have run its turns on ${PROFILES[daemon.agent].launch.sharedDaemon!.name} started without Turnkeeper (pid ${daemon.pids.join(', ')}), whose hooks run without the launch's variables: see that problem.`;
  if (launch.process === 'exited')
    return `${what} exited without firing a hook: it was quit before its first prompt, or it failed to start (run it by hand to see its error). Nothing to fix if you quit it; this entry goes after a day.`;
  if (launch.process === 'unknown')
    return `${what} on ${launch.host ?? 'another machine'} has fired no hook: check it there (turnkeeper doctor on that machine).`;
  // Agents whose profile can be asked about trust (`trust.ask`) have `<agent>_trust` rows.
  const trustRows = checks.filter((check) => check.agent === agent && check.check === `${agent}_trust`);
  const trusted = trustRows.length > 0 && trustRows.every((check) => check.status === 'ok');
  const running = launch.process === 'running' ? ' is still running and' : '';
  if (trusted)
    return `${what}${running} has fired no hook within a minute, although its hooks are installed, parse and are trusted: it has not been prompted yet, or it runs its turns somewhere else${elsewhere(agent)}.`;
  return `${what}${running} fired no hook within a minute: its hooks are skipped. ${agent && agent in TRUST_HINT ? TRUST_HINT[agent] : ''}`.trim();
}

/** ` (a shared Codex app-server daemon: …)`: where the agent's profile says its turns may run instead. */
function elsewhere(agent: Agent | undefined): string {
  const daemon = agent === undefined ? undefined : PROFILES[agent].launch.sharedDaemon;
  if (!daemon) return '';
  return ` (${daemon.name}: Turnkeeper starts and resumes ${PROFILES[agent!].displayName} with ${daemon.launchSwitch} since this release)`;
}

/** Snapshots under $TURNKEEPER_HOME/closures (named by a 64-hex digest) and the bytes they and any interrupted copies take. */
function closureDiskUse(dir: string): DoctorReport['closures'] {
  const snapshots = existsSync(dir) ? readdirSync(dir).filter((name) => SNAPSHOT_NAME.test(name)).length : 0;
  return { dir, snapshots, bytes: treeSize(dir).bytes };
}
