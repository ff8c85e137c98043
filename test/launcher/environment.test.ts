// The closed list of code-injection variables (contract §6, src/launcher/environment.ts): every
// variable of every runtime group is refused before anything is forked, each group has its control
// (the same launch without the variable runs), an explicitly allowed variable runs and is recorded,
// and the real Claude Code binary (a Bun executable) shows why BUN_OPTIONS is on the list.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { like } from '../support/matchers';
import { attest } from '../../src/launcher/attest';
import { INJECTION_VARIABLES, decideInjection } from '../../src/launcher/environment';
import { launchAttested, type LaunchRequest } from '../../src/launcher/launch';
import { LaunchRefused } from '../../src/launcher/refusals';
import { buildFixtures, readMarker, receiptStore, scene, type Fixtures, type ReceiptStore, type Scene } from './fixtures';

let fx: Fixtures;
beforeAll(() => {
  fx = buildFixtures('tk-environment');
});
afterAll(() => fx?.cleanup());

/** Launches `path` with `env`; 'ran' (after it exited) or the refusal reason. */
async function launch(path: string, cwd: string, store: ReceiptStore, env: Record<string, string>, extra: Partial<LaunchRequest> = {}): Promise<string> {
  try {
    const run = await launchAttested({
      attestation: await attest(path),
      args: ['exit', '0'],
      cwd,
      env,
      stdio: 'pipe',
      commit: store.commit,
      recordRefusal: store.recordRefusal,
      ...extra,
    });
    run.stdin?.end();
    run.stdout?.resume();
    run.stderr?.resume();
    await run.exited;
    return 'ran';
  } catch (error) {
    if (!(error instanceof LaunchRefused)) throw error;
    return error.reason;
  }
}

/** Every exact name of a group, and one example name for each of its prefixes. */
const namesOf = (group: (typeof INJECTION_VARIABLES)[number]) => [
  ...group.names,
  ...group.prefixes.map((prefix) => `${prefix}${prefix === 'LD_' ? 'AUDIT' : prefix === 'DYLD_' ? 'INSERT_LIBRARIES' : 'DIR'}`),
];

describe('code-injection variables, by runtime', () => {
  it('the table covers the runtimes of every supported agent and their tools', () => {
    expect(INJECTION_VARIABLES.map((group) => group.runtime)).toEqual(['dynamic loader', 'node', 'bun', 'deno', 'python', 'ruby', 'perl', 'java']);
    for (const name of [
      'LD_PRELOAD',
      'LD_LIBRARY_PATH',
      'GLIBC_TUNABLES',
      'NODE_OPTIONS',
      'BUN_OPTIONS',
      'BUN_INSPECT_PRELOAD',
      'DENO_DIR',
      'PYTHONPATH',
      'PYTHONSTARTUP',
      'RUBYOPT',
      'PERL5OPT',
      'JAVA_TOOL_OPTIONS',
    ]) {
      expect(decideInjection({ [name]: 'x' }).refused, name).toEqual([name]);
    }
  });

  for (const group of INJECTION_VARIABLES) {
    it(`${group.runtime}: ${namesOf(group).join(', ')} → loader_environment_rejected, recorded (control: without it the launch runs; allowed by name it runs and the receipt names it)`, async () => {
      const s = await scene(fx);
      const store = await receiptStore(join(s.dir, 'receipts.db'));
      try {
        for (const name of namesOf(group)) {
          expect(await launch(s.victim, s.dir, store, { TK_MARKER_DIR: s.markers, [name]: '/nonexistent/evil' }), name).toBe('loader_environment_rejected');
        }
        expect(readMarker(s.markers, 'victim')).toBeUndefined();
        expect(await store.committed()).toEqual([]);
        const refusals = (await store.receipts()).filter((receipt) => receipt.kind === 'launch_refused');
        expect(refusals.map((receipt) => [receipt.detail.reason, receipt.detail.loaderEnvironment])).toEqual(
          namesOf(group).map((name) => ['loader_environment_rejected', `refused: ${name}`]),
        );
        expect(String(refusals[0]!.detail.why)).toContain(`${namesOf(group)[0]} (${group.runtime})`);

        // Control: the same launch without the variable runs, and records `none`.
        expect(await launch(s.victim, s.dir, store, { TK_MARKER_DIR: s.markers })).toBe('ran');
        expect(readMarker(s.markers, 'victim')).toBeDefined();
        expect((await store.committed()).map((receipt) => receipt.detail.loaderEnvironment)).toEqual(['none']);

        // Allowed explicitly: it runs, and the receipt names it; another variable of the list is still refused.
        const name = namesOf(group)[0]!;
        expect(await launch(s.victim, s.dir, store, { TK_MARKER_DIR: s.markers, [name]: '/nonexistent/evil' }, { allowLoaderVariables: [name] })).toBe('ran');
        expect((await store.committed()).map((receipt) => receipt.detail.loaderEnvironment)).toEqual(['none', `allowed: ${name}`]);
        expect(
          await launch(
            s.victim,
            s.dir,
            store,
            { TK_MARKER_DIR: s.markers, [name]: 'x', RUBYOPT: '-revil' },
            { allowLoaderVariables: group.runtime === 'ruby' ? ['RUBYLIB'] : [name] },
          ),
        ).toBe('loader_environment_rejected');
        expect((await store.receipts()).at(-1)!.detail.loaderEnvironment).toMatch(/^refused: RUBYOPT/);
      } finally {
        store.close();
      }
    });
  }

  it('variables that are not code injection pass and are not recorded: CA certificates, ELECTRON_RUN_AS_NODE, malloc tuning, lower-case look-alikes', async () => {
    const s = await scene(fx);
    const store = await receiptStore(join(s.dir, 'receipts.db'));
    try {
      const env = {
        TK_MARKER_DIR: s.markers,
        NODE_EXTRA_CA_CERTS: '/etc/ssl/certs/ca.pem',
        ELECTRON_RUN_AS_NODE: '1',
        MALLOC_ARENA_MAX: '2',
        PYTHONDONTWRITEBYTECODE: '1',
        ld_preload: '/x',
        LD_: 'x',
      };
      expect(await launch(s.victim, s.dir, store, env)).toBe('ran');
      expect((await store.committed()).map((receipt) => receipt.detail.loaderEnvironment)).toEqual(['none']);
    } finally {
      store.close();
    }
  });
});

const CLAUDE = resolve(__dirname, '../../node_modules/@anthropic-ai/claude-code/bin/claude.exe');

describe.runIf(existsSync(CLAUDE))('the real Claude Code binary (Bun)', () => {
  it('BUN_OPTIONS=--preload and BUN_INSPECT_PRELOAD are refused before it runs: no preload marker (control: spawned directly, the preload runs; allowed by name through Turnkeeper, it runs and is recorded)', async () => {
    const s: Scene = await scene(fx);
    const store = await receiptStore(join(s.dir, 'receipts.db'));
    const evil = join(s.dir, 'evil.js');
    writeFileSync(evil, 'require("fs").writeFileSync(process.env.TK_MARKER_DIR + "/bun-preload.txt", String(process.pid));\n');
    const marker = join(s.markers, 'bun-preload.txt');
    const home = join(s.dir, 'home');
    mkdirSync(home);
    const base = { TK_MARKER_DIR: s.markers, HOME: home, PATH: '/usr/bin:/bin', DISABLE_AUTOUPDATER: '1' };
    const variables = { BUN_OPTIONS: `--preload ${evil}`, BUN_INSPECT_PRELOAD: evil };
    try {
      for (const [name, value] of Object.entries(variables)) {
        // Through Turnkeeper: refused at the prepared state, nothing forked, the preload never ran.
        const outcome = await launch(CLAUDE, s.dir, store, { ...base, [name]: value }, { args: ['--version'] });
        expect(outcome, name).toBe('loader_environment_rejected');
        expect(existsSync(marker), name).toBe(false);
        // Control: the same binary and environment without Turnkeeper's check runs the attacker's script.
        const direct = spawnSync(CLAUDE, ['--version'], { env: { ...base, [name]: value }, encoding: 'utf8', timeout: 30_000 });
        expect(direct.stdout, name).toMatch(/Claude Code/);
        expect(existsSync(marker), `${name}: a direct spawn ran the preload`).toBe(true);
        expect(Number(readFileSync(marker, 'utf8'))).toBe(direct.pid);
        rmSync(marker);
      }
      expect(await store.committed()).toEqual([]);
      // Allowed by name: the launcher runs it (the preload with it), and the receipt says so.
      const allowed = await launch(
        CLAUDE,
        s.dir,
        store,
        { ...base, BUN_OPTIONS: variables.BUN_OPTIONS },
        { args: ['--version'], allowLoaderVariables: ['BUN_OPTIONS'] },
      );
      expect(allowed).toBe('ran');
      expect(existsSync(marker)).toBe(true);
      const [receipt] = await store.committed();
      expect(receipt!.detail).toMatchObject({ loaderEnvironment: 'allowed: BUN_OPTIONS', digest: like.stringMatching(/^sha256:/) });
      expect(receipt!.detail.argv).toBe(JSON.stringify([realpathSync(CLAUDE), '--version']));
    } finally {
      store.close();
    }
  });
});
