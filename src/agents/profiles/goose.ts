// Block's Goose (`goose`), read from its public source, never run here: github.com/block/goose,
// crates/goose/src/hooks/mod.rs (commit 0825b57, "modelled after the Open Plugins hooks
// specification"), crates/goose/src/plugins/discovery.rs and the agent's calls into them. Not on npm.
// What the source says:
// - hooks are plugins: `<plugin>/hooks/hooks.json`, Claude's `{"hooks":{Event:[{"matcher",
//   "hooks":[{type:"command",command,timeout}]}]}}` (timeout in seconds, default 30; serde_json), of
//   every directory under `<project>/.agents/plugins/` and the user's `.agents/plugins/` (under
//   GOOSE_PATH_ROOT when set, else the home directory); the project is Goose's own working
//   directory when it starts (`HookManager::load(std::env::current_dir())`). A new plugin is enabled
//   on discovery (recorded in config.yaml); settings.json's disabledPlugins turns one off. No trust
//   prompt;
// - stdin is `HookContext`: `event` (not `hook_event_name`), `session_id`, `matcher_context`,
//   `tool_call_id`, `tool_name`, `tool_input`, `tool_output`, `message` (the prompt on
//   UserPromptSubmit), `last_assistant_message`, and `working_dir` on Stop only. No cwd on any other
//   event and no turn id on any: the hook runs `sh -c` in Goose's own working directory (no
//   current_dir is set), which is where the hook takes its Goal from;
// - SessionStart and UserPromptSubmit are fire-and-forget (`emit`): stdout is ignored, except that
//   SessionStart may print `{"banner": "…"}`, which the client shows the person before the first
//   prompt. No channel puts text in front of the model. PreToolUse and Stop are blocking: exit 0 with
//   no output allows, `{"decision":"block","reason"}` (or exit 2) denies, anything else on stdout is
//   a hook failure (logged, failed open);
// - `goose session --resume --session-id <id>`, `goose run -t <text>` (one turn, `-s` stays interactive).
import { join, resolve } from 'node:path';
import type { AgentProfile, EventKind } from './index';
import { commandEntry, homeOf, nonEmpty } from './common';

const EVENTS: Readonly<Record<string, EventKind>> = {
  SessionStart: 'session_start',
  UserPromptSubmit: 'prompt',
  PreToolUse: 'pre_tool',
  PostToolUse: 'post_tool',
  Stop: 'stop',
};

/** The plugin directory Turnkeeper's hooks are installed as, under `.agents/plugins/`. */
const PLUGIN = join('.agents', 'plugins', 'turnkeeper', 'hooks', 'hooks.json');

export const goose: AgentProfile = {
  agent: 'goose',
  displayName: 'Goose',
  events: { installed: EVENTS, accepted: EVENTS, source: 'payload' },
  payload: {
    dialects: ['hookContext'],
    turnField: undefined, // no payload carries a per-prompt id: only TURNKEEPER_TURN
    detect: (payload) => typeof payload.event === 'string' && Object.hasOwn(EVENTS, payload.event) && typeof payload.session_id === 'string',
    compactionMarkers: [],
  },
  // Its developer extension's tools as `tool_name` carries them.
  writeTools: new Set(['developer__shell', 'developer__text_editor']),
  output: {
    // Ignored on UserPromptSubmit; on SessionStart only a `banner` is read, and it is for the person.
    context: () => ({}),
    block: () => ({}),
    denyTool: (_eventName, text) => ({ decision: 'block', reason: text }),
    contextIgnored:
      'Goose ignores the output of UserPromptSubmit hooks and reads only a banner for the person from SessionStart, so the ready capture and any guidance never reach the model and a prompt cannot be blocked; claims, fencing (PreToolUse block) and receipts work',
  },
  install: {
    userConfig: (env) => join(resolve(nonEmpty(env.GOOSE_PATH_ROOT) ?? homeOf(env)), PLUGIN),
    // A plugin of its own: uninstall deletes the file it created.
    projectConfig: PLUGIN,
    timeout: 15, // seconds
    entry: commandEntry,
    layout: 'matcher-group',
    syntax: 'json', // serde_json
  },
  trust: {
    hint: 'Goose enables a new plugin when it first finds it (under .agents/plugins); check that settings.json (~/.config/goose or the project\'s .config/goose) does not list "turnkeeper" in disabledPlugins and that config.yaml does not set it enabled: false.',
  },
  sessionEnv: [],
  testedVersion: '1.25.0', // the workspace version of the stored Cargo.toml
  fromSource: 'github.com/block/goose crates/goose/src/hooks/mod.rs 0825b57',
  launch: {
    executable: 'goose',
    runtime: 'native',
    shape: { npmPackage: undefined, bin: undefined, kind: 'native' },
    resume: (session, mode, prompt, extra) =>
      mode === 'headless' ? ['run', '--resume', '--session-id', session, ...extra, '-t', prompt] : ['session', '--resume', '--session-id', session, ...extra],
    start: (mode, prompt, extra) =>
      prompt === undefined
        ? mode === 'headless'
          ? ['run', ...extra]
          : ['session', ...extra]
        : ['run', ...(mode === 'interactive' ? ['-s'] : []), ...extra, '-t', prompt],
  },
};
