// OpenCode's hook payloads and outputs: the payloads are what Turnkeeper's own plugin builds from
// OpenCode 1.18.33's hook arguments (src/agents/profiles/opencode.ts; ids as OpenCode made them in
// test/e2e/opencode.test.ts), through the adapter in-process and then through the real
// `turnkeeper hook --agent opencode --event <name>` process against a real SQLite file. Every
// negative has its control.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { InvalidHookInput, detectAgent, isWriteTool, parseHookInput } from '../../src/agents/payload';
import { blockOutput, contextOutput, denyToolOutput } from '../../src/agents/output';
import { makeWorld, parseHookStdout, type World } from '../support/world';

const SESSION = 'ses_dcb20608dffehl4sHZWy9gqIAx';
const MESSAGE = 'msg_234dfa2a50014sMFBzpUQaHLqG';

/** What the plugin writes to the hook's stdin for `event`. */
const payload = (event: string, cwd: string, extra: Record<string, unknown> = {}, session = SESSION): string =>
  JSON.stringify({ hook_event_name: event, session_id: session, cwd, ...extra });
const prompt = (cwd: string, text: string, turn = MESSAGE, session = SESSION) => payload('chatMessage', cwd, { turn_id: turn, prompt: text }, session);
const tool = (cwd: string, name: string) => payload('toolExecuteBefore', cwd, { tool_name: name });

describe('the OpenCode payload adapter', () => {
  let world: World;
  beforeEach(() => {
    world = makeWorld('tk-opencode-payload');
  });
  afterEach(() => world.cleanup());

  it("maps the plugin's four events to their kinds; the Turn is the message id, the transcript OpenCode's database", () => {
    const env = { XDG_DATA_HOME: join(world.root, 'data') };
    const event = parseHookInput(prompt(world.repo, 'fix #todo:fix-login'), 'opencode', { event: 'chatMessage', env });
    expect(event).toMatchObject({
      agent: 'opencode',
      eventName: 'chatMessage',
      kind: 'prompt',
      session: SESSION,
      turn: MESSAGE,
      prompt: 'fix #todo:fix-login',
      transcriptPath: join(world.root, 'data', 'opencode', 'opencode.db'),
    });
    expect(parseHookInput(tool(world.repo, 'bash'), 'opencode', { event: 'toolExecuteBefore' })).toMatchObject({ kind: 'pre_tool', toolName: 'bash' });
    expect(parseHookInput(payload('toolExecuteAfter', world.repo, { tool_name: 'read' }), 'opencode', { event: 'toolExecuteAfter' }).kind).toBe('post_tool');
    expect(parseHookInput(payload('sessionIdle', world.repo), 'opencode', { event: 'sessionIdle' }).kind).toBe('stop');
    // OPENCODE_DB moves the database: absolute as given, relative under the data directory.
    expect(parseHookInput(payload('sessionIdle', world.repo), 'opencode', { env: { OPENCODE_DB: '/d/x.db' } }).transcriptPath).toBe('/d/x.db');
    expect(parseHookInput(payload('sessionIdle', world.repo), 'opencode', { env: { HOME: '/h', OPENCODE_DB: 'y.db' } }).transcriptPath).toBe(
      '/h/.local/share/opencode/y.db',
    );
  });

  it("OpenCode's ids (`ses_…`, `msg_…`) are inside the id grammar; one outside it is refused (control: the same payload with OpenCode's)", () => {
    expect(() => parseHookInput(prompt(world.repo, 'hi', MESSAGE, 'ses_bad id'), 'opencode')).toThrow(InvalidHookInput);
    expect(() => parseHookInput(prompt(world.repo, 'hi', '_msg'), 'opencode')).toThrow(InvalidHookInput);
    expect(parseHookInput(prompt(world.repo, 'hi'), 'opencode').session).toBe(SESSION);
    // An event of another agent, or --event naming another kind than the payload, is refused.
    expect(() => parseHookInput(payload('UserPromptSubmit', world.repo), 'opencode')).toThrow(/unknown opencode event/);
    expect(() => parseHookInput(prompt(world.repo, 'hi'), 'opencode', { event: 'sessionIdle' })).toThrow(
      /--event "sessionIdle" but the payload says "chatMessage"/,
    );
  });

  it('is never auto-detected: the plugin passes --agent opencode, and without it the payload reads as Codex (it has turn_id)', () => {
    expect(detectAgent(JSON.parse(prompt(world.repo, 'hi')) as Record<string, unknown>)).toBe('codex');
  });

  it('fences its shells and file writers, not its readers; speaks the top-level fields its plugin reads', () => {
    for (const name of ['bash', 'edit', 'write', 'apply_patch']) expect(isWriteTool('opencode', name), name).toBe(true);
    for (const name of ['read', 'glob', 'grep', 'webfetch', 'todowrite', 'task']) expect(isWriteTool('opencode', name), name).toBe(false);
    expect(contextOutput('opencode', 'chatMessage', 'T', 'a notice')).toEqual({ additionalContext: 'T' });
    expect(blockOutput('opencode', 'R')).toEqual({ decision: 'block', reason: 'R' });
    expect(denyToolOutput('opencode', 'toolExecuteBefore', 'R')).toEqual({ permissionDecision: 'deny', permissionDecisionReason: 'R' });
  });
});

describe('the decision table for OpenCode (real hook process, real SQLite)', () => {
  let world: World;
  beforeEach(() => {
    world = makeWorld('tk-opencode-hooks');
    expect(world.cli(['todo', 'add', 'Fix login', '--id', 'fix-login', '--body', 'Body of fix-login']).code).toBe(0);
  });
  afterEach(() => world.cleanup());

  const hook = (event: string, input: string, env: Record<string, string> = {}) => world.cli(['hook', '--agent', 'opencode', '--event', event], { input, env });
  const contextText = (stdout: string): string | undefined => parseHookStdout(stdout)?.additionalContext as string | undefined;

  it('a prompt naming the Todo claims under the message id; the same message again replays the stored bytes; another session is held off', async () => {
    const claimed = hook('chatMessage', prompt(world.repo, 'work on #todo:fix-login'));
    const text = contextText(claimed.stdout) ?? '';
    expect(text).toMatch(/^Turnkeeper: Todo fix-login · capture cap_[0-9a-f]{24} · epoch 1\n/);
    expect(text).toContain('Body of fix-login');
    // A retry of the same Turn (same message id): the same bytes, nothing new.
    expect(contextText(hook('chatMessage', prompt(world.repo, 'work on #todo:fix-login')).stdout)).toBe(text);
    const store = await world.store();
    try {
      const leases = await store.listLeases();
      expect(leases).toEqual([expect.objectContaining({ owner: `opencode:${SESSION}`, epoch: 1, status: 'active' })]);
    } finally {
      store.close();
    }
    // A second session naming the same Todo: [lease_held], and with onConflict=block the plugin's block shape.
    const other = 'ses_dcb20608dffeOTHERy9gqIAx';
    expect(contextText(hook('chatMessage', prompt(world.repo, 'me too #todo:fix-login', 'msg_2', other)).stdout)).toContain('[lease_held]');
    const blocked = parseHookStdout(
      hook('chatMessage', prompt(world.repo, 'me too #todo:fix-login', 'msg_3', other), { TURNKEEPER_ON_CONFLICT: 'block' }).stdout,
    );
    expect(blocked).toEqual({ decision: 'block', reason: expect.stringContaining('[lease_held]') as unknown });
  });

  it('toolExecuteBefore of a write tool after a forced release is denied [lease_fenced]; controls: before the release, and a reader', () => {
    hook('chatMessage', prompt(world.repo, '#todo:fix-login'));
    expect(hook('toolExecuteBefore', tool(world.repo, 'bash')).stdout).toBe('');
    expect(world.cli(['release', 'fix-login', '--force', '--reason', 'test']).code).toBe(0);
    const denied = parseHookStdout(hook('toolExecuteBefore', tool(world.repo, 'bash')).stdout);
    expect(denied).toEqual({ permissionDecision: 'deny', permissionDecisionReason: expect.stringContaining('[lease_fenced]') as unknown });
    expect(hook('toolExecuteBefore', tool(world.repo, 'read')).stdout).toBe('');
    // toolExecuteAfter and sessionIdle never print anything.
    expect(hook('toolExecuteAfter', payload('toolExecuteAfter', world.repo, { tool_name: 'bash' })).stdout).toBe('');
    expect(hook('sessionIdle', payload('sessionIdle', world.repo)).stdout).toBe('');
  });
});
