// End to end with the real Claude Code CLI (2.1.332): Turnkeeper's hooks installed by the real CLI
// into $CLAUDE_CONFIG_DIR/settings.json, the real `claude -p` talking to a mock Anthropic Messages
// API on 127.0.0.1, real SQLite. The Turn is Claude's `prompt_id` (UserPromptSubmit).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import type { ReceiptDocument } from '../../src/core/receipts';
import { like } from '../support/matchers';
import { join } from 'node:path';
import { makeWorld, type World } from '../support/world';
import { lastToolResult, startAnthropicMock, type AnthropicMock } from '../support/anthropicMock';
import {
  BIN,
  claudeAfterPrompt,
  claudeEnv,
  claudeResult,
  claudeTurnRequest,
  claudeVisibleText,
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

const BODY = 'Distinctive body: session cookie survives logout on Safari only (heron-5520).';
const RUN_TIMEOUT_MS = 45_000;
const CLAUDE_READY_LINE = /^UserPromptSubmit hook additional context: Turnkeeper: Todo fix-login · capture (cap_[0-9a-f]{24}) · epoch 1$/m;

let world: World;
let mock: AnthropicMock;
let agentEnv: NodeJS.ProcessEnv;
let nextShell: string | undefined;

beforeAll(async () => {
  mock = await startAnthropicMock((req) => {
    if (lastToolResult(req) !== undefined) return { text: 'done' };
    // Only the main conversation (it carries tools) runs the queued command; side requests get text.
    if (nextShell !== undefined && (req.body?.tools ?? []).some((t) => t.name === 'Bash')) {
      const command = nextShell;
      nextShell = undefined;
      return { toolUse: { name: 'Bash', input: { command, description: 'touch a marker' } } };
    }
    return { text: 'ok' };
  });
  world = makeWorld('tk-e2e-claude');
  let configDir: string;
  ({ env: agentEnv, configDir } = claudeEnv(world, mock));
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

function claude(args: string[]): Promise<ProcResult> {
  return runProcess(join(BIN, 'claude'), args, { cwd: world.repo, env: agentEnv, timeoutMs: RUN_TIMEOUT_MS });
}

const turnRequest = (from: number, prompt: string) => claudeTurnRequest(mock.requests, from, prompt);

describe('Claude Code with Turnkeeper hooks (real binary)', () => {
  let session = '';
  let lease: LeaseJson;
  let presentation = '';

  it('a prompt naming #todo:fix-login claims the lease (Turn = prompt_id) and the ready capture reaches the model', async () => {
    const prompt = 'please work on #todo:fix-login';
    const from = mock.requests.length;
    const json = claudeResult('claude -p', await claude(['-p', prompt, '--output-format', 'json']));
    session = json.session_id ?? '';
    expect(session).toMatch(/^[0-9a-f-]{36}$/);

    const req = turnRequest(from, prompt);
    expect(
      req,
      `requests: ${mock.requests
        .slice(from)
        .map((r) => r.raw.slice(0, 300))
        .join('\n')}`,
    ).toBeDefined();
    const text = claudeVisibleText(req!);
    // Claude prefixes hook context with "<Event> hook additional context: ".
    const match = CLAUDE_READY_LINE.exec(text);
    expect(match, text.slice(-4000)).not.toBeNull();
    expect(text).toContain(BODY);

    const status = statusOf(world);
    const active = status.leases.filter((l) => l.status === 'active');
    expect(active).toHaveLength(1);
    lease = active[0]!;
    expect(lease).toMatchObject({ todo: 'fix-login', owner: `claude:${session}`, epoch: 1, capture: match![1], status: 'active' });
    const capture = status.captures.find((c) => c.id === lease.capture);
    expect(capture).toMatchObject({ agent: 'claude', session, state: 'ready' });
    expect(capture?.turn).toMatch(/^[0-9a-f-]{36}$/); // Claude's prompt_id
    expect(capture?.turn).not.toBe(session);
    presentation = presentationOf(world, lease.capture);
    expect(text).toContain(`UserPromptSubmit hook additional context: ${presentation}`);
    expect(verifyOf(world).ok).toBe(true);
  });

  it('claude -p --resume presents the same ready capture (via UserPromptSubmit), the lease unchanged', async () => {
    expect(session).not.toBe('');
    const marker = join(world.root, 'claude-marker-before-release');
    nextShell = `touch '${marker}'`;
    const from = mock.requests.length;
    const json = claudeResult('claude --resume', await claude(['-p', '--resume', session, 'continue', '--output-format', 'json', '--allowedTools', 'Bash']));
    expect(json.session_id).toBe(session);

    const req = turnRequest(from, 'continue');
    expect(req).toBeDefined();
    // The history the resumed request sends carries the first prompt's context, the stored presentation
    // byte for byte, once; Claude's transcript recorded it, so this prompt's context is the one-line
    // reminder that names the capture (docs/hook-protocol.md, "How often the full capture is presented").
    expect(occurrences(claudeVisibleText(req!), `UserPromptSubmit hook additional context: ${presentation}`)).toBe(1);
    const after = claudeAfterPrompt(req!, 'continue');
    expect(after).toContain(`UserPromptSubmit hook additional context: ${presentation.split('\n')[0]}\nThis session still holds the lease`);
    expect(after).toContain(`turnkeeper show ${lease.capture}`);
    expect(existsSync(marker), 'the lease holder may run a shell command').toBe(true);

    expectLeaseUnchanged(world, lease);
  });

  it("a turn that writes a file ends in a turn_ended receipt naming it, with the trees before and after and the transcript's model and tokens", async () => {
    expect(session).not.toBe('');
    const git = (...args: string[]) => execFileSync('git', ['-C', world.repo, ...args], { encoding: 'utf8' }).trim();
    const headBefore = git('rev-parse', 'HEAD');
    nextShell = `echo turn > '${join(world.repo, 'turn-output.txt')}'`;
    claudeResult('claude --resume (edit)', await claude(['-p', '--resume', session, 'write the file', '--output-format', 'json', '--allowedTools', 'Bash']));
    expect(existsSync(join(world.repo, 'turn-output.txt'))).toBe(true);
    const store = await world.store();
    let turns: ReceiptDocument[];
    try {
      turns = (await store.receipts({ limit: 1000 })).map((row) => JSON.parse(row.doc) as ReceiptDocument).filter((doc) => doc.kind === 'turn_ended');
    } finally {
      store.close();
    }
    // The newest first: this turn's, after the earlier turns' own.
    const [turn] = turns;
    expect(turn, JSON.stringify(turns)).toMatchObject({
      todo: 'fix-login',
      owner: `claude:${session}`,
      lease: { epoch: 1 },
      detail: { agent: 'claude', event: 'Stop', session, headBefore, headAfter: headBefore, changed: 1, added: 1 },
    });
    expect(turn!.detail!.paths).toEqual(['A\tturn-output.txt']);
    expect(turn!.detail!.treeBefore).not.toBe(turn!.detail!.treeAfter);
    // What the real transcript carried: the mock's model and usage, and Claude's own version.
    expect(turn!.detail).toMatchObject({ agentVersion: like.stringMatching(/^\d+\.\d+\.\d+/), model: like.stringMatching(/./) });
    expect(turn!.detail!.outputTokens).toBeGreaterThan(0);
    expect(statusOf(world).leases.find((l) => l.status === 'active')).toMatchObject({ live: { state: 'stopped' } });
    expect(verifyOf(world).ok).toBe(true);
  });

  it('a second Claude session naming the same Todo gets [lease_held] and claims nothing', async () => {
    const prompt = 'I also want #todo:fix-login';
    const from = mock.requests.length;
    const json = claudeResult('second claude -p', await claude(['-p', prompt, '--output-format', 'json']));
    expect(json.session_id).toBeDefined();
    expect(json.session_id).not.toBe(session);
    const req = turnRequest(from, prompt);
    expect(req).toBeDefined();
    const text = claudeVisibleText(req!);
    expect(text).toContain('[lease_held]');
    expect(text).toContain(`claude:${session}`);
    expect(text).not.toContain(BODY);
    // The person's line (systemMessage, docs/hook-protocol.md "What the person sees") is not the model's.
    expect(JSON.stringify(req)).not.toContain('nothing was claimed');

    const status = statusOf(world);
    expect(status.leases).toHaveLength(1);
    expect(status.leases[0]).toMatchObject({ owner: `claude:${session}`, epoch: 1, status: 'active' });
    expect(status.captures.filter((c) => c.session === json.session_id)).toHaveLength(0);
  });

  it('after a forced release the resumed session is fenced: its Bash call is denied with [lease_fenced]', async () => {
    const release = world.cli(['release', 'fix-login', '--force', '--reason', 'test']);
    expect(release.code, release.stderr).toBe(0);
    const marker = join(world.root, 'claude-marker-after-release');
    nextShell = `touch '${marker}'`;
    const from = mock.requests.length;
    claudeResult(
      'claude --resume (fenced)',
      await claude(['-p', '--resume', session, 'continue after release', '--output-format', 'json', '--allowedTools', 'Bash']),
    );
    expect(existsSync(marker)).toBe(false);
    const followUp = mock.requests.slice(from).find((r) => lastToolResult(r) !== undefined);
    expect(followUp).toBeDefined();
    const result = lastToolResult(followUp!)!;
    expect(result.is_error).toBe(true);
    expect(JSON.stringify(result.content)).toContain('[lease_fenced]');

    const status = statusOf(world);
    expect(status.leases).toHaveLength(1);
    expect(status.leases[0]).toMatchObject({ owner: `claude:${session}`, epoch: 1, status: 'released' });
    expect(verifyOf(world).ok).toBe(true);
  });
});
