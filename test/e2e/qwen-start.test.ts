// `turnkeeper start` and `resume` of the real Qwen Code (0.24.4) through the native launcher (spec §6
// "Proven script shapes"): the npm link points at cli-entry.js, which would re-launch Node by path on
// cli.js (or on a managed update's cli.js under $QWEN_HOME/updates/npm); the launcher runs the attested
// Node on cli.js inside the package's closure instead, with QWEN_CODE_NO_RELAUNCH=true so cli.js does not
// re-launch itself either. Against the chat-completions stand-in on 127.0.0.1, with Turnkeeper's hooks
// installed by the real CLI: the start's prompt names no Todo and Qwen's own UserPromptSubmit claims
// fix-login with binding `launch`; the ready capture reaches the model and the holder's shell call runs;
// a resume presents the same bytes, the lease unchanged; a second start is refused before Qwen runs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { like } from '../support/matchers';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { makeWorld, type World } from '../support/world';
import { lastToolResult, requestText, startOpenAiMock, type OpenAiMock } from '../support/openaiMock';
import {
  BIN,
  expectLeaseUnchanged,
  killAll,
  presentationOf,
  qwenEnv,
  receiptDocs,
  statusOf,
  turnkeeperRun,
  verifyOf,
  type LeaseJson,
} from '../support/agentHarness';
import type { ReceiptDocument } from '../../src/core/receipts';

const QWEN = join(BIN, 'qwen');
const BODY = 'Distinctive body: the login form drops the session cookie on redirect (egret-2290).';
const START_PROMPT = 'Please fix the login form cookie (start-egret-2291).';
const QWEN_ARGS = ['--', '--approval-mode', 'yolo', '-o', 'json'];

let world: World;
let mock: OpenAiMock;
let env: NodeJS.ProcessEnv;
let nextShell: string | undefined;

const turnkeeper = (args: string[]) => turnkeeperRun(args, { env, cwd: world.repo, timeoutMs: 120_000 });
const asQwenContext = (text: string): string =>
  `<qwen:user-prompt-submit-context>\n${text.replace(/</g, '&lt;').replace(/>/g, '&gt;')}\n</qwen:user-prompt-submit-context>`;

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
  mock = await startOpenAiMock((request) => {
    if (lastToolResult(request) !== undefined) return { text: 'done' };
    if (nextShell !== undefined) {
      const command = nextShell;
      nextShell = undefined;
      return { toolCall: { name: 'run_shell_command', arguments: { command, description: 'touch a marker' } } };
    }
    return { text: 'ok' };
  });
  world = makeWorld('tk-e2e-qwen-start');
  let home: string;
  ({ env, home } = qwenEnv(world, mock));
  const add = world.cli(['todo', 'add', 'Fix login', '--id', 'fix-login', '--body', BODY]);
  expect(add.code, add.stderr).toBe(0);
  const install = world.cli(['hooks', 'install', '--agent', 'qwen'], { env: { HOME: home } });
  expect(install.code, install.stdout + install.stderr).toBe(0);
}, 120_000);

afterAll(async () => {
  killAll();
  await mock?.close();
  world?.cleanup();
});

describe('turnkeeper start launches Qwen Code from its attested closure', () => {
  let lease: LeaseJson;
  let presentation = '';
  let committed: ReceiptDocument;

  it('launch receipt first, the unnamed prompt claims fix-login with binding launch, the capture reaches the model, the holder runs a shell command', async () => {
    const marker = join(world.root, 'marker-start');
    nextShell = `touch '${marker}'`;
    const from = mock.requests.length;
    const started = await turnkeeper(['start', 'fix-login', '--agent', 'qwen', '--json', '--agent-bin', QWEN, '--prompt', START_PROMPT, ...QWEN_ARGS]);
    expect(started.code, started.stdout.slice(-2000) + started.stderr.slice(-4000)).toBe(0);
    const decision = JSON.parse(started.stdout) as Decision;
    expect(decision, started.stderr.slice(-4000)).toMatchObject({ ok: true, decision: 'launched', agent: 'qwen', exit: { code: 0 } });
    const attested = JSON.parse((await turnkeeper(['attest', QWEN, '--json'])).stdout) as { digest: string };
    expect(decision.digest).toBe(attested.digest);

    const request = mock.requests.slice(from).find((r) => requestText(r).includes(START_PROMPT));
    expect(request, `requests: ${mock.requests.length - from}\n${started.stderr.slice(-3000)}`).toBeDefined();
    const status = statusOf(world);
    expect(status.leases).toHaveLength(1);
    lease = status.leases[0]!;
    expect(lease).toMatchObject({ todo: 'fix-login', epoch: 1, status: 'active', owner: like.stringMatching(/^qwen:/) });
    const session = lease.owner.slice('qwen:'.length);
    // The payload's own Turn (prompt_id) wins over the launcher's TURNKEEPER_TURN.
    expect(status.captures.find((c) => c.id === lease.capture)).toMatchObject({ agent: 'qwen', session, turn: `${session}:0`, state: 'ready' });
    presentation = presentationOf(world, lease.capture);
    expect(presentation).toContain(BODY);
    expect(requestText(request!)).toContain(asQwenContext(presentation));
    expect(existsSync(marker), 'the lease holder may run a shell command').toBe(true);

    const docs = await receiptDocs(world);
    const launches = docs.filter((doc) => doc.kind === 'launch_committed');
    expect(launches).toHaveLength(1);
    committed = launches[0]!;
    // The closure's entry is cli.js: cli-entry.js, the bin, never runs.
    expect(committed).toMatchObject({
      seq: decision.receipt.seq,
      todo: 'fix-login',
      detail: { start: true, launch: decision.launch, agent: 'qwen', digest: attested.digest, entry: 'cli.js' },
    });
    const bound = docs.filter((doc) => doc.kind === 'capture_bound');
    expect(bound).toHaveLength(1);
    expect(bound[0]).toMatchObject({ capture: lease.capture, owner: lease.owner, detail: { binding: 'launch' } });
    for (const doc of docs.filter((d) => d.owner === lease.owner)) expect(doc.seq, doc.kind).toBeGreaterThan(committed.seq);
    expect(verifyOf(world).ok).toBe(true);
  });

  it('resume relaunches from the same closure and the same ready capture bytes reach the model, lease unchanged', async () => {
    expect(presentation).not.toBe('');
    const from = mock.requests.length;
    const resumed = await turnkeeper(['resume', lease.capture, '--json', '--agent-bin', QWEN, '--', '-o', 'json']);
    expect(resumed.code, resumed.stdout.slice(-2000) + resumed.stderr.slice(-4000)).toBe(0);
    const decision = JSON.parse(resumed.stdout) as Decision;
    expect(decision).toMatchObject({ ok: true, decision: 'launched', exit: { code: 0 }, digest: committed.detail!.digest });
    const request = mock.requests.slice(from).find((r) => requestText(r).includes('Continue the interrupted turn'));
    expect(request, `requests: ${mock.requests.length - from}\n${resumed.stderr.slice(-3000)}`).toBeDefined();
    const text = requestText(request!);
    expect(text).toContain(asQwenContext(presentation));
    expect(text).toContain(`${presentation.split('\n')[0]}\nThis session still holds the lease`);
    expectLeaseUnchanged(world, lease);
  });

  it('a second start of the held Todo is refused [lease_held] before Qwen runs: no model request', async () => {
    const from = mock.requests.length;
    const again = await turnkeeper(['start', 'fix-login', '--agent', 'qwen', '--json', '--agent-bin', QWEN, '--prompt', 'I also want it', ...QWEN_ARGS]);
    expect(again.code, again.stderr).toBe(1);
    expect(JSON.parse(again.stdout)).toMatchObject({ ok: false, decision: 'refused', todo: 'fix-login', agent: 'qwen', reason: 'lease_held' });
    expect(mock.requests.length).toBe(from);
    expectLeaseUnchanged(world, lease);
  });
});
