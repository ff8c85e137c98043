// `turnkeeper start` of the real Gemini CLI end to end (spec §6 "Proven script shapes", §7 "Start"):
// Gemini CLI 0.61 runs through the native launcher from its attested closure (Node parked and
// verified, the package snapshot under $TURNKEEPER_HOME/closures) against a mock Gemini API on
// 127.0.0.1, with Turnkeeper's hooks installed by the real CLI. `turnkeeper start fix-login --agent
// gemini --prompt …` commits its launch receipt before any hook of the session; the prompt names no
// Todo, and Gemini's own BeforeAgent hook claims fix-login with binding `launch` (Gemini payloads
// carry no Turn: the launcher's TURNKEEPER_TURN is the capture's); the stored ready capture reaches
// the model and the holder's shell call runs. A resume of that capture presents the same bytes with
// the lease unchanged (gemini-launch.test.ts covers resume itself), and a second start of the held
// Todo is refused [lease_held] before Gemini runs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { like } from '../support/matchers';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeWorld, type World } from '../support/world';
import { asHookContext, contentsText, GEMINI_READY_LINE, lastFunctionResponse, lastUserText, startGeminiMock, type GeminiMock } from '../support/geminiMock';
import {
  BIN,
  expectLeaseUnchanged,
  geminiEnv,
  installHooksWithCli,
  killAll,
  presentationOf,
  receiptDocs,
  statusOf,
  turnkeeperRun,
  verifyOf,
  type LeaseJson,
} from '../support/agentHarness';
import type { ReceiptDocument } from '../../src/core/receipts';

// The npm link to bundle/gemini.js, as gemini-launch.test.ts passes it: a script, so it runs from a closure.
const GEMINI = join(BIN, 'gemini');
const BODY = 'Distinctive body: the login form drops the session cookie on redirect (ibis-4417).';
const START_PROMPT = 'Please fix the login form cookie (start-ibis-4418).';
// The agent's own arguments after `--`: trust the folder, JSON output, and let the shell call run in -p.
const GEMINI_ARGS = ['--', '--skip-trust', '-o', 'json', '--approval-mode', 'yolo'];

let world: World;
let mock: GeminiMock;
let env: NodeJS.ProcessEnv;
let nextShell: string | undefined;

/** Async: the mock model server lives in this process, so a blocking spawn would starve it. */
const turnkeeper = (args: string[]) => turnkeeperRun(args, { env, cwd: world.repo, timeoutMs: 60_000 });

interface Decision {
  readonly ok: boolean;
  readonly decision: string;
  readonly turn: string;
  readonly launch: string;
  readonly receipt: { seq: number };
  readonly digest: string;
  readonly exit: { code: number | null };
}

beforeAll(async () => {
  mock = await startGeminiMock((req) => {
    if (lastFunctionResponse(req) !== undefined) return { text: 'done' };
    if (nextShell !== undefined) {
      const command = nextShell;
      nextShell = undefined;
      return { functionCall: { name: 'run_shell_command', args: { command, description: 'touch a marker' } } };
    }
    return { text: 'ok' };
  });
  world = makeWorld('tk-e2e-gemini-start');
  let home: string;
  ({ env, home } = geminiEnv(world, mock));
  const add = world.cli(['todo', 'add', 'Fix login', '--id', 'fix-login', '--body', BODY]);
  expect(add.code, add.stderr).toBe(0);
  installHooksWithCli(world, 'gemini', { GEMINI_CLI_HOME: home });
});

afterAll(async () => {
  killAll();
  await mock?.close();
  world?.cleanup();
});

describe('turnkeeper start launches Gemini CLI from its attested closure', () => {
  let lease: LeaseJson;
  let presentation = '';
  let committed: ReceiptDocument;

  it('launch receipt first, the unnamed prompt claims fix-login with binding launch, the ready capture reaches the model, and the holder may run a shell command', async () => {
    expect(START_PROMPT).not.toContain('#todo');
    const marker = join(world.root, 'marker-start');
    nextShell = `touch '${marker}'`;
    const from = mock.requests.length;
    const started = await turnkeeper(['start', 'fix-login', '--agent', 'gemini', '--json', '--agent-bin', GEMINI, '--prompt', START_PROMPT, ...GEMINI_ARGS]);
    expect(started.code, started.stderr.slice(-4000)).toBe(0);
    const decision = JSON.parse(started.stdout) as Decision;
    expect(decision, started.stderr.slice(-4000)).toMatchObject({
      ok: true,
      decision: 'launched',
      agent: 'gemini',
      exit: { code: 0 },
      turn: like.stringMatching(/^turn_[0-9a-f]{16}$/),
      launch: like.stringMatching(/^launch_[0-9a-f]{16}$/),
    });
    // The digest is the runtime's (Node, an ELF), as attesting the same entry names it.
    const attested = JSON.parse((await turnkeeper(['attest', GEMINI, '--json'])).stdout) as { digest: string; entrypoint: string };
    expect(decision.digest).toBe(attested.digest);

    // The prompt named no Todo: the started Gemini's own BeforeAgent hook claimed fix-login.
    const req = mock.requests.slice(from).find((r) => contentsText(r).includes(START_PROMPT));
    expect(req, `turn requests: ${mock.requests.length - from}\n${started.stderr.slice(-3000)}`).toBeDefined();
    const status = statusOf(world);
    expect(status.leases).toHaveLength(1);
    lease = status.leases[0]!;
    expect(lease).toMatchObject({ todo: 'fix-login', epoch: 1, status: 'active', owner: like.stringMatching(/^gemini:/) });
    // Gemini's payloads have no Turn: the capture's is the one the launcher gave it.
    expect(status.captures.find((c) => c.id === lease.capture)).toMatchObject({
      agent: 'gemini',
      session: lease.owner.slice('gemini:'.length),
      turn: decision.turn,
      state: 'ready',
    });
    presentation = presentationOf(world, lease.capture);
    expect(presentation).toContain(BODY);
    const text = lastUserText(req!);
    expect(GEMINI_READY_LINE.exec(text)?.[1], text.slice(0, 3000)).toBe(lease.capture);
    expect(text).toContain(asHookContext(presentation));

    // The mock model asked for a shell call; BeforeTool let the live lease holder run it.
    const followUp = mock.requests.slice(from).find((r) => lastFunctionResponse(r) !== undefined);
    expect(followUp, started.stderr.slice(-3000)).toBeDefined();
    expect(lastFunctionResponse(followUp!)!.response?.error).toBeUndefined();
    expect(existsSync(marker), 'the lease holder may run a shell command').toBe(true);

    // The chain: the start's launch receipt (runtime and closure), then every receipt of the session.
    const docs = await receiptDocs(world);
    const launches = docs.filter((doc) => doc.kind === 'launch_committed');
    expect(launches).toHaveLength(1);
    committed = launches[0]!;
    expect(committed).toMatchObject({
      seq: decision.receipt.seq,
      todo: 'fix-login',
      detail: {
        start: true,
        launch: decision.launch,
        turn: decision.turn,
        agent: 'gemini',
        digest: attested.digest,
        closure: like.stringMatching(/^sha256:[0-9a-f]{64}$/),
        entry: 'bundle/gemini.js',
      },
    });
    expect(committed.capture).toBeUndefined();
    const snapshot = join(world.home, 'closures', String(committed.detail!.closure).slice('sha256:'.length));
    expect(existsSync(join(snapshot, 'files/bundle/gemini.js'))).toBe(true);
    expect(readFileSync(join(snapshot, 'manifest.json'), 'utf8')).toContain('"bundle/gemini.js"');
    const ofSession = docs.filter((doc) => doc.owner === lease.owner);
    expect(ofSession.length).toBeGreaterThan(0);
    for (const doc of ofSession) expect(doc.seq, doc.kind).toBeGreaterThan(committed.seq);
    const bound = docs.filter((doc) => doc.kind === 'capture_bound');
    expect(bound).toHaveLength(1);
    expect(bound[0]).toMatchObject({ capture: lease.capture, owner: lease.owner, detail: { binding: 'launch', turn: decision.turn } });
    const hooked = docs.filter((doc) => doc.kind === 'launch_hooked');
    expect(hooked).toHaveLength(1);
    expect(hooked[0]).toMatchObject({ owner: lease.owner, detail: { launch: decision.launch } });
    expect(hooked[0]!.seq).toBeGreaterThan(committed.seq);
    expect(verifyOf(world).ok).toBe(true);
  });

  it('resume relaunches from the same closure and the same ready capture bytes reach the model, lease unchanged', async () => {
    expect(presentation).not.toBe('');
    const from = mock.requests.length;
    const resumed = await turnkeeper(['resume', lease.capture, '--json', '--agent-bin', GEMINI, '--', '--skip-trust', '-o', 'json']);
    expect(resumed.code, resumed.stderr.slice(-4000)).toBe(0);
    const decision = JSON.parse(resumed.stdout) as Decision;
    expect(decision, resumed.stderr.slice(-4000)).toMatchObject({ ok: true, decision: 'launched', exit: { code: 0 }, digest: committed.detail!.digest });
    const req = mock.requests.slice(from).find((r) => lastUserText(r).includes('Continue the interrupted turn'));
    expect(req, `turn requests: ${mock.requests.length - from}\n${resumed.stderr.slice(-3000)}`).toBeDefined();
    // The conversation carries the full bytes from the claim; the resumed prompt is told in one line that
    // it still holds them (the launch's TURNKEEPER_TURN is every prompt's, so this is no retry of the claim).
    expect(contentsText(req!)).toContain(asHookContext(presentation));
    expect(lastUserText(req!)).toContain(`${presentation.split('\n')[0]}\nThis session still holds the lease`);
    expectLeaseUnchanged(world, lease);
    const again = (await receiptDocs(world)).find((doc) => doc.seq === decision.receipt.seq);
    expect(again).toMatchObject({
      kind: 'launch_committed',
      capture: lease.capture,
      owner: lease.owner,
      detail: { agent: 'gemini', closure: committed.detail!.closure },
    });
    expect(again!.detail!.start).toBeUndefined();
  });

  it('a second start of the held Todo is refused [lease_held] before Gemini runs: no model request, no launch receipt', async () => {
    const from = mock.requests.length;
    const launchesBefore = (await receiptDocs(world)).filter((doc) => doc.kind === 'launch_committed').length;
    const again = await turnkeeper([
      'start',
      'fix-login',
      '--agent',
      'gemini',
      '--json',
      '--agent-bin',
      GEMINI,
      '--prompt',
      'I also want the login form',
      ...GEMINI_ARGS,
    ]);
    expect(again.code, again.stderr).toBe(1);
    const refused = JSON.parse(again.stdout) as { reason: string; guidance: string };
    expect(refused).toMatchObject({ ok: false, decision: 'refused', todo: 'fix-login', agent: 'gemini', reason: 'lease_held' });
    expect(refused.guidance).toContain(lease.owner);
    expect(mock.requests.length).toBe(from);
    expect(mock.sideRequests.filter((r) => r.raw.includes('I also want the login form'))).toHaveLength(0);
    expect((await receiptDocs(world)).filter((doc) => doc.kind === 'launch_committed')).toHaveLength(launchesBefore);
    expectLeaseUnchanged(world, lease);
  });
});
