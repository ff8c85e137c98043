// `turnkeeper resume` of a Gemini capture end to end (spec §6 "Proven script shapes", §7): the real
// Gemini CLI 0.61 is launched through the native launcher from its attested closure (Node parked and
// verified, the package snapshot under $TURNKEEPER_HOME/closures), talks to a mock Gemini API on
// 127.0.0.1, and its hooks present the same ready capture with the lease unchanged. The receipt names
// the runtime digest and the closure digest.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { like } from '../support/matchers';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeWorld, type World } from '../support/world';
import { asHookContext, contentsText, GEMINI_READY_LINE, lastUserText, startGeminiMock, type GeminiMock } from '../support/geminiMock';
import {
  BIN,
  describeRun,
  geminiEnv,
  installHooksWithCli,
  killAll,
  presentationOf,
  runProcess,
  statusOf,
  expectLeaseUnchanged,
  verifyOf,
} from '../support/agentHarness';
import { CLI } from '../support/world';

const GEMINI = join(BIN, 'gemini');
const RUN_TIMEOUT_MS = 60_000;

let world: World;
let mock: GeminiMock;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  mock = await startGeminiMock(() => ({ text: 'ok' }));
  world = makeWorld('tk-e2e-gemini-launch');
  let home: string;
  ({ env, home } = geminiEnv(world, mock));
  expect(world.cli(['todo', 'add', 'Fix login', '--id', 'fix-login', '--body', 'Launch me from the closure (lynx-2207).']).code).toBe(0);
  installHooksWithCli(world, 'gemini', { GEMINI_CLI_HOME: home });
});

afterAll(async () => {
  killAll();
  await mock?.close();
  world?.cleanup();
});

describe('turnkeeper resume launches Gemini CLI from its attested closure', () => {
  it('the resumed session gets the same ready capture, the lease is unchanged, and the receipt names runtime and closure', async () => {
    // A bound Gemini turn: the plain CLI with a Turn claims the Todo.
    const prompt = 'please work on #todo:fix-login';
    const from = mock.requests.length;
    const first = await runProcess(GEMINI, ['-p', prompt, '--skip-trust', '-o', 'json'], {
      cwd: world.repo,
      env: { ...env, TURNKEEPER_TURN: 'turn-gemini-launch' },
      timeoutMs: RUN_TIMEOUT_MS,
    });
    expect(first.code, describeRun('gemini -p', first)).toBe(0);
    const claimed = mock.requests.slice(from).find((r) => contentsText(r).includes(prompt));
    expect(GEMINI_READY_LINE.exec(lastUserText(claimed!)), lastUserText(claimed!).slice(0, 2000)).not.toBeNull();
    const [lease] = statusOf(world).leases.filter((l) => l.status === 'active');
    expect(lease).toMatchObject({ todo: 'fix-login', epoch: 1, owner: like.stringMatching(/^gemini:/) });
    const presentation = presentationOf(world, lease!.capture);

    // Resume through the launcher: `node_modules/.bin/gemini` is a script, so it runs from a closure.
    const before = mock.requests.length;
    const resumed = await runProcess(process.execPath, [CLI, 'resume', lease!.capture, '--json', '--agent-bin', GEMINI, '--', '--skip-trust', '-o', 'json'], {
      cwd: world.repo,
      env,
      timeoutMs: RUN_TIMEOUT_MS,
    });
    expect(resumed.code, describeRun('turnkeeper resume', resumed)).toBe(0);
    const decision = JSON.parse(resumed.stdout) as { decision: string; exit: { code: number }; digest: string };
    expect(decision, resumed.stderr.slice(-3000)).toMatchObject({ decision: 'launched', exit: { code: 0 } });

    // The same ready capture reaches the model from the resumed session: its conversation carries the
    // full bytes from the claim, and the resumed prompt is told in one line that it still holds them
    // (a launch's TURNKEEPER_TURN is the same for every prompt, so it is no retry of the claiming Turn).
    const request = mock.requests.slice(before).find((r) => lastUserText(r).includes('Continue the interrupted turn'));
    expect(request, `requests after resume: ${mock.requests.length - before}\n${resumed.stderr.slice(-2000)}`).toBeDefined();
    expect(contentsText(request!)).toContain(asHookContext(presentation));
    expect(lastUserText(request!)).toContain(`${presentation.split('\n')[0]}\nThis session still holds the lease`);
    expectLeaseUnchanged(world, lease!);

    // The receipt: the runtime (Node, an ELF) and the snapshot it ran.
    const store = await world.store();
    let detail: Record<string, string> = {};
    try {
      const receipts = await store.launchReceipts(lease!.capture);
      const committed = receipts.filter((r) => r.kind === 'launch_committed');
      expect(committed).toHaveLength(1);
      detail = (JSON.parse((await store.receipts({ limit: 1000 })).find((r) => r.seq === committed[0]!.seq)!.doc) as { detail: Record<string, string> }).detail;
      expect(detail.digest).toBe(decision.digest);
      expect(detail.closure).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect(detail.entry).toBe('bundle/gemini.js');
      const snapshot = join(world.home, 'closures', detail.closure!.slice('sha256:'.length));
      expect(existsSync(join(snapshot, 'files/bundle/gemini.js'))).toBe(true);
      expect(readFileSync(join(snapshot, 'manifest.json'), 'utf8')).toContain('"bundle/gemini.js"');
      // Its hooks fired after the launch was committed (rule 3 accepted the launched agent).
      const hooked = receipts.find((r) => r.kind === 'launch_hooked');
      expect(hooked?.seq ?? 0).toBeGreaterThan(committed[0]!.seq);
    } finally {
      store.close();
    }
    expect(verifyOf(world).ok).toBe(true);

    // The snapshot is listed with its disk use, and doctor counts it.
    const listed = JSON.parse(world.cli(['closures', '--json']).stdout) as { snapshots: { digest: string; bytes: number; current: string[] }[] };
    expect(listed.snapshots).toHaveLength(1);
    expect(listed.snapshots[0]).toMatchObject({ digest: detail.closure, current: [expect.stringMatching(/@google\/gemini-cli$/)] });
    expect(listed.snapshots[0]!.bytes).toBeGreaterThan(10 * 1024 * 1024);
    const doctor = JSON.parse(world.cli(['doctor', '--json']).stdout) as { closures: { snapshots: number; bytes: number } };
    expect(doctor.closures.snapshots).toBe(1);
    expect(doctor.closures.bytes).toBeGreaterThanOrEqual(listed.snapshots[0]!.bytes);
  });
});
