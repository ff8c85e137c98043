// `verify --bundle` reads a bundle as a stream (issue 18 item 4, issue 19 item 1): its peak memory does
// not grow with the bundle. Pinned by what the child process itself reports (its VmHWM at exit,
// in KiB), not by timing: the same verification of a bundle of N receipts and of 10N, whose files
// differ by tens of MB. A reader that holds the file (the previous one: readFileSync, then the lines)
// grows by at least that difference, because every page of the file it read is resident; a streaming
// one grows by a small constant. The control runs that previous reader, the product's own verifier
// over the whole file in memory, bundled from src with esbuild, and must exceed the bound.
//
// Not --max-old-space-size: the whole-file read is a Buffer, outside the V8 heap, so a heap limit
// would not fail the old reader; resident memory is what it cost (555 MB at 1M receipts, issue 19).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { createWriteStream, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { bundleHeaderLine, checkpointText, signedNote } from '../../src/core/checkpoint';
import { leafHash, TreeBuilder } from '../../src/core/merkle';
import { buildReceipt, type ChainLink } from '../../src/core/receipts';
import { signingKey, signNote, verifierKey } from '../../src/ledger/keys';
import { CLI, makeWorld } from '../support/world';

const world = makeWorld('bundle-memory');
afterAll(() => world.cleanup());

const SMALL = 20_000;
const LARGE = 200_000;
/** A streaming reader may grow by this much from SMALL to LARGE (new space, a chunk, a line). */
const BOUND_KIB = 12 * 1024;

const key = signingKey({ TURNKEEPER_HOME: join(world.root, 'signer') });
const vkey = verifierKey(key);
const origin = 'turnkeeper/store/00112233445566778899aabbccddeeff';

/** A valid bundle of `n` receipts from 1, its header signed over the Merkle root: built with the product's code. */
async function writeBundle(n: number): Promise<string> {
  const path = join(world.root, `bundle-${n}.tkb`);
  const docs = createWriteStream(join(world.root, `docs-${n}`));
  const tree = new TreeBuilder();
  let head: ChainLink | undefined;
  const at = Date.parse('2026-11-01T00:00:00.000Z');
  for (let i = 0; i < n; i += 1) {
    const built = buildReceipt(
      head,
      { kind: 'lease_renewed', goal: 'repo-goal', todo: `todo-${i % 500}`, owner: 'codex:session', lease: { epoch: 1, version: i + 1 }, detail: { at: i } },
      at + i,
    );
    tree.push(leafHash(Buffer.from(built.text, 'utf8')));
    head = { seq: built.document.seq, hash: built.hash };
    if (!docs.write(built.text + '\n')) await new Promise<void>((done) => docs.once('drain', () => done()));
  }
  await new Promise<void>((done, fail) => docs.end((error?: Error | null) => (error ? fail(error) : done())));
  const text = checkpointText({
    origin,
    seq: n,
    hash: head!.hash,
    time: new Date(at).toISOString(),
    root: `sha256:${Buffer.from(tree.root()).toString('hex')}`,
  });
  const note = signedNote(text, [signNote(key, text)]);
  writeFileSync(path, bundleHeaderLine({ origin, from: 1, to: n, checkpoint: note }) + '\n');
  writeFileSync(path, readFileSync(join(world.root, `docs-${n}`)), { flag: 'a' });
  return path;
}

/**
 * Writes the child's peak RSS (KiB) to $PEAK_RSS_FILE as it exits: VmHWM, the peak of its own memory
 * since its exec. Not getrusage's maxrss: Linux keeps that across execve, so it starts at the RSS of
 * the process that forked the child (this vitest worker, 70 to 120 MB). The control failed so (a
 * whole rehearsal at 46fdc65, and 3 runs of 6 alone): those runs gave one number, the worker's, for
 * the small bundle's readers and the streaming reader of the large one alike.
 */
const preload = join(world.root, 'peak-rss.cjs');
writeFileSync(
  preload,
  "process.on('exit', () => require('node:fs').writeFileSync(process.env.PEAK_RSS_FILE, /^VmHWM:\\s+(\\d+) kB$/m.exec(require('node:fs').readFileSync('/proc/self/status', 'utf8'))[1]));\n",
);

/** The previous reader: the whole file in memory, then the product's bundle walk over its lines. */
const wholeFileEntry = join(world.root, 'whole-file.ts');
const wholeFile = join(world.root, 'whole-file.cjs');

function peakOf(args: string[]): { kib: number; report: { ok: boolean; verified: number } } {
  const out = join(world.root, `rss-${Math.random().toString(36).slice(2)}`);
  const run = spawnSync(process.execPath, ['--require', preload, ...args], {
    env: { ...world.env, PEAK_RSS_FILE: out },
    cwd: world.repo,
    encoding: 'utf8',
    timeout: 120_000,
  });
  expect(run.status, run.stderr).toBe(0);
  return { kib: Number(readFileSync(out, 'utf8')), report: JSON.parse(run.stdout) as { ok: boolean; verified: number } };
}

let small: string;
let large: string;
beforeAll(async () => {
  small = await writeBundle(SMALL);
  large = await writeBundle(LARGE);
  const src = resolve(__dirname, '../../src');
  writeFileSync(
    wholeFileEntry,
    `import { readFileSync } from 'node:fs';
import { bundleLinesOf, verifyBundle } from ${JSON.stringify(join(src, 'core/checkpoint'))};
import { noteVerifier, parsePublicKey } from ${JSON.stringify(join(src, 'ledger/keys'))};
const [file, key] = process.argv.slice(2);
const report = verifyBundle(bundleLinesOf(readFileSync(file!)), noteVerifier([parsePublicKey(key!)!]));
process.stdout.write(JSON.stringify({ ok: report.ok, verified: report.verified }));
`,
  );
  await build({ entryPoints: [wholeFileEntry], bundle: true, platform: 'node', format: 'cjs', target: 'node22', outfile: wholeFile, logLevel: 'warning' });
}, 120_000);

describe('verify --bundle holds one chunk and one line, not the file', () => {
  it(`grows by less than ${BOUND_KIB / 1024} MiB from ${SMALL.toLocaleString('en-US')} to ${LARGE.toLocaleString('en-US')} receipts (control: the whole-file reader grows by the file)`, () => {
    const grown = statSync(large).size - statSync(small).size;
    expect(grown).toBeGreaterThan(4 * BOUND_KIB * 1024);

    const cli = (file: string) => peakOf([CLI, 'verify', '--bundle', file, '--key', vkey, '--json']);
    const cliSmall = cli(small);
    const cliLarge = cli(large);
    expect(cliSmall.report).toMatchObject({ ok: true, verified: SMALL });
    expect(cliLarge.report).toMatchObject({ ok: true, verified: LARGE });
    expect(cliLarge.kib - cliSmall.kib, `peak RSS ${cliSmall.kib} → ${cliLarge.kib} KiB`).toBeLessThan(BOUND_KIB);

    // Control: the same walk over the file read whole verifies the same bundles, and grows with the
    // file, far past the bound. Half the file's growth, not all of it: the whole reader's peak varied
    // from 97% to over 100% of it across runs (what V8 frees before the peak), while the streaming
    // reader's growth stays under 0.1%.
    const whole = (file: string) => peakOf([wholeFile, file, vkey]);
    const wholeSmall = whole(small);
    const wholeLarge = whole(large);
    expect(wholeLarge.report).toMatchObject({ ok: true, verified: LARGE });
    console.log(`peak RSS (KiB): streaming ${cliSmall.kib} → ${cliLarge.kib}, whole file ${wholeSmall.kib} → ${wholeLarge.kib}`);
    expect(wholeLarge.kib - wholeSmall.kib, `peak RSS ${wholeSmall.kib} → ${wholeLarge.kib} KiB`).toBeGreaterThan(grown / 1024 / 2);
    expect(wholeLarge.kib - wholeSmall.kib).toBeGreaterThan(BOUND_KIB);
  }, 240_000);
});
