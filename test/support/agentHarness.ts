import { expect } from 'vitest';
// Shared helpers for the end-to-end tests that drive the real agent binaries (Codex, Claude Code,
// Gemini CLI) with Turnkeeper's real hooks installed: bounded child processes (own process group,
// killed on timeout and on teardown), hermetic environments and small JSON helpers.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { World } from './world';

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
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
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

export interface LeaseJson {
  goal: string;
  todo: string;
  owner: string;
  capture: string;
  epoch: number;
  version: number;
  status: string;
  expiresAt: string;
}
export interface CaptureJson {
  id: string;
  goal: string;
  todo: string;
  agent: string;
  session: string;
  turn: string | null;
  state: string;
  originalDigest: string;
  readyDigest: string | null;
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
