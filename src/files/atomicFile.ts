// Writing a file so that readers see the old bytes or the new ones, never half of them. Its own
// module because the hook path loads it (homeConfig.ts, whose reader the hook uses, also holds the
// config.json writer): importing install.ts (jsonc-parser, node:crypto) cost every hook a few
// milliseconds of start-up (bench row 1).
import { closeSync, existsSync, fchmodSync, fsyncSync, mkdirSync, openSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/** writeSync may write less than asked; loop until every byte is out. */
export function writeAll(fd: number, content: string | Uint8Array): void {
  const bytes = typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
  for (let done = 0; done < bytes.byteLength;) done += writeSync(fd, bytes, done, bytes.byteLength - done);
}

/**
 * Temp file in the same directory, fsync, rename: readers see the old file or the new one, never
 * half of one. `stillCurrent` runs just before the rename; returning false abandons the write.
 * Missing parent directories are created 0700: the shim's write is what creates TURNKEEPER_HOME,
 * which must be private from its first moment.
 */
export function writeFileAtomic(path: string, content: string | Uint8Array, mode: number | undefined, stillCurrent: () => boolean = () => true): boolean {
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const temp = join(dir, `.${basename(path)}.${process.pid}.${process.getBuiltinModule('node:crypto').randomBytes(6).toString('hex')}.tmp`);
  const fd = openSync(temp, 'wx', mode ?? 0o666);
  try {
    try {
      // Keep the old file's mode exactly, whatever the umask. Through the descriptor: a chmod by name
      // after close would follow whatever another writer of the directory had renamed in meanwhile
      // (a symlink to one of our private files, then given this mode).
      if (mode !== undefined) fchmodSync(fd, mode);
      writeAll(fd, content);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    if (!stillCurrent()) {
      unlinkSync(temp);
      return false;
    }
    renameSync(temp, path);
  } catch (error) {
    if (existsSync(temp)) unlinkSync(temp);
    throw error;
  }
  syncDir(dir);
  return true;
}

/**
 * The streaming form of writeFileAtomic, for content produced piece by piece (an export bundle of any
 * size): `produce` gets a `write` that writes every byte it is given into a temp file beside `path`;
 * once it resolves, the file is fsynced and renamed over `path`. When it throws, the temp file is
 * removed and `path` keeps what it held. `mode` is the new file's, less the umask (a bundle or an
 * attestation is for others to read; a umask of 077 keeps it private).
 */
export async function writeFileAtomicStreaming<T>(path: string, mode: number, produce: (write: (chunk: string) => void) => T | Promise<T>): Promise<T> {
  const dir = dirname(path);
  const temp = join(dir, `.${basename(path)}.${process.pid}.${process.getBuiltinModule('node:crypto').randomBytes(6).toString('hex')}.tmp`);
  const fd = openSync(temp, 'wx', mode);
  let closed = false;
  try {
    const result = await produce((chunk) => writeAll(fd, chunk));
    fsyncSync(fd);
    closeSync(fd);
    closed = true;
    renameSync(temp, path);
    syncDir(dir);
    return result;
  } catch (error) {
    if (!closed) closeSync(fd);
    if (existsSync(temp)) unlinkSync(temp);
    throw error;
  }
}

export function syncDir(dir: string): void {
  try {
    const fd = openSync(dir, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // Some filesystems refuse fsync on a directory; the rename itself already happened.
  }
}
