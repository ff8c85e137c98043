// closure prune on a platform whose backend cannot list processes: it must not take "no process
// names this snapshot" from a list it never had. Before the backend owned the process scan, prune read
// /proc itself, found nothing where there is no /proc, and removed snapshots agents were running from.
import { afterAll, describe, expect, it, vi } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { linuxBackend } from '../../src/launcher/backends/linux';

let listsProcesses = true;
vi.mock('../../src/launcher/backends', async (original) => {
  const actual = await original<typeof import('../../src/launcher/backends')>();
  return {
    ...actual,
    launchBackend: () => ({ ...linuxBackend, processes: () => (listsProcesses ? linuxBackend.processes() : undefined) }),
  };
});

const { closureOf, pruneClosures } = await import('../../src/launcher/closure');

const root = mkdtempSync(join(tmpdir(), 'tk-closure-platform-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('closure prune where processes cannot be listed', () => {
  it('keeps every snapshot as maybe in use (control: where they can be listed, the same unused snapshot is removed)', () => {
    const pkg = join(root, 'tiny');
    mkdirSync(pkg, { recursive: true });
    writeFileSync(join(pkg, 'main.js'), 'console.log(1);\n');

    listsProcesses = false;
    const blind = { TURNKEEPER_HOME: join(root, 'blind-home') };
    const kept = closureOf(pkg, 'main.js', blind);
    const pruned = pruneClosures(blind, { all: true });
    expect(pruned.removed).toEqual([]);
    expect(pruned.kept).toEqual([{ digest: kept.digest, why: 'maybe in use: this platform cannot list the processes running from it' }]);
    expect(existsSync(kept.root)).toBe(true);

    listsProcesses = true;
    const seeing = { TURNKEEPER_HOME: join(root, 'seeing-home') };
    const removed = closureOf(pkg, 'main.js', seeing);
    expect(pruneClosures(seeing, { all: true }).removed.map((item) => item.digest)).toEqual([removed.digest]);
    expect(existsSync(removed.root)).toBe(false);
  });
});
