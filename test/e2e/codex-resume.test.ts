// Resume end to end (contract §7) with the real Codex binary through the native launcher: the
// resumed session's request carries the same ready capture, the lease is unchanged, the chain
// verifies, and `launch_committed` precedes the first hook event of that launch in the chain.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { like } from '../support/matchers';
import { resolve } from 'node:path';
import { makeWorld, type World } from '../support/world';
import { developerTexts, startMockModelServer, type MockModelServer } from '../support/mockModelServer';
import { cleanupCodexHome, codexBinaryPath, EXEC_FLAGS, makeCodexHome, writeCodexConfig, type CodexHome } from '../support/codexHarness';
import { expectLeaseUnchanged, killAll, presentationOf, runProcess, statusOf, turnkeeperRun } from '../support/agentHarness';

const CODEX_SHIM = resolve(__dirname, '../../node_modules/.bin/codex');

let world: World;
let codex: CodexHome;
let mock: MockModelServer;
let env: NodeJS.ProcessEnv;

/** Async: the mock model server lives in this process, so a blocking spawn would starve it. */
const turnkeeper = (args: string[]) => turnkeeperRun(args, { env, cwd: world.repo, timeoutMs: 90_000 });
const codexExec = (prompt: string) => runProcess(codexBinaryPath(), ['exec', ...EXEC_FLAGS, prompt], { cwd: world.repo, env, timeoutMs: 90_000 });
const presentations = (from: number) =>
  mock.requests
    .slice(from)
    .flatMap((request) => developerTexts(request))
    .filter((text) => text.startsWith('Turnkeeper: Todo'));

beforeAll(async () => {
  mock = await startMockModelServer();
  world = makeWorld('tk-e2e-resume');
  codex = makeCodexHome({ prefix: 'tk-e2e-resume-codex-', extraEnv: { TURNKEEPER_HOME: world.home } });
  env = codex.env;
  writeCodexConfig(codex.codexHome, mock.url);
  expect((await turnkeeper(['todo', 'add', 'Fix login', '--id', 'fix-login', '--body', 'Resume me (okapi-4410).'])).code).toBe(0);
  expect((await turnkeeper(['hooks', 'install', '--agent', 'codex'])).code).toBe(0);
});
afterAll(async () => {
  killAll();
  await mock?.close();
  if (codex) cleanupCodexHome(codex);
  world?.cleanup();
});

describe('turnkeeper resume with the real Codex', () => {
  it('relaunches the session through the launcher and presents the same capture, lease unchanged', async () => {
    const first = await codexExec('please work on #todo:fix-login');
    expect(first.code, first.stderr).toBe(0);
    const claimed = presentations(0);
    expect(claimed).toHaveLength(1);
    const [lease] = statusOf(world).leases;
    expect(lease).toMatchObject({ epoch: 1, status: 'active', owner: like.stringMatching(/^codex:/) });

    const before = mock.requests.length;
    const resumed = await turnkeeper(['resume', lease!.capture, '--json', '--agent-bin', CODEX_SHIM, '--', ...EXEC_FLAGS]);
    expect(resumed.code, resumed.stderr.slice(-3000)).toBe(0);
    const decision = JSON.parse(resumed.stdout) as { decision: string; receipt: { seq: number; hash: string }; digest: string; exit: { code: number } };
    expect(decision).toMatchObject({ decision: 'launched', exit: { code: 0 } });
    const attested = JSON.parse((await turnkeeper(['attest', CODEX_SHIM, '--json'])).stdout) as { digest: string };
    expect(decision.digest).toBe(attested.digest);

    // The resumed session's model request carries the very same bytes.
    expect(presentations(before)).toContain(claimed[0]);
    expectLeaseUnchanged(world, lease!);

    // The launch receipt is committed before the first hook event of that launch.
    const store = await world.store();
    const receipts = await store.launchReceipts(lease!.capture);
    const committed = receipts.find((r) => r.kind === 'launch_committed')!;
    const hooked = receipts.find((r) => r.kind === 'launch_hooked' && r.launch === committed.launch);
    expect(committed.seq).toBe(decision.receipt.seq);
    expect(hooked).toBeDefined();
    expect(hooked!.seq).toBeGreaterThan(committed.seq);
    const doc = JSON.parse((await store.receipts({ beforeSeq: committed.seq + 1, limit: 1 }))[0]!.doc) as { detail: Record<string, unknown> };
    expect(doc.detail).toMatchObject({ agent: 'codex', digest: attested.digest, launch: committed.launch });
    expect(await store.verifyChain()).toMatchObject({ ok: true });
    store.close();
    expect(JSON.parse((await turnkeeper(['verify', '--json'])).stdout)).toMatchObject({ ok: true, breaks: [] });
  });

  it('a resumed session carries the full ready capture once, and a one-line reminder per later context event (docs/hook-protocol.md, "How often the full capture is presented")', async () => {
    // A second Todo and a fresh session for it: the first test's session holds fix-login.
    expect((await turnkeeper(['todo', 'add', 'Tidy the signup form', '--id', 'tidy-signup', '--body', 'Measure me (heron-7731).'])).code).toBe(0);
    const first = await codexExec('please work on #todo:tidy-signup');
    expect(first.code, first.stderr).toBe(0);
    const capture = statusOf(world).leases.find((lease) => lease.todo === 'tidy-signup' && lease.status === 'active')!.capture;
    const full = presentationOf(world, capture);
    const measure = (from: number) => {
      const last = mock.requests.slice(from).at(-1)!;
      const texts = developerTexts(last).filter((text) => text.includes(capture));
      return {
        full: texts.filter((text) => text === full).length,
        reminders: texts.filter((text) => text !== full).length,
        bytes: texts.reduce((sum, text) => sum + Buffer.byteLength(text), 0),
        request: JSON.stringify(last.body).length,
      };
    };
    const rows = [{ run: 'claim', ...measure(0) }];
    for (const run of ['resume 1', 'resume 2']) {
      const before = mock.requests.length;
      const resumed = await turnkeeper(['resume', capture, '--json', '--agent-bin', CODEX_SHIM, '--', ...EXEC_FLAGS]);
      expect(resumed.code, resumed.stderr.slice(-3000)).toBe(0);
      rows.push({ run, ...measure(before) });
    }
    // The numbers docs/hook-protocol.md quotes: context bytes of this capture in each run's last model request.
    console.log(
      `full capture ${Buffer.byteLength(full)} bytes\n${rows.map((row) => `${row.run}: ${row.full} full + ${row.reminders} reminders = ${row.bytes} bytes of ${row.request}`).join('\n')}`,
    );
    expect(rows.map((row) => row.full)).toEqual([1, 1, 1]);
    expect(rows.map((row) => row.reminders)).toEqual([0, 2, 4]);
  });
});
