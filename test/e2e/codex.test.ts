// End to end with the real Codex CLI (0.171): Turnkeeper's hooks installed by the real CLI, the real
// `codex exec` talking to a mock Responses API on 127.0.0.1, real SQLite. Nothing is stubbed between
// Codex and Turnkeeper: what the mock receives is what the model would have seen.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import type { ReceiptDocument } from '../../src/core/receipts';
import { join } from 'node:path';
import { makeWorld, type World } from '../support/world';
import { startMockModelServer, shellCallReply, textReply, developerTexts, type MockModelServer, type RecordedRequest } from '../support/mockModelServer';
import { codexBinaryPath, EXEC_FLAGS, MOCK_API_KEY_ENV, parseSessionId, writeCodexConfig } from '../support/codexHarness';
import {
  baseEnv,
  contextAfterPrompt,
  describeRun,
  installHooksWithCli,
  killAll,
  occurrences,
  presentationOf,
  READY_FIRST_LINE,
  runProcess,
  statusOf,
  expectLeaseUnchanged,
  verifyOf,
  worldDir,
  type LeaseJson,
  type ProcResult,
} from '../support/agentHarness';

const BODY = 'Distinctive body: the login form drops the CSRF token when the password has a % sign (zebra-7731).';
const RUN_TIMEOUT_MS = 40_000;

let world: World;
let mock: MockModelServer;
let codexEnv: NodeJS.ProcessEnv;
/** The shell command the next fresh model turn should run (undefined: answer with text). */
let nextShell: string | undefined;

/** Requests of one codex run: the mock records all; each run looks at its own slice. */
const since = (from: number): RecordedRequest[] => mock.requests.slice(from);
const lastInputType = (req: RecordedRequest): string | undefined => req.body?.input?.at(-1)?.type;

function codex(args: string[]): Promise<ProcResult> {
  return runProcess(codexBinaryPath(), args, { cwd: world.repo, env: codexEnv, timeoutMs: RUN_TIMEOUT_MS });
}
const exec = (prompt: string) => codex(['exec', ...EXEC_FLAGS, prompt]);
const resume = (session: string, prompt: string) => codex(['exec', 'resume', ...EXEC_FLAGS, session, prompt]);

function expectOk(label: string, run: ProcResult): void {
  expect(run.code, describeRun(label, run)).toBe(0);
}

beforeAll(async () => {
  mock = await startMockModelServer({
    script: (req) => {
      // A tool follow-up gets the final answer; a fresh turn runs the queued shell command once.
      if (lastInputType(req) === 'function_call_output') return textReply('done');
      if (nextShell !== undefined) {
        const cmd = nextShell;
        nextShell = undefined;
        return shellCallReply(cmd);
      }
      return textReply('ok');
    },
  });
  world = makeWorld('tk-e2e-codex');
  const home = worldDir(world, 'codex', 'home');
  const codexHome = worldDir(world, 'codex', 'home', '.codex');
  const tmp = worldDir(world, 'codex', 'tmp');
  codexEnv = baseEnv({
    HOME: home,
    CODEX_HOME: codexHome,
    TMPDIR: tmp,
    TURNKEEPER_HOME: world.home,
    [MOCK_API_KEY_ENV]: 'sk-mock-not-a-real-key',
    RUST_LOG: 'error',
  });
  const add = world.cli(['todo', 'add', 'Fix login', '--id', 'fix-login', '--body', BODY]);
  expect(add.code, add.stderr).toBe(0);
  installHooksWithCli(world, 'codex', { CODEX_HOME: codexHome });
  expect(existsSync(join(codexHome, 'hooks.json'))).toBe(true);
  expect(readFileSync(join(codexHome, 'hooks.json'), 'utf8')).toContain(`${world.home}/bin/turnkeeper' hook --agent codex`);
  writeCodexConfig(codexHome, mock.url);
});

afterAll(async () => {
  killAll();
  await mock?.close();
  world?.cleanup();
});

describe('Codex CLI with Turnkeeper hooks (real binary)', () => {
  let session = '';
  let lease: LeaseJson;
  let presentation = '';

  it('a prompt naming #todo:fix-login claims the lease and the ready capture reaches the model', async () => {
    const from = mock.requests.length;
    const run = await exec('please work on #todo:fix-login');
    expectOk('codex exec', run);
    session = parseSessionId(run.stderr) ?? '';
    expect(session, run.stderr).toMatch(/^[0-9a-f-]{36}$/);

    const requests = since(from);
    expect(requests.length).toBeGreaterThanOrEqual(1);
    const first = requests[0]!;
    expect(first.body?.client_metadata?.session_id).toBe(session);
    const context = contextAfterPrompt(first, 'please work on #todo:fix-login');
    expect(context, JSON.stringify(developerTexts(first))).toBeDefined();
    const match = READY_FIRST_LINE.exec(context!);
    expect(match, context).not.toBeNull();
    expect(context!.split('\n')[0]).toMatch(/^Turnkeeper: Todo fix-login · capture cap_[0-9a-f]{24} · epoch 1$/);
    expect(context).toContain(BODY);

    const status = statusOf(world);
    const active = status.leases.filter((l) => l.status === 'active');
    expect(active).toHaveLength(1);
    lease = active[0]!;
    expect(lease).toMatchObject({ todo: 'fix-login', owner: `codex:${session}`, epoch: 1, capture: match![1], status: 'active' });
    expect(status.captures.find((c) => c.id === lease.capture)).toMatchObject({ agent: 'codex', session, state: 'ready' });
    // What reached the model is the stored presentation, byte for byte.
    presentation = presentationOf(world, lease.capture);
    expect(context).toBe(presentation);
    expect(verifyOf(world).ok).toBe(true);
  });

  it('codex exec resume presents the same ready capture, the lease unchanged; the live owner may run a shell command', async () => {
    expect(session).not.toBe('');
    const marker = join(world.root, 'marker-before-release');
    nextShell = `touch '${marker}'`;
    const from = mock.requests.length;
    const run = await resume(session, 'continue');
    expectOk('codex exec resume', run);
    expect(parseSessionId(run.stderr)).toBe(session);

    const requests = since(from);
    expect(requests.length).toBeGreaterThanOrEqual(2); // the turn, then the tool follow-up
    const first = requests[0]!;
    // History still has the first turn's full copy, which Codex's rollout records; so the resume's own
    // SessionStart and prompt get a one-line reminder that names the capture, not more copies
    // (docs/hook-protocol.md, "How often the full capture is presented").
    const reminder = contextAfterPrompt(first, 'continue') ?? '';
    expect(reminder.split('\n')[0]).toBe(presentation.split('\n')[0]);
    expect(reminder).toContain('turnkeeper show cap_');
    expect(occurrences(first.raw, JSON.stringify(presentation).slice(1, -1))).toBe(1);

    // Control for the fencing test below: the lease holder's shell command ran.
    expect(existsSync(marker), describeRun('resume', run)).toBe(true);
    const followUp = requests.find((r) => lastInputType(r) === 'function_call_output');
    expect(followUp?.body?.input?.at(-1)?.output ?? '').not.toContain('lease_fenced');

    expectLeaseUnchanged(world, lease);
  });

  it('a turn whose shell command writes a file ends in a turn_ended receipt naming it, with the trees before and after', async () => {
    expect(session).not.toBe('');
    nextShell = `echo turn > '${join(world.repo, 'turn-output.txt')}'`;
    expectOk('codex exec resume (edit)', await resume(session, 'write the file'));
    expect(existsSync(join(world.repo, 'turn-output.txt'))).toBe(true);
    const store = await world.store();
    let turns: ReceiptDocument[];
    try {
      turns = (await store.receipts({ limit: 1000 })).map((row) => JSON.parse(row.doc) as ReceiptDocument).filter((doc) => doc.kind === 'turn_ended');
    } finally {
      store.close();
    }
    const [turn] = turns;
    expect(turn, JSON.stringify(turns)).toMatchObject({
      todo: 'fix-login',
      owner: `codex:${session}`,
      lease: { epoch: 1 },
      detail: { agent: 'codex', event: 'Stop', session, changed: 1, added: 1 },
    });
    expect(turn!.detail!.paths).toEqual(['A\tturn-output.txt']);
    expect(turn!.detail!.treeBefore).not.toBe(turn!.detail!.treeAfter);
    // The rollout's own facts of this turn only: its version, the model, and the token totals' growth
    // over the turn (the mock answers each of the turn's two requests with 10 in / 5 out).
    expect(turn!.detail).toMatchObject({ agentVersion: '0.171.0', model: 'mock-model', inputTokens: 20, outputTokens: 10, cachedInputTokens: 0 });
    expect(statusOf(world).leases.find((l) => l.status === 'active')).toMatchObject({ live: { state: 'stopped' } });
  });

  it('a second Codex session naming the same Todo gets [lease_held] and claims nothing', async () => {
    const from = mock.requests.length;
    const run = await exec('I also want #todo:fix-login');
    expectOk('second codex exec', run);
    const other = parseSessionId(run.stderr);
    expect(other).toBeDefined();
    expect(other).not.toBe(session);

    const first = since(from)[0]!;
    const context = contextAfterPrompt(first, 'I also want #todo:fix-login') ?? '';
    expect(context).toContain('[lease_held]');
    expect(context).toContain(`codex:${session}`);
    expect(first.raw).not.toContain(BODY);

    const status = statusOf(world);
    expect(status.leases).toHaveLength(1);
    expect(status.leases[0]).toMatchObject({ owner: `codex:${session}`, epoch: 1, status: 'active' });
    expect(status.captures.filter((c) => c.session === other)).toHaveLength(0);
  });

  it('after a forced release the resumed session is fenced: its shell command is denied with [lease_fenced]', async () => {
    const release = world.cli(['release', 'fix-login', '--force', '--reason', 'test']);
    expect(release.code, release.stderr).toBe(0);
    const marker = join(world.root, 'marker-after-release');
    nextShell = `touch '${marker}'`;
    const from = mock.requests.length;
    const run = await resume(session, 'continue after release');
    expectOk('codex exec resume (fenced)', run);

    expect(existsSync(marker)).toBe(false);
    const followUp = since(from).find((r) => lastInputType(r) === 'function_call_output');
    expect(followUp, describeRun('fenced resume', run)).toBeDefined();
    const output = String(followUp!.body?.input?.at(-1)?.output ?? '');
    expect(output).toContain('Command blocked by PreToolUse hook');
    expect(output).toContain('[lease_fenced]');

    // The released lease never comes back: no hook re-activated it and no new lease was taken.
    const status = statusOf(world);
    expect(status.leases).toHaveLength(1);
    expect(status.leases[0]).toMatchObject({ owner: `codex:${session}`, epoch: 1, status: 'released' });
    expect(status.captures.find((c) => c.id === lease.capture)?.state).toBe('released');
    expect(verifyOf(world).ok).toBe(true);
  });
});
