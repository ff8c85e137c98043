// How many team-store connections the hooks of one home hold at once. A server has a fixed number of
// connection slots (max_connections), and a hook holds one from its connect to its exit; a hook that
// finds the server full can only ask again, and every refused attempt costs the server a process (and,
// for the reserved slots, a whole SCRAM exchange) while the hooks that hold slots wait for the CPU.
// So the cold hooks of one home take turns locally first: at most CONNECTIONS_PER_HOME at once, the
// rest waiting on files in $TURNKEEPER_HOME/run/team-connections (no server, no CPU), each until the
// hook's own deadline. Measured on a 64-hook burst against 37 slots: docs/testing.md, "The burst".
//
// A slot is a file created exclusively (O_EXCL) that names its holder's pid; it is removed when the
// store is closed, and a slot whose holder is gone (kill -9) is taken over by the next hook that finds
// it. The limit is a courtesy, not a guarantee: two hooks that take over one dead holder's slot at the
// same moment may both go on, and a directory that cannot be used means no limit at all. Nothing here
// decides anything: a hook without a slot by its deadline connects all the same (fail open).
import { closeSync, lstatSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/** At most this many cold-hook connections to a team store per home at once. */
export const CONNECTIONS_PER_HOME = 4;

export interface ConnectionSlot {
  release(): void;
}

/** Whether the pid named in `path` is no longer a process (a slot left by a hook killed with -9). */
function holderGone(path: string): boolean {
  let text: string;
  try {
    // Only a regular file of ours is read: a FIFO or a link planted at a slot's name would block the
    // hook in the read, or read what it points at.
    const stat = lstatSync(path);
    if (!stat.isFile() || stat.uid !== process.geteuid?.()) return false;
    text = readFileSync(path, 'utf8');
  } catch {
    return false; // gone already, or unreadable: not ours to remove
  }
  const pid = Number(text);
  // An empty file is a slot being written by its holder right now.
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/**
 * One of `count` slots under `dir` (created 0700 inside `home`, which must exist), waiting for a free
 * one until `until` (performance.now() ms); undefined when there is none by then or the directory
 * cannot be used.
 */
export async function takeConnectionSlot(home: string, count: number, until: number): Promise<ConnectionSlot | undefined> {
  const dir = join(home, 'run', 'team-connections');
  try {
    mkdirSync(join(home, 'run'), { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') return undefined; // no home: no limit
  }
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') return undefined;
  }
  const mine = String(process.pid);
  for (;;) {
    for (let at = 0; at < count; at += 1) {
      const path = join(dir, `slot-${at}`);
      let fd: number;
      try {
        fd = openSync(path, 'wx', 0o600);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') return undefined;
        if (holderGone(path)) {
          try {
            unlinkSync(path);
          } catch {
            // taken over by another hook meanwhile
          }
        }
        continue;
      }
      try {
        writeSync(fd, mine);
      } finally {
        closeSync(fd);
      }
      return {
        release() {
          try {
            if (lstatSync(path).isFile() && readFileSync(path, 'utf8') === mine) unlinkSync(path);
          } catch {
            // already gone
          }
        },
      };
    }
    if (performance.now() >= until) return undefined;
    await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 10));
  }
}
