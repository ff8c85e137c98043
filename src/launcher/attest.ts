// Attestation (spec §6): resolve the path once, keep the opened descriptor as the authority for
// everything after, record the object's identity, hash its bytes, and classify its entry shape.
// Hashing reads the retained descriptor from JavaScript (Node's own SHA-256), so the addon needs no
// crypto library of its own and loads unchanged in Electron.
import { existsSync, readSync, realpathSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { findExecutable } from '../agents/executables';
import type { Env } from '../store/location';
import { closureEntryPath, closureOf, type Closure } from './closure';
import { closureGuard } from './closureGuard';
import { installedPackageOf, PROFILES } from '../agents/profiles';
import { launchBackend } from './backends';
import { digestOfDescriptor } from './digest';
import { identityKey, identityOf, isRacy, sameIdentity, type Identity } from './identity';
import { LaunchRefused } from './refusals';

export type { Identity } from './identity';
export { identityOf, sameIdentity } from './identity';

export interface Attestation {
  /** The path the caller named, and every symlink hop from it. */
  readonly path: string;
  readonly chain: readonly { path: string; target?: string }[];
  readonly resolved: string;
  /** The path whose resolution must still lead to the same object at launch (the binary behind a shim). */
  readonly launchPath: string;
  /** The retained authority: the descriptor opened at attestation. Launch execs exactly this. */
  readonly fd: number;
  readonly identity: Identity;
  readonly digest: string;
  /** The backend's name for the executable's format (`elf-static`, `elf-dynamic` on Linux). */
  readonly entrypoint: string;
  readonly interpreter?: { readonly path: string; readonly identity: Identity; readonly digest: string } | undefined;
  /** Environment the program expects from its usual launcher (an npm shim's variables, from the agent's profile). */
  readonly environment: Readonly<Record<string, string>>;
  /** Prefixes of variables that launcher clears before setting `environment` (none unless a shim does). */
  readonly clearedPrefixes?: readonly string[] | undefined;
  /** Arguments between argv[0] and the caller's (a closure's runtime flags and its script inside the snapshot). */
  readonly arguments?: readonly string[] | undefined;
  /** For a script shape: the attested closure the runtime (this attestation's executable) runs. */
  readonly closure?: Closure | undefined;
  /** True when the digest came from the identity cache instead of a fresh read of the bytes. */
  readonly cached: boolean;
  /**
   * The file changed less than RACY_WINDOW_MS before it was hashed: a same-size write in the same
   * timestamp tick would leave its identity unchanged (git's "racy" case), so the launch re-hashes
   * the parked image instead of trusting identity alone, and the digest is not cached.
   */
  readonly racy: boolean;
}

export { RACY_WINDOW_MS } from './identity';

interface CachedObject {
  readonly digest: string;
  readonly entrypoint: string;
  readonly interpreterPath?: string | undefined;
}
/** Digests by identity: a second launch of an unchanged 300 MB binary does not rehash it. */
const attestationCache = new Map<string, CachedObject>();
/** For the benchmark's memory row (bench/launcher.mjs): entries held, and a cold start. */
export const attestationCacheSize = (): number => attestationCache.size;
export const clearAttestationCache = (): void => attestationCache.clear();

/**
 * Node's single-executable fuse as postject flips it: every Node binary carries the sentinel with
 * `:0`, a single-executable application (SEA) with `:1`. An SEA is a loader in front of the runtime
 * inside it, and the agents shipped that way (`unpacking-loader` in their profiles) load their
 * JavaScript and native modules from a user-writable cache directory, not from their own file:
 * unproven, so refused (docs/launcher.md §9).
 */
const SEA_FUSE = Buffer.from('NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2:1', 'latin1');

/** ` (Copilot CLI)`: the agents known to ship as an unpacking loader, for the refusal's reader. */
const unpackingLoaders = (): string => {
  const names = Object.values(PROFILES)
    .filter((profile) => profile.launch.shape.kind === 'unpacking-loader')
    .map((profile) => profile.displayName);
  return names.length === 0 ? '' : ` (${names.join(', ')})`;
};

/** Finds a byte string across the chunks of one pass over a file. */
function chunkSearch(needle: Buffer): { onChunk: (chunk: Buffer) => void; found: () => boolean } {
  let tail = Buffer.alloc(0);
  let found = false;
  return {
    onChunk: (chunk) => {
      if (found) return;
      found = chunk.indexOf(needle) >= 0 || Buffer.concat([tail, chunk.subarray(0, needle.length - 1)]).indexOf(needle) >= 0;
      tail = Buffer.from(chunk.subarray(Math.max(0, chunk.length - needle.length + 1)));
    },
    found: () => found,
  };
}

/**
 * An agent's npm shim (a Node script that only execs its platform's native binary with a few
 * variables set; the profile names where that binary is): scripts are never launched, so the shim is
 * replaced by that binary and the variables it would have set.
 */
function shimTarget(
  installed: ReturnType<typeof installedPackageOf>,
): { binary: string; environment: Readonly<Record<string, string>>; clearedPrefixes: readonly string[] } | undefined {
  const target = installed?.profile.launch.shape.shimTarget;
  if (!installed || !target) return undefined;
  const packageRoot = realpathSync(installed.packageRoot);
  const { candidates, environment, clearedPrefixes } = target(packageRoot, launchBackend().packagePlatform());
  const binary = candidates.map((candidate) => join(packageRoot, candidate)).find((candidate) => existsSync(candidate));
  return binary ? { binary, environment, clearedPrefixes } : undefined;
}

export interface AttestOptions {
  /** Where closures live (TURNKEEPER_HOME) and how a script's runtime is found (PATH, TURNKEEPER_NODE_BIN). */
  readonly env?: Env;
}

/**
 * The runtime a closure's script names: `#!/usr/bin/env node` is looked up on PATH once, here
 * (its absolute entries, an executable regular file; TURNKEEPER_NODE_BIN overrides); an absolute
 * `#!/…/node` is taken as it is. Anything else refuses.
 */
export function scriptRuntime(fd: number, script: string, env: Env): string {
  const override = env.TURNKEEPER_NODE_BIN;
  if (override) return override;
  const head = Buffer.alloc(256);
  const line =
    head
      .subarray(0, readSync(fd, head, 0, head.length, 0))
      .toString('latin1')
      .split('\n')[0] ?? '';
  const words = line.startsWith('#!') ? line.slice(2).trim().split(/\s+/) : [];
  const program = words[0] === '/usr/bin/env' || words[0] === '/bin/env' ? words[1] : words[0];
  if (!program || words.length > (program === words[0] ? 1 : 2) || !/^(.*\/)?(node|nodejs)$/.test(program)) {
    throw new LaunchRefused('unsupported_entrypoint', `${script} does not start with a plain Node interpreter line (${JSON.stringify(line.slice(0, 80))})`);
  }
  if (isAbsolute(program)) return program;
  const found = findExecutable(env, program);
  if (found) return found;
  throw new LaunchRefused('unsupported_entrypoint', `${script} runs ${program}, which is not on PATH (set TURNKEEPER_NODE_BIN)`);
}

export async function attest(path: string, options: AttestOptions = {}): Promise<Attestation> {
  const env = options.env ?? process.env;
  const backend = launchBackend();
  // Refuses unsupported_platform where launchBackend() chose no backend (spec §6 "Platforms").
  const native = backend.native();
  const opened = native.openExecutable(path);
  if (!opened.ok) throw new LaunchRefused(opened.reason, opened.detail);
  let keep = false;
  try {
    const installed = installedPackageOf(opened.resolved);
    const shim = shimTarget(installed);
    if (shim) {
      const inner = await attest(shim.binary, options);
      return {
        ...inner,
        path,
        chain: [...opened.chain, ...inner.chain],
        environment: { ...inner.environment, ...shim.environment },
        clearedPrefixes: shim.clearedPrefixes,
      };
    }
    // A proven script shape (an agent installed as a Node script, `node-script` in its profile): the
    // runtime is attested like any executable, and the package is closed over into a snapshot it runs
    // from; the installed script itself never runs.
    if (installed?.profile.launch.shape.kind === 'node-script') {
      const runtime = await attest(scriptRuntime(opened.fd, opened.resolved, env), options);
      try {
        const closure = closureOf(installed.packageRoot, installed.profile.launch.shape.closureEntry ?? installed.bin, env);
        return {
          ...runtime,
          path,
          chain: [...opened.chain, ...runtime.chain],
          environment: { ...runtime.environment, ...installed.profile.launch.shape.closureEnvironment },
          arguments: ['--import', closureGuard(closure), closureEntryPath(closure)],
          closure,
        };
      } catch (error) {
        native.closeFd(runtime.fd);
        throw error;
      }
    }
    const identity = identityOf(opened.stat);
    if ((identity.mode & 0o022) !== 0) {
      throw new LaunchRefused('mutable_executable', `${opened.resolved} is writable by group or others (mode ${(identity.mode & 0o7777).toString(8)})`);
    }
    const cached = attestationCache.get(identityKey(identity));
    let object: CachedObject;
    let racy = false;
    if (cached) {
      object = cached;
    } else {
      const shape = backend.entryShape(opened.fd, identity.size);
      if (shape.kind !== 'native') {
        throw new LaunchRefused(
          'unsupported_entrypoint',
          `${opened.resolved} is ${shape.kind === 'script' ? `a script (#!${shape.interpreter})` : 'not a native executable'}`,
        );
      }
      const sea = chunkSearch(SEA_FUSE);
      const digest = await digestOfDescriptor(opened.fd, identity.size, sea.onChunk);
      if (sea.found()) {
        throw new LaunchRefused(
          'unsupported_entrypoint',
          `${opened.resolved} is a Node single-executable application: it runs JavaScript and native modules it unpacks into a cache directory, which Turnkeeper cannot attest yet${unpackingLoaders()}`,
        );
      }
      // A writer during hashing changes ctime: then the digest is of no single version of the file.
      const after = native.fstatFd(opened.fd);
      if (!after || !sameIdentity(identity, identityOf(after))) throw new LaunchRefused('object_changed', `${opened.resolved} changed while it was hashed`);
      object = { digest, entrypoint: shape.entrypoint, interpreterPath: shape.interpreter };
      racy = isRacy(identity.ctimeNs);
      if (!racy) attestationCache.set(identityKey(identity), object);
    }
    let interpreter: Attestation['interpreter'];
    if (object.interpreterPath) {
      const loader = await attest(object.interpreterPath, options);
      native.closeFd(loader.fd);
      interpreter = { path: object.interpreterPath, identity: loader.identity, digest: loader.digest };
    }
    keep = true;
    return {
      path,
      chain: opened.chain,
      resolved: opened.resolved,
      launchPath: path,
      fd: opened.fd,
      identity,
      digest: object.digest,
      entrypoint: object.entrypoint,
      interpreter,
      environment: {},
      cached: cached !== undefined,
      racy,
    };
  } finally {
    if (!keep) native.closeFd(opened.fd);
  }
}

/** Closes the retained descriptor of an attestation that will not be launched. */
export function releaseAttestation(attestation: Attestation): void {
  launchBackend().native().closeFd(attestation.fd);
}
