// The witness is read and appended as a regular file only (docs/receipts.md, "When checkpoints are
// written, and where they are kept"; issue 18): a FIFO in its place hung verify, doctor and every
// checkpointing claim, and a symlink to config.json had every checkpoint appended into the victim's
// config. Now both are refused (the witness is "cannot be read", the checkpoint stays in the store),
// and nothing waits or writes through the link.
import { afterAll, describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, contextOf, makeWorld, payload, type World } from '../support/world';

const worlds: World[] = [];
afterAll(() => worlds.forEach((w) => w.cleanup()));

function withWitness(name: string, plant: (path: string, w: World) => void): World {
  const w = makeWorld(name);
  worlds.push(w);
  mkdirSync(w.home, { recursive: true });
  const witness = join(w.root, 'witness.jsonl');
  writeFileSync(join(w.home, 'config.json'), JSON.stringify({ witness, checkpointEvery: 1 }));
  plant(witness, w);
  return w;
}
/** A CLI run killed after 15 s: a hang is a failure of the test, not of the suite. */
const within = (w: World, args: string[], input = '') => {
  const started = Date.now();
  const run = spawnSync(process.execPath, [CLI, ...args], {
    input,
    env: { ...w.env, TURNKEEPER_CHECKPOINT_EVERY: '1' },
    cwd: w.repo,
    encoding: 'utf8',
    timeout: 15_000,
  });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr, ms: Date.now() - started };
};

describe('the witness file is a regular file or nothing', () => {
  it('a FIFO in its place: a checkpointing claim, checkpoint and verify finish at once; the witness "cannot be read"', () => {
    const w = withWitness('witness-fifo', (path) => execFileSync('mkfifo', [path]));
    expect(within(w, ['todo', 'add', 'Title', '--id', 'fix-login']).code).toBe(0);
    const claim = within(w, ['hook'], payload.codexPrompt(w, 's1', 'turn-1', '#todo:fix-login'));
    expect(contextOf(claim.stdout)).toContain('epoch 1');
    expect(claim.ms).toBeLessThan(10_000);
    const checkpoint = within(w, ['checkpoint', '--json']);
    expect(checkpoint.code).toBe(0);
    const verify = within(w, ['verify']);
    expect(verify.ms).toBeLessThan(10_000);
    expect(verify.stdout + verify.stderr).toMatch(/witness: .*witness\.jsonl cannot be read/);
  }, 60_000);

  it('a symlink to config.json: nothing is appended through it (control: a regular witness gets the line)', () => {
    let config = '';
    const w = withWitness('witness-link', (path, world) => {
      config = join(world.home, 'config.json');
      symlinkSync(config, path);
    });
    const before = readFileSync(config, 'utf8');
    expect(within(w, ['todo', 'add', 'Title', '--id', 'fix-login']).code).toBe(0);
    expect(within(w, ['checkpoint', '--json']).code).toBe(0);
    expect(readFileSync(config, 'utf8')).toBe(before);

    const control = withWitness('witness-regular', () => undefined);
    expect(within(control, ['todo', 'add', 'Title', '--id', 'fix-login']).code).toBe(0);
    expect(within(control, ['checkpoint', '--json']).code).toBe(0);
    expect(readFileSync(join(control.root, 'witness.jsonl'), 'utf8')).toContain('"schema":"turnkeeper.witness/v2"');
  }, 60_000);
});
