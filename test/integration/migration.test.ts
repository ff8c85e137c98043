// Issue 8: a store written by the previous release (schema user_version 1, Goals keyed by the
// checkout *path*) is opened by this release through the real CLI. It is migrated once, on first
// open: schema v2, then each path Goal mapped to its repository's Goal id with one `goal_migrated`
// receipt, receipts never rewritten, v1 captures keeping their documents and ids, and the lease held
// before the upgrade still holding (and presented, and resumable) after it. Also resume's
// [checkout_missing] for a removed worktree, with the command that recreates it.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { canonicalJson, digestText } from '../../src/core/canonical';
import { claimOperationId } from '../../src/core/capture';
import { buildReadyCapture, type HistoryEntry } from '../../src/core/ready';
import { buildReceipt, parseReceipt, type ReceiptDocument, type ReceiptFields } from '../../src/core/receipts';
import { resolveGoal } from '../../src/checkout/goal';
import { preconditionsOf } from '../../src/checkout/workspace';
import { leafHash } from '../../src/core/merkle';
import { MIGRATIONS, SCHEMA_VERSION } from '../../src/store/schema';
import { contextOf, makeWorld, payload, type World } from '../support/world';

let world: World;
beforeEach(() => {
  world = makeWorld('migration');
});
afterEach(() => world.cleanup());

const git = (cwd: string, ...args: string[]) => execFileSync('git', ['-C', cwd, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
const TTL_MS = 45 * 60 * 1000;

interface LegacyClaim {
  readonly path: string;
  readonly todo: string;
  readonly session: string;
  /** Claimed (a capture, an active lease, its ready capture, a session) or only added. */
  readonly claimed: boolean;
}
interface LegacyCapture {
  readonly id: string;
  readonly doc: string;
  readonly presentation: string;
  readonly transcript: string;
}

/**
 * Writes a store exactly as the previous release did: schema v1 only (MIGRATIONS[0]), user_version 1,
 * WAL, every row and receipt keyed by the checkout path, receipts chained with the same builder.
 */
function writeLegacyStore(claims: readonly LegacyClaim[], userVersion = 1): Map<string, LegacyCapture> {
  mkdirSync(world.home, { recursive: true, mode: 0o700 });
  const db = new Database(world.db);
  db.pragma('journal_mode = WAL');
  db.exec(MIGRATIONS[0]!);
  db.pragma(`user_version = ${userVersion}`);
  const t0 = Date.now() - 60_000;
  let head: { seq: number; hash: string } | undefined;
  let clock = t0;
  const append = (fields: ReceiptFields) => {
    const receipt = buildReceipt(head, fields, (clock += 10));
    db.prepare('INSERT INTO receipts (seq, doc, hash) VALUES (?, ?, ?)').run(receipt.document.seq, receipt.text, receipt.hash);
    db.prepare('INSERT INTO receipt_index (seq, goal, todo, capture, kind) VALUES (?, ?, ?, ?, ?)').run(
      receipt.document.seq,
      fields.goal,
      fields.todo ?? null,
      fields.capture ?? null,
      fields.kind,
    );
    head = { seq: receipt.document.seq, hash: receipt.hash };
    db.prepare('INSERT INTO receipt_head (id, seq, hash) VALUES (1, ?, ?) ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash').run(
      head.seq,
      head.hash,
    );
    return receipt.document;
  };
  const captures = new Map<string, LegacyCapture>();
  for (const claim of claims) {
    const { path, todo, session } = claim;
    const title = `Title of ${todo}`;
    db.prepare("INSERT INTO todos (goal, id, title, body, status, created_at, updated_at) VALUES (?, ?, ?, '', 'open', ?, ?)").run(
      path,
      todo,
      title,
      clock,
      clock,
    );
    const added = append({ kind: 'todo_added', goal: path, todo });
    if (!claim.claimed) continue;

    // A v1 capture: cwd and binding in its identity, the Goal a path.
    const doc = canonicalJson({ schema: 'turnkeeper.capture/v1', goal: path, todo, agent: 'codex', session, turn: 'turn-1', cwd: path, binding: 'prompt' });
    const originalDigest = digestText(doc);
    const id = 'cap_' + originalDigest.slice('sha256:'.length, 'sha256:'.length + 24);
    const op = claimOperationId(originalDigest);
    const owner = `codex:${session}` as const;
    const acquiredAt = clock + 5;
    db.prepare(
      'INSERT INTO captures (id, goal, todo, agent, session, turn, cwd, binding, doc, original_digest, op, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    ).run(id, path, todo, 'codex', session, 'turn-1', path, 'prompt', doc, originalDigest, op, acquiredAt);
    db.prepare(
      "INSERT INTO leases (goal, todo, epoch, owner, capture, version, status, acquired_at, renewed_at, expires_at) VALUES (?, ?, 1, ?, ?, 1, 'active', ?, ?, ?)",
    ).run(path, todo, owner, id, acquiredAt, acquiredAt, acquiredAt + TTL_MS);
    const history: HistoryEntry[] = [{ seq: added.seq, kind: added.kind, at: added.at, owner: added.owner, epoch: added.lease?.epoch }];
    const ready = buildReadyCapture({
      capture: id,
      originalDigest,
      lease: { owner, epoch: 1 },
      todo: { id: todo, title, body: '' },
      goal: path,
      history,
      preconditions: preconditionsOf(path),
    });
    db.prepare('INSERT INTO ready_captures (capture, doc, presentation, ready_digest) VALUES (?, ?, ?, ?)').run(
      id,
      ready.canonical,
      ready.presentation,
      ready.readyDigest,
    );
    const transcript = join(world.root, `${session}.jsonl`);
    writeFileSync(transcript, '{"type":"session"}\n');
    db.prepare('INSERT INTO sessions (owner, agent, session, goal, cwd, transcript_path, first_hook_at, last_hook_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)').run(
      owner,
      'codex',
      session,
      path,
      path,
      transcript,
      acquiredAt,
      acquiredAt,
    );
    const common = { goal: path, todo, capture: id, owner, op };
    const leaseRef = { epoch: 1, version: 1 };
    append({ kind: 'capture_bound', ...common, detail: { originalDigest, turn: 'turn-1', binding: 'prompt', cwd: path } });
    append({ kind: 'lease_acquired', ...common, lease: leaseRef, detail: { expiresAt: new Date(acquiredAt + TTL_MS).toISOString() } });
    append({ kind: 'ready_written', ...common, lease: leaseRef, detail: { readyDigest: ready.readyDigest } });
    captures.set(todo, { id, doc, presentation: ready.presentation, transcript });
  }
  db.close();
  return captures;
}

type Row = { seq: number; doc: string; hash: string };
function rawRead<T>(read: (db: Database.Database) => T): T {
  const db = new Database(world.db, { readonly: true, fileMustExist: true });
  try {
    return read(db);
  } finally {
    db.close();
  }
}
const receiptRows = () => rawRead((db) => db.prepare('SELECT seq, doc, hash FROM receipts ORDER BY seq').all() as Row[]);
const receiptDocs = (): ReceiptDocument[] => receiptRows().map((row) => parseReceipt(row.doc)!);

function prompt(session: string, turn: string, text: string, cwd = world.repo): string {
  const input = JSON.parse(payload.codexPrompt(world, session, turn, text)) as Record<string, unknown>;
  input.cwd = cwd;
  return JSON.stringify(input);
}
function statusLeases() {
  const run = world.cli(['status', '--json']);
  expect(run.code, run.stderr).toBe(0);
  return (
    JSON.parse(run.stdout) as { leases: { goal: string; todo: string; owner: string; capture: string; epoch: number; status: string; checkout?: string }[] }
  ).leases;
}
const dryRun = (capture: string) => {
  const run = world.cli(['resume', capture, '--dry-run', '--json', '--agent-bin', '/bin/true']);
  return { code: run.code, ...(JSON.parse(run.stdout) as { ok: boolean; decision: string; reason?: string; guidance?: string }) };
};

describe('a store of the previous release (user_version 1, Goals keyed by path)', () => {
  it('is migrated on first open: the lease holds under the Goal id, receipts are untouched, the v1 capture keeps its id and is presented and resumable', () => {
    const capture = writeLegacyStore([{ path: world.repo, todo: 'fix-login', session: 'sess-m', claimed: true }]).get('fix-login')!;
    const before = receiptRows();
    expect(before.map((row) => parseReceipt(row.doc)!.kind)).toStrictEqual(['todo_added', 'capture_bound', 'lease_acquired', 'ready_written']);
    expect(rawRead((db) => db.pragma('user_version', { simple: true }))).toBe(1);

    // The first process after the upgrade.
    expect(statusLeases()).toStrictEqual([
      expect.objectContaining({
        goal: world.goal,
        todo: 'fix-login',
        owner: 'codex:sess-m',
        capture: capture.id,
        epoch: 1,
        status: 'active',
        checkout: world.repo,
      }),
    ]);
    expect(rawRead((db) => db.pragma('user_version', { simple: true }))).toBe(SCHEMA_VERSION);
    expect(SCHEMA_VERSION).toBe(6);
    // v3: the receipts written before get their Merkle tree rows (one leaf each, nodes over them).
    const tree = rawRead(
      (db) => db.prepare('SELECT level, idx, hash FROM receipt_tree ORDER BY level, idx').all() as { level: number; idx: number; hash: Buffer }[],
    );
    const docs = receiptRows().map((row) => row.doc);
    expect(tree.filter((row) => row.level === 0).map((row) => Buffer.from(row.hash).toString('hex'))).toEqual(
      docs.map((doc) => Buffer.from(leafHash(Buffer.from(doc, 'utf8'))).toString('hex')),
    );

    // Receipts: the four old rows byte for byte, then exactly one goal_migrated; the chain verifies.
    const after = receiptRows();
    expect(after.slice(0, 4)).toStrictEqual(before);
    const migrated = after.slice(4).map((row) => parseReceipt(row.doc)!);
    expect(migrated).toStrictEqual([
      expect.objectContaining({ kind: 'goal_migrated', goal: world.goal, detail: { from: world.repo, key: resolveGoal(world.repo).key } }),
    ]);
    const verify = world.cli(['verify', '--json']);
    expect(JSON.parse(verify.stdout)).toStrictEqual({ ok: true, verified: 5, breaks: [] });
    // The old receipts still name the path: history is not rewritten.
    expect(
      receiptDocs()
        .slice(0, 4)
        .every((doc) => doc.goal === world.repo),
    ).toBe(true);

    // The v1 capture keeps its id and its document (the path inside it included).
    const show = world.cli(['show', capture.id, '--json']);
    expect(show.code, show.stderr).toBe(0);
    const shown = JSON.parse(show.stdout) as { captureId: string; capture: unknown; originalDigest: string; readyIntact: boolean; presentation: string };
    expect(shown).toMatchObject({ captureId: capture.id, originalDigest: digestText(capture.doc), readyIntact: true, presentation: capture.presentation });
    expect(shown.capture).toStrictEqual(JSON.parse(capture.doc));
    expect(rawRead((db) => (db.prepare('SELECT doc FROM captures WHERE id = ?').get(capture.id) as { doc: string }).doc)).toBe(capture.doc);
    // Its Todo is listed in the repository.
    expect((JSON.parse(world.cli(['todo', 'list', '--json']).stdout) as { id: string; goal: string }[]).map((t) => [t.goal, t.id])).toStrictEqual([
      [world.goal, 'fix-login'],
    ]);

    // Rule 4: the holder's next hooks present the ready capture stored by the previous release, byte for byte.
    expect(contextOf(world.cli(['hook'], { input: prompt('sess-m', 'turn-2', 'carry on') }).stdout)).toBe(capture.presentation);
    expect(contextOf(world.cli(['hook'], { input: prompt('sess-m', 'turn-3', 'go on with #todo:fix-login') }).stdout)).toBe(capture.presentation);
    // Another session is held off by the migrated lease.
    const other = contextOf(world.cli(['hook'], { input: prompt('sess-x', 'turn-1', '#todo:fix-login') }).stdout)!;
    expect(other).toContain('[lease_held]');
    expect(other).toContain('codex:sess-m');

    // Resume checks pass for the migrated capture (its checkout is the path it ran in).
    expect(dryRun(capture.id)).toMatchObject({ code: 0, ok: true, decision: 'dry_run' });

    // Control that the epoch history came along too: after a release the next claim is epoch 2, not 1.
    expect(world.cli(['release', 'fix-login', '--force', '--reason', 'after the upgrade']).code).toBe(0);
    expect(contextOf(world.cli(['hook'], { input: prompt('sess-x', 'turn-2', '#todo:fix-login') }).stdout)).toMatch(
      /^Turnkeeper: Todo fix-login · capture cap_[0-9a-f]{24} · epoch 2$/m,
    );
    expect(receiptDocs().filter((doc) => doc.kind === 'goal_migrated')).toHaveLength(1);
    expect(JSON.parse(world.cli(['verify', '--json']).stdout)).toMatchObject({ ok: true, breaks: [] });
  });

  it('8 hooks racing to be the first process after the upgrade: one migration, one goal_migrated receipt, the holder presented', async () => {
    const capture = writeLegacyStore([{ path: world.repo, todo: 'fix-login', session: 'sess-m', claimed: true }]).get('fix-login')!;
    const runs = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        world.cliAsync(['hook'], { input: i === 0 ? prompt('sess-m', 'turn-2', 'carry on') : prompt(`sess-${i}`, 'turn-1', '#todo:fix-login') }),
      ),
    );
    for (const run of runs) expect(run.stderr).not.toMatch(/internal error|SQLITE/);
    expect(contextOf(runs[0]!.stdout)).toBe(capture.presentation);
    for (const run of runs.slice(1)) expect(contextOf(run.stdout)).toContain('[lease_held]');
    expect(receiptDocs().filter((doc) => doc.kind === 'goal_migrated')).toHaveLength(1);
    expect(statusLeases()).toHaveLength(1);
    expect(JSON.parse(world.cli(['verify', '--json']).stdout)).toMatchObject({ ok: true, breaks: [] });
  });

  it('path Goals of two worktrees of one repository become its one Goal; a Todo id both had is left under its path, not merged or lost', () => {
    const wt = join(world.root, 'wt1');
    git(world.repo, 'worktree', 'add', '-q', '-b', 'feature', wt);
    writeLegacyStore([
      { path: world.repo, todo: 'fix-login', session: 'sess-a', claimed: true },
      { path: wt, todo: 'add-search', session: 'sess-b', claimed: true },
      // The previous release let each checkout have its own Todo of this id.
      { path: world.repo, todo: 'write-docs', session: 'sess-c', claimed: false },
      { path: wt, todo: 'write-docs', session: 'sess-d', claimed: false },
    ]);
    const todos = () =>
      (JSON.parse(world.cli(['todo', 'list', '--all', '--json']).stdout) as { goal: string; id: string }[]).map((t) => `${t.goal} ${t.id}`).sort();
    const list = todos();
    // One path was adopted (every Todo of it); the other collides on write-docs and stays as it was.
    const adopted = receiptDocs().filter((doc) => doc.kind === 'goal_migrated');
    expect(adopted).toHaveLength(1);
    const [movedPath, leftPath] = adopted[0]!.detail!.from === world.repo ? [world.repo, wt] : [wt, world.repo];
    const movedTodo = movedPath === world.repo ? 'fix-login' : 'add-search';
    const leftTodo = movedPath === world.repo ? 'add-search' : 'fix-login';
    expect(list).toStrictEqual([`${world.goal} ${movedTodo}`, `${world.goal} write-docs`, `${leftPath} ${leftTodo}`, `${leftPath} write-docs`].sort());
    // Nothing was lost or broken: both leases are still active, the chain verifies.
    expect(
      statusLeases()
        .map((lease) => `${lease.goal} ${lease.todo} ${lease.status}`)
        .sort(),
    ).toStrictEqual([`${world.goal} ${movedTodo} active`, `${leftPath} ${leftTodo} active`].sort());
    expect(JSON.parse(world.cli(['verify', '--json']).stdout)).toMatchObject({ ok: true, breaks: [] });

    // The way through: doctor names the path left behind and the command; goal move without --rename
    // is refused on the collision (control), with --rename it carries everything over.
    const problems = () =>
      (JSON.parse(world.cli(['doctor', '--json']).stdout) as { problems: string[] }).problems.filter((p) => p.includes('still use that path'));
    expect(problems()).toHaveLength(1);
    expect(problems()[0]).toContain(`goal move --from ${leftPath} --rename moved`);
    expect(world.cli(['goal', 'move', '--from', leftPath, '--dir', leftPath]).code).toBe(1);
    const moved = world.cli(['goal', 'move', '--from', leftPath, '--rename', 'moved', '--dir', leftPath, '--json']);
    expect(moved.code, moved.stderr).toBe(0);
    expect(JSON.parse(moved.stdout)).toMatchObject({ ok: true, renamed: [{ from: 'write-docs', to: 'write-docs-moved' }] });
    expect(todos()).toStrictEqual(
      [`${world.goal} ${movedTodo}`, `${world.goal} ${leftTodo}`, `${world.goal} write-docs`, `${world.goal} write-docs-moved`].sort(),
    );
    expect(
      statusLeases()
        .filter((lease) => lease.status === 'active')
        .map((lease) => `${lease.goal} ${lease.todo}`)
        .sort(),
    ).toStrictEqual([`${world.goal} ${movedTodo}`, `${world.goal} ${leftTodo}`].sort());
    expect(problems()).toHaveLength(0);
    expect(JSON.parse(world.cli(['verify', '--json']).stdout)).toMatchObject({ ok: true, breaks: [] });
  });

  it('path Goals of two worktrees without a shared Todo id both map to the repository’s Goal', () => {
    const wt = join(world.root, 'wt1');
    git(world.repo, 'worktree', 'add', '-q', '-b', 'feature', wt);
    writeLegacyStore([
      { path: world.repo, todo: 'fix-login', session: 'sess-a', claimed: true },
      { path: wt, todo: 'add-search', session: 'sess-b', claimed: true },
    ]);
    const leases = statusLeases();
    expect(leases.map((lease) => [lease.goal, lease.todo, lease.status, lease.checkout]).sort()).toStrictEqual(
      [
        [world.goal, 'add-search', 'active', wt],
        [world.goal, 'fix-login', 'active', world.repo],
      ].sort(),
    );
    expect(
      receiptDocs()
        .filter((doc) => doc.kind === 'goal_migrated')
        .map((doc) => doc.detail!.from)
        .sort(),
    ).toStrictEqual([world.repo, wt].sort());
    // Both worktrees now see both Todos; one session per Todo still holds it.
    for (const cwd of [world.repo, wt]) {
      expect((JSON.parse(world.cli(['todo', 'list', '--json'], { cwd }).stdout) as { id: string }[]).map((t) => t.id).sort()).toStrictEqual([
        'add-search',
        'fix-login',
      ]);
    }
    expect(contextOf(world.cli(['hook'], { input: prompt('sess-x', 'turn-1', '#todo:add-search', world.repo) }).stdout)).toContain(`in ${wt} until`);
  });

  it('a store from a newer release is refused by the CLI and the hook, and left byte for byte as it was', () => {
    // The in-process refusal is in sqlite-authority.test.ts; this is the same through real processes,
    // with the file compared byte for byte.
    writeLegacyStore([{ path: world.repo, todo: 'fix-login', session: 'sess-m', claimed: true }], 99);
    const bytes = readFileSync(world.db);
    const status = world.cli(['status', '--json']);
    expect(status.code).toBe(1);
    expect(status.stderr).toMatch(/newer|version/i);
    const hook = world.cli(['hook'], { input: prompt('sess-x', 'turn-1', '#todo:fix-login') });
    expect(hook.code).toBe(0);
    expect(contextOf(hook.stdout)).toContain('[store_unavailable]');
    expect(readFileSync(world.db).equals(bytes)).toBe(true);
    expect(rawRead((db) => db.pragma('user_version', { simple: true }))).toBe(99);
    // Control: the same store at version 1 is opened and migrated.
    rawWrite((db) => db.pragma('user_version = 1'));
    expect(world.cli(['status', '--json']).code).toBe(0);
    expect(rawRead((db) => db.pragma('user_version', { simple: true }))).toBe(SCHEMA_VERSION);
  });
});

function rawWrite(write: (db: Database.Database) => void): void {
  const db = new Database(world.db, { fileMustExist: true });
  try {
    write(db);
  } finally {
    db.close();
  }
}

describe('a store of schema v4 (issue 19) upgraded to v5 (issue 20: dependencies)', () => {
  /** The schema's own statements, in a stable order: what a store is made of. */
  const schemaOf = () => rawRead((db) => db.prepare("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name").all());

  it("keeps every Todo, status, lease and receipt, verifies, and then takes dependencies; its schema is a new store's", () => {
    // A store written through the CLI and a real hook: Todos open, done and blocked, a held lease.
    for (const [title, id] of [
      ['Fix login', 'fix-login'],
      ['Write docs', 'write-docs'],
      ['Needs a key', 'needs-key'],
    ] as const)
      expect(world.cli(['todo', 'add', title, '--id', id]).code).toBe(0);
    const claim = world.cli(['hook', '--agent', 'codex'], { input: prompt('sess-v4', 'turn-1', 'work on #todo:fix-login') });
    expect(contextOf(claim.stdout)).toMatch(/^Turnkeeper: Todo fix-login · capture cap_/);
    expect(world.cli(['todo', 'done', 'write-docs']).code).toBe(0);
    const fresh = schemaOf();
    // Back to exactly what v4 made: v5 only adds a column and a table, v6 only session columns
    // (schema.ts), so removing them is v4.
    const db = new Database(world.db);
    db.exec('DROP TABLE todo_deps; ALTER TABLE todos DROP COLUMN block_reason;');
    for (const column of ['state', 'state_at', 'turn_id', 'turn_at', 'turn_head', 'turn_tree']) db.exec(`ALTER TABLE sessions DROP COLUMN ${column}`);
    db.prepare("UPDATE todos SET status = 'blocked' WHERE id = 'needs-key'").run();
    db.pragma('user_version = 4');
    db.close();
    const receipts = receiptRows();
    const todos = rawRead((db) => db.prepare('SELECT * FROM todos ORDER BY id').all() as Record<string, unknown>[]);
    const leases = rawRead((db) => db.prepare('SELECT * FROM leases').all());
    expect(rawRead((db) => db.prepare("SELECT name FROM sqlite_master WHERE name = 'todo_deps'").all())).toStrictEqual([]);

    // The first process after the upgrade.
    const list = world.cli(['todo', 'list', '--json']);
    expect(list.code, list.stderr).toBe(0);
    expect(rawRead((db) => db.pragma('user_version', { simple: true }))).toBe(SCHEMA_VERSION);
    expect((JSON.parse(list.stdout) as { id: string; status: string }[]).map((todo) => [todo.id, todo.status])).toStrictEqual([
      ['fix-login', 'open'],
      ['write-docs', 'done'],
      ['needs-key', 'blocked'],
    ]);
    expect(receiptRows()).toStrictEqual(receipts);
    expect(rawRead((db) => db.prepare('SELECT * FROM todos ORDER BY id').all())).toStrictEqual(todos.map((todo) => ({ ...todo, block_reason: null })));
    expect(rawRead((db) => db.prepare('SELECT * FROM leases').all())).toStrictEqual(leases);
    expect(schemaOf()).toStrictEqual(fresh);
    const verify = world.cli(['verify', '--json']);
    expect(verify.code, verify.stdout).toBe(0);

    // And the new rows work on the upgraded store: a dependency, refused cycles, the next Todo.
    expect(world.cli(['todo', 'add', 'Release', '--id', 'release', '--after', 'fix-login,needs-key']).code).toBe(0);
    const cycle = world.cli(['todo', 'block', 'fix-login', '--after', 'release', '--json']);
    expect(cycle.code).toBe(1);
    expect(JSON.parse(cycle.stdout)).toMatchObject({ ok: false, reason: 'dependency_cycle', ids: ['fix-login', 'release', 'fix-login'] });
    const next = world.cli(['next', '--json']);
    expect(next.code, next.stderr).toBe(0);
    // fix-login is held, needs-key blocked, write-docs done, release waits: nothing is ready.
    expect(JSON.parse(next.stdout)).toStrictEqual([]);
  });
});

describe('the live-status step (issue 20): session state and turn base columns', () => {
  // Found by what it adds, not by its number: another step may be merged before it.
  const step = MIGRATIONS.findIndex((sql) => sql.includes('ADD COLUMN state TEXT'));

  it('a store of the step before gets the columns; its sessions read with no state until their next hook, which records one', () => {
    expect(step).toBeGreaterThan(0);
    mkdirSync(world.home, { recursive: true, mode: 0o700 });
    const db = new Database(world.db);
    db.pragma('journal_mode = WAL');
    for (const sql of MIGRATIONS.slice(0, step)) db.exec(sql);
    db.pragma(`user_version = ${step}`);
    db.prepare('INSERT INTO sessions (owner, agent, session, goal, cwd, transcript_path, first_hook_at, last_hook_at) VALUES (?, ?, ?, ?, ?, NULL, 1, 1)').run(
      'codex:sess-old',
      'codex',
      'sess-old',
      world.goal,
      world.repo,
    );
    db.close();
    // Control: before the step the columns do not exist.
    expect(() => rawRead((raw) => raw.prepare('SELECT state FROM sessions').all())).toThrow(/no such column/);
    expect(world.cli(['status', '--json']).code).toBe(0);
    expect(rawRead((raw) => raw.pragma('user_version', { simple: true }))).toBe(SCHEMA_VERSION);
    expect(rawRead((raw) => raw.prepare('SELECT state, state_at, turn_at FROM sessions WHERE owner = ?').get('codex:sess-old'))).toEqual({
      state: null,
      state_at: null,
      turn_at: null,
    });
    // Its next hook records the state.
    const tool = JSON.stringify({
      session_id: 'sess-old',
      turn_id: 't-1',
      transcript_path: null,
      cwd: world.repo,
      hook_event_name: 'PostToolUse',
      model: 'm',
      permission_mode: 'default',
      tool_name: 'Bash',
    });
    expect(world.cli(['hook', '--agent', 'codex'], { input: tool }).code).toBe(0);
    expect(rawRead((raw) => raw.prepare('SELECT state FROM sessions WHERE owner = ?').get('codex:sess-old'))).toEqual({ state: 'working' });
  });
});

describe('resume of a capture whose worktree was removed', () => {
  it('[checkout_missing] with the command that recreates the worktree at its branch; after running it, resume passes', () => {
    const wt = join(world.root, 'wt-agent2');
    git(world.repo, 'worktree', 'add', '-q', '-b', 'fix-branch', wt);
    expect(world.cli(['todo', 'add', 'Fix login', '--id', 'fix-login']).code).toBe(0);
    writeFileSync(join(world.root, 'sess-w.jsonl'), '{"type":"session"}\n');
    const claim = world.cli(['hook'], { input: prompt('sess-w', 'turn-1', '#todo:fix-login', wt) });
    const capture = /capture (cap_[0-9a-f]{24})/.exec(contextOf(claim.stdout)!)![1]!;

    // Control: with its worktree in place the capture resumes (dry run).
    expect(dryRun(capture)).toMatchObject({ code: 0, ok: true, decision: 'dry_run' });

    git(world.repo, 'worktree', 'remove', '--force', wt);
    const refused = dryRun(capture);
    expect(refused).toMatchObject({ code: 1, ok: false, reason: 'checkout_missing' });
    const command = `git --git-dir=${join(world.repo, '.git')} worktree add ${wt} fix-branch`;
    expect(refused.guidance).toContain('[checkout_missing]');
    expect(refused.guidance).toContain(command);
    expect(receiptDocs().at(-1)).toMatchObject({ kind: 'resume_refused', capture, detail: { reason: 'checkout_missing' } });
    // The lease is not touched by the refusal.
    expect(statusLeases()).toStrictEqual([expect.objectContaining({ capture, status: 'active', epoch: 1, checkout: wt })]);

    // The guidance's command, as given, run from somewhere else entirely.
    execFileSync('sh', ['-c', command], { cwd: world.root, stdio: 'ignore' });
    expect(git(wt, 'symbolic-ref', '--short', 'HEAD').trim()).toBe('fix-branch');
    expect(dryRun(capture)).toMatchObject({ code: 0, ok: true, decision: 'dry_run' });
  });
});
