// Two worktrees of one repository are one Goal (contract §1, docs/goals.md), proven with the real
// agents: the real Codex (then the real Claude Code) in the main checkout claims a Todo, the same
// agent in a linked worktree of that repository is told `[lease_held]` with the holder's checkout,
// and `turnkeeper resume`, started from the worktree, relaunches the holder through the native
// launcher in its own checkout. The control: the same prompt from a worktree of another repository
// claims normally, so the refusal comes from the shared Goal and not from the prompt or the store.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { makeWorld, type World } from '../support/world';
import { shellCallReply, startMockModelServer, textReply, type MockModelServer, type RecordedRequest } from '../support/mockModelServer';
import { lastToolResult, startAnthropicMock, type AnthropicMock } from '../support/anthropicMock';
import { codexBinaryPath, EXEC_FLAGS, MOCK_API_KEY_ENV, parseSessionId, writeCodexConfig } from '../support/codexHarness';
import {
  addWorktree,
  BIN,
  baseEnv,
  claudeAfterPrompt,
  claudeEnv,
  claudeResult,
  claudeTurnRequest,
  claudeVisibleText,
  claudeWorkingDirectory,
  codexCwds,
  contextAfterPrompt,
  describeRun,
  expectLeaseUnchanged,
  installHooksWithCli,
  killAll,
  presentationOf,
  READY_FIRST_LINE,
  REPO_ROOT,
  runProcess,
  statusOf,
  turnkeeperRun,
  verifyOf,
  worldDir,
  type LeaseJson,
  type ProcResult,
} from '../support/agentHarness';

const RUN_TIMEOUT_MS = 45_000;
const RESUME_TIMEOUT_MS = 90_000;
const CODEX_SHIM = join(REPO_ROOT, 'node_modules/.bin/codex');
const CLAUDE = join(BIN, 'claude');
const CLAIM = 'please work on #todo:fix-login';
const SECOND = 'I also want #todo:fix-login';
const RESUME_PROMPT = 'Carry on with the login fix where you stopped (resume-ibis-2291).';

/** A repository with a linked worktree `wt-agent2` (branch agent2) beside its main checkout, and the Todo. */
function worktreeWorld(name: string, body: string): { world: World; worktree: string } {
  const world = makeWorld(name);
  const worktree = addWorktree(world.repo, join(world.root, 'wt-agent2'), 'agent2');
  const add = world.cli(['todo', 'add', 'Fix login', '--id', 'fix-login', '--body', body]);
  expect(add.code, add.stderr).toBe(0);
  return { world, worktree };
}

/** The Goal id `turnkeeper goal` reports for a directory. */
function goalOf(world: World, cwd: string): string {
  const run = world.cli(['goal', '--json'], { cwd });
  expect(run.code, run.stderr).toBe(0);
  return (JSON.parse(run.stdout) as { id: string }).id;
}

afterAll(() => killAll());

describe('Codex in two worktrees of one repository (real binary)', () => {
  const BODY = 'Distinctive body: the login form loses the redirect after SSO (wren-6402).';
  let world: World;
  let worktree: string;
  let other: World;
  let otherWorktree: string;
  let mock: MockModelServer;
  let codexEnv: NodeJS.ProcessEnv;
  /** The shell command the next fresh model turn runs (undefined: answer with text). */
  let nextShell: string | undefined;
  let sessionA = '';
  let lease: LeaseJson;
  let presentation = '';

  const since = (from: number): RecordedRequest[] => mock.requests.slice(from);
  const lastInputType = (req: RecordedRequest): string | undefined => req.body?.input?.at(-1)?.type;
  const exec = (cwd: string, prompt: string): Promise<ProcResult> =>
    runProcess(codexBinaryPath(), ['exec', ...EXEC_FLAGS, prompt], { cwd, env: codexEnv, timeoutMs: RUN_TIMEOUT_MS });
  function expectOk(label: string, run: ProcResult): void {
    expect(run.code, describeRun(label, run)).toBe(0);
  }

  beforeAll(async () => {
    mock = await startMockModelServer({
      script: (req) => {
        if (lastInputType(req) === 'function_call_output') return textReply('done');
        if (nextShell !== undefined) {
          const cmd = nextShell;
          nextShell = undefined;
          return shellCallReply(cmd);
        }
        return textReply('ok');
      },
    });
    ({ world, worktree } = worktreeWorld('tk-e2e-wt-codex', BODY));
    // Another repository with a worktree of its own, filed in the same store (the same TURNKEEPER_HOME).
    other = makeWorld('tk-e2e-wt-other');
    otherWorktree = addWorktree(other.repo, join(other.root, 'wt-agent2'), 'agent2');
    const add = world.cli(['todo', 'add', 'Fix login', '--id', 'fix-login', '--body', 'The other repository.'], { cwd: other.repo });
    expect(add.code, add.stderr).toBe(0);
    const codexHome = worldDir(world, 'codex', 'home', '.codex');
    codexEnv = baseEnv({
      HOME: worldDir(world, 'codex', 'home'),
      CODEX_HOME: codexHome,
      TMPDIR: worldDir(world, 'codex', 'tmp'),
      TURNKEEPER_HOME: world.home,
      [MOCK_API_KEY_ENV]: 'sk-mock-not-a-real-key',
      RUST_LOG: 'error',
    });
    installHooksWithCli(world, 'codex', { CODEX_HOME: codexHome });
    writeCodexConfig(codexHome, mock.url);
  });

  afterAll(async () => {
    killAll();
    await mock?.close();
    world?.cleanup();
    other?.cleanup();
  });

  it('the worktree and the main checkout are one Goal, and the other repository is another', () => {
    expect(goalOf(world, worktree)).toBe(world.goal);
    expect(goalOf(world, other.repo)).toBe(other.goal);
    expect(goalOf(world, otherWorktree)).toBe(other.goal);
    expect(other.goal).not.toBe(world.goal);
  });

  it('session A in the main checkout claims #todo:fix-login and its ready capture reaches the model', async () => {
    const from = mock.requests.length;
    const run = await exec(world.repo, CLAIM);
    expectOk('codex exec (main checkout)', run);
    sessionA = parseSessionId(run.stderr) ?? '';
    expect(sessionA, run.stderr).toMatch(/^[0-9a-f-]{36}$/);

    const first = since(from)[0]!;
    expect(codexCwds(first).at(-1)).toBe(world.repo);
    const context = contextAfterPrompt(first, CLAIM);
    expect(context, first.raw.slice(-3000)).toMatch(READY_FIRST_LINE);
    expect(context).toContain(BODY);

    const status = statusOf(world);
    expect(status.leases).toHaveLength(1);
    lease = status.leases[0]!;
    expect(lease).toMatchObject({ goal: world.goal, todo: 'fix-login', owner: `codex:${sessionA}`, epoch: 1, status: 'active', checkout: world.repo });
    expect(status.captures.find((c) => c.id === lease.capture)).toMatchObject({ session: sessionA, state: 'ready', checkout: world.repo });
    presentation = presentationOf(world, lease.capture);
    expect(context).toBe(presentation);
  });

  it('session B in the linked worktree gets [lease_held] naming the main checkout, and claims nothing', async () => {
    expect(sessionA).not.toBe('');
    const from = mock.requests.length;
    const run = await exec(worktree, SECOND);
    expectOk('codex exec (worktree)', run);
    const sessionB = parseSessionId(run.stderr);
    expect(sessionB).toMatch(/^[0-9a-f-]{36}$/);
    expect(sessionB).not.toBe(sessionA);

    const first = since(from)[0]!;
    // B really works in the worktree: the same observable names the main checkout for A.
    expect(codexCwds(first).at(-1)).toBe(worktree);
    const context = contextAfterPrompt(first, SECOND) ?? '';
    expect(context, first.raw.slice(-3000)).toContain('[lease_held]');
    expect(context).toContain(`codex:${sessionA}`);
    expect(context).toContain(`(epoch 1) in ${world.repo} until`);
    expect(first.raw).not.toContain(BODY);

    const status = statusOf(world);
    expect(status.leases).toHaveLength(1);
    expect(status.leases[0]).toMatchObject({ owner: `codex:${sessionA}`, epoch: 1, version: lease.version, status: 'active', checkout: world.repo });
    expect(status.captures.filter((c) => c.session === sessionB)).toHaveLength(0);
  });

  it('turnkeeper resume, started from the worktree, relaunches A in the main checkout: same ready capture, lease unchanged', async () => {
    nextShell = 'pwd';
    const from = mock.requests.length;
    const resumed = await turnkeeperRun(['resume', lease.capture, '--json', '--agent-bin', CODEX_SHIM, '--prompt', RESUME_PROMPT, '--', ...EXEC_FLAGS], {
      cwd: worktree,
      env: codexEnv,
      timeoutMs: RESUME_TIMEOUT_MS,
    });
    expect(resumed.code, describeRun('turnkeeper resume', resumed)).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ ok: true, decision: 'launched', capture: lease.capture, agent: 'codex', exit: { code: 0 } });

    const requests = since(from);
    const turn = requests.find((r) => contextAfterPrompt(r, RESUME_PROMPT) !== undefined);
    expect(turn, requests.map((r) => r.raw.slice(-1500)).join('\n---\n')).toBeDefined();
    expect(turn!.body?.client_metadata?.session_id).toBe(sessionA);
    // The relaunched agent's hooks present the capture again, with no new claim: that needs its session
    // to be A's and a committed launch receipt naming the capture (spec §2 rule 3). A's transcript
    // already carries the full bytes, so this event gets the one-line reminder that names the capture
    // (docs/hook-protocol.md, "How often the full capture is presented"), never [not_live_bound].
    const resumedContext = contextAfterPrompt(turn!, RESUME_PROMPT) ?? '';
    expect(resumedContext.split('\n')[0]).toBe(presentation.split('\n')[0]);
    expect(resumedContext).toContain(`turnkeeper show ${lease.capture}`);
    // Where it runs: Codex tells the model its cwd, and the shell tool's `pwd` says the same.
    expect(codexCwds(turn!).at(-1)).toBe(world.repo);
    const followUp = requests.find((r) => lastInputType(r) === 'function_call_output');
    expect(followUp, describeRun('turnkeeper resume', resumed)).toBeDefined();
    const pwd = String(followUp!.body?.input?.at(-1)?.output ?? '');
    expect(pwd).toContain(world.repo);
    expect(pwd).not.toContain(worktree);

    expectLeaseUnchanged(world, lease);
    expect(statusOf(world).leases[0]!.checkout).toBe(world.repo);
  });

  it('control: the same session resumed by hand in the worktree works in the worktree (the observable follows the process)', async () => {
    nextShell = 'pwd';
    const prompt = 'resumed by hand in the worktree';
    const from = mock.requests.length;
    const run = await runProcess(codexBinaryPath(), ['exec', ...EXEC_FLAGS, 'resume', sessionA, prompt], {
      cwd: worktree,
      env: codexEnv,
      timeoutMs: RUN_TIMEOUT_MS,
    });
    expectOk('codex exec resume (by hand, worktree)', run);
    const requests = since(from);
    const turn = requests.find((r) => contextAfterPrompt(r, prompt) !== undefined);
    expect(turn).toBeDefined();
    expect(codexCwds(turn!).at(-1)).toBe(worktree);
    const followUp = requests.find((r) => lastInputType(r) === 'function_call_output');
    expect(String(followUp?.body?.input?.at(-1)?.output ?? '')).toContain(worktree);
  });

  it('control: the same prompt from a worktree of another repository claims normally', async () => {
    const from = mock.requests.length;
    const run = await exec(otherWorktree, SECOND);
    expectOk('codex exec (other repository)', run);
    const sessionC = parseSessionId(run.stderr);
    const first = since(from)[0]!;
    const context = contextAfterPrompt(first, SECOND) ?? '';
    expect(context, first.raw.slice(-3000)).toMatch(READY_FIRST_LINE);
    expect(context).not.toContain('[lease_held]');
    expect(context).toContain('The other repository.');

    const active = statusOf(world).leases.filter((l) => l.status === 'active');
    expect(active).toHaveLength(2);
    expect(active.find((l) => l.goal === world.goal)).toMatchObject({ owner: lease.owner, capture: lease.capture, epoch: 1 });
    expect(active.find((l) => l.goal === other.goal)).toMatchObject({ todo: 'fix-login', owner: `codex:${sessionC}`, epoch: 1, checkout: otherWorktree });
    expect(verifyOf(world).ok).toBe(true);
  });
});

describe('Claude Code in two worktrees of one repository (real binary)', () => {
  const BODY = 'Distinctive body: the remember-me cookie outlives a password change (plover-3187).';
  const READY_LINE = /^UserPromptSubmit hook additional context: Turnkeeper: Todo fix-login · capture (cap_[0-9a-f]{24}) · epoch 1$/m;
  let world: World;
  let worktree: string;
  let mock: AnthropicMock;
  let agentEnv: NodeJS.ProcessEnv;
  let nextShell: string | undefined;
  let sessionA = '';
  let lease: LeaseJson;
  let presentation = '';

  const claude = (cwd: string, args: string[]): Promise<ProcResult> => runProcess(CLAUDE, args, { cwd, env: agentEnv, timeoutMs: RUN_TIMEOUT_MS });

  beforeAll(async () => {
    mock = await startAnthropicMock((req) => {
      if (lastToolResult(req) !== undefined) return { text: 'done' };
      // Only the main conversation (it carries tools) runs the queued command; side requests get text.
      if (nextShell !== undefined && (req.body?.tools ?? []).some((t) => t.name === 'Bash')) {
        const command = nextShell;
        nextShell = undefined;
        return { toolUse: { name: 'Bash', input: { command, description: 'print the working directory' } } };
      }
      return { text: 'ok' };
    });
    ({ world, worktree } = worktreeWorld('tk-e2e-wt-claude', BODY));
    let configDir: string;
    ({ env: agentEnv, configDir } = claudeEnv(world, mock));
    installHooksWithCli(world, 'claude', { CLAUDE_CONFIG_DIR: configDir });
  });

  afterAll(async () => {
    killAll();
    await mock?.close();
    world?.cleanup();
  });

  it('session A in the main checkout claims #todo:fix-login and its ready capture reaches the model', async () => {
    const from = mock.requests.length;
    const json = claudeResult('claude -p (main checkout)', await claude(world.repo, ['-p', CLAIM, '--output-format', 'json']));
    sessionA = json.session_id ?? '';
    expect(sessionA).toMatch(/^[0-9a-f-]{36}$/);

    const req = claudeTurnRequest(mock.requests, from, CLAIM);
    expect(req).toBeDefined();
    expect(claudeWorkingDirectory(req!)).toBe(world.repo);
    const text = claudeVisibleText(req!);
    expect(text, text.slice(-4000)).toMatch(READY_LINE);
    expect(text).toContain(BODY);

    const status = statusOf(world);
    expect(status.leases).toHaveLength(1);
    lease = status.leases[0]!;
    expect(lease).toMatchObject({ goal: world.goal, todo: 'fix-login', owner: `claude:${sessionA}`, epoch: 1, status: 'active', checkout: world.repo });
    presentation = presentationOf(world, lease.capture);
    expect(claudeAfterPrompt(req!, CLAIM)).toContain(`UserPromptSubmit hook additional context: ${presentation}`);
  });

  it('session B in the linked worktree gets [lease_held] naming the main checkout, and claims nothing', async () => {
    expect(sessionA).not.toBe('');
    const from = mock.requests.length;
    const json = claudeResult('claude -p (worktree)', await claude(worktree, ['-p', SECOND, '--output-format', 'json']));
    expect(json.session_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(json.session_id).not.toBe(sessionA);

    const req = claudeTurnRequest(mock.requests, from, SECOND);
    expect(req).toBeDefined();
    // B really works in the worktree: the same observable names the main checkout for A.
    expect(claudeWorkingDirectory(req!)).toBe(worktree);
    const context = claudeAfterPrompt(req!, SECOND);
    expect(context, context).toContain('[lease_held]');
    expect(context).toContain(`claude:${sessionA}`);
    expect(context).toContain(`(epoch 1) in ${world.repo} until`);
    expect(claudeVisibleText(req!)).not.toContain(BODY);

    const status = statusOf(world);
    expect(status.leases).toHaveLength(1);
    expect(status.leases[0]).toMatchObject({ owner: `claude:${sessionA}`, epoch: 1, version: lease.version, status: 'active', checkout: world.repo });
    expect(status.captures.filter((c) => c.session === json.session_id)).toHaveLength(0);
  });

  it('turnkeeper resume, started from the worktree, relaunches A in the main checkout: same ready capture, lease unchanged', async () => {
    nextShell = 'pwd';
    const from = mock.requests.length;
    const resumed = await turnkeeperRun(['resume', lease.capture, '--json', '--agent-bin', CLAUDE, '--prompt', RESUME_PROMPT, '--', '--allowedTools', 'Bash'], {
      cwd: worktree,
      env: agentEnv,
      timeoutMs: RESUME_TIMEOUT_MS,
    });
    expect(resumed.code, describeRun('turnkeeper resume', resumed)).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ ok: true, decision: 'launched', capture: lease.capture, agent: 'claude', exit: { code: 0 } });

    const req = claudeTurnRequest(mock.requests, from, RESUME_PROMPT);
    expect(req, describeRun('turnkeeper resume', resumed)).toBeDefined();
    // The hooks of the relaunched agent present the stored bytes: that needs its session to be A's
    // (contract §2 rule 3), so Claude resumed A itself, not a fork of it.
    // A's transcript already carries the full bytes: the reminder that names the capture (first line equal).
    expect(claudeAfterPrompt(req!, RESUME_PROMPT)).toContain(`UserPromptSubmit hook additional context: ${presentation.split('\n')[0]}`);
    expect(claudeAfterPrompt(req!, RESUME_PROMPT)).toContain(`turnkeeper show ${lease.capture}`);
    // Where it runs: Claude tells the model its working directory, and Bash's `pwd` says the same.
    expect(claudeWorkingDirectory(req!)).toBe(world.repo);
    const followUp = mock.requests.slice(from).find((r) => lastToolResult(r) !== undefined);
    expect(followUp, describeRun('turnkeeper resume', resumed)).toBeDefined();
    const pwd = JSON.stringify(lastToolResult(followUp!)!.content);
    expect(pwd).toContain(world.repo);
    expect(pwd).not.toContain(worktree);

    expectLeaseUnchanged(world, lease);
  });

  it('control: the same session resumed by hand in the worktree works in the worktree (the observable follows the process)', async () => {
    nextShell = 'pwd';
    const prompt = 'resumed by hand in the worktree';
    const from = mock.requests.length;
    const json = claudeResult(
      'claude --resume (by hand, worktree)',
      await claude(worktree, ['-p', '--resume', sessionA, prompt, '--output-format', 'json', '--allowedTools', 'Bash']),
    );
    expect(json.session_id).toBe(sessionA);
    const req = claudeTurnRequest(mock.requests, from, prompt);
    expect(req).toBeDefined();
    expect(claudeWorkingDirectory(req!)).toBe(worktree);
    const followUp = mock.requests.slice(from).find((r) => lastToolResult(r) !== undefined);
    expect(JSON.stringify(lastToolResult(followUp!)?.content)).toContain(worktree);
    expectLeaseUnchanged(world, lease);
  });
});
