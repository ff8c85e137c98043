// Helpers to run the real Codex CLI hermetically against the mock model server:
// a throwaway HOME/CODEX_HOME/TMPDIR so nothing leaks from (or into) the user's ~/.codex.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { listCodexHooks, type CodexListedHook } from '../../src/agents/profiles/codexTrust';

export interface CodexHome {
  /** Root temp dir; remove with cleanupCodexHome(). */
  root: string;
  home: string;
  codexHome: string;
  tmp: string;
  /** Environment for the codex child: isolated dirs + dummy API key, no inherited OPENAI_* / CODEX_*. */
  env: NodeJS.ProcessEnv;
}

export interface RunOptions {
  env: NodeJS.ProcessEnv;
  cwd?: string;
  /** Arguments after the binary, e.g. ["exec", "--skip-git-repo-check", "hi"]. */
  args: string[];
  timeoutMs?: number;
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

/** Name of the env var holding the dummy key referenced by `env_key` in config.toml. */
export const MOCK_API_KEY_ENV = 'TURNKEEPER_MOCK_API_KEY';
const MOCK_PROVIDER_ID = 'mock';

/**
 * The native codex binary (skipping the node shim, which only execs it anyway).
 * $TURNKEEPER_CODEX_BIN overrides; otherwise look under the repo root (derived from this
 * file's location, falling back to the cwd for copies of this file outside the repo).
 */
export function codexBinaryPath(): string {
  const override = process.env.TURNKEEPER_CODEX_BIN;
  if (override) return override;
  const triple = process.arch === 'arm64' ? 'aarch64-unknown-linux-musl' : 'x86_64-unknown-linux-musl';
  const pkg = process.arch === 'arm64' ? 'codex-linux-arm64' : 'codex-linux-x64';
  const rel = path.join('node_modules', '@openai', pkg, 'vendor', triple, 'bin', 'codex');
  const roots = [path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..'), process.cwd()];
  const found = roots.map((r) => path.join(r, rel)).find((p) => fs.existsSync(p));
  return found ?? path.join(roots[0] ?? '.', rel);
}

/** Create an isolated HOME with CODEX_HOME=$HOME/.codex and TMPDIR=$HOME/tmp. */
export function makeCodexHome(opts: { prefix?: string; extraEnv?: NodeJS.ProcessEnv } = {}): CodexHome {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), opts.prefix ?? 'tk-codex-'));
  const home = path.join(root, 'home');
  const codexHome = path.join(home, '.codex');
  const tmp = path.join(root, 'tmp');
  for (const d of [home, codexHome, tmp]) fs.mkdirSync(d, { recursive: true });
  const env: NodeJS.ProcessEnv = {};
  // Keep only what a shell needs; drop anything that could point Codex elsewhere.
  for (const k of ['PATH', 'LANG', 'LC_ALL', 'TERM', 'USER', 'LOGNAME', 'SHELL']) {
    if (process.env[k] !== undefined) env[k] = process.env[k];
  }
  Object.assign(env, {
    HOME: home,
    CODEX_HOME: codexHome,
    TMPDIR: tmp,
    [MOCK_API_KEY_ENV]: 'sk-mock-not-a-real-key',
    NO_COLOR: '1',
    RUST_LOG: 'error',
    ...opts.extraEnv,
  });
  return { root, home, codexHome, tmp, env };
}

export function cleanupCodexHome(h: CodexHome): void {
  fs.rmSync(h.root, { recursive: true, force: true });
}

/**
 * Write $CODEX_HOME/config.toml pointing at the mock; `extra` is appended verbatim (TOML).
 * `hooks` is a stable, default-on feature in 0.171 (`hooks = false` disables all hooks);
 * it is written anyway so the file documents itself. Retries are off so a broken mock
 * fails fast; analytics/update checks are off because there is no internet.
 */
export function writeCodexConfig(codexHome: string, mockUrl: string, extra = ''): string {
  const file = path.join(codexHome, 'config.toml');
  const toml = `model = "mock-model"
model_provider = "${MOCK_PROVIDER_ID}"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[analytics]
enabled = false

[features]
hooks = true

[model_providers.${MOCK_PROVIDER_ID}]
name = "Mock"
base_url = "${mockUrl}"
env_key = "${MOCK_API_KEY_ENV}"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
stream_idle_timeout_ms = 20000
${extra}
`;
  fs.writeFileSync(file, toml);
  return file;
}

/** Spawn the codex binary with stdin closed (so exec never waits for a piped prompt). */
function runCodex(opts: RunOptions): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(codexBinaryPath(), opts.args, {
      cwd: opts.cwd ?? process.cwd(),
      env: opts.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, opts.timeoutMs ?? 60_000);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, timedOut });
    });
  });
}

/** Base flags for hermetic non-interactive runs. */
export const EXEC_FLAGS = ['--skip-git-repo-check', '--dangerously-bypass-hook-trust'] as const;

/** `codex exec <flags> <prompt>`. Pass `flags` to override EXEC_FLAGS (e.g. to test hook trust). */
export function runCodexExec(o: Omit<RunOptions, 'args'> & { prompt: string; flags?: readonly string[]; extraArgs?: string[] }): Promise<RunResult> {
  return runCodex({ ...o, args: ['exec', ...(o.flags ?? EXEC_FLAGS), ...(o.extraArgs ?? []), o.prompt] });
}

/** One entry of the app-server's `hooks/list` answer. */
export type ListedHook = CodexListedHook;

/**
 * Ask `codex app-server` (JSON-RPC over stdio) which hooks apply to `cwd`: doctor's own client
 * (src/doctor/agentChecks.ts), run on the pinned binary. Used to obtain the keys/hashes Codex
 * expects for persisted hook trust.
 */
async function listHooks(env: NodeJS.ProcessEnv, cwd: string, timeoutMs = 20_000): Promise<ListedHook[]> {
  return (await listCodexHooks(codexBinaryPath(), env, cwd, timeoutMs)).hooks;
}

/**
 * Persist trust for every hook that applies to `cwd`, the way the TUI does:
 * `[hooks.state."<key>"] trusted_hash = "<currentHash>"` in config.toml.
 * After this, hooks run without --dangerously-bypass-hook-trust.
 */
export async function trustAllHooks(codexHome: string, env: NodeJS.ProcessEnv, cwd: string): Promise<ListedHook[]> {
  const hooks = await listHooks(env, cwd);
  const toml = hooks.map((h) => `\n[hooks.state.${JSON.stringify(h.key)}]\ntrusted_hash = ${JSON.stringify(h.currentHash)}\n`).join('');
  fs.appendFileSync(path.join(codexHome, 'config.toml'), toml);
  return hooks;
}

/** Codex exec prints "session id: <uuid>" in its stderr header. */
export function parseSessionId(output: string): string | undefined {
  return /session id:\s*([0-9a-f-]{36})/i.exec(output)?.[1];
}
