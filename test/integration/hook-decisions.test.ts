// Contract §2, the decision table, one test per row, through the real `turnkeeper hook` process
// against a real SQLite file. Every negative test also runs its control: the same situation with
// the guard lifted, showing the forbidden thing would otherwise have happened.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ReceiptDocument } from '../../src/core/receipts';
import { like } from '../support/matchers';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { contextOf, makeWorld, parseHookStdout, payload, type World } from '../support/world';

let world: World;
beforeEach(() => {
  world = makeWorld('decisions');
});
afterEach(() => world.cleanup());

const hook = (input: string, env?: Record<string, string | undefined>) => world.cli(['hook'], { input, env });
const addTodo = (id: string, title = `Title of ${id}`) => {
  const result = world.cli(['todo', 'add', title, '--id', id, '--body', `Body of ${id}`]);
  expect(result.code).toBe(0);
};
async function receiptCount(): Promise<number> {
  const store = await world.store();
  try {
    return (await store.health()).receipts;
  } finally {
    store.close();
  }
}
async function leases() {
  const store = await world.store();
  try {
    return await store.listLeases();
  } finally {
    store.close();
  }
}

describe('rule 1: off', () => {
  it('TURNKEEPER=off prints nothing and creates no file', () => {
    const input = payload.codexPrompt(world, 'sess-a', 'turn-1', 'do #todo:fix-login');
    const off = hook(input, { TURNKEEPER: 'off' });
    expect(off).toMatchObject({ code: 0, stdout: '' });
    expect(world.dbExists()).toBe(false);
    // Control: without the switch the same prompt opens (creates) the store.
    const on = hook(input);
    expect(on.code).toBe(0);
    expect(world.dbExists()).toBe(true);
  });

  it('a file named off in TURNKEEPER_HOME turns it off as well', () => {
    mkdirSync(world.home, { recursive: true });
    writeFileSync(join(world.home, 'off'), '');
    const input = payload.codexPrompt(world, 'sess-a', 'turn-1', 'do #todo:fix-login');
    expect(hook(input)).toMatchObject({ code: 0, stdout: '' });
    expect(world.dbExists()).toBe(false);
  });
});

describe('rule 2: invalid input', () => {
  const cases: [string, (w: World) => string][] = [
    ['not JSON', () => '{"session_id": '],
    ['wrong types', (w) => JSON.stringify({ session_id: 7, cwd: w.repo, hook_event_name: 'UserPromptSubmit', turn_id: 't' })],
    ['unknown event', (w) => payload.codex(w, 'NotAnEvent', 'sess-a', 'turn-1', { prompt: '#todo:fix-login' })],
    ['session id outside its grammar', (w) => payload.codexPrompt(w, '../../etc/passwd', 'turn-1', '#todo:fix-login')],
    ['turn id outside its grammar', (w) => payload.codexPrompt(w, 'sess-a', 'turn 1', '#todo:fix-login')],
    ['lone surrogate', (w) => payload.codexPrompt(w, 'sess-a', 'turn-1', '#todo:fix-login').replace('#todo', '\\ud800#todo')],
    ['over 1 MiB', (w) => payload.codexPrompt(w, 'sess-a', 'turn-1', '#todo:fix-login ' + 'x'.repeat(1024 * 1024))],
    ['relative cwd', (w) => payload.codexPrompt(w, 'sess-a', 'turn-1', '#todo:fix-login').replace(JSON.stringify(w.repo), '"repo"')],
  ];
  for (const [name, make] of cases) {
    it(`${name}: nothing on stdout, nothing written, one stderr line, exit 0`, () => {
      const result = hook(make(world));
      expect(result.code).toBe(0);
      expect(result.stdout).toBe('');
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(world.dbExists()).toBe(false);
    });
  }
  it('control: the valid form of the same payload is acted on', () => {
    const result = hook(payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login'));
    expect(contextOf(result.stdout)).toContain('[unknown_todo]');
    expect(world.dbExists()).toBe(true);
  });
});

describe('rule 3: TURNKEEPER_CAPTURE', () => {
  it('refuses a capture no committed launch names ([not_live_bound]), and writes nothing', async () => {
    addTodo('fix-login');
    const claim = hook(payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login'));
    const captureId = /capture (cap_[0-9a-f]{24})/.exec(contextOf(claim.stdout)!)![1]!;
    const before = await receiptCount();
    const copied = hook(payload.codexPrompt(world, 'sess-a', 'turn-2', 'go on'), { TURNKEEPER_CAPTURE: captureId });
    expect(contextOf(copied.stdout)).toContain('[not_live_bound]');
    expect(await receiptCount()).toBe(before);

    // Control: once a launch receipt names the capture, the same environment is accepted.
    const store = await world.store();
    await store.appendReceipt({ kind: 'launch_committed', goal: world.goal, todo: 'fix-login', capture: captureId }, Date.now());
    store.close();
    const live = hook(payload.codexPrompt(world, 'sess-a', 'turn-2', 'go on'), { TURNKEEPER_CAPTURE: captureId });
    expect(contextOf(live.stdout)).toBe(contextOf(claim.stdout));
  });

  it('the first hook of a launch records launch_hooked once; a foreign launch nonce is [not_live_bound]', async () => {
    addTodo('fix-login');
    const claim = hook(payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login'));
    const captureId = /capture (cap_[0-9a-f]{24})/.exec(contextOf(claim.stdout)!)![1]!;
    const store = await world.store();
    await store.appendReceipt(
      { kind: 'launch_committed', goal: world.goal, todo: 'fix-login', capture: captureId, detail: { launch: 'launch_0123456789abcdef' } },
      Date.now(),
    );
    store.close();
    const launchEnv = { TURNKEEPER_CAPTURE: captureId, TURNKEEPER_LAUNCH: 'launch_0123456789abcdef' };
    expect(contextOf(hook(payload.codex(world, 'SessionStart', 'sess-a', undefined, { source: 'resume' }), launchEnv).stdout)).toBe(contextOf(claim.stdout));
    expect(contextOf(hook(payload.codexPrompt(world, 'sess-a', 'turn-2', 'go on'), launchEnv).stdout)).toBe(contextOf(claim.stdout));
    const after = await world.store();
    const hooked = (await after.launchReceipts(captureId)).filter((r) => r.kind === 'launch_hooked');
    expect(hooked).toHaveLength(1);
    expect((await after.launches())[0]).toMatchObject({ hooked: true });
    after.close();
    const foreign = hook(payload.codexPrompt(world, 'sess-a', 'turn-3', 'go on'), { ...launchEnv, TURNKEEPER_LAUNCH: 'launch_ffffffffffffffff' });
    expect(contextOf(foreign.stdout)).toContain('[not_live_bound]');
  });

  it('refuses a live capture presented by another session', async () => {
    addTodo('fix-login');
    const claim = hook(payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login'));
    const captureId = /capture (cap_[0-9a-f]{24})/.exec(contextOf(claim.stdout)!)![1]!;
    const store = await world.store();
    await store.appendReceipt({ kind: 'launch_committed', goal: world.goal, todo: 'fix-login', capture: captureId }, Date.now());
    store.close();
    const other = hook(payload.codexPrompt(world, 'sess-b', 'turn-9', 'go on'), { TURNKEEPER_CAPTURE: captureId });
    expect(contextOf(other.stdout)).toContain('[not_live_bound]');
  });
});

describe('rule 4: the session already holds a lease', () => {
  it('presents the stored bytes again on later turns, SessionStart and retries, writing nothing', async () => {
    addTodo('fix-login');
    const first = hook(payload.codexPrompt(world, 'sess-a', 'turn-1', 'please #todo:fix-login'));
    const presented = contextOf(first.stdout)!;
    expect(presented.split('\n')[0]).toMatch(/^Turnkeeper: Todo fix-login · capture cap_[0-9a-f]{24} · epoch 1$/);
    const receipts = await receiptCount();
    const leaseBefore = await leases();

    const later = hook(payload.codexPrompt(world, 'sess-a', 'turn-2', 'continue'));
    const start = hook(payload.codex(world, 'SessionStart', 'sess-a', undefined, { source: 'resume' }));
    const retry = hook(payload.codexPrompt(world, 'sess-a', 'turn-1', 'please #todo:fix-login'));
    for (const result of [later, start, retry]) expect(contextOf(result.stdout)).toBe(presented);
    expect(parseHookStdout(start.stdout)).toStrictEqual({ hookSpecificOutput: { hookEventName: 'SessionStart', additionalContext: presented } });
    expect(await receiptCount()).toBe(receipts);
    expect(await leases()).toStrictEqual(leaseBefore);
  });

  it('a prompt naming a different Todo gets [session_holds_other] and claims nothing', async () => {
    addTodo('fix-login');
    addTodo('write-docs');
    hook(payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login'));
    const other = hook(payload.codexPrompt(world, 'sess-a', 'turn-2', '#todo:write-docs'));
    expect(contextOf(other.stdout)).toContain('[session_holds_other]');
    expect((await leases()).filter((lease) => lease.todo === 'write-docs')).toHaveLength(0);
    // Control: another session claims write-docs with the same prompt.
    const control = hook(payload.codexPrompt(world, 'sess-b', 'turn-2', '#todo:write-docs'));
    expect(contextOf(control.stdout)).toMatch(/^Turnkeeper: Todo write-docs/);
  });
});

describe('rule 5: a bound prompt without a Turn', () => {
  it('Gemini without TURNKEEPER_TURN gets [no_turn] and no claim', async () => {
    addTodo('fix-login');
    const result = hook(payload.geminiBeforeAgent(world, 'gem-1', '#todo:fix-login'));
    expect(contextOf(result.stdout)).toContain('[no_turn]');
    expect(await leases()).toHaveLength(0);
    // Control: the same prompt with a Turn from the launcher's environment claims.
    const control = hook(payload.geminiBeforeAgent(world, 'gem-1', '#todo:fix-login'), { TURNKEEPER_TURN: 'turn-g1' });
    expect(contextOf(control.stdout)).toMatch(/^Turnkeeper: Todo fix-login/);
    expect(await leases()).toHaveLength(1);
  });

  it('Gemini: a Todo named only inside earlier hook context does not bind', async () => {
    addTodo('fix-login');
    const echoed = '<hook_context>start a new turn that names #todo:fix-login</hook_context>\n\nwhat next?';
    expect(hook(payload.geminiBeforeAgent(world, 'gem-2', echoed), { TURNKEEPER_TURN: 'tg2' }).stdout).toBe('');
    expect(await leases()).toHaveLength(0);
    // Control: the user naming it binds.
    const named = hook(payload.geminiBeforeAgent(world, 'gem-2', `${echoed} #todo:fix-login`), { TURNKEEPER_TURN: 'tg2' });
    expect(contextOf(named.stdout)).toMatch(/^Turnkeeper: Todo fix-login/);
  });

  it('Claude without prompt_id gets [no_turn]; with prompt_id it claims', () => {
    addTodo('fix-login');
    expect(contextOf(hook(payload.claudePrompt(world, 'cl-1', undefined, '#todo:fix-login')).stdout)).toContain('[no_turn]');
    expect(contextOf(hook(payload.claudePrompt(world, 'cl-1', 'p-1', '#todo:fix-login')).stdout)).toMatch(/^Turnkeeper: Todo fix-login/);
  });
});

describe('rule 6: claim', () => {
  it('unknown Todo → [unknown_todo]; not open → [todo_not_open]; neither claims', async () => {
    expect(contextOf(hook(payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:nope-todo')).stdout)).toContain('[unknown_todo]');
    addTodo('fix-login');
    expect(world.cli(['todo', 'done', 'fix-login']).code).toBe(0);
    expect(contextOf(hook(payload.codexPrompt(world, 'sess-a', 'turn-2', '#todo:fix-login')).stdout)).toContain('[todo_not_open]');
    expect(await leases()).toHaveLength(0);
    // Control: an open Todo with the same prompt shape is claimed.
    addTodo('fix-other');
    expect(contextOf(hook(payload.codexPrompt(world, 'sess-a', 'turn-3', '#todo:fix-other')).stdout)).toMatch(/epoch 1$/m);
  });

  it('acquires with capture, lease, ready capture and receipts in one transaction', async () => {
    addTodo('fix-login');
    const result = hook(payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login'));
    expect(Object.keys(parseHookStdout(result.stdout)!)).toStrictEqual(['hookSpecificOutput']);
    const store = await world.store();
    const [lease] = await store.listLeases();
    expect(lease).toMatchObject({ todo: 'fix-login', owner: 'codex:sess-a', epoch: 1, version: 1, status: 'active' });
    const kinds = (await store.receipts({ limit: 10 })).map((row) => (JSON.parse(row.doc) as ReceiptDocument).kind);
    expect(kinds.slice(0, 3)).toStrictEqual(['ready_written', 'lease_acquired', 'capture_bound']);
    expect((await store.verifyChain()).ok).toBe(true);
    store.close();
  });

  it('a claim runs git for its preconditions and its turn base only (six runs), a tool call runs none, and the branch is read from HEAD', async () => {
    addTodo('fix-login');
    execFileSync('git', ['-C', world.repo, 'checkout', '-q', '-b', 'team/login']);
    // A git in front of the real one that counts its runs.
    const bin = join(world.root, 'counting-bin');
    const log = join(world.root, 'git-runs.txt');
    const real = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
    mkdirSync(bin);
    writeFileSync(join(bin, 'git'), `#!/bin/sh\necho "$*" >> '${log}'\nexec '${real}' "$@"\n`, { mode: 0o755 });
    const claimed = hook(payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login'), { PATH: `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}` });
    expect(contextOf(claimed.stdout)).toMatch(/· epoch 1$/m);
    const runs = readFileSync(log, 'utf8').trim().split('\n');
    // The claim's preconditions (HEAD with the check that git uses the index GIT_INDEX_FILE names,
    // the filter drivers to disable, status), then the turn's base (spec §5 "turn_ended") in the same
    // git session, so HEAD and the drivers are not read again: the submodules, hiding flags and
    // untracked files no .gitignore hides (none here) in one listing, tracked changes, and the tree.
    const subcommands = runs.map((line) => line.replace(/^--no-pager --no-optional-locks -c core\.fsmonitor=false -c core\.hooksPath=\/dev\/null -C \S+ /, ''));
    expect(subcommands).toEqual([
      'rev-parse --git-path index --verify -q HEAD',
      'config --null --get-regexp ^filter\\.',
      'status --porcelain=v1 -z --untracked-files=all --ignore-submodules=dirty',
      'ls-files --stage -v --others --exclude-per-directory=.gitignore -z',
      'add -u -- .',
      'write-tree',
    ]);
    expect(runs.some((line) => line.includes('symbolic-ref'))).toBe(false);
    // The same prompt delivered again replays its capture and runs no git: its turn began at the first.
    const replayed = hook(payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login'), { PATH: `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}` });
    expect(contextOf(replayed.stdout)).toBe(contextOf(claimed.stdout));
    expect(readFileSync(log, 'utf8').trim().split('\n')).toHaveLength(runs.length);
    // Tool calls never look at the working tree: the holder's PreToolUse and PostToolUse run no git,
    // however large the repository (issue 32).
    const counted = { PATH: `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}` };
    const tool = { tool_name: 'Bash', tool_use_id: 'call-1', tool_input: { command: 'ls' } };
    expect(hook(payload.codex(world, 'PreToolUse', 'sess-a', 'turn-1', tool), counted).code).toBe(0);
    expect(hook(payload.codex(world, 'PostToolUse', 'sess-a', 'turn-1', { ...tool, tool_response: 'ok' }), counted).code).toBe(0);
    expect(readFileSync(log, 'utf8').trim().split('\n')).toHaveLength(runs.length);
    // Its stop builds the tree after the turn (HEAD, the drivers, the listing, tracked changes, the
    // tree) and the paths between it and the base: six runs for a turn that changed a tracked file.
    const tracked = execFileSync('git', ['-C', world.repo, 'ls-files', '-z'], { encoding: 'utf8' }).split('\0')[0]!;
    writeFileSync(join(world.repo, tracked), 'changed by the turn\n', { flag: 'a' });
    expect(hook(payload.codex(world, 'Stop', 'sess-a', 'turn-1', { stop_hook_active: false }), counted).code).toBe(0);
    const stopRuns = readFileSync(log, 'utf8').trim().split('\n').slice(runs.length);
    expect(
      stopRuns.map((line) => line.replace(/^--no-pager --no-optional-locks -c core\.fsmonitor=false -c core\.hooksPath=\/dev\/null -C \S+ /, '').split(' ')[0]),
    ).toEqual(['rev-parse', 'config', 'ls-files', 'add', 'write-tree', 'diff-tree']);
    // Control: the holder's next Turn records its own base (git runs again).
    const beforeNext = runs.length + stopRuns.length;
    hook(payload.codexPrompt(world, 'sess-a', 'turn-2', 'go on'), counted);
    expect(readFileSync(log, 'utf8').trim().split('\n').length).toBeGreaterThan(beforeNext);
    const store = await world.store();
    const [capture] = await store.listCaptures();
    store.close();
    expect(capture!.branch).toBe('team/login');
  });

  it('the same op replays the stored capture; once released it is [capture_released] and never comes back', async () => {
    addTodo('fix-login');
    const input = payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login');
    const first = contextOf(hook(input).stdout);
    expect(contextOf(hook(input).stdout)).toBe(first);
    expect(world.cli(['release', 'fix-login', '--owner', 'codex:sess-a']).code).toBe(0);
    expect(contextOf(hook(input).stdout)).toContain('[capture_released]');
    expect((await leases()).filter((lease) => lease.status === 'active')).toHaveLength(0);
    // Control: a new Turn binding the Todo acquires epoch 2.
    expect(contextOf(hook(payload.codexPrompt(world, 'sess-a', 'turn-2', '#todo:fix-login')).stdout)).toMatch(/· epoch 2$/m);
  });

  it('another Owner gets [lease_held] naming holder, epoch and expiry', async () => {
    addTodo('fix-login');
    hook(payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login'));
    const text = contextOf(hook(payload.codexPrompt(world, 'sess-b', 'turn-1', '#todo:fix-login')).stdout)!;
    expect(text).toContain('[lease_held]');
    expect(text).toContain('codex:sess-a');
    expect(text).toContain('epoch 1');
    expect(text).toMatch(/until \d{4}-\d\d-\d\dT/);
    expect(await leases()).toHaveLength(1);
  });

  it('an expired lease of another Owner is still a hold: [lease_expired_hold] with the takeover command', async () => {
    addTodo('fix-login');
    // The shortest lease there is (60 s, one renewal interval), expired: its expiry set a second ago
    // (a SQLite ledger takes no clock from the environment, so no hook can be sent into the future).
    hook(payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login'), { TURNKEEPER_LEASE_TTL: '60' });
    const store = await world.store();
    store.connection.prepare('UPDATE leases SET expires_at = ?').run(Date.now() - 1000);
    store.close();
    const text = contextOf(hook(payload.codexPrompt(world, 'sess-b', 'turn-1', '#todo:fix-login')).stdout)!;
    expect(text).toContain('[lease_expired_hold]');
    expect(text).toContain('turnkeeper release fix-login --force --reason');
    expect((await leases()).map((lease) => [lease.owner, lease.status])).toStrictEqual([['codex:sess-a', 'active']]);
    // Control: after the takeover command the other session acquires epoch 2.
    expect(world.cli(['release', 'fix-login', '--force', '--reason', 'holder gone']).code).toBe(0);
    expect(contextOf(hook(payload.codexPrompt(world, 'sess-b', 'turn-1', '#todo:fix-login')).stdout)).toMatch(/· epoch 2$/m);
  });

  it('turnkeeper.onConflict=block turns conflict guidance into a block (Codex/Claude) or deny (Gemini)', () => {
    addTodo('fix-login');
    hook(payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login'));
    const blocked = parseHookStdout(hook(payload.codexPrompt(world, 'sess-b', 'turn-1', '#todo:fix-login'), { TURNKEEPER_ON_CONFLICT: 'block' }).stdout);
    expect(blocked).toMatchObject({ decision: 'block' });
    expect(Object.keys(blocked!)).toStrictEqual(['decision', 'reason']);
    const denied = parseHookStdout(
      hook(payload.geminiBeforeAgent(world, 'gem-1', '#todo:fix-login'), { TURNKEEPER_ON_CONFLICT: 'block', TURNKEEPER_TURN: 'tg' }).stdout,
    );
    expect(denied).toMatchObject({ decision: 'deny' });
  });
});

describe('rule 7 and the rest', () => {
  it('no binding and nothing held prints nothing and creates nothing', () => {
    const result = hook(payload.codexPrompt(world, 'sess-a', 'turn-1', 'just chatting'));
    expect(result).toMatchObject({ code: 0, stdout: '' });
    expect(world.dbExists()).toBe(false);
  });

  for (const written of ['#todo:Fix-Login', '#TODO:fix-login', '#todo:ab', '#todo:Ümlaut']) {
    it(`a malformed mention (${written}) gets [invalid_todo_mention] with the grammar in words, and claims nothing`, () => {
      addTodo('fix-login');
      const result = hook(payload.codexPrompt(world, 'sess-a', 'turn-1', `please do ${written} now`));
      const text = contextOf(result.stdout)!;
      expect(text).toContain('[invalid_todo_mention]');
      expect(text).toContain(written.split(' ')[0]!);
      expect(text).toContain('lower-case letters');
      expect(world.cli(['status', '--json']).stdout).not.toContain('"active"');
    });
  }
  it('a malformed mention is answered even before any store exists; control: a well-formed one claims', () => {
    expect(contextOf(hook(payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:Fix-Login')).stdout)).toContain('perhaps #todo:fix-login');
    expect(world.dbExists()).toBe(false);
    addTodo('fix-login');
    expect(contextOf(hook(payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login')).stdout)).toContain('epoch 1');
  });

  it('a corrupted ready capture is [ready_corrupted] and is not repaired', async () => {
    addTodo('fix-login');
    const first = contextOf(hook(payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login')).stdout)!;
    const store = await world.store();
    store.connection.prepare("UPDATE ready_captures SET presentation = presentation || ' tampered'").run();
    store.close();
    const again = contextOf(hook(payload.codexPrompt(world, 'sess-a', 'turn-2', 'go on')).stdout)!;
    expect(again).toContain('[ready_corrupted]');
    expect(again).not.toContain(first.split('\n')[1]!);
    const after = await world.store();
    expect((after.connection.prepare('SELECT presentation FROM ready_captures').get() as { presentation: string }).presentation).toBe(first + ' tampered');
    after.close();
  });

  it('fences writes of a session whose lease was taken over, and only those', () => {
    addTodo('fix-login');
    hook(payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login'));
    const edit = (session: string) => hook(payload.codex(world, 'PreToolUse', session, 'turn-1', { tool_name: 'Bash', tool_input: { command: 'rm -rf x' } }));
    // Control: while the lease is held, writes pass.
    expect(edit('sess-a').stdout).toBe('');
    expect(world.cli(['release', 'fix-login', '--force', '--reason', 'reassign']).code).toBe(0);
    const denied = parseHookStdout(edit('sess-a').stdout);
    expect(denied).toStrictEqual({
      hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', permissionDecisionReason: like.stringContaining('[lease_fenced]') },
    });
    // A session that never held a lease is not affected; a read-only tool is not fenced.
    expect(edit('sess-never').stdout).toBe('');
    expect(hook(payload.codex(world, 'PreToolUse', 'sess-a', 'turn-1', { tool_name: 'view_image' })).stdout).toBe('');
  });

  it('a broken .turnkeeper.json does not turn fencing off: the evicted session stays denied (control: a valid file)', () => {
    addTodo('fix-login');
    hook(payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login'));
    expect(world.cli(['release', 'fix-login', '--force', '--reason', 'reassign']).code).toBe(0);
    const edit = () => hook(payload.codex(world, 'PreToolUse', 'sess-a', 'turn-1', { tool_name: 'apply_patch', tool_input: { input: '*** Begin Patch' } }));
    const deniedWith = (run: ReturnType<typeof edit>) =>
      parseHookStdout(run.stdout)?.hookSpecificOutput as { permissionDecision?: string; permissionDecisionReason?: string } | undefined;
    // Control: a valid file (it names another Goal key, which fencing does not depend on).
    writeFileSync(join(world.repo, '.turnkeeper.json'), '{"goal": "example.org/team/project"}\n');
    expect(deniedWith(edit())).toMatchObject({ permissionDecision: 'deny', permissionDecisionReason: like.stringContaining('[lease_fenced]') });
    // The repository (or the evicted agent itself) breaks the file: the write is still denied.
    writeFileSync(join(world.repo, '.turnkeeper.json'), '{"goal": ');
    const broken = edit();
    expect(broken.code).toBe(0);
    expect(deniedWith(broken)).toMatchObject({ permissionDecision: 'deny', permissionDecisionReason: like.stringContaining('[lease_fenced]') });
    // Its proof of life has no Goal to be filed under, and says so on stderr.
    expect(broken.stderr).toContain('proof of life not recorded');
    // A context event in that checkout is still rule 2: nothing printed.
    expect(hook(payload.codexPrompt(world, 'sess-c', 'turn-1', '#todo:fix-login')).stdout).toBe('');
  });

  it('tool and stop events print nothing and record proof of life', async () => {
    addTodo('fix-login');
    hook(payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login'));
    expect(hook(payload.codex(world, 'PostToolUse', 'sess-a', 'turn-1', { tool_name: 'Bash' })).stdout).toBe('');
    expect(hook(payload.codex(world, 'Stop', 'sess-a', 'turn-1')).stdout).toBe('');
    const store = await world.store();
    const session = await store.getSession('codex:sess-a');
    store.close();
    expect(session?.lastHookAt).toBeGreaterThan(Date.now() - 60_000);
    expect(session?.transcriptPath).toBe(join(world.root, 'sess-a.jsonl'));
  });
});

describe("what an agent's environment can do (a repository's .env reaches Gemini CLI's hooks)", () => {
  it('TURNKEEPER_TEST_CLOCK_OFFSET_MS does not move the times a SQLite ledger records (control: they are the real time)', async () => {
    addTodo('fix-login');
    const before = Date.now();
    const claimed = hook(payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login'), { TURNKEEPER_TEST_CLOCK_OFFSET_MS: String(10 * 86_400_000) });
    const after = Date.now();
    expect(contextOf(claimed.stdout)).toMatch(/· epoch 1$/m);
    const [lease] = await leases();
    expect(lease!.acquiredAt).toBeGreaterThanOrEqual(before);
    expect(lease!.acquiredAt).toBeLessThanOrEqual(after);
    const store = await world.store();
    const ats = (await store.receipts({ limit: 10 })).map((row) => Date.parse((JSON.parse(row.doc) as { at: string }).at));
    store.close();
    for (const at of ats) expect(at).toBeLessThanOrEqual(after);
    expect(Math.max(...ats)).toBeGreaterThanOrEqual(before);
  });

  it('TURNKEEPER_WITNESS names no file: the witness is where config.json says, under TURNKEEPER_HOME', () => {
    addTodo('fix-login');
    addTodo('fix-logout');
    const elsewhere = join(world.root, 'not-a-witness.txt');
    writeFileSync(elsewhere, 'a file the user can write\n');
    const due = { TURNKEEPER_CHECKPOINT_EVERY: '1', TURNKEEPER_WITNESS: elsewhere };
    expect(contextOf(hook(payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login'), due).stdout)).toMatch(/· epoch 1$/m);
    expect(readFileSync(elsewhere, 'utf8')).toBe('a file the user can write\n');
    expect(readFileSync(join(world.home, 'witness.jsonl'), 'utf8')).toContain('"schema":"turnkeeper.witness/v2"');
    // config.json chooses it; a relative path is under TURNKEEPER_HOME, never the agent's checkout.
    writeFileSync(join(world.home, 'config.json'), JSON.stringify({ witness: 'chosen.jsonl' }));
    expect(contextOf(hook(payload.codexPrompt(world, 'sess-b', 'turn-1', '#todo:fix-logout'), due).stdout)).toMatch(/· epoch 1$/m);
    expect(readFileSync(join(world.home, 'chosen.jsonl'), 'utf8')).toContain('"schema":"turnkeeper.witness/v2"');
    expect(existsSync(join(world.repo, 'chosen.jsonl'))).toBe(false);
  });

  it("a relative sqlite: selection is under TURNKEEPER_HOME, never the agent's checkout (control: the default file)", () => {
    const selected = { TURNKEEPER_STORE: 'sqlite:team.db' };
    expect(world.cli(['todo', 'add', 'Fix login', '--id', 'fix-login'], { env: selected }).code).toBe(0);
    expect(contextOf(hook(payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login'), selected).stdout)).toMatch(/· epoch 1$/m);
    expect(existsSync(join(world.home, 'team.db'))).toBe(true);
    expect(existsSync(join(world.repo, 'team.db'))).toBe(false);
    expect(world.dbExists()).toBe(false);
  });
});
