// How often a holder gets the full ready capture (docs/hook-protocol.md, "How often the full capture
// is presented"): the full stored bytes unless the agent's own transcript already carries them after
// its last compaction; then one line that names the capture. Each case has its control.
import { appendFileSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { contextOf, makeWorld, payload, type World } from '../support/world';
import { fullCaptureMarker, heldReminder, TRANSCRIPT_CHUNK_BYTES, TRANSCRIPT_TAIL_BYTES, transcriptCarries } from '../../src/hook/presentation';
import { buildReadyCapture } from '../../src/core/ready';

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
const record = (text: string) =>
  appendFileSync(
    transcript(),
    JSON.stringify({ type: 'response_item', payload: { type: 'message', role: 'developer', content: [{ type: 'input_text', text }] } }) + '\n',
  );

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
    // Qwen Code 0.24.4's compression checkpoint, a marker with no `compact` in it.
    record(full);
    expect(prompt('turn-6')).not.toBe(full);
    appendFileSync(transcript(), JSON.stringify({ uuid: 'u-1', type: 'system', subtype: 'chat_compression', systemPayload: { info: {} } }) + '\n');
    expect(prompt('turn-7')).toBe(full);
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

describe('a Gemini CLI resume whose SessionStart names a fresh chat file', () => {
  // Gemini CLI 0.61 fires a headless resume's SessionStart before it reopens the session: its
  // transcript_path is a throwaway chat `session-<minute now>-<id8>.jsonl`, the session's own file only
  // when the resume starts in the minute the session did. Its BeforeAgent then names the session's file.
  const SESSION_ID = '8830363e-0000-4000-8000-000000000001';
  const chats = () => join(world.root, 'chats');
  const chat = (minute: string) => join(chats(), `session-2026-12-01T22-${minute}-${SESSION_ID.slice(0, 8)}.jsonl`);
  const gemini = (event: string, transcript: string, extra: Record<string, unknown> = {}, env: Record<string, string> = {}) => {
    const run = world.cli(['hook', '--agent', 'gemini'], {
      input: JSON.stringify({
        session_id: SESSION_ID,
        transcript_path: transcript,
        cwd: world.repo,
        hook_event_name: event,
        timestamp: '2026-12-01T22:29:00.000Z',
        ...extra,
      }),
      env,
    });
    expect(run.code, run.stderr).toBe(0);
    return contextOf(run.stdout);
  };
  /** The claiming run: its chat file records the prompt with the hook's context, as Gemini does. */
  function claimed(): string {
    mkdirSync(chats(), { recursive: true });
    writeFileSync(chat('29'), JSON.stringify({ sessionId: SESSION_ID, kind: 'main' }) + '\n');
    // Gemini payloads carry no Turn: the claiming run names it (TURNKEEPER_TURN); the resumes do not.
    const full = gemini('BeforeAgent', chat('29'), { prompt: 'please work on #todo:fix-login' }, { TURNKEEPER_TURN: 'turn-gemini-1' })!;
    expect(full).toMatch(/^Turnkeeper: Todo fix-login · capture cap_[0-9a-f]{24} · epoch 1\n/);
    appendFileSync(chat('29'), JSON.stringify({ type: 'user', content: [{ text: `<hook_context>${full}</hook_context>` }] }) + '\n');
    return full;
  }

  it('the resume a minute later gets the reminder on SessionStart and on BeforeAgent (control: the same minute)', () => {
    const full = claimed();
    // A minute later: SessionStart names a new file that holds only the chat's metadata.
    writeFileSync(chat('30'), JSON.stringify({ sessionId: SESSION_ID, kind: 'main' }) + '\n');
    const reminder = gemini('SessionStart', chat('30'), { source: 'resume' });
    expect(reminder).toMatch(/^Turnkeeper: Todo fix-login · capture cap_[0-9a-f]{24} · epoch 1\nThis session still holds the lease/);
    expect(gemini('BeforeAgent', chat('29'), { prompt: 'continue' })).toBe(reminder);
    // A second resume, later still: the session's file is the one its last events named.
    writeFileSync(chat('31'), JSON.stringify({ sessionId: SESSION_ID, kind: 'main' }) + '\n');
    expect(gemini('SessionStart', chat('31'), { source: 'resume' })).toBe(reminder);
    // Control: the same minute, where Gemini appends to the session's own file.
    expect(gemini('SessionStart', chat('29'), { source: 'resume' })).toBe(reminder);
    expect(full).not.toBe(reminder);
  });

  it('only a resume: a cleared chat, a fresh startup or no source in a new file gets the full bytes', () => {
    const full = claimed();
    writeFileSync(chat('30'), JSON.stringify({ sessionId: SESSION_ID, kind: 'main' }) + '\n');
    expect(gemini('SessionStart', chat('30'), { source: 'clear' })).toBe(full);
    expect(gemini('SessionStart', chat('30'), { source: 'startup' })).toBe(full);
    expect(gemini('SessionStart', chat('30'))).toBe(full);
  });
});

describe('the transcript is read backwards, a piece at a time', () => {
  const CAPTURE = 'cap_0123456789abcdef01234567';
  const FULL = `Turnkeeper: Todo fix-login · capture ${CAPTURE} · epoch 1\n${fullCaptureMarker(CAPTURE)}\nFix login\n`;
  const COMPACTED = JSON.stringify({ type: 'compacted', payload: { message: 'summary' } }) + '\n';
  /** One JSON line of exactly `bytes` bytes (newline included): conversation that is not a capture. */
  const filler = (bytes: number) => {
    const empty = JSON.stringify({ type: 'event_msg', pad: '' }) + '\n';
    return JSON.stringify({ type: 'event_msg', pad: 'x'.repeat(bytes - empty.length) }) + '\n';
  };
  const file = () => join(world.root, 'rollout.jsonl');
  const carries = () => transcriptCarries(file(), CAPTURE);
  /** Pads the file so that `needle` (the last one) starts `before` bytes before a piece boundary, `pieces` pieces from the end. */
  const straddle = (needle: string, before: number, pieces = 1) => {
    const at = readFileSync(file()).lastIndexOf(Buffer.from(needle));
    const size = statSync(file()).size;
    appendFileSync(file(), filler(at + pieces * TRANSCRIPT_CHUNK_BYTES + before - size));
    expect(statSync(file()).size - pieces * TRANSCRIPT_CHUNK_BYTES - at).toBe(before);
  };

  it('looks for the begin fence line of the presentation itself (one definition, core/ready.ts)', () => {
    const ready = buildReadyCapture({
      capture: CAPTURE,
      originalDigest: 'sha256:' + '1'.repeat(64),
      lease: { owner: 'codex:s1', epoch: 1 },
      todo: { id: 'fix-login', title: 'Fix login', body: 'Valid passwords are rejected.' },
      goal: '/repo',
      history: [],
      preconditions: { gitHead: null, statusDigest: null },
    });
    expect(ready.presentation.split('\n')).toContain(fullCaptureMarker(CAPTURE));
    writeFileSync(file(), JSON.stringify({ type: 'response_item', text: ready.presentation }) + '\n');
    expect(carries()).toBe(true);
    // Control: the reminder names the capture too, and does not count.
    writeFileSync(file(), JSON.stringify({ type: 'response_item', text: heldReminder('fix-login', CAPTURE, 1) }) + '\n');
    expect(carries()).toBe(false);
  });

  it('finds the capture more than one piece from the end (control: a compaction after it, pieces later)', () => {
    writeFileSync(file(), filler(500) + JSON.stringify({ type: 'response_item', text: FULL }) + '\n' + filler(2 * TRANSCRIPT_CHUNK_BYTES + 12345));
    expect(carries()).toBe(true);
    appendFileSync(file(), filler(1000) + COMPACTED + filler(TRANSCRIPT_CHUNK_BYTES + 999));
    expect(carries()).toBe(false);
    // After the compaction the capture presented again counts again.
    appendFileSync(file(), JSON.stringify({ type: 'response_item', text: FULL }) + '\n' + filler(3 * TRANSCRIPT_CHUNK_BYTES));
    expect(carries()).toBe(true);
  });

  it('a begin marker across a piece boundary is found whole (control: cut short, it is not the marker)', () => {
    writeFileSync(file(), JSON.stringify({ type: 'response_item', text: FULL }) + '\n');
    straddle(fullCaptureMarker(CAPTURE), 10);
    expect(carries()).toBe(true);
    writeFileSync(file(), JSON.stringify({ type: 'response_item', text: FULL.replace(') ---', ') --') }) + '\n');
    straddle(fullCaptureMarker(CAPTURE).slice(0, -1), 10);
    expect(carries()).toBe(false);
  });

  it('a compaction marker across a piece boundary after the capture is found whole', () => {
    writeFileSync(file(), JSON.stringify({ type: 'response_item', text: FULL }) + '\n' + filler(3000) + COMPACTED);
    straddle('"type":"compacted"', 5, 2);
    expect(carries()).toBe(false);
    // Control: the same layout with the capture after the compaction.
    appendFileSync(file(), JSON.stringify({ type: 'response_item', text: FULL }) + '\n');
    expect(carries()).toBe(true);
  });

  it('looks no further back than TRANSCRIPT_TAIL_BYTES (control: just inside it)', () => {
    writeFileSync(file(), JSON.stringify({ type: 'response_item', text: FULL }) + '\n');
    const at = readFileSync(file()).lastIndexOf(Buffer.from(fullCaptureMarker(CAPTURE)));
    const size = statSync(file()).size;
    // The marker starts exactly TRANSCRIPT_TAIL_BYTES before the end: inside.
    appendFileSync(file(), filler(at + TRANSCRIPT_TAIL_BYTES - size));
    expect(carries()).toBe(true);
    appendFileSync(file(), filler(100));
    expect(carries()).toBe(false);
  });
});
