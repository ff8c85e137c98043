// What each agent will actually do with the hooks Turnkeeper installed (spec §8, `doctor`): a hook the
// agent skips is silent, so the agent itself is asked where it can be.
//
// - config_syntax: the config parses under the agent's own parser. Codex (hooks.json) and Claude Code
//   (settings.json) read strict JSON: one comment or trailing comma and the agent ignores the whole
//   file, every hook in it, without a word (Codex lists "failed to parse hooks config"; Claude just runs
//   no hook). Gemini CLI strips comments but not trailing commas. Turnkeeper's own edits keep comments
//   (they are the user's), so this is where a file that no agent will read is caught.
// - both_scopes: Turnkeeper's hooks at user and project scope for one agent: every hook runs twice.
// - codex_trust: Codex skips a new or changed hook until the user trusts it (config.toml
//   [hooks.state."<hooks.json>:<event>:<group>:<handler>"] trusted_hash), and loads <repo>/.codex only
//   in a trusted project. Doctor asks the real Codex (`codex app-server`, JSON-RPC `hooks/list`, what
//   the TUI's /hooks shows) which of Turnkeeper's hooks it will run, rather than re-deriving its hashes.
// - agent_version: the agent's own `--version`, against the version Turnkeeper's facts about it were
//   observed and tested on (its profile's testedVersion): a newer agent may have changed its hook
//   events, payloads or outputs, which doctor cannot see from here, so it says so.
// - on_path: a project-scope config calls `turnkeeper` through PATH (it is committed, so it names no
//   path of one machine): an agent whose PATH has no `turnkeeper` fails every hook.
import { spawn } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { parse as parseJsonc, printParseErrorCode, stripComments, type ParseError } from 'jsonc-parser';
import type { Agent } from '../core/ids';
import type { Scope } from '../agents/install';
import { readConfigFile } from '../agents/boundedFile';
import { turnkeeperHome, type Env } from '../store/location';
import { shimPath } from '../agents/shim';
import { findExecutable } from '../agents/executables';
import { PROFILES, type ConfigSyntax } from '../agents/profiles/index';

type CheckName = 'config_syntax' | 'both_scopes' | 'codex_trust' | 'on_path' | 'agent_version';

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
  const codex = files.filter((file) => file.agent === 'codex' && file.installed);
  if (codex.length > 0) checks.push(...(await codexTrust(options, codex)));
  for (const agent of agents) if (files.some((file) => file.agent === agent && file.installed)) checks.push(await versionCheck(agent, options.env));
  return checks;
}

// ---------------------------------------------------------------------------------------------
// agent_version

/** The agent's executable doctor asks: TURNKEEPER_<AGENT>_BIN when absolute, else the PATH's. */
function agentBinary(agent: Agent, env: Env): string | undefined {
  const named = env[`TURNKEEPER_${agent.toUpperCase()}_BIN`];
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
      detail: `${nameOf(file.agent)} can parse ${file.path}${syntax ? ` (${syntax === 'json' ? 'strict JSON' : 'JSON with comments'})` : ''}`,
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
// codex_trust

/** One entry of Codex's `hooks/list` (the fields used here and by the tests' trust helper). */
export interface CodexListedHook {
  /** `<hooks.json path>:<snake_event>:<group>:<handler>`: the key of its `[hooks.state]` trust entry. */
  readonly key: string;
  /** `sha256:<hex>`: what trusting it records as `trusted_hash`. */
  readonly currentHash: string;
  readonly command: string;
  readonly sourcePath: string;
  readonly source: string;
  readonly enabled: boolean;
  readonly trustStatus: string;
  readonly eventName: string;
}

export interface CodexHookList {
  readonly hooks: CodexListedHook[];
  readonly warnings: string[];
  readonly errors: string[];
}

/**
 * The codex executable doctor asks: TURNKEEPER_CODEX_BIN when it is an absolute path, else `codex` in
 * an absolute PATH directory. Doctor runs it with the repository as its working directory, so a
 * relative name (`node_modules/.bin/codex`, `.`) would run whatever the repository ships.
 */
function codexBinary(env: Env): string | undefined {
  const named = env.TURNKEEPER_CODEX_BIN;
  if (named) return isAbsolute(named) ? named : undefined;
  return findExecutable(env, 'codex');
}

/** Asks `codex app-server` which hooks apply in `cwd` and whether each is trusted (what /hooks shows). */
export function listCodexHooks(binary: string, env: Env, cwd: string, timeoutMs: number): Promise<CodexHookList> {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, ['app-server'], { cwd, env: env, stdio: ['pipe', 'pipe', 'ignore'] });
    let buffer = '';
    let done = false;
    const finish = (error: Error | undefined, list?: CodexHookList): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      child.kill();
      if (error) reject(error);
      else resolve(list!);
    };
    const timer = setTimeout(() => finish(new Error(`codex app-server did not answer hooks/list within ${timeoutMs} ms`)), timeoutMs);
    child.on('error', (error) => finish(error));
    child.on('exit', (code) => finish(new Error(`codex app-server exited (${code}) before answering hooks/list`)));
    child.stdin.on('error', () => {});
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      buffer += chunk;
      for (let newline = buffer.indexOf('\n'); newline >= 0; newline = buffer.indexOf('\n')) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        let message: { id?: unknown; result?: { data?: { hooks?: CodexListedHook[]; warnings?: string[]; errors?: unknown[] }[] }; error?: unknown };
        try {
          message = JSON.parse(line) as typeof message;
        } catch {
          continue;
        }
        if (message.id !== 2) continue;
        if (message.error !== undefined) return finish(new Error(`hooks/list failed: ${JSON.stringify(message.error)}`));
        const data = message.result?.data ?? [];
        finish(undefined, {
          hooks: data.flatMap((entry) => entry.hooks ?? []),
          warnings: data.flatMap((entry) => entry.warnings ?? []).map(String),
          errors: data.flatMap((entry) => entry.errors ?? []).map((error) => (typeof error === 'string' ? error : JSON.stringify(error))),
        });
      }
    });
    const send = (message: object): void => void child.stdin.write(JSON.stringify(message) + '\n');
    send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { clientInfo: { name: 'turnkeeper-doctor', version: '1' } } });
    send({ jsonrpc: '2.0', method: 'initialized' });
    send({ jsonrpc: '2.0', id: 2, method: 'hooks/list', params: { cwds: [cwd] } });
  });
}

const TRUST_FIX = (root: string) =>
  `open codex in ${root}, type /hooks and trust Turnkeeper's hooks (the command stays the same across Turnkeeper updates, so once is enough); for a single run: codex --dangerously-bypass-hook-trust`;

/** Milliseconds Codex gets to answer hooks/list (it starts its app-server first). */
const CODEX_LIST_TIMEOUT_MS = 20_000;

/** One `unknown` codex_trust row per file: doctor could not ask Codex. */
const unknownFor = (files: readonly HookFile[], detail: string, fix?: string): AgentCheck[] =>
  files.map((file) => ({
    check: 'codex_trust',
    agent: 'codex',
    scope: file.scope,
    path: file.path,
    status: 'unknown',
    detail,
    ...(fix === undefined ? {} : { fix }),
  }));

async function codexTrust(options: AgentCheckOptions, files: readonly HookFile[]): Promise<AgentCheck[]> {
  const binary = codexBinary(options.env);
  if (binary === undefined) {
    return unknownFor(
      files,
      options.env.TURNKEEPER_CODEX_BIN
        ? `TURNKEEPER_CODEX_BIN is not an absolute path (${options.env.TURNKEEPER_CODEX_BIN}), so doctor runs no codex to ask whether it trusts the hooks (a new or changed hook is skipped silently until trusted)`
        : 'codex is not in an absolute PATH directory, so doctor cannot ask Codex whether it trusts the hooks (a new or changed hook is skipped silently until trusted)',
      'put codex in a PATH directory given as an absolute path, or set TURNKEEPER_CODEX_BIN to its absolute path, then run turnkeeper doctor again',
    );
  }
  let list: CodexHookList;
  try {
    list = await listCodexHooks(binary, options.env, options.projectRoot, CODEX_LIST_TIMEOUT_MS);
  } catch (error) {
    return unknownFor(files, `could not ask ${binary} which hooks it runs: ${(error as Error).message}`);
  }
  return files.map((file) => codexFileTrust(file, list, options.projectRoot));
}

/** The path with every symlink resolved (Codex reports canonical paths), or the path itself when it cannot be. */
function canonical(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

function codexFileTrust(file: HookFile, list: CodexHookList, root: string): AgentCheck {
  const base = { check: 'codex_trust' as const, agent: 'codex' as const, scope: file.scope, path: file.path };
  // Compared as files, not strings: with CODEX_HOME (or the checkout) behind a symlink, Codex names the target.
  const real = canonical(file.path);
  const fromFile = list.hooks.filter((hook) => canonical(hook.sourcePath) === real);
  const ours = fromFile.filter((hook) => hook.command === file.command);
  if (ours.length === 0) {
    const parse = list.warnings.find((warning) => warning.includes(file.path) || warning.includes(real));
    if (parse)
      return {
        ...base,
        status: 'problem',
        detail: `Codex does not load ${file.path}: ${parse}`,
        fix: `make ${file.path} strict JSON (no comments, no trailing commas)`,
      };
    if (file.scope === 'project' && fromFile.length === 0) {
      return {
        ...base,
        status: 'problem',
        detail: `Codex does not load ${file.path}: it reads a repository's .codex only once the project is trusted`,
        fix: `open codex in ${root} and trust the project when it asks (or add [projects."${root}"] trust_level = "trusted" to $CODEX_HOME/config.toml), then trust the hooks in /hooks`,
      };
    }
    // Nothing says why: another CODEX_HOME than this one, `hooks = false` in its [features], a Codex
    // that lists hooks differently. Say what Codex listed rather than guess.
    const sources = [...new Set(list.hooks.map((hook) => hook.sourcePath))];
    return {
      ...base,
      status: 'unknown',
      detail: `Codex lists none of Turnkeeper's hooks in ${file.path}, and no warning about it; the hooks it lists come from ${sources.length === 0 ? 'no file at all' : sources.join(', ')}`,
      fix: `check that codex reads ${file.path} (the CODEX_HOME it runs with) and that $CODEX_HOME/config.toml has no \`hooks = false\` in [features]; /hooks in codex shows what it loads`,
    };
  }
  const skipped = ours.filter((hook) => hook.enabled === false || (hook.trustStatus !== 'trusted' && hook.trustStatus !== 'managed'));
  if (skipped.length === 0) return { ...base, status: 'ok', detail: `Codex trusts and will run all ${ours.length} of Turnkeeper's hooks in ${file.path}` };
  const states = [...new Set(skipped.map((hook) => (hook.enabled === false ? 'disabled' : hook.trustStatus)))].join(', ');
  return {
    ...base,
    status: 'problem',
    detail: `Codex skips ${skipped.length} of Turnkeeper's ${ours.length} hooks in ${file.path} (${states}: ${skipped.map((hook) => hook.eventName.charAt(0).toUpperCase() + hook.eventName.slice(1)).join(', ')}), silently: no Todo is claimed and no context reaches the model`,
    fix: TRUST_FIX(root),
  };
}
