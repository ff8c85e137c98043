// The team store's change feed (spec §4 "Change feed", §9 "refresh when the database changes"): an
// editor follows the server with LISTEN/NOTIFY, polling every 5 s while the feed is down. Here the
// "editor" is an Authority opened in this process exactly as the extension opens it (openAuthority,
// TURNKEEPER_STORE, the extension's bounds); the change comes from another "machine": its own HOME,
// TURNKEEPER_HOME and clone, the same store URL, and the real `dist/cli.js hook` in its own process.
//
// What each test proves, and why the controls are there:
// - a claim on the other machine reaches the follower through NOTIFY, well inside one poll interval,
//   each of its receipts announced (a poll would report only the new head);
// - without the NOTIFY trigger the same claim is seen only at the next poll tick: the feed, not the
//   poll, is what made the first test fast;
// - after a server crash and restart the follower recovers on its own: what changed while it was
//   down is seen within a poll interval of the server's return, and LISTEN is re-established so that
//   a later change is fast again;
// - a quiet server calls back nothing (a poll that finds the head unchanged is silent).
// Latencies are printed (console.log) so that a slow run can be read from the CI log.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { CLI, contextOf } from '../support/world';
import { pgEnv, usePostgres } from '../support/postgres';
import { makeMachine, makeUpstream } from '../support/teamMachine';
import { initializeStore, openAuthority } from '../../src/ledger/open';
import type { Authority } from '../../src/store/authority';
import type { FeedMode } from '../../src/store/port';

const server = usePostgres({ beforeAll, afterAll });
const DATABASE = 'feed';
const ORIGIN = 'https://example.invalid/acme/feed.git';
/** PostgresRows.follow's poll interval (the Authority gives no way to change it, nor should a test). */
const POLL_MS = 5000;
/** "Fast": a NOTIFY reaches the follower within this of the hook's exit. */
const FAST_MS = 1000;

let root: string;
let store: string;
let clone: string;
let machineEnv: Record<string, string>;
let editorHome: string;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  /** performance.now() when the process was spawned and when it exited. */
  startedAt: number;
  exitedAt: number;
}

/** The real CLI on the other machine, in its own process. */
function otherMachine(args: string[], input = ''): Promise<Run> {
  return new Promise((resolve, reject) => {
    const startedAt = performance.now();
    const child = spawn(process.execPath, [CLI, ...args], { cwd: clone, env: machineEnv });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr, startedAt, exitedAt: performance.now() }));
    child.stdin.end(input);
  });
}

/** A Codex prompt naming `todo` on the other machine: the hook claims it. */
async function claimElsewhere(todo: string, session: string): Promise<Run> {
  const transcript = join(machineEnv.HOME!, `${session}.jsonl`);
  writeFileSync(transcript, '');
  const run = await otherMachine(
    ['hook'],
    JSON.stringify({
      session_id: session,
      turn_id: 'turn-1',
      transcript_path: transcript,
      cwd: clone,
      hook_event_name: 'UserPromptSubmit',
      model: 'gpt-test',
      permission_mode: 'default',
      prompt: `please work on #todo:${todo}`,
    }),
  );
  expect(run.code, run.stderr).toBe(0);
  expect(contextOf(run.stdout) ?? '', run.stdout + run.stderr).toMatch(new RegExp(`^Turnkeeper: Todo ${todo}`));
  return run;
}

async function addTodo(id: string): Promise<void> {
  const run = await otherMachine(['todo', 'add', `Task ${id}`, '--id', id]);
  expect(run.code, run.stderr).toBe(0);
}

/** from+1 … to: the seqs of the receipts appended after `from`. */
const seqsAfter = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, k) => from + 1 + k);

/** The chain head as the server holds it (admin, outside the follower). */
async function head(): Promise<number> {
  return Number(await server().psql('SELECT seq FROM turnkeeper.receipt_head WHERE id = 1', DATABASE));
}

interface Follower {
  authority: Authority;
  /** performance.now() just before follow() was called: the poll ticks at startedAt + k·POLL_MS. */
  startedAt: number;
  events: { seq: number | undefined; at: number }[];
  /** What the feed said of itself: live, or polling and why. */
  modes: FeedMode[];
  /** When onChange first reported a head ≥ `seq`, waiting up to `timeoutMs`; undefined if it never did. */
  seen(seq: number, timeoutMs: number): Promise<number | undefined>;
  stop(): void;
}

/** The editor's side: an Authority opened as the extension opens it (ctx.ts), following the server. */
async function follow(): Promise<Follower> {
  const authority = (await openAuthority(pgEnv(store, { TURNKEEPER_HOME: editorHome }), { create: false, busyTimeoutMs: 2000 }))!;
  const events: Follower['events'] = [];
  const startedAt = performance.now();
  const modes: FeedMode[] = [];
  const unfollow = await authority.follow(
    (seq) => events.push({ seq, at: performance.now() }),
    (mode) => modes.push(mode),
  );
  expect(unfollow).toBeTypeOf('function');
  const firstAt = (seq: number) => events.find((event) => event.seq !== undefined && event.seq >= seq)?.at;
  return {
    authority,
    startedAt,
    events,
    modes,
    async seen(seq, timeoutMs) {
      const deadline = performance.now() + timeoutMs;
      while (firstAt(seq) === undefined && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      return firstAt(seq);
    },
    stop() {
      unfollow!();
      authority.close();
    },
  };
}

beforeAll(async () => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'tk-pg-follow-')));
  await server().createDatabase(DATABASE);
  store = server().url(DATABASE);
  await initializeStore(pgEnv(store));
  editorHome = join(root, 'editor', 'tkhome');
  mkdirSync(editorHome, { recursive: true });
  // The other machine: its own homes and clone of the repository, the same team store.
  const upstream = makeUpstream(join(root, 'upstream'), 'feed\n');
  ({ checkout: clone, env: machineEnv } = makeMachine(join(root, 'machine-b'), {
    store,
    origin: ORIGIN,
    upstream,
    checkout: join(root, 'machine-b', 'src', 'feed'),
  }));
  for (const id of ['notify-1', 'poll-1', 'down-1', 'back-1']) await addTodo(id);
}, 120_000);

afterAll(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

describe('Change feed: the editor follows a team server (LISTEN/NOTIFY, polling while the feed is down)', () => {
  it('a claim by a hook on another machine reaches onChange through NOTIFY within 1 s, with the new head seq', async () => {
    const follower = await follow();
    try {
      const before = await head();
      const run = await claimElsewhere('notify-1', 'sess-notify');
      const after = await head();
      expect(after).toBeGreaterThan(before);
      const seenAt = await follower.seen(after, POLL_MS * 2);
      expect(seenAt, `onChange never reported head ${after}; events ${JSON.stringify(follower.events)}`).toBeDefined();
      const latency = seenAt! - run.exitedAt;
      console.log(
        `NOTIFY: head ${after} reported ${latency.toFixed(0)} ms after the hook exited (hook ran ${(run.exitedAt - run.startedAt).toFixed(0)} ms; ${(seenAt! - follower.startedAt).toFixed(0)} ms after follow)`,
      );
      expect(latency).toBeLessThan(FAST_MS);
      // Each receipt of the claim was announced, in order: the feed's signature (a poll sees only the head).
      expect(follower.events.map((event) => event.seq)).toStrictEqual(seqsAfter(before, after));
      // And the feed said so, once: it heard its own probe (through a pooler it would say 'polling').
      expect(follower.modes).toStrictEqual([{ kind: 'listen' }]);
    } finally {
      follower.stop();
    }
  });

  it('control: without the NOTIFY trigger the same claim is seen only by the poll (not within 1 s, then at the tick)', async () => {
    await server().psql('ALTER TABLE turnkeeper.receipts DISABLE TRIGGER receipts_notify', DATABASE);
    const follower = await follow();
    try {
      const run = await claimElsewhere('poll-1', 'sess-poll');
      const after = await head();
      // The claim must be done well before the first tick, or a tick could land inside the 1 s window.
      expect(run.exitedAt - follower.startedAt, 'the hook took too long for this control to tell the feed from the poll').toBeLessThan(POLL_MS - FAST_MS - 500);
      expect(await follower.seen(after, FAST_MS), `seen within ${FAST_MS} ms without NOTIFY: ${JSON.stringify(follower.events)}`).toBeUndefined();
      const seenAt = await follower.seen(after, 7000);
      expect(seenAt, `the poll never reported head ${after}`).toBeDefined();
      console.log(
        `poll only (trigger disabled): head ${after} reported ${(seenAt! - run.exitedAt).toFixed(0)} ms after the hook exited, ${(seenAt! - follower.startedAt).toFixed(0)} ms after follow (tick every ${POLL_MS} ms)`,
      );
      // At the first tick, not before it.
      expect(seenAt! - follower.startedAt).toBeGreaterThanOrEqual(POLL_MS - 50);
      expect(seenAt! - follower.startedAt).toBeLessThan(POLL_MS + 2000);
      // One report for the whole claim: the poll sees the head, not each receipt.
      expect(follower.events).toHaveLength(1);
      expect(follower.events[0]!.seq).toBe(after);
    } finally {
      follower.stop();
      await server().psql('ALTER TABLE turnkeeper.receipts ENABLE TRIGGER receipts_notify', DATABASE);
    }
  });

  it('after a server crash and restart the feed recovers: the missed change is seen within a poll interval, and LISTEN is back (a later change within 1 s)', async () => {
    const follower = await follow();
    try {
      await server().stopImmediate();
      const downAt = performance.now();
      await server().start();
      const upAt = performance.now();
      // Written while the follower's connections are dead: no NOTIFY can reach it.
      const missed = await claimElsewhere('down-1', 'sess-down');
      const missedHead = await head();
      const missedAt = await follower.seen(missedHead, POLL_MS * 2 + 2000);
      expect(
        missedAt,
        `the change made after the restart was never reported; events ${JSON.stringify(follower.events)}\n${server().log().slice(-2000)}`,
      ).toBeDefined();
      console.log(
        `restart: server down ${(upAt - downAt).toFixed(0)} ms; the change made after it reported ${(missedAt! - missed.exitedAt).toFixed(0)} ms after its hook exited (${(missedAt! - upAt).toFixed(0)} ms after the server was back)`,
      );
      // Within a poll interval of the server's return (and of the hook), with slack for a loaded machine.
      expect(missedAt! - Math.max(upAt, missed.exitedAt)).toBeLessThan(POLL_MS + 2000);

      // LISTEN is established again: the next change is fast, not a poll tick away.
      const reported = follower.events.length;
      const later = await claimElsewhere('back-1', 'sess-back');
      const laterHead = await head();
      const laterAt = await follower.seen(laterHead, POLL_MS * 2);
      expect(laterAt, `the change after recovery was never reported; events ${JSON.stringify(follower.events)}`).toBeDefined();
      console.log(`restart: the next change reported ${(laterAt! - later.exitedAt).toFixed(0)} ms after its hook exited`);
      expect(laterAt! - later.exitedAt).toBeLessThan(FAST_MS);
      expect(follower.events.slice(reported).map((event) => event.seq)).toStrictEqual(seqsAfter(missedHead, laterHead));
      // The follower's own reads work again too (its transactional connection was replaced).
      expect((await follower.authority.listLeases()).map((lease) => lease.todo)).toEqual(expect.arrayContaining(['down-1', 'back-1']));
    } finally {
      follower.stop();
    }
  });

  it('a quiet server calls back nothing: a poll that finds the head unchanged is silent', async () => {
    const follower = await follow();
    try {
      await new Promise((resolve) => setTimeout(resolve, POLL_MS + 1500));
      expect(follower.events).toStrictEqual([]);
    } finally {
      follower.stop();
    }
  });
});
