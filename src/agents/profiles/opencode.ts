// OpenCode (npm opencode-ai 1.18.33). Observed with the real binary against a loopback OpenAI
// chat-completions server (test/e2e/opencode.test.ts, docs/hook-protocol.md "OpenCode"):
// - it has no command hooks: it imports every `*.js`/`*.ts` in `plugin/` and `plugins/` of its config
//   directories (`$XDG_CONFIG_HOME/opencode`, default ~/.config/opencode, and each `.opencode` from
//   the working directory up to the worktree root) and calls their hooks in-process. Turnkeeper's
//   "hook config" is therefore one plugin file of its own (`turnkeeper.js`), written whole by
//   `hooks install` and deleted by `uninstall`; it runs the same command the other agents' configs run,
//   through /bin/sh, with a snake_case payload it builds from the hook's arguments;
// - `chat.message` gets the user message (`msg_…` id, the Turn) and its parts before they are saved:
//   a text part pushed there with `synthetic: true` is stored with the message and sent to the model
//   (every request of the session), and OpenCode's UI hides it; `tool.execute.before/after` get
//   `{tool, sessionID, callID}` (a throw in `before` fails that tool call with the error's message);
//   the bus event `session.idle` ends a turn; `shell.env` adds variables to the bash tool's
//   environment. No hook has an output field the person sees;
// - ids are `ses_<base62>` and `msg_<base62>`; sessions live in one SQLite file
//   ($XDG_DATA_HOME/opencode/opencode.db), which stands in for the transcript;
// - at start it runs an npm install of @opencode-ai/plugin into each config directory that has no
//   node_modules or a package-lock.json without it (the plugin written here imports nothing).
import { isAbsolute, join, resolve } from 'node:path';
import type { AgentProfile, Env, EventKind, TrustContext } from './index';
import { commandEntry, decisionBlock, homeOf, nonEmpty } from './common';

/** Our names for the hooks the plugin relays (`--event`): a word each, as the hook command's grammar wants. */
const EVENTS: Readonly<Record<string, EventKind>> = {
  chatMessage: 'prompt',
  toolExecuteBefore: 'pre_tool',
  toolExecuteAfter: 'post_tool',
  sessionIdle: 'stop',
};

/** `$XDG_CONFIG_HOME/opencode`, default ~/.config/opencode: the global config directory. */
const configHome = (env: Env): string => join(resolve(nonEmpty(env.XDG_CONFIG_HOME) ?? join(homeOf(env), '.config')), 'opencode');
/** `$XDG_DATA_HOME/opencode`, default ~/.local/share/opencode. */
const dataHome = (env: Env): string => join(resolve(nonEmpty(env.XDG_DATA_HOME) ?? join(homeOf(env), '.local', 'share')), 'opencode');

/**
 * The SQLite file that holds every session (OPENCODE_DB: absolute, or relative to the data directory).
 * Not a per-session file: resume only needs it to exist, and presentation finds a capture in it only
 * when its bytes are in the file's last pages, else presents the full capture again (the safe side).
 */
const databaseOf = (_session: string, env: Env): string => {
  const named = nonEmpty(env.OPENCODE_DB);
  if (named !== undefined && named !== ':memory:') return isAbsolute(named) ? named : join(dataHome(env), named);
  return join(dataHome(env), 'opencode.db');
};

/** What the plugin's `shell.env` hook puts in the bash tool's environment: the session's id. */
const SESSION_VARIABLE = 'TURNKEEPER_OPENCODE_SESSION';

/** The first line of the plugin: how install and uninstall recognise a file as Turnkeeper's. */
const PLUGIN_HEADER = '// Turnkeeper: the OpenCode plugin `turnkeeper hooks install --agent opencode` wrote; `turnkeeper hooks uninstall` removes it.';

/**
 * The whole plugin, for one hook command. It must fail open: whatever goes wrong (no shim, a crash,
 * a timeout, unparsable output), the prompt and the tool call go on as if it were not there. Only
 * Turnkeeper's own answers stop something: a blocked prompt (`decision: "block"`) and a denied tool
 * call (`permissionDecision: "deny"`), as errors thrown outside the guarded part.
 */
function pluginSource(command: string, timeoutMs: number): string {
  return `${PLUGIN_HEADER}
// It runs Turnkeeper's hook command for OpenCode's events and adds the context it answers to the
// prompt. Any error of its own is swallowed: OpenCode goes on as if there were no plugin.
import { spawn } from "node:child_process";

const COMMAND = ${JSON.stringify(command)};
const TIMEOUT_MS = ${String(timeoutMs)};
const MAX_OUTPUT = 1 << 20;

function hook(event, payload) {
  return new Promise((resolve) => {
    let out = "";
    let child;
    let timer;
    let done = false;
    const finish = (answer) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(answer);
    };
    try {
      // Its own process group, so a timeout ends the shell and whatever it started.
      child = spawn("/bin/sh", ["-c", COMMAND + " --event " + event], { stdio: ["pipe", "pipe", "ignore"], detached: true });
    } catch {
      finish(undefined);
      return;
    }
    timer = setTimeout(() => {
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {}
      finish(undefined);
    }, TIMEOUT_MS);
    child.on("error", () => finish(undefined));
    child.stdin.on("error", () => {});
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk) => {
      if (out.length < MAX_OUTPUT) out += chunk;
    });
    child.on("close", () => {
      try {
        const line = out.trim().split("\\n").pop();
        const answer = line ? JSON.parse(line) : undefined;
        finish(answer !== null && typeof answer === "object" ? answer : undefined);
      } catch {
        finish(undefined);
      }
    });
    child.stdin.end(JSON.stringify({ hook_event_name: event, ...payload }));
  });
}

async function quietly(work) {
  try {
    return await work();
  } catch {
    return undefined;
  }
}

const text = (value) => (typeof value === "string" && value !== "" ? value : undefined);

export const TurnkeeperPlugin = async ({ directory }) => {
  const cwd = text(directory) ?? process.cwd();
  return {
    "chat.message": async (input, output) => {
      const answer = await quietly(async () => {
        const message = output.message;
        const prompt = output.parts
          .filter((part) => part.type === "text" && !part.synthetic && typeof part.text === "string")
          .map((part) => part.text)
          .join("\\n");
        return hook("chatMessage", { session_id: input.sessionID, turn_id: text(message?.id) ?? text(input.messageID), cwd, prompt });
      });
      if (answer?.decision === "block") throw new Error(String(answer.reason ?? "Turnkeeper stopped this prompt"));
      await quietly(async () => {
        const context = text(answer?.additionalContext);
        const first = output.parts[0];
        if (context === undefined || typeof first?.id !== "string") return;
        // Part ids are "prt_" + 12 hex digits of time + 14 base62 characters; "z…" sorts after the user's part.
        const id = first.id.slice(0, 16) + "z" + Math.random().toString(36).slice(2, 15).padEnd(13, "0");
        output.parts.push({ id, type: "text", text: context, synthetic: true, messageID: first.messageID, sessionID: first.sessionID });
      });
    },
    "tool.execute.before": async (input) => {
      const answer = await quietly(() => hook("toolExecuteBefore", { session_id: input.sessionID, cwd, tool_name: input.tool }));
      if (answer?.permissionDecision === "deny") throw new Error(String(answer.permissionDecisionReason ?? "Turnkeeper denied this tool call"));
    },
    "tool.execute.after": async (input) => {
      await quietly(() => hook("toolExecuteAfter", { session_id: input.sessionID, cwd, tool_name: input.tool }));
    },
    // The bash tool's environment names the session, so \`turnkeeper release\` run there knows its Owner.
    "shell.env": async (input, output) => {
      await quietly(async () => {
        if (text(input?.sessionID) !== undefined && output?.env) output.env.${SESSION_VARIABLE} = input.sessionID;
      });
    },
    event: async ({ event }) => {
      if (event?.type !== "session.idle") return;
      await quietly(() => hook("sessionIdle", { session_id: event.properties?.sessionID, cwd }));
    },
  };
};
`;
}

/** The command a plugin file of ours runs, when the file is exactly what `pluginSource` writes for it; else undefined. */
function pluginCommandOf(text: string, timeoutMs: number): string | undefined {
  if (!text.startsWith(PLUGIN_HEADER)) return undefined;
  const line = /^const COMMAND = (".*");$/m.exec(text)?.[1];
  let command: unknown;
  try {
    command = line === undefined ? undefined : JSON.parse(line);
  } catch {
    return undefined;
  }
  return typeof command === 'string' && pluginSource(command, timeoutMs) === text ? command : undefined;
}

/** Whether a file starts as Turnkeeper's plugin does (an older or edited one included). */
const isTurnkeeperPlugin = (text: string): boolean => text.startsWith(PLUGIN_HEADER);

/** OPENCODE_PURE skips every plugin that is not built in; OPENCODE_DISABLE_PROJECT_CONFIG the project's `.opencode`. */
function trustCheck(context: TrustContext): string | undefined {
  const on = (name: string): boolean => context.env[name] === '1' || context.env[name] === 'true';
  if (on('OPENCODE_PURE')) return 'OPENCODE_PURE is set: OpenCode loads no plugin but its own, so Turnkeeper never sees a prompt; unset it';
  if (context.scope === 'project' && on('OPENCODE_DISABLE_PROJECT_CONFIG'))
    return "OPENCODE_DISABLE_PROJECT_CONFIG is set: OpenCode skips the project's .opencode directory and the plugin in it; unset it, or install at user scope";
  return undefined;
}

const TIMEOUT_MS = 15_000;

export const opencode: AgentProfile = {
  agent: 'opencode',
  displayName: 'OpenCode',
  // The plugin names each event (`--event`) and puts the same name in `hook_event_name`.
  events: { installed: EVENTS, accepted: EVENTS, source: 'command' },
  payload: {
    dialects: ['snake'],
    // The plugin's `turn_id` is the user message's id (`msg_…`): one per prompt.
    turnField: 'turn_id',
    // No detector: the plugin always passes --agent opencode.
    transcriptFallback: databaseOf,
    // Compaction writes a `compaction` part into the database (no line of a file to mark it).
    compactionMarkers: [],
  },
  writeTools: new Set(['bash', 'edit', 'write', 'apply_patch']),
  output: {
    // What the plugin reads: the copilot-shaped top-level fields.
    context: (_eventName, text) => ({ additionalContext: text }),
    block: decisionBlock,
    denyTool: (_eventName, text) => ({ permissionDecision: 'deny', permissionDecisionReason: text }),
    // No notice: no plugin hook of OpenCode 1.18 has an output its user sees.
  },
  install: {
    userConfig: (env) => join(configHome(env), 'plugin', 'turnkeeper.js'),
    projectConfig: '.opencode/plugin/turnkeeper.js',
    timeout: TIMEOUT_MS, // milliseconds, enforced by the plugin itself
    // Unused: `plugin` replaces the JSON config the other agents have.
    entry: commandEntry,
    layout: 'flat',
    syntax: 'module',
    plugin: {
      source: (command) => pluginSource(command, TIMEOUT_MS),
      commandOf: (text) => pluginCommandOf(text, TIMEOUT_MS),
      isOurs: isTurnkeeperPlugin,
    },
  },
  trust: {
    hint: 'OpenCode loads plugins without a trust step: the next opencode started in the folder runs Turnkeeper (unless OPENCODE_PURE is set).',
    check: trustCheck,
  },
  // OpenCode sets no variable naming its session in its tools' environment; the plugin does (`shell.env`).
  sessionEnv: [SESSION_VARIABLE],
  testedVersion: '1.18.33',
  launch: {
    executable: 'opencode',
    // A Bun single-file executable (bin/opencode.exe, hard-linked by the postinstall from
    // opencode-<platform>): Bun's injection variables apply, as for Claude Code.
    runtime: 'bun',
    shape: { npmPackage: 'opencode-ai', bin: 'bin/opencode.exe', kind: 'native' },
    resume: (session, mode, prompt, extra) => (mode === 'headless' ? ['run', ...extra, '--session', session, '--', prompt] : [...extra, '--session', session]),
    start: (mode, prompt, extra) =>
      mode === 'headless'
        ? ['run', ...extra, ...(prompt === undefined ? [] : ['--', prompt])]
        : [...extra, ...(prompt === undefined ? [] : ['--prompt', prompt])],
  },
};
