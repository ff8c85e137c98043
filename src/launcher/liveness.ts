// Is an earlier launch of a capture still running? (spec §6: at most one live launch per
// capture.) A launch receipt names its process by host, boot, pid and the pid's start time, so a
// pid the kernel handed to another process since, or a machine that rebooted, is not mistaken for
// the agent. The store asks this inside the transaction that commits the next launch.
import { hostname } from 'node:os';
import type { RunningProcess } from '../agents/profiles/index';
import type { PreviousLaunch } from '../store/authority';
import { launchBackend } from './backends';

/** The process's start time (Linux: field 22 of /proc/<pid>/stat), or undefined when the pid is gone or a zombie. */
const processStart = (pid: number): string | undefined => launchBackend().processStart(pid);

/** This boot of this kernel (changes on every reboot), or null where it cannot be read. */
const currentBoot = (): string | null => launchBackend().currentBoot();

/** This machine, as liveness compares it: its machine id, else its host name. */
const currentMachine = (): string => launchBackend().machineId() ?? hostname();

/** What a `launch_committed` receipt records so that a later resume can tell whether it still runs. */
export function launchLiveness(pidStart: string | null): { host: string; machine: string; boot: string | null; pidStart: string | null } {
  return { host: hostname(), machine: currentMachine(), boot: currentBoot(), pidStart };
}

/**
 * The rule (docs/launcher.md "One live launch per capture"):
 * - another machine: live. Its processes cannot be seen from here; resume it on that machine, where
 *   the check can be made, or release the Todo if that machine is gone for good. A machine is this
 *   one only when both its machine id and its host name are this machine's: cloned VMs share a host
 *   name, and containers of one image can share a baked-in machine id. (A receipt written before the
 *   machine id was recorded is compared by host name.) When in doubt, live: the safe side.
 * - this machine, another boot: dead (a reboot ended every process).
 * - this machine and boot: live while the pid exists, is not a zombie, and has the recorded start time.
 * - a receipt without host or start time (written before this rule): not live. It cannot be told
 *   from a recycled pid, and a record that can never expire must not block the capture forever.
 */
export function isLaunchLive(previous: PreviousLaunch): boolean {
  if (previous.pid === null || previous.host === null || previous.pidStart === null) return false;
  if (previous.host !== hostname() || (previous.machine !== null && previous.machine !== currentMachine())) return true;
  const boot = currentBoot();
  if (previous.boot !== null && boot !== null && previous.boot !== boot) return false;
  return processStart(previous.pid) === previous.pidStart;
}

/**
 * What doctor says of a launch whose agent fired no hook: its process still runs here, has exited,
 * or cannot be told (another machine, or a receipt written before the process facts were recorded).
 */
export function launchProcessState(previous: PreviousLaunch): 'running' | 'exited' | 'unknown' {
  if (previous.pid === null || previous.host === null || previous.pidStart === null) return 'unknown';
  if (previous.host !== hostname() || (previous.machine !== null && previous.machine !== currentMachine())) return 'unknown';
  return isLaunchLive(previous) ? 'running' : 'exited';
}

/** This machine's processes, for doctor's search for an agent's shared daemon (the backend's /proc scan; none where it has none). */
export const runningProcesses = (): RunningProcess[] => launchBackend().processes() ?? [];
