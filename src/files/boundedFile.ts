// Reading a small file that a repository, or whoever can write beside it, controls: agent configs,
// a checkout's `.git` file, its git config, `.turnkeeper.json`. Its own module because the hook reads
// the git files on every event (importing install.ts would load jsonc-parser and node:crypto too).
import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';

/**
 * The largest agent config Turnkeeper reads. Real ones are a few kilobytes; the cap keeps a hostile
 * repository's config (a symlink to /dev/zero, a huge file) from hanging doctor, `hooks status` or the
 * editor, which all read the configs of the repository they are pointed at.
 */
export const MAX_CONFIG_BYTES = 4 * 1024 * 1024;

/** One config read: its bytes, no file at all (a dangling symlink included), or why it cannot be read as a config. */
export type ConfigRead =
  { readonly kind: 'bytes'; readonly bytes: Buffer } | { readonly kind: 'missing' } | { readonly kind: 'refused'; readonly problem: string };

const fileKind = (stat: Stats): string =>
  stat.isDirectory()
    ? 'a directory'
    : stat.isFIFO()
      ? 'a FIFO'
      : stat.isCharacterDevice()
        ? 'a character device'
        : stat.isBlockDevice()
          ? 'a block device'
          : stat.isSocket()
            ? 'a socket'
            : 'not a regular file';

/**
 * The one way an agent config (or a file beside one) is read: through symlinks, but only a regular
 * file of at most `maxBytes`, and exactly the size fstat gave. Opened O_NONBLOCK, so a FIFO
 * never blocks the open; fstat then refuses it, a device, a directory, before a byte is read.
 */
export function readConfigFile(path: string, maxBytes: number = MAX_CONFIG_BYTES): ConfigRead {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'missing' };
    return { kind: 'refused', problem: `cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})` };
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return { kind: 'refused', problem: `it is ${fileKind(stat)}, not a regular file` };
    if (stat.size > maxBytes) return { kind: 'refused', problem: `it is ${stat.size} bytes, over the ${maxBytes}-byte limit` };
    const bytes = Buffer.alloc(stat.size);
    let done = 0;
    while (done < bytes.length) {
      const read = readSync(fd, bytes, done, bytes.length - done, done);
      if (read === 0) break; // shrank meanwhile: what is there
      done += read;
    }
    return { kind: 'bytes', bytes: bytes.subarray(0, done) };
  } catch (error) {
    return { kind: 'refused', problem: `cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})` };
  } finally {
    closeSync(fd);
  }
}
