// The doctor report as a document a person reads (the editor's "Turnkeeper: Doctor"): problems first,
// each with its fix; then one section per agent with its checks; then the store and the sessions.
// The CLI prints the same report as lines (src/cli/hooks.ts); `--json` is for programs.
import { PROFILES } from '../agents/profiles/index';
import { AGENTS, type Agent } from '../core/ids';
import type { AgentCheck } from './agentChecks';
import type { DoctorReport } from './installation';
import { witnessSentence } from '../ledger/witness';

const mark = (status: AgentCheck['status']): string => (status === 'ok' ? '✓' : status === 'problem' ? '✗ **problem**' : '? unknown');

/** Stored and environment text goes into the document as code, so it cannot format (or link) itself. */
const code = (text: string): string => `\`${text.replace(/`/g, 'ʼ').replace(/\n/g, ' ')}\``;

export function doctorMarkdown(report: DoctorReport, when: Date = new Date()): string {
  const out: string[] = [
    `# Turnkeeper doctor`,
    '',
    `${when.toISOString()} · ${report.problems.length === 0 ? 'no problems found' : `${report.problems.length} problem${report.problems.length === 1 ? '' : 's'}`}`,
    '',
  ];
  const rowProblems = report.checks.filter((check) => check.status === 'problem');
  if (report.problems.length > 0) {
    out.push('## Problems', '');
    for (const check of rowProblems)
      out.push(`- **${PROFILES[check.agent].displayName}** (${check.check}): ${check.detail}${check.fix ? `\n  - fix: ${check.fix}` : ''}`);
    for (const problem of report.otherProblems) out.push(`- ${problem}`);
    out.push('');
  }
  const agents = AGENTS.filter(
    (agent: Agent) => report.hooks.some((hook) => hook.agent === agent && hook.installed) || report.checks.some((check) => check.agent === agent),
  );
  for (const agent of agents) {
    out.push(`## ${PROFILES[agent].displayName}`, '');
    for (const hook of report.hooks.filter((item) => item.agent === agent && item.installed))
      out.push(`- hooks installed (${hook.scope} scope) in ${code(hook.path)}`);
    // Problems first within the agent too, then what could not be told, then what is fine.
    const order = { problem: 0, unknown: 1, ok: 2 } as const;
    for (const check of report.checks.filter((item) => item.agent === agent).sort((a, b) => order[a.status] - order[b.status])) {
      out.push(`- ${mark(check.status)} ${check.check}${check.scope ? ` (${check.scope})` : ''}: ${check.detail}`);
      if (check.status !== 'ok' && check.fix) out.push(`  - fix: ${check.fix}`);
    }
    out.push('');
  }
  if (agents.length === 0) out.push('No agent has Turnkeeper’s hooks installed: run “Turnkeeper: Install Agent Hooks”.', '');
  const store = report.store;
  out.push(
    '## Store',
    '',
    `- ${code(String(store.path))} ${store.exists ? `(schema ${String(store.schemaVersion ?? '?')}, integrity ${String(store.integrity ?? '?')})` : '(not created yet)'}`,
  );
  if (typeof store.serverVersion === 'string') {
    const ms = (value: unknown): string => (typeof value === 'number' ? String(Math.round(value)) : '?');
    out.push(
      `- PostgreSQL ${store.serverVersion}; round trip ${ms(store.roundTripMs)} ms; clock skew ${ms(store.clockSkewMs)} ms (server minus this machine, ±${ms(store.clockSkewBoundMs)} ms)`,
    );
  }
  if (store.chain)
    out.push(
      `- receipt chain: ${store.chain.ok ? `verifies (${store.chain.verified} receipts)` : `BROKEN (${store.chain.breaks.length} breaks)`}`,
      `- ${witnessSentence(store.chain.witness, store.chain.breaks)}`,
    );
  if (store.error) out.push(`- cannot be read: ${store.error}`);
  out.push('');
  if (report.sessions.length > 0) {
    out.push('## Sessions (newest first)', '');
    for (const session of report.sessions.slice(0, 10)) out.push(`- ${code(session.owner)}: last hook ${session.lastHookAt}`);
    out.push('');
  }
  return out.join('\n');
}
