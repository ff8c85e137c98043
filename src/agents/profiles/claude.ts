// Anthropic Claude Code (npm @anthropic-ai/claude-code 2.1.332; observed in docs/notes/).
import { join, resolve } from 'node:path';
import type { AgentProfile, EventKind, TurnUsage } from './index';
import { CLAUDE_STYLE_EVENTS, commandEntry, count, HOOK_SPECIFIC_OUTPUT, homeOf, isRecord, jsonLines, lineTime, nonEmpty } from './common';

/**
 * The five shared events, and the two that say the agent waits for the person (the live status
 * `waiting`): `Notification` (a permission prompt, or the idle reminder after a turn) and
 * `PermissionRequest` (a permission dialog is shown). Both are in Claude Code's hook settings schema
 * (docs/notes/claude-gemini-hooks-observed.md); the hook prints nothing for them.
 */
const EVENTS: Readonly<Record<string, EventKind>> = { ...CLAUDE_STYLE_EVENTS, Notification: 'notification', PermissionRequest: 'notification' };

/**
 * The transcript (JSONL) writes each model response as `{"type":"assistant","timestamp","version",
 * "message":{"id","model","usage":{input_tokens, output_tokens, cache_creation_input_tokens,
 * cache_read_input_tokens}}}`, one line per content block of a message, each repeating its usage:
 * counted once per message id, the last line's usage (2.1.332). The turn's messages are the ones
 * stamped at or after its prompt. No cost is written.
 */
function claudeTurnUsage(tail: string, sinceMs: number | undefined): TurnUsage {
  const usageById = new Map<string, Record<string, unknown>>();
  let model: string | undefined;
  let agentVersion: string | undefined;
  for (const line of jsonLines(tail)) {
    if (typeof line.version === 'string') agentVersion = line.version;
    if (line.type !== 'assistant' || !isRecord(line.message)) continue;
    const at = lineTime(line);
    if (sinceMs !== undefined && (at === undefined || at < sinceMs)) continue;
    const { id, usage } = line.message;
    if (typeof line.message.model === 'string' && line.message.model !== '<synthetic>') model = line.message.model;
    if (typeof id === 'string' && isRecord(usage)) usageById.set(id, usage);
  }
  const sum = (field: string): number | undefined => {
    let total: number | undefined;
    for (const usage of usageById.values()) {
      const n = count(usage[field]);
      if (n !== undefined) total = (total ?? 0) + n;
    }
    return total;
  };
  const cacheRead = sum('cache_read_input_tokens');
  const cacheWrite = sum('cache_creation_input_tokens');
  const inputTokens = sum('input_tokens');
  const outputTokens = sum('output_tokens');
  const cached = cacheRead === undefined && cacheWrite === undefined ? undefined : (cacheRead ?? 0) + (cacheWrite ?? 0);
  return {
    ...(agentVersion !== undefined ? { agentVersion } : {}),
    ...(model !== undefined ? { model } : {}),
    ...(inputTokens !== undefined ? { inputTokens } : {}),
    ...(outputTokens !== undefined ? { outputTokens } : {}),
    ...(cached !== undefined ? { cachedInputTokens: cached } : {}),
  };
}

export const claude: AgentProfile = {
  agent: 'claude',
  displayName: 'Claude Code',
  events: { installed: EVENTS, accepted: EVENTS, source: 'payload' },
  // No detector: Claude is what a payload is when it is nothing else (spec §2).
  payload: {
    dialects: ['snake'],
    turnField: 'prompt_id',
    // A system line with `"subtype":"compact_boundary"` (or `microcompact_boundary`).
    compactionMarkers: ['compact_boundary"'],
    turnUsage: claudeTurnUsage,
  },
  writeTools: new Set(['Bash', 'Edit', 'Write', 'MultiEdit', 'NotebookEdit']),
  output: HOOK_SPECIFIC_OUTPUT,
  install: {
    userConfig: (env) => join(resolve(nonEmpty(env.CLAUDE_CONFIG_DIR) ?? join(homeOf(env), '.claude')), 'settings.json'),
    projectConfig: '.claude/settings.json',
    timeout: 15, // seconds
    entry: commandEntry,
    layout: 'matcher-group',
    // Observed (Claude Code 2.1.332): a comment or a trailing comma, and no hook in the file runs.
    syntax: 'json',
    // VS Code 1.109+: chat.hookFilesLocations reads .claude/settings.json and ~/.claude/settings.json.
    alsoRunBy: ["VS Code's chat agent through chat.hookFilesLocations"],
  },
  trust: {
    hint: 'Claude Code runs hooks only in trusted folders: start claude in the folder once and accept the trust prompt.',
  },
  sessionEnv: ['CLAUDE_CODE_SESSION_ID'],
  testedVersion: '2.1.332',
  launch: {
    executable: 'claude',
    // A Bun single-file executable: BUN_OPTIONS and Bun's preload variables are its injection points.
    runtime: 'bun',
    shape: { npmPackage: '@anthropic-ai/claude-code', bin: 'bin/claude.exe', kind: 'native' },
    // `--` before the prompt: several of Claude's options take a list (--allowedTools, --add-dir, …),
    // so agent arguments such as `-- --allowedTools Bash` swallowed the prompt as one more value
    // (2.1.332: "Input must be provided … when using --print"), and a prompt starting with `-` would
    // be read as an option.
    resume: (session, mode, prompt, extra) => (mode === 'headless' ? ['-p', ...extra, '--resume', session, '--', prompt] : [...extra, '--resume', session]),
    start: (mode, prompt, extra) =>
      mode === 'headless' ? ['-p', ...extra, ...(prompt === undefined ? [] : ['--', prompt])] : [...extra, ...(prompt === undefined ? [] : ['--', prompt])],
  },
};
