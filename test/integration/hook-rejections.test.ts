// A hook input Turnkeeper refuses (spec §2 rule 2) leaves a trace doctor reports
// (src/hook/rejections.ts): private, bounded, without the payload's content, ageing out after a
// day. Before it, a refusal was one stderr line that no agent shows, and doctor said nothing (every
// test here but the controls fails on that code: no file, no problem, a launch blamed on trust).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { hostname } from 'node:os';
import { recentRejections, recordRejection, REJECTION_KEPT_MS } from '../../src/hook/rejections';
import { like } from '../support/matchers';
import { makeWorld, payload, type World } from '../support/world';

let world: World;
beforeEach(() => {
  world = makeWorld('tk-rejected');
});
afterEach(() => world.cleanup());

const TRACE = () => join(world.home, 'rejected-hooks.jsonl');
const LAUNCH = 'launch_0123456789abcdef';
const SECRET = 'SECRET-PROMPT-TEXT';
/** A Gemini BeforeAgent whose tool_name is a number: a payload shape Turnkeeper does not read. */
const badGemini = () =>
  JSON.stringify({ ...(JSON.parse(payload.geminiBeforeAgent(world, 'sess-secret-id', `${SECRET} #todo:fix-login`)) as object), tool_name: 7 });
const hook = (input: string, env?: Record<string, string | undefined>) => world.cli(['hook', '--agent', 'gemini'], { input, env });
interface Doctor {
  problems: string[];
  rejectedHooks: { agent: string; event: string; source: string; fields: string[]; reason: string; launch: string | null }[];
}
/** This test process as a launch receipt's process facts (field 22 of /proc/<pid>/stat, as the launcher records it). */
const runningProcess = () => ({
  pid: process.pid,
  host: hostname(),
  boot: readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim(),
  pidStart: readFileSync(`/proc/${process.pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[19]!,
});
const doctor = (): Doctor => JSON.parse(world.cli(['doctor', '--json']).stdout) as Doctor;

describe('the trace of a refused hook input', () => {
  it('is a 0600 file in TURNKEEPER_HOME naming agent, event, field, reason, size and launch, and none of the payload', () => {
    const input = badGemini();
    const result = hook(input, { TURNKEEPER_LAUNCH: LAUNCH });
    // Still rule 2 for the agent: nothing on stdout, one stderr line, exit 0, no store.
    expect(result).toMatchObject({ code: 0, stdout: '' });
    expect(result.stderr.trim().split('\n')).toEqual([expect.stringContaining('tool_name')]);
    expect(world.dbExists()).toBe(false);

    expect(statSync(TRACE()).mode & 0o777).toBe(0o600);
    const text = readFileSync(TRACE(), 'utf8');
    expect(
      text
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as unknown),
    ).toEqual([
      {
        at: like.stringMatching(/^\d{4}-\d\d-\d\dT/),
        agent: 'gemini',
        event: 'BeforeAgent',
        source: 'payload',
        fields: ['tool_name'],
        reason: 'expected string, got number',
        bytes: Buffer.byteLength(input),
        launch: LAUNCH,
      },
    ]);
    for (const content of [SECRET, 'sess-secret-id', world.repo, 'fix-login']) expect(text).not.toContain(content);
  });

  it('of input that is not JSON keeps "not JSON", not the parser message that quotes the input', () => {
    hook(`${SECRET} {`);
    const [entry] = recentRejections({ TURNKEEPER_HOME: world.home }, Date.now());
    expect(entry).toMatchObject({ agent: 'gemini', event: null, fields: ['payload'], reason: 'not JSON' });
    expect(readFileSync(TRACE(), 'utf8')).not.toContain('SECRET');
  });

  it('control: an accepted input leaves none, and TURNKEEPER=off refuses nothing and writes nothing', () => {
    expect(hook(payload.geminiBeforeAgent(world, 'sess-a', 'hello')).code).toBe(0);
    expect(hook(badGemini(), { TURNKEEPER: 'off' }).code).toBe(0);
    expect(recentRejections({ TURNKEEPER_HOME: world.home }, Date.now())).toEqual([]);
    expect(() => statSync(TRACE())).toThrow();
  });

  it('keeps the newest 32 entries in a file that stays small, and a day of them', () => {
    const env = { TURNKEEPER_HOME: world.home };
    const t0 = Date.parse('2026-12-01T10:00:00Z');
    let largest = 0;
    for (let i = 0; i < 200; i += 1) {
      recordRejection(env, { source: 'payload', fields: [`f${i}`], reason: 'r', agent: 'codex', event: 'Stop' }, 10, t0 + i * 60_000);
      largest = Math.max(largest, statSync(TRACE()).size);
    }
    // Compacted once past 16 KiB: never much more than that on disk.
    expect(largest).toBeLessThan(17 * 1024);
    expect(statSync(TRACE()).mode & 0o777).toBe(0o600);
    const kept = recentRejections(env, t0 + 200 * 60_000);
    expect(kept.map((entry) => entry.fields[0])).toEqual(Array.from({ length: 32 }, (_, i) => `f${i + 168}`));
    // A day after the newest, all are gone from doctor; a day after the oldest kept, only the later ones stay.
    expect(recentRejections(env, t0 + 199 * 60_000 + REJECTION_KEPT_MS + 1)).toEqual([]);
    expect(recentRejections(env, t0 + 168 * 60_000 + REJECTION_KEPT_MS + 1)).toHaveLength(31);
  });

  it('never writes through a symlink planted at its name (control: a regular file is appended to)', () => {
    const env = { TURNKEEPER_HOME: world.home };
    const target = join(world.root, 'elsewhere');
    writeFileSync(target, '');
    mkdirSync(world.home, { recursive: true });
    symlinkSync(target, TRACE());
    const trace = { source: 'payload', fields: ['cwd'], reason: 'does not exist', agent: 'claude', event: 'Stop' } as const;
    expect(() => recordRejection(env, trace, 10, Date.now())).toThrow(/ELOOP/);
    expect(readFileSync(target, 'utf8')).toBe('');
    rmSync(TRACE());
    recordRejection(env, trace, 10, Date.now());
    expect(recentRejections(env, Date.now())).toHaveLength(1);
  });

  it('reads only its own entries: a line that is not one, or a file too large, is no entry', () => {
    const env = { TURNKEEPER_HOME: world.home };
    recordRejection(env, { source: 'payload', fields: ['cwd'], reason: 'does not exist', agent: 'claude', event: 'Stop' }, 10, Date.now());
    writeFileSync(TRACE(), readFileSync(TRACE(), 'utf8') + '{"at":"x"}\nnot json\n' + JSON.stringify({ at: new Date().toISOString(), agent: 'evil' }) + '\n');
    expect(recentRejections(env, Date.now()).map((entry) => entry.agent)).toEqual(['claude']);
    writeFileSync(TRACE(), 'x'.repeat(65 * 1024));
    expect(recentRejections(env, Date.now())).toEqual([]);
  });

  it('fails open: a TURNKEEPER_HOME that cannot be written adds a note to the one stderr line, exit 0 (control: a writable one has none)', () => {
    const file = join(world.root, 'not-a-dir');
    writeFileSync(file, 'x');
    const result = hook(badGemini(), { TURNKEEPER_HOME: file });
    expect(result).toMatchObject({ code: 0, stdout: '' });
    expect(result.stderr.trim().split('\n')).toEqual([expect.stringMatching(/; ignored \(not recorded for doctor: E[A-Z]+\)$/)]);
    expect(hook(badGemini()).stderr).not.toContain('not recorded');
  });
});

describe('doctor', () => {
  it('reports refused payloads as a problem with its fix, one per agent, event and cause (control: none before)', () => {
    expect(doctor().problems.join('\n')).not.toContain('could not read');
    hook(badGemini());
    hook(badGemini());
    const report = doctor();
    expect(report.rejectedHooks).toMatchObject([{ agent: 'gemini', event: 'BeforeAgent', fields: ['tool_name'] }, { agent: 'gemini' }]);
    const said = report.problems.filter((problem) => problem.includes('could not read'));
    expect(said).toHaveLength(1);
    expect(said[0]).toMatch(/^Gemini CLI sent a BeforeAgent payload Turnkeeper could not read \(tool_name: expected string, got number; 2 times, last at /);
    expect(said[0]).toContain('Fix: run the Gemini CLI version Turnkeeper was tested with');
    expect(said[0]).toContain('goes a day after');
  });

  it('names a launcher variable outside its grammar and a checkout whose Goal cannot be named by what they are, not as payloads', () => {
    hook(payload.geminiBeforeAgent(world, 'sess-a', 'hello'), { TURNKEEPER_TODO: 'Not A Todo' });
    writeFileSync(join(world.repo, '.turnkeeper.json'), '{"goal": ');
    hook(payload.geminiBeforeAgent(world, 'sess-a', 'hello'));
    // doctor itself names the checkout's Goal: it runs once the file is fixed.
    rmSync(join(world.repo, '.turnkeeper.json'));
    const report = doctor();
    expect(report.rejectedHooks).toMatchObject([
      { source: 'environment', fields: ['TURNKEEPER_TODO'] },
      { source: 'checkout', fields: ['goal'], reason: 'turnkeeper_json_invalid' },
    ]);
    expect(report.problems).toContainEqual(expect.stringMatching(/^a BeforeAgent hook of Gemini CLI ran with TURNKEEPER_TODO outside its grammar \(once, /));
    expect(report.problems).toContainEqual(
      expect.stringMatching(
        /^a BeforeAgent hook of Gemini CLI ran in a checkout whose Goal cannot be named \(turnkeeper_json_invalid; .*Fix: run turnkeeper goal/,
      ),
    );
    expect(report.problems.join('\n')).not.toContain('could not read');
  });

  it('says a silent launch whose hooks were refused was refused, not skipped (control: without the refusal it is the trust hint)', async () => {
    const store = await world.store();
    await store.appendReceipt(
      // A process of this machine that runs (this test's own): the launch is silent while it runs.
      { kind: 'launch_committed', goal: world.goal, todo: 'fix-login', detail: { start: true, launch: LAUNCH, agent: 'gemini', ...runningProcess() } },
      Date.now() - 10 * 60_000,
    );
    store.close();
    const silentProblem = () => doctor().problems.find((problem) => problem.includes('launched for a start of Todo fix-login'))!;
    expect(silentProblem()).toContain('its hooks are skipped');
    hook(badGemini(), { TURNKEEPER_LAUNCH: LAUNCH });
    const said = silentProblem();
    expect(said).toContain('ran its hooks, but Turnkeeper rejected the payload (tool_name:');
    expect(said).not.toMatch(/skipped|trust/i);
  });
});
