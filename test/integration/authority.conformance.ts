// The conformance suite every authority must pass (SQLite today, PostgreSQL later). It speaks only
// the Authority interface; a new authority runs it by calling `authorityConformance` with a factory.
import { describe, expect, it } from 'vitest';
import type { ReceiptDocument } from '../../src/core/receipts';
import { buildCapture } from '../../src/core/capture';
import { digestText } from '../../src/core/canonical';
import { TodoDependencyError, TodoExistsError, type Authority, type ClaimInput } from '../../src/store/authority';
import { RENEWAL_INTERVAL_MS } from '../../src/core/lease';
import type { Owner } from '../../src/core/ids';
import { consistencyProof, inclusionProof, leafHash, TreeBuilder, treeRoot, verifyConsistency, verifyInclusion, type HashReader } from '../../src/core/merkle';

export type AuthorityFactory = () => Promise<{ authority: Authority; dispose: () => void }>;

const GOAL = '/work/repo';
const TTL = 60;
const T0 = 1_800_000_000_000;

function claimInput(owner: Owner, turn: string, todo = 'fix-login', goal = GOAL): ClaimInput {
  const [agent, session] = owner.split(':') as ['codex', string];
  return {
    capture: buildCapture({ goal, todo, agent, session, turn }),
    cwd: goal,
    binding: 'prompt',
    owner,
    preconditions: { gitHead: 'a'.repeat(40), statusDigest: digestText('') },
    ttlSeconds: TTL,
  };
}

const lastReceipt = (rows: { doc: string }[]): ReceiptDocument => JSON.parse(rows[0]!.doc) as ReceiptDocument;

/**
 * The stored Merkle tree rows, written with each receipt through the authority's own write path, are
 * the RFC 6962 tree of the stored documents: every leaf, every prefix's root, and proofs read from them.
 */
async function expectTreeOfReceipts(authority: Authority): Promise<void> {
  const docs = (await authority.receipts({ limit: 100_000 })).reverse().map((row) => row.doc);
  expect(docs.length).toBeGreaterThan(0);
  const read: HashReader = async (keys) => {
    const found = await authority.treeHashes(keys);
    expect(found.every((hash) => hash !== undefined)).toBe(true);
    return found.map((hash) => Buffer.from(hash!));
  };
  const builder = new TreeBuilder();
  const roots: Uint8Array[] = [];
  for (const doc of docs) {
    builder.push(leafHash(Buffer.from(doc, 'utf8')));
    roots.push(builder.root());
  }
  expect((await read(docs.map((_, i) => [0, i] as const))).map((hash) => Buffer.from(hash).toString('hex'))).toEqual(
    docs.map((doc) => Buffer.from(leafHash(Buffer.from(doc, 'utf8'))).toString('hex')),
  );
  for (let size = 1; size <= docs.length; size += 1) {
    expect(Buffer.from(await treeRoot(size, read)).toString('hex')).toBe(Buffer.from(roots[size - 1]!).toString('hex'));
    expect(
      verifyInclusion(size - 1, docs.length, leafHash(Buffer.from(docs[size - 1]!, 'utf8')), await inclusionProof(size - 1, docs.length, read), roots.at(-1)!),
    ).toBe(true);
    expect(verifyConsistency(size, docs.length, roots[size - 1]!, roots.at(-1)!, await consistencyProof(size, docs.length, read))).toBe(true);
  }
  // No row beyond the tree of the receipts: the next leaf's slot is empty.
  expect(await authority.treeHashes([[0, docs.length]])).toEqual([undefined]);
}

export function authorityConformance(name: string, factory: AuthorityFactory): void {
  const withAuthority = (test: (authority: Authority) => Promise<void>) => async () => {
    const { authority, dispose } = await factory();
    try {
      await authority.addTodo({ goal: GOAL, id: 'fix-login', title: 'Fix login', body: 'The login form rejects valid passwords.' }, T0);
      await test(authority);
      expect((await authority.verifyChain()).ok).toBe(true);
      await expectTreeOfReceipts(authority);
    } finally {
      dispose();
    }
  };

  describe(`Authority conformance: ${name}`, () => {
    it(
      'keeps Todos per Goal and refuses duplicates',
      withAuthority(async (a) => {
        await expect(a.addTodo({ goal: GOAL, id: 'fix-login', title: 'again', body: '' }, T0)).rejects.toBeInstanceOf(TodoExistsError);
        await a.addTodo({ goal: '/other', id: 'fix-login', title: 'other goal', body: '' }, T0);
        expect((await a.listTodos(GOAL)).map((t) => t.title)).toStrictEqual(['Fix login']);
        expect(await a.listTodos()).toHaveLength(2);
        expect(await a.getTodo(GOAL, 'fix-login')).toMatchObject({ status: 'open', body: 'The login form rejects valid passwords.' });
      }),
    );

    it(
      'acquires, replays the same op byte for byte, and refuses another owner',
      withAuthority(async (a) => {
        const input = claimInput('codex:s1', 't1');
        const first = await a.claim(input, T0);
        expect(first.kind).toBe('acquired');
        if (first.kind !== 'acquired') return;
        expect(first.lease).toMatchObject({ epoch: 1, version: 1, status: 'active', owner: 'codex:s1', capture: input.capture.captureId });
        expect(first.ready.readyDigest).toBe(digestText(first.ready.presentation));
        const replay = await a.claim(input, T0 + 5);
        expect(replay).toMatchObject({ kind: 'replayed', ready: { presentation: first.ready.presentation } });
        const other = await a.claim(claimInput('codex:s2', 't1'), T0 + 10);
        expect(other).toMatchObject({ kind: 'lease_held', holder: { owner: 'codex:s1', epoch: 1 } });
        const expired = await a.claim(claimInput('codex:s2', 't1'), T0 + TTL * 1000);
        expect(expired.kind).toBe('lease_expired_hold');
        expect(await a.listLeases()).toHaveLength(1);
        expect(await a.activeLeaseCount()).toBe(1);
        expect(await a.readReady(input.capture.captureId)).toStrictEqual(first.ready);
        expect(await a.getCapture(input.capture.captureId)).toMatchObject({ canonical: input.capture.canonical, turn: 't1', op: input.capture.op });
      }),
    );

    it(
      "reads one Goal's receipts (and the store-wide ones) and counts one Goal's active leases: the editor's views of a workspace",
      withAuthority(async (a) => {
        await a.addTodo({ goal: '/other', id: 'theirs', title: 'Theirs', body: '' }, T0);
        expect((await a.claim(claimInput('codex:s1', 't1'), T0)).kind).toBe('acquired');
        expect((await a.claim(claimInput('codex:s2', 't1', 'theirs', '/other'), T0 + 1)).kind).toBe('acquired');
        await a.appendReceipt({ kind: 'clock_skew_detected', goal: '-', detail: { host: 'h', skewMs: 5000 } }, T0 + 2);
        expect(await a.activeLeaseCount()).toBe(2);
        expect(await a.activeLeaseCount(GOAL)).toBe(1);
        expect(await a.activeLeaseCount('/nowhere')).toBe(0);
        const goalOf = (rows: { doc: string }[]) => rows.map((row) => (JSON.parse(row.doc) as ReceiptDocument).goal);
        const all = await a.receipts({ limit: 100 });
        expect(new Set(goalOf(all))).toStrictEqual(new Set([GOAL, '/other', '-']));
        const mine = await a.receipts({ limit: 100, goal: GOAL });
        expect(new Set(goalOf(mine))).toStrictEqual(new Set([GOAL, '-']));
        expect(mine.map((row) => row.seq)).toStrictEqual(all.filter((row) => goalOf([row])[0] !== '/other').map((row) => row.seq));
        // Paged: newest first, before a seq, at most `limit`.
        const page = await a.receipts({ limit: 2, goal: GOAL, beforeSeq: mine[0]!.seq });
        expect(page.map((row) => row.seq)).toStrictEqual(mine.slice(1, 3).map((row) => row.seq));
      }),
    );

    it(
      'finishes a Todo once: a second done (another checkout, a run twice) is already_done and records nothing',
      withAuthority(async (a) => {
        const finished = { strategy: 'merge', commits: 1 };
        expect(await a.setTodoStatus(GOAL, 'fix-login', 'done', T0, undefined, finished)).toMatchObject({ kind: 'changed', todo: { status: 'done' } });
        const before = (await a.receipts({ limit: 100 })).length;
        expect(await a.setTodoStatus(GOAL, 'fix-login', 'done', T0 + 1, undefined, finished)).toMatchObject({ kind: 'already_done', todo: { status: 'done' } });
        expect(await a.setTodoStatus(GOAL, 'fix-login', 'done', T0 + 2)).toMatchObject({ kind: 'already_done' });
        const kinds = (await a.receipts({ limit: 100 })).map((row) => (JSON.parse(row.doc) as ReceiptDocument).kind);
        expect(kinds).toHaveLength(before);
        expect(kinds.filter((kind) => kind === 'todo_finished')).toHaveLength(1);
        // Control: reopened, it can be finished again, and that is a second finish on record.
        expect(await a.setTodoStatus(GOAL, 'fix-login', 'open', T0 + 3)).toMatchObject({ kind: 'changed' });
        expect(await a.setTodoStatus(GOAL, 'fix-login', 'done', T0 + 4, undefined, finished)).toMatchObject({ kind: 'changed' });
      }),
    );

    it(
      'refuses unknown and closed Todos',
      withAuthority(async (a) => {
        expect((await a.claim(claimInput('codex:s1', 't1', 'no-such'), T0)).kind).toBe('unknown_todo');
        await a.setTodoStatus(GOAL, 'fix-login', 'done', T0);
        expect(await a.claim(claimInput('codex:s1', 't1'), T0)).toStrictEqual({ kind: 'todo_not_open', status: 'done' });
        await a.setTodoStatus(GOAL, 'fix-login', 'blocked', T0);
        expect(await a.claim(claimInput('codex:s1', 't1'), T0)).toStrictEqual({ kind: 'todo_blocked', status: 'blocked', waitingOn: [], blockReason: null });
        expect(await a.listLeases()).toHaveLength(0);
        expect(await a.activeLeaseCount()).toBe(0);
      }),
    );

    it(
      'releases for good: the old op is capture_released, a new Turn gets epoch + 1',
      withAuthority(async (a) => {
        const input = claimInput('codex:s1', 't1');
        await a.claim(input, T0);
        expect(await a.release({ goal: GOAL, todo: 'fix-login', by: 'codex:s2', identifiedBy: 'agent_environment', force: false }, T0 + 1)).toMatchObject({
          kind: 'refused',
          why: 'not_owner',
        });
        expect(await a.release({ goal: GOAL, todo: 'fix-login', identifiedBy: 'force', force: true, reason: '' }, T0 + 1)).toMatchObject({
          kind: 'refused',
          why: 'force_needs_reason',
        });
        expect(await a.release({ goal: GOAL, todo: 'fix-login', by: 'codex:s1', identifiedBy: 'agent_environment', force: false }, T0 + 2)).toMatchObject({
          kind: 'released',
          lease: { status: 'released' },
        });
        expect(await a.release({ goal: GOAL, todo: 'fix-login', by: 'codex:s1', identifiedBy: 'agent_environment', force: false }, T0 + 3)).toMatchObject({
          kind: 'refused',
          why: 'no_active_lease',
        });
        expect(await a.claim(input, T0 + 4)).toMatchObject({ kind: 'capture_released', capture: input.capture.captureId, epoch: 1 });
        expect(await a.claim(claimInput('codex:s1', 't2'), T0 + 5)).toMatchObject({ kind: 'acquired', lease: { epoch: 2 } });
        expect((await a.leaseOfCapture(input.capture.captureId))?.status).toBe('released');
        expect(await a.latestLeaseOfOwner('codex:s1')).toMatchObject({ lease: { epoch: 2 }, currentEpoch: 2 });
      }),
    );

    it(
      'marking a Todo done releases its lease in the same step',
      withAuthority(async (a) => {
        await a.claim(claimInput('codex:s1', 't1'), T0);
        const done = await a.setTodoStatus(GOAL, 'fix-login', 'done', T0 + 1, { by: 'codex:s1', identifiedBy: 'agent_environment', force: false });
        expect(done).toMatchObject({ kind: 'changed', todo: { status: 'done' }, released: { owner: 'codex:s1', status: 'released' } });
        expect(await a.activeLeaseOfOwner('codex:s1')).toBeUndefined();
        expect(lastReceipt(await a.receipts({ limit: 1 }))).toMatchObject({
          kind: 'lease_released',
          owner: 'codex:s1',
          detail: { reason: 'todo_done', forced: false, identifiedBy: 'agent_environment', requestedBy: 'codex:s1' },
        });
        expect(await a.setTodoStatus(GOAL, 'missing-todo', 'done', T0)).toBeUndefined();
        // Without any active lease no one needs to be identified.
        await a.addTodo({ goal: GOAL, id: 'write-docs', title: 'Write docs', body: '' }, T0 + 2);
        expect(await a.setTodoStatus(GOAL, 'write-docs', 'done', T0 + 3)).toMatchObject({ kind: 'changed', todo: { status: 'done' } });
      }),
    );

    it(
      "a status change releases another Owner's lease only as a release would (--force and a reason); refused, it changes nothing",
      withAuthority(async (a) => {
        await a.claim(claimInput('codex:s1', 't1'), T0);
        const head = (await a.receipts({ limit: 1 }))[0]!.seq;
        const refusals = [
          [undefined, 'not_owner'],
          [{ identifiedBy: 'unidentified', force: false }, 'not_owner'],
          [{ by: 'codex:s2', identifiedBy: 'agent_environment', force: false }, 'not_owner'],
          [{ identifiedBy: 'unidentified', force: true, reason: ' ' }, 'force_needs_reason'],
        ] as const;
        for (const status of ['done', 'blocked'] as const)
          for (const [request, why] of refusals)
            expect(await a.setTodoStatus(GOAL, 'fix-login', status, T0 + 1, request)).toMatchObject({
              kind: 'refused',
              why,
              lease: { owner: 'codex:s1', epoch: 1, status: 'active' },
            });
        expect(await a.getTodo(GOAL, 'fix-login')).toMatchObject({ status: 'open' });
        expect(await a.activeLeaseOfOwner('codex:s1')).toMatchObject({ epoch: 1, status: 'active' });
        expect((await a.receipts({ limit: 1 }))[0]!.seq).toBe(head);

        const forced = await a.setTodoStatus(GOAL, 'fix-login', 'done', T0 + 2, {
          by: 'codex:s2',
          identifiedBy: 'self_declared',
          requester: 'ops (uid 0)',
          force: true,
          reason: 'taken over by a person',
        });
        expect(forced).toMatchObject({ kind: 'changed', todo: { status: 'done' }, released: { owner: 'codex:s1', status: 'released' } });
        expect(lastReceipt(await a.receipts({ limit: 1 }))).toMatchObject({
          kind: 'lease_released',
          owner: 'codex:s1',
          detail: { reason: 'taken over by a person', forced: true, identifiedBy: 'force', requestedBy: 'codex:s2', requester: 'ops (uid 0)' },
        });
      }),
    );

    it(
      'renews for the owner at most once per interval',
      withAuthority(async (a) => {
        await a.claim(claimInput('codex:s1', 't1'), T0);
        expect(await a.renew('codex:s1', T0 + RENEWAL_INTERVAL_MS - 1, TTL)).toMatchObject({ kind: 'skipped', why: 'too_soon' });
        expect(await a.renew('codex:s2', T0 + RENEWAL_INTERVAL_MS, TTL)).toMatchObject({ kind: 'skipped' });
        expect(await a.renew('codex:s1', T0 + RENEWAL_INTERVAL_MS, TTL)).toMatchObject({
          kind: 'renewed',
          lease: { version: 2, expiresAt: T0 + RENEWAL_INTERVAL_MS + TTL * 1000 },
        });
      }),
    );

    it(
      'records proof of life no more often than asked, and carries it in a claim',
      withAuthority(async (a) => {
        const touch = { owner: 'codex:s1' as Owner, agent: 'codex' as const, session: 's1', goal: GOAL, cwd: GOAL, transcriptPath: '/t/s1.jsonl' };
        await a.touchSession(touch, T0, 15_000);
        await a.touchSession(touch, T0 + 1000, 15_000);
        expect(await a.getSession('codex:s1')).toMatchObject({ firstHookAt: T0, lastHookAt: T0 });
        await a.touchSession(touch, T0 + 16_000, 15_000);
        expect((await a.getSession('codex:s1'))?.lastHookAt).toBe(T0 + 16_000);
        await a.claim({ ...claimInput('codex:s2', 't1'), session: { ...touch, owner: 'codex:s2', session: 's2' } }, T0 + 17_000);
        expect((await a.getSession('codex:s2'))?.lastHookAt).toBe(T0 + 17_000);
        expect((await a.listSessions()).map((s) => s.owner).sort()).toStrictEqual(['codex:s1', 'codex:s2']);
      }),
    );

    it(
      'records a live state only when it changes (with its time), and a turn base until it is cleared',
      withAuthority(async (a) => {
        const touch = { owner: 'codex:s1' as Owner, agent: 'codex' as const, session: 's1', goal: GOAL, cwd: GOAL, transcriptPath: null };
        await a.touchSession({ ...touch, state: 'working' }, T0, 15_000);
        expect(await a.getSession('codex:s1')).toMatchObject({ state: 'working', stateAt: T0, turnBase: null });
        // The same state within the interval writes nothing; its time stays the first one even past it.
        await a.touchSession({ ...touch, state: 'working' }, T0 + 1000, 15_000);
        expect(await a.getSession('codex:s1')).toMatchObject({ lastHookAt: T0, stateAt: T0 });
        await a.touchSession({ ...touch, state: 'working' }, T0 + 16_000, 15_000);
        expect(await a.getSession('codex:s1')).toMatchObject({ lastHookAt: T0 + 16_000, state: 'working', stateAt: T0 });
        // Control: a changed state is written at once, within the interval, with its time.
        await a.touchSession({ ...touch, state: 'waiting' }, T0 + 17_000, 15_000);
        expect(await a.getSession('codex:s1')).toMatchObject({ lastHookAt: T0 + 17_000, state: 'waiting', stateAt: T0 + 17_000 });
        // No state given (a SessionStart) keeps the stored one.
        await a.touchSession(touch, T0 + 40_000, 15_000);
        expect(await a.getSession('codex:s1')).toMatchObject({ lastHookAt: T0 + 40_000, state: 'waiting', stateAt: T0 + 17_000 });
        // A turn base is written when given, kept by touches without one, and cleared by null.
        const base = { turn: 't1', at: T0 + 41_000, head: 'a'.repeat(40), tree: 'b'.repeat(40) };
        await a.touchSession({ ...touch, state: 'working', turnBase: base }, T0 + 41_000, 15_000);
        await a.touchSession({ ...touch, state: 'working' }, T0 + 60_000, 15_000);
        expect((await a.getSession('codex:s1'))?.turnBase).toEqual(base);
        await a.appendReceipt({ kind: 'turn_ended', goal: GOAL, todo: 'fix-login', owner: 'codex:s1', detail: { changed: 0 } }, T0 + 61_000, {
          ...touch,
          state: 'stopped',
          turnBase: null,
        });
        expect(await a.getSession('codex:s1')).toMatchObject({ state: 'stopped', stateAt: T0 + 61_000, turnBase: null });
        // A Todo's own receipts, newest first, of every kind.
        await a.appendReceipt({ kind: 'turn_ended', goal: GOAL, todo: 'other-todo', owner: 'codex:s1' }, T0 + 62_000);
        const ofTodo = await a.receiptsOfTodo(GOAL, 'fix-login', 10);
        // (The suite's Todo was added first; the other Todo's receipt is not among them.)
        expect(ofTodo.map((row) => (JSON.parse(row.doc) as ReceiptDocument).kind)).toEqual(['turn_ended', 'todo_added']);
        expect(ofTodo.every((row) => (JSON.parse(row.doc) as ReceiptDocument).todo === 'fix-login')).toBe(true);
      }),
    );

    it(
      'chains receipts, pages them newest first, and knows committed launches',
      withAuthority(async (a) => {
        const input = claimInput('codex:s1', 't1');
        await a.claim(input, T0);
        expect(await a.launchReceipts(input.capture.captureId)).toStrictEqual([]);
        const committed = await a.appendReceipt(
          { kind: 'launch_committed', goal: GOAL, todo: 'fix-login', capture: input.capture.captureId, detail: { launch: 'launch_00000000000000aa' } },
          T0 + 1,
        );
        expect(await a.launchReceipts(input.capture.captureId)).toStrictEqual([
          {
            seq: committed.seq,
            kind: 'launch_committed',
            goal: GOAL,
            capture: input.capture.captureId,
            todo: 'fix-login',
            agent: null,
            launch: 'launch_00000000000000aa',
            at: T0 + 1,
            // What the receipt says of its process: none of it here (liveness then says not live).
            process: { seq: committed.seq, launch: 'launch_00000000000000aa', pid: null, host: null, machine: null, boot: null, pidStart: null },
          },
        ]);
        expect(await a.launches()).toMatchObject([{ launch: 'launch_00000000000000aa', hooked: false }]);
        const launch = await a.appendReceipt(
          { kind: 'launch_hooked', goal: GOAL, todo: 'fix-login', capture: input.capture.captureId, detail: { launch: 'launch_00000000000000aa' } },
          T0 + 2,
        );
        expect(await a.launches()).toMatchObject([{ launch: 'launch_00000000000000aa', hooked: true }]);
        const page = await a.receipts({ limit: 2 });
        expect(page.map((row) => row.seq)).toStrictEqual([launch.seq, launch.seq - 1]);
        const next = await a.receipts({ beforeSeq: page[1]!.seq, limit: 100 });
        expect(next[0]!.seq).toBe(launch.seq - 2);
        expect(next.at(-1)!.seq).toBe(1);
        expect(await a.verifyChain()).toMatchObject({ ok: true, verified: launch.seq, breaks: [] });
        const partial = await a.verifyChain({ seq: 2, hash: (JSON.parse((await a.receipts({ beforeSeq: 4, limit: 1 }))[0]!.doc) as ReceiptDocument).prevHash });
        expect(partial).toMatchObject({ ok: true, verified: launch.seq - 2 });
        expect((await a.health()).receipts).toBe(launch.seq);
      }),
    );

    it(
      'walks the chain while other calls of the same authority run (the extension refreshes while a command writes)',
      withAuthority(async (a) => {
        await a.claim(claimInput('codex:s1', 't1'), T0);
        const [first, second] = await Promise.all([
          a.verifyChain(),
          a.verifyChain(),
          a.addTodo({ goal: GOAL, id: 'write-docs', title: 'Write docs', body: '' }, T0 + 1),
          a.setTodoStatus(GOAL, 'write-docs', 'blocked', T0 + 2),
        ]);
        expect(first).toMatchObject({ ok: true, breaks: [] });
        expect(second).toMatchObject({ ok: true, breaks: [] });
        expect(await a.getTodo(GOAL, 'write-docs')).toMatchObject({ status: 'blocked' });
      }),
    );

    // Issue 20 item 5: dependencies and the next Todo. Waiting is derived from the edges when read.
    const ids = (todos: readonly { id: string }[]) => todos.map((todo) => todo.id);
    const kindsOf = async (a: Authority) => (await a.receipts({ limit: 1000 })).map((row) => JSON.parse(row.doc) as ReceiptDocument);

    it(
      'a Todo added --after others waits until each is done: next lists the ready ones oldest first, and a claim of a waiting one is refused naming them',
      withAuthority(async (a) => {
        await a.addTodo({ goal: GOAL, id: 'schema', title: 'Schema', body: '' }, T0 + 1);
        await a.addTodo({ goal: GOAL, id: 'migrate', title: 'Migrate', body: '', after: ['schema'] }, T0 + 2);
        await a.addTodo({ goal: GOAL, id: 'deploy', title: 'Deploy', body: '', after: ['schema', 'migrate', 'schema'] }, T0 + 3);
        expect(ids(await a.readyTodos(GOAL, 10))).toStrictEqual(['fix-login', 'schema']);
        expect(ids(await a.readyTodos(GOAL, 1))).toStrictEqual(['fix-login']);
        expect(await a.dependenciesOfLive(GOAL)).toStrictEqual([
          { goal: GOAL, todo: 'deploy', dependency: 'migrate', status: 'open' },
          { goal: GOAL, todo: 'deploy', dependency: 'schema', status: 'open' },
          { goal: GOAL, todo: 'migrate', dependency: 'schema', status: 'open' },
        ]);
        const added = (await kindsOf(a)).find((doc) => doc.kind === 'todo_added' && doc.todo === 'deploy');
        expect(added?.detail).toStrictEqual({ after: 'schema migrate' });

        expect(await a.claim(claimInput('codex:s1', 't1', 'deploy'), T0 + 4)).toStrictEqual({
          kind: 'todo_blocked',
          status: 'open',
          waitingOn: ['migrate', 'schema'],
          blockReason: null,
        });
        expect(await a.activeLeaseCount(GOAL)).toBe(0);
        const refusal = (await kindsOf(a))[0]!;
        expect(refusal).toMatchObject({ kind: 'claim_refused', todo: 'deploy', detail: { reason: 'todo_blocked', waitingOn: 'migrate schema' } });

        // A held Todo is not ready (someone works on it); done, its dependants are.
        expect((await a.claim(claimInput('codex:s1', 't1', 'schema'), T0 + 5)).kind).toBe('acquired');
        expect(ids(await a.readyTodos(GOAL, 10))).toStrictEqual(['fix-login']);
        expect((await a.setTodoStatus(GOAL, 'schema', 'done', T0 + 6, { by: 'codex:s1', identifiedBy: 'agent_environment', force: false }))?.kind).toBe(
          'changed',
        );
        expect(ids(await a.readyTodos(GOAL, 10))).toStrictEqual(['fix-login', 'migrate']);
        expect((await a.claim(claimInput('codex:s2', 't2', 'deploy'), T0 + 7)).kind).toBe('todo_blocked');
        await a.setTodoStatus(GOAL, 'migrate', 'done', T0 + 8);
        expect(ids(await a.readyTodos(GOAL, 10))).toStrictEqual(['fix-login', 'deploy']);
        // The control: the same claim, its dependencies done, acquires.
        expect((await a.claim(claimInput('codex:s2', 't3', 'deploy'), T0 + 9)).kind).toBe('acquired');
        // A dependency reopened: its open dependants wait again, derived at once; the holder keeps its lease.
        await a.setTodoStatus(GOAL, 'schema', 'open', T0 + 10);
        expect((await a.dependenciesOfLive(GOAL)).filter((edge) => edge.status !== 'done').map((edge) => edge.todo)).toStrictEqual(['deploy']);
        expect(await a.claim(claimInput('codex:s2', 't3', 'deploy'), T0 + 11)).toMatchObject({ kind: 'replayed' });
        // Another Goal's Todos are not this Goal's next.
        await a.addTodo({ goal: '/other', id: 'theirs', title: 'Theirs', body: '' }, T0 + 12);
        expect(ids(await a.readyTodos(GOAL, 10))).toStrictEqual(['fix-login', 'schema']);
      }),
    );

    it(
      'refuses a dependency on an unknown Todo, on itself, or one that closes a cycle, with a typed error and nothing changed',
      withAuthority(async (a) => {
        const before = (await a.receipts({ limit: 1000 })).length;
        const refusal = (promise: Promise<unknown>) =>
          promise.then(
            () => undefined,
            (error: unknown) => (error instanceof TodoDependencyError ? { why: error.why, ids: error.ids } : error),
          );
        expect(await refusal(a.addTodo({ goal: GOAL, id: 'later', title: 'Later', body: '', after: ['fix-login', 'no-such'] }, T0 + 1))).toStrictEqual({
          why: 'unknown_todo',
          ids: ['no-such'],
        });
        expect(await refusal(a.addTodo({ goal: GOAL, id: 'later', title: 'Later', body: '', after: ['later'] }, T0 + 1))).toStrictEqual({
          why: 'cycle',
          ids: ['later', 'later'],
        });
        // Another Goal's Todo of the same id is no dependency of this Goal's.
        await a.addTodo({ goal: '/other', id: 'theirs', title: 'Theirs', body: '' }, T0 + 1);
        expect(await refusal(a.addTodo({ goal: GOAL, id: 'later', title: 'Later', body: '', after: ['theirs'] }, T0 + 1))).toMatchObject({
          why: 'unknown_todo',
        });
        expect(await a.getTodo(GOAL, 'later')).toBeUndefined();
        expect((await a.receipts({ limit: 1000 })).length).toBe(before + 1);

        await a.addTodo({ goal: GOAL, id: 'api', title: 'API', body: '', after: ['fix-login'] }, T0 + 2);
        await a.addTodo({ goal: GOAL, id: 'ui', title: 'UI', body: '', after: ['api'] }, T0 + 3);
        await a.addTodo({ goal: GOAL, id: 'docs', title: 'Docs', body: '' }, T0 + 4);
        const edges = await a.dependenciesOfLive(GOAL);
        // fix-login after ui would be fix-login -> ui -> api -> fix-login.
        expect(await refusal(a.changeDependencies(GOAL, 'fix-login', { add: ['docs', 'ui'] }, T0 + 5))).toStrictEqual({
          why: 'cycle',
          ids: ['fix-login', 'ui', 'api', 'fix-login'],
        });
        expect(await a.dependenciesOfLive(GOAL)).toStrictEqual(edges);
        // The control: an edge that closes no cycle is added, with its receipt.
        expect(await a.changeDependencies(GOAL, 'fix-login', { add: ['docs'] }, T0 + 6)).toMatchObject({ added: ['docs'], removed: [], waitingOn: ['docs'] });
        expect((await kindsOf(a))[0]).toMatchObject({
          kind: 'todo_dependencies_changed',
          todo: 'fix-login',
          detail: { added: 'docs', removed: '', waitingOn: 'docs' },
        });
        // Removing one, and asking for nothing new: the second writes no receipt.
        expect(await a.changeDependencies(GOAL, 'ui', { remove: ['api', 'docs'] }, T0 + 7)).toMatchObject({ removed: ['api'], waitingOn: [] });
        const count = (await a.receipts({ limit: 1000 })).length;
        expect(await a.changeDependencies(GOAL, 'ui', { remove: ['api'] }, T0 + 8)).toMatchObject({ added: [], removed: [] });
        expect((await a.receipts({ limit: 1000 })).length).toBe(count);
        // Now fix-login after ui closes no cycle.
        expect((await a.changeDependencies(GOAL, 'fix-login', { add: ['ui'] }, T0 + 9))?.added).toStrictEqual(['ui']);
        expect(await a.changeDependencies(GOAL, 'no-such', { add: ['ui'] }, T0 + 10)).toBeUndefined();
      }),
    );

    it(
      'two halves of a cycle written at once: one is refused, whichever comes second',
      withAuthority(async (a) => {
        await a.addTodo({ goal: GOAL, id: 'left', title: 'Left', body: '' }, T0 + 1);
        const results = await Promise.allSettled([
          a.changeDependencies(GOAL, 'fix-login', { add: ['left'] }, T0 + 2),
          a.changeDependencies(GOAL, 'left', { add: ['fix-login'] }, T0 + 2),
        ]);
        expect(results.map((result) => result.status).sort()).toStrictEqual(['fulfilled', 'rejected']);
        const rejected = results.find((result) => result.status === 'rejected')!;
        expect(rejected.reason).toBeInstanceOf(TodoDependencyError);
        expect(await a.dependenciesOfLive(GOAL)).toHaveLength(1);
      }),
    );

    it(
      "goal move carries the edges (both ends' Goal, by the foreign keys' cascade) and a renamed colliding Todo's",
      withAuthority(async (a) => {
        const OLD = '/old-goal';
        await a.addTodo({ goal: OLD, id: 'schema', title: 'Schema', body: '' }, T0);
        await a.addTodo({ goal: OLD, id: 'fix-login', title: 'Old fix', body: '', after: ['schema'] }, T0 + 1);
        await a.addTodo({ goal: OLD, id: 'deploy', title: 'Deploy', body: '', after: ['schema', 'fix-login'] }, T0 + 2);
        const to = { goal: GOAL, place: GOAL, checkout: GOAL, commonDir: null, goalKey: `local:${GOAL}`, displayName: 'repo' };
        expect(await a.moveGoal(OLD, to, T0 + 3, { renameCollidingWith: 'moved' })).toMatchObject({
          kind: 'moved',
          renamed: [{ from: 'fix-login', to: 'fix-login-moved' }],
        });
        expect((await a.dependenciesOfLive(GOAL)).map((edge) => `${edge.todo}>${edge.dependency}:${edge.status}`)).toStrictEqual([
          'deploy>fix-login-moved:open',
          'deploy>schema:open',
          'fix-login-moved>schema:open',
        ]);
        expect(await a.dependenciesOfLive(OLD)).toStrictEqual([]);
        // GOAL's own fix-login (added by withAuthority) waits on nothing and is ready.
        expect(ids(await a.readyTodos(GOAL, 10))).toStrictEqual(['fix-login', 'schema']);
      }),
    );

    it(
      "a person's block keeps its reason, refuses claims naming it, releases the holder's lease, and unblocking clears it",
      withAuthority(async (a) => {
        expect((await a.claim(claimInput('codex:s1', 't1'), T0)).kind).toBe('acquired');
        // Another Owner's lease: refused without force, nothing changed.
        expect(
          await a.blockTodo(GOAL, 'fix-login', 'needs the API key', T0 + 1, { by: 'codex:s2', identifiedBy: 'self_declared', force: false }),
        ).toMatchObject({
          kind: 'refused',
          why: 'not_owner',
        });
        expect(await a.getTodo(GOAL, 'fix-login')).toMatchObject({ status: 'open' });
        const blocked = await a.blockTodo(GOAL, 'fix-login', 'needs the API key', T0 + 2, { by: 'codex:s1', identifiedBy: 'agent_environment', force: false });
        expect(blocked).toMatchObject({ kind: 'changed', todo: { status: 'blocked', blockReason: 'needs the API key' }, released: { owner: 'codex:s1' } });
        expect(await a.getTodo(GOAL, 'fix-login')).toMatchObject({ status: 'blocked', blockReason: 'needs the API key' });
        expect((await kindsOf(a)).find((doc) => doc.kind === 'todo_status_changed')).toMatchObject({
          detail: { from: 'open', to: 'blocked', reason: 'needs the API key' },
        });
        expect(await a.claim(claimInput('codex:s2', 't2'), T0 + 3)).toStrictEqual({
          kind: 'todo_blocked',
          status: 'blocked',
          waitingOn: [],
          blockReason: 'needs the API key',
        });
        expect(ids(await a.todosWithStatus('blocked', GOAL))).toStrictEqual(['fix-login']);
        expect(await a.readyTodos(GOAL, 10)).toStrictEqual([]);
        const reopened = await a.setTodoStatus(GOAL, 'fix-login', 'open', T0 + 4);
        expect(reopened).toMatchObject({ kind: 'changed', todo: { status: 'open' } });
        expect(reopened?.todo).not.toHaveProperty('blockReason');
        expect(await a.getTodo(GOAL, 'fix-login')).not.toHaveProperty('blockReason');
        expect((await a.claim(claimInput('codex:s2', 't2'), T0 + 5)).kind).toBe('acquired');
      }),
    );
  });
}
