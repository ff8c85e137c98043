// Typed facade over the Node-API addon (native/src/addon.cc with the platform's backend, e.g.
// linux_spawn.cc). It is loaded lazily through node-gyp-build from the prebuild shipped beside the
// bundle (or from native/ in a checkout); a missing or broken addon becomes
// `native_backend_unavailable`, never a pathname fallback. Whether this platform has a backend at all
// is decided once, by launchBackend() (src/launcher/backends/index.ts): only then is this loader
// reached (spec §6 "Platforms").
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { LaunchRefused } from './refusals';

export interface NativeStat {
  readonly dev: string;
  readonly ino: string;
  readonly size: number;
  readonly mode: number;
  readonly nlink: number;
  readonly uid: number;
  readonly mtimeNs: string;
  readonly ctimeNs: string;
}

type OpenResult =
  | { ok: true; fd: number; chain: { path: string; target?: string }[]; resolved: string; stat: NativeStat }
  | { ok: false; reason: 'resolution_changed' | 'unsupported_entrypoint'; detail: string };

export type NativeEvent =
  | { type: 'parked'; pid: number; exe?: NativeStat }
  | { type: 'running'; pid: number }
  | { type: 'exit'; pid: number; code: number | null; signal: number | null }
  | { type: 'refused'; pid: number; reason: string; detail: string };

interface SpawnOptions {
  readonly fd: number;
  readonly argv: readonly string[];
  readonly env: readonly string[];
  readonly cwd: string;
  readonly stdio: 'pipe' | 'pty' | 'inherit';
  readonly cols: number;
  readonly rows: number;
  readonly timeoutMs: number;
}

export interface NativeLauncher {
  openExecutable(path: string): OpenResult;
  fstatFd(fd: number): NativeStat | null;
  statPath(path: string): NativeStat | null;
  closeFd(fd: number): boolean;
  /** SO_PEERCRED of a connected Unix socket: the uid the kernel recorded for its peer; null when the platform cannot say. */
  peerUid(fd: number): number | null;
  spawnParked(options: SpawnOptions, onEvent: (event: NativeEvent) => void): { id: number; stdin?: number; stdout?: number; stderr?: number; pty?: number };
  decide(id: number, what: 'hold' | 'detach' | 'kill', reason?: string): boolean;
  resizePty(fd: number, cols: number, rows: number): boolean;
}

let loaded: NativeLauncher | undefined;

/** Where the prebuilds live: beside the bundle when packaged, native/ in a checkout. */
function addonRoots(): string[] {
  return [__dirname, join(__dirname, 'native'), join(__dirname, '..', 'native'), join(__dirname, '..', '..', 'native')];
}

/** The addon, loaded once; only a backend launchBackend() chose calls this. */
export function nativeLauncher(): NativeLauncher {
  if (loaded) return loaded;
  const root = addonRoots().find((dir) => existsSync(join(dir, 'prebuilds')));
  const where = `${process.platform}-${process.arch}, Node ${process.versions.node}, napi ${process.versions.napi ?? '?'}${process.versions.electron ? `, Electron ${process.versions.electron}` : ''}`;
  if (!root) throw new LaunchRefused('native_backend_unavailable', `no launcher prebuild found for ${where} (looked in ${addonRoots().join(', ')})`);
  try {
    // Lazy on purpose: only a launch needs the addon, and an import would load it with every command.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const load = require('node-gyp-build') as (dir: string) => NativeLauncher;
    loaded = load(root);
    return loaded;
  } catch (error) {
    throw new LaunchRefused('native_backend_unavailable', `the launcher addon does not load on ${where}: ${(error as Error).message}`);
  }
}
