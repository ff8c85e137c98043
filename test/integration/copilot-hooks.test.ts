// GitHub Copilot CLI's hook payloads and outputs: the adapter in-process (camelCase events named by
// the installed command, detection, hostile inputs), then the decision table through the real
// `turnkeeper hook --agent copilot --event <name>` process against a real SQLite file. Payload
// shapes are the ones Copilot CLI 1.0.102 sent (test/e2e/copilot.test.ts drives the real binary).
// Every negative has its control.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { like } from '../support/matchers';
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { InvalidHookInput, detectAgent, isWriteTool, parseHookInput } from '../../src/agents/payload';
import { blockOutput, contextOutput, denyToolOutput } from '../../src/agents/output';
import { callerOwner } from '../../src/config/settings';
import { makeWorld, parseHookStdout, type World } from '../support/world';

const SESSION = '6b2cee65-b970-4c59-9c60-abfb1e535ee9';

/** A camelCase payload as Copilot sends it to a hook registered under a camelCase event name. */
const camel = (cwd: string, extra: Record<string, unknown> = {}, session = SESSION): string =>
  JSON.stringify({ sessionId: session, timestamp: 1796060778972, cwd, ...extra });
const prompt = (cwd: string, text: string, session = SESSION) => camel(cwd, { prompt: text }, session);
const tool = (cwd: string, toolName: string, session = SESSION) => camel(cwd, { toolName, toolArgs: { command: 'touch x', description: 'touch' } }, session);

describe('the Copilot payload adapter', () => {
  let world: World;
  beforeEach(() => {
    world = makeWorld('tk-copilot-payload');
  });
  afterEach(() => world.cleanup());

  it('maps the five camelCase events, named by --event, to their kinds', () => {
    const kinds = Object.fromEntries(
      ['sessionStart', 'userPromptSubmitted', 'preToolUse', 'postToolUse', 'agentStop'].map((event) => [
        event,
        parseHookInput(camel(world.repo), 'copilot', { event }).kind,
      ]),
    );
    expect(kinds).toEqual({
      sessionStart: 'session_start',
      userPromptSubmitted: 'prompt',
      preToolUse: 'pre_tool',
      postToolUse: 'post_tool',
      agentStop: 'stop',
    });
    const event = parseHookInput(prompt(world.repo, 'fix #todo:fix-login'), 'copilot', { event: 'userPromptSubmitted' });
    expect(event).toMatchObject({
      agent: 'copilot',
      eventName: 'userPromptSubmitted',
      session: SESSION,
      cwd: world.repo,
      prompt: 'fix #todo:fix-login',
      turn: undefined,
    });
    expect(parseHookInput(tool(world.repo, 'bash'), 'copilot', { event: 'preToolUse' }).toolName).toBe('bash');
  });

  it('a camelCase payload without --event is invalid (it names no event); control: with --event it is read', () => {
    expect(() => parseHookInput(prompt(world.repo, 'hi'), 'copilot')).toThrow(/names no event.*--event/);
    expect(() => parseHookInput(prompt(world.repo, 'hi'), 'copilot', { event: 'sessionEnd' })).toThrow(/unknown copilot event "sessionEnd"/);
    expect(() => parseHookInput(prompt(world.repo, 'hi'), 'copilot', { event: '__proto__' })).toThrow(InvalidHookInput);
    expect(parseHookInput(prompt(world.repo, 'hi'), 'copilot', { event: 'userPromptSubmitted' }).kind).toBe('prompt');
  });

  it('accepts the Claude-style names Copilot also sends (snake_case, hook_event_name, Claude tool names)', () => {
    const snake = JSON.stringify({
      hook_event_name: 'PreToolUse',
      session_id: SESSION,
      timestamp: '2026-11-30T17:46:53.191Z',
      cwd: world.repo,
      tool_name: 'Bash',
      tool_input: { command: 'true' },
    });
    const event = parseHookInput(snake, 'copilot');
    expect(event).toMatchObject({ agent: 'copilot', eventName: 'PreToolUse', kind: 'pre_tool', toolName: 'Bash' });
    expect(isWriteTool('copilot', event.toolName)).toBe(true);
    // --event and the payload may spell one event two ways; two different events are refused.
    expect(parseHookInput(snake, 'copilot', { event: 'preToolUse' }).eventName).toBe('PreToolUse');
    expect(() => parseHookInput(snake, 'copilot', { event: 'agentStop' })).toThrow(/--event "agentStop" but the payload says "PreToolUse"/);
    // A camelCase payload is never read as another agent's.
    expect(() => parseHookInput(prompt(world.repo, 'hi'), 'claude', { event: 'userPromptSubmitted' })).toThrow(/camelCase payload is not a claude payload/);
  });

  it('the Turn never comes from the payload; the transcript is agentStop’s transcriptPath, else $COPILOT_HOME/session-state/<id>/events.jsonl', () => {
    // Fields that would be a Turn for Codex or Claude are not one for Copilot.
    const withIds = camel(world.repo, { prompt: '#todo:fix-login', turn_id: 'turn-x', prompt_id: 'p-1', turnId: 't-2' });
    expect(parseHookInput(withIds, 'copilot', { event: 'userPromptSubmitted' }).turn).toBeUndefined();
    const reported = join(world.root, 'cop', 'session-state', SESSION, 'events.jsonl');
    expect(parseHookInput(camel(world.repo, { transcriptPath: reported, stopReason: 'end_turn' }), 'copilot', { event: 'agentStop' }).transcriptPath).toBe(
      reported,
    );
    const env = { HOME: '/home/u', COPILOT_HOME: '/srv/cop' };
    expect(parseHookInput(prompt(world.repo, 'hi'), 'copilot', { event: 'userPromptSubmitted', env }).transcriptPath).toBe(
      `/srv/cop/session-state/${SESSION}/events.jsonl`,
    );
    expect(parseHookInput(prompt(world.repo, 'hi'), 'copilot', { event: 'userPromptSubmitted', env: { HOME: '/home/u' } }).transcriptPath).toBe(
      `/home/u/.copilot/session-state/${SESSION}/events.jsonl`,
    );
    // Control: Claude reports none of its own and gets none made up.
    const claude = JSON.stringify({ hook_event_name: 'UserPromptSubmit', session_id: 's-1', cwd: world.repo, prompt: 'hi' });
    expect(parseHookInput(claude, 'claude', { env }).transcriptPath).toBeUndefined();
  });

  it('detects Copilot by camelCase sessionId or COPILOT_CLI=1; controls: the same payloads without either are Claude, Codex still wins', () => {
    const snakePrompt = { hook_event_name: 'UserPromptSubmit', session_id: SESSION, cwd: world.repo, prompt: 'hi' };
    expect(detectAgent(JSON.parse(camel(world.repo)) as Record<string, unknown>)).toBe('copilot');
    expect(detectAgent(snakePrompt, { COPILOT_CLI: '1' })).toBe('copilot');
    expect(detectAgent(snakePrompt, {})).toBe('claude');
    expect(detectAgent(snakePrompt, { COPILOT_CLI: '0' })).toBe('claude');
    expect(detectAgent({ ...snakePrompt, turn_id: 't-1' }, { COPILOT_CLI: '1' })).toBe('codex');
    expect(detectAgent({ ...snakePrompt, hook_event_name: 'BeforeAgent', timestamp: 'x' }, { COPILOT_CLI: '1' })).toBe('gemini');
    // End to end in the parser: no --agent, camelCase payload and --event.
    expect(parseHookInput(prompt(world.repo, 'hi'), undefined, { event: 'userPromptSubmitted' }).agent).toBe('copilot');
  });

  it('refuses hostile camelCase payloads, each next to its valid control', () => {
    const valid = JSON.parse(prompt(world.repo, '#todo:fix-login')) as Record<string, unknown>;
    const read = (value: Record<string, unknown>) => parseHookInput(JSON.stringify(value), 'copilot', { event: 'userPromptSubmitted' });
    expect(read(valid).session).toBe(SESSION);
    const hostile: [string, Record<string, unknown>][] = [
      ['session id with path traversal', { ...valid, sessionId: '../../etc/passwd' }],
      ['session id with shell metacharacters', { ...valid, sessionId: '$(touch /tmp/pwned)' }],
      ['session id too long', { ...valid, sessionId: 'a'.repeat(129) }],
      ['session id of the wrong type', { ...valid, sessionId: 7 }],
      ['relative cwd', { ...valid, cwd: 'repo' }],
      ['cwd with NUL', { ...valid, cwd: `${world.repo}\u0000x` }],
      ['prompt of the wrong type', { ...valid, prompt: ['#todo:fix-login'] }],
      ['timestamp of the wrong type', { ...valid, timestamp: { ms: 1 } }],
      ['tool name over 256 characters', { ...valid, toolName: 'x'.repeat(257) }],
      ['relative transcript path', { ...valid, transcriptPath: 'events.jsonl' }],
    ];
    for (const [name, value] of hostile) expect(() => read(value), name).toThrow(InvalidHookInput);
    // Lone surrogates, written as JSON escapes so they reach the parser.
    expect(() => parseHookInput(JSON.stringify(valid).replace('#todo', '\\ud800#todo'), 'copilot', { event: 'userPromptSubmitted' })).toThrow(/lone surrogate/);
    expect(() => parseHookInput('[]', 'copilot', { event: 'userPromptSubmitted' })).toThrow(/not a JSON object/);
    expect(() => parseHookInput('null', undefined, { event: 'userPromptSubmitted' })).toThrow(/not a JSON object/);
    expect(() => parseHookInput(JSON.stringify({ ...valid, prompt: 'x'.repeat(1024 * 1024) }), 'copilot', { event: 'userPromptSubmitted' })).toThrow(
      /over the 1048576-byte limit/,
    );
  });

  it('fences its shells and file writers, not its readers', () => {
    for (const name of ['bash', 'write_bash', 'create', 'edit', 'Bash', 'Write', 'Edit']) expect(isWriteTool('copilot', name), name).toBe(true);
    for (const name of ['view', 'grep', 'glob', 'read_bash', 'list_bash', 'report_intent', 'run_shell_command', undefined])
      expect(isWriteTool('copilot', name), String(name)).toBe(false);
  });

  it("its tools' COPILOT_AGENT_SESSION_ID identifies the Owner (release without --force); controls: none set, and an id outside the grammar", () => {
    expect(callerOwner({ COPILOT_AGENT_SESSION_ID: SESSION })).toEqual({ owner: `copilot:${SESSION}`, identifiedBy: 'agent_environment' });
    expect(callerOwner({ COPILOT_CLI: '1' })).toBeUndefined();
    expect(callerOwner({ COPILOT_AGENT_SESSION_ID: '../x' })).toBeUndefined();
    // The other agents' variables still work as before.
    expect(callerOwner({ CODEX_THREAD_ID: 'victim1' })).toEqual({ owner: 'codex:victim1', identifiedBy: 'agent_environment' });
    expect(callerOwner({ CODEX_SESSION_ID: 'v2' })?.owner).toBe('codex:v2');
  });

  it('speaks at the top level: additionalContext, decision block, permissionDecision deny', () => {
    expect(contextOutput('copilot', 'userPromptSubmitted', 'ctx')).toEqual({ additionalContext: 'ctx' });
    expect(blockOutput('copilot', 'why')).toEqual({ decision: 'block', reason: 'why' });
    expect(denyToolOutput('copilot', 'preToolUse', 'why')).toEqual({ permissionDecision: 'deny', permissionDecisionReason: 'why' });
    // Control: Claude keeps its hookSpecificOutput shapes.
    expect(contextOutput('claude', 'UserPromptSubmit', 'ctx')).toEqual({ hookSpecificOutput: { hookEventName: 'UserPromptSubmit', additionalContext: 'ctx' } });
  });
});

describe('`turnkeeper hook --agent copilot --event <name>`: the decision table', () => {
  let world: World;
  beforeEach(() => {
    world = makeWorld('tk-copilot-hook');
    expect(world.cli(['todo', 'add', 'Fix login', '--id', 'fix-login', '--body', 'Body of fix-login']).code).toBe(0);
  });
  afterEach(() => world.cleanup());

  const hook = (event: string, input: string, env: Record<string, string | undefined> = {}) =>
    world.cli(['hook', '--agent', 'copilot', '--event', event], { input, env: { COPILOT_HOME: join(world.root, 'cop'), ...env } });
  const contextText = (stdout: string): string | undefined => {
    const output = parseHookStdout(stdout);
    if (output === undefined) return undefined;
    expect(Object.keys(output)).toEqual(['additionalContext']); // nothing else, at the top level
    return output.additionalContext as string;
  };

  it('a prompt naming the Todo with TURNKEEPER_TURN claims and presents the ready capture; control: without it, [no_turn] and no lease', async () => {
    const noTurn = hook('userPromptSubmitted', prompt(world.repo, 'work on #todo:fix-login'));
    expect(noTurn.code).toBe(0);
    expect(contextText(noTurn.stdout)).toContain('[no_turn]');
    const claimed = hook('userPromptSubmitted', prompt(world.repo, 'work on #todo:fix-login'), { TURNKEEPER_TURN: 'turn-c-1' });
    const text = contextText(claimed.stdout) ?? '';
    expect(text).toMatch(/^Turnkeeper: Todo fix-login · capture cap_[0-9a-f]{24} · epoch 1\n/);
    expect(text).toContain('Body of fix-login');
    const store = await world.store();
    try {
      const leases = await store.listLeases();
      expect(leases).toHaveLength(1);
      expect(leases[0]).toMatchObject({ owner: `copilot:${SESSION}`, epoch: 1, status: 'active' });
      // The session's transcript, derived before agentStop reports it, is what resume will check.
      expect((await store.getSession(`copilot:${SESSION}`))?.transcriptPath).toBe(join(world.root, 'cop', 'session-state', SESSION, 'events.jsonl'));
    } finally {
      store.close();
    }
    // sessionStart on resume presents the same stored bytes (rule 4).
    expect(contextText(hook('sessionStart', camel(world.repo, { source: 'resume', initialPrompt: 'continue' })).stdout)).toBe(text);
  });

  it("a holder whose events.jsonl already carries the capture gets the line naming it; after Copilot's compaction, the full bytes again", () => {
    const text = contextText(hook('userPromptSubmitted', prompt(world.repo, '#todo:fix-login'), { TURNKEEPER_TURN: 'turn-c-1' }).stdout) ?? '';
    const capture = /capture (cap_[0-9a-f]{24})/.exec(text)?.[1] ?? '';
    const transcript = join(world.root, 'cop', 'session-state', SESSION, 'events.jsonl');
    mkdirSync(dirname(transcript), { recursive: true });
    // Control: no transcript yet, so the full bytes.
    expect(contextText(hook('sessionStart', camel(world.repo, { source: 'resume' })).stdout)).toBe(text);
    // What Copilot writes: the prompt's message with the hook context in it.
    writeFileSync(
      transcript,
      `${JSON.stringify({ type: 'user.message', data: { content: '#todo:fix-login', transformedContent: `#todo:fix-login\n\n<system_reminder>\n${text}\n</system_reminder>` } })}\n`,
    );
    const reminder = contextText(hook('sessionStart', camel(world.repo, { source: 'resume' })).stdout) ?? '';
    expect(reminder).toMatch(new RegExp(`^Turnkeeper: Todo fix-login · capture ${capture} · epoch 1\n`));
    expect(reminder).toContain(`turnkeeper show ${capture}`);
    expect(reminder).not.toContain('Body of fix-login');
    appendFileSync(transcript, `${JSON.stringify({ type: 'session.compaction_complete', data: { success: true } })}\n`);
    expect(contextText(hook('sessionStart', camel(world.repo, { source: 'resume' })).stdout)).toBe(text);
  });

  it('a second session gets [lease_held]; with onConflict=block it is {"decision":"block","reason"}', () => {
    hook('userPromptSubmitted', prompt(world.repo, '#todo:fix-login'), { TURNKEEPER_TURN: 'turn-c-1' });
    const other = 'aaaaaaaa-0000-4000-8000-000000000002';
    const held = hook('userPromptSubmitted', prompt(world.repo, 'me too #todo:fix-login', other), { TURNKEEPER_TURN: 'turn-c-2' });
    expect(contextText(held.stdout)).toContain('[lease_held]');
    expect(contextText(held.stdout)).toContain(`copilot:${SESSION}`);
    const blocked = parseHookStdout(
      hook('userPromptSubmitted', prompt(world.repo, 'me too #todo:fix-login', other), { TURNKEEPER_TURN: 'turn-c-2', TURNKEEPER_ON_CONFLICT: 'block' }).stdout,
    );
    expect(Object.keys(blocked ?? {})).toEqual(['decision', 'reason']);
    expect(blocked).toMatchObject({ decision: 'block', reason: like.stringContaining('[lease_held]') });
  });

  it('preToolUse of a write tool after a forced release is denied [lease_fenced]; controls: before the release, and a read-only tool', () => {
    hook('userPromptSubmitted', prompt(world.repo, '#todo:fix-login'), { TURNKEEPER_TURN: 'turn-c-1' });
    expect(hook('preToolUse', tool(world.repo, 'bash')).stdout).toBe('');
    expect(world.cli(['release', 'fix-login', '--force', '--reason', 'test']).code).toBe(0);
    const denied = parseHookStdout(hook('preToolUse', tool(world.repo, 'bash')).stdout);
    expect(Object.keys(denied ?? {})).toEqual(['permissionDecision', 'permissionDecisionReason']);
    expect(denied).toMatchObject({ permissionDecision: 'deny', permissionDecisionReason: like.stringContaining('[lease_fenced]') });
    expect(parseHookStdout(hook('preToolUse', tool(world.repo, 'create')).stdout)).toMatchObject({ permissionDecision: 'deny' });
    expect(hook('preToolUse', tool(world.repo, 'view')).stdout).toBe('');
    // postToolUse and agentStop never print anything.
    expect(hook('postToolUse', tool(world.repo, 'bash')).stdout).toBe('');
    expect(hook('agentStop', camel(world.repo, { stopReason: 'end_turn' })).stdout).toBe('');
  });

  it('invalid input (no --event for a camelCase payload) prints nothing and writes nothing, exit 0; control: with --event it claims', () => {
    const input = prompt(world.repo, '#todo:fix-login');
    const bare = world.cli(['hook', '--agent', 'copilot'], { input, env: { TURNKEEPER_TURN: 'turn-c-1' } });
    expect(bare).toMatchObject({ code: 0, stdout: '' });
    expect(bare.stderr.trim().split('\n')).toEqual([expect.stringContaining('--event')]);
    // Auto-detected (no --agent): the camelCase payload is Copilot's.
    const detected = world.cli(['hook', '--event', 'userPromptSubmitted'], { input, env: { TURNKEEPER_TURN: 'turn-c-1' } });
    expect(contextText(detected.stdout)).toMatch(/^Turnkeeper: Todo fix-login · capture cap_[0-9a-f]{24} · epoch 1\n/);
  });
});
