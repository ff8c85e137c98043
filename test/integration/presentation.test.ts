// How often a holder gets the full ready capture (docs/hook-protocol.md, "How often the full capture
// is presented"): the full stored bytes unless the agent's own transcript already carries them after
// its last compaction; then one line that names the capture. Each case has its control.
import { appendFileSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { contextOf, makeWorld, payload, type World } from '../support/world';

let world: World;
beforeEach(() => {
  world = makeWorld('tk-presentation');
  expect(world.cli(['todo', 'add', 'Fix login', '--id', 'fix-login', '--body', 'Valid passwords with a space are rejected.']).code).toBe(0);
});
afterEach(() => world.cleanup());

const SESSION = 'sess-a';
const transcript = () => join(world.root, `${SESSION}.jsonl`);
const hook = (input: string) => {
  const run = world.cli(['hook', '--agent', 'codex'], { input });
  expect(run.code).toBe(0);
  return contextOf(run.stdout);
};
const prompt = (turn: string, text = 'go on') => hook(payload.codexPrompt(world, SESSION, turn, text));
/** What Codex writes to its rollout for a context it received: the text inside a JSON line. */
const record = (text: string) => appendFileSync(transcript(), JSON.stringify({ type: 'response_item', payload: { type: 'message', role: 'developer', content: [{ type: 'input_text', text }] } }) + '\n');

function claim(): string {
  writeFileSync(transcript(), '');
  const full = prompt('turn-1', 'please work on #todo:fix-login');
  expect(full).toMatch(/^Turnkeeper: Todo fix-login · capture cap_[0-9a-f]{24} · epoch 1\n/);
  return full!;
}
const captureOf = (full: string) => /capture (cap_[0-9a-f]{24})/.exec(full)![1]!;

describe('a holder whose transcript carries the full capture gets a one-line reminder', () => {
  it('later prompts and SessionStart: reminder once recorded; the full bytes while not (control: lost output)', () => {
    const full = claim();
    const capture = captureOf(full);
    // The claim's output never reached the transcript (lost, timed out): the next prompt gets the bytes again.
    expect(prompt('turn-2')).toBe(full);
    record(full);
    const reminder = prompt('turn-3');
    expect(reminder).toBe(
      `Turnkeeper: Todo fix-login · capture ${capture} · epoch 1\nThis session still holds the lease on Todo fix-login. Its ready capture (the Todo's text and the facts of the claim) was presented earlier in this conversation; if you no longer have it, print it: turnkeeper show ${capture}`,
    );
    expect(hook(payload.codex(world, 'SessionStart', SESSION, undefined, { source: 'resume' }))).toBe(reminder);
    // Another session's transcript is not this one's: a second session of the same Todo is refused, as ever.
    expect(hook(payload.codexPrompt(world, 'sess-b', 'turn-9', 'please work on #todo:fix-login'))).toMatch(/\[lease_held\]/);
  });

  it('a retry of the claiming Turn always gets the stored bytes (control: a later Turn gets the reminder)', () => {
    const full = claim();
    record(full);
    expect(prompt('turn-1', 'please work on #todo:fix-login')).toBe(full);
    expect(prompt('turn-2')).not.toBe(full);
  });

  it('after a compaction the full bytes come back once (Codex and Claude Code markers; control: before it, the reminder)', () => {
    const full = claim();
    record(full);
    expect(prompt('turn-2')).not.toBe(full);
    appendFileSync(transcript(), JSON.stringify({ timestamp: '2026-11-30T12:00:00Z', type: 'compacted', payload: { message: 'summary' } }) + '\n');
    expect(prompt('turn-3')).toBe(full);
    record(full);
    expect(prompt('turn-4')).not.toBe(full);
    appendFileSync(transcript(), JSON.stringify({ type: 'system', subtype: 'compact_boundary', compact_metadata: { trigger: 'auto' } }) + '\n');
    expect(prompt('turn-5')).toBe(full);
  });

  it('a transcript that is not a regular file is never read: the full bytes (control: the same path as a file)', () => {
    const full = claim();
    execFileSync('rm', ['-f', transcript()]);
    execFileSync('mkfifo', [transcript()]);
    expect(prompt('turn-2')).toBe(full);
    execFileSync('rm', ['-f', transcript()]);
    record(full);
    expect(prompt('turn-3')).not.toBe(full);
  });

  it('the text of a reminder or of guidance does not count as the capture (only its fenced Todo text does)', () => {
    const full = claim();
    const capture = captureOf(full);
    record(full.split('\n')[0]!);
    record(`Turnkeeper [lease_held]: … ${capture} …`);
    expect(prompt('turn-2')).toBe(full);
  });
});
