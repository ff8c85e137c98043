// The launch plumbing resume and start share (spec §6-§7): the agent's executable, resolved once and
// attested; the agent's environment; the launch nonce; what a `launch_committed` receipt says about
// the process; and `runLaunch`, the one place a launch's typed refusals become guidance.
import { randomBytes } from 'node:crypto';
import { isAbsolute, resolve as resolvePath } from 'node:path';
import type { Agent } from '../core/ids';
import { binaryVariable, binarySetting, PROFILES } from '../agents/profiles/index';
import { renderGuidance, type GuidanceFacts, type ReasonCode } from '../core/reasons';
import type { Authority } from '../store/authority';
import type { Env } from '../store/location';
import { findExecutable } from '../agents/executables';
import { attest, type Attestation } from './attest';
import { launchAttested, type Barriers, type LaunchFacts, type LaunchRequest, type RunningLaunch } from './launch';
import { launchLiveness } from './liveness';
import { CommitRefused, LaunchRefused, launcherRefusal, type LaunchRefusal, type Refusal } from './refusals';
import { launchBackend } from './backends';

/** What resume and start take alike: where the agent comes from, how it runs, and the test seams. */
export interface LaunchOptions {
  readonly storePath: string;
  readonly env: Env;
  readonly agentBin?: string | undefined;
  readonly setting?: string | undefined;
  readonly mode: 'headless' | 'interactive';
  readonly stdio: 'pipe' | 'pty' | 'inherit';
  readonly prompt?: string | undefined;
  readonly extraArgs?: readonly string[];
  readonly allowLoaderVariables?: readonly string[];
  readonly cols?: number;
  readonly rows?: number;
  readonly signal?: AbortSignal;
  readonly barriers?: Barriers;
  readonly now?: () => number;
}

/** --agent-bin, else TURNKEEPER_<AGENT>_BIN, else the editor setting, else PATH's absolute entries (resolved once, here). */
export function resolveAgentBinary(
  agent: Agent,
  sources: { agentBin?: string | undefined; env: Env; setting?: string | undefined; cwd?: string },
): string | undefined {
  const named = sources.agentBin || sources.env[binaryVariable(agent)] || sources.setting;
  if (named) return isAbsolute(named) ? named : resolvePath(sources.cwd ?? process.cwd(), named);
  return findExecutable(sources.env, PROFILES[agent].launch.executable);
}

export type AgentAttestation = { readonly ok: true; readonly attestation: Attestation } | Refusal<LaunchRefusal>;

/** Resolves the agent's executable (once) and attests it; shared by resume and start. */
export async function attestAgent(agent: Agent, sources: { agentBin?: string | undefined; env: Env; setting?: string | undefined }): Promise<AgentAttestation> {
  // The platform first: where no backend exists, that is the answer (spec §6 "Platforms"), not a
  // missing executable the user could install to no avail.
  try {
    launchBackend().native();
  } catch (error) {
    if (error instanceof LaunchRefused) return launcherRefusal(error.reason, error.detail);
    throw error;
  }
  const binary = resolveAgentBinary(agent, sources);
  if (!binary)
    return launcherRefusal(
      'agent_not_found',
      `no ${agent} executable on the PATH: pass --agent-bin, set ${binaryVariable(agent)}, or set ${binarySetting(agent)} in the editor`,
      { agent },
    );
  try {
    // The closures directory (TURNKEEPER_HOME) and a script's runtime (PATH) come from the caller's environment.
    return { ok: true, attestation: await attest(binary, { env: sources.env }) };
  } catch (error) {
    if (error instanceof LaunchRefused) return launcherRefusal(error.reason, error.detail);
    throw error;
  }
}

/**
 * Turnkeeper's own launch variables. A caller's copies are never passed on: a resume or start run
 * from inside a launched agent's shell inherits that agent's, and a stale TURNKEEPER_TODO (or
 * CAPTURE, TURN, LAUNCH) would bind the new agent's hooks to the other launch.
 */
const LAUNCH_VARIABLES = ['TURNKEEPER_CAPTURE', 'TURNKEEPER_TODO', 'TURNKEEPER_TURN', 'TURNKEEPER_LAUNCH'] as const;

/** The agent's environment: the caller's set variables less Turnkeeper's launch variables, then this launch's over them. */
export function launchEnvironment(env: Env, variables: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) if (value !== undefined && !(LAUNCH_VARIABLES as readonly string[]).includes(name)) out[name] = value;
  return Object.assign(out, variables);
}

/** The launch nonce that ties an agent's hooks to its launch receipt (spec §2 rule 3). */
export const newLaunchId = (): string => `launch_${randomBytes(8).toString('hex')}`;

/** A launch that ran, or why not (a launcher refusal, or the commit's own re-check), as guidance. */
export type LaunchOutcome<R extends ReasonCode> =
  { readonly ok: true; readonly launch: RunningLaunch; readonly attestation: Omit<Attestation, 'fd'> } | Refusal<R | LaunchRefusal>;

/**
 * Runs `launchAttested` with the caller's stdio, terminal size, allowed loader variables and test
 * seams, and maps its refusals: a launcher refusal to its guidance, a `CommitRefused` (the commit's
 * transaction refused and recorded why) to the reason's guidance over `facts`.
 */
export async function runLaunch<R extends ReasonCode>(
  options: LaunchOptions,
  launchOf: Pick<LaunchRequest, 'attestation' | 'args' | 'cwd' | 'env' | 'commit' | 'recordRefusal'>,
  facts: GuidanceFacts,
): Promise<LaunchOutcome<R>> {
  const request: LaunchRequest = {
    ...launchOf,
    stdio: options.stdio,
    cols: options.cols,
    rows: options.rows,
    allowLoaderVariables: options.allowLoaderVariables,
    signal: options.signal,
    barriers: options.barriers,
  };
  try {
    const launch = await launchAttested(request);
    const { fd: _fd, ...attestation } = request.attestation;
    void _fd;
    return { ok: true, launch, attestation };
  } catch (error) {
    if (error instanceof LaunchRefused) return launcherRefusal(error.reason, error.detail, facts);
    if (error instanceof CommitRefused) {
      const reason = error.reason as R;
      const all: GuidanceFacts = { ...facts, ...error.facts };
      return { ok: false, reason, guidance: `${renderGuidance(reason, all)}\n${error.detail}`, facts: all };
    }
    throw error;
  }
}

/** What a `launch_committed` receipt says about the process, shared by resume and start (docs/launcher.md "What the receipt says"). */
export function launchDetail(agent: Agent, facts: LaunchFacts, loader: Attestation['interpreter']): Record<string, string | number | boolean | null> {
  return {
    loader: loader ? `${loader.path} ${loader.digest}` : null,
    agent,
    pid: facts.pid,
    // Who can tell later whether this launch still runs (one live launch per capture).
    ...launchLiveness(facts.pidStart),
    digest: facts.digest,
    dev: facts.identity.dev,
    ino: facts.identity.ino,
    argvDigest: facts.argvDigest,
    envDigest: facts.envDigest,
    cwd: facts.cwd,
    loaderEnvironment: facts.loaderEnvironment,
    // A script shape ran from its attested closure: `digest` above is the runtime's, this is the snapshot's.
    ...(facts.closure ? { closure: facts.closure.digest, entry: facts.closure.entry } : {}),
  };
}

/** Appends a refusal receipt when the store takes it: a refusal stands either way. */
export async function recordQuietly(store: Authority, fields: Parameters<Authority['appendReceipt']>[0], now: number, todo: string | undefined): Promise<void> {
  try {
    await store.appendReceipt({ ...fields, ...(todo ? { todo } : {}) }, now);
  } catch {
    // A refusal stands whether or not the store could record it.
  }
}
