// Attestation (contract §6): resolve the path once, keep the opened descriptor as the authority for
// everything after, record the object's identity, hash its bytes, and classify its entry shape.
// Hashing reads the retained descriptor from JavaScript (Node's own SHA-256), so the addon needs no
// crypto library of its own and loads unchanged in Electron.
import { createHash } from 'node:crypto';
import { existsSync, readSync, realpathSync, read as readCallback } from 'node:fs';
import { dirname, join, sep } from 'node:path';
import { promisify } from 'node:util';
import { entryShape } from './elf';
import { nativeLauncher, type NativeStat } from './native';
import { LaunchRefused } from './refusals';

const readAt = promisify(readCallback);

export interface Identity {
  readonly dev: string;
  readonly ino: string;
  readonly size: number;
  readonly mode: number;
  readonly mtimeNs: string;
  readonly ctimeNs: string;
}

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
  readonly entrypoint: 'elf-static' | 'elf-dynamic';
  readonly interpreter?: { readonly path: string; readonly identity: Identity; readonly digest: string } | undefined;
  /** Environment the program expects from its usual launcher (the npm Codex shim's variables). */
  readonly environment: Readonly<Record<string, string>>;
  /** True when the digest came from the identity cache instead of a fresh read of the bytes. */
  readonly cached: boolean;
  /**
   * The file changed less than RACY_WINDOW_MS before it was hashed: a same-size write in the same
   * timestamp tick would leave its identity unchanged (git's "racy" case), so the launch re-hashes
   * the parked image instead of trusting identity alone, and the digest is not cached.
   */
  readonly racy: boolean;
}

export const RACY_WINDOW_MS = 2000;

export const identityOf = (stat: NativeStat): Identity => ({
  dev: stat.dev,
  ino: stat.ino,
  size: stat.size,
  mode: stat.mode,
  mtimeNs: stat.mtimeNs,
  ctimeNs: stat.ctimeNs,
});

/** Same object, unchanged: identity plus size and both times (ctime cannot be set back by a user). */
export const sameIdentity = (a: Identity, b: Identity): boolean =>
  a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs && a.mode === b.mode;

const identityKey = (identity: Identity): string => `${identity.dev}:${identity.ino}:${identity.size}:${identity.mtimeNs}:${identity.ctimeNs}:${identity.mode}`;

interface CachedObject {
  readonly digest: string;
  readonly entrypoint: 'elf-static' | 'elf-dynamic';
  readonly interpreterPath?: string | undefined;
}
/** Digests by identity: a second launch of an unchanged 300 MB binary does not rehash it. */
const attestationCache = new Map<string, CachedObject>();
export const attestationCacheSize = (): number => attestationCache.size;
export const clearAttestationCache = (): void => attestationCache.clear();

const HASH_CHUNK = 4 * 1024 * 1024;

export async function digestOfDescriptor(fd: number, size: number): Promise<string> {
  const hash = createHash('sha256');
  const buffer = Buffer.allocUnsafe(HASH_CHUNK);
  for (let offset = 0; offset < size; ) {
    const { bytesRead } = await readAt(fd, buffer, 0, Math.min(HASH_CHUNK, size - offset), offset);
    if (bytesRead === 0) throw new LaunchRefused('object_changed', 'the file became shorter while it was hashed');
    hash.update(buffer.subarray(0, bytesRead));
    offset += bytesRead;
  }
  return 'sha256:' + hash.digest('hex');
}

/**
 * The npm package @openai/codex installs a Node shim (bin/codex.js) that only execs its platform's
 * native binary with two variables set. Scripts are never launched, so the shim is replaced by that
 * binary and the variables it would have set.
 */
export function codexShimTarget(resolved: string): { binary: string; environment: Record<string, string> } | undefined {
  if (!resolved.endsWith(`${sep}@openai${sep}codex${sep}bin${sep}codex.js`)) return undefined;
  const packageRoot = realpathSync(dirname(dirname(resolved)));
  const triples: Readonly<Record<string, string>> = { 'linux-x64': 'x86_64-unknown-linux-musl', 'linux-arm64': 'aarch64-unknown-linux-musl' };
  const triple = triples[`${process.platform}-${process.arch}`];
  if (!triple) return undefined;
  const platformPackage = `codex-${process.platform}-${process.arch}`;
  const candidates = [
    join(dirname(packageRoot), platformPackage, 'vendor', triple, 'bin', 'codex'),
    join(packageRoot, 'node_modules', '@openai', platformPackage, 'vendor', triple, 'bin', 'codex'),
    join(packageRoot, 'vendor', triple, 'bin', 'codex'),
  ];
  const binary = candidates.find((candidate) => existsSync(candidate));
  return binary ? { binary, environment: { CODEX_MANAGED_PACKAGE_ROOT: packageRoot, CODEX_MANAGED_BY_NPM: '1' } } : undefined;
}

export async function attest(path: string): Promise<Attestation> {
  const native = nativeLauncher();
  if (!native.platformSupported) throw new LaunchRefused('unsupported_platform', `${process.platform}-${process.arch} has no launch backend yet`);
  const opened = native.openExecutable(path);
  if (!opened.ok) throw new LaunchRefused(opened.reason, opened.detail);
  let keep = false;
  try {
    const shim = codexShimTarget(opened.resolved);
    if (shim) {
      const inner = await attest(shim.binary);
      return { ...inner, path, chain: [...opened.chain, ...inner.chain], environment: { ...inner.environment, ...shim.environment } };
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
      const head = Buffer.alloc(Math.min(65536, identity.size));
      readSync(opened.fd, head, 0, head.length, 0);
      const shape = entryShape(head, (offset, length) => {
        const more = Buffer.alloc(length);
        readSync(opened.fd, more, 0, length, offset);
        return more;
      });
      if (shape.kind !== 'elf-static' && shape.kind !== 'elf-dynamic') {
        throw new LaunchRefused('unsupported_entrypoint', `${opened.resolved} is ${shape.kind === 'shebang' ? `a script (#!${shape.interpreter})` : 'not a native executable'}`);
      }
      const digest = await digestOfDescriptor(opened.fd, identity.size);
      // A writer during hashing changes ctime: then the digest is of no single version of the file.
      const after = native.fstatFd(opened.fd);
      if (!after || !sameIdentity(identity, identityOf(after))) throw new LaunchRefused('object_changed', `${opened.resolved} changed while it was hashed`);
      object = { digest, entrypoint: shape.kind, interpreterPath: shape.kind === 'elf-dynamic' ? shape.interpreter : undefined };
      racy = BigInt(Date.now()) * 1_000_000n - BigInt(identity.ctimeNs) < BigInt(RACY_WINDOW_MS) * 1_000_000n;
      if (!racy) attestationCache.set(identityKey(identity), object);
    }
    let interpreter: Attestation['interpreter'];
    if (object.interpreterPath) {
      const loader = await attest(object.interpreterPath);
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
  nativeLauncher().closeFd(attestation.fd);
}
