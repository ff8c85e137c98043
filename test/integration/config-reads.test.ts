// $TURNKEEPER_HOME/config.json has one reader (src/config/homeConfig.ts), and a hook reads it once
// however many of its keys the decision needs (the store, the lease TTL, onConflict, checkpointEvery,
// the witness). Counted in the real `turnkeeper hook` process: a preload wraps node:fs and counts the
// opens and whole-file reads of config.json.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { contextOf, makeWorld, payload, type World } from '../support/world';

let world: World;
let counter: string;
let counts: string;
beforeEach(() => {
  world = makeWorld('config-reads');
  counter = join(world.root, 'count-config-reads.cjs');
  counts = join(world.root, 'config-reads.txt');
  writeFileSync(
    counter,
    `const fs = require('node:fs');
let reads = 0;
const named = (target) => typeof target === 'string' && target.endsWith('/config.json');
for (const name of ['openSync', 'readFileSync']) {
  const original = fs[name];
  fs[name] = function (target, ...rest) {
    if (named(target)) reads += 1;
    return original.call(this, target, ...rest);
  };
}
process.on('exit', () => fs.appendFileSync(${JSON.stringify(counts)}, reads + '\\n'));
`,
  );
});
afterEach(() => world.cleanup());

/** Runs one hook and returns how often it read config.json. */
function hookReads(input: string): { stdout: string; reads: number } {
  rmSync(counts, { force: true });
  const run = world.cli(['hook'], { input, env: { NODE_OPTIONS: `--require ${counter}` } });
  expect(run.code, run.stderr).toBe(0);
  return { stdout: run.stdout, reads: Number(readFileSync(counts, 'utf8').trim()) };
}

describe('config.json', () => {
  it('is read once per hook: a claim with a checkpoint due, a replay, [lease_held]', () => {
    expect(world.cli(['todo', 'add', 'Fix login', '--id', 'fix-login']).code).toBe(0);
    mkdirSync(world.home, { recursive: true });
    const config = join(world.home, 'config.json');
    // Every key a hook asks for; a checkpoint is due on every write.
    writeFileSync(config, JSON.stringify({ onConflict: 'context', leaseTtlSeconds: 600, checkpointEvery: 1, witness: join(world.home, 'witness.jsonl') }));
    // A file modified within the last seconds is read again on each use (it could change within one
    // tick of the file system's clock); one written an hour ago is the usual case.
    const hourAgo = new Date(Date.now() - 3600_000);
    utimesSync(config, hourAgo, hourAgo);

    const claim = hookReads(payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login'));
    expect(contextOf(claim.stdout)).toMatch(/· epoch 1$/m);
    expect(claim.reads).toBe(1);
    const replay = hookReads(payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login'));
    expect(contextOf(replay.stdout)).toMatch(/· epoch 1$/m);
    expect(replay.reads).toBe(1);
    const held = hookReads(payload.codexPrompt(world, 'sess-b', 'turn-1', '#todo:fix-login'));
    expect(contextOf(held.stdout)).toContain('[lease_held]');
    expect(held.reads).toBe(1);
    // Control: the preload counts what it should; without the file, nothing is read.
    rmSync(config);
    expect(hookReads(payload.codexPrompt(world, 'sess-c', 'turn-1', '#todo:fix-login')).reads).toBe(0);
  });
});
