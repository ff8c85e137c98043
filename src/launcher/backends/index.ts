// The one place a launch backend is chosen (docs/launcher.md §6): Linux x64 has one (ptrace-parked
// execveat, /proc checks, ELF entry shapes); every other platform and architecture gets the backend
// that refuses `unsupported_platform`. A macOS or Windows backend is one new file here plus one in native/src.
import type { RunningProcess } from '../../agents/profiles/index';
import type { Attestation } from '../attest';
import type { EntryShape } from '../elf';
import { LAUNCH_BACKENDS, type NativeLauncher, type NativeStat } from '../native';
import { linuxBackend } from './linux';
import { unsupportedBackend } from './unsupported';

export interface LaunchBackend {
  readonly name: 'linux' | 'unsupported';
  /** The addon, loaded on first use; refuses `unsupported_platform` or `native_backend_unavailable`. */
  native(): NativeLauncher;
  /** What kind of program the retained descriptor holds (read through the descriptor, never the path). */
  entryShape(fd: number, size: number): EntryShape;
  /**
   * At the exec boundary: the suspended child's image is the attested object, checked as it parked
   * (`parkedExe`) and again now. Returns why not, or undefined.
   */
  imageMismatch(pid: number, attestation: Pick<Attestation, 'identity'>, parkedExe: NativeStat | undefined): string | undefined;
  /** At the exec boundary: the dynamic loader the kernel mapped is the attested one. */
  loaderMismatch(pid: number, loader: NonNullable<Attestation['interpreter']>): string | undefined;
  /** The process's start time (ticks since boot), or undefined when it is gone or a zombie. */
  processStart(pid: number): string | undefined;
  /** This boot of this machine, or null where it cannot be read. */
  currentBoot(): string | null;
  /** This machine's identity (Linux: /etc/machine-id), or null where it cannot be read. */
  machineId(): string | null;
  /** The processes of this machine, with their command lines (doctor's search for an agent's shared daemon); none where they cannot be listed. */
  processes(): RunningProcess[];
}

/** The one platform gate (spec §6 "Platforms"): a `<platform>-<arch>` of LAUNCH_BACKENDS gets its backend, every other the refusing one. */
export function launchBackend(): LaunchBackend {
  // Every entry of LAUNCH_BACKENDS is a Linux one today; a macOS or Windows entry comes with its backend here.
  return LAUNCH_BACKENDS.includes(`${process.platform}-${process.arch}`) ? linuxBackend : unsupportedBackend;
}
