// OpenAI Codex CLI (npm @openai/codex 0.171.0; observed in docs/notes/).
import { join, resolve } from 'node:path';
import type { AgentProfile, Env, EventKind, TurnUsage } from './index';
import { CLAUDE_STYLE_EVENTS, commandEntry, count, HOOK_SPECIFIC_OUTPUT, homeOf, isRecord, jsonLines, lineTime, nonEmpty } from './common';

/** The TUI's switch to its embedded app server (see `launch.start`). */
const CODEX_NO_DAEMON = '--no-daemon';

/** CODEX_HOME as Codex reads it from an environment: the variable, else ~/.codex. */
const codexHome = (env: Env): string => resolve(nonEmpty(env.CODEX_HOME) ?? join(homeOf(env), '.codex'));

/**
 * The five shared events, and `PermissionRequest`, which Codex 0.171 fires before it asks the person
 * to approve a command (its binary names the event and its output wire; not fired under
 * `--dangerously-bypass-approvals-and-sandbox`): the live status `waiting`. The hook prints nothing.
 */
const EVENTS: Readonly<Record<string, EventKind>> = { ...CLAUDE_STYLE_EVENTS, PermissionRequest: 'notification' };

/**
 * The rollout (JSONL, `{"timestamp","type","payload"}` lines) names the model in each `turn_context`
 * payload and the session's running totals in `event_msg` payloads of type `token_count`
 * (`info.total_token_usage`: input_tokens, cached_input_tokens, output_tokens), and its version in
 * `session_meta` (`cli_version`, the first line: only in a short rollout's tail). The turn's tokens
 * are the last total minus the last one stamped before its prompt.
 */
function codexTurnUsage(tail: string, sinceMs: number | undefined): TurnUsage {
  let model: string | undefined;
  let agentVersion: string | undefined;
  let before: Record<string, unknown> | undefined;
  let last: Record<string, unknown> | undefined;
  for (const line of jsonLines(tail)) {
    const payload = line.payload;
    if (!isRecord(payload)) continue;
    if (line.type === 'session_meta' && typeof payload.cli_version === 'string') agentVersion = payload.cli_version;
    if (line.type === 'turn_context' && typeof payload.model === 'string') model = payload.model;
    if (line.type !== 'event_msg' || payload.type !== 'token_count' || !isRecord(payload.info) || !isRecord(payload.info.total_token_usage)) continue;
    const at = lineTime(line);
    if (sinceMs !== undefined && at !== undefined && at < sinceMs) before = payload.info.total_token_usage;
    else last = payload.info.total_token_usage;
  }
  const delta = (field: string): number | undefined => {
    const end = count(last?.[field]);
    if (end === undefined) return undefined;
    const start = count(before?.[field]) ?? 0;
    return end >= start ? end - start : undefined;
  };
  const inputTokens = delta('input_tokens');
  const outputTokens = delta('output_tokens');
  const cachedInputTokens = delta('cached_input_tokens');
  return {
    ...(agentVersion !== undefined ? { agentVersion } : {}),
    ...(model !== undefined ? { model } : {}),
    ...(inputTokens !== undefined ? { inputTokens } : {}),
    ...(outputTokens !== undefined ? { outputTokens } : {}),
    ...(cachedInputTokens !== undefined ? { cachedInputTokens } : {}),
  };
}

export const codex: AgentProfile = {
  agent: 'codex',
  displayName: 'Codex CLI',
  events: { installed: EVENTS, accepted: EVENTS, source: 'payload' },
  payload: {
    dialects: ['snake'],
    // Rollouts: `{"type":"compacted",…}`, and the `context_compacted` event.
    compactionMarkers: ['"type":"compacted"', '"context_compacted"'],
    turnField: 'turn_id',
    turnUsage: codexTurnUsage,
    // `turn_id`, or `model` with `permission_mode` (SessionStart has no turn_id).
    detect: (payload) => payload.turn_id != null || (payload.model != null && payload.permission_mode != null),
  },
  // Codex 0.171 reports its shell as `Bash`; older builds used the other names.
  writeTools: new Set(['Bash', 'apply_patch', 'shell', 'exec_command', 'write_stdin', 'local_shell', 'Edit', 'Write']),
  output: HOOK_SPECIFIC_OUTPUT,
  install: {
    userConfig: (env) => join(codexHome(env), 'hooks.json'),
    projectConfig: '.codex/hooks.json',
    timeout: 15, // seconds
    // Codex rejects unknown fields: type, command, timeout and nothing else.
    entry: commandEntry,
    layout: 'matcher-group',
    // Observed (Codex 0.171): a comment or a trailing comma, and "failed to parse hooks config".
    syntax: 'json',
  },
  trust: {
    // A new or changed hook is skipped silently until trusted (trusted_hash in config.toml).
    hint: 'Codex runs a new or changed hook only after you trust it: open codex and review it in /hooks (or pass --dangerously-bypass-hook-trust for one run).',
    // Loaded on first use: only doctor asks, and a hook should not evaluate it (nor node:child_process).
    ask: async (...args) => (await import('./codexTrust')).askCodexTrust(...args),
  },
  sessionEnv: ['CODEX_THREAD_ID', 'CODEX_SESSION_ID'],
  testedVersion: '0.171.0',
  launch: {
    executable: 'codex',
    runtime: 'native',
    shape: {
      npmPackage: '@openai/codex',
      bin: 'bin/codex.js',
      kind: 'npm-shim',
      note: 'the shim execs @openai/codex-<platform>-<arch>/vendor/<triple>/bin/codex with CODEX_MANAGED_PACKAGE_ROOT and CODEX_MANAGED_BY_NPM=1; the launcher leases that binary',
      // bin/codex.js: the platform package beside @openai/codex (npm's flat layout), nested in it, or
      // a vendor/ folder in the package itself (older releases), with the two variables it sets.
      shimTarget: (packageRoot, platform) => {
        const vendored = platform.rustTarget === undefined ? [] : ['vendor', platform.rustTarget, 'bin', 'codex'];
        const packageName = `codex-${platform.npm}`;
        return {
          candidates:
            vendored.length === 0 ? [] : [join('..', packageName, ...vendored), join('node_modules', '@openai', packageName, ...vendored), join(...vendored)],
          environment: { CODEX_MANAGED_PACKAGE_ROOT: packageRoot, CODEX_MANAGED_BY_NPM: '1' },
          // It clears every package-manager marker before setting its own.
          clearedPrefixes: ['CODEX_MANAGED_BY_'],
        };
      },
    },
    // Interactive Codex (0.171) runs its turns in a shared background app server, the daemon, when one
    // runs or it can start one; the daemon runs every hook with its own environment, the one of the
    // codex that started it. A launch's TURNKEEPER_TODO/TURN/LAUNCH would then miss its hooks (a
    // daemon a plain codex started), or outlive the launch and reach the next session's hooks (a
    // daemon this TUI started). `--no-daemon` is Codex's own switch to the embedded app server, which
    // runs the hooks with this process's environment. `exec` is always embedded.
    resume: (session, mode, prompt, extra) =>
      mode === 'headless' ? ['exec', ...extra, 'resume', session, prompt] : ['resume', CODEX_NO_DAEMON, ...extra, session],
    start: (mode, prompt, extra) =>
      mode === 'headless'
        ? ['exec', ...extra, ...(prompt === undefined ? [] : [prompt])]
        : [CODEX_NO_DAEMON, ...extra, ...(prompt === undefined ? [] : [prompt])],
    // Observed (0.171): `codex app-server daemon start` runs `codex app-server --managed-daemon …` in
    // the background with the starting codex's environment, one per CODEX_HOME, until `… daemon stop`.
    sharedDaemon: {
      name: 'a shared Codex app-server daemon',
      matches: (process, env) => {
        if (!process.argv.includes('app-server') || !process.argv.includes('--managed-daemon')) return false;
        const environ = process.environ();
        return environ !== undefined && codexHome(environ) === codexHome(env);
      },
      stop: 'codex app-server daemon stop (in a shell with the same CODEX_HOME)',
      launchSwitch: CODEX_NO_DAEMON,
    },
  },
};
