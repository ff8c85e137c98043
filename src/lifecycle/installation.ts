// Installing the hooks, and checking an installation (`doctor`): shared by the CLI and the
// extension, which differ only in the runtime the shim runs (node, or the extension host itself).
import { existsSync, lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { hostname } from 'node:os';
import { AGENTS, type Agent } from '../core/ids';
import { eventCommand, hookCommand, hooksStatus, HOOK_EVENTS, installHooks, readJsonConfig, uninstallHooks, type Scope } from '../agents/install';
import { byAgent, PROFILES } from '../agents/profiles/index';
import { readShim, shimPath, writeShim } from '../agents/shim';
import type { Authority } from '../store/authority';
import { storePath, turnkeeperHome, type Env } from '../store/location';
import { silentLaunches, type SilentLaunch } from './status';
import { clientClock, hookBusyTimeoutMs } from './settings';

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
export const hookBackupDir = (env: Env): string => join(turnkeeperHome(env), 'backups');

export function installAgentHooks(request: InstallRequest, runtime: Runtime) {
  const home = turnkeeperHome(request.env);
  // The shim is rewritten to point at this Turnkeeper; the command in the agent's config stays the same.
  const shimChanged = writeShim(home, { ...runtime, home, db: request.env.TURNKEEPER_DB });
  const base = hookCommand(request.agent, shimPath(home));
  const result = installHooks(request, base, { backupDir: hookBackupDir(request.env) });
  // An agent whose payloads name no event gets one command per event: show the first as the example.
  const command = eventCommand(request.agent, base, HOOK_EVENTS[request.agent][0] ?? '');
  return { ...result, shim: shimPath(home), shimChanged, command, trustHint: TRUST_HINT[request.agent] };
}

export function uninstallAgentHooks(request: InstallRequest) {
  return uninstallHooks(request, hookCommand(request.agent, shimPath(turnkeeperHome(request.env))), { backupDir: hookBackupDir(request.env) });
}

export function agentHooksStatus(request: InstallRequest) {
  return hooksStatus(request, hookCommand(request.agent, shimPath(turnkeeperHome(request.env))));
}

export interface DoctorReport {
  readonly ok: boolean;
  readonly store: Record<string, unknown>;
  readonly shim: { path: string; exists: boolean; target: unknown; targetExists: boolean };
  readonly hooks: (ReturnType<typeof agentHooksStatus> & { agent: Agent; scope: Scope })[];
  readonly sessions: { owner: string; lastHookAt: string; transcriptPath: string | null }[];
  readonly silentLaunches: SilentLaunch[];
  /** Disk use of the attested closures of script-shaped agents (docs/launcher.md §9); `turnkeeper closures prune` frees it. */
  readonly closures: { dir: string; snapshots: number; bytes: number };
  readonly problems: string[];
}

/** Store health, the receipt chain, the shim, hooks per agent and scope, launches whose hooks never fired. */
export async function doctorReport(env: Env, projectRoot: string, open: () => Promise<Authority | undefined>): Promise<DoctorReport> {
  const home = turnkeeperHome(env);
  const problems: string[] = [];
  let store: Record<string, unknown> = { path: storePath(env), exists: false };
  let sessions: DoctorReport['sessions'] = [];
  let silent: SilentLaunch[] = [];
  try {
    const authority = await open();
    if (authority) {
      try {
        const health = await authority.health();
        const chain = await authority.verifyChain();
        // A team server: its version, one round trip, and this client's clock against the server's.
        const serverVersion = await authority.serverVersion();
        const skew = await authority.measureClockSkew(clientClock(env));
        store = { exists: true, ...health, chain, ...(serverVersion ? { authority: authority.location, serverVersion, roundTripMs: skew?.roundTripMs, clockSkewMs: skew?.skewMs, clockSkewBoundMs: skew?.boundMs } : {}) };
        if (skew && Math.abs(skew.skewMs) > 1000 + skew.boundMs) {
          problems.push(`this machine's clock is ${Math.abs(skew.skewMs)} ms ${skew.skewMs > 0 ? 'behind' : 'ahead of'} the team server's (±${Math.round(skew.boundMs)} ms): lease times follow the server, but fix the clock (NTP)`);
          await authority.noteClockSkew(skew, hostname(), clientClock(env)());
        }
        if (health.writeLock === 'busy') {
          problems.push(
            `store: the write lock of ${authority.location} is busy: another process has held it for over a second, so hooks that claim wait ${hookBusyTimeoutMs(env)} ms (TURNKEEPER_BUSY_TIMEOUT_MS) and then answer [store_unavailable]; find the holder with: lsof ${authority.location}`,
          );
        }
        if (health.integrity !== 'ok') problems.push(`integrity_check: ${health.integrity}`);
        if (!chain.ok) problems.push(`receipt chain broken at seq ${chain.breaks[0]?.seq} (${chain.breaks[0]?.kind}): turnkeeper verify`);
        // The upgrade maps path-keyed Goals to repositories, except where Todo ids would collide.
        for (const path of await authority.legacyGoalsLeft()) {
          problems.push(`Todos of ${path} still use that path as their Goal (their ids collide with its repository's Todos): turnkeeper goal move --from ${path} --rename moved --dir ${path}`);
        }
        sessions = (await authority.listSessions()).map((s) => ({ owner: s.owner, lastHookAt: new Date(s.lastHookAt).toISOString(), transcriptPath: s.transcriptPath }));
        silent = await silentLaunches(authority, Date.now());
        for (const launch of silent) {
          const agent = (await authority.getCapture(launch.capture))?.agent;
          problems.push(`the agent launched for ${launch.capture} at ${launch.committedAt} fired no hook within a minute: its hooks are skipped. ${agent ? TRUST_HINT[agent] : ''}`.trim());
        }
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
  const hooks = AGENTS.flatMap((agent) => (['user', 'project'] as const).map((scope) => ({ agent, scope, ...agentHooksStatus({ agent, scope, env, projectRoot }) })));
  for (const item of hooks) {
    if (item.staleCommands.length > 0) {
      problems.push(`${item.agent} ${item.scope} hooks use another command (${item.staleCommands[0]}): turnkeeper hooks install --agent ${item.agent} --scope ${item.scope}`);
    }
    // What the agent itself will do with an installed hook: its own trust step (each profile's check).
    const trustProblem = item.installed ? PROFILES[item.agent].trust.check?.({ env, scope: item.scope, projectRoot, readConfig: readJsonConfig }) : undefined;
    if (trustProblem !== undefined) problems.push(trustProblem);
  }
  if (!hooks.some((item) => item.installed)) problems.push('no agent has Turnkeeper hooks installed: turnkeeper hooks install --agent codex');
  return { ok: problems.length === 0, store, shim, hooks, sessions, silentLaunches: silent, closures: closureDiskUse(join(home, 'closures')), problems };
}

/** Snapshots under $TURNKEEPER_HOME/closures (named by a 64-hex digest) and the bytes they and any interrupted copies take. */
function closureDiskUse(dir: string): DoctorReport['closures'] {
  let snapshots = 0;
  let bytes = 0;
  const walk = (path: string) => {
    let names: string[];
    try {
      names = readdirSync(path);
    } catch {
      return;
    }
    for (const name of names) {
      const stat = lstatSync(join(path, name));
      if (stat.isDirectory()) walk(join(path, name));
      else bytes += stat.size;
    }
  };
  if (existsSync(dir)) {
    snapshots = readdirSync(dir).filter((name) => /^[0-9a-f]{64}$/.test(name)).length;
    walk(dir);
  }
  return { dir, snapshots, bytes };
}
