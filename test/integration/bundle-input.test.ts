// `verify --bundle` is bounded by what it is given (issue 18 item 4, part): a device or a FIFO is
// refused before a byte is read (`/dev/zero` grew to 8 GB RSS in a minute, a FIFO waited forever), and
// a file of junk lines stops after MAX_BUNDLE_BREAKS breaks instead of listing millions.
import { afterAll, describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MAX_BUNDLE_BREAKS, MAX_BUNDLE_LINE } from '../../src/core/checkpoint';
import { CLI, makeWorld } from '../support/world';

const world = makeWorld('bundle-input');
afterAll(() => world.cleanup());
const key = 'PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW';

/** `verify --bundle <path> --json`, killed after 15 s: a hang or a runaway is the test's failure. */
function verifyBundle(path: string) {
  const started = Date.now();
  const run = spawnSync(process.execPath, [CLI, 'verify', '--bundle', path, '--key', key, '--json'], {
    env: world.env,
    cwd: world.repo,
    encoding: 'utf8',
    timeout: 15_000,
    maxBuffer: 256 << 20,
  });
  return {
    code: run.status,
    ms: Date.now() - started,
    out: JSON.parse(run.stdout || '{}') as { ok?: boolean; breaks?: unknown[]; stopped?: boolean; error?: { message: string } },
  };
}

describe('verify --bundle takes regular files, and stops', () => {
  it('/dev/zero and a FIFO are refused at once, as not regular files', () => {
    const fifo = join(world.root, 'bundle.fifo');
    execFileSync('mkfifo', [fifo]);
    for (const path of ['/dev/zero', fifo]) {
      const run = verifyBundle(path);
      expect(run.code, path).toBe(1);
      expect(run.out.error?.message, path).toMatch(/not a regular file/);
      expect(run.ms, path).toBeLessThan(10_000);
    }
  });

  it(`a file of 200,000 junk lines stops after ${MAX_BUNDLE_BREAKS} breaks (control: a short one lists them all)`, () => {
    const header = JSON.stringify({ schema: 'turnkeeper.bundle/v1', origin: 'turnkeeper/store/x', from: 1, to: 1, checkpoint: 'x' });
    const junk = join(world.root, 'junk.tkb');
    writeFileSync(junk, header + '\n' + 'junk\n'.repeat(200_000));
    const run = verifyBundle(junk);
    expect(run.code).toBe(1);
    expect(run.out.stopped).toBe(true);
    expect(run.out.breaks!.length).toBeGreaterThanOrEqual(MAX_BUNDLE_BREAKS);
    expect(run.out.breaks!.length).toBeLessThan(MAX_BUNDLE_BREAKS + 10);

    const short = join(world.root, 'short.tkb');
    writeFileSync(short, header + '\n' + 'junk\n'.repeat(10));
    const control = verifyBundle(short);
    expect(control.out.stopped).toBeUndefined();
    expect(control.out.breaks!.length).toBeGreaterThanOrEqual(10);
  });

  it(`a line longer than ${MAX_BUNDLE_LINE} bytes is one content_altered, hashed as it streams (control: the same bundle with that line short names the same break)`, () => {
    const header = JSON.stringify({ schema: 'turnkeeper.bundle/v1', origin: 'turnkeeper/store/x', from: 1, to: 1, checkpoint: 'x' });
    const long = join(world.root, 'long.tkb');
    // 40 MiB with no newline: the previous reader held it as one string; this one holds 1 MiB at most.
    writeFileSync(long, header + '\n' + 'x'.repeat(40 << 20));
    const run = verifyBundle(long);
    expect(run.code).toBe(1);
    expect(run.out.breaks).toContainEqual({ seq: 1, kind: 'content_altered' });
    expect(run.out.stopped).toBeUndefined();

    const short = join(world.root, 'short-line.tkb');
    writeFileSync(short, header + '\n' + 'x'.repeat(100));
    expect(verifyBundle(short).out.breaks).toStrictEqual(run.out.breaks);
  });
});
