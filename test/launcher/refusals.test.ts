// Attestation and launch refusals (contract §6), on real files: every refusal carries its typed
// reason, and every one has a control (the same setup without the defect attests or launches).
import { appendFileSync, chmodSync, copyFileSync, mkdirSync, realpathSync, renameSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { like } from '../support/matchers';
import { RACY_WINDOW_MS, attest, releaseAttestation, type Attestation } from '../../src/launcher/attest';
import { launchAttested } from '../../src/launcher/launch';
import { LaunchRefused, type LaunchRefusal } from '../../src/launcher/refusals';
import { buildFixtures, preloadRan, ranDigest, readMarker, receiptStore, scene, sha256File, type Fixtures } from './fixtures';

process.env.TURNKEEPER_TEST_BARRIERS = '1';

const REPO = resolve(__dirname, '../..');
const CODEX_SHIM = join(REPO, 'node_modules/.bin/codex');
const CODEX_BINARY = join(REPO, 'node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex');

let fx: Fixtures;
beforeAll(() => {
  fx = buildFixtures('tk-refusals');
});
afterAll(() => fx?.cleanup());

async function refusalOf(path: string): Promise<{ reason: LaunchRefusal; detail: string } | Attestation> {
  try {
    return await attest(path);
  } catch (error) {
    if (!(error instanceof LaunchRefused)) throw error;
    return { reason: error.reason, detail: error.detail };
  }
}

async function expectAttests(path: string): Promise<Attestation> {
  const attestation = await refusalOf(path);
  expect(attestation).toHaveProperty('digest');
  return attestation as Attestation;
}

describe('entry points', () => {
  it('a shebang shell script → unsupported_entrypoint (control: the native victim attests)', async () => {
    const s = await scene(fx);
    const script = join(s.dir, 'agent.sh');
    writeFileSync(script, '#!/bin/sh\ntouch "$TK_MARKER_DIR/victim.json"\n', { mode: 0o755 });
    const refused = await refusalOf(script);
    expect(refused).toMatchObject({ reason: 'unsupported_entrypoint' });
    expect((refused as { detail: string }).detail).toContain('#!/bin/sh');
    const control = await expectAttests(s.victim);
    expect(control.entrypoint).toBe('elf-dynamic');
    expect(control.interpreter?.path).toMatch(/ld-linux/);
    releaseAttestation(control);
  });

  it('a Node script (with and without #!) → unsupported_entrypoint', async () => {
    const s = await scene(fx);
    const withShebang = join(s.dir, 'agent.js');
    writeFileSync(withShebang, '#!/usr/bin/env node\nrequire("fs").writeFileSync(process.env.TK_MARKER_DIR + "/victim.json", "{}");\n', { mode: 0o755 });
    const bare = join(s.dir, 'bare.mjs');
    writeFileSync(bare, 'console.log("hi")\n', { mode: 0o755 });
    expect(await refusalOf(withShebang)).toMatchObject({ reason: 'unsupported_entrypoint', detail: like.stringContaining('#!/usr/bin/env node') });
    expect(await refusalOf(bare)).toMatchObject({ reason: 'unsupported_entrypoint', detail: like.stringContaining('not a native executable') });
    // A real installed Node CLI too (vitest's own bin).
    expect(await refusalOf(join(REPO, 'node_modules/.bin/vitest'))).toMatchObject({ reason: 'unsupported_entrypoint' });
  });

  it('a directory, random bytes and a truncated ELF → unsupported_entrypoint', async () => {
    const s = await scene(fx);
    expect(await refusalOf(s.dir)).toMatchObject({ reason: 'unsupported_entrypoint' });
    const junk = join(s.dir, 'junk');
    writeFileSync(junk, Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919) % 251)), { mode: 0o755 });
    expect(await refusalOf(junk)).toMatchObject({ reason: 'unsupported_entrypoint' });
    const truncated = join(s.dir, 'truncated');
    copyFileSync(fx.victim, truncated);
    chmodSync(truncated, 0o755);
    const { truncateSync } = await import('node:fs');
    truncateSync(truncated, 40);
    expect(await refusalOf(truncated)).toMatchObject({ reason: 'unsupported_entrypoint' });
  });
});

describe('permissions and resolution', () => {
  it('group- or other-writable → mutable_executable (control: 0755 attests)', async () => {
    const s = await scene(fx);
    for (const mode of [0o775, 0o757, 0o777]) {
      chmodSync(s.victim, mode);
      expect(await refusalOf(s.victim)).toMatchObject({ reason: 'mutable_executable', detail: like.stringContaining(mode.toString(8)) });
    }
    chmodSync(s.victim, 0o755);
    releaseAttestation(await expectAttests(s.victim));
  });

  it('a missing path, a relative path and a dangling symlink → resolution_changed (control: a good symlink attests through its chain)', async () => {
    const s = await scene(fx);
    expect(await refusalOf(join(s.dir, 'no-such-agent'))).toMatchObject({ reason: 'resolution_changed' });
    expect(await refusalOf('relative/agent')).toMatchObject({ reason: 'resolution_changed' });
    const dangling = join(s.dir, 'dangling');
    symlinkSync(join(s.dir, 'gone'), dangling);
    expect(await refusalOf(dangling)).toMatchObject({ reason: 'resolution_changed' });
    const hop2 = join(s.dir, 'hop2');
    const hop1 = join(s.dir, 'hop1');
    symlinkSync('agent', hop2);
    symlinkSync(hop2, hop1);
    const attestation = await expectAttests(hop1);
    expect(attestation.resolved).toBe(s.victim);
    expect(attestation.chain).toEqual([{ path: hop1, target: hop2 }, { path: hop2, target: 'agent' }, { path: s.victim }]);
    releaseAttestation(attestation);
  });
});

describe('the npm Codex shim', () => {
  it('node_modules/.bin/codex attests to the native binary with the environment the shim would set', async () => {
    const attestation = await expectAttests(CODEX_SHIM);
    try {
      expect(attestation.path).toBe(CODEX_SHIM);
      expect(attestation.resolved).toBe(realpathSync(CODEX_BINARY));
      expect(attestation.launchPath).toBe(realpathSync(CODEX_BINARY));
      expect(attestation.entrypoint).toBe('elf-static');
      expect(attestation.interpreter).toBeUndefined();
      expect(attestation.environment).toEqual({
        CODEX_MANAGED_PACKAGE_ROOT: realpathSync(join(REPO, 'node_modules/@openai/codex')),
        CODEX_MANAGED_BY_NPM: '1',
      });
      expect(attestation.chain[0]).toEqual({ path: CODEX_SHIM, target: '../@openai/codex/bin/codex.js' });
      expect(attestation.chain.at(-1)).toEqual({ path: realpathSync(CODEX_BINARY) });
      expect(attestation.digest).toBe(sha256File(CODEX_BINARY));
    } finally {
      releaseAttestation(attestation);
    }
  });
});

describe('the identity cache', () => {
  it('a file written moments ago is racy: not cached, re-hashed at launch; once settled it is cached', async () => {
    const s = await scene(fx);
    const fresh = await expectAttests(s.victim);
    expect([fresh.racy, fresh.cached]).toEqual([true, false]);
    releaseAttestation(fresh);
    const again = await expectAttests(s.victim);
    expect(again.cached).toBe(false);
    releaseAttestation(again);
    await settle();
    const settled = await expectAttests(s.victim);
    expect([settled.racy, settled.cached]).toEqual([false, false]);
    releaseAttestation(settled);
    const cached = await expectAttests(s.victim);
    expect([cached.racy, cached.cached]).toEqual([false, true]);
    releaseAttestation(cached);
  });

  it('an unchanged file is served from the cache; a touched or appended file is re-hashed', async () => {
    const s = await scene(fx);
    await settle();
    const first = await expectAttests(s.victim);
    const second = await expectAttests(s.victim);
    expect([first.cached, second.cached]).toEqual([false, true]);
    expect(second.digest).toBe(first.digest);
    releaseAttestation(first);
    releaseAttestation(second);
    // Touched (same bytes, new mtime): re-hashed, same digest.
    utimesSync(s.victim, new Date(), new Date(Date.now() + 5000));
    await settle();
    const touched = await expectAttests(s.victim);
    expect(touched.cached).toBe(false);
    expect(touched.digest).toBe(first.digest);
    releaseAttestation(touched);
    // Appended: re-hashed, new digest, and that is what the cache now holds.
    appendFileSync(s.victim, Buffer.from('trailing bytes'));
    await settle();
    const appended = await expectAttests(s.victim);
    expect(appended.cached).toBe(false);
    expect(appended.digest).toBe(sha256File(s.victim));
    expect(appended.digest).not.toBe(first.digest);
    releaseAttestation(appended);
    const again = await expectAttests(s.victim);
    expect([again.cached, again.digest]).toEqual([true, appended.digest]);
    releaseAttestation(again);
  });
});

/** Waits out the racy window so identity alone may vouch for the bytes. */
function settle(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, RACY_WINDOW_MS + 100));
}

describe('launch_timeout', () => {
  it('a parked launch not committed within timeoutMs is killed: launch_timeout, no committed receipt, no marker (control: committed in time, it runs)', async () => {
    for (const late of [true, false]) {
      const s = await scene(fx);
      const store = await receiptStore(join(s.dir, 'receipts.db'));
      try {
        const attestation = await attest(s.victim);
        let outcome: LaunchRefusal | 'ran';
        try {
          const run = await launchAttested({
            attestation,
            args: ['exit', '0'],
            cwd: s.dir,
            env: { TK_MARKER_DIR: s.markers },
            stdio: 'pipe',
            timeoutMs: 200,
            barriers: { parked: () => new Promise((r) => setTimeout(r, late ? 700 : 0)) },
            commit: store.commit,
            recordRefusal: store.recordRefusal,
          });
          run.stdin?.end();
          expect(await run.exited).toEqual({ code: 0, signal: null });
          outcome = 'ran';
        } catch (error) {
          if (!(error instanceof LaunchRefused)) throw error;
          outcome = error.reason;
        }
        await new Promise((r) => setTimeout(r, 30));
        if (late) {
          expect(outcome).toBe('launch_timeout');
          expect(readMarker(s.markers, 'victim')).toBeUndefined();
          expect(await store.committed()).toEqual([]);
          expect((await store.receipts()).map((r) => [r.kind, r.detail.reason])).toEqual([['launch_refused', 'launch_timeout']]);
        } else {
          expect(outcome).toBe('ran');
          expect(readMarker(s.markers, 'victim')?.tag).toBe('victim');
          expect(ranDigest(s.markers, 'victim')).toBe(attestation.digest);
          expect(await store.committed()).toHaveLength(1);
        }
        expect(preloadRan(s.markers)).toBe(false);
      } finally {
        store.close();
      }
    }
  });

  it('a slow commit holds the parked child (no backstop kill mid-commit); the agent runs only after its receipt', async () => {
    const s = await scene(fx);
    mkdirSync(s.markers, { recursive: true });
    const attestation = await attest(s.victim);
    let markerDuringCommit: unknown = 'unset';
    const launch = await launchAttested({
      attestation,
      args: ['exit', '0'],
      cwd: s.dir,
      env: { TK_MARKER_DIR: s.markers },
      stdio: 'pipe',
      timeoutMs: 150,
      commit: async () => {
        // Longer than timeoutMs: before the hold this killed the child after its receipt was written.
        await new Promise((r) => setTimeout(r, 500));
        markerDuringCommit = readMarker(s.markers, 'victim');
        return { seq: 1, hash: 'slow' };
      },
    });
    expect(await launch.exited).toStrictEqual({ code: 0, signal: null });
    expect(markerDuringCommit).toBeUndefined();
    // Control: once released, the agent ran.
    expect(readMarker(s.markers, 'victim')).toBeDefined();
  });
});

describe('the dynamic loader', () => {
  it('a loader replaced after attestation is refused at the exec boundary (control: the attested loader runs)', async () => {
    const system = realpathSync('/lib64/ld-linux-x86-64.so.2');
    for (const replace of [false, true]) {
      const s = await scene(fx);
      // A victim whose PT_INTERP names a private copy of the loader, so the test can swap it.
      const loader = join(s.dir, 'ld.so');
      copyFileSync(system, loader);
      const program = join(s.dir, 'dyn-agent');
      execFileSync('cc', ['-O1', '-DTAG="victim"', `-Wl,--dynamic-linker=${loader}`, '-o', program, join(fx.root, 'src', 'program.c')]);
      const attestation = await attest(program);
      expect(attestation.interpreter?.path).toBe(loader);
      if (replace) {
        // Same bytes, new object: rename a fresh copy over the attested loader.
        copyFileSync(system, `${loader}.new`);
        renameSync(`${loader}.new`, loader);
      }
      const outcome = await launchAttested({
        attestation,
        args: [],
        cwd: s.dir,
        env: { TK_MARKER_DIR: s.markers },
        stdio: 'pipe',
        commit: () => Promise.resolve({ seq: 1, hash: 'h' }),
      }).then(
        async (launch) => (await launch.exited, 'ran'),
        (error: unknown) => (error as LaunchRefused).reason,
      );
      expect(outcome).toBe(replace ? 'object_changed' : 'ran');
      expect(readMarker(s.markers, 'victim') !== undefined).toBe(!replace);
    }
  });
});
