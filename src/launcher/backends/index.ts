// The one place a launch backend is chosen (docs/launcher.md §6): Linux x64 has one (ptrace-parked
// execveat, /proc checks, ELF entry shapes); every other platform and architecture gets the backend
// that refuses `unsupported_platform`. A macOS or Windows backend is one new file here plus one in native/src.
import type { Attestation } from '../attest';
import type { PackagePlatform, RunningProcess } from '../../agents/profiles';
import type { NativeLauncher, NativeStat } from '../native';
import { linuxBackend } from './linux';
import { unsupportedBackend } from './unsupported';

/**
 * What a retained descriptor holds, as the backend classifies it: `native` a program the platform's
 * loader runs (`entrypoint` names its format for a person, `elf-static`; `interpreter` the dynamic
 * loader it needs, attested too), `script` one that names an interpreter (`#!`), else `unknown`.
 */
export type EntryShape =
  | { readonly kind: 'native'; readonly entrypoint: string; readonly interpreter?: string | undefined }
  | { readonly kind: 'script'; readonly interpreter: string }
  | { readonly kind: 'unknown' };

export interface LaunchBackend {
  /** `linux`, or `unsupported` for every platform without one. */
  readonly name: string;
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
  /** Whether the process is stopped (SIGSTOP, or held by a tracer); undefined where that cannot be read. */
  processStopped(pid: number): boolean | undefined;
  /** This boot of this machine, or null where it cannot be read. */
  currentBoot(): string | null;
  /** This machine's identity (Linux: /etc/machine-id), or null where it cannot be read. */
  machineId(): string | null;
  /**
   * The processes of this machine, with their command lines (and, on demand, environments), or
   * undefined where the platform cannot list them: doctor's search for an agent's shared daemon, and
   * closure prune, which then treats every snapshot as maybe in use.
   */
  processes(): RunningProcess[] | undefined;
  /** How npm packages name this platform (an agent's profile finds its vendored native binary by it). */
  packagePlatform(): PackagePlatform;
}

/**
 * Where a launch backend exists and its addon ships (`<platform>-<arch>`): the one platform gate.
 * The per-platform .vsix files of other platforms carry no launcher addon (scripts/package-vsix.mjs).
 */
const BACKENDS: Readonly<Record<string, LaunchBackend>> = { 'linux-x64': linuxBackend };

/** The `<platform>-<arch>` keys of BACKENDS (tests, packaging). */
export const LAUNCH_BACKENDS: readonly string[] = Object.keys(BACKENDS);

/** The one platform gate (spec §6 "Platforms"): this platform's backend, or the one that refuses `unsupported_platform`. */
export function launchBackend(): LaunchBackend {
  return BACKENDS[`${process.platform}-${process.arch}`] ?? unsupportedBackend;
}

/** Whether this platform has a launch backend (and so an addon to load). */
export const hasLaunchBackend = (): boolean => launchBackend() !== unsupportedBackend;
