// GitHub Copilot CLI (npm @github/copilot 1.0.102). What is written here was observed with the real
// binary against a loopback OpenAI chat-completions server (test/e2e/copilot.test.ts and
// docs/hook-protocol.md "Copilot CLI"):
// - hooks registered under camelCase names get camelCase payloads (`sessionId`, `timestamp` in ms,
//   `cwd`, `prompt`, `toolName`, `toolArgs`, and `transcriptPath` on agentStop) with no event name,
//   so each installed command names its event (`--event`); hooks registered under Claude-style
//   names get snake_case payloads with `hook_event_name` and Claude tool names (`Bash`, `Write`);
// - stdout is read at the top level: `additionalContext`, `decision: "block"` with `reason`, and on
//   preToolUse `permissionDecision: "deny"` with `permissionDecisionReason`;
// - hook processes, and the agent's tools, get COPILOT_CLI=1; the tools also get COPILOT_AGENT_SESSION_ID.
import { join, resolve, sep } from 'node:path';
import type { AgentProfile, Env, EventKind, TrustContext } from './index';
import { CLAUDE_STYLE_EVENTS, decisionBlock, homeOf, nonEmpty } from './common';

const EVENTS: Readonly<Record<string, EventKind>> = {
  sessionStart: 'session_start',
  userPromptSubmitted: 'prompt',
  preToolUse: 'pre_tool',
  postToolUse: 'post_tool',
  agentStop: 'stop',
};

/** `$COPILOT_HOME`, default `~/.copilot`: settings, trust (config.json) and session state. */
const copilotHome = (env: Env): string => resolve(nonEmpty(env.COPILOT_HOME) ?? join(homeOf(env), '.copilot'));

/**
 * `agentStop` reports `$COPILOT_HOME/session-state/<sessionId>/events.jsonl`; the other events do
 * not, and a turn that crashed never reaches agentStop, which is when resume matters most.
 */
const transcriptOf = (session: string, env: Env): string => join(copilotHome(env), 'session-state', session, 'events.jsonl');

/** `path` is `folder` or under it (`/` holds everything: its own path already ends in the separator). */
const isWithin = (path: string, folder: string): boolean => path === folder || path.startsWith(folder.endsWith(sep) ? folder : folder + sep);

/** Copilot loads `.github/hooks` only for a folder under one of `trustedFolders` in `$COPILOT_HOME/config.json`. */
function trustCheck(context: TrustContext): string | undefined {
  if (context.scope !== 'project') return undefined; // user hooks run in any folder, -p included
  if (context.env.COPILOT_ALLOW_ALL === 'true') return undefined;
  const config = context.readConfig(join(copilotHome(context.env), 'config.json'));
  const folders = typeof config === 'object' && config !== null ? (config as { trustedFolders?: unknown }).trustedFolders : undefined;
  const root = resolve(context.projectRoot);
  const trusted = Array.isArray(folders) && folders.some((folder) => typeof folder === 'string' && isWithin(root, resolve(folder)));
  return trusted ? undefined : `Copilot CLI skips ${join(root, '.github', 'hooks')} until the folder is trusted: ${copilot.trust.hint}`;
}

export const copilot: AgentProfile = {
  agent: 'copilot',
  displayName: 'Copilot CLI',
  events: {
    installed: EVENTS,
    // A config written by hand with Claude-style names also reaches us, as snake_case payloads.
    accepted: { ...EVENTS, ...CLAUDE_STYLE_EVENTS },
    source: 'command',
  },
  payload: {
    dialects: ['camel', 'snake'],
    // events.jsonl, whose `user.message` carries hook context, per its event schema (a failed
    // compaction also counts, which only presents the bytes once more).
    compactionMarkers: ['"type":"session.compaction_complete"'],
    turnField: undefined, // no payload carries a per-prompt id: only TURNKEEPER_TURN
    detect: (payload, env) => typeof payload.sessionId === 'string' || env.COPILOT_CLI === '1',
    transcriptFallback: transcriptOf,
  },
  // Its own tool names (camelCase hooks) and the Claude names it reports to Claude-style hooks.
  writeTools: new Set(['bash', 'write_bash', 'powershell', 'write_powershell', 'create', 'edit', 'apply_patch', 'Bash', 'Write', 'Edit', 'MultiEdit']),
  output: {
    // Copilot reads these at the top level; a hookSpecificOutput context is ignored.
    context: (_eventName, text) => ({ additionalContext: text }),
    block: decisionBlock,
    denyTool: (_eventName, text) => ({ permissionDecision: 'deny', permissionDecisionReason: text }),
    // No notice: no sessionStart or userPromptSubmitted output field of Copilot CLI 1.0.102 reaches the
    // person (its SDK's hook output types: additionalContext, modifiedPrompt, modifiedConfig,
    // suppressOutput, decision and reason). Only a blocked prompt's `reason` does, as a warning.
  },
  install: {
    userConfig: (env) => join(copilotHome(env), 'settings.json'),
    // A file of its own: uninstall deletes it whole. `version` is optional since Copilot CLI 1.0.5.
    projectConfig: '.github/hooks/turnkeeper.json',
    timeout: 15, // seconds: `timeoutSec`
    // `command` is Copilot's cross-platform spelling of `bash`/`powershell`.
    entry: (command, timeout) => ({ type: 'command', command, timeoutSec: timeout }),
    layout: 'flat',
    // chat.hookFilesLocations reads .github/hooks by default.
    alsoRunBy: ["VS Code's chat agent through chat.hookFilesLocations"],
  },
  trust: {
    hint: 'Copilot CLI loads repository hooks (.github/hooks) only in a trusted folder: run copilot in the folder once and trust it (saved in trustedFolders of $COPILOT_HOME/config.json), or set COPILOT_ALLOW_ALL=true. User hooks in $COPILOT_HOME/settings.json run everywhere.',
    check: trustCheck,
  },
  sessionEnv: ['COPILOT_AGENT_SESSION_ID'],
  testedVersion: '1.0.102',
  launch: {
    executable: 'copilot',
    // A Node single executable application: Node's injection variables apply.
    runtime: 'node',
    shape: {
      npmPackage: '@github/copilot',
      bin: 'npm-loader.js',
      kind: 'unpacking-loader',
      refusal:
        'Copilot CLI is a Node single-executable application: it runs JavaScript and native modules it unpacks into a cache directory, which Turnkeeper cannot attest yet',
      note: 'npm-loader.js execs @github/copilot-<platform>-<arch>/copilot, a Node SEA that unpacks its scripts and native modules into $COPILOT_PKG_CACHE_HOME/pkg, $COPILOT_CACHE_HOME/pkg or $XDG_CACHE_HOME/copilot/pkg (default ~/.cache/copilot/pkg) and runs the newest cached version unless auto-update is off',
    },
    // --no-auto-update on every launch: otherwise the attested binary runs whatever newer package
    // sits in its cache (or downloads one). `--resume` takes its id with `=`; `--trust-folder` cannot
    // be combined with it (trust comes from config.json or COPILOT_ALLOW_ALL=true).
    resume: (session, mode, prompt, extra) =>
      mode === 'headless' ? [`--resume=${session}`, '--no-auto-update', ...extra, '-p', prompt] : [`--resume=${session}`, '--no-auto-update', ...extra],
    start: (mode, prompt, extra) =>
      mode === 'headless'
        ? ['--no-auto-update', ...extra, '-p', ...(prompt === undefined ? [] : [prompt])]
        : ['--no-auto-update', ...extra, ...(prompt === undefined ? [] : ['-i', prompt])],
  },
};
