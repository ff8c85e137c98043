// End to end with the real Gemini CLI (0.61): Turnkeeper's hooks installed by the real CLI into
// $GEMINI_CLI_HOME/.gemini/settings.json, the real `gemini -p` talking to a mock Gemini API on
// 127.0.0.1, real SQLite. Gemini payloads carry no Turn: a bound prompt needs TURNKEEPER_TURN.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import type { ReceiptDocument } from '../../src/core/receipts';
import { join } from 'node:path';
import { makeWorld, type World } from '../support/world';
import {
  asHookContext,
  contentsText,
  GEMINI_READY_LINE,
  lastFunctionResponse,
  lastUserText,
  startGeminiMock,
  type GeminiMock,
  type GeminiRequest,
} from '../support/geminiMock';
import {
  BIN,
  describeRun,
  geminiEnv,
  installHooksWithCli,
  killAll,
  occurrences,
  presentationOf,
  runProcess,
  statusOf,
  expectLeaseUnchanged,
  verifyOf,
  type LeaseJson,
  type ProcResult,
} from '../support/agentHarness';

const BODY = 'Distinctive body: the reset-password link expires before the email arrives (otter-9042).';
const RUN_TIMEOUT_MS = 45_000;

let world: World;
let mock: GeminiMock;
let agentEnv: NodeJS.ProcessEnv;
let nextShell: string | undefined;
/** Runs (in the mock, synchronously) just before it answers with the queued shell call. */
let beforeShell: (() => void) | undefined;

beforeAll(async () => {
  mock = await startGeminiMock((req) => {
    if (lastFunctionResponse(req) !== undefined) return { text: 'done' };
    if (nextShell !== undefined) {
      const command = nextShell;
      nextShell = undefined;
      const hook = beforeShell;
      beforeShell = undefined;
      hook?.();
      return { functionCall: { name: 'run_shell_command', args: { command, description: 'touch a marker' } } };
    }
    return { text: 'ok' };
  });
  world = makeWorld('tk-e2e-gemini');
  // The user's own settings (auth for the mock); `hooks install` must merge into them.
  const gemini = geminiEnv(world, mock);
  const { home } = gemini;
  agentEnv = gemini.env;
  const add = world.cli(['todo', 'add', 'Fix login', '--id', 'fix-login', '--body', BODY]);
  expect(add.code, add.stderr).toBe(0);
  installHooksWithCli(world, 'gemini', { GEMINI_CLI_HOME: home });
  const settings = readFileSync(gemini.settings, 'utf8');
  expect(settings).toContain(`${world.home}/bin/turnkeeper' hook --agent gemini`);
  expect(settings).toContain('gemini-api-key');
});

afterAll(async () => {
  killAll();
  await mock?.close();
  world?.cleanup();
});

interface GeminiJson {
  session_id?: string;
  response?: string;
  error?: unknown;
}

function gemini(args: string[], env: Record<string, string> = {}): Promise<ProcResult> {
  return runProcess(join(BIN, 'gemini'), [...args, '--skip-trust', '-o', 'json'], { cwd: world.repo, env: { ...agentEnv, ...env }, timeoutMs: RUN_TIMEOUT_MS });
}

function parseResult(label: string, run: ProcResult): GeminiJson {
  expect(run.code, describeRun(label, run)).toBe(0);
  const start = run.stdout.indexOf('{');
  const json = JSON.parse(run.stdout.slice(start)) as GeminiJson;
  expect(json.error, describeRun(label, run)).toBeUndefined();
  return json;
}

/** The first turn request of a run whose user text includes `prompt`. */
function turnRequest(from: number, prompt: string): GeminiRequest | undefined {
  return mock.requests.slice(from).find((r) => contentsText(r).includes(prompt));
}

describe('Gemini CLI with Turnkeeper hooks (real binary)', () => {
  let session = '';
  let lease: LeaseJson;
  let presentation = '';

  it('a prompt naming #todo:fix-login without a Turn gets [no_turn] guidance and claims nothing', async () => {
    const prompt = 'please work on #todo:fix-login';
    const from = mock.requests.length;
    parseResult('gemini -p (no turn)', await gemini(['-p', prompt]));
    const req = turnRequest(from, prompt);
    expect(req, `turn requests: ${mock.requests.length - from}`).toBeDefined();
    const text = lastUserText(req!);
    expect(text).toContain('[no_turn]');
    expect(text).not.toContain(BODY);
    expect(statusOf(world).leases).toHaveLength(0);
  });

  it('with TURNKEEPER_TURN set the claim succeeds and the ready capture reaches the model', async () => {
    const prompt = 'please work on #todo:fix-login now';
    const from = mock.requests.length;
    const json = parseResult('gemini -p (turn)', await gemini(['-p', prompt], { TURNKEEPER_TURN: 'turn-gemini-1' }));
    const req = turnRequest(from, prompt);
    expect(req).toBeDefined();
    const text = lastUserText(req!);
    const match = GEMINI_READY_LINE.exec(text);
    expect(match, text.slice(0, 3000)).not.toBeNull();
    expect(text).toContain(BODY);

    const status = statusOf(world);
    const active = status.leases.filter((l) => l.status === 'active');
    expect(active).toHaveLength(1);
    lease = active[0]!;
    expect(lease.owner).toMatch(/^gemini:/);
    session = lease.owner.slice('gemini:'.length);
    expect(json.session_id).toBe(session);
    expect(lease).toMatchObject({ todo: 'fix-login', epoch: 1, capture: match![1], status: 'active' });
    expect(status.captures.find((c) => c.id === lease.capture)).toMatchObject({ agent: 'gemini', session, turn: 'turn-gemini-1', state: 'ready' });
    presentation = presentationOf(world, lease.capture);
    expect(text).toContain(asHookContext(presentation));
    expect(verifyOf(world).ok).toBe(true);
  });

  it('gemini --resume presents the same ready capture, the lease unchanged; the holder may run a shell command', async () => {
    expect(session).not.toBe('');
    const marker = join(world.root, 'gemini-marker-before-release');
    nextShell = `touch '${marker}'`;
    const from = mock.requests.length;
    const json = parseResult('gemini --resume', await gemini(['--resume', session, '-p', 'continue', '--approval-mode', 'yolo']));
    expect(json.session_id).toBe(session);
    const req = turnRequest(from, 'continue');
    expect(req).toBeDefined();
    // The resumed history carries the first prompt's full context once; Gemini's transcript recorded it,
    // so the resume-time SessionStart and BeforeAgent contexts are the one-line reminder that names the
    // capture (docs/hook-protocol.md, "How often the full capture is presented").
    expect(occurrences(contentsText(req!), asHookContext(presentation))).toBe(1);
    expect(lastUserText(req!)).toContain(asHookContext(`${presentation.split('\n')[0]}\nThis session still holds the lease`).replace('</hook_context>', ''));
    expect(lastUserText(req!)).toContain(`turnkeeper show ${lease.capture}`);
    expect(existsSync(marker), 'the lease holder may run a shell command').toBe(true);

    expectLeaseUnchanged(world, lease);
    // The turn ended at AfterAgent: its receipt, with the tree before (BeforeAgent) and after; the
    // marker is outside the repository, so nothing in it changed.
    const store = await world.store();
    try {
      const turn = (await store.receipts({ limit: 1000 })).map((row) => JSON.parse(row.doc) as ReceiptDocument).find((doc) => doc.kind === 'turn_ended');
      expect(turn).toMatchObject({ todo: 'fix-login', owner: lease.owner, detail: { agent: 'gemini', event: 'AfterAgent', changed: 0, paths: [] } });
      expect(turn!.detail!.treeAfter).toBe(turn!.detail!.treeBefore);
    } finally {
      store.close();
    }
  });

  it('a second Gemini session naming the same Todo (with a Turn) gets [lease_held] and claims nothing', async () => {
    const prompt = 'I also want #todo:fix-login';
    const from = mock.requests.length;
    const run = await gemini(['-p', prompt], { TURNKEEPER_TURN: 'turn-gemini-2' });
    parseResult('second gemini -p', run);
    const req = turnRequest(from, prompt);
    expect(req).toBeDefined();
    const text = lastUserText(req!);
    expect(text).toContain('[lease_held]');
    expect(text).toContain(`gemini:${session}`);
    expect(text).not.toContain(BODY);
    // The person's line (systemMessage, docs/hook-protocol.md "What the person sees"): `gemini -p`
    // prints it on stderr; the model's request does not carry it.
    expect(run.stderr).toContain(`Hook system message: Turnkeeper [lease_held]: Todo fix-login is held by gemini:${session}; nothing was claimed.`);
    expect(JSON.stringify(req)).not.toContain('nothing was claimed');
    const status = statusOf(world);
    expect(status.leases).toHaveLength(1);
    expect(status.leases[0]).toMatchObject({ owner: lease.owner, epoch: 1, status: 'active' });
    expect(status.captures.filter((c) => c.todo === 'fix-login')).toHaveLength(1);
  });

  // A second `gemini --resume` of the same session intermittently fails inside Gemini CLI 0.61 (exit 42,
  // `Invalid session identifier "<uuid>"`, the session files still on disk), so fencing is shown on a
  // fresh session instead: it takes the Todo over (epoch 2) and loses it while its turn is running.
  it('a session whose lease is released mid-turn is fenced: run_shell_command is denied with [lease_fenced]', async () => {
    const release = world.cli(['release', 'fix-login', '--force', '--reason', 'test']);
    expect(release.code, release.stderr).toBe(0);
    const prompt = 'take over #todo:fix-login';
    const marker = join(world.root, 'gemini-marker-after-release');
    nextShell = `touch '${marker}'`;
    // Just before the model asks for the tool, someone force-releases this session's new lease.
    beforeShell = () => {
      const again = world.cli(['release', 'fix-login', '--force', '--reason', 'evict mid-turn']);
      if (again.code !== 0) throw new Error(`mid-turn release failed: ${again.stderr}`);
    };
    const from = mock.requests.length;
    const run = await gemini(['-p', prompt, '--approval-mode', 'yolo'], { TURNKEEPER_TURN: 'turn-gemini-3' });
    const diagnostics = `${describeRun('gemini (fenced)', run)}\n--- turn requests\n${mock.requests
      .slice(from)
      .map((r) => JSON.stringify(r.body?.contents?.at(-1)).slice(0, 800))
      .join('\n')}`;
    expect(run.code, diagnostics).toBe(0);
    // The takeover was a new acquisition: epoch 2, its own ready capture.
    const req = turnRequest(from, prompt);
    expect(lastUserText(req!), diagnostics).toMatch(/<hook_context>Turnkeeper: Todo fix-login · capture cap_[0-9a-f]{24} · epoch 2$/m);
    expect(existsSync(marker), diagnostics).toBe(false);
    const followUp = mock.requests.slice(from).find((r) => lastFunctionResponse(r) !== undefined);
    expect(followUp, diagnostics).toBeDefined();
    const response = lastFunctionResponse(followUp!)?.response;
    expect(String(response?.error ?? ''), diagnostics).toContain('Tool execution blocked');
    expect(String(response?.error ?? ''), diagnostics).toContain('[lease_fenced]');

    // Both leases are released for good; nothing re-activated them.
    const status = statusOf(world);
    expect(status.leases.map((l) => [l.epoch, l.status]).sort()).toEqual([
      [1, 'released'],
      [2, 'released'],
    ]);
    expect(status.leases.find((l) => l.epoch === 1)?.owner).toBe(lease.owner);
    expect(status.leases.find((l) => l.epoch === 2)?.owner).not.toBe(lease.owner);
    expect(verifyOf(world).ok).toBe(true);
  });
});
