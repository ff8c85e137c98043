// Everything Turnkeeper knows about one agent lives in one profile (src/agents/profiles/<agent>.ts):
// its hook events and their kinds, where the Session, Turn and transcript come from, which tools
// write, the JSON it accepts on stdout, where its hook configs live and in which timeout unit, how
// it trusts a folder and how doctor checks that, how it resumes and starts, the runtime it is built
// on and how npm installs it. The rest of Turnkeeper reads these tables instead of switching on the
// agent name, so a new agent is one new file here plus its tests. See docs/hook-protocol.md.
import { sep } from 'node:path';
import { AGENTS, type Agent } from '../../core/ids';
import { claude } from './claude';
import { codex } from './codex';
import { copilot } from './copilot';
import { gemini } from './gemini';
import { goose } from './goose';
import { grok } from './grok';
import { opencode } from './opencode';
import { qwen } from './qwen';

import type { Env } from '../../core/env';

export type { Env };

/**
 * What an event means to the decision table (spec §2). `notification`: the agent asks the person
 * something (a permission prompt, or an idle reminder); it only records the live status `waiting`.
 */
export type EventKind = 'session_start' | 'prompt' | 'pre_tool' | 'post_tool' | 'stop' | 'notification';

/** A turn's facts from the transcript; each absent where it does not say. */
export interface TurnUsage {
  readonly agentVersion?: string;
  readonly model?: string;
  readonly inputTokens?: number;
  readonly outputTokens?: number;
  /** Input tokens read from (or written to) the model's prompt cache, counted apart from inputTokens where the agent does. */
  readonly cachedInputTokens?: number;
}

/** One JSON object for the hook's stdout. */
export type HookOutput = Readonly<Record<string, unknown>>;

export type Scope = 'user' | 'project';

/**
 * `snake`: `hook_event_name`, `session_id`, … (Codex, Claude, Gemini). `camel`: `sessionId`, … (Copilot,
 * no event name; Grok Build, with `hookEventName`). `hookContext`: Goose's `event`, `session_id`,
 * `working_dir`, `message` (src/agents/profiles/goose.ts).
 */
export type PayloadDialect = 'snake' | 'camel' | 'hookContext';

/** How an agent parses its hook config (`AgentProfile.install.syntax`). */
/** `module`: the config is a JavaScript module of Turnkeeper's own (OpenCode's plugin), written whole. */
export type ConfigSyntax = 'json' | 'json-comments' | 'module';

/**
 * The runtime an agent's executable is built on. The launcher refuses the injection variables of every
 * runtime in its table for every agent (src/launcher/environment.ts: an agent's tools start other
 * runtimes too); agent-profiles.test.ts holds that table to cover each profile's runtime.
 */
type AgentRuntime = 'native' | 'bun' | 'node';

/** How npm installs the agent, which is what the launcher must attest (spec §6, docs/launcher.md). */
interface InstallShape {
  /**
   * The npm package (pinned as a devDependency for the e2e tests); undefined for an agent npm does not
   * ship (Goose, Grok Build: native binaries from their own installers), which no npm install can attest.
   */
  readonly npmPackage: string | undefined;
  /** What `node_modules/.bin/<executable>` points at, relative to the package (undefined without a package). */
  readonly bin: string | undefined;
  /**
   * `native`: the bin is the agent's own ELF. `npm-shim`: a Node shim that execs a platform
   * package's native binary. `node-script`: a Node script bundle. `unpacking-loader`: a Node shim
   * that execs a platform binary which unpacks its own runtime and scripts into a cache and runs them.
   */
  readonly kind: 'native' | 'npm-shim' | 'node-script' | 'unpacking-loader';
  readonly note?: string;
  /**
   * `npm-shim`: the native binary the shim would exec, relative to the package root (candidates in
   * the order npm may have placed it), for this platform; and the variables the shim sets. Scripts
   * are never launched: the launcher attests and runs that binary with those variables instead.
   */
  readonly shimTarget?: (
    packageRoot: string,
    platform: PackagePlatform,
  ) => {
    readonly candidates: readonly string[];
    readonly environment: Readonly<Record<string, string>>;
    /** Prefixes of variables the shim clears before setting its own (package-manager markers). */
    readonly clearedPrefixes: readonly string[];
  };
  /**
   * `node-script`: the environment the package's own launcher would set (or that keeps it from
   * re-launching itself by path) when the launcher runs the bin from an attested closure.
   */
  readonly closureEnvironment?: Readonly<Record<string, string>>;
  /**
   * `node-script`: the script the runtime runs inside the closure, when it is not the bin (Qwen's bin
   * only re-launches Node by path on another script of the package). Absent: the bin.
   */
  readonly closureEntry?: string;
  /** `unpacking-loader`: why the launcher refuses it, for the person (docs/launcher.md §9). */
  readonly refusal?: string;
}

/**
 * How npm packages name the platform they run on, as the launch backend reports it: `npm` is
 * `<process.platform>-<process.arch>` (`@openai/codex-<npm>`), `rustTarget` the Rust target triple a
 * native agent is vendored under there. The profile never names a platform itself.
 */
export interface PackagePlatform {
  readonly npm: string;
  readonly rustTarget: string | undefined;
}

/** A process of this machine as the launcher's backend sees it (Linux: /proc/<pid>/cmdline and environ). */
export interface RunningProcess {
  readonly pid: number;
  readonly argv: readonly string[];
  /** Its environment, or undefined when it cannot be read (another user's process, or gone). */
  environ(): Readonly<Record<string, string>> | undefined;
}

/**
 * A background process of the agent that outlives the command that started it and runs the hooks of
 * every session attached to it with its own environment, not the launch's (Codex's app-server daemon):
 * a launch attached to one started without Turnkeeper never reports its hooks.
 */
interface SharedDaemon {
  /** For people: `a shared Codex app-server daemon`. */
  readonly name: string;
  /** Whether `process` is such a daemon of the agent home that doctor's environment names. */
  readonly matches: (process: RunningProcess, env: Env) => boolean;
  /** The agent's own command that stops it. */
  readonly stop: string;
  /** The switch the launcher passes so that a launch runs its own server instead. */
  readonly launchSwitch: string;
}

/** A hook config that holds Turnkeeper's hooks, as doctor hands it to an agent's trust question. */
export interface InstalledHookFile {
  readonly scope: Scope;
  readonly path: string;
  /** The command Turnkeeper installed there. */
  readonly command: string;
}

/** The agent's answer for one installed hook file: will it run Turnkeeper's hooks? */
export interface TrustVerdict {
  readonly scope: Scope;
  readonly path: string;
  /** `problem`: it will skip them; `unknown`: it could not be asked, or gave no answer that says. */
  readonly status: 'ok' | 'problem' | 'unknown';
  readonly detail: string;
  readonly fix?: string;
}

/** What doctor gives a trust check: the hook files are installed for `scope` in `projectRoot`. */
export interface TrustContext {
  readonly env: Env;
  readonly scope: Scope;
  readonly projectRoot: string;
  /** Reads a JSON-with-comments file; undefined when it is missing or unreadable. */
  readonly readConfig: (path: string) => unknown;
  /** Reads a small text file (an agent's TOML trust store); undefined when it is missing or unreadable. */
  readonly readText?: (path: string) => string | undefined;
}

export interface AgentProfile {
  readonly agent: Agent;
  /** For people: `Codex CLI`, `Claude Code`, … */
  readonly displayName: string;

  readonly events: {
    /** What `hooks install` registers, in this order, with each event's kind. */
    readonly installed: Readonly<Record<string, EventKind>>;
    /** Every name the hook accepts (the installed ones and any aliases the agent also sends). */
    readonly accepted: Readonly<Record<string, EventKind>>;
    /**
     * Where the hook learns which event fired: the payload's `hook_event_name`, or the installed
     * command itself (`turnkeeper hook --agent <a> --event <name>`), for agents whose payloads name none.
     */
    readonly source: 'payload' | 'command';
  };

  readonly payload: {
    /** The payload shapes this agent sends (the first is what the installed hooks get). */
    readonly dialects: readonly PayloadDialect[];
    /**
     * The payload field with this agent's own Turn id, in the snake spelling (`prompt_id` is Grok Build's
     * camelCase `promptId` too); undefined: only env TURNKEEPER_TURN (spec §1).
     */
    readonly turnField: 'turn_id' | 'prompt_id' | undefined;
    /**
     * Auto-detection when `--agent` is absent (spec §2), tried in `detectOrder` order; the agent
     * without a detector (Claude) is the fallback.
     */
    readonly detect?: (payload: Readonly<Record<string, unknown>>, env: Env) => boolean;
    /**
     * Recognises a payload only this agent sends, wherever it arrives (Grok Build's envelope): one it
     * accepts is served as this agent whichever agent's hook ran, since the agent runs other agents'
     * hook files with its own payloads (`install.runsHooksOf`; spec §2, "Foreign callers").
     */
    readonly ownEnvelope?: (payload: Readonly<Record<string, unknown>>, env: Env) => boolean;
    /** Where the session's transcript is when the payload does not say (resume needs it, spec §7). */
    readonly transcriptFallback?: (session: string, env: Env) => string | undefined;
    /**
     * Rewrites the agent's payload before validation, where a field it always sends is outside
     * Turnkeeper's grammars (Qwen's `prompt_id`); the result is validated like any payload.
     */
    readonly normalize?: (payload: Readonly<Record<string, unknown>>) => Readonly<Record<string, unknown>>;
    /**
     * The kind of one received event, where the agent fires one event name for two things (Qwen's
     * UserPromptSubmit, also sent after each tool result); absent: the kind its name maps to.
     */
    readonly kindOf?: (payload: Readonly<Record<string, unknown>>, kind: EventKind) => EventKind;
    /** Removes what the agent itself put into the prompt text (Gemini's earlier hook context). */
    readonly cleanPrompt?: (prompt: string) => string;
    /**
     * Byte strings of the lines the agent writes to its transcript when it compacts the conversation
     * (history before them reaches the model only as a summary): each one contains `compact` or
     * `compress`, which are searched first (docs/hook-protocol.md, "How often the full capture is presented").
     */
    readonly compactionMarkers: readonly string[];
    /**
     * What the transcript's tail says of the turn that began at `sinceMs` (the `turn_ended` receipt):
     * the agent's version, the model and tokens, each only where the transcript carries it. `tail`
     * is the last bytes of the file (the first line may be cut). Absent: the transcript says none of it.
     */
    readonly turnUsage?: (tail: string, sinceMs: number | undefined) => TurnUsage;
  };

  /** Tools that change the workspace (edits, patches, shells): fenced on pre-tool events. Read-only and MCP tools are not. */
  readonly writeTools: ReadonlySet<string>;

  /** The exact stdout shapes the agent accepts (spec §2 "Output"). */
  readonly output: {
    readonly context: (eventName: string, text: string) => HookOutput;
    /** `turnkeeper.onConflict=block`: guidance stops the prompt. */
    readonly block: (text: string) => HookOutput;
    /** Denies one tool call (fencing). */
    readonly denyTool: (eventName: string, text: string) => HookOutput;
    /**
     * Adds a one-line notice for the person (not the model) to a context output, in the field the
     * agent shows its user. Absent: the agent has none, and only the model is told.
     */
    readonly notice?: (output: HookOutput, line: string) => HookOutput;
    /**
     * Set when no output of a SessionStart or prompt hook reaches the model (Goose, Grok Build ignore
     * it): why, for doctor and the docs. Claims, fencing and receipts still work; the capture and any
     * guidance are never presented, so the person hands the model its task.
     */
    readonly contextIgnored?: string;
  };

  readonly install: {
    /** The user-scope config file, honouring HOME and the agent's own home variables. */
    readonly userConfig: (env: Env) => string;
    /** The project-scope config file, relative to the repository root. */
    readonly projectConfig: string;
    /** The hook's timeout in the agent's own unit, which the field `entry` writes it to names (seconds for Codex, Claude and Copilot, milliseconds for Gemini). */
    readonly timeout: number;
    /** The handler entry for one event's command, with `timeout`. */
    readonly entry: (command: string, timeout: number) => Record<string, unknown>;
    /** `matcher-group`: each event holds `{"hooks":[entry]}` groups (no matcher: every tool). `flat`: each event holds entries. */
    readonly layout: 'matcher-group' | 'flat';
    /**
     * How the agent itself parses the config (doctor's config_syntax check, and `hooks install`
     * refuses to merge into a file the agent would ignore). `json`: strict JSON, one comment or
     * trailing comma and the whole file is ignored. `json-comments`: comments stripped, then strict
     * JSON. Absent: not established; only Turnkeeper's own parse applies.
     */
    readonly syntax?: ConfigSyntax;
    /** Another agent whose hook files this one also runs by default, with its own payloads, and how the user turns that off. */
    readonly runsHooksOf?: { readonly agent: Agent; readonly turnOff: string };
    /** Programs Turnkeeper does not serve that run this agent's hook files by default (for doctor's read_by_others). */
    readonly alsoRunBy?: readonly string[];
    /**
     * An agent without command hooks (OpenCode) gets a plugin file of Turnkeeper's own instead of
     * entries in a JSON config: `source` is the whole file for a hook command, `commandOf` the command
     * of a file that is exactly such a source (else undefined), `isOurs` whether a file is one of
     * Turnkeeper's, of any version or edited. Install writes the file whole; uninstall deletes it.
     */
    readonly plugin?: {
      readonly source: (command: string) => string;
      readonly commandOf: (text: string) => string | undefined;
      readonly isOurs: (text: string) => boolean;
    };
  };

  readonly trust: {
    /** What the user does so the agent runs the hook (printed by `hooks install`, and by doctor for a silent launch). */
    readonly hint: string;
    /** Doctor's check of that step for an installed scope: a problem, or undefined. */
    readonly check?: (context: TrustContext) => string | undefined;
    /**
     * Asks the agent itself (its executable `binary`, run in `projectRoot`) whether it will run the
     * hooks in these files: doctor's `<agent>_trust` rows. Absent: the agent cannot be asked.
     */
    readonly ask?: (binary: string, env: Env, projectRoot: string, files: readonly InstalledHookFile[]) => Promise<TrustVerdict[]>;
  };

  /** Variables the agent sets in its tools' environment naming its session (`release` without --force). */
  readonly sessionEnv: readonly string[];

  /**
   * The version the end-to-end tests run (package.json's devDependency) and what Turnkeeper's facts
   * about the agent were observed on: doctor names the installed version and says so when it is newer.
   */
  readonly testedVersion: string;

  /**
   * Set when Turnkeeper's facts about the agent come from its source, never from running its binary
   * (no test can install it here): where they were read. README and doctor say "not run against the
   * real binary" while it is set.
   */
  readonly fromSource?: string;

  readonly launch: {
    /** The executable's name on PATH. */
    readonly executable: string;
    readonly runtime: AgentRuntime;
    readonly shape: InstallShape;
    /** Its own resume command line (after argv[0]); `extra` is what the caller adds. */
    readonly resume: (session: string, mode: 'headless' | 'interactive', prompt: string, extra: readonly string[]) => string[];
    /** A new session (after argv[0]): headless runs `prompt` and exits; interactive opens the agent's UI with `prompt` as its first, when given. */
    readonly start: (mode: 'headless' | 'interactive', prompt: string | undefined, extra: readonly string[]) => string[];
    /** Doctor names one as the cause of a silent launch of this agent (absent: the agent has none). */
    readonly sharedDaemon?: SharedDaemon;
  };
}

export const PROFILES: Readonly<Record<Agent, AgentProfile>> = { codex, claude, gemini, copilot, qwen, opencode, goose, grok };

/**
 * Detection order when `--agent` is absent (spec §2): Qwen (its SessionStart also meets Codex's
 * detector), Codex, Gemini, Grok Build (before Copilot: both send camelCase `sessionId`, only Grok
 * names the event), Copilot, Goose, else Claude.
 */
export const DETECT_ORDER: readonly Agent[] = ['qwen', 'codex', 'gemini', 'grok', 'copilot', 'goose'];
export const FALLBACK_AGENT: Agent = 'claude';

/** One value per agent, computed from its profile: tables keyed by agent without listing the agents again. */
export const byAgent = <T>(value: (profile: AgentProfile) => T): Readonly<Record<Agent, T>> =>
  Object.fromEntries(AGENTS.map((agent) => [agent, value(PROFILES[agent])])) as unknown as Readonly<Record<Agent, T>>;

/**
 * The agent whose npm package installed `resolved` as its bin (`…/node_modules/@openai/codex/bin/codex.js`),
 * with the package root and the bin's path inside it ('/'-separated); undefined for anything else.
 */
export function installedPackageOf(resolved: string): { readonly profile: AgentProfile; readonly packageRoot: string; readonly bin: string } | undefined {
  for (const profile of Object.values(PROFILES)) {
    const { npmPackage, bin } = profile.launch.shape;
    if (npmPackage === undefined || bin === undefined) continue;
    const tail = [...npmPackage.split('/'), ...bin.split('/')].join(sep);
    if (resolved.endsWith(sep + tail)) return { profile, packageRoot: resolved.slice(0, resolved.length - bin.length - 1), bin };
  }
  return undefined;
}

/** `TURNKEEPER_CODEX_BIN`, …: the variable that names the agent's executable (spec §7). */
export const binaryVariable = (agent: Agent): string => `TURNKEEPER_${agent.toUpperCase()}_BIN`;
/** The editor setting that names it: `turnkeeper.agents.<agent>.path`. */
export const binarySetting = (agent: Agent): string => `turnkeeper.agents.${agent}.path`;
