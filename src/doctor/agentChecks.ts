// What each agent will actually do with the hooks Turnkeeper installed (spec §8, `doctor`): a hook the
// agent skips is silent, so the agent itself is asked where it can be.
//
// - config_syntax: the config parses under the agent's own parser. Codex (hooks.json) and Claude Code
//   (settings.json) read strict JSON: one comment or trailing comma and the agent ignores the whole
//   file, every hook in it, without a word (Codex lists "failed to parse hooks config"; Claude just runs
//   no hook). Gemini CLI strips comments but not trailing commas. Turnkeeper's own edits keep comments
//   (they are the user's), so this is where a file that no agent will read is caught.
// - both_scopes: Turnkeeper's hooks at user and project scope for one agent: every hook runs twice.
// - <agent>_trust: where the agent can be asked (its profile's `trust.ask`; Codex's asks `codex
//   app-server` for what its /hooks shows, src/agents/profiles/codexTrust.ts), whether it will run
//   Turnkeeper's hooks as installed, rather than re-deriving its trust records.
// - agent_version: the agent's own `--version`, against the version Turnkeeper's facts about it were
//   observed and tested on (its profile's testedVersion): a newer agent may have changed its hook
//   events, payloads or outputs, which doctor cannot see from here, so it says so.
// - from_source: an agent whose facts Turnkeeper read from its source and never ran (Goose, Grok
//   Build, their profiles' `fromSource`): said on every doctor run, with what the agent does not do
//   (no context reaches its model), until a test runs the real binary.
// - read_by_others: Claude Code's hook files are also run by Grok Build (its Claude compatibility)
//   and VS Code's chat agent (chat.hookFilesLocations), by default; with Grok Build's own hooks
//   installed too, every Grok Build event runs Turnkeeper twice.
// - on_path: a project-scope config calls `turnkeeper` through PATH (it is committed, so it names no
//   path of one machine): an agent whose PATH has no `turnkeeper` fails every hook.
import { spawn } from 'node:child_process';
import { dirname, isAbsolute } from 'node:path';
import { parse as parseJsonc, printParseErrorCode, stripComments, type ParseError } from 'jsonc-parser';
import type { Agent } from '../core/ids';
import type { Scope } from '../agents/install';
import { readConfigFile } from '../files/boundedFile';
import { turnkeeperHome, type Env } from '../store/location';
import { shimPath } from '../agents/shim';
import { findExecutable } from '../agents/executables';
import { binaryVariable, PROFILES, type ConfigSyntax } from '../agents/profiles/index';

type CheckName = 'config_syntax' | 'both_scopes' | `${Agent}_trust` | 'on_path' | 'agent_version' | 'from_source' | 'read_by_others';

export interface AgentCheck {
  readonly check: CheckName;
  readonly agent: Agent;
  readonly scope?: Scope;
  readonly path?: string;
  /** `problem`: the agent will not run Turnkeeper's hook as installed. `unknown`: doctor could not tell. */
  readonly status: 'ok' | 'problem' | 'unknown';
  readonly detail: string;
  /** What to do about a problem (or how to make an unknown checkable). */
  readonly fix?: string;
}

/** One installed (or present) hook config, as doctor lists them. */
interface HookFile {
  readonly agent: Agent;
  readonly scope: Scope;
  readonly path: string;
  readonly exists: boolean;
  /** Every event of the agent has Turnkeeper's hook with the command of this scope. */
  readonly installed: boolean;
  /** The command Turnkeeper installs at this scope (the shim for user scope, `turnkeeper` on PATH for project scope). */
  readonly command: string;
}

const nameOf = (agent: Agent): string => PROFILES[agent].displayName;
const syntaxOf = (agent: Agent): ConfigSyntax | undefined => PROFILES[agent].install.syntax;

export interface AgentCheckOptions {
  readonly env: Env;
  readonly projectRoot: string;
  readonly files: readonly HookFile[];
  /**
   * The terminals agents are started from have the shim's directory ($TURNKEEPER_HOME/bin) on their
   * PATH although `env` does not: the extension puts it there for VS Code's terminals only and
   * passes its own process.env.
   */
  readonly shimOnTerminalPath?: boolean;
}

export async function agentChecks(options: AgentCheckOptions): Promise<AgentCheck[]> {
  const { files } = options;
  const checks: AgentCheck[] = [];
  for (const file of files) if (file.exists) checks.push(syntaxCheck(file));
  const agents = [...new Set(files.map((file) => file.agent))];
  for (const agent of agents) {
    const installed = files.filter((file) => file.agent === agent && file.installed);
    if (installed.length === 0) continue;
    const both = installed.length > 1;
    checks.push({
      check: 'both_scopes',
      agent,
      status: both ? 'problem' : 'ok',
      detail: both
        ? `Turnkeeper's ${nameOf(agent)} hooks are installed at user scope (${installed.find((f) => f.scope === 'user')?.path}) and at project scope (${installed.find((f) => f.scope === 'project')?.path}): ${nameOf(agent)} runs every hook twice, and each prompt gets the context twice`
        : `${nameOf(agent)} has Turnkeeper's hooks at ${installed[0]!.scope} scope only`,
      ...(both
        ? {
            fix: `keep one scope: turnkeeper hooks uninstall --agent ${agent} --scope user (or --scope project, if the repository's config is not yours to change)`,
          }
        : {}),
    });
  }
  const project = files.filter((file) => file.scope === 'project' && file.installed);
  if (project.length > 0) checks.push(pathCheck(options, project));
  for (const agent of agents) {
    const installed = files.filter((file) => file.agent === agent && file.installed);
    if (installed.length > 0 && PROFILES[agent].trust.ask) checks.push(...(await askedTrust(agent, options, installed)));
  }
  for (const agent of agents) if (files.some((file) => file.agent === agent && file.installed)) checks.push(await versionCheck(agent, options.env));
  for (const agent of agents) if (files.some((file) => file.agent === agent && file.installed)) checks.push(...sourceOnlyCheck(agent));
  checks.push(...readByOthers(files));
  return checks;
}

// ---------------------------------------------------------------------------------------------
// from_source, read_by_others

function sourceOnlyCheck(agent: Agent): AgentCheck[] {
  const { fromSource, output } = PROFILES[agent];
  if (fromSource === undefined) return [];
  return [
    {
      check: 'from_source',
      agent,
      status: 'unknown',
      detail: `Turnkeeper's ${nameOf(agent)} support was written from its source (${fromSource}) and not run against the real binary${output.contextIgnored ? `: ${output.contextIgnored}` : ''}`,
      fix: `if a claim, a fence or a hook of ${nameOf(agent)} misbehaves, report it with turnkeeper doctor --json`,
    },
  ];
}

/**
 * Installed hook files that other programs run too, by their profiles: agents that run another's
 * hook files with their own payloads (`install.runsHooksOf`, served as themselves) and programs that
 * are no agent (`install.alsoRunBy`, answered with nothing; src/agents/payload.ts, "foreign callers").
 */
function readByOthers(files: readonly HookFile[]): AgentCheck[] {
  return files
    .filter((file) => file.installed)
    .flatMap((file): AgentCheck[] => {
      const runners = Object.values(PROFILES).filter((profile) => profile.install.runsHooksOf?.agent === file.agent);
      const programs = PROFILES[file.agent].install.alsoRunBy ?? [];
      if (runners.length === 0 && programs.length === 0) return [];
      const readers = [
        ...runners.map((profile) => `${profile.displayName} (served as ${profile.displayName})`),
        ...programs.map((name) => `${name} (answered with nothing, no claim)`),
      ];
      const base = { check: 'read_by_others' as const, agent: file.agent, scope: file.scope, path: file.path };
      const detail = `${readers.join(' and ')} also run the hooks in ${file.path} by default`;
      const doubled = runners.flatMap((profile) => {
        const own = files.filter((item) => item.agent === profile.agent && item.installed);
        return own.length === 0 ? [] : [{ profile, own }];
      });
      if (doubled.length === 0) return [{ ...base, status: 'ok' as const, detail }];
      return doubled.map(({ profile, own }) => ({
        ...base,
        status: 'problem' as const,
        detail: `${detail}; ${profile.displayName}'s own Turnkeeper hooks are installed too (${own.map((item) => item.path).join(', ')}), so every ${profile.displayName} event runs Turnkeeper twice`,
        fix: `keep one: turnkeeper hooks uninstall --agent ${profile.agent}${own.length === 1 ? ` --scope ${own[0]!.scope}` : ''}, or stop ${profile.displayName} running ${nameOf(file.agent)}'s hooks: ${profile.install.runsHooksOf!.turnOff}`,
      }));
    });
}

// ---------------------------------------------------------------------------------------------
// agent_version

/** The agent's executable doctor asks: TURNKEEPER_<AGENT>_BIN when absolute, else the PATH's. */
function agentBinary(agent: Agent, env: Env): string | undefined {
  const named = env[binaryVariable(agent)];
  if (named) return isAbsolute(named) ? named : undefined;
  return findExecutable(env, PROFILES[agent].launch.executable);
}

/** -1, 0 or 1 as dotted version `a` is older than, equal to or newer than `b` (numeric parts). */
function compareVersions(a: string, b: string): number {
  const left = a.split('.').map(Number);
  const right = b.split('.').map(Number);
  for (let i = 0; i < Math.max(left.length, right.length); i++) {
    const diff = (left[i] ?? 0) - (right[i] ?? 0);
    if (diff !== 0) return Math.sign(diff);
  }
  return 0;
}

async function versionCheck(agent: Agent, env: Env): Promise<AgentCheck> {
  const tested = PROFILES[agent].testedVersion;
  const binary = agentBinary(agent, env);
  const base = { check: 'agent_version', agent } as const;
  if (!binary) return { ...base, status: 'unknown', detail: `no ${PROFILES[agent].launch.executable} on the PATH to ask its version (tested with ${tested})` };
  const output = await new Promise<string>((resolvePromise) => {
    let text = '';
    const child = spawn(binary, ['--version'], { env, stdio: ['ignore', 'pipe', 'pipe'], timeout: 10_000 });
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (text += chunk.slice(0, 4096)));
    child.on('error', () => resolvePromise(''));
    child.on('close', () => resolvePromise(text));
  });
  const version = /\b(\d+\.\d+\.\d+)\b/.exec(output)?.[1];
  if (!version) return { ...base, status: 'unknown', path: binary, detail: `${binary} --version printed no version (tested with ${tested})` };
  const order = compareVersions(version, tested);
  if (order <= 0)
    return {
      ...base,
      status: 'ok',
      path: binary,
      detail: `${nameOf(agent)} ${version}${order < 0 ? `, older than the ${tested} Turnkeeper was tested with` : ''}`,
    };
  return {
    ...base,
    status: 'unknown',
    path: binary,
    detail: `${nameOf(agent)} ${version} is newer than the ${tested} Turnkeeper was tested with: its hook events, payloads or outputs may have changed, which doctor cannot check from here`,
    fix: `if a claim or the context goes missing with ${nameOf(agent)} ${version}, pin ${tested} or report it with turnkeeper doctor --json`,
  };
}

// ---------------------------------------------------------------------------------------------
// config_syntax

/** What is wrong with `text` for the agent's own parser (its first error), or undefined. */
function syntaxError(agent: Agent, text: string): { found: string; line: number } | undefined {
  const syntax = syntaxOf(agent);
  // A plugin module of Turnkeeper's own is not JSON: hooksStatus says whether it is exactly what install writes.
  if (syntax === 'module') return undefined;
  // Comments stripped to blanks, so offsets (and line numbers) stay those of the file.
  const raw = text.replace(/^\uFEFF/, '');
  const body = syntax === 'json-comments' ? stripComments(raw, ' ') : raw;
  const errors: ParseError[] = [];
  if (syntax === undefined) parseJsonc(body, errors, { allowTrailingComma: true });
  else parseJsonc(body, errors, { disallowComments: true, allowTrailingComma: false });
  const first = errors[0];
  return first === undefined ? undefined : { found: describeError(body, first), line: body.slice(0, first.offset).split('\n').length };
}

const readsAs = (agent: Agent): string => {
  const syntax = syntaxOf(agent);
  return syntax === 'json'
    ? 'reads it as strict JSON'
    : syntax === 'json-comments'
      ? 'reads it as JSON with comments but no trailing commas'
      : 'cannot parse it';
};

/**
 * For `hooks install`: why merging into this existing config would install nothing the agent reads,
 * or undefined (no file, or one the agent parses). Only agents whose parser is known are checked.
 */
export function strictSyntaxProblem(agent: Agent, path: string): string | undefined {
  const read = readConfigFile(path);
  if (read.kind === 'missing') return undefined; // install creates it
  if (read.kind === 'refused') return read.problem; // a device, a FIFO, a huge file: nothing to merge into
  if (syntaxOf(agent) === undefined) return undefined;
  const error = syntaxError(agent, read.bytes.toString('utf8'));
  if (error === undefined) return undefined;
  return `${nameOf(agent)} ${readsAs(agent)}, and this file has ${error.found} at line ${error.line}, so ${nameOf(agent)} ignores the whole file, every hook in it included; remove ${error.found.startsWith('a comment') ? 'the comments' : error.found.startsWith('a trailing comma') ? 'the trailing commas' : 'the error'} first`;
}

function syntaxCheck(file: HookFile): AgentCheck {
  const base = { check: 'config_syntax' as const, agent: file.agent, scope: file.scope, path: file.path };
  const read = readConfigFile(file.path);
  if (read.kind !== 'bytes') {
    const problem = read.kind === 'refused' ? read.problem : 'it is gone';
    return {
      ...base,
      status: 'problem',
      detail: `cannot read ${file.path} as a config: ${problem}`,
      fix: `make ${file.path} a readable regular file of the agent's config, or remove it`,
    };
  }
  const syntax = syntaxOf(file.agent);
  const error = syntaxError(file.agent, read.bytes.toString('utf8'));
  if (error === undefined) {
    return {
      ...base,
      status: 'ok',
      detail: `${nameOf(file.agent)} can parse ${file.path}${syntax ? ` (${syntax === 'json' ? 'strict JSON' : syntax === 'module' ? "Turnkeeper's plugin module" : 'JSON with comments'})` : ''}`,
    };
  }
  return {
    ...base,
    status: 'problem',
    detail: `${nameOf(file.agent)} ${readsAs(file.agent)}, and ${file.path} has ${error.found} at line ${error.line}: ${nameOf(file.agent)} ignores the whole file, Turnkeeper's hooks and any others in it, without a warning`,
    fix: `remove ${error.found.startsWith('a comment') ? 'the comments' : error.found.startsWith('a trailing comma') ? 'the trailing commas' : 'the syntax error'} from ${file.path} (turnkeeper hooks uninstall gives back what was there before Turnkeeper)`,
  };
}

function describeError(text: string, error: ParseError): string {
  const at = text.slice(error.offset, error.offset + 2);
  if (at === '//' || at === '/*' || printParseErrorCode(error.error) === 'InvalidCommentToken') return 'a comment';
  // A trailing comma shows up as a missing property or value right before a closing bracket.
  const before = text.slice(0, error.offset).trimEnd();
  if (before.endsWith(',') && /^\s*[}\]]/.test(text.slice(error.offset))) return 'a trailing comma';
  return `a syntax error (${printParseErrorCode(error.error)})`;
}

// ---------------------------------------------------------------------------------------------
// on_path

function pathCheck(options: AgentCheckOptions, project: readonly HookFile[]): AgentCheck {
  const agents = project.map((file) => nameOf(file.agent)).join(', ');
  const first = project[0]!;
  const found = findExecutable(options.env, 'turnkeeper');
  if (found)
    return {
      check: 'on_path',
      agent: first.agent,
      scope: 'project',
      status: 'ok',
      detail: `the project's hooks (${agents}) run turnkeeper from PATH: ${found}`,
    };
  const shim = options.shimOnTerminalPath ? findExecutable({ PATH: dirname(shimPath(turnkeeperHome(options.env))) }, 'turnkeeper') : undefined;
  return shim
    ? {
        check: 'on_path',
        agent: first.agent,
        scope: 'project',
        status: 'ok',
        detail: `the project's hooks (${agents}) run turnkeeper from PATH: in VS Code's terminals that is the shim ${shim}, whose directory the extension puts on their PATH`,
      }
    : {
        check: 'on_path',
        agent: first.agent,
        scope: 'project',
        status: 'problem',
        detail: `the project's hooks (${agents}) run \`turnkeeper\` from PATH, and this PATH has none: an agent started from here fails every hook (command not found) and claims nothing`,
        fix: 'start agents from a VS Code terminal (the extension puts turnkeeper on its PATH), or npm install -g the package (npm pack builds it), or add $TURNKEEPER_HOME/bin to PATH',
      };
}

// ---------------------------------------------------------------------------------------------
// <agent>_trust: asked of the agent itself, for agents whose profile can (`trust.ask`)

/** The agent's answer for its installed hook files, or one `unknown` row per file when doctor cannot ask. */
async function askedTrust(agent: Agent, options: AgentCheckOptions, files: readonly HookFile[]): Promise<AgentCheck[]> {
  const profile = PROFILES[agent];
  const ask = profile.trust.ask!;
  const check = `${agent}_trust` as const;
  const binary = agentBinary(agent, options.env);
  if (binary === undefined) {
    const variable = binaryVariable(agent);
    const named = options.env[variable];
    const executable = profile.launch.executable;
    const detail = named
      ? `${variable} is not an absolute path (${named}), so doctor runs no ${executable} to ask whether it trusts the hooks (a new or changed hook is skipped silently until trusted)`
      : `${executable} is not in an absolute PATH directory, so doctor cannot ask ${profile.displayName} whether it trusts the hooks (a new or changed hook is skipped silently until trusted)`;
    const fix = `put ${executable} in a PATH directory given as an absolute path, or set ${variable} to its absolute path, then run turnkeeper doctor again`;
    return files.map((file) => ({ check, agent, scope: file.scope, path: file.path, status: 'unknown', detail, fix }));
  }
  return (await ask(binary, options.env, options.projectRoot, files)).map((verdict) => ({ check, agent, ...verdict }));
}
