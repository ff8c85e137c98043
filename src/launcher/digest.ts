// SHA-256 of a file read through its descriptor (docs/launcher.md §2 step 12): positional reads of
// 4 MiB, exactly `size` bytes, each chunk also handed to `onChunk` (the SEA fuse search, a closure's
// copy). Never through a path: a path swapped during hashing cannot redirect the reads. The
// asynchronous form runs the reads on libuv's pool (large executables); the synchronous one serves
// the closure's copy and verification.
import { createHash } from 'node:crypto';
import { read as readCallback, readSync } from 'node:fs';
import { promisify } from 'node:util';
import { LaunchRefused } from './refusals';

const readAt = promisify(readCallback);

export const HASH_CHUNK = 4 * 1024 * 1024;

const shorter = (what: string): LaunchRefused => new LaunchRefused('object_changed', `${what} became shorter while it was read`);

export async function digestOfDescriptor(fd: number, size: number, onChunk?: (chunk: Buffer) => void): Promise<string> {
  const hash = createHash('sha256');
  const buffer = Buffer.allocUnsafe(HASH_CHUNK);
  for (let offset = 0; offset < size;) {
    const { bytesRead } = await readAt(fd, buffer, 0, Math.min(HASH_CHUNK, size - offset), offset);
    if (bytesRead === 0) throw shorter('the file');
    const chunk = buffer.subarray(0, bytesRead);
    hash.update(chunk);
    onChunk?.(chunk);
    offset += bytesRead;
  }
  return 'sha256:' + hash.digest('hex');
}

/** The same, synchronously, into a caller's buffer (reused across the files of a closure). */
export function digestOfDescriptorSync(
  fd: number,
  size: number,
  options: { readonly buffer: Buffer; readonly what: string; readonly onChunk?: (chunk: Buffer) => void },
): string {
  const { buffer, onChunk } = options;
  const hash = createHash('sha256');
  for (let offset = 0; offset < size;) {
    const n = readSync(fd, buffer, 0, Math.min(buffer.length, size - offset), offset);
    if (n === 0) throw shorter(options.what);
    const chunk = buffer.subarray(0, n);
    hash.update(chunk);
    onChunk?.(chunk);
    offset += n;
  }
  return 'sha256:' + hash.digest('hex');
}
