// `turnkeeper hooks install|uninstall|status --agent <a> [--scope user|project]` and `doctor`.
import { existsSync, realpathSync } from 'node:fs';
import { AGENTS, isAgent, type Agent } from '../core/ids';
import { hooksStatus, installHooks, uninstallHooks, hookCommand, type Scope } from '../agents/install';
import { readShim, shimPath, writeShim } from '../agents/shim';
import { storePath, turnkeeperHome } from '../store/location';
import { silentLaunches, type SilentLaunch } from '../lifecycle/status';
import { EXIT, goalFrom, openStore, parse, printJson, UsageError, type Io } from './io';

const TRUST_HINT: Readonly<Record<Agent, string>> = {
  codex: 'Codex runs a new or changed hook only after you trust it: open codex and review it in /hooks (or pass --dangerously-bypass-hook-trust for one run).',
  claude: 'Claude Code runs hooks only in trusted folders: start claude in the folder once and accept the trust prompt.',
  gemini: 'Gemini CLI runs hooks only in trusted folders: run gemini in the folder once and trust it.',
};

export async function hooksCommand(args: string[], io: Io): Promise<number> {
  const usage = 'turnkeeper hooks install|uninstall|status --agent codex|claude|gemini [--scope user|project] [--json]';
  const [sub, ...rest] = args;
  if (sub !== 'install' && sub !== 'uninstall' && sub !== 'status') throw new UsageError(`usage: ${usage}`);
  const { values } = parse(
    rest,
    { agent: { type: 'string' }, scope: { type: 'string' }, goal: { type: 'string' }, json: { type: 'boolean' } },
    { min: 0, max: 0, usage },
  );
  const agents: Agent[] = values.agent === undefined && sub === 'status' ? [...AGENTS] : [parseAgent(values.agent, usage)];
  const scope = parseScope(values.scope, usage);
  const home = turnkeeperHome(io.env);
  const command = (agent: Agent) => hookCommand(agent, shimPath(home));
  const target = (agent: Agent) => ({ agent, scope, env: io.env, projectRoot: goalFrom(io, values.goal) });

  if (sub === 'status') {
    const report = agents.map((agent) => ({ agent, scope, ...hooksStatus(target(agent), command(agent)) }));
    if (values.json) printJson(io, report);
    else for (const item of report) io.out(`${item.agent.padEnd(7)} ${item.installed ? 'installed' : 'not installed'}  ${item.path}\n`);
    return EXIT.done;
  }
  const agent = agents[0]!;
  if (sub === 'install') {
    // The shim is rewritten to point at this Turnkeeper; the command in the agent's config stays the same.
    const shimChanged = writeShim(home, {
      runtime: process.execPath,
      script: cliScriptPath(),
      electronRunAsNode: process.versions.electron !== undefined,
      home,
      db: io.env.TURNKEEPER_DB,
    });
    const result = installHooks(target(agent), command(agent));
    if (values.json) printJson(io, { ok: true, agent, scope, shim: shimPath(home), shimChanged, ...result });
    else {
      io.out(`${result.changed ? 'installed' : 'already installed'}: ${agent} hooks in ${result.path}${result.backup ? ` (backup ${result.backup})` : ''}\n`);
      io.out(`hook command: ${command(agent)}\n${TRUST_HINT[agent]}\n`);
    }
    return EXIT.done;
  }
  const result = uninstallHooks(target(agent), command(agent));
  if (values.json) printJson(io, { ok: true, agent, scope, ...result });
  else io.out(`${result.changed ? 'removed' : 'nothing to remove'}: ${agent} hooks in ${result.path}\n`);
  return EXIT.done;
}

function parseAgent(value: string | undefined, usage: string): Agent {
  if (!isAgent(value)) throw new UsageError(`--agent must be one of ${AGENTS.join(', ')}\nusage: ${usage}`);
  return value;
}

function parseScope(value: string | undefined, usage: string): Scope {
  if (value === undefined || value === 'user' || value === 'project') return value ?? 'user';
  throw new UsageError(`--scope must be user or project\nusage: ${usage}`);
}

/** The bundle that is running now (dist/cli.js), resolved through npm's bin symlink. */
function cliScriptPath(): string {
  return realpathSync(process.argv[1] ?? '');
}

export async function doctorCommand(args: string[], io: Io): Promise<number> {
  const { values } = parse(args, { json: { type: 'boolean' }, goal: { type: 'string' } }, { min: 0, max: 0, usage: 'turnkeeper doctor [--json]' });
  const home = turnkeeperHome(io.env);
  const projectRoot = goalFrom(io, values.goal);
  const problems: string[] = [];
  let storeReport: Record<string, unknown> = { path: storePath(io.env), exists: false };
  let sessions: { owner: string; lastHookAt: string; transcriptPath: string | null }[] = [];
  let silent: SilentLaunch[] = [];
  try {
    const store = await openStore(io, false);
    if (store) {
      try {
        const health = await store.health();
        const chain = await store.verifyChain();
        storeReport = { exists: true, ...health, chain };
        if (health.integrity !== 'ok') problems.push(`integrity_check: ${health.integrity}`);
        if (!chain.ok) problems.push(`receipt chain broken at seq ${chain.breaks[0]?.seq} (${chain.breaks[0]?.kind}): turnkeeper verify`);
        sessions = (await store.listSessions()).map((s) => ({ owner: s.owner, lastHookAt: new Date(s.lastHookAt).toISOString(), transcriptPath: s.transcriptPath }));
        silent = await silentLaunches(store, Date.now());
        for (const launch of silent) {
          const agent = (await store.getCapture(launch.capture))?.agent;
          problems.push(
            `the agent launched for ${launch.capture} at ${launch.committedAt} fired no hook within a minute: its hooks are skipped. ${agent ? TRUST_HINT[agent] : ''}`.trim(),
          );
        }
      } finally {
        store.close();
      }
    }
  } catch (error) {
    storeReport = { path: storePath(io.env), exists: true, error: (error as Error).message };
    problems.push(`store: ${(error as Error).message}`);
  }
  const shim = readShim(home);
  const shimReport = {
    path: shimPath(home),
    exists: shim !== undefined,
    target: shim ?? null,
    targetExists: shim !== undefined && existsSync(shim.runtime) && existsSync(shim.script),
  };
  if (shim && !shimReport.targetExists) problems.push(`the hook shim points at a missing runtime or script: turnkeeper hooks install --agent <agent>`);
  const hooks = AGENTS.flatMap((agent) =>
    (['user', 'project'] as const).map((scope) => ({
      agent,
      scope,
      ...hooksStatus({ agent, scope, env: io.env, projectRoot }, hookCommand(agent, shimPath(home))),
    })),
  );
  for (const item of hooks) {
    if (item.staleCommands.length > 0) problems.push(`${item.agent} ${item.scope} hooks use another command (${item.staleCommands[0]}): turnkeeper hooks install --agent ${item.agent} --scope ${item.scope}`);
  }
  if (!hooks.some((item) => item.installed)) problems.push('no agent has Turnkeeper hooks installed: turnkeeper hooks install --agent codex');
  const report = { ok: problems.length === 0, store: storeReport, shim: shimReport, hooks, sessions, silentLaunches: silent, problems };
  if (values.json) printJson(io, report);
  else {
    io.out(`store: ${String(storeReport.path)} ${storeReport.exists ? `(schema ${String(storeReport.schemaVersion ?? '?')}, integrity ${String(storeReport.integrity ?? '?')})` : '(not created yet)'}\n`);
    for (const item of hooks) if (item.installed) io.out(`hooks: ${item.agent} (${item.scope}) installed in ${item.path}\n`);
    for (const session of sessions.slice(0, 10)) io.out(`session ${session.owner}: last hook ${session.lastHookAt}\n`);
    io.out(problems.length === 0 ? 'no problems found\n' : problems.map((p) => `problem: ${p}\n`).join(''));
  }
  return report.ok ? EXIT.done : EXIT.refused;
}
