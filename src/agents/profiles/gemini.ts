// Google Gemini CLI (npm @google/gemini-cli 0.61.0; observed in docs/notes/).
import { join, resolve } from 'node:path';
import type { AgentProfile, EventKind } from './index';
import { commandEntry, hookSpecificContext, homeOf, nonEmpty, systemMessage } from './common';

const EVENTS: Readonly<Record<string, EventKind>> = {
  SessionStart: 'session_start',
  BeforeAgent: 'prompt',
  BeforeTool: 'pre_tool',
  AfterTool: 'post_tool',
  AfterAgent: 'stop',
  // Fired when a tool waits for the person's permission (its `notification_type` is `ToolPermission`,
  // 0.61): the live status `waiting`.
  Notification: 'notification',
};

/** Gemini prepends earlier hook context to the prompt as <hook_context>…</hook_context>. */
const HOOK_CONTEXT = /<hook_context>[\s\S]*?<\/hook_context>/g;
const withoutHookContext = (prompt: string): string => prompt.replace(HOOK_CONTEXT, '');

export const gemini: AgentProfile = {
  agent: 'gemini',
  displayName: 'Gemini CLI',
  events: { installed: EVENTS, accepted: EVENTS, source: 'payload' },
  payload: {
    dialects: ['snake'],
    // None observed in its chat files (0.61): a capture there counts as carried until it is gone.
    compactionMarkers: [],
    // No Gemini payload has a per-prompt id: the Turn comes only from TURNKEEPER_TURN.
    turnField: undefined,
    detect: (payload) => payload.timestamp != null && typeof payload.hook_event_name === 'string' && Object.hasOwn(EVENTS, payload.hook_event_name),
    // Our own presentation or guidance, prepended by Gemini, must never read as the user naming a Todo.
    cleanPrompt: withoutHookContext,
  },
  writeTools: new Set(['run_shell_command', 'write_file', 'replace', 'edit']),
  output: {
    context: hookSpecificContext,
    block: (text) => ({ decision: 'deny', reason: text }),
    denyTool: (_eventName, text) => ({ decision: 'deny', reason: text }),
    notice: systemMessage,
  },
  install: {
    // GEMINI_CLI_HOME stands in for the home directory, so `.gemini` still goes under it.
    userConfig: (env) => join(resolve(nonEmpty(env.GEMINI_CLI_HOME) ?? homeOf(env)), '.gemini', 'settings.json'),
    projectConfig: '.gemini/settings.json',
    timeout: 15_000, // milliseconds
    entry: (command, timeout) => ({ name: 'turnkeeper', ...commandEntry(command, timeout) }),
    layout: 'matcher-group',
    // JSON.parse(stripJsonComments(text)) (Gemini CLI 0.61): comments pass, trailing commas do not.
    syntax: 'json-comments',
  },
  trust: {
    hint: 'Gemini CLI runs hooks only in trusted folders: run gemini in the folder once and trust it.',
  },
  sessionEnv: ['GEMINI_SESSION_ID'],
  testedVersion: '0.61.0',
  launch: {
    executable: 'gemini',
    runtime: 'node',
    shape: {
      npmPackage: '@google/gemini-cli',
      bin: 'bundle/gemini.js',
      kind: 'node-script',
      note: 'run from an attested closure: the Node runtime plus bundle/gemini.js and the chunks it loads',
      // Left alone it re-launches itself with `process.execPath` (a pathname, outside the launcher)
      // unless GEMINI_CLI_NO_RELAUNCH is set; the re-launched child is what normally runs the agent,
      // with that variable set.
      closureEnvironment: { GEMINI_CLI_NO_RELAUNCH: 'true' },
    },
    resume: (session, mode, prompt, extra) => (mode === 'headless' ? [...extra, '--resume', session, '-p', prompt] : [...extra, '--resume', session]),
    start: (mode, prompt, extra) =>
      mode === 'headless' ? [...extra, '-p', ...(prompt === undefined ? [] : [prompt])] : [...extra, ...(prompt === undefined ? [] : ['-i', prompt])],
  },
};
