import { expect } from 'vitest';
// Shared helpers for the end-to-end tests that drive the real agent binaries (Codex, Claude Code,
// Gemini CLI) with Turnkeeper's real hooks installed: bounded child processes (own process group,
// killed on timeout and on teardown), hermetic environments and small JSON helpers.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { ReceiptDocument } from '../../src/core/receipts';
import { messageText, type AnthropicRequest } from './anthropicMock';
import type { RecordedRequest } from './mockModelServer';
import { CLI, type World } from './world';

export const REPO_ROOT = resolve(__dirname, '../..');
export const BIN = join(REPO_ROOT, 'node_modules', '.bin');

export interface ProcResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly timedOut: boolean;
  readonly ms: number;
}

const live = new Set<ChildProcess>();

/** Kills every child (and its process group) still running; call from afterAll/afterEach. */
export function killAll(): void {
  for (const child of live) killGroup(child);
  live.clear();
}

function killGroup(child: ChildProcess): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    try {
      child.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
}

/**
 * Runs `command args` with stdin closed, in its own process group, and SIGKILLs the whole group
 * after `timeoutMs` (the agents start hook processes and helpers of their own).
 */
export function runProcess(command: string, args: readonly string[], opts: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number }): Promise<ProcResult> {
  const started = Date.now();
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    live.add(child);
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child);
    }, opts.timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      live.delete(child);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      live.delete(child);
      // Leftover helpers of the agent (none expected) must not outlive the run.
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // group already empty
      }
      resolvePromise({ code, signal, stdout, stderr, timedOut, ms: Date.now() - started });
    });
  });
}

/** A readable failure message for a process that did not exit 0. */
export function describeRun(label: string, run: ProcResult): string {
  return `${label}: exit ${run.code} signal ${run.signal} timedOut ${run.timedOut} after ${run.ms} ms\n--- stdout\n${run.stdout.slice(-4000)}\n--- stderr\n${run.stderr.slice(-6000)}`;
}

/** PATH with Node 24 (the one running the tests) first, so `#!/usr/bin/env node` agents get it. */
export function nodePath(): string {
  return [dirname(process.execPath), BIN, process.env.PATH ?? '/usr/bin:/bin'].join(':');
}

/** A minimal environment: nothing from the developer's shell that could point an agent elsewhere. */
export function baseEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: nodePath(), LANG: process.env.LANG ?? 'C.UTF-8', NO_COLOR: '1', TERM: 'dumb' };
  for (const key of ['USER', 'LOGNAME', 'SHELL']) if (process.env[key] !== undefined) env[key] = process.env[key];
  return { ...env, ...extra };
}

/** Creates (and returns) a directory under the world's root. */
export function worldDir(world: World, ...parts: string[]): string {
  const dir = join(world.root, ...parts);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/**
 * Gemini CLI's home in the world (GEMINI_CLI_HOME = HOME), with the user's own settings.json choosing
 * API-key auth (`hooks install` must merge into it), and the environment that sends it to `mock`.
 */
export function geminiEnv(world: World, mock: { readonly url: string }): { env: NodeJS.ProcessEnv; home: string; settings: string } {
  const home = worldDir(world, 'gemini', 'home');
  const settings = join(worldDir(world, 'gemini', 'home', '.gemini'), 'settings.json');
  writeFileSync(settings, `${JSON.stringify({ security: { auth: { selectedType: 'gemini-api-key' } } }, null, 2)}\n`);
  const env = baseEnv({
    HOME: home,
    GEMINI_CLI_HOME: home,
    TMPDIR: worldDir(world, 'gemini', 'tmp'),
    TURNKEEPER_HOME: world.home,
    GOOGLE_GEMINI_BASE_URL: mock.url,
    GEMINI_API_KEY: 'dummy',
  });
  return { env, home, settings };
}

/**
 * Trusts `dirs` in Gemini CLI's home as its "Do you trust the files in this folder?" dialog does
 * ("1. Trust folder"), in $GEMINI_CLI_HOME/.gemini/trustedFolders.json. Headless `gemini -p` is
 * given --skip-trust instead; the interactive one (0.61) opens on that dialog for an untrusted folder.
 */
export function trustGeminiFolders(home: string, dirs: readonly string[]): void {
  writeFileSync(join(home, '.gemini', 'trustedFolders.json'), `${JSON.stringify(Object.fromEntries(dirs.map((dir) => [dir, 'TRUST_FOLDER'])), null, 2)}\n`);
}

/**
 * Claude Code's home in the world ($CLAUDE_CONFIG_DIR under HOME, where `hooks install` writes
 * settings.json), and the environment that sends it to `mock` with nothing nonessential on the network.
 */
export function claudeEnv(world: World, mock: { readonly url: string }): { env: NodeJS.ProcessEnv; configDir: string } {
  const configDir = worldDir(world, 'claude', 'home', '.claude');
  const env = baseEnv({
    HOME: worldDir(world, 'claude', 'home'),
    CLAUDE_CONFIG_DIR: configDir,
    TMPDIR: worldDir(world, 'claude', 'tmp'),
    TURNKEEPER_HOME: world.home,
    ANTHROPIC_BASE_URL: mock.url,
    ANTHROPIC_API_KEY: 'dummy',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
  });
  return { env, configDir };
}

/**
 * Qwen Code's home in the world (HOME, so $QWEN_HOME is ~/.qwen), with the user's own settings.json
 * choosing the OpenAI-compatible provider (`hooks install` must merge into it) and turning off auto-update
 * and usage statistics, and the environment that sends it to the chat-completions stand-in `mock`.
 */
export function qwenEnv(world: World, mock: { readonly url: string }): { env: NodeJS.ProcessEnv; home: string; settings: string } {
  const home = worldDir(world, 'qwen', 'home');
  const settings = join(worldDir(world, 'qwen', 'home', '.qwen'), 'settings.json');
  const user = { security: { auth: { selectedType: 'openai' } }, general: { enableAutoUpdate: false }, privacy: { usageStatisticsEnabled: false } };
  writeFileSync(settings, `${JSON.stringify(user, null, 2)}\n`);
  const env = baseEnv({
    HOME: home,
    TMPDIR: worldDir(world, 'qwen', 'tmp'),
    TURNKEEPER_HOME: world.home,
    OPENAI_BASE_URL: mock.url,
    OPENAI_API_KEY: 'dummy',
    OPENAI_MODEL: 'mock-model',
    QWEN_CODE_SUPPRESS_YOLO_WARNING: '1',
  });
  return { env, home, settings };
}

export interface LeaseJson {
  goal: string;
  todo: string;
  owner: string;
  capture: string;
  epoch: number;
  version: number;
  status: string;
  expiresAt: string;
  /** The holder's checkout (worktree root), from its capture. */
  checkout?: string;
  /** An active lease's live state (spec §9 "Live status"). */
  live?: { state: string; since: string };
}
interface CaptureJson {
  id: string;
  goal: string;
  todo: string;
  agent: string;
  session: string;
  turn: string | null;
  state: string;
  originalDigest: string;
  readyDigest: string | null;
  /** The checkout (worktree root) the capture was taken in. */
  checkout?: string;
}
export interface StatusJson {
  leases: LeaseJson[];
  captures: CaptureJson[];
}

/** `turnkeeper status --json`, asserting the command itself worked. */
export function statusOf(world: World): StatusJson {
  const run = world.cli(['status', '--json']);
  if (run.code !== 0) throw new Error(`turnkeeper status failed (${run.code}): ${run.stderr}`);
  return JSON.parse(run.stdout) as StatusJson;
}

/** The stored presentation bytes of a capture (`turnkeeper show --json`). */
export function presentationOf(world: World, captureId: string): string {
  const run = world.cli(['show', captureId, '--json']);
  if (run.code !== 0) throw new Error(`turnkeeper show failed (${run.code}): ${run.stderr}`);
  const shown = JSON.parse(run.stdout) as { presentation: string | null };
  if (shown.presentation === null) throw new Error(`capture ${captureId} has no ready capture`);
  return shown.presentation;
}

/** `turnkeeper verify --json`. */
export function verifyOf(world: World): { ok: boolean; verified: number } {
  const run = world.cli(['verify', '--json']);
  return JSON.parse(run.stdout) as { ok: boolean; verified: number };
}

/** Every receipt of the world's store in chain order, after asserting that the chain verifies. */
export async function receiptDocs(world: World): Promise<ReceiptDocument[]> {
  const store = await world.store();
  try {
    expect(await store.verifyChain()).toMatchObject({ ok: true });
    return (await store.receipts({ limit: 1000 })).map((row) => JSON.parse(row.doc) as ReceiptDocument).sort((a, b) => a.seq - b.seq);
  } finally {
    store.close();
  }
}

/**
 * After a resume: still one active lease with the same owner, capture and epoch (renewal, at most
 * once a minute, is the only thing allowed to move its version), one capture, a verifying chain.
 */
export function expectLeaseUnchanged(world: World, lease: LeaseJson): void {
  const after = statusOf(world);
  expect(after.leases).toHaveLength(1);
  const now = after.leases[0]!;
  expect(now).toMatchObject({ todo: lease.todo, owner: lease.owner, capture: lease.capture, epoch: lease.epoch, status: 'active' });
  expect(now.version - lease.version).toBeGreaterThanOrEqual(0);
  expect(now.version - lease.version).toBeLessThanOrEqual(1);
  expect(after.captures.filter((c) => c.todo === lease.todo)).toHaveLength(1);
  expect(verifyOf(world).ok).toBe(true);
}

/** Runs `turnkeeper hooks install --agent <agent>` with the given env; throws on failure. */
export function installHooksWithCli(world: World, agent: 'codex' | 'claude' | 'gemini', env: Record<string, string>): void {
  const run = world.cli(['hooks', 'install', '--agent', agent], { env });
  if (run.code !== 0) throw new Error(`hooks install --agent ${agent} failed (${run.code}): ${run.stdout}${run.stderr}`);
}

/** Ready-capture first line, as the contract fixes it (§2 "Context text"). */
export const READY_FIRST_LINE = /^Turnkeeper: Todo fix-login · capture (cap_[0-9a-f]{24}) · epoch 1$/m;

/** Counts the non-overlapping occurrences of `needle` in `haystack`. */
export function occurrences(haystack: string, needle: string): number {
  if (needle === '') return 0;
  let count = 0;
  for (let at = haystack.indexOf(needle); at >= 0; at = haystack.indexOf(needle, at + needle.length)) count++;
  return count;
}

/** `turnkeeper <args>` as a bounded child process (async: the mock model servers live in this process). */
export function turnkeeperRun(args: readonly string[], opts: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs?: number }): Promise<ProcResult> {
  return runProcess(process.execPath, [CLI, ...args], { cwd: opts.cwd, env: opts.env, timeoutMs: opts.timeoutMs ?? 120_000 });
}

/** `git worktree add <dir> -b <branch>` of `repo`: a linked worktree, one more checkout of the same repository. */
export function addWorktree(repo: string, dir: string, branch: string): string {
  execFileSync('git', ['-C', repo, 'worktree', 'add', '-q', dir, '-b', branch]);
  return realpathSync(dir);
}

/** Codex: the developer message placed right after the user message `prompt` (UserPromptSubmit context). */
export function contextAfterPrompt(req: RecordedRequest, prompt: string): string | undefined {
  const input = req.body?.input ?? [];
  const at = input.findLastIndex((i) => i.type === 'message' && i.role === 'user' && (i.content ?? []).some((c) => c.text === prompt));
  const next = input[at + 1];
  if (at < 0 || next?.type !== 'message' || next.role !== 'developer') return undefined;
  return (next.content ?? []).map((c) => c.text ?? '').join('');
}

/** Codex: every `<cwd>` its `<environment_context>` messages told the model, in order (the last is the turn's). */
export function codexCwds(req: RecordedRequest): string[] {
  return [...req.raw.matchAll(/<cwd>([^<]*)<\/cwd>/g)].map((match) => match[1]!);
}

/** Claude: the main-conversation request of a run, the first from `from` whose user messages name `prompt`. */
export function claudeTurnRequest(requests: readonly AnthropicRequest[], from: number, prompt: string): AnthropicRequest | undefined {
  return requests.slice(from).find((r) => (r.body?.messages ?? []).some((m) => m.role === 'user' && messageText(m).includes(prompt)));
}

/** Claude: everything the model sees in a request, system prompt and every message, as text. */
export function claudeVisibleText(req: AnthropicRequest): string {
  const system = req.body?.system;
  const systemText = typeof system === 'string' ? system : (system ?? []).map((b) => b.text ?? '').join('\n');
  return [systemText, ...(req.body?.messages ?? []).map(messageText)].join('\n');
}

/** Claude: the JSON result of `claude -p --output-format json` (its last stdout line), asserting the run succeeded. */
export function claudeResult(label: string, run: ProcResult): { session_id?: string; result?: string; is_error?: boolean } {
  expect(run.code, describeRun(label, run)).toBe(0);
  const json = JSON.parse(run.stdout.trim().split('\n').at(-1) ?? '') as { session_id?: string; result?: string; is_error?: boolean };
  expect(json.is_error, describeRun(label, run)).not.toBe(true);
  return json;
}

/** Claude: the text of the messages after the last user message naming `prompt` (where its UserPromptSubmit context lands). */
export function claudeAfterPrompt(req: AnthropicRequest, prompt: string): string {
  const messages = req.body?.messages ?? [];
  const at = messages.findLastIndex((m) => m.role === 'user' && messageText(m).includes(prompt));
  return messages
    .slice(at + 1)
    .map(messageText)
    .join('\n');
}

/**
 * Claude: the working directory it last gave the model (`Primary working directory: <dir>`; a session
 * resumed in another directory is told again, with `(was <old>)`).
 */
export function claudeWorkingDirectory(req: AnthropicRequest): string | undefined {
  return [...claudeVisibleText(req).matchAll(/Primary working directory: (\S+)/g)].at(-1)?.[1];
}

/**
 * A turn's own work is no drift (spec §7 "Resume"): waits until the capture's turn has recorded its
 * end (`turn_ended`, written by the agent's stop hook, a moment after its answer shows), then a
 * dry-run resume of the capture with no flag is accepted.
 */
export async function expectOwnTurnIsNoDrift(world: World, capture: string, agentBin: string): Promise<void> {
  let ended = false;
  for (const until = Date.now() + 30_000; !ended && Date.now() < until; await new Promise((resolve) => setTimeout(resolve, 200)))
    ended = (await receiptDocs(world)).some((doc) => doc.kind === 'turn_ended' && doc.capture === capture);
  expect(ended, 'the turn never recorded its end').toBe(true);
  const own = world.cli(['resume', capture, '--dry-run', '--json', '--agent-bin', agentBin]);
  expect(JSON.parse(own.stdout), own.stdout + own.stderr).toMatchObject({ ok: true, decision: 'dry_run' });
}
