// Start end to end (spec §7 "Start") with the real Codex binary through the native launcher and a mock
// model: `turnkeeper start fix-login --agent codex --prompt …` commits its launch receipt first, the
// prompt (which names no Todo) claims fix-login through the agent's own hook with binding `launch`,
// and the ready capture reaches the model.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { like } from '../support/matchers';
import { resolve } from 'node:path';
import { makeWorld, type World } from '../support/world';
import { developerTexts, startMockModelServer, type MockModelServer } from '../support/mockModelServer';
import { cleanupCodexHome, EXEC_FLAGS, makeCodexHome, writeCodexConfig, type CodexHome } from '../support/codexHarness';
import { killAll, receiptDocs, statusOf, turnkeeperRun } from '../support/agentHarness';

const CODEX_SHIM = resolve(__dirname, '../../node_modules/.bin/codex');

let world: World;
let codex: CodexHome;
let mock: MockModelServer;
let env: NodeJS.ProcessEnv;

/** Async: the mock model server lives in this process, so a blocking spawn would starve it. */
const turnkeeper = (args: string[]) => turnkeeperRun(args, { env, cwd: world.repo, timeoutMs: 90_000 });
const presentations = () => mock.requests.flatMap((request) => developerTexts(request)).filter((text) => text.startsWith('Turnkeeper: Todo'));

beforeAll(async () => {
  mock = await startMockModelServer();
  world = makeWorld('tk-e2e-start');
  codex = makeCodexHome({ prefix: 'tk-e2e-start-codex-', extraEnv: { TURNKEEPER_HOME: world.home } });
  env = codex.env;
  writeCodexConfig(codex.codexHome, mock.url);
  expect((await turnkeeper(['todo', 'add', 'Fix login', '--id', 'fix-login', '--body', 'Started, not mentioned (heron-2291).'])).code).toBe(0);
  expect((await turnkeeper(['hooks', 'install', '--agent', 'codex'])).code).toBe(0);
});
afterAll(async () => {
  killAll();
  await mock?.close();
  if (codex) cleanupCodexHome(codex);
  world?.cleanup();
});

describe('turnkeeper start with the real Codex', () => {
  it('starts a headless Codex turn whose prompt claims the Todo with binding launch, launch receipt first, and the ready capture reaches the model', async () => {
    const started = await turnkeeper([
      'start',
      'fix-login',
      '--agent',
      'codex',
      '--json',
      '--agent-bin',
      CODEX_SHIM,
      '--prompt',
      'please fix the login form',
      '--',
      ...EXEC_FLAGS,
    ]);
    expect(started.code, started.stderr.slice(-3000)).toBe(0);
    const decision = JSON.parse(started.stdout) as {
      decision: string;
      turn: string;
      launch: string;
      receipt: { seq: number };
      digest: string;
      exit: { code: number };
    };
    expect(decision).toMatchObject({
      decision: 'launched',
      exit: { code: 0 },
      turn: like.stringMatching(/^turn_[0-9a-f]{16}$/),
      launch: like.stringMatching(/^launch_[0-9a-f]{16}$/),
    });
    const attested = JSON.parse((await turnkeeper(['attest', CODEX_SHIM, '--json'])).stdout) as { digest: string };
    expect(decision.digest).toBe(attested.digest);

    // The prompt named no Todo: the started agent's own hook claimed it, and the model got the ready capture.
    const shown = presentations();
    expect(shown).toHaveLength(1);
    expect(shown[0]).toMatch(/^Turnkeeper: Todo fix-login .*epoch 1/);
    expect(shown[0]).toContain('heron-2291');
    const status = statusOf(world);
    expect(status.leases).toHaveLength(1);
    const [lease] = status.leases;
    expect(lease).toMatchObject({ todo: 'fix-login', epoch: 1, status: 'active', owner: like.stringMatching(/^codex:/) });

    // The chain: the start's launch receipt, then the agent's first hook, then the claim with binding launch.
    const docs = await receiptDocs(world);
    const committed = docs.find((doc) => doc.kind === 'launch_committed')!;
    expect(committed).toMatchObject({
      seq: decision.receipt.seq,
      todo: 'fix-login',
      detail: { start: true, launch: decision.launch, turn: decision.turn, agent: 'codex', digest: attested.digest },
    });
    expect(committed.capture).toBeUndefined();
    const bound = docs.find((doc) => doc.kind === 'capture_bound')!;
    expect(bound).toMatchObject({ capture: lease!.capture, owner: lease!.owner, detail: { binding: 'launch' } });
    const hooked = docs.filter((doc) => doc.kind === 'launch_hooked');
    expect(hooked).toHaveLength(1);
    expect(hooked[0]).toMatchObject({ owner: lease!.owner, detail: { launch: decision.launch } });
    expect(committed.seq).toBeLessThan(hooked[0]!.seq);
    expect(committed.seq).toBeLessThan(bound.seq);
    expect(JSON.parse((await turnkeeper(['verify', '--json'])).stdout)).toMatchObject({ ok: true, breaks: [] });
  });
});
