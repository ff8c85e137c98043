// `turnkeeper start` (spec §7 "Start") on a real store with the compiled stand-in agent: the
// launch receipt comes first and names the Todo, the agent runs with TURNKEEPER_TODO, a fresh
// TURNKEEPER_TURN and TURNKEEPER_LAUNCH, and its first prompt hook claims the Todo with binding
// `launch`. Every refusal has its control: the same start for an open, unheld Todo launches.
import { FIRST_HOOK_DEADLINE_MS, silentLaunches } from '../../src/doctor/status';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { like } from '../support/matchers';
import { startTodo, type StartResult } from '../../src/launcher/start';
import { resumeCapture } from '../../src/launcher/resume';
import type { Barriers } from '../../src/launcher/launch';
import type { SqliteAuthority } from '../../src/ledger/open';
import { buildReceipt } from '../../src/core/receipts';
import { contextOf, payload, type World } from '../support/world';
import { alive, readMarker, sha256File, useLaunchScene, waitFor, type Scene } from './fixtures';

process.env.TURNKEEPER_TEST_BARRIERS = '1';

let world: World;
let s: Scene;
const launch = useLaunchScene('tk-start', (w) => {
  expect(w.cli(['todo', 'add', 'Fix login', '--id', 'fix-login']).code).toBe(0);
});
const { pids, openStore } = launch;
beforeEach(() => ({ world, scene: s } = launch.current));

/** One in-process start of `todo` with the compiled agent; `mode` is the agent's behaviour. */
async function start(options: { todo?: string; markers: string; mode: 'exit' | 'sleep'; barriers?: Barriers; store?: SqliteAuthority }): Promise<StartResult> {
  mkdirSync(options.markers, { recursive: true });
  const result = await startTodo({
    store: options.store ?? (await openStore()),
    storePath: world.db,
    todo: options.todo ?? 'fix-login',
    agent: 'codex',
    cwd: world.repo,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', TK_MARKER_DIR: options.markers, TK_MODE: options.mode },
    agentBin: s.victim,
    mode: 'headless',
    prompt: 'fix the login form',
    stdio: 'pipe',
    barriers: options.barriers,
  });
  if (result.ok) {
    pids.push(result.launch.pid);
    result.launch.stdin?.destroy();
  }
  return result;
}

/** The running agent's own environment, as the kernel gave it. */
function environOf(pid: number): Record<string, string> {
  const entries = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter(Boolean);
  return Object.fromEntries(entries.map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]));
}

interface Doc {
  readonly seq: number;
  readonly kind: string;
  readonly goal?: string;
  readonly todo?: string;
  readonly capture?: string;
  readonly owner?: string;
  readonly detail?: Record<string, unknown>;
}

async function receipts(kind?: string): Promise<Doc[]> {
  const store = await openStore();
  const rows = await store.receipts({ limit: 10_000 });
  return rows
    .map((row) => JSON.parse(row.doc) as Doc)
    .filter((doc) => kind === undefined || doc.kind === kind)
    .sort((a, b) => a.seq - b.seq);
}

const launchVariables = (env: Record<string, string>) => ({
  TURNKEEPER_TODO: env.TURNKEEPER_TODO,
  TURNKEEPER_TURN: env.TURNKEEPER_TURN,
  TURNKEEPER_LAUNCH: env.TURNKEEPER_LAUNCH,
});
const hook = (input: string, env: Record<string, string | undefined>) => world.cli(['hook'], { input, env });
const markerDir = (name: string) => join(s.dir, name);

describe('turnkeeper start', () => {
  it('commits the launch receipt (Todo, Turn, nonce, no capture) before the agent runs, with TURNKEEPER_TODO, a fresh TURNKEEPER_TURN and TURNKEEPER_LAUNCH', async () => {
    const result = await start({ markers: markerDir('a'), mode: 'sleep' });
    expect(result.ok, JSON.stringify(result)).toBe(true);
    if (!result.ok) return;
    expect(await waitFor(() => readMarker(markerDir('a'), 'victim') !== undefined)).toBe(true);
    const env = environOf(result.launch.pid);
    expect(env.TURNKEEPER_TODO).toBe('fix-login');
    expect(env.TURNKEEPER_TURN).toMatch(/^turn_[0-9a-f]{16}$/);
    expect(env.TURNKEEPER_LAUNCH).toMatch(/^launch_[0-9a-f]{16}$/);
    expect(env.TURNKEEPER_DB).toBe(world.db);
    expect([env.TURNKEEPER_TURN, env.TURNKEEPER_LAUNCH]).toEqual([result.turn, result.launchId]);
    // The agent's own command line: a headless Codex turn with the prompt.
    expect(readMarker(markerDir('a'), 'victim')!.argv.slice(1)).toEqual(['exec', 'fix the login form']);

    const [committed] = await receipts('launch_committed');
    expect(committed).toMatchObject({ seq: result.launch.receipt.seq, todo: 'fix-login' });
    expect(committed!.capture).toBeUndefined();
    expect(committed!.owner).toBeUndefined();
    expect(committed!.detail).toMatchObject({
      start: true,
      launch: result.launchId,
      turn: result.turn,
      agent: 'codex',
      pid: result.launch.pid,
      digest: sha256File(s.victim),
      checkout: world.repo,
    });

    // A second start (once the first agent is gone: one live start per Todo) gets another Turn and another nonce.
    result.launch.kill('SIGKILL');
    await result.launch.exited;
    const again = await start({ markers: markerDir('b'), mode: 'exit' });
    expect(again.ok).toBe(true);
    if (again.ok) expect([again.turn, again.launchId]).not.toContain(result.turn);
  });

  it("the started agent's first prompt claims the Todo with binding launch, after its launch receipt, and records launch_hooked once", async () => {
    const result = await start({ markers: markerDir('a'), mode: 'sleep' });
    if (!result.ok) throw new Error(result.guidance);
    const env = launchVariables(environOf(result.launch.pid));
    // No #todo: in the prompt: TURNKEEPER_TODO binds it.
    const first = hook(payload.codexPrompt(world, 'sess-s', 'turn-1', 'fix the login form'), env);
    expect(contextOf(first.stdout), first.stderr).toMatch(/^Turnkeeper: Todo fix-login .*epoch 1/);
    const [committed] = await receipts('launch_committed');
    const [bound] = await receipts('capture_bound');
    expect(bound).toMatchObject({ todo: 'fix-login', owner: 'codex:sess-s', detail: { binding: 'launch' } });
    expect(bound!.seq).toBeGreaterThan(committed!.seq);
    const hooked = await receipts('launch_hooked');
    expect(hooked).toHaveLength(1);
    expect(hooked[0]).toMatchObject({
      todo: 'fix-login',
      owner: 'codex:sess-s',
      capture: bound!.capture,
      detail: { launch: result.launchId, event: 'UserPromptSubmit' },
    });
    expect(hooked[0]!.seq).toBeGreaterThan(committed!.seq);

    // Later prompts of the session present the same ready capture; no second claim, no second launch_hooked.
    const later = hook(payload.codexPrompt(world, 'sess-s', 'turn-2', 'go on'), env);
    expect(contextOf(later.stdout)).toBe(contextOf(first.stdout));
    expect(await receipts('capture_bound')).toHaveLength(1);
    expect(await receipts('launch_hooked')).toHaveLength(1);
    expect((await (await openStore()).verifyChain()).ok).toBe(true);
  });

  it("a start's first prompt after 20,001 receipts of other Todos still binds: the hook reads its Todo's launch receipts through the index, not the chain", async () => {
    const result = await start({ markers: markerDir('busy'), mode: 'sleep' });
    if (!result.ok) throw new Error(result.guidance);
    const store = await openStore();
    const goal = (await receipts('launch_committed'))[0]!.goal!;
    // A busy team store: many receipts of other Todos between the start and its first prompt.
    await store.rows.write(async (tx) => {
      for (let i = 0; i < 20_001; i += 1) {
        const head = await tx.chainHead();
        const fields = { kind: 'todo_added' as const, goal, todo: `busy-${i % 50}` };
        const built = buildReceipt(head, fields, Date.now());
        await tx.appendReceipt(
          { seq: built.document.seq, doc: built.text, hash: built.hash, goal: fields.goal, todo: fields.todo, capture: null, kind: fields.kind },
          head,
        );
      }
    });
    const first = hook(payload.codexPrompt(world, 'sess-b', 'turn-1', 'fix the login form'), launchVariables(environOf(result.launch.pid)));
    expect(contextOf(first.stdout), first.stderr).toMatch(/^Turnkeeper: Todo fix-login .*epoch 1/);
    expect((await receipts('capture_bound')).at(-1)).toMatchObject({ owner: 'codex:sess-b', detail: { binding: 'launch' } });
  });

  it('a start whose agent fires no hook within a minute is flagged as silent (control: once its first hook fires, it is not)', async () => {
    const result = await start({ markers: markerDir('silent'), mode: 'sleep' });
    if (!result.ok) throw new Error(result.guidance);
    const later = Date.now() + FIRST_HOOK_DEADLINE_MS + 1_000;
    const silent = await silentLaunches(await openStore(), later);
    expect(silent).toMatchObject([{ capture: null, todo: 'fix-login', agent: 'codex', launch: result.launchId }]);
    hook(payload.codexPrompt(world, 'sess-q', 'turn-1', 'fix the login form'), launchVariables(environOf(result.launch.pid)));
    expect(await silentLaunches(await openStore(), later)).toStrictEqual([]);
  });

  it("a copied start environment is [not_live_bound]: another session, another agent's nonce, a forged nonce (control: the started session claims)", async () => {
    const result = await start({ markers: markerDir('a'), mode: 'sleep' });
    if (!result.ok) throw new Error(result.guidance);
    const env = launchVariables(environOf(result.launch.pid));
    const forged = hook(payload.codexPrompt(world, 'sess-f', 'turn-1', 'go'), { ...env, TURNKEEPER_LAUNCH: 'launch_ffffffffffffffff' });
    expect(contextOf(forged.stdout)).toContain('[not_live_bound]');
    expect(contextOf(forged.stdout)).toContain('turnkeeper start fix-login --agent codex');
    const otherTodo = hook(payload.codexPrompt(world, 'sess-f', 'turn-1', 'go'), { ...env, TURNKEEPER_TODO: 'other-todo' });
    expect(contextOf(otherTodo.stdout)).toContain('[not_live_bound]');
    const otherAgent = world.cli(['hook'], { input: payload.claudePrompt(world, 'sess-c', 'p-1', 'go'), env });
    expect(contextOf(otherAgent.stdout)).toContain('[not_live_bound]');
    expect(await receipts('capture_bound')).toEqual([]);

    // Control: the started session's SessionStart (proof of life) and first prompt are accepted.
    expect(hook(payload.codex(world, 'SessionStart', 'sess-s', undefined, { source: 'startup' }), env).stdout).toBe('');
    expect(contextOf(hook(payload.codexPrompt(world, 'sess-s', 'turn-1', 'go'), env).stdout)).toMatch(/^Turnkeeper: Todo fix-login/);
    const hooked = await receipts('launch_hooked');
    expect(hooked).toHaveLength(1);
    expect(hooked[0]).toMatchObject({ owner: 'codex:sess-s', detail: { event: 'SessionStart' } });

    // A child agent started from inside the first one inherits its variables: the start is not its.
    const child = hook(payload.codexPrompt(world, 'sess-child', 'turn-1', 'go'), env);
    expect(contextOf(child.stdout)).toContain('[not_live_bound]');
    expect((await receipts('capture_bound')).map((doc) => doc.owner)).toEqual(['codex:sess-s']);
  });

  it('a running started agent blocks a resume of the capture it claimed: [launch_in_progress] (control: after it exits, the resume launches)', async () => {
    const result = await start({ markers: markerDir('started'), mode: 'sleep' });
    if (!result.ok) throw new Error(result.guidance);
    writeFileSync(join(world.root, 'sess-s.jsonl'), '{"type":"session"}\n');
    const env = launchVariables(environOf(result.launch.pid));
    const claimed = contextOf(hook(payload.codexPrompt(world, 'sess-s', 'turn-1', 'fix the login form'), env).stdout);
    const capture = /capture (cap_[0-9a-f]{24})/.exec(claimed ?? '')![1]!;
    const resume = async (name: string) => {
      mkdirSync(markerDir(name), { recursive: true });
      const resumed = await resumeCapture({
        store: await openStore(),
        storePath: world.db,
        captureId: capture,
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', TK_MARKER_DIR: markerDir(name), TK_MODE: 'exit' },
        acceptDrift: false,
        dryRun: false,
        agentBin: s.victim,
        mode: 'headless',
        stdio: 'pipe',
      });
      if (resumed.ok && !resumed.dryRun) pids.push(resumed.launch.pid);
      return resumed;
    };
    const refused = await resume('resumed');
    expect(refused).toMatchObject({ ok: false, reason: 'launch_in_progress' });
    expect((refused as { guidance: string }).guidance).toContain(`pid ${result.launch.pid}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(readMarker(markerDir('resumed'), 'victim')).toBeUndefined();
    expect((await receipts('launch_refused')).at(-1)).toMatchObject({ capture, detail: { reason: 'launch_in_progress' } });

    // Control: the started agent exits; its record no longer blocks, and the resume launches.
    result.launch.kill('SIGKILL');
    await result.launch.exited;
    const control = await resume('control');
    expect(control.ok, JSON.stringify(control)).toBe(true);
    if (control.ok && !control.dryRun) expect(await control.launch.exited).toEqual({ code: 0, signal: null });
    expect(readMarker(markerDir('control'), 'victim')).toBeDefined();
  });

  it("a resume run from a started agent's shell passes none of that agent's launch variables on (control: its own are set)", async () => {
    const result = await start({ markers: markerDir('started'), mode: 'sleep' });
    if (!result.ok) throw new Error(result.guidance);
    writeFileSync(join(world.root, 'sess-s.jsonl'), '{"type":"session"}\n');
    const shell = environOf(result.launch.pid);
    const claimed = contextOf(hook(payload.codexPrompt(world, 'sess-s', 'turn-1', 'go'), launchVariables(shell)).stdout);
    const capture = /capture (cap_[0-9a-f]{24})/.exec(claimed ?? '')![1]!;
    result.launch.kill('SIGKILL');
    await result.launch.exited;
    mkdirSync(markerDir('resumed'), { recursive: true });
    const resumed = await resumeCapture({
      store: await openStore(),
      storePath: world.db,
      captureId: capture,
      // The started agent's whole environment, as a shell inside it would pass it on.
      env: { ...shell, TK_MARKER_DIR: markerDir('resumed'), TK_MODE: 'sleep' },
      acceptDrift: false,
      dryRun: false,
      agentBin: s.victim,
      mode: 'headless',
      stdio: 'pipe',
    });
    if (!resumed.ok || resumed.dryRun) throw new Error(JSON.stringify(resumed));
    pids.push(resumed.launch.pid);
    expect(await waitFor(() => readMarker(markerDir('resumed'), 'victim') !== undefined)).toBe(true);
    const env = environOf(resumed.launch.pid);
    expect(env.TURNKEEPER_TODO).toBeUndefined();
    expect(env.TURNKEEPER_CAPTURE).toBe(capture);
    expect(env.TURNKEEPER_LAUNCH).toMatch(/^launch_[0-9a-f]{16}$/);
    expect(env.TURNKEEPER_LAUNCH).not.toBe(shell.TURNKEEPER_LAUNCH);
    expect(env.TURNKEEPER_TURN).toBe('turn-1');
  });

  it('a started agent that hooked at SessionStart (before its claim) blocks the resume of its capture too', async () => {
    const result = await start({ markers: markerDir('started'), mode: 'sleep' });
    if (!result.ok) throw new Error(result.guidance);
    writeFileSync(join(world.root, 'sess-s.jsonl'), '{"type":"session"}\n');
    const env = launchVariables(environOf(result.launch.pid));
    expect(hook(payload.codex(world, 'SessionStart', 'sess-s', undefined, { source: 'startup' }), env).stdout).toBe('');
    const claimed = contextOf(hook(payload.codexPrompt(world, 'sess-s', 'turn-1', 'go'), env).stdout);
    const capture = /capture (cap_[0-9a-f]{24})/.exec(claimed ?? '')![1]!;
    mkdirSync(markerDir('resumed'), { recursive: true });
    const refused = await resumeCapture({
      store: await openStore(),
      storePath: world.db,
      captureId: capture,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', TK_MARKER_DIR: markerDir('resumed'), TK_MODE: 'exit' },
      acceptDrift: false,
      dryRun: false,
      agentBin: s.victim,
      mode: 'headless',
      stdio: 'pipe',
    });
    if (refused.ok && !refused.dryRun) pids.push(refused.launch.pid);
    expect(refused).toMatchObject({ ok: false, reason: 'launch_in_progress' });
  });

  it('one live start per Todo: a second start while the first agent runs (not yet claimed) → [launch_in_progress] before attestation (control: after it exits, a start launches)', async () => {
    const first = await start({ markers: markerDir('first'), mode: 'sleep' });
    if (!first.ok) throw new Error(first.guidance);
    const second = await start({ markers: markerDir('second'), mode: 'exit' });
    expect(second).toMatchObject({ ok: false, reason: 'launch_in_progress' });
    expect((second as { guidance: string }).guidance).toContain(`pid ${first.launch.pid}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(readMarker(markerDir('second'), 'victim')).toBeUndefined();
    expect((await receipts('launch_committed')).map((doc) => doc.detail?.pid)).toEqual([first.launch.pid]);
    expect((await receipts('launch_refused')).at(-1)).toMatchObject({
      todo: 'fix-login',
      detail: { start: true, reason: 'launch_in_progress', agent: 'codex' },
    });

    first.launch.kill('SIGKILL');
    await first.launch.exited;
    const control = await start({ markers: markerDir('control'), mode: 'exit' });
    expect(control.ok, JSON.stringify(control)).toBe(true);
    expect(await waitFor(() => readMarker(markerDir('control'), 'victim') !== undefined)).toBe(true);
  });

  it('two starts of one Todo parked together → the commit transaction lets exactly one run, the other [launch_in_progress] (control: a start of another Todo at the same time runs)', async () => {
    let parked = 0;
    let release: () => void = () => undefined;
    const allParked = new Promise<void>((resolve) => (release = resolve));
    const arrive = async () => {
      parked += 1;
      if (parked === 3) release();
      await Promise.race([allParked, new Promise((resolve) => setTimeout(resolve, 10_000))]);
    };
    expect(world.cli(['todo', 'add', 'Other', '--id', 'other-todo']).code).toBe(0);
    // One connection, as in the extension host (separate processes each have their own).
    const store = await openStore();
    const [a, b, other] = await Promise.all([
      start({ markers: markerDir('a'), mode: 'sleep', barriers: { parked: arrive }, store }),
      start({ markers: markerDir('b'), mode: 'sleep', barriers: { parked: arrive }, store }),
      start({ todo: 'other-todo', markers: markerDir('other'), mode: 'sleep', barriers: { parked: arrive }, store }),
    ]);
    expect(parked).toBe(3);
    const results = [a, b];
    expect(results.filter((result) => result.ok)).toHaveLength(1);
    const refused = results.find((result) => !result.ok);
    expect(refused).toMatchObject({ ok: false, reason: 'launch_in_progress' });
    const loser = results[0] === refused ? 'a' : 'b';
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(readMarker(markerDir(loser), 'victim')).toBeUndefined();
    const refusal = (await receipts('launch_refused')).at(-1)!;
    expect(refusal.detail).toMatchObject({ start: true, reason: 'launch_in_progress', pid: like.any(Number) });
    expect(await waitFor(() => !alive(refusal.detail!.pid as number))).toBe(true);
    expect(other.ok, JSON.stringify(other)).toBe(true);
    expect(await receipts('launch_committed')).toHaveLength(2);
  });

  describe('refused before anything launches', () => {
    const cases: [string, () => void, string][] = [
      ['an unknown Todo', () => undefined, 'unknown_todo'],
      ['a Todo that is done', () => expect(world.cli(['todo', 'done', 'fix-login']).code).toBe(0), 'todo_not_open'],
      [
        'a Todo whose lease someone holds',
        () => expect(contextOf(hook(payload.codexPrompt(world, 'sess-h', 'turn-1', '#todo:fix-login'), {}).stdout)).toMatch(/epoch 1/),
        'lease_held',
      ],
    ];
    for (const [name, arrange, reason] of cases) {
      it(`${name}: [${reason}], the agent never runs, launch_refused is recorded (control: an open Todo launches)`, async () => {
        arrange();
        const todo = reason === 'unknown_todo' ? 'no-such-todo' : 'fix-login';
        const result = await start({ todo, markers: markerDir('refused'), mode: 'exit' });
        expect(result).toMatchObject({ ok: false, reason });
        expect((result as { guidance: string }).guidance).toContain(`[${reason}]`);
        if (reason === 'lease_held') expect((result as { guidance: string }).guidance).toContain('codex:sess-h');
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect(readMarker(markerDir('refused'), 'victim')).toBeUndefined();
        expect(await receipts('launch_committed')).toEqual([]);
        expect((await receipts('launch_refused')).at(-1)).toMatchObject({ todo, detail: { start: true, reason } });

        // Control: the same start on an open Todo nobody holds launches.
        expect(world.cli(['todo', 'add', 'Open one', '--id', 'open-one']).code).toBe(0);
        const control = await start({ todo: 'open-one', markers: markerDir('control'), mode: 'exit' });
        expect(control.ok).toBe(true);
        expect(await waitFor(() => readMarker(markerDir('control'), 'victim') !== undefined)).toBe(true);
      });
    }
  });

  it('the commit reads the Todo again: a claim while the agent is parked → [lease_held], the parked agent is killed (control: nothing moves, it launches)', async () => {
    const markers = markerDir('raced');
    const result = await start({
      markers,
      mode: 'exit',
      barriers: {
        parked: () => {
          expect(contextOf(hook(payload.codexPrompt(world, 'sess-h', 'turn-1', '#todo:fix-login'), {}).stdout)).toMatch(/epoch 1/);
        },
      },
    });
    expect(result).toMatchObject({ ok: false, reason: 'lease_held' });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(readMarker(markers, 'victim')).toBeUndefined();
    expect(await receipts('launch_committed')).toEqual([]);
    const refusal = (await receipts('launch_refused')).at(-1)!;
    expect(refusal.detail).toMatchObject({ start: true, reason: 'lease_held', pid: like.any(Number) });
    expect(await waitFor(() => !alive(refusal.detail!.pid as number))).toBe(true);

    expect(world.cli(['todo', 'add', 'Open one', '--id', 'open-one']).code).toBe(0);
    const control = await start({ todo: 'open-one', markers: markerDir('control'), mode: 'exit', barriers: { parked: () => undefined } });
    expect(control.ok).toBe(true);
  });
});

describe('turnkeeper start (the command)', () => {
  const cli = (...args: string[]) => world.cli(['start', ...args], { env: { TK_MARKER_DIR: s.markers, TK_MODE: 'exit' } });

  it('--json prints the decision, its receipt, Turn and nonce, and the attested digest (exit 0)', () => {
    const run = cli('fix-login', '--agent', 'codex', '--agent-bin', s.victim, '--prompt', 'fix it', '--json');
    expect(run.code, run.stderr).toBe(0);
    const decision = JSON.parse(run.stdout) as Record<string, unknown>;
    expect(decision).toMatchObject({
      ok: true,
      decision: 'launched',
      todo: 'fix-login',
      agent: 'codex',
      turn: like.stringMatching(/^turn_[0-9a-f]{16}$/),
      launch: like.stringMatching(/^launch_[0-9a-f]{16}$/),
      receipt: { seq: like.any(Number), hash: like.stringMatching(/^sha256:/) },
      digest: sha256File(s.victim),
      exit: { code: 0, signal: null },
    });
    expect(readMarker(s.markers, 'victim')!.argv.slice(1)).toEqual(['exec', 'fix it']);
  });

  it('a refused start exits 1 and names the reason; a bad command line exits 2 (control: the same start launches)', () => {
    expect(world.cli(['todo', 'done', 'fix-login']).code).toBe(0);
    const refused = cli('fix-login', '--agent', 'codex', '--agent-bin', s.victim, '--prompt', 'fix it', '--json');
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stdout)).toMatchObject({
      ok: false,
      decision: 'refused',
      reason: 'todo_not_open',
      guidance: like.stringContaining('[todo_not_open]'),
    });
    expect(readMarker(s.markers, 'victim')).toBeUndefined();
    expect(cli('fix-login', '--agent', 'nobody', '--prompt', 'x').code).toBe(2);
    expect(cli('Fix-Login', '--agent', 'codex', '--prompt', 'x').code).toBe(2);
    // --json needs a headless run: interactive output and a JSON decision cannot share stdout.
    expect(cli('fix-login', '--agent', 'codex', '--json').code).toBe(2);

    expect(world.cli(['todo', 'reopen', 'fix-login']).code).toBe(0);
    const control = cli('fix-login', '--agent', 'codex', '--agent-bin', s.victim, '--prompt', 'fix it', '--json');
    expect(control.code, control.stderr).toBe(0);
    expect(readMarker(s.markers, 'victim')).toBeDefined();
  });

  it("a start refused [lease_held] because the holder's launched agent crashed names its resume (control: while it runs, status and release)", async () => {
    const first = await start({ markers: markerDir('holder'), mode: 'sleep' });
    if (!first.ok) throw new Error(first.guidance);
    const claim = hook(payload.codexPrompt(world, 'sess-h', 'turn-1', 'fix the login form'), launchVariables(environOf(first.launch.pid)));
    expect(contextOf(claim.stdout), claim.stderr).toMatch(/^Turnkeeper: Todo fix-login /);
    const capture = (await receipts('capture_bound')).at(-1)!.capture!;
    const again = () =>
      JSON.parse(cli('fix-login', '--agent', 'codex', '--agent-bin', s.victim, '--prompt', 'fix it', '--json').stdout) as { reason: string; guidance: string };
    // Control: its agent still runs, so the lease is someone's at work.
    const running = again();
    expect(running.reason).toBe('lease_held');
    expect(running.guidance).toContain('Recover: turnkeeper status   # if the holder is gone for good: turnkeeper release fix-login --force');
    first.launch.kill('SIGKILL');
    await first.launch.exited;
    const crashed = again();
    expect(crashed.reason).toBe('lease_held');
    expect(crashed.guidance).toContain('whose agent has crashed mid-turn; the lease is kept for it, so nothing was started.');
    expect(crashed.guidance).toContain(
      `Recover: turnkeeper resume ${capture}   # pick its turn up; or take the Todo over: turnkeeper release fix-login --force --reason "<why>"`,
    );
  });

  it('todo done of a Todo whose launched agent exited needs no --force, and says so in its receipt (control: while the agent runs it does; gone mid-turn it does)', async () => {
    const first = await start({ markers: markerDir('done-holder'), mode: 'sleep' });
    if (!first.ok) throw new Error(first.guidance);
    const claim = hook(payload.codexPrompt(world, 'sess-d', 'turn-1', 'fix the login form'), launchVariables(environOf(first.launch.pid)));
    expect(contextOf(claim.stdout), claim.stderr).toMatch(/^Turnkeeper: Todo fix-login /);
    // Control: its agent still runs, so the lease is someone's at work and a flag is needed.
    const running = world.cli(['todo', 'done', 'fix-login']);
    expect(running.code).toBe(1);
    expect(running.stderr).toContain('turnkeeper todo done fix-login --force --reason "<why>"');
    // Gone mid-turn (crashed): its turn is resumed first, or the lease released with a reason.
    const launchEnv = launchVariables(environOf(first.launch.pid));
    first.launch.kill('SIGKILL');
    await first.launch.exited;
    const crashed = world.cli(['todo', 'done', 'fix-login']);
    expect(crashed.code).toBe(1);
    expect(crashed.stderr).toContain('--force --reason');
    // Its turn's stop arrives (the session's last state is between turns): it exited.
    expect(hook(payload.codex(world, 'Stop', 'sess-d', 'turn-1', { stop_hook_active: false }), launchEnv).code).toBe(0);
    const done = world.cli(['todo', 'done', 'fix-login']);
    expect(done.stderr).toBe('');
    expect(done.code).toBe(0);
    expect(done.stdout).toBe('Todo fix-login is done; released the lease of codex:sess-d (epoch 1), whose launched agent exited\n');
    expect((await receipts('lease_released')).at(-1)!.detail).toMatchObject({
      forced: false,
      identifiedBy: 'holder_gone',
      reason: 'todo_done: its launched agent exited',
    });
  });

  it('an agent killed before its first prompt: exit 1, how it ended, nothing held, the start to run again (control: exit 0 above)', async () => {
    const running = world.cliAsync(['start', 'fix-login', '--agent', 'codex', '--agent-bin', s.victim, '--prompt', 'fix it'], {
      env: { TK_MARKER_DIR: s.markers, TK_MODE: 'sleep' },
    });
    expect(await waitFor(() => readMarker(s.markers, 'victim') !== undefined)).toBe(true);
    process.kill(readMarker(s.markers, 'victim')!.pid, 'SIGKILL');
    const run = await running;
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      'turnkeeper: codex ended on SIGKILL; it holds nothing of fix-login. Start it again: turnkeeper start fix-login --agent codex\n',
    );
  });

  it('an agent killed while it holds the Todo: exit 1, and in the JSON how it ended and the resume command of the capture its prompt claimed', async () => {
    const running = world.cliAsync(['start', 'fix-login', '--agent', 'codex', '--agent-bin', s.victim, '--prompt', 'fix it', '--json'], {
      env: { TK_MARKER_DIR: s.markers, TK_MODE: 'sleep' },
    });
    expect(await waitFor(() => readMarker(s.markers, 'victim') !== undefined)).toBe(true);
    const pid = readMarker(s.markers, 'victim')!.pid;
    const claim = hook(payload.codexPrompt(world, 'sess-k', 'turn-1', 'fix the login form'), launchVariables(environOf(pid)));
    expect(contextOf(claim.stdout), claim.stderr).toMatch(/^Turnkeeper: Todo fix-login .*epoch 1/);
    const capture = (await receipts('capture_bound')).at(-1)!.capture!;
    process.kill(pid, 'SIGKILL');
    const run = await running;
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({
      ok: true,
      decision: 'launched',
      exit: { code: null, signal: 9 },
      ended: 'on SIGKILL',
      recover: `turnkeeper resume ${capture}`,
    });
  });
});
