// `turnkeeper resume` refusals (contract §7), one test each, each with its control: the same
// capture without the fault passes the check (dry run), so the refusal is what stopped it.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { like } from '../support/matchers';
import { appendFileSync, closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { execFileSync } from 'node:child_process';
import { join, relative } from 'node:path';
import { scriptRuntime } from '../../src/launcher/attest';
import { resolveAgentBinary } from '../../src/launcher/plumbing';
import { contextOf, makeWorld, payload, type World } from '../support/world';
import { runMain } from '../support/inProcessCli';

let world: World;
let captureId: string;
const transcript = () => join(world.root, 'sess-r.jsonl');

beforeEach(() => {
  world = makeWorld('resume');
  expect(world.cli(['todo', 'add', 'Fix login', '--id', 'fix-login']).code).toBe(0);
  writeFileSync(transcript(), '{"type":"session"}\n');
  const claim = world.cli(['hook'], { input: payload.codexPrompt(world, 'sess-r', 'turn-1', '#todo:fix-login') });
  captureId = /capture (cap_[0-9a-f]{24})/.exec(contextOf(claim.stdout)!)![1]!;
});
afterEach(() => world.cleanup());

/** A dry run resolves, checks and attests everything a real resume would, but launches nothing. */
const dryRun = (...extra: string[]) => world.cli(['resume', captureId, '--dry-run', '--json', '--agent-bin', '/bin/true', ...extra]);
const decision = (run: { stdout: string }) => JSON.parse(run.stdout) as { ok: boolean; reason?: string; decision: string; digest?: string; argv?: string[] };

describe('a resumed agent that fails', () => {
  it('exit 1, how it ended, and the resume command of the capture it still holds (control: an agent that exits 0 gives 0 and no sentence)', () => {
    const failed = world.cli(['resume', captureId, '--agent-bin', '/bin/false']);
    expect(failed.code, failed.stderr).toBe(1);
    expect(failed.stderr).toContain(
      `turnkeeper: codex ended with code 1 while it held fix-login (capture ${captureId}); pick its turn up: turnkeeper resume ${captureId}\n`,
    );
    const control = world.cli(['resume', captureId, '--agent-bin', '/bin/true']);
    expect(control.code, control.stderr).toBe(0);
    expect(control.stderr).not.toContain('pick its turn up');
  });
});

describe('how a resume runs its agent', () => {
  // In-process (main(argv, io)), so the terminal is the Io's to say; codex's headless resume is
  // `codex exec resume <session>`, its interactive one `codex resume --no-daemon <session>` (its profile).
  const plan = async (atTerminal: boolean, ...flags: string[]) => {
    const run = await runMain(['resume', captureId, '--dry-run', '--agent-bin', '/bin/true', ...flags], { env: world.env, cwd: world.repo, atTerminal });
    expect(run.code, run.stderr).toBe(0);
    return /with: \S+ (.*)\n/.exec(run.stdout)![1]!;
  };

  it('at a terminal: the interactive agent; in a pipe or CI: headless (the default each way, and each flag overrides it)', async () => {
    expect(await plan(true)).toMatch(/^resume --no-daemon sess-r$/);
    expect(await plan(false)).toMatch(/^exec resume sess-r /);
    expect(await plan(true, '--headless')).toMatch(/^exec resume sess-r /);
    expect(await plan(false, '--interactive')).toMatch(/^resume --no-daemon sess-r$/);
    // A prompt given, or a machine reading JSON: one headless turn, at a terminal too.
    expect(await plan(true, '--prompt', 'go on')).toMatch(/^exec resume sess-r /);
    const json = await runMain(['resume', captureId, '--dry-run', '--json', '--agent-bin', '/bin/true'], { env: world.env, cwd: world.repo, atTerminal: true });
    expect((JSON.parse(json.stdout) as { argv: string[] }).argv.slice(1, 3)).toStrictEqual(['exec', 'resume']);
  });

  it('--interactive and --headless together are a usage error, and nothing runs', async () => {
    const both = await runMain(['resume', captureId, '--interactive', '--headless', '--agent-bin', '/bin/true'], { env: world.env, cwd: world.repo });
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('give --interactive or --headless, not both');
  });
});

describe('resume eligibility', () => {
  it('control: a live capture with its transcript and unchanged workspace resumes (dry run)', () => {
    const run = dryRun();
    expect(run.code).toBe(0);
    expect(decision(run)).toMatchObject({ ok: true, decision: 'dry_run', digest: like.stringMatching(/^sha256:/) });
    expect(decision(run).argv).toStrictEqual([expect.any(String), 'exec', 'resume', 'sess-r', expect.any(String)]);
  });

  it('a released capture: [capture_released]', () => {
    expect(world.cli(['todo', 'done', 'fix-login', '--owner', 'codex:sess-r']).code).toBe(0);
    const run = dryRun();
    expect(run.code).toBe(1);
    expect(decision(run)).toMatchObject({ ok: false, reason: 'capture_released' });
  });

  it('a lease that moved to another Owner: [lease_moved]', () => {
    expect(world.cli(['release', 'fix-login', '--force', '--reason', 'reassign']).code).toBe(0);
    world.cli(['hook'], { input: payload.codexPrompt(world, 'sess-other', 'turn-9', '#todo:fix-login') });
    expect(decision(dryRun())).toMatchObject({ ok: false, reason: 'lease_moved' });
  });

  it('a tampered ready capture: [ready_corrupted]', async () => {
    const store = await world.store();
    store.connection.prepare("UPDATE ready_captures SET presentation = presentation || 'x'").run();
    store.close();
    expect(decision(dryRun())).toMatchObject({ ok: false, reason: 'ready_corrupted' });
  });

  it('workspace drift in a turn that never ended (killed mid-turn): [precondition_changed] naming the path, unless --accept-drift', () => {
    appendFileSync(join(world.repo, 'README.md'), 'changed by the agent\n');
    const refused = dryRun();
    expect(decision(refused)).toMatchObject({ ok: false, reason: 'precondition_changed' });
    expect(refused.stdout).toMatch(/since its turn began \(\d{4}-[^)]+\), 1 path changed: M README\.md/);
    expect(decision(dryRun('--accept-drift'))).toMatchObject({ ok: true, decision: 'dry_run' });
  });

  it("the session's own work is no drift: a turn that ended after changing a file and committing resumes with no flag; a change after it is named (control)", () => {
    const git = (...args: string[]) =>
      execFileSync('git', ['-C', world.repo, '-c', 'user.email=t@example.invalid', '-c', 'user.name=t', ...args], { encoding: 'utf8' });
    appendFileSync(join(world.repo, 'README.md'), 'changed by the agent\n');
    writeFileSync(join(world.repo, 'CHANGELOG.md'), 'the agent wrote this\n');
    git('add', 'README.md');
    git('commit', '-qm', 'the agent commits');
    const stop = world.cli(['hook'], { input: payload.codex(world, 'Stop', 'sess-r', 'turn-1', { stop_hook_active: false }) });
    expect(stop.code, stop.stderr).toBe(0);
    // HEAD moved and the status differs from capture time, both by the turn that ended: resumable.
    expect(decision(dryRun())).toMatchObject({ ok: true, decision: 'dry_run' });
    // Control: a change nobody recorded, after the turn ended.
    writeFileSync(join(world.repo, 'by-hand.txt'), 'a person wrote this\n');
    const refused = dryRun();
    expect(decision(refused)).toMatchObject({ ok: false, reason: 'precondition_changed' });
    expect(refused.stdout).toMatch(/since its last turn ended \(\d{4}-[^)]+\), 1 path changed: A by-hand\.txt/);
    // A stop that no prompt began (a payload sent on its own: turn_ended with no base) records the
    // tree with that file in it, and still absorbs nothing.
    expect(world.cli(['hook'], { input: payload.codex(world, 'Stop', 'sess-r', 'turn-1', { stop_hook_active: false }) }).code).toBe(0);
    expect(decision(dryRun())).toMatchObject({ ok: false, reason: 'precondition_changed' });
    // A commit after it moves HEAD: named too.
    git('add', 'by-hand.txt');
    git('commit', '-qm', 'a person commits');
    expect(dryRun().stdout).toMatch(/git HEAD moved from [0-9a-f]{12} to [0-9a-f]{12}; 1 path changed: A by-hand\.txt/);
  });

  it('a transcript the agent has lost: [transcript_missing]', () => {
    rmSync(transcript());
    expect(decision(dryRun())).toMatchObject({ ok: false, reason: 'transcript_missing' });
  });

  it('every refusal lands in the chain as resume_refused, and the chain verifies', async () => {
    rmSync(transcript());
    dryRun();
    const store = await world.store();
    const kinds = (await store.receipts({ limit: 3 })).map((row) => JSON.parse(row.doc) as { kind: string; detail?: { reason?: string } });
    expect(kinds[0]).toMatchObject({ kind: 'resume_refused', detail: { reason: 'transcript_missing' } });
    expect((await store.verifyChain()).ok).toBe(true);
    store.close();
  });

  it('a script as agent executable is refused before anything runs: [unsupported_entrypoint]', () => {
    const script = join(world.root, 'fake-agent.sh');
    writeFileSync(script, '#!/bin/sh\ntouch "$0.ran"\n', { mode: 0o755 });
    const run = world.cli(['resume', captureId, '--json', '--agent-bin', script]);
    expect(decision(run)).toMatchObject({ ok: false, reason: 'unsupported_entrypoint' });
  });
});

describe('executables from PATH: absolute entries, executable regular files (findExecutable)', () => {
  const dir = () => mkdtempSync(join(tmpdir(), 'tk-path-'));
  const executable = (path: string, mode = 0o755) => {
    mkdirSync(join(path, '..'), { recursive: true });
    writeFileSync(path, '#!/bin/sh\n', { mode });
  };

  it('the agent binary: a relative PATH entry is never searched (control: the same directory, absolute, is)', () => {
    const root = dir();
    executable(join(root, 'bin', 'codex'));
    const relativeEntry = relative(process.cwd(), join(root, 'bin'));
    expect(resolveAgentBinary('codex', { env: { PATH: relativeEntry } })).toBeUndefined();
    expect(resolveAgentBinary('codex', { env: { PATH: `${relativeEntry}:${join(root, 'bin')}` } })).toBe(join(root, 'bin', 'codex'));
    rmSync(root, { recursive: true, force: true });
  });

  it("a closure's runtime: a node on PATH that is not executable, or not a file, is passed over (control: the executable one is found)", () => {
    const root = dir();
    executable(join(root, 'plain', 'node'), 0o644);
    mkdirSync(join(root, 'dir', 'node'), { recursive: true });
    executable(join(root, 'real', 'node'));
    const script = join(root, 'gemini.js');
    writeFileSync(script, '#!/usr/bin/env node\n');
    const fd = openSync(script, 'r');
    try {
      const PATH = [join(root, 'plain'), join(root, 'dir'), join(root, 'real')].join(':');
      expect(scriptRuntime(fd, script, { PATH })).toBe(join(root, 'real', 'node'));
      expect(() => scriptRuntime(fd, script, { PATH: [join(root, 'plain'), join(root, 'dir')].join(':') })).toThrow(/not on PATH/);
    } finally {
      closeSync(fd);
      rmSync(root, { recursive: true, force: true });
    }
  });
});
