// `turnkeeper resume` refusals (contract §7), one test each, each with its control: the same
// capture without the fault passes the check (dry run), so the refusal is what stopped it.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { appendFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { contextOf, makeWorld, payload, type World } from '../support/world';

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

describe('resume eligibility', () => {
  it('control: a live capture with its transcript and unchanged workspace resumes (dry run)', () => {
    const run = dryRun();
    expect(run.code).toBe(0);
    expect(decision(run)).toMatchObject({ ok: true, decision: 'dry_run', digest: expect.stringMatching(/^sha256:/) });
    expect(decision(run).argv).toStrictEqual([expect.any(String), 'exec', 'resume', 'sess-r', expect.any(String)]);
  });

  it('a released capture: [capture_released]', () => {
    expect(world.cli(['todo', 'done', 'fix-login']).code).toBe(0);
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

  it('workspace drift: [precondition_changed] unless --accept-drift', () => {
    appendFileSync(join(world.repo, 'README.md'), 'changed by the agent\n');
    expect(decision(dryRun())).toMatchObject({ ok: false, reason: 'precondition_changed' });
    expect(decision(dryRun('--accept-drift'))).toMatchObject({ ok: true, decision: 'dry_run' });
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
