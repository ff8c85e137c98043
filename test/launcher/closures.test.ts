// Attested closures (contract §6 "Proven script shapes", docs/launcher.md §9) with the real Gemini CLI
// package: a copy of the installed @google/gemini-cli whose first chunk prints a marker on
// `--version` is attested, then the installed copy is attacked (rewritten in place, replaced, a file
// added). The launched agent must print the marker of the snapshot it was attested from, never the
// modified bytes; a changed installation gives a new snapshot and a receipt that names it; a damaged
// snapshot is refused; the load guard refuses code from outside the snapshot. The real node_modules
// is never touched: every attack hits a copy in a temp dir.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import {
  appendFileSync,
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { attest, releaseAttestation, type Attestation } from '../../src/launcher/attest';
import { clearClosureCache, closureBarriers, closureOf, closureEntryPath, listClosures, pruneClosures, verifySnapshot } from '../../src/launcher/closure';
import { closureGuard } from '../../src/launcher/closureGuard';
import { launchAttested, type LaunchFacts } from '../../src/launcher/launch';
import { LaunchRefused } from '../../src/launcher/refusals';
import { openSqliteAuthority, type SqliteAuthority } from '../../src/ledger/open';
import { canonicalJson, digestDocument } from '../../src/core/canonical';

process.env.TURNKEEPER_TEST_BARRIERS = '1';

const REPO = resolve(__dirname, '../..');
const INSTALLED = join(REPO, 'node_modules/@google/gemini-cli');
/** The chunk gemini.js imports first: evaluated before the CLI parses its arguments. */
const FIRST_CHUNK = 'bundle/chunk-W766PNZK.js';
const GOAL = '/turnkeeper/closure-tests';
/** Copilot's platform package is optional: npm installs it only on linux-x64. */
const COPILOT_PLATFORM = join(REPO, 'node_modules/@github/copilot-linux-x64/copilot');
const IS_ROOT = process.getuid?.() === 0;
/** A visible reason in the title of a test that skipIf may skip. */
const unless = (skipped: boolean, reason: string) => (skipped ? ` [skipped: ${reason}]` : '');

let root: string;
let home: string;
let store: SqliteAuthority;
let env: Record<string, string>;

/** A fresh installation: node_modules/@google/gemini-cli copied from the real one, its first chunk printing `marker`. */
function install(name: string, marker: string): { pkg: string; script: string } {
  const pkg = join(root, name, 'node_modules/@google/gemini-cli');
  mkdirSync(dirname(pkg), { recursive: true });
  cpSync(INSTALLED, pkg, { recursive: true });
  setMarker(pkg, marker);
  return { pkg, script: join(pkg, 'bundle/gemini.js') };
}

const markerLine = (marker: string) => `\nif (process.argv.includes("--version")) process.stdout.write("closure-marker: ${marker}\\n");\n`;
const original = () => readFileSync(join(INSTALLED, FIRST_CHUNK), 'utf8');
function setMarker(pkg: string, marker: string): void {
  writeFileSync(join(pkg, FIRST_CHUNK), original() + markerLine(marker));
}

/** Leaves the racy window (2 s after the last change), so the installation is indexed. */
const settle = () => new Promise((done) => setTimeout(done, 2100));

interface Ran {
  readonly stdout: string;
  readonly stderr: string;
  readonly code: number | null;
  readonly facts: LaunchFacts;
}

async function runVersion(attestation: Attestation, barriers: Parameters<typeof launchAttested>[0]['barriers'] = {}): Promise<Ran> {
  const launch = await launchAttested({
    attestation,
    args: ['--version'],
    cwd: root,
    env,
    stdio: 'pipe',
    barriers,
    timeoutMs: 30_000,
    commit: (facts) =>
      store.appendReceipt(
        {
          kind: 'launch_committed',
          goal: GOAL,
          detail: {
            pid: facts.pid,
            digest: facts.digest,
            closure: facts.closure?.digest ?? null,
            entry: facts.closure?.entry ?? null,
            argvDigest: facts.argvDigest,
          },
        },
        Date.now(),
      ),
    recordRefusal: async (reason, detail, facts) => {
      await store.appendReceipt(
        {
          kind: 'launch_refused',
          goal: GOAL,
          detail: { reason, why: detail.slice(0, 300), digest: facts.digest ?? null, closure: facts.closure?.digest ?? null },
        },
        Date.now(),
      );
    },
  });
  launch.stdin?.destroy();
  let stdout = '';
  let stderr = '';
  launch.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  launch.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exit = await launch.exited;
  await new Promise((done) => setTimeout(done, 50));
  return { stdout, stderr, code: exit.code, facts: launch.facts };
}

async function receipts(): Promise<{ kind: string; detail: Record<string, unknown> }[]> {
  return (await store.receipts({ limit: 10_000 })).map((row) => JSON.parse(row.doc) as { kind: string; detail: Record<string, unknown> });
}
const lastReceipt = async () => (await receipts())[0]!;

async function refusalOf(promise: Promise<unknown>): Promise<LaunchRefused> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof LaunchRefused) return error;
    throw error;
  }
  throw new Error('the launch was not refused');
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'tk-closures-'));
  home = join(root, 'tk-home');
  // The pinned Node first, as a user's PATH would name it; HOME keeps Gemini away from the developer's.
  env = { PATH: `${dirname(process.execPath)}:/usr/bin:/bin`, HOME: join(root, 'user'), TURNKEEPER_HOME: home, NO_COLOR: '1', TERM: 'dumb' };
  mkdirSync(env.HOME!, { recursive: true });
  store = (await openSqliteAuthority({ path: join(root, 'receipts.db'), create: true }))!;
});

afterAll(() => {
  store?.close();
  for (const dir of [home, join(root, 'prune-snapshots-home')]) if (existsSync(dir)) pruneClosures({ TURNKEEPER_HOME: dir }, { all: true });
  rmSync(root, { recursive: true, force: true });
});

describe('Gemini CLI runs from its attested closure', () => {
  // The control snapshot every attack compares with: built here, so that any one test (vitest -t)
  // runs on its own.
  let control: Attestation;
  let attestedDigest = '';
  beforeAll(async () => {
    const { script } = install('control', 'A');
    await settle();
    control = await attest(script, { env });
    attestedDigest = control.closure!.digest;
  });

  it('control: the snapshot is content-addressed and read-only, the runtime is the attested Node, the receipt names both digests', async () => {
    const attestation = control;
    const closure = attestation.closure!;
    expect(closure).toBeDefined();
    expect(attestation.entrypoint).toBe('elf-dynamic');
    expect(attestation.resolved).toBe(process.execPath);
    expect(closure.root).toBe(join(home, 'closures', closure.digest.slice('sha256:'.length)));
    // closureDigest is the digest of the canonical manifest, and manifest.json holds exactly those bytes.
    const manifestText = readFileSync(join(closure.root, 'manifest.json'), 'utf8');
    const manifest = JSON.parse(manifestText) as [string, string, number][];
    expect(canonicalJson(manifest)).toBe(manifestText);
    expect(digestDocument(manifest)).toBe(closure.digest);
    expect(manifest.map(([path]) => path)).toStrictEqual([...manifest.map(([path]) => path)].sort());
    expect(manifest.map(([path]) => path)).toContain('bundle/gemini.js');
    expect(manifest.map(([path]) => path)).toContain('package.json');
    // Read-only and private.
    expect(statSync(join(home, 'closures')).mode & 0o777).toBe(0o700);
    expect(statSync(closure.root).mode & 0o777).toBe(0o555);
    expect(statSync(join(closure.root, 'files', FIRST_CHUNK)).mode & 0o777).toBe(0o444);
    // Node runs the script inside the snapshot, behind the guard.
    expect(attestation.arguments).toStrictEqual(['--import', expect.stringMatching(/^data:text\/javascript,/), closureEntryPath(closure)]);
    expect(attestation.environment).toMatchObject({ GEMINI_CLI_NO_RELAUNCH: 'true' });

    const ran = await runVersion(attestation);
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).toContain('closure-marker: A');
    expect(ran.stdout).toContain('0.61.0');
    const receipt = await lastReceipt();
    expect(receipt).toMatchObject({ kind: 'launch_committed', detail: { digest: attestation.digest, closure: closure.digest, entry: 'bundle/gemini.js' } });
  });

  it('the same installation again: no new copy, the same snapshot (also across processes, by the index)', async () => {
    const script = join(root, 'control/node_modules/@google/gemini-cli/bundle/gemini.js');
    clearClosureCache();
    const again = await attest(script, { env });
    releaseAttestation(again);
    expect(again.closure).toMatchObject({ digest: attestedDigest, built: false });
    expect(listClosures({ TURNKEEPER_HOME: home }).snapshots).toHaveLength(1);
  });

  for (const attack of ['rewrite', 'replace', 'add'] as const) {
    it(`after attestation the installed package is attacked (${attack} a chunk): the launch runs the snapshot's bytes`, async () => {
      const { pkg, script } = install(`after-${attack}`, 'A');
      const attestation = await attest(script, { env });
      expect(attestation.closure!.digest).toBe(attestedDigest);
      const chunk = join(pkg, FIRST_CHUNK);
      if (attack === 'rewrite') writeFileSync(chunk, original() + markerLine('EVIL'));
      if (attack === 'replace') {
        writeFileSync(`${chunk}.new`, original() + markerLine('EVIL'));
        renameSync(`${chunk}.new`, chunk);
      }
      if (attack === 'add') {
        writeFileSync(join(pkg, 'bundle/evil.js'), 'process.stdout.write("closure-marker: EVIL\\n");\n');
        appendFileSync(join(pkg, 'bundle/gemini.js'), '\nawait import("./evil.js");\n');
      }
      const ran = await runVersion(attestation);
      expect(ran.code, ran.stderr).toBe(0);
      expect(ran.stdout).toContain('closure-marker: A');
      expect(ran.stdout).not.toContain('EVIL');
      expect(await lastReceipt()).toMatchObject({ kind: 'launch_committed', detail: { closure: attestedDigest } });
    });
  }

  it('a changed installation gives a new snapshot, and the receipt names it; the old one stays until pruned', async () => {
    const { pkg, script } = install('changed', 'A');
    await settle();
    const first = await attest(script, { env });
    releaseAttestation(first);
    expect(first.closure!.digest).toBe(attestedDigest);
    setMarker(pkg, 'B');
    const second = await attest(script, { env });
    expect(second.closure).toMatchObject({ built: true });
    expect(second.closure!.digest).not.toBe(attestedDigest);
    expect(second.digest).toBe(first.digest); // the same runtime
    const ran = await runVersion(second);
    expect(ran.stdout).toContain('closure-marker: B');
    expect(await lastReceipt()).toMatchObject({ kind: 'launch_committed', detail: { closure: second.closure!.digest, digest: second.digest } });
    const listed = listClosures({ TURNKEEPER_HOME: home }).snapshots.map((s) => s.digest);
    expect(listed).toEqual(expect.arrayContaining([attestedDigest, second.closure!.digest]));
  });

  it('a snapshot rewritten after attestation (chmod u+w, new bytes) is refused at the exec boundary: object_changed, no receipt of a launch', async () => {
    const { script } = install('tamper', 'T');
    const attestation = await attest(script, { env });
    const closure = attestation.closure!;
    const target = join(closure.root, 'files', FIRST_CHUNK);
    const before = (await receipts()).filter((r) => r.kind === 'launch_committed').length;
    const refusal = await refusalOf(
      runVersion(attestation, {
        parked: () => {
          chmodSync(dirname(target), 0o755);
          chmodSync(target, 0o644);
          writeFileSync(target, original() + markerLine('EVIL'));
          chmodSync(target, 0o444);
          chmodSync(dirname(target), 0o555);
        },
      }),
    );
    expect(refusal.reason).toBe('object_changed');
    expect((await receipts()).filter((r) => r.kind === 'launch_committed')).toHaveLength(before);
    expect(await lastReceipt()).toMatchObject({ kind: 'launch_refused', detail: { reason: 'object_changed', closure: closure.digest } });
    // The next attestation notices the damage and copies the installation again (same bytes, same digest).
    clearClosureCache();
    const again = await attest(script, { env });
    expect(again.closure!.digest).toBe(closure.digest);
    const ran = await runVersion(again);
    expect(ran.stdout).toContain('closure-marker: T');
  });

  it('a file added to the snapshot (or beside its files), or a snapshot file made writable, is refused', async () => {
    const { script } = install('extra', 'X');
    for (const damage of ['add', 'beside', 'mode'] as const) {
      const attestation = await attest(script, { env });
      const closure = attestation.closure!;
      const refusal = await refusalOf(
        runVersion(attestation, {
          before_fork: () => {
            if (damage === 'add') {
              chmodSync(join(closure.root, 'files/bundle'), 0o755);
              writeFileSync(join(closure.root, 'files/bundle/planted.js'), 'process.exit(3)\n');
              chmodSync(join(closure.root, 'files/bundle'), 0o555);
            } else if (damage === 'beside') {
              chmodSync(closure.root, 0o755);
              mkdirSync(join(closure.root, 'node_modules'));
              chmodSync(closure.root, 0o555);
            } else {
              chmodSync(join(closure.root, 'files', FIRST_CHUNK), 0o644);
            }
          },
        }),
      );
      expect(refusal.reason).toBe('object_changed');
      expect(refusal.detail).toContain(
        { add: 'bundle/planted.js is not in the manifest', beside: 'node_modules is not part of a snapshot', mode: 'has mode 644' }[damage],
      );
      clearClosureCache();
    }
  });

  it('a closures directory that is a symlink or open to others is refused', async () => {
    const { script } = install('dirs', 'D');
    const otherHome = join(root, 'other-home');
    mkdirSync(otherHome, { recursive: true });
    const elsewhere = join(root, 'elsewhere');
    mkdirSync(elsewhere, { mode: 0o700 });
    symlinkSync(elsewhere, join(otherHome, 'closures'));
    const symlinked = await refusalOf(attest(script, { env: { ...env, TURNKEEPER_HOME: otherHome } }));
    expect(symlinked.reason).toBe('resolution_changed');
    rmSync(join(otherHome, 'closures'));
    mkdirSync(join(otherHome, 'closures'), { mode: 0o700 });
    chmodSync(join(otherHome, 'closures'), 0o770);
    expect((await refusalOf(attest(script, { env: { ...env, TURNKEEPER_HOME: otherHome } }))).reason).toBe('mutable_executable');
  });

  it.skipIf(!IS_ROOT)(`a closures directory owned by someone else is refused${unless(!IS_ROOT, 'only root can chown it to another uid')}`, async () => {
    const { script } = install('foreign', 'F');
    const foreignHome = join(root, 'foreign-home');
    mkdirSync(join(foreignHome, 'closures'), { recursive: true, mode: 0o700 });
    chownSync(join(foreignHome, 'closures'), 12345, 12345);
    const foreign = await refusalOf(attest(script, { env: { ...env, TURNKEEPER_HOME: foreignHome } }));
    expect(foreign.reason).toBe('mutable_executable');
    expect(foreign.detail).toContain('uid 12345');
  });

  it("Copilot CLI's npm loader stays unsupported_entrypoint: it is a script of no known closure shape", async () => {
    const loader = join(REPO, 'node_modules/@github/copilot/npm-loader.js');
    expect((await refusalOf(attest(loader, { env }))).reason).toBe('unsupported_entrypoint');
  });

  const noCopilotPlatform = !existsSync(COPILOT_PLATFORM);
  it.skipIf(noCopilotPlatform)(
    `Copilot CLI's platform binary stays unsupported_entrypoint: a Node single-executable that loads code from a cache${unless(noCopilotPlatform, '@github/copilot-linux-x64 is optional and not installed here')}`,
    async () => {
      const binary = await refusalOf(attest(COPILOT_PLATFORM, { env }));
      expect(binary.reason).toBe('unsupported_entrypoint');
      expect(binary.detail).toContain('single-executable');
      // Control: plain Node (the sentinel unflipped) still attests.
      releaseAttestation(await attest(process.execPath, { env }));
    },
  );

  it('a script that is not a known closure shape stays unsupported_entrypoint', async () => {
    const other = join(root, 'plain/bin/tool.js');
    mkdirSync(dirname(other), { recursive: true });
    writeFileSync(other, '#!/usr/bin/env node\nconsole.log(1)\n', { mode: 0o755 });
    expect((await refusalOf(attest(other, { env }))).reason).toBe('unsupported_entrypoint');
  });
});

describe('the load guard', () => {
  /** A tiny package closed over like Gemini's, to run the guard against chosen code. */
  function tinyClosure(name: string, main: string, closureHome = home) {
    const pkg = join(root, name);
    mkdirSync(pkg, { recursive: true });
    writeFileSync(join(pkg, 'package.json'), '{"type":"module"}\n');
    writeFileSync(join(pkg, 'main.js'), main);
    writeFileSync(join(pkg, 'helper.js'), 'export const helper = "attested helper";\n');
    const closure = closureOf(pkg, 'main.js', { TURNKEEPER_HOME: closureHome });
    return {
      pkg,
      closure,
      run: (guarded = true) =>
        spawnSync(process.execPath, [...(guarded ? ['--import', closureGuard(closure)] : []), closureEntryPath(closure)], {
          encoding: 'utf8',
          env: { PATH: env.PATH },
        }),
    };
  }

  it('a module planted in a node_modules above the snapshot is not loaded (it is without the guard)', () => {
    const planted = join(home, 'node_modules/planted');
    mkdirSync(planted, { recursive: true });
    writeFileSync(join(planted, 'package.json'), '{"name":"planted","type":"module","main":"index.js"}\n');
    writeFileSync(join(planted, 'index.js'), 'console.log("PLANTED RAN");\n');
    const { run } = tinyClosure(
      'tiny-planted',
      'try { await import("planted"); } catch (e) { console.log("refused", e.code); }\nconsole.log((await import("./helper.js")).helper);\n',
    );
    const unguarded = run(false);
    expect(unguarded.stdout).toContain('PLANTED RAN');
    const guarded = run(true);
    expect(guarded.status, guarded.stderr).toBe(0);
    expect(guarded.stdout).not.toContain('PLANTED RAN');
    expect(guarded.stdout).toContain('refused ERR_TURNKEEPER_CLOSURE');
    expect(guarded.stdout).toContain('attested helper');
    rmSync(join(home, 'node_modules'), { recursive: true, force: true });
  });

  it('a TURNKEEPER_HOME reached through a symlink (/home -> /var/home, NFS homes) runs: the guard compares resolved paths (control: a planted module is still refused)', () => {
    mkdirSync(join(root, 'real-home'), { recursive: true });
    symlinkSync(join(root, 'real-home'), join(root, 'linked'));
    const linkedHome = join(root, 'linked', 'home');
    const { closure, run } = tinyClosure(
      'tiny-linked',
      'console.log((await import("./helper.js")).helper);\ntry { await import("planted"); } catch (e) { console.log("refused", e.code); }\n',
      linkedHome,
    );
    const planted = join(root, 'real-home', 'home', 'node_modules', 'planted');
    mkdirSync(planted, { recursive: true });
    writeFileSync(join(planted, 'package.json'), '{"name":"planted","type":"module","main":"index.js"}\n');
    writeFileSync(join(planted, 'index.js'), 'console.log("PLANTED RAN");\n');
    const guarded = run();
    expect(guarded.status, guarded.stderr).toBe(0);
    expect(guarded.stdout).toContain('attested helper');
    expect(guarded.stdout).toContain('refused ERR_TURNKEEPER_CLOSURE');
    expect(guarded.stdout).not.toContain('PLANTED RAN');
    expect(closure.root.startsWith(join(root, 'real-home', 'home', 'closures'))).toBe(true);
    // Listing and pruning see the same snapshot through the link.
    expect(listClosures({ TURNKEEPER_HOME: linkedHome }).snapshots.map((snapshot) => snapshot.root)).toEqual([closure.root]);
    pruneClosures({ TURNKEEPER_HOME: linkedHome }, { all: true });
  });

  it('a snapshot file rewritten after verification is refused when Node loads it', () => {
    const { closure, run } = tinyClosure(
      'tiny-late',
      'try { const { helper } = await import("./helper.js"); console.log(helper); } catch (e) { console.log("refused", e.code); }\n',
    );
    expect(run().stdout).toContain('attested helper');
    verifySnapshot(closure.root, closure.digest);
    const helper = join(closure.root, 'files/helper.js');
    chmodSync(helper, 0o644);
    writeFileSync(helper, 'export const helper = "EVIL helper";\n');
    const guarded = run();
    expect(guarded.stdout).not.toContain('EVIL');
    expect(guarded.stdout).toContain('refused ERR_TURNKEEPER_CLOSURE');
    // The main script itself is checked too.
    const main = join(closure.root, 'files/main.js');
    chmodSync(main, 0o644);
    writeFileSync(main, 'console.log("EVIL main")\n');
    const again = run();
    expect(again.stdout).not.toContain('EVIL');
    expect(again.status).not.toBe(0);
  });
});

describe('two processes building one snapshot', () => {
  it('the one that renames second keeps the first copy (it verifies) and drops its own, instead of failing with ENOTEMPTY', () => {
    const pkg = join(root, 'tiny-race');
    mkdirSync(pkg, { recursive: true });
    writeFileSync(join(pkg, 'main.js'), 'console.log("race")\n');
    const raceHome = join(root, 'race-home');
    let inner: ReturnType<typeof closureOf> | undefined;
    closureBarriers.beforeRename = () => {
      // The other process: it builds the same bytes and renames its copy first.
      closureBarriers.beforeRename = undefined;
      clearClosureCache();
      inner = closureOf(pkg, 'main.js', { TURNKEEPER_HOME: raceHome });
    };
    try {
      const outer = closureOf(pkg, 'main.js', { TURNKEEPER_HOME: raceHome });
      expect(inner).toBeDefined();
      expect(outer.digest).toBe(inner!.digest);
      expect(outer.root).toBe(inner!.root);
      expect(() => verifySnapshot(outer.root, outer.digest)).not.toThrow();
      // No copy is left behind, and only the one snapshot exists.
      expect(readdirSync(join(raceHome, 'closures')).filter((name) => name.startsWith('.staging-'))).toEqual([]);
      expect(listClosures({ TURNKEEPER_HOME: raceHome }).snapshots).toHaveLength(1);
    } finally {
      closureBarriers.beforeRename = undefined;
    }
  });
});

describe('turnkeeper closures prune', () => {
  it("leaves a copy a live process is making alone, and removes dead processes' copies and index temp files and anything older than an hour", () => {
    const pruneHome = join(root, 'prune-home');
    const dir = join(pruneHome, 'closures');
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    chmodSync(dir, 0o700);
    const dead = spawnSync(process.execPath, ['-e', '0']).pid;
    const live = join(dir, `.staging-${process.pid}-aaaa`);
    const deadCopy = join(dir, `.staging-${dead}-bbbb`);
    const old = join(dir, '.staging-cccc');
    for (const copy of [live, deadCopy, old]) {
      mkdirSync(join(copy, 'files'), { recursive: true });
      writeFileSync(join(copy, 'files', 'x.js'), 'x');
    }
    const liveIndex = join(dir, `.index.json.${process.pid}.abcdef.tmp`);
    const deadIndex = join(dir, `.index.json.${dead}.abcdef.tmp`);
    const oldIndex = join(dir, '.index-0123456789ab');
    for (const file of [liveIndex, deadIndex, oldIndex]) writeFileSync(file, '{}');
    const twoHoursAgo = (Date.now() - 2 * 60 * 60 * 1000) / 1000;
    utimesSync(old, twoHoursAgo, twoHoursAgo);
    utimesSync(oldIndex, twoHoursAgo, twoHoursAgo);
    expect(listClosures({ TURNKEEPER_HOME: pruneHome }).stale.sort()).toEqual([deadCopy, deadIndex, oldIndex, old].sort());
    pruneClosures({ TURNKEEPER_HOME: pruneHome });
    expect(readdirSync(dir).sort()).toEqual([live, liveIndex, join(dir, 'index.json')].map((path) => path.slice(dir.length + 1)).sort());
  });

  it('keeps a snapshot a running process names, even with --all (control: once that process is gone, prune removes it)', async () => {
    const inUseHome = { TURNKEEPER_HOME: join(root, 'prune-in-use-home') };
    const pkg = join(root, 'tiny-in-use');
    mkdirSync(pkg, { recursive: true });
    writeFileSync(join(pkg, 'main.js'), 'setTimeout(() => {}, 60_000);\n');
    const closure = closureOf(pkg, 'main.js', inUseHome);
    // As a launched agent does, the process names the snapshot's script on its command line.
    const agent = spawn(process.execPath, [closureEntryPath(closure)], { stdio: 'ignore' });
    const exited = new Promise((done) => agent.once('exit', done));
    try {
      const pruned = pruneClosures(inUseHome, { all: true });
      expect(pruned.removed).toEqual([]);
      expect(pruned.kept).toEqual([{ digest: closure.digest, why: `in use by pid ${agent.pid}` }]);
      expect(() => verifySnapshot(closure.root, closure.digest)).not.toThrow();
    } finally {
      agent.kill('SIGKILL');
    }
    await exited;
    expect(pruneClosures(inUseHome, { all: true }).removed.map((removed) => removed.digest)).toEqual([closure.digest]);
    expect(existsSync(closure.root)).toBe(false);
  });

  it('removes snapshots no installation uses now, keeps the current ones, and reports the disk freed', async () => {
    // Its own TURNKEEPER_HOME and installation: an old snapshot (before the installation changed) and
    // the current one.
    const pruneEnv = { ...env, TURNKEEPER_HOME: join(root, 'prune-snapshots-home') };
    const { pkg, script } = install('prune-snapshots', 'P1');
    await settle();
    const old = await attest(script, { env: pruneEnv });
    releaseAttestation(old);
    setMarker(pkg, 'P2');
    await settle();
    const current = await attest(script, { env: pruneEnv });
    releaseAttestation(current);
    expect(current.closure!.digest).not.toBe(old.closure!.digest);
    const before = listClosures(pruneEnv);
    expect(before.snapshots.map((s) => s.digest).sort()).toEqual([old.closure!.digest, current.closure!.digest].sort());
    expect(before.snapshots.find((s) => s.digest === current.closure!.digest)!.current).toEqual([pkg]);

    const pruned = pruneClosures(pruneEnv);
    expect(pruned.freedBytes).toBeGreaterThan(0);
    const after = listClosures(pruneEnv).snapshots;
    expect(after.map((s) => s.digest)).toEqual([current.closure!.digest]);
    const closures = join(pruneEnv.TURNKEEPER_HOME, 'closures');
    for (const name of readdirSync(closures)) expect(name.startsWith('.staging-')).toBe(false);
    expect(lstatSync(closures).isDirectory()).toBe(true);
  });
});
