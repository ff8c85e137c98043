// `turnkeeper hooks install|uninstall|status --agent <a> [--scope user|project]` and `doctor`.
import { realpathSync } from 'node:fs';
import { AGENTS, isAgent, type Agent } from '../core/ids';
import type { Scope } from '../agents/install';
import { agentHooksStatus, doctorReport, installAgentHooks, uninstallAgentHooks } from '../doctor/installation';
import { findExecutable } from '../agents/executables';
import { witnessSentence } from '../ledger/witness';
import { EXIT, placementFrom, openStore, parse, printJson, unknownSubcommand, UsageError, type Io } from './io';
import { launchProcessState, runningProcesses } from '../launcher/liveness';
import { hookServerSentence, hookServerState } from './hookServer';

export function hooksCommand(args: string[], io: Io): number {
  const usage = `turnkeeper hooks install|uninstall|status --agent ${AGENTS.join('|')} [--scope user|project] [--json]`;
  const [sub, ...rest] = args;
  if (sub !== 'install' && sub !== 'uninstall' && sub !== 'status') throw unknownSubcommand('hooks', sub, ['install', 'uninstall', 'status'], usage);
  const { values } = parse(
    rest,
    { agent: { type: 'string' }, scope: { type: 'string' }, goal: { type: 'string' }, json: { type: 'boolean' } },
    { min: 0, max: 0, usage },
  );
  const agents: Agent[] = values.agent === undefined && sub === 'status' ? [...AGENTS] : [parseAgent(values.agent, usage)];
  const scope = parseScope(values.scope, usage);
  const target = (agent: Agent) => ({ agent, scope, env: io.env, projectRoot: placementFrom(io, values.goal).checkout });

  if (sub === 'status') {
    const report = agents.map((agent) => ({ agent, scope, ...agentHooksStatus(target(agent)) }));
    if (values.json) printJson(io, report);
    else for (const item of report) io.out(`${item.agent.padEnd(7)} ${item.installed ? 'installed' : 'not installed'}  ${item.path}\n`);
    return EXIT.done;
  }
  const agent = agents[0]!;
  if (sub === 'install') {
    const result = installAgentHooks(target(agent), {
      runtime: process.execPath,
      script: cliScriptPath(),
      electronRunAsNode: process.versions.electron !== undefined,
    });
    const { trustHint, ...rest } = result;
    if (values.json) printJson(io, { ok: true, agent, scope, ...rest });
    else {
      io.out(`${result.changed ? 'installed' : 'already installed'}: ${agent} hooks in ${result.path}${result.backup ? ` (backup ${result.backup})` : ''}\n`);
      io.out(`hook command: ${result.command}\n`);
      if (scope === 'project') {
        // Committed and shared: it runs `turnkeeper` from PATH, which each teammate's agent must find.
        io.out(
          `this config names no path of this machine: commit it; every teammate's agent needs turnkeeper on PATH (${findExecutable(io.env, 'turnkeeper') ?? 'not on this PATH: see turnkeeper doctor'})\n`,
        );
      }
      if (result.alsoInstalledAt)
        io.out(
          `warning: Turnkeeper's ${agent} hooks are also installed in ${result.alsoInstalledAt}: ${agent} will run every hook twice; keep one: turnkeeper hooks uninstall --agent ${agent} --scope ${scope === 'user' ? 'project' : 'user'}\n`,
        );
      io.out(`next: ${trustHint}\nthen: turnkeeper doctor (it checks what ${agent} will do with the hooks)\n`);
    }
    return EXIT.done;
  }
  const result = uninstallAgentHooks(target(agent));
  if (values.json) printJson(io, { ok: true, agent, scope, ...result });
  else {
    // A config install created is deleted rather than left as `{}`; every change leaves a backup.
    const detail = [result.deleted ? 'deleted the file, which install had created' : '', result.backup ? `backup ${result.backup}` : '']
      .filter(Boolean)
      .join('; ');
    io.out(`${result.changed ? 'removed' : 'nothing to remove'}: ${agent} hooks in ${result.path}${detail ? ` (${detail})` : ''}\n`);
  }
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
  const report = await doctorReport(io.env, placementFrom(io, values.goal).checkout, () => openStore(io, false), { launchProcessState, runningProcesses });
  // The warm hook server: one that listens and does not answer costs every hook 1.5 s.
  const hookServer = await hookServerState(io.env);
  const serverProblem =
    hookServer.listening && !hookServer.running
      ? hookServerSentence(hookServer)
          .split('\n')[0]!
          .replace(/^hook server: /, 'the hook server is ')
      : undefined;
  if (values.json) {
    const { otherProblems: _listedInProblems, ...json } = report;
    printJson(io, { ...json, ...(serverProblem ? { ok: false, problems: [...json.problems, serverProblem] } : {}), hookServer });
  } else {
    const store = report.store;
    io.out(
      `store: ${String(store.path)} ${store.exists ? `(schema ${store.schemaVersion ?? '?'}, integrity ${store.integrity ?? '?'})` : '(not created yet)'}\n`,
    );
    // A team server: what --json reports of it (installation.ts), in one line.
    if (typeof store.serverVersion === 'string') {
      const ms = (value: unknown): string => (typeof value === 'number' ? String(Math.round(value)) : '?');
      io.out(
        `server: PostgreSQL ${store.serverVersion}; round trip ${ms(store.roundTripMs)} ms; clock skew ${ms(store.clockSkewMs)} ms (server minus this machine, ±${ms(store.clockSkewBoundMs)} ms)\n`,
      );
    }
    if (store.chain) io.out(`${witnessSentence(store.chain.witness, store.chain.breaks)}\n`);
    for (const item of report.hooks) if (item.installed) io.out(`hooks: ${item.agent} (${item.scope}) installed in ${item.path}\n`);
    // What each agent will do with them: one line per check, its fix under a problem.
    for (const check of report.checks) {
      io.out(
        `${check.status === 'ok' ? 'ok     ' : check.status === 'problem' ? 'PROBLEM' : 'unknown'} ${check.agent}${check.scope ? ` ${check.scope}` : ''} ${check.check}: ${check.detail}\n`,
      );
      if (check.status !== 'ok' && check.fix) io.out(`        fix: ${check.fix}\n`);
    }
    for (const session of report.sessions.slice(0, 10)) io.out(`session ${session.owner}: last hook ${session.lastHookAt}\n`);
    io.out(`${hookServerSentence(hookServer)}\n`);
    // The checks' problems were printed with their rows above; the rest are listed here.
    io.out([...report.otherProblems, ...(serverProblem ? [serverProblem] : [])].map((p) => `problem: ${p}\n`).join(''));
    const count = report.problems.length + (serverProblem ? 1 : 0);
    io.out(count === 0 ? 'no problems found\n' : `${count} problem${count === 1 ? '' : 's'}\n`);
  }
  return report.ok && !serverProblem ? EXIT.done : EXIT.refused;
}
