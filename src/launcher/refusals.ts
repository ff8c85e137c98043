// The closed set of launcher refusals (spec §6). Callers render guidance; nothing retries
// through a pathname.
import { PROFILES, type AgentProfile } from '../agents/profiles';
import type { GuidanceFacts } from '../core/reasons';

export const LAUNCH_REFUSALS = [
  'unsupported_platform',
  /** No executable of the agent where Turnkeeper looks (--agent-bin, TURNKEEPER_<AGENT>_BIN, the editor setting, PATH). */
  'agent_not_found',
  'unsupported_entrypoint',
  'resolution_changed',
  'object_changed',
  'mutable_executable',
  'loader_environment_rejected',
  'receipt_failed',
  'launch_verification_failed',
  'launch_timeout',
  'native_backend_unavailable',
] as const;
export type LaunchRefusal = (typeof LAUNCH_REFUSALS)[number];

export class LaunchRefused extends Error {
  constructor(
    readonly reason: LaunchRefusal,
    readonly detail: string,
  ) {
    super(`launch refused [${reason}]: ${detail}`);
    this.name = 'LaunchRefused';
  }
}

/**
 * The commit of a launch refused it: the capture's lease moved, was released, or another launch of
 * the capture is alive (spec §6, "exclusivity and freshness"). These are resume reasons, not
 * launcher refusals: the commit already recorded `launch_refused`, `launchAttested` kills the parked
 * child and rethrows this as it is, and the caller renders its own guidance.
 */
export class CommitRefused extends Error {
  constructor(
    readonly reason: string,
    readonly detail: string,
    readonly facts: GuidanceFacts = {},
  ) {
    super(`launch refused at commit [${reason}]: ${detail}`);
    this.name = 'CommitRefused';
  }
}

/** The agents whose profiles say npm installs them this way, by name: `Gemini CLI`. */
const agentsShipped = (kind: AgentProfile['launch']['shape']['kind']): string =>
  Object.values(PROFILES)
    .filter((profile) => profile.launch.shape.kind === kind)
    .map((profile) => profile.displayName)
    .join(', ');

/** What each refusal means to a user, and what to do about it. */
const REFUSAL_GUIDANCE: Readonly<Record<LaunchRefusal, string>> = {
  unsupported_platform: 'This platform has no launch backend yet (the refusal names the platforms that have one); nothing was started.',
  agent_not_found:
    'No executable of the agent was found. Turnkeeper looks at --agent-bin, then TURNKEEPER_<AGENT>_BIN, then the editor setting turnkeeper.agents.<agent>.path, then the PATH it runs with (an editor started from a desktop launcher often has a shorter PATH than your shell): install the agent, or name its path in one of those.',
  unsupported_entrypoint: `The executable is not a program Turnkeeper can attest: a native executable, or a proven script shape run from its attested closure (${agentsShipped('node-script')}). Other scripts are refused: point --agent-bin at the native binary. Loaders that unpack a runtime (${agentsShipped('unpacking-loader')}) cannot be launched yet: run the agent yourself, and its hooks still claim, fence and record (docs/launcher.md §9).`,
  resolution_changed:
    'The path of the executable resolved to something else between attestation and launch; run the command again and check who is changing it.',
  object_changed: 'The attested file changed (size, times or identity) before it ran; reinstall or re-attest the agent.',
  mutable_executable: 'The executable is writable by someone other than its owner; fix its permissions (chmod go-w).',
  loader_environment_rejected:
    'The environment sets code-injection variables of the loader or of a runtime (LD_PRELOAD, NODE_OPTIONS, BUN_OPTIONS, PYTHONPATH, …); unset them, or allow each by name with --allow-loader-env NAME.',
  receipt_failed: 'The launch receipt could not be committed, so the agent was killed before its first instruction; run turnkeeper doctor.',
  launch_verification_failed:
    'The parked process could not be verified as the attested executable (or the launch backend could not trace it: docs/launcher.md §2); the agent never ran.',
  launch_timeout: 'The launch was not committed in time; the parked agent was killed before its first instruction.',
  native_backend_unavailable: 'The native launcher addon could not be loaded; reinstall Turnkeeper for this platform.',
};

/**
 * A refusal, in the one form every step from the launcher to the editor carries it (resume's and
 * start's checks, the attestation, the launch and the commit's re-check, the CLI and the editor's
 * terminal): the code, the guidance a person reads, rendered once, and the facts it was rendered
 * from (what an action such as "Open Setting" or the CLI's --json needs).
 */
export interface Refusal<R extends string = string> {
  readonly ok: false;
  readonly reason: R;
  readonly guidance: string;
  readonly facts: GuidanceFacts;
}

/** A launcher refusal as a Refusal: its guidance, then what exactly happened (`detail`, also in the facts). */
export const launcherRefusal = (reason: LaunchRefusal, detail: string, facts: GuidanceFacts = {}): Refusal<LaunchRefusal> => ({
  ok: false,
  reason,
  guidance: `Turnkeeper [${reason}]: ${REFUSAL_GUIDANCE[reason]}\n${detail}`,
  facts: { ...facts, detail },
});
