// xAI Grok Build (`grok`), read from its public source, never run here: github.com/xai-org/grok-build
// at 19d42e3 (2026-08-19, SOURCE_REV 7d67dea), crates/codegen/xai-grok-hooks (event.rs, runner/,
// config.rs) and its user guide crates/codegen/xai-grok-pager/docs/user-guide/10-hooks.md. Not on npm
// (`@vibe-kit/grok-cli` and `@webdevtoday/grok-cli` are unrelated). What the source says:
// - stdin is one camelCase envelope (`HookEventEnvelope`): `hookEventName` in snake_case
//   (`user_prompt_submit`, `pre_tool_use`, …), `sessionId`, `cwd`, `workspaceRoot`, `timestamp`,
//   `transcriptPath`, `promptId` (one per turn; absent on session-scoped events), `permissionMode`,
//   then the event's own fields flattened in: `prompt`, `toolName`, `toolUseId`, `toolInput`, `source`;
// - every hook process also gets GROK_HOOK_EVENT, GROK_HOOK_NAME, GROK_SESSION_ID,
//   GROK_WORKSPACE_ROOT and CLAUDE_PROJECT_DIR (runner/command.rs);
// - SessionStart, UserPromptSubmit and PostToolUse are observe-only: their stdout is ignored, so no
//   context reaches the model and a prompt cannot be blocked. PreToolUse reads `{"decision":"deny",
//   "reason"}` (a Claude-shaped `hookSpecificOutput.permissionDecision` is read as allow). Stop reads
//   `decision:block` and `hookSpecificOutput.additionalContext`, both of which keep the agent working;
// - hook files: `$GROK_HOME/hooks/*.json` (GROK_HOME, default ~/.grok) and `<project>/.grok/hooks/*.json`,
//   Claude's `{"hooks":{Event:[{"hooks":[{type,command,timeout}]}]}}` with timeouts in seconds; it
//   also reads ~/.claude/settings.json, .claude/settings.json and Cursor's hooks.json by default
//   (`[compat.claude] hooks = false` in ~/.grok/config.toml turns that off), so Claude Code's hooks
//   run for Grok sessions too, with Grok's payload (src/agents/payload.ts serves those as Grok's);
// - project hooks run only in a trusted folder (`/hooks-trust`, or `grok --trust`; stored in
//   ~/.grok/trusted_folders.toml; GROK_FOLDER_TRUST=0 turns the gate off);
// - `grok -p <prompt>` runs one turn and exits, `grok <prompt>` opens the TUI with it, `--resume <id>`.
import { join, resolve, sep } from 'node:path';
import type { AgentProfile, Env, EventKind, TrustContext } from './index';
import { commandEntry, homeOf, nonEmpty } from './common';

/** The event names its hook files take (Claude's spellings; Grok also accepts snake_case and Cursor's). */
const EVENTS: Readonly<Record<string, EventKind>> = {
  SessionStart: 'session_start',
  UserPromptSubmit: 'prompt',
  PreToolUse: 'pre_tool',
  PostToolUse: 'post_tool',
  Stop: 'stop',
};

/** `hookEventName` as the envelope carries it (`HookEventName`'s snake_case Serialize). */
const GROK_WIRE_EVENTS: Readonly<Record<string, EventKind>> = {
  session_start: 'session_start',
  user_prompt_submit: 'prompt',
  pre_tool_use: 'pre_tool',
  post_tool_use: 'post_tool',
  stop: 'stop',
};

/**
 * Grok's envelope: `hookEventName` in its wire spelling, or any `hookEventName` from a process its
 * runner started (GROK_HOOK_EVENT). VS Code's chat agent also sends `hookEventName`, in PascalCase.
 */
const ownEnvelope = (payload: Readonly<Record<string, unknown>>, env: Env): boolean =>
  typeof payload.hookEventName === 'string' && (Object.hasOwn(GROK_WIRE_EVENTS, payload.hookEventName) || nonEmpty(env.GROK_HOOK_EVENT) !== undefined);

/** `$GROK_HOME` when set and not empty, else `~/.grok` (xai-grok-home). */
const grokHome = (env: Env): string => resolve(nonEmpty(env.GROK_HOME) ?? join(homeOf(env), '.grok'));

/**
 * `trusted_folders.toml` (xai-grok-workspace trust.rs): `[folders."<abs path>"]` tables with `trusted =
 * true|false`. Only that shape is read; anything else in the file is ignored.
 */
function trustedFolders(text: string): Map<string, boolean> {
  const folders = new Map<string, boolean>();
  let current: string | undefined;
  for (const line of text.split(/\r?\n/)) {
    const table = /^\s*\[\s*folders\s*\.\s*"((?:[^"\\]|\\.)*)"\s*\]\s*(#.*)?$/.exec(line);
    if (table) {
      current = table[1]!.replace(/\\(.)/g, '$1');
      continue;
    }
    if (/^\s*\[/.test(line)) current = undefined;
    const trusted = /^\s*trusted\s*=\s*(true|false)\s*(#.*)?$/.exec(line);
    if (trusted && current !== undefined) folders.set(current, trusted[1] === 'true');
  }
  return folders;
}

/** `path` is `folder` or under it. */
const isWithin = (path: string, folder: string): boolean => path === folder || path.startsWith(folder.endsWith(sep) ? folder : folder + sep);

/**
 * Grok runs `<project>/.grok/hooks` only in a trusted folder: the nearest recorded decision for the
 * folder or a parent (the longest path wins, so a child's untrust overrides a parent's trust);
 * headless runs never prompt, so there an untrusted folder skips them silently. GROK_FOLDER_TRUST=0
 * turns the gate off.
 */
function trustCheck(context: TrustContext): string | undefined {
  if (context.scope !== 'project' || context.env.GROK_FOLDER_TRUST === '0' || context.readText === undefined) return undefined;
  const store = join(grokHome(context.env), 'trusted_folders.toml');
  const root = resolve(context.projectRoot);
  let nearest: { folder: string; trusted: boolean } | undefined;
  for (const [folder, trusted] of trustedFolders(context.readText(store) ?? '')) {
    if (isWithin(root, folder) && (nearest === undefined || folder.length > nearest.folder.length)) nearest = { folder, trusted };
  }
  if (nearest?.trusted === true) return undefined;
  const why = nearest === undefined ? `${store} records no decision for it or a parent` : `${store} records it untrusted (${nearest.folder})`;
  return `Grok Build skips ${join(root, '.grok', 'hooks')} until the folder is trusted (${why}; grok -p never asks): ${grok.trust.hint}`;
}

export const grok: AgentProfile = {
  agent: 'grok',
  displayName: 'Grok Build',
  events: { installed: EVENTS, accepted: { ...EVENTS, ...GROK_WIRE_EVENTS }, source: 'payload' },
  payload: {
    dialects: ['camel'],
    // `promptId`: one per turn, and absent on SessionStart.
    turnField: 'prompt_id',
    // Its own envelope: an event name in Grok's wire spelling (Copilot's camelCase payloads name no
    // event), or the variable its runner sets on every hook process.
    detect: (payload, env) => ownEnvelope(payload, env) || nonEmpty(env.GROK_HOOK_EVENT) !== undefined,
    // What reaches Claude Code's hooks from Grok (it runs ~/.claude/settings.json): served as Grok.
    ownEnvelope,
    // Not established from the source: a capture counts as carried until it is gone.
    compactionMarkers: [],
  },
  // Its tool names as `toolName` carries them (the resolved tool, not Claude's aliases).
  writeTools: new Set(['run_terminal_command', 'search_replace', 'apply_patch']),
  output: {
    // Ignored by Grok on SessionStart and UserPromptSubmit (observe-only): an empty object, the
    // smallest output that is still one JSON object.
    context: () => ({}),
    block: () => ({}),
    denyTool: (_eventName, text) => ({ decision: 'deny', reason: text }),
    contextIgnored:
      'Grok Build ignores the output of SessionStart and UserPromptSubmit hooks (observe-only), so the ready capture and any guidance never reach the model and a prompt cannot be blocked; claims, fencing (PreToolUse deny) and receipts work',
  },
  install: {
    userConfig: (env) => join(grokHome(env), 'hooks', 'turnkeeper.json'),
    // A file of its own in the directory Grok reads every *.json of: uninstall deletes it whole.
    projectConfig: '.grok/hooks/turnkeeper.json',
    timeout: 15, // seconds (its default is 5)
    entry: commandEntry,
    layout: 'matcher-group',
    syntax: 'json', // serde_json
    runsHooksOf: { agent: 'claude', turnOff: '[compat.claude] hooks = false in ~/.grok/config.toml' },
  },
  trust: {
    hint: 'Grok Build runs project hooks (.grok/hooks) only in a trusted folder: run /hooks-trust in grok once, or start it with --trust (saved in ~/.grok/trusted_folders.toml). User hooks in $GROK_HOME/hooks run everywhere.',
    check: trustCheck,
  },
  // GROK_SESSION_ID is set for hook processes and MCP servers; the source sets none for its tools.
  sessionEnv: [],
  testedVersion: '1.0.6', // xai-grok-pager-bin's version in that snapshot
  fromSource: 'github.com/xai-org/grok-build 19d42e3 (2026-08-19)',
  launch: {
    executable: 'grok',
    runtime: 'native',
    // Its own installer ships a native binary; no npm package to pin or attest.
    shape: { npmPackage: undefined, bin: undefined, kind: 'native' },
    resume: (session, mode, prompt, extra) => (mode === 'headless' ? ['--resume', session, ...extra, '-p', prompt] : ['--resume', session, ...extra]),
    start: (mode, prompt, extra) =>
      mode === 'headless' ? [...extra, '-p', ...(prompt === undefined ? [] : [prompt])] : [...extra, ...(prompt === undefined ? [] : ['--', prompt])],
  },
};
