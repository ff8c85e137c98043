// Files another user (`nobody`, run through runuser by tests that need a peer of another uid) must
// reach. A clone may sit in a private directory (root's home is 0700): its node runtime and its
// scripts are then out of that user's reach, and the test would fail on where it was cloned, not on
// what it checks. So the files are put in a directory of their own under the system's temporary
// directory, which everyone may enter: hard-linked when on the same filesystem (the runtime is about
// 100 MB), else copied.
import { chmodSync, copyFileSync, linkSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';

export interface Reachable {
  /** Each given file's path in the shared directory, in the order given. */
  readonly paths: string[];
  cleanup(): void;
}

export function reachableByOthers(files: readonly string[]): Reachable {
  const dir = mkdtempSync(join(tmpdir(), 'tk-shared-'));
  chmodSync(dir, 0o755);
  const paths = files.map((file, i) => {
    const target = join(dir, `${i}-${basename(file)}`);
    try {
      // A link is the file itself: its mode (the runtime 0755, a script 0644) is never changed here.
      linkSync(file, target);
    } catch {
      copyFileSync(file, target);
      chmodSync(target, 0o755);
    }
    return target;
  });
  return { paths, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}
