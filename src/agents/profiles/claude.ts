// Anthropic Claude Code (npm @anthropic-ai/claude-code 2.1.332; observed in docs/notes/).
import { join, resolve } from 'node:path';
import type { AgentProfile } from './index';
import { CLAUDE_STYLE_EVENTS, commandEntry, HOOK_SPECIFIC_OUTPUT, homeOf, nonEmpty } from './common';

export const claude: AgentProfile = {
  agent: 'claude',
  displayName: 'Claude Code',
  events: { installed: CLAUDE_STYLE_EVENTS, accepted: CLAUDE_STYLE_EVENTS, source: 'payload' },
  // No detector: Claude is what a payload is when it is nothing else (spec §2).
  payload: {
    dialects: ['snake'],
    turnField: 'prompt_id',
    // A system line with `"subtype":"compact_boundary"` (or `microcompact_boundary`).
    compactionMarkers: ['compact_boundary"'],
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
