// Start and resume end to end (spec §6–§7) with the real Claude Code binary (2.1.332, a Bun single
// executable) launched through the native launcher, talking to a mock Anthropic Messages API on
// 127.0.0.1, with Turnkeeper's hooks installed by the real CLI into $CLAUDE_CONFIG_DIR/settings.json.
// `turnkeeper start fix-login --agent claude --prompt …` commits its launch receipt before any hook of
// the session, the prompt (which names no Todo) claims fix-login through Claude's own UserPromptSubmit
// hook with binding `launch`, and the lease holder's Bash call runs; `turnkeeper resume` relaunches
// that very session, whose request carries the same ready capture, lease unchanged; the launcher
// refuses a second start of the held Todo before Claude runs; a launched session whose lease is
// force-released mid-turn is fenced; and a resume of the released capture is refused.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { like } from '../support/matchers';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeWorld, type World } from '../support/world';
import { lastToolResult, startAnthropicMock, type AnthropicMock } from '../support/anthropicMock';
import {
  claudeAfterPrompt,
  claudeEnv,
  claudeTurnRequest,
  claudeVisibleText,
  expectLeaseUnchanged,
  installHooksWithCli,
  killAll,
  occurrences,
  presentationOf,
  receiptDocs,
  REPO_ROOT,
  statusOf,
  turnkeeperRun,
  verifyOf,
  type LeaseJson,
} from '../support/agentHarness';

// The real executable, not the node_modules/.bin link: the receipt's digest is of these bytes.
const CLAUDE = join(REPO_ROOT, 'node_modules/@anthropic-ai/claude-code/bin/claude.exe');
const BODY = 'Distinctive body: the login form forgets the redirect target (wren-6604).';
const START_PROMPT = 'Please fix the login form redirect (start-kestrel-1187).';
const RESUME_PROMPT = 'Carry on with the redirect fix where you stopped (resume-kestrel-1188).';
const FENCED_PROMPT = 'Go on (fenced-kestrel-1189).';
// The agent's own arguments after `--`: Bash may run in -p (Turnkeeper's PreToolUse allows by saying nothing).
// --allowedTools takes a list, so before the fix in the Claude profile it swallowed the prompt.
const ALLOW_BASH = ['--', '--allowedTools', 'Bash'];
// Claude prefixes hook context with "<Event> hook additional context: ".
const READY_LINE = /^UserPromptSubmit hook additional context: Turnkeeper: Todo fix-login · capture (cap_[0-9a-f]{24}) · epoch 1$/m;

let world: World;
let mock: AnthropicMock;
let env: NodeJS.ProcessEnv;
let nextShell: string | undefined;
/** Runs (once) in the mock, just before it answers with the queued Bash call. */
let beforeShell: (() => void) | undefined;

/** Async: the mock model server lives in this process, so a blocking spawn would starve it. */
const turnkeeper = (args: string[]) => turnkeeperRun(args, { env, cwd: world.repo, timeoutMs: 90_000 });

interface Decision {
  readonly ok: boolean;
  readonly decision: string;
  readonly agent: string;
  readonly turn?: string;
  readonly launch?: string;
  readonly receipt: { seq: number; hash: string };
  readonly digest: string;
  readonly exit: { code: number | null };
}

beforeAll(async () => {
  mock = await startAnthropicMock((req) => {
    if (lastToolResult(req) !== undefined) return { text: 'done' };
    // Only the main conversation (it carries tools) runs the queued command; side requests get text.
    if (nextShell !== undefined && (req.body?.tools ?? []).some((t) => t.name === 'Bash')) {
      const command = nextShell;
      nextShell = undefined;
      beforeShell?.();
      beforeShell = undefined;
      return { toolUse: { name: 'Bash', input: { command, description: 'touch a marker' } } };
    }
    return { text: 'ok' };
  });
  world = makeWorld('tk-e2e-claude-launch');
  let configDir: string;
  ({ env, configDir } = claudeEnv(world, mock));
  const add = world.cli(['todo', 'add', 'Fix login', '--id', 'fix-login', '--body', BODY]);
  expect(add.code, add.stderr).toBe(0);
  installHooksWithCli(world, 'claude', { CLAUDE_CONFIG_DIR: configDir });
  expect(readFileSync(join(configDir, 'settings.json'), 'utf8')).toContain(`${world.home}/bin/turnkeeper' hook --agent claude`);
});

afterAll(async () => {
  killAll();
  await mock?.close();
  world?.cleanup();
});

describe('turnkeeper start and resume with the real Claude Code through the native launcher', () => {
  let lease: LeaseJson;
  let presentation = '';
  let digest = '';

  it('start: launch receipt first, the unnamed prompt claims fix-login with binding launch, the ready capture reaches the model, and the holder may run Bash', async () => {
    const marker = join(world.root, 'marker-start');
    nextShell = `touch '${marker}'`;
    const from = mock.requests.length;
    const started = await turnkeeper(['start', 'fix-login', '--agent', 'claude', '--json', '--agent-bin', CLAUDE, '--prompt', START_PROMPT, ...ALLOW_BASH]);
    expect(started.code, started.stderr.slice(-4000)).toBe(0);
    const decision = JSON.parse(started.stdout) as Decision;
    expect(decision, started.stderr.slice(-4000)).toMatchObject({
      ok: true,
      decision: 'launched',
      agent: 'claude',
      exit: { code: 0 },
      turn: like.stringMatching(/^turn_[0-9a-f]{16}$/),
      launch: like.stringMatching(/^launch_[0-9a-f]{16}$/),
    });
    const attested = JSON.parse((await turnkeeper(['attest', CLAUDE, '--json'])).stdout) as { digest: string; entrypoint: string };
    expect(decision.digest).toBe(attested.digest);
    digest = attested.digest;

    // The prompt named no Todo: the started Claude's own UserPromptSubmit hook claimed fix-login.
    const req = claudeTurnRequest(mock.requests, from, START_PROMPT);
    expect(req, started.stderr.slice(-3000)).toBeDefined();
    const status = statusOf(world);
    expect(status.leases).toHaveLength(1);
    lease = status.leases[0]!;
    expect(lease).toMatchObject({ todo: 'fix-login', epoch: 1, status: 'active', owner: like.stringMatching(/^claude:[0-9a-f-]{36}$/) });
    const session = lease.owner.slice('claude:'.length);
    expect(status.captures.find((c) => c.id === lease.capture)).toMatchObject({ agent: 'claude', session, state: 'ready' });
    presentation = presentationOf(world, lease.capture);
    expect(READY_LINE.exec(claudeAfterPrompt(req!, START_PROMPT))?.[1]).toBe(lease.capture);
    expect(claudeAfterPrompt(req!, START_PROMPT)).toContain(`UserPromptSubmit hook additional context: ${presentation}`);
    expect(presentation).toContain(BODY);

    // The mock model asked for a Bash call; PreToolUse let the live lease holder run it.
    const followUp = mock.requests.slice(from).find((r) => lastToolResult(r) !== undefined);
    expect(followUp, started.stderr.slice(-3000)).toBeDefined();
    expect(lastToolResult(followUp!)!.is_error).not.toBe(true);
    expect(existsSync(marker), 'the lease holder may run a shell command').toBe(true);

    // The chain: the start's launch receipt, then every receipt of the session (its first hook, the claim).
    const docs = await receiptDocs(world);
    const committed = docs.filter((doc) => doc.kind === 'launch_committed');
    expect(committed).toHaveLength(1);
    expect(committed[0]).toMatchObject({
      seq: decision.receipt.seq,
      todo: 'fix-login',
      detail: { start: true, launch: decision.launch, turn: decision.turn, agent: 'claude', digest },
    });
    expect(committed[0]!.capture).toBeUndefined();
    const ofSession = docs.filter((doc) => doc.owner === lease.owner);
    expect(ofSession.length).toBeGreaterThan(0);
    for (const doc of ofSession) expect(doc.seq, doc.kind).toBeGreaterThan(decision.receipt.seq);
    const bound = docs.find((doc) => doc.kind === 'capture_bound');
    expect(bound).toMatchObject({ capture: lease.capture, owner: lease.owner, detail: { binding: 'launch' } });
    const hooked = docs.filter((doc) => doc.kind === 'launch_hooked');
    expect(hooked).toHaveLength(1);
    expect(hooked[0]).toMatchObject({ owner: lease.owner, detail: { launch: decision.launch } });
    expect(hooked[0]!.seq).toBeGreaterThan(decision.receipt.seq);
    expect(bound!.seq).toBeGreaterThan(decision.receipt.seq);
    expect(verifyOf(world).ok).toBe(true);
  });

  it('resume: relaunches the same Claude session, its request carries the same ready capture, the lease is unchanged, and a launch receipt is committed', async () => {
    expect(presentation).not.toBe('');
    const session = lease.owner.slice('claude:'.length);
    const marker = join(world.root, 'marker-resume');
    nextShell = `touch '${marker}'`;
    const from = mock.requests.length;
    const resumed = await turnkeeper(['resume', lease.capture, '--json', '--agent-bin', CLAUDE, '--prompt', RESUME_PROMPT, ...ALLOW_BASH]);
    expect(resumed.code, resumed.stderr.slice(-4000)).toBe(0);
    const decision = JSON.parse(resumed.stdout) as Decision;
    expect(decision, resumed.stderr.slice(-4000)).toMatchObject({ ok: true, decision: 'launched', agent: 'claude', exit: { code: 0 }, digest });

    const req = claudeTurnRequest(mock.requests, from, RESUME_PROMPT);
    expect(req, resumed.stderr.slice(-3000)).toBeDefined();
    // The same session, not a fork: its history carries the start's prompt and the stored presentation
    // byte for byte, once; this prompt's context is the reminder naming the same capture
    // (docs/hook-protocol.md, "How often the full capture is presented").
    const visible = claudeVisibleText(req!);
    expect(visible).toContain(START_PROMPT);
    expect(occurrences(visible, `UserPromptSubmit hook additional context: ${presentation}`)).toBe(1);
    const after = claudeAfterPrompt(req!, RESUME_PROMPT);
    expect(after).toContain(`UserPromptSubmit hook additional context: ${presentation.split('\n')[0]}\n`);
    expect(after).toContain(`turnkeeper show ${lease.capture}`);
    expect(existsSync(marker), 'the resumed lease holder may run a shell command').toBe(true);
    expectLeaseUnchanged(world, lease);
    expect(statusOf(world).captures.find((c) => c.id === lease.capture)).toMatchObject({ session, state: 'ready' });

    // The resume's launch receipt names the capture and its lease, before that launch's first hook.
    const store = await world.store();
    try {
      const receipts = await store.launchReceipts(lease.capture);
      const committed = receipts.filter((r) => r.kind === 'launch_committed');
      expect(committed).toHaveLength(1);
      expect(committed[0]!.seq).toBe(decision.receipt.seq);
      const hooked = receipts.find((r) => r.kind === 'launch_hooked' && r.launch === committed[0]!.launch);
      expect(hooked).toBeDefined();
      expect(hooked!.seq).toBeGreaterThan(committed[0]!.seq);
    } finally {
      store.close();
    }
    const docs = await receiptDocs(world);
    expect(docs.find((doc) => doc.seq === decision.receipt.seq)).toMatchObject({
      kind: 'launch_committed',
      capture: lease.capture,
      owner: lease.owner,
      detail: { agent: 'claude', digest },
    });
    expect(docs.find((doc) => doc.seq === decision.receipt.seq)!.detail!.start).toBeUndefined();
  });

  it('a second start of the held Todo is refused [lease_held] before Claude runs: no model request, no launch receipt', async () => {
    const from = mock.requests.length;
    const launchesBefore = (await receiptDocs(world)).filter((doc) => doc.kind === 'launch_committed').length;
    const again = await turnkeeper(['start', 'fix-login', '--agent', 'claude', '--json', '--agent-bin', CLAUDE, '--prompt', 'I also want the login form']);
    expect(again.code, again.stderr).toBe(1);
    const refused = JSON.parse(again.stdout) as { reason: string; guidance: string };
    expect(refused).toMatchObject({ ok: false, decision: 'refused', todo: 'fix-login', agent: 'claude', reason: 'lease_held' });
    expect(refused.guidance).toContain(lease.owner);
    expect(mock.requests.length).toBe(from);
    expect((await receiptDocs(world)).filter((doc) => doc.kind === 'launch_committed')).toHaveLength(launchesBefore);
    expectLeaseUnchanged(world, lease);
  });

  it('a resumed session whose lease is force-released mid-turn is fenced: its Bash call is denied with [lease_fenced]', async () => {
    const marker = join(world.root, 'marker-fenced');
    nextShell = `touch '${marker}'`;
    // While the model "thinks" (after this launch's prompt hook presented the capture, before its
    // Bash call), an operator takes the lease away. A blocking run is fine there: Claude waits for the reply.
    let released: ReturnType<World['cli']> | undefined;
    beforeShell = () => (released = world.cli(['release', 'fix-login', '--force', '--reason', 'test']));
    const from = mock.requests.length;
    const resumed = await turnkeeper(['resume', lease.capture, '--json', '--agent-bin', CLAUDE, '--prompt', FENCED_PROMPT, ...ALLOW_BASH]);
    expect(resumed.code, resumed.stderr.slice(-4000)).toBe(0);
    expect(JSON.parse(resumed.stdout), resumed.stderr.slice(-4000)).toMatchObject({ ok: true, decision: 'launched', exit: { code: 0 } });
    expect(released?.code, released?.stderr).toBe(0);
    // The launch was accepted (rule 3): its prompt got the capture's reminder before the release.
    const req = claudeTurnRequest(mock.requests, from, FENCED_PROMPT);
    expect(req, resumed.stderr.slice(-3000)).toBeDefined();
    expect(claudeAfterPrompt(req!, FENCED_PROMPT)).toContain(`turnkeeper show ${lease.capture}`);
    expect(existsSync(marker), 'a fenced session must not run a shell command').toBe(false);
    const followUp = mock.requests.slice(from).find((r) => lastToolResult(r) !== undefined);
    expect(followUp, resumed.stderr.slice(-3000)).toBeDefined();
    const result = lastToolResult(followUp!)!;
    expect(result.is_error).toBe(true);
    expect(JSON.stringify(result.content)).toContain('[lease_fenced]');
    expect(statusOf(world).leases).toMatchObject([{ owner: lease.owner, epoch: 1, status: 'released' }]);
    expect(verifyOf(world).ok).toBe(true);
  });

  it('after the release, resume is refused [capture_released] before Claude runs', async () => {
    const from = mock.requests.length;
    const launchesBefore = (await receiptDocs(world)).filter((doc) => doc.kind === 'launch_committed').length;
    const resumed = await turnkeeper(['resume', lease.capture, '--json', '--agent-bin', CLAUDE]);
    expect(resumed.code, resumed.stderr).toBe(1);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ ok: false, decision: 'refused', capture: lease.capture, reason: 'capture_released' });
    expect(mock.requests.length).toBe(from);
    expect((await receiptDocs(world)).filter((doc) => doc.kind === 'launch_committed')).toHaveLength(launchesBefore);
    expect(verifyOf(world).ok).toBe(true);
  });
});
