// Qwen Code (npm @qwen-code/qwen-code 0.24.4). Read from its bundle (chunks/*.js) and observed with the
// real `qwen -p` against a loopback OpenAI chat-completions server (test/e2e/qwen.test.ts,
// docs/hook-protocol.md "Qwen Code"):
// - Claude-shaped hooks in `hooks` of $QWEN_HOME/settings.json (default ~/.qwen) and of the project's
//   .qwen/settings.json: `{"<Event>":[{"matcher"?,"hooks":[{"type":"command","command","timeout"}]}]}`,
//   timeout in seconds (1000 or more is read as legacy milliseconds); 17+ events, of which the five
//   Claude-style ones are Turnkeeper's;
// - snake_case payloads: `session_id`, `transcript_path`
//   ($QWEN_HOME/projects/<cwd with / as ->/chats/<session>.jsonl), `cwd`, `hook_event_name`, an ISO
//   `timestamp`, `permission_mode`, and `prompt_id` = `<session_id>########<n>` (n counts the prompts of
//   the session, continued by a resume) on UserPromptSubmit, tool events and Stop;
// - stdout: `hookSpecificOutput.additionalContext` (with `<` and `>` escaped as `&lt;` `&gt;`, then
//   wrapped in `<qwen:user-prompt-submit-context>` for the model), `decision: "block"`/`"deny"` with
//   `reason`, `hookSpecificOutput.permissionDecision: "deny"` on PreToolUse; `systemMessage` reaches
//   only its debug log and hook progress (`qwen -p` prints it nowhere);
// - every tool-result continuation fires UserPromptSubmit again, with `prompt: ""` and the prompt's
//   `prompt_id` (see `kindOf`);
// - hook processes and shell tools get QWEN_CODE_SESSION_ID.
import { join, resolve } from 'node:path';
import type { AgentProfile, Env, EventKind, TrustContext } from './index';
import { CLAUDE_STYLE_EVENTS, commandEntry, HOOK_SPECIFIC_OUTPUT, homeOf, nonEmpty } from './common';

/** `########`: what joins the session id and the prompt counter in a Qwen `prompt_id`. */
const PROMPT_ID_DELIMITER = '########';

/** $QWEN_HOME as Qwen's Storage reads it (`~` and `~/` expand to the home directory), else ~/.qwen. */
function qwenHome(env: Env): string {
  const configured = nonEmpty(env.QWEN_HOME);
  if (configured === undefined) return join(homeOf(env), '.qwen');
  if (configured === '~') return homeOf(env);
  if (configured.startsWith('~/')) return join(homeOf(env), configured.slice(2));
  return resolve(configured);
}

/**
 * The payload with `prompt_id` in the Turn grammar: `<session>########<n>` becomes `<session>:<n>`;
 * anything else that grammar refuses is dropped (no Turn from the payload: TURNKEEPER_TURN or
 * [no_turn]), never a reason to drop the payload.
 */
function normalize(payload: Readonly<Record<string, unknown>>): Readonly<Record<string, unknown>> {
  const { prompt_id: promptId, session_id: session, ...rest } = payload;
  if (typeof promptId !== 'string') return payload;
  const prefix = typeof session === 'string' ? session + PROMPT_ID_DELIMITER : undefined;
  const turn = prefix !== undefined && promptId.startsWith(prefix) ? `${session as string}:${promptId.slice(prefix.length)}` : promptId;
  return /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/.test(turn) ? { ...payload, prompt_id: turn } : { session_id: session, ...rest };
}

/**
 * A UserPromptSubmit with an empty prompt is no prompt the person wrote but Qwen's continuation after
 * a tool result (the prompt text of a function response is ""), under the prompt's own prompt_id:
 * it renews like a PostToolUse and presents nothing, since the conversation Qwen sends already holds
 * this turn's context. As a prompt it would present the capture in full again after every tool call
 * (Qwen writes its transcript at the end of the turn, so nothing says the model has it yet).
 */
const kindOf = (payload: Readonly<Record<string, unknown>>, kind: EventKind): EventKind =>
  // Empty optional fields reach the profile already removed (src/agents/payload.ts): "" is absent.
  kind === 'prompt' && (typeof payload.prompt !== 'string' || payload.prompt === '') ? 'post_tool' : kind;

/**
 * Project hooks run only in a trusted folder, and every folder is trusted unless the user turned
 * folder trust on (`security.folderTrust.enabled` in the user settings, default false); then the
 * deepest rule of $QWEN_HOME/trustedFolders.json that covers the folder must trust it (TRUST_FOLDER, or
 * TRUST_PARENT on a child; DO_NOT_TRUST wins a tie). An IDE's workspace trust overrides both, which
 * doctor cannot see.
 */
function trustCheck(context: TrustContext): string | undefined {
  if (context.scope !== 'project') return undefined; // user hooks run in every folder
  const settings = context.readConfig(join(qwenHome(context.env), 'settings.json')) as { security?: { folderTrust?: { enabled?: unknown } } } | undefined;
  if (settings?.security?.folderTrust?.enabled !== true) return undefined;
  const rulesPath = nonEmpty(context.env.QWEN_CODE_TRUSTED_FOLDERS_PATH) ?? join(qwenHome(context.env), 'trustedFolders.json');
  const rules = context.readConfig(rulesPath);
  const root = resolve(context.projectRoot);
  const within = (folder: string): boolean => root === folder || root.startsWith(folder.endsWith('/') ? folder : `${folder}/`);
  // Qwen's precedence: the deepest rule that covers the folder wins, DO_NOT_TRUST on a tie.
  let winner: { depth: number; trusted: boolean } | undefined;
  for (const [path, level] of typeof rules === 'object' && rules !== null ? Object.entries(rules) : []) {
    const folder = level === 'TRUST_PARENT' ? resolve(path, '..') : resolve(path);
    if (!['TRUST_FOLDER', 'TRUST_PARENT', 'DO_NOT_TRUST'].includes(level as string) || !within(folder)) continue;
    const depth = folder.split('/').filter(Boolean).length;
    const trusted = level !== 'DO_NOT_TRUST';
    if (winner === undefined || depth > winner.depth || (depth === winner.depth && !trusted)) winner = { depth, trusted };
  }
  const trusted = winner?.trusted === true;
  return trusted ? undefined : `Qwen Code skips ${join(root, '.qwen', 'settings.json')} until the folder is trusted: ${qwen.trust.hint}`;
}

export const qwen: AgentProfile = {
  agent: 'qwen',
  displayName: 'Qwen Code',
  events: { installed: CLAUDE_STYLE_EVENTS, accepted: CLAUDE_STYLE_EVENTS, source: 'payload' },
  payload: {
    dialects: ['snake'],
    turnField: 'prompt_id',
    // Its prompt_id names its own session; its hook processes carry that session in QWEN_CODE_SESSION_ID.
    // Tried before Codex, whose detector (`model` with `permission_mode`) a Qwen SessionStart also meets.
    detect: (payload, env) => {
      const session = payload.session_id;
      if (typeof session !== 'string') return false;
      return env.QWEN_CODE_SESSION_ID === session || (typeof payload.prompt_id === 'string' && payload.prompt_id.startsWith(session + PROMPT_ID_DELIMITER));
    },
    normalize,
    kindOf,
    // Its transcript's compression checkpoint, `{"type":"system","subtype":"chat_compression",…}`: the
    // resumed history holds a summary of what came before it.
    compactionMarkers: ['"subtype":"chat_compression"'],
  },
  writeTools: new Set(['run_shell_command', 'write_file', 'edit', 'notebook_edit']),
  output: HOOK_SPECIFIC_OUTPUT,
  install: {
    userConfig: (env) => join(qwenHome(env), 'settings.json'),
    projectConfig: '.qwen/settings.json',
    timeout: 15, // seconds
    entry: commandEntry,
    layout: 'matcher-group',
    // JSON.parse(stripJsonComments(text)) (0.24.4). A file that still fails is copied aside as
    // `<file>.corrupted` and the user's settings.json is reset to `{}`: so install never merges into one.
    syntax: 'json-comments',
  },
  trust: {
    hint: 'Qwen Code runs project hooks (.qwen/settings.json) only in trusted folders, which every folder is unless security.folderTrust.enabled is true in your settings: then run qwen in the folder once and trust it (saved in $QWEN_HOME/trustedFolders.json). User hooks in $QWEN_HOME/settings.json run everywhere.',
    check: trustCheck,
  },
  sessionEnv: ['QWEN_CODE_SESSION_ID'],
  testedVersion: '0.24.4',
  launch: {
    executable: 'qwen',
    runtime: 'node',
    shape: {
      npmPackage: '@qwen-code/qwen-code',
      bin: 'cli-entry.js',
      kind: 'node-script',
      note: 'run from an attested closure: the Node runtime plus cli.js and the chunks it loads; cli-entry.js, which re-launches Node by path and may pick a managed update under $QWEN_HOME/updates/npm, never runs',
      // cli-entry.js spawns `process.execPath --expose-gc cli.js` (a pathname, outside the launcher) and
      // prefers a cli.js of a managed update outside the package; cli.js is what it ends up running.
      closureEntry: 'cli.js',
      // cli.js re-launches itself (for a larger heap) unless this is set, as it is in that child.
      closureEnvironment: { QWEN_CODE_NO_RELAUNCH: 'true' },
    },
    // The prompt as `--prompt=<text>` (`--prompt-interactive=<text>`): one argument whatever it starts
    // with. A positional prompt after `--` is not read as the prompt (0.24.4: "No input provided via
    // stdin"), and a prompt starting with `-` after a bare `-p` would be read as an option.
    resume: (session, mode, prompt, extra) => (mode === 'headless' ? [...extra, '--resume', session, `--prompt=${prompt}`] : [...extra, '--resume', session]),
    start: (mode, prompt, extra) =>
      mode === 'headless'
        ? [...extra, ...(prompt === undefined ? [] : [`--prompt=${prompt}`])]
        : [...extra, ...(prompt === undefined ? [] : [`--prompt-interactive=${prompt}`])],
  },
};
