// Codex's own answer to "will you run these hooks?" (doctor's trust check, docs/hook-protocol.md):
// Codex skips a new or changed hook until the user trusts it (config.toml
// [hooks.state."<hooks.json>:<event>:<group>:<handler>"] trusted_hash), and loads <repo>/.codex only
// in a trusted project. Doctor asks the real Codex (`codex app-server`, JSON-RPC `hooks/list`, what
// its /hooks screen shows) rather than re-implement its hashing.
import { spawn } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Env } from '../../core/env';
import type { InstalledHookFile, TrustVerdict } from './index';

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

/** `trust.ask` of the Codex profile: one verdict per installed hook file. */
export async function askCodexTrust(binary: string, env: Env, projectRoot: string, files: readonly InstalledHookFile[]): Promise<TrustVerdict[]> {
  let list: CodexHookList;
  try {
    list = await listCodexHooks(binary, env, projectRoot, CODEX_LIST_TIMEOUT_MS);
  } catch (error) {
    return files.map((file) => ({
      scope: file.scope,
      path: file.path,
      status: 'unknown',
      detail: `could not ask ${binary} which hooks it runs: ${(error as Error).message}`,
    }));
  }
  return files.map((file) => codexFileTrust(file, list, projectRoot));
}

/** The path with every symlink resolved (Codex reports canonical paths), or the path itself when it cannot be. */
function canonical(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

function codexFileTrust(file: InstalledHookFile, list: CodexHookList, root: string): TrustVerdict {
  const base = { scope: file.scope, path: file.path };
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
