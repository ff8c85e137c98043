// Attested closures (spec §6, "Proven script shapes"): an agent installed as a Node script is
// never run from its installation. Every file of its package is copied once, through descriptors,
// into a content-addressed, read-only snapshot `$TURNKEEPER_HOME/closures/<hex of closureDigest>/`,
// and the runtime (an ELF, attested and parked like any other executable) runs the script from there
// under a load guard that lets Node compile only bytes the manifest names.
//
// Layout of one snapshot (docs/launcher.md §9):
//   closures/                      0700, owned by the user, not a symlink
//   closures/<hex>/                0555
//   closures/<hex>/manifest.json   0444, the canonical JSON of [[relativePath, fileDigest, mode], …]
//   closures/<hex>/files/…         the package: dirs 0555, files 0444 (0555 when executable)
//   closures/index.json            a cache: installation root + stat signature -> <hex>
// closureDigest = digestDocument(manifest), so sha256(manifest.json) is the snapshot's name.
import { createHash, randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  fchmodSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  chmodSync,
  writeFileSync,
  writeSync,
  existsSync,
  type BigIntStats,
} from 'node:fs';
import { join, sep } from 'node:path';
import { writeFileAtomic } from '../files/atomicFile';
import { canonicalJson, digestDocument, digestHex } from '../core/canonical';
import { closuresDir, SNAPSHOT_NAME, treeSize, turnkeeperHome, type Env } from '../store/location';
import { digestOfDescriptorSync, HASH_CHUNK } from './digest';
import { identityKey, isRacy } from './identity';
import { LaunchRefused } from './refusals';
import { launchBackend } from './backends';

/** One file of a closure: its path under `files/` ('/'-separated), SHA-256, and mode (0o444 or 0o555). */
export type ManifestEntry = readonly [relativePath: string, fileDigest: string, mode: number];

export interface Closure {
  /** `sha256:<hex>` of the canonical manifest. */
  readonly digest: string;
  /** The snapshot directory, `$TURNKEEPER_HOME/closures/<hex>`. */
  readonly root: string;
  /** The script the runtime runs, inside `root/files`. */
  readonly entry: string;
  /** The installed package it was copied from (information: nothing runs from there). */
  readonly source: string;
  readonly files: number;
  readonly bytes: number;
  /** True when this attestation copied the installation (a new snapshot, or a new copy of a known one). */
  readonly built: boolean;
}

const MODE_FILE = 0o444;
const MODE_EXEC = 0o555;
const MODE_DIR = 0o555;

const uid = (): number => process.getuid?.() ?? 0;

/**
 * The closures directory: created 0700 under TURNKEEPER_HOME, and refused when it is a symlink, not
 * a directory, owned by someone else, or open to group or others.
 */
function privateClosuresDir(env: Env): string {
  const home = turnkeeperHome(env);
  mkdirSync(home, { recursive: true, mode: 0o700 });
  const dir = closuresDir(env);
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const stat = lstatSync(dir);
  if (!stat.isDirectory() || stat.isSymbolicLink()) throw new LaunchRefused('resolution_changed', `${dir} is not a directory (a symlink or another file)`);
  if (stat.uid !== uid()) throw new LaunchRefused('mutable_executable', `${dir} is owned by uid ${stat.uid}, not by this user`);
  if ((stat.mode & 0o077) !== 0)
    throw new LaunchRefused('mutable_executable', `${dir} is open to group or others (mode ${(stat.mode & 0o777).toString(8)}); chmod 700 it`);
  return realpathSync(dir);
}

/**
 * The closures directory with the symlinks of its ancestors resolved (a home under /home -> /var/home,
 * an NFS automount): Node realpaths every module URL, so the load guard and a running agent's command
 * line name a snapshot by this path, never by the one TURNKEEPER_HOME spells.
 */
function resolvedClosuresDir(env: Env): string {
  const dir = closuresDir(env);
  try {
    return realpathSync(dir);
  } catch {
    return dir;
  }
}

const sha256 = () => createHash('sha256');

interface SourceFile {
  readonly relative: string;
  readonly path: string;
  readonly stat: BigIntStats;
}

/** Every regular file under `root`, sorted by relative path; a symlink or special file refuses. */
function walkPackage(root: string): SourceFile[] {
  const files: SourceFile[] = [];
  const visit = (dir: string, prefix: string) => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      const relative = prefix ? `${prefix}/${name}` : name;
      const stat = lstatSync(path, { bigint: true });
      if (stat.isDirectory()) visit(path, relative);
      else if (stat.isFile()) files.push({ relative, path, stat });
      else
        throw new LaunchRefused(
          'unsupported_entrypoint',
          `${path}: a ${stat.isSymbolicLink() ? 'symbolic link' : 'special file'} inside the package; only regular files can be attested into a closure`,
        );
    }
  };
  visit(root, '');
  return files.sort((a, b) => (a.relative < b.relative ? -1 : a.relative > b.relative ? 1 : 0));
}

/** The installation's identity by stat only: which snapshot it had last time, without reading a byte. */
function signatureOf(files: readonly SourceFile[]): { signature: string; racy: boolean } {
  // A source file changed within the racy window is copied but not indexed (git's racy-clean rule).
  const now = Date.now();
  let racy = false;
  const rows = files.map((file) => {
    if (isRacy(file.stat.ctimeNs, now)) racy = true;
    return [file.relative, identityKey(file.stat)];
  });
  return { signature: digestDocument(rows), racy };
}

/** Copies one file through its descriptor into `target` (created exclusively), hashing the bytes written. */
function copyThroughDescriptor(file: SourceFile, target: string, buffer: Buffer): { digest: string; mode: number; size: number; written: BigIntStats } {
  const fd = openSync(file.path, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const before = fstatSync(fd, { bigint: true });
    if (!before.isFile() || before.dev !== file.stat.dev || before.ino !== file.stat.ino) {
      throw new LaunchRefused('object_changed', `${file.path} was replaced while the closure was copied`);
    }
    const out = openSync(target, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    const size = Number(before.size);
    try {
      // The digest is of the bytes written, never of a second read.
      const digest = digestOfDescriptorSync(fd, size, {
        buffer,
        what: file.path,
        onChunk: (chunk) => {
          for (let written = 0; written < chunk.length;) written += writeSync(out, chunk, written, chunk.length - written);
        },
      });
      const after = fstatSync(fd, { bigint: true });
      // A writer during the copy: the snapshot would hold no single version of the file.
      if (identityKey(after) !== identityKey(before)) throw new LaunchRefused('object_changed', `${file.path} changed while the closure was copied`);
      const mode = (before.mode & 0o111n) !== 0n ? MODE_EXEC : MODE_FILE;
      fchmodSync(out, mode);
      return { digest, mode, size, written: fstatSync(out, { bigint: true }) };
    } finally {
      closeSync(out);
    }
  } finally {
    closeSync(fd);
  }
}

/** Hashes a file of a snapshot through an O_NOFOLLOW descriptor; null when it is not a plain file of ours. */
function digestOfSnapshotFile(path: string, buffer: Buffer): { digest: string; stat: BigIntStats } | null {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch {
    return null;
  }
  try {
    const stat = fstatSync(fd, { bigint: true });
    if (!stat.isFile()) return null;
    let digest: string;
    try {
      digest = digestOfDescriptorSync(fd, Number(stat.size), { buffer, what: path });
    } catch {
      return null;
    }
    const after = fstatSync(fd, { bigint: true });
    if (identityKey(after) !== identityKey(stat)) return null;
    return { digest, stat };
  } finally {
    closeSync(fd);
  }
}

/** Removes a tree whose directories were made read-only (snapshots, failed staging). */
function removeTree(path: string): void {
  const open = (dir: string) => {
    let stat;
    try {
      stat = lstatSync(dir);
    } catch {
      return;
    }
    if (!stat.isDirectory()) return;
    chmodSync(dir, 0o700);
    for (const name of readdirSync(dir)) open(join(dir, name));
  };
  open(path);
  rmSync(path, { recursive: true, force: true });
}

/** Identity of each verified snapshot file, per process: a file unchanged since it was hashed is not hashed again. */
const verifiedFiles = new Map<string, string>();

export const clearClosureCache = (): void => {
  verifiedFiles.clear();
  indexCache.clear();
};

/**
 * Checks a snapshot against its name: manifest.json hashes to the directory's digest, every file it
 * names is a regular file owned by this user with the recorded mode and digest, nothing else is
 * there, and no directory is a symlink, writable, or someone else's. Files whose identity is unchanged
 * since this process last hashed them are not hashed again. Returns the manifest; throws object_changed.
 */
export function verifySnapshot(root: string, digest: string): { manifest: ManifestEntry[]; bytes: number } {
  const fail = (why: string): never => {
    throw new LaunchRefused('object_changed', `the closure ${digest} at ${root} no longer matches its manifest: ${why}`);
  };
  const self = uid();
  const checkDir = (path: string) => {
    let stat;
    try {
      stat = lstatSync(path);
    } catch {
      return fail(`${path} is missing`);
    }
    if (!stat.isDirectory()) fail(`${path} is not a directory`);
    if (stat.uid !== self) fail(`${path} is owned by uid ${stat.uid}`);
    if ((stat.mode & 0o7777) !== MODE_DIR) fail(`${path} has mode ${(stat.mode & 0o7777).toString(8)}`);
  };
  checkDir(root);
  // Only the manifest and the files: a node_modules (or anything) planted beside them is refused too.
  for (const name of readdirSync(root)) if (name !== 'manifest.json' && name !== 'files') fail(`${name} is not part of a snapshot`);
  let text: Buffer;
  try {
    const fd = openSync(join(root, 'manifest.json'), constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      text = readFileSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    return fail('manifest.json is missing or a symlink');
  }
  if ('sha256:' + sha256().update(text).digest('hex') !== digest) fail('manifest.json does not hash to the closure digest');
  const manifest = JSON.parse(text.toString('utf8')) as ManifestEntry[];
  const files = join(root, 'files');
  // Directories: exactly those that lead to a manifest file.
  const dirs = new Set<string>(['']);
  const named = new Set<string>();
  for (const [relative] of manifest) {
    named.add(relative);
    const parts = relative.split('/');
    for (let i = 1; i < parts.length; i += 1) dirs.add(parts.slice(0, i).join('/'));
  }
  for (const dir of dirs) {
    const path = dir ? join(files, ...dir.split('/')) : files;
    checkDir(path);
    for (const name of readdirSync(path)) {
      const relative = dir ? `${dir}/${name}` : name;
      if (!named.has(relative) && !dirs.has(relative)) fail(`${relative} is not in the manifest`);
    }
  }
  const buffer = Buffer.allocUnsafe(HASH_CHUNK);
  let bytes = 0;
  for (const [relative, fileDigest, mode] of manifest) {
    const path = join(files, ...relative.split('/'));
    let stat;
    try {
      stat = lstatSync(path, { bigint: true });
    } catch {
      return fail(`${relative} is missing`);
    }
    if (!stat.isFile()) fail(`${relative} is not a regular file`);
    if (Number(stat.uid) !== self) fail(`${relative} is owned by uid ${stat.uid}`);
    if (Number(stat.mode & 0o7777n) !== mode) fail(`${relative} has mode ${(stat.mode & 0o7777n).toString(8)}, not ${mode.toString(8)}`);
    bytes += Number(stat.size);
    if (verifiedFiles.get(path) === `${identityKey(stat)}:${fileDigest}`) continue;
    const hashed = digestOfSnapshotFile(path, buffer);
    if (!hashed || hashed.digest !== fileDigest) fail(`${relative} was changed`);
    verifiedFiles.set(path, `${identityKey(hashed!.stat)}:${fileDigest}`);
  }
  return { manifest, bytes };
}

interface IndexEntry {
  readonly signature: string;
  readonly closure: string;
}
interface ClosureIndex {
  readonly version: 1;
  readonly installs: Record<string, IndexEntry>;
}

/** In-process copy of the index lookups (the extension host attests many times). */
const indexCache = new Map<string, IndexEntry>();

function readIndex(dir: string): ClosureIndex {
  try {
    const parsed = JSON.parse(readFileSync(join(dir, 'index.json'), 'utf8')) as ClosureIndex;
    if (parsed.version === 1 && typeof parsed.installs === 'object' && parsed.installs !== null) return parsed;
  } catch {
    // missing or unreadable: an empty cache
  }
  return { version: 1, installs: {} };
}

function writeIndex(dir: string, update: (index: ClosureIndex) => void): void {
  const index = readIndex(dir);
  update(index);
  writeFileAtomic(join(dir, 'index.json'), `${JSON.stringify(index, null, 1)}\n`, 0o600);
}

/** Test-only pauses inside a build, honoured only with TURNKEEPER_TEST_BARRIERS=1 (as launch.ts's barriers). */
export const closureBarriers: { beforeRename?: (root: string) => void } = {};

const STAGING_PREFIX = '.staging-';
/** A copy or temp file older than this is abandoned whatever its name says (a reused pid, an older name). */
const ABANDONED_AFTER_MS = 60 * 60 * 1000;

/**
 * Leftovers of an interrupted copy or index write: `.staging-<pid>-…` and the index's temp files
 * (`.index.json.<pid>.….tmp`, and the `.index-…` of earlier versions). One is stale when the process
 * named in it is gone, or when it is older than an hour; a copy another launch is making right now
 * is never one.
 */
function isStaleLeftover(dir: string, name: string, now = Date.now()): boolean {
  const pid = /^\.staging-(\d+)-/.exec(name)?.[1] ?? /^\.index\.json\.(\d+)\.[0-9a-f]+\.tmp$/.exec(name)?.[1];
  if (!name.startsWith(STAGING_PREFIX) && !name.startsWith('.index-') && !/^\.index\.json\..*\.tmp$/.test(name)) return false;
  if (pid !== undefined && !processAlive(Number(pid))) return true;
  try {
    return now - lstatSync(join(dir, name)).mtimeMs > ABANDONED_AFTER_MS;
  } catch {
    return false;
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Copies the package into a staging directory, hashing what it wrote, then names it by its manifest.
 * An existing snapshot of the same digest is kept (and the copy dropped) if it verifies; otherwise it
 * is replaced.
 */
function buildSnapshot(dir: string, source: string, files: readonly SourceFile[]): { digest: string; root: string; bytes: number; files: number } {
  // The copying process's pid in the name: prune leaves a copy alone while its process lives.
  const staging = join(dir, `${STAGING_PREFIX}${process.pid}-${randomBytes(8).toString('hex')}`);
  mkdirSync(staging, { mode: 0o700 });
  try {
    const filesDir = join(staging, 'files');
    mkdirSync(filesDir, { mode: 0o700 });
    const manifest: ManifestEntry[] = [];
    const written: { relative: string; key: string }[] = [];
    const made = new Set<string>();
    const buffer = Buffer.allocUnsafe(HASH_CHUNK);
    let bytes = 0;
    for (const file of files) {
      const parts = file.relative.split('/');
      for (let i = 1; i < parts.length; i += 1) {
        const sub = parts.slice(0, i).join('/');
        if (!made.has(sub)) {
          mkdirSync(join(filesDir, ...parts.slice(0, i)), { mode: 0o700 });
          made.add(sub);
        }
      }
      const copied = copyThroughDescriptor(file, join(filesDir, ...parts), buffer);
      manifest.push([file.relative, copied.digest, copied.mode]);
      written.push({ relative: file.relative, key: `${identityKey(copied.written)}:${copied.digest}` });
      bytes += copied.size;
    }
    if (manifest.length === 0) throw new LaunchRefused('unsupported_entrypoint', `${source} holds no files`);
    const text = canonicalJson(manifest);
    const digest = digestDocument(manifest);
    writeFileSync(join(staging, 'manifest.json'), text, { mode: MODE_FILE, flag: 'wx' });
    // Read-only from the leaves up, then the snapshot itself.
    for (const sub of [...made].sort((a, b) => b.length - a.length)) chmodSync(join(filesDir, ...sub.split('/')), MODE_DIR);
    chmodSync(filesDir, MODE_DIR);
    chmodSync(staging, MODE_DIR);
    const root = join(dir, digestHex(digest));
    if (existsSync(root)) {
      try {
        verifySnapshot(root, digest);
        removeTree(staging);
        return { digest, root, bytes, files: manifest.length };
      } catch {
        removeTree(root);
      }
    }
    if (process.env.TURNKEEPER_TEST_BARRIERS === '1') closureBarriers.beforeRename?.(root);
    try {
      renameSync(staging, root);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'EEXIST' && code !== 'ENOTEMPTY') throw error;
      // Another process built the same snapshot at the same moment and renamed first: its copy is
      // kept if it verifies (object_changed otherwise), and this one is dropped.
      verifySnapshot(root, digest);
      removeTree(staging);
      return { digest, root, bytes, files: manifest.length };
    }
    // What was just written and hashed counts as verified while its identity holds (renaming the
    // staging directory changes no file's ctime). A write that raced the copy inside the private
    // staging directory is the one thing this trusts; the load guard still hashes every module (§9).
    for (const entry of written) verifiedFiles.set(join(root, 'files', ...entry.relative.split('/')), entry.key);
    return { digest, root, bytes, files: manifest.length };
  } catch (error) {
    removeTree(staging);
    throw error;
  }
}

/**
 * The snapshot of an installed package: the one the index names for this exact installation (by
 * stat signature) if it still verifies, otherwise a new copy. Nothing from the installation runs.
 */
export function closureOf(source: string, entry: string, env: Env): Closure {
  const dir = privateClosuresDir(env);
  const files = walkPackage(source);
  if (!files.some((file) => file.relative === entry)) throw new LaunchRefused('resolution_changed', `${entry} is not in ${source}`);
  const { signature, racy } = signatureOf(files);
  const known = indexCache.get(source) ?? readIndex(dir).installs[source];
  if (known && known.signature === signature) {
    const root = join(dir, known.closure);
    try {
      const { manifest, bytes } = verifySnapshot(root, `sha256:${known.closure}`);
      indexCache.set(source, known);
      return { digest: `sha256:${known.closure}`, root, entry, source, files: manifest.length, bytes, built: false };
    } catch {
      // Gone or damaged: copy the installation again.
    }
  }
  const built = buildSnapshot(dir, source, files);
  const record = { signature, closure: digestHex(built.digest) };
  if (!racy) {
    indexCache.set(source, record);
    writeIndex(dir, (index) => {
      index.installs[source] = record;
    });
  }
  // Not verified again here: this process wrote and hashed it (or verified the copy it kept), and
  // the launch verifies it at the exec boundary.
  return { digest: built.digest, root: built.root, entry, source, files: built.files, bytes: built.bytes, built: true };
}

/** The script path the runtime is given: inside the snapshot. */
export const closureEntryPath = (closure: Pick<Closure, 'root' | 'entry'>): string => join(closure.root, 'files', ...closure.entry.split('/'));

export interface ClosureListing {
  readonly digest: string;
  readonly root: string;
  readonly bytes: number;
  readonly files: number;
  /** Installations whose current snapshot this is (from the index). */
  readonly current: readonly string[];
  /** Processes whose command line names this snapshot. */
  /** The pids running from it, or 'unknown' where the platform cannot list processes. */
  readonly inUse: readonly number[] | 'unknown';
}

/** Every snapshot under the closures directory, with disk use; staging leftovers are counted as stale. */
export function listClosures(env: Env): { dir: string; snapshots: ClosureListing[]; staleBytes: number; stale: string[] } {
  const dir = resolvedClosuresDir(env);
  if (!existsSync(dir)) return { dir, snapshots: [], staleBytes: 0, stale: [] };
  const index = readIndex(dir);
  const users = processesNaming(dir);
  const snapshots: ClosureListing[] = [];
  const stale: string[] = [];
  let staleBytes = 0;
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (isStaleLeftover(dir, name)) {
      stale.push(path);
      staleBytes += treeSize(path).bytes;
      continue;
    }
    if (!SNAPSHOT_NAME.test(name)) continue;
    const { bytes, files } = treeSize(join(path, 'files'));
    snapshots.push({
      digest: `sha256:${name}`,
      root: path,
      bytes,
      files,
      current: Object.entries(index.installs)
        .filter(([, entry]) => entry.closure === name)
        .map(([source]) => source),
      inUse: users === undefined ? 'unknown' : users.filter((user) => user.cmdline.includes(path)).map((user) => user.pid),
    });
  }
  return { dir, snapshots, staleBytes, stale };
}

/**
 * The running processes whose command line names `dir`, or undefined where the platform cannot list
 * processes: then no snapshot counts as unused (prune keeps them rather than delete one in use).
 */
function processesNaming(dir: string): { pid: number; cmdline: string }[] | undefined {
  return launchBackend()
    .processes()
    ?.map((process) => ({ pid: process.pid, cmdline: process.argv.join('\0') }))
    .filter((process) => process.cmdline.includes(dir));
}

/**
 * Removes snapshots that no installation currently uses and no running process names (or every
 * snapshot not in use, with `all`), and staging leftovers. Index entries whose installation is gone
 * are dropped first.
 */
export function pruneClosures(
  env: Env,
  options: { all?: boolean } = {},
): { removed: { digest: string; bytes: number }[]; kept: { digest: string; why: string }[]; freedBytes: number } {
  if (!existsSync(closuresDir(env))) return { removed: [], kept: [], freedBytes: 0 };
  const dir = privateClosuresDir(env);
  writeIndex(dir, (index) => {
    for (const source of Object.keys(index.installs)) if (options.all || !existsSync(source)) delete index.installs[source];
  });
  indexCache.clear();
  const listing = listClosures(env);
  const removed: { digest: string; bytes: number }[] = [];
  const kept: { digest: string; why: string }[] = [];
  let freedBytes = listing.staleBytes;
  for (const path of listing.stale) removeTree(path);
  for (const snapshot of listing.snapshots) {
    if (snapshot.inUse === 'unknown') {
      kept.push({ digest: snapshot.digest, why: 'maybe in use: this platform cannot list the processes running from it' });
      continue;
    }
    if (snapshot.inUse.length > 0) {
      kept.push({ digest: snapshot.digest, why: `in use by pid ${snapshot.inUse.join(', ')}` });
      continue;
    }
    if (snapshot.current.length > 0) {
      kept.push({ digest: snapshot.digest, why: `current for ${snapshot.current.join(', ')}` });
      continue;
    }
    removeTree(snapshot.root);
    for (const key of [...verifiedFiles.keys()]) if (key.startsWith(snapshot.root + sep)) verifiedFiles.delete(key);
    removed.push({ digest: snapshot.digest, bytes: snapshot.bytes });
    freedBytes += snapshot.bytes;
  }
  return { removed, kept, freedBytes };
}
