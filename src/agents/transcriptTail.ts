// The last bytes of an agent's transcript, for the facts a turn receipt takes from it (model, tokens,
// version: each profile's `payload.turnUsage`). Bounded: at most TURN_TAIL_BYTES are read, never a
// FIFO or device, and any failure is "nothing known", never an error (the stop hook fails open).
import { closeSync, constants, fstatSync, openSync, readSync, statSync } from 'node:fs';
import { PROFILES, type TurnUsage } from './profiles/index';
import type { Agent } from '../core/ids';

/** A turn's lines are near the end; 1 MiB holds hundreds of them, and the read stays a few ms. */
const TURN_TAIL_BYTES = 1024 * 1024;

/** The file's last `maxBytes` as text (its first line may be cut), or undefined when it cannot be read as a regular file. */
function transcriptTail(path: string | null | undefined, maxBytes: number = TURN_TAIL_BYTES): string | undefined {
  if (path === undefined || path === null || path === '') return undefined;
  let fd: number | undefined;
  try {
    if (!statSync(path).isFile()) return undefined;
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
    const stat = fstatSync(fd);
    if (!stat.isFile()) return undefined;
    const length = Math.min(stat.size, maxBytes);
    const buffer = Buffer.allocUnsafe(length);
    let read = 0;
    while (read < length) {
      const n = readSync(fd, buffer, read, length - read, stat.size - length + read);
      if (n === 0) break;
      read += n;
    }
    return buffer.subarray(0, read).toString('utf8');
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** The agent's facts of the turn since `sinceMs` from its transcript; {} when it has none or the file cannot be read. */
export function turnUsageOf(agent: Agent, transcriptPath: string | null | undefined, sinceMs: number | undefined): TurnUsage {
  const parse = PROFILES[agent].payload.turnUsage;
  if (!parse) return {};
  const tail = transcriptTail(transcriptPath);
  if (tail === undefined) return {};
  try {
    return parse(tail, sinceMs);
  } catch {
    return {};
  }
}
