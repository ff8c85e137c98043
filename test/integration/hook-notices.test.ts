// The person sees what the model is told when it matters (spec §2 "Output"): a refused claim answered
// with context also carries one line for the person, in the field each agent shows its user
// (`systemMessage` for Codex, Claude Code and Gemini CLI; Copilot CLI has none). What the model gets
// is unchanged, a successful claim or a replay tells the person nothing, and a block's reason is
// itself what the person sees. Then "did you mean", with its controls. Through the real
// `turnkeeper hook` process against a real SQLite file.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { makeWorld, parseHookStdout, payload, type World } from '../support/world';

let world: World;
beforeEach(() => {
  world = makeWorld('tk-notices');
  for (const id of ['fix-login', 'fix-add', 'write-docs'])
    expect(world.cli(['todo', 'add', `Title of ${id}`, '--id', id, '--body', `Body of ${id}`]).code).toBe(0);
});
afterEach(() => world.cleanup());

type Env = Record<string, string | undefined>;
const run = (args: string[], input: string, env: Env = {}) => {
  const result = world.cli(args, { input, env: { COPILOT_HOME: join(world.root, 'cop'), ...env } });
  expect(result.code, result.stderr).toBe(0);
  return parseHookStdout(result.stdout)!;
};

/** One prompt event of each agent, as it sends it, through its installed command line. */
const AGENTS = {
  codex: (session: string, turn: string, prompt: string, env: Env = {}) =>
    run(['hook', '--agent', 'codex'], payload.codexPrompt(world, session, turn, prompt), env),
  claude: (session: string, turn: string, prompt: string, env: Env = {}) =>
    run(['hook', '--agent', 'claude'], payload.claudePrompt(world, session, turn, prompt), env),
  gemini: (session: string, turn: string, prompt: string, env: Env = {}) =>
    run(['hook', '--agent', 'gemini'], payload.geminiBeforeAgent(world, session, prompt), { TURNKEEPER_TURN: turn, ...env }),
  copilot: (session: string, turn: string, prompt: string, env: Env = {}) =>
    run(
      ['hook', '--agent', 'copilot', '--event', 'userPromptSubmitted'],
      JSON.stringify({ sessionId: session, timestamp: Date.now(), cwd: world.repo, prompt }),
      { TURNKEEPER_TURN: turn, ...env },
    ),
  // Qwen Code 0.24.4: Claude-shaped, with its prompt_id `<session>########<n>` (test/unit/qwen-payload.test.ts).
  qwen: (session: string, turn: string, prompt: string, env: Env = {}) =>
    run(
      ['hook', '--agent', 'qwen'],
      JSON.stringify({
        session_id: session,
        cwd: world.repo,
        hook_event_name: 'UserPromptSubmit',
        timestamp: new Date().toISOString(),
        permission_mode: 'default',
        prompt_id: `${session}########${turn}`,
        prompt,
      }),
      env,
    ),
} as const;

/** The model's text, wherever the agent's shape keeps it. */
const modelText = (output: Record<string, unknown>): string =>
  ((output.hookSpecificOutput as { additionalContext?: string } | undefined)?.additionalContext ?? output.additionalContext) as string;

describe("a refused claim reaches the person through each agent's user-facing field", () => {
  const EVENT = { codex: 'UserPromptSubmit', claude: 'UserPromptSubmit', gemini: 'BeforeAgent', qwen: 'UserPromptSubmit' } as const;

  for (const agent of ['codex', 'claude', 'gemini', 'qwen'] as const) {
    it(`${agent}: [lease_held] is context for the model and one systemMessage line for the person; control: the claim and its replay carry none`, () => {
      const claimed = AGENTS[agent]('holder-1', 'turn-1', 'please work on #todo:fix-login');
      expect(Object.keys(claimed)).toStrictEqual(['hookSpecificOutput']);
      expect(modelText(claimed)).toMatch(/^Turnkeeper: Todo fix-login · capture cap_/);
      const replay = AGENTS[agent]('holder-1', 'turn-1', 'please work on #todo:fix-login');
      expect(replay).toStrictEqual(claimed);

      const refused = AGENTS[agent]('other-1', 'turn-2', 'I also want #todo:fix-login');
      expect(Object.keys(refused).sort()).toStrictEqual(['hookSpecificOutput', 'systemMessage']);
      const guidance = modelText(refused);
      // The model's text is the guidance as ever: three lines, the person's line not among them.
      expect(refused.hookSpecificOutput).toStrictEqual({ hookEventName: EVENT[agent], additionalContext: guidance });
      expect(guidance.split('\n')).toHaveLength(3);
      expect(guidance).toMatch(new RegExp(`^Turnkeeper \\[lease_held\\]: Todo fix-login is leased to ${agent}:holder-1 \\(epoch 1\\)`));
      expect(refused.systemMessage).toBe(`Turnkeeper [lease_held]: Todo fix-login is held by ${agent}:holder-1; nothing was claimed. See: turnkeeper status`);
      expect(guidance).not.toContain(refused.systemMessage as string);
    });
  }

  it('copilot: the same refusal is additionalContext alone (Copilot CLI shows its user no hook field); control: its shape is unchanged', () => {
    const claimed = AGENTS.copilot('holder-1', 'turn-1', 'please work on #todo:fix-login');
    expect(Object.keys(claimed)).toStrictEqual(['additionalContext']);
    const refused = AGENTS.copilot('other-1', 'turn-2', 'I also want #todo:fix-login');
    expect(Object.keys(refused)).toStrictEqual(['additionalContext']);
    expect(modelText(refused)).toMatch(/^Turnkeeper \[lease_held\]: Todo fix-login is leased to copilot:holder-1/);
  });

  it('every refusal of a claim carries its own line (Codex): session_holds_other, todo_not_open, capture_released, no_turn, invalid_todo_mention', () => {
    const codex = AGENTS.codex;
    codex('sess-a', 'turn-1', '#todo:fix-login');
    const notice = (output: Record<string, unknown>) => output.systemMessage as string;
    expect(notice(codex('sess-a', 'turn-2', '#todo:write-docs'))).toBe(
      'Turnkeeper [session_holds_other]: This session holds Todo fix-login; write-docs was not claimed. Finish it: turnkeeper todo done fix-login',
    );
    expect(world.cli(['todo', 'done', 'write-docs']).code).toBe(0);
    expect(notice(codex('sess-b', 'turn-1', '#todo:write-docs'))).toBe(
      'Turnkeeper [todo_not_open]: Todo write-docs is done; nothing was claimed. Reopen it: turnkeeper todo reopen write-docs',
    );
    expect(world.cli(['release', 'fix-login', '--owner', 'codex:sess-a']).code).toBe(0);
    expect(notice(codex('sess-a', 'turn-1', '#todo:fix-login'))).toMatch(
      /^Turnkeeper \[capture_released\]: Capture cap_[0-9a-f]{24} of Todo fix-login was released; nothing was claimed\. Name #todo:fix-login in a new prompt$/,
    );
    const noTurn = run(['hook', '--agent', 'claude'], payload.claudePrompt(world, 'cl-1', undefined, '#todo:fix-add'));
    expect(noTurn.systemMessage).toBe('Turnkeeper [no_turn]: Todo fix-add was not claimed: no Turn id. Start it with: turnkeeper start fix-add --agent claude');
    expect(notice(codex('sess-c', 'turn-1', 'look at #todo:Fix-Add'))).toBe(
      'Turnkeeper [invalid_todo_mention]: #todo:Fix-Add is not a Todo id; nothing was claimed. Did you mean #todo:fix-add?',
    );
  });

  it('with onConflict=block the reason is the block itself, for the person, and nothing else (control: the same refusal as context has the line)', () => {
    AGENTS.codex('holder-1', 'turn-1', '#todo:fix-login');
    for (const agent of ['codex', 'claude', 'gemini', 'copilot', 'qwen'] as const) {
      const blocked = AGENTS[agent](`other-${agent}`, 'turn-2', '#todo:fix-login', { TURNKEEPER_ON_CONFLICT: 'block' });
      expect(Object.keys(blocked), agent).toStrictEqual(['decision', 'reason']);
      expect(blocked.decision, agent).toBe(agent === 'gemini' ? 'deny' : 'block');
      expect(blocked.reason, agent).toMatch(/^Turnkeeper \[lease_held\]: Todo fix-login is leased to codex:holder-1 .*\nRecover: turnkeeper status/);
    }
    // A refusal that is no conflict is never a block: context, with the person's line.
    const unknown = AGENTS.codex('other-x', 'turn-3', '#todo:no-such-todo', { TURNKEEPER_ON_CONFLICT: 'block' });
    expect(Object.keys(unknown).sort()).toStrictEqual(['hookSpecificOutput', 'systemMessage']);
  });
});

describe('did you mean: an unknown Todo id near an open one', () => {
  it('#todo:fix-ad tells the model and the person "did you mean fix-add"; control: a far-off id gets no suggestion', async () => {
    const near = AGENTS.codex('sess-a', 'turn-1', 'please work on #todo:fix-ad');
    expect(modelText(near)).toContain('Turnkeeper [unknown_todo]: Todo fix-ad does not exist in this workspace. Did you mean fix-add?');
    expect(modelText(near)).toContain('Recover: send the prompt again with #todo:fix-add');
    expect(near.systemMessage).toBe('Turnkeeper [unknown_todo]: No Todo fix-ad here; nothing was claimed. Did you mean #todo:fix-add?');

    const far = AGENTS.codex('sess-a', 'turn-2', 'please work on #todo:refactor-parser');
    expect(modelText(far)).toContain('Turnkeeper [unknown_todo]: Todo refactor-parser does not exist in this workspace.\n');
    expect(modelText(far)).not.toContain('Did you mean');
    expect(far.systemMessage).toBe('Turnkeeper [unknown_todo]: No Todo refactor-parser here; nothing was claimed. List them: turnkeeper todo list');

    // Nothing was claimed either way, and the refusals are on record as before.
    const store = await world.store();
    try {
      expect(await store.listLeases()).toHaveLength(0);
    } finally {
      store.close();
    }
  });

  it('suggests open Todos only (control: reopened, it is suggested), at most three, nearest first', () => {
    expect(world.cli(['todo', 'done', 'fix-add']).code).toBe(0);
    expect(modelText(AGENTS.codex('sess-a', 'turn-1', '#todo:fix-ad'))).not.toContain('Did you mean');
    expect(world.cli(['todo', 'reopen', 'fix-add']).code).toBe(0);
    expect(modelText(AGENTS.codex('sess-a', 'turn-2', '#todo:fix-ad'))).toContain('Did you mean fix-add?');

    for (const id of ['fix-ab', 'fix-and', 'fix-adds', 'fix-at']) expect(world.cli(['todo', 'add', `Title of ${id}`, '--id', id]).code).toBe(0);
    const many = AGENTS.gemini('gem-1', 'turn-g', '#todo:fix-ad');
    expect(modelText(many)).toContain('Did you mean fix-ab, fix-add or fix-and?');
    expect(many.systemMessage).toBe(
      'Turnkeeper [unknown_todo]: No Todo fix-ad here; nothing was claimed. Did you mean #todo:fix-ab, #todo:fix-add or #todo:fix-and?',
    );
  });

  it("suggests only the Goal's own Todos: another repository's fix-adx, in the same store, is not one (control: added here, it is)", () => {
    const elsewhere = join(world.root, 'elsewhere');
    execFileSync('git', ['init', '-q', elsewhere]);
    expect(world.cli(['todo', 'add', 'Elsewhere', '--id', 'fix-adx'], { cwd: elsewhere }).code).toBe(0);
    expect(modelText(AGENTS.codex('sess-a', 'turn-1', '#todo:fix-ad'))).toContain('Did you mean fix-add?');
    expect(world.cli(['todo', 'add', 'Here', '--id', 'fix-adx']).code).toBe(0);
    expect(modelText(AGENTS.codex('sess-a', 'turn-2', '#todo:fix-ad'))).toContain('Did you mean fix-add or fix-adx?');
  });
});
