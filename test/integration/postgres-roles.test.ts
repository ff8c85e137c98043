// Who may change the receipt chain on a team server. `store init --hook-role` gives the role hooks
// connect as rows, receipts SELECT only and the append function (schema v2: the database checks every
// receipt extends the head, for every role); a trigger refuses UPDATE, DELETE and TRUNCATE
// of receipts to everyone who uses the tables, the owner and superusers included. What a superuser can
// still do is switch the trigger off (docs/team.md); verify then names the damage.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReceiptDocument } from '../../src/core/receipts';
import { like } from '../support/matchers';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { CLI, contextOf } from '../support/world';
import { usePostgres } from '../support/postgres';
import { makeMachine } from '../support/teamMachine';
import { PG_MIGRATIONS } from '../../src/store/postgresSchema';

const server = usePostgres({ beforeAll, afterAll });
const HOOK_ROLE = 'tk_hook';
const HOOK_PASSWORD = 'hook-role-pw-4471';
const DB = 'roles';
const READY = /^Turnkeeper: Todo fix-login · capture (cap_[0-9a-f]{24}) · epoch 1$/m;

let root: string;
let repo: string;
let baseEnv: Record<string, string>;

function cli(args: string[], store: string, input = ''): { code: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [CLI, ...args], { cwd: repo, env: { ...baseEnv, TURNKEEPER_STORE: store }, input, encoding: 'utf8' });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

const hookStore = () => server().url(DB, HOOK_ROLE, HOOK_PASSWORD);
const adminStore = () => server().url(DB);

async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  return client;
}

/** The SQLSTATE and message a statement fails with (it must fail). */
async function refusal(client: pg.Client, sql: string): Promise<{ code: string; message: string }> {
  try {
    await client.query(sql);
  } catch (error) {
    return { code: (error as { code: string }).code, message: (error as Error).message };
  }
  throw new Error(`${sql} was not refused`);
}

beforeAll(async () => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'tk-pg-roles-')));
  // store: each run names its own (the hook role's or the admin's) over this one.
  ({ checkout: repo, env: baseEnv } = makeMachine(join(root, 'machine'), { store: '', origin: 'https://example.invalid/acme/app.git' }));
  await server().createRole(HOOK_ROLE, HOOK_PASSWORD);
  await server().createDatabase(DB);
  const init = cli(['store', 'init', '--hook-role', HOOK_ROLE], adminStore());
  expect(init.code, init.stderr).toBe(0);
  expect(init.stdout).toContain(`grants for role ${HOOK_ROLE}`);
  // Everything below, as the hook role: a Todo and a real claim through a hook.
  const add = cli(['todo', 'add', 'Fix login', '--id', 'fix-login'], hookStore());
  expect(add.code, add.stderr).toBe(0);
}, 120_000);

afterAll(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

describe('the hook role', () => {
  it('claims through a real hook: its row writes and the append function work', () => {
    const prompt = JSON.stringify({
      session_id: 'role-session',
      turn_id: 'turn-1',
      transcript_path: join(root, 'role-session.jsonl'),
      cwd: repo,
      hook_event_name: 'UserPromptSubmit',
      model: 'gpt-test',
      permission_mode: 'default',
      prompt: 'please #todo:fix-login',
    });
    const run = cli(['hook'], hookStore(), prompt);
    expect(contextOf(run.stdout) ?? '', run.stdout + run.stderr).toMatch(READY);
    const verify = cli(['verify', '--json'], hookStore());
    expect(JSON.parse(verify.stdout)).toMatchObject({ ok: true, verified: 4, breaks: [] });
  });

  it('cannot UPDATE, DELETE or TRUNCATE receipts (nor switch the trigger off)', async () => {
    const hook = await connect(hookStore());
    try {
      const count = async () => Number((await hook.query<{ n: string }>('SELECT count(*) AS n FROM turnkeeper.receipts')).rows[0]!.n);
      const before = await count();
      expect(before).toBeGreaterThanOrEqual(4);
      for (const sql of [
        "UPDATE turnkeeper.receipts SET doc = replace(doc, 'role-session', 'someone-else') WHERE seq = 2",
        'DELETE FROM turnkeeper.receipts WHERE seq = (SELECT max(seq) FROM turnkeeper.receipts)',
        'TRUNCATE turnkeeper.receipts',
        'ALTER TABLE turnkeeper.receipts DISABLE TRIGGER ALL',
      ]) {
        const refused = await refusal(hook, sql);
        // 42501 insufficient_privilege: by the grants; ALTER TABLE needs the table's owner.
        expect(refused.code, sql).toBe('42501');
        expect(refused.message, sql).toMatch(/permission denied|must be owner/);
      }
      expect(await count()).toBe(before);
      expect(JSON.parse(cli(['verify', '--json'], hookStore()).stdout)).toMatchObject({ ok: true });
    } finally {
      await hook.end();
    }
  });
});

describe('the administrator', () => {
  it('control: can read the receipts the hook role wrote', async () => {
    const admin = await connect(adminStore());
    try {
      const rows = (await admin.query<{ doc: string }>('SELECT doc FROM turnkeeper.receipts ORDER BY seq')).rows;
      expect(rows.map((row) => (JSON.parse(row.doc) as ReceiptDocument).kind)).toStrictEqual(
        expect.arrayContaining(['todo_added', 'capture_bound', 'lease_acquired', 'ready_written']),
      );
    } finally {
      await admin.end();
    }
  });

  it('is refused UPDATE, DELETE and TRUNCATE too: the trigger holds append-only for everyone using the tables', async () => {
    const admin = await connect(adminStore());
    try {
      expect((await admin.query<{ super: boolean }>('SELECT rolsuper AS super FROM pg_roles WHERE rolname = current_user')).rows[0]!.super).toBe(true);
      for (const [sql, op] of [
        ["UPDATE turnkeeper.receipts SET doc = replace(doc, 'role-session', 'someone-else') WHERE seq = 2", 'UPDATE'],
        ['DELETE FROM turnkeeper.receipts WHERE seq = 1', 'DELETE'],
        ['TRUNCATE turnkeeper.receipts', 'TRUNCATE'],
      ] as const) {
        const refused = await refusal(admin, sql);
        expect(refused.message, sql).toBe(`turnkeeper receipts are append-only (${op} refused)`);
      }
      expect(JSON.parse(cli(['verify', '--json'], adminStore()).stdout)).toMatchObject({ ok: true, breaks: [] });
    } finally {
      await admin.end();
    }
  });

  it('a superuser can still disable the trigger and edit: verify names the damage', async () => {
    const admin = await connect(adminStore());
    try {
      // What the database cannot prevent: its superuser switches the trigger off. Detection is the chain's job.
      await admin.query('ALTER TABLE turnkeeper.receipts DISABLE TRIGGER ALL');
      await admin.query("UPDATE turnkeeper.receipts SET doc = replace(doc, 'role-session', 'someone-else') WHERE seq = 2");
      await admin.query('ALTER TABLE turnkeeper.receipts ENABLE TRIGGER ALL');
      const altered = cli(['verify', '--json'], hookStore());
      expect(altered.code).not.toBe(0);
      expect(JSON.parse(altered.stdout)).toMatchObject({ ok: false, breaks: like.arrayContaining([{ seq: 2, kind: 'content_altered' }]) });

      // The newest receipt removed: the head row still names it.
      const last = Number((await admin.query<{ n: string }>('SELECT max(seq) AS n FROM turnkeeper.receipts')).rows[0]!.n);
      await admin.query('ALTER TABLE turnkeeper.receipts DISABLE TRIGGER ALL');
      await admin.query('DELETE FROM turnkeeper.receipts WHERE seq = $1', [last]);
      await admin.query('ALTER TABLE turnkeeper.receipts ENABLE TRIGGER ALL');
      const truncated = JSON.parse(cli(['verify', '--json'], hookStore()).stdout) as { ok: boolean; breaks: { seq: number; kind: string }[] };
      expect(truncated.ok).toBe(false);
      expect(truncated.breaks).toStrictEqual(expect.arrayContaining([{ seq: 2, kind: 'content_altered' }, expect.objectContaining({ kind: 'head_mismatch' })]));
      // And the trigger is back: the same edit without switching it off is refused again.
      expect((await refusal(admin, 'DELETE FROM turnkeeper.receipts WHERE seq = 1')).message).toContain('append-only');
    } finally {
      await admin.end();
    }
  });
});

/** receipt_head's seq and hash, and the newest receipt's: they must name the same receipt. */
async function headAndLast(client: pg.Client): Promise<{ head: number; last: number }> {
  const row = (
    await client.query<{ head: string; last: string }>(
      'SELECT (SELECT seq FROM turnkeeper.receipt_head) AS head, (SELECT COALESCE(max(seq), 0) FROM turnkeeper.receipts) AS last',
    )
  ).rows[0]!;
  return { head: Number(row.head), last: Number(row.last) };
}

// A store of their own: the administrator's tests above leave theirs damaged on purpose.
const CHAIN_DB = 'chain';
const chainHookStore = () => server().url(CHAIN_DB, HOOK_ROLE, HOOK_PASSWORD);
const chainAdminStore = () => server().url(CHAIN_DB);

/** The store takes a write (a Todo) and verifies, as the hook role. */
function expectStoreWhole(id: string): void {
  const add = cli(['todo', 'add', `Whole after ${id}`, '--id', id], chainHookStore());
  expect(add.code, add.stderr).toBe(0);
  const verify = cli(['verify', '--json'], chainHookStore());
  expect(JSON.parse(verify.stdout), verify.stderr).toMatchObject({ ok: true, breaks: [] });
}

describe('the database enforces the chain (schema v2)', () => {
  beforeAll(async () => {
    await server().createDatabase(CHAIN_DB);
    const init = cli(['store', 'init', '--hook-role', HOOK_ROLE], chainAdminStore());
    expect(init.code, init.stderr).toBe(0);
    expectStoreWhole('first');
  });

  it('the hook role writes no receipt, lookup row or head directly: a junk row is refused and the store keeps working', async () => {
    const hook = await connect(chainHookStore());
    try {
      const { head } = await headAndLast(hook);
      for (const sql of [
        `INSERT INTO turnkeeper.receipts VALUES (${head + 1}, 'junk', 'junk')`,
        `INSERT INTO turnkeeper.receipt_index (seq, goal, kind) VALUES (${head + 1}, 'g', 'junk')`,
        `UPDATE turnkeeper.receipt_head SET seq = ${head + 1}`,
        // The Merkle tree is the trigger's (schema v3): the hook role only reads it.
        `INSERT INTO turnkeeper.receipt_tree (level, idx, hash) VALUES (0, ${head}, '\\x00')`,
        'UPDATE turnkeeper.receipt_tree SET hash = sha256(hash) WHERE level = 0 AND idx = 0',
        'DELETE FROM turnkeeper.receipt_tree',
      ]) {
        const refused = await refusal(hook, sql);
        expect(refused.code, sql).toBe('42501');
      }
      // Through the one function the hook role may call, junk is refused by the chain's own check.
      const junk = await refusal(
        hook,
        `SELECT turnkeeper.append_receipts(ARRAY[${head + 1}]::int8[], ARRAY['junk'], ARRAY['junk'], ARRAY['g'], ARRAY[NULL]::text[], ARRAY[NULL]::text[], ARRAY['junk'])`,
      );
      expect(junk).toMatchObject({ code: '23514', message: `turnkeeper receipt ${head + 1}: its hash is not the digest of its document` });
      expect(await headAndLast(hook)).toStrictEqual({ head, last: head });
    } finally {
      await hook.end();
    }
    expectStoreWhole('after-junk');
  });

  it('even the owner cannot insert a receipt that does not extend the head: a gap, a wrong prevHash, a wrong hash', async () => {
    const admin = await connect(chainAdminStore());
    try {
      const { head } = await headAndLast(admin);
      const headHash = (await admin.query<{ hash: string }>('SELECT hash FROM turnkeeper.receipt_head')).rows[0]!.hash;
      const doc = (seq: number, prevHash: string) =>
        JSON.stringify({ at: '2026-01-01T00:00:00.000Z', goal: 'g', kind: 'todo_added', prevHash, schema: 'turnkeeper.receipt/v1', seq });
      const insert = (seq: number, text: string, hash?: string) =>
        refusal(
          admin,
          `INSERT INTO turnkeeper.receipts VALUES (${seq}, $$${text}$$, ${hash ? `'${hash}'` : `'sha256:' || encode(sha256(convert_to($$${text}$$, 'UTF8')), 'hex')`})`,
        );
      expect(await insert(head + 2, doc(head + 2, headHash))).toMatchObject({ code: '23514', message: like.stringContaining('does not extend the chain') });
      expect(await insert(head + 1, doc(head + 1, 'sha256:' + 'f'.repeat(64)))).toMatchObject({ code: '23514', message: like.stringContaining('prevHash') });
      expect(await insert(head + 1, doc(head + 1, headHash), 'sha256:' + '0'.repeat(64))).toMatchObject({
        code: '23514',
        message: like.stringContaining('hash'),
      });
      // Control: the same statement with a document that extends the head goes in, and moves the head.
      const good = doc(head + 1, headHash);
      await admin.query(`INSERT INTO turnkeeper.receipts VALUES (${head + 1}, $1, 'sha256:' || encode(sha256(convert_to($1, 'UTF8')), 'hex'))`, [good]);
      expect(await headAndLast(admin)).toStrictEqual({ head: head + 1, last: head + 1 });
    } finally {
      await admin.end();
    }
    expectStoreWhole('after-owner');
  });
});

describe('a store made by the previous release (schema v1) and its hook role', () => {
  const V1 = 'roles_v1';
  const v1Store = () => server().url(V1);
  const v1HookStore = () => server().url(V1, HOOK_ROLE, HOOK_PASSWORD);

  it('control: under v1 the hook role could insert a junk row past the head (the hole v2 closes)', async () => {
    await server().createDatabase(V1);
    const admin = await connect(v1Store());
    try {
      await admin.query(PG_MIGRATIONS[0]!);
      // The grants `store init --hook-role` gave under v1.
      await admin.query(`GRANT USAGE ON SCHEMA turnkeeper TO ${HOOK_ROLE};
        GRANT SELECT, INSERT, UPDATE ON turnkeeper.todos, turnkeeper.captures, turnkeeper.leases, turnkeeper.ready_captures,
          turnkeeper.sessions, turnkeeper.checkouts, turnkeeper.goals, turnkeeper.receipt_head, turnkeeper.store_meta TO ${HOOK_ROLE};
        GRANT SELECT, INSERT ON turnkeeper.receipts TO ${HOOK_ROLE};
        GRANT SELECT, INSERT, UPDATE ON turnkeeper.receipt_index TO ${HOOK_ROLE};`);
    } finally {
      await admin.end();
    }
    const hook = await connect(v1HookStore());
    try {
      await hook.query('BEGIN');
      await hook.query("INSERT INTO turnkeeper.receipts VALUES (1, 'junk', 'junk')");
      expect(await headAndLast(hook)).toStrictEqual({ head: 0, last: 1 });
      await hook.query('ROLLBACK');
    } finally {
      await hook.end();
    }
  });

  it('store init migrates it to v2: the role keeps what hooks need and loses direct writes of the chain', async () => {
    const init = cli(['store', 'init'], v1Store());
    expect(init.code, init.stderr).toBe(0);
    const admin = await connect(v1Store());
    try {
      const rights = (
        await admin.query<{ table: string; insert: boolean; update: boolean }>(
          `SELECT t AS table, has_table_privilege($1, 'turnkeeper.' || t, 'INSERT') AS insert, has_table_privilege($1, 'turnkeeper.' || t, 'UPDATE') AS update
           FROM unnest(ARRAY['receipts', 'receipt_index', 'receipt_head', 'receipt_tree']) AS t ORDER BY t`,
          [HOOK_ROLE],
        )
      ).rows;
      expect(rights).toStrictEqual([
        { table: 'receipt_head', insert: false, update: false },
        { table: 'receipt_index', insert: false, update: false },
        { table: 'receipt_tree', insert: false, update: false },
        { table: 'receipts', insert: false, update: false },
      ]);
    } finally {
      await admin.end();
    }
    const hook = await connect(v1HookStore());
    try {
      expect((await refusal(hook, "INSERT INTO turnkeeper.receipts VALUES (1, 'junk', 'junk')")).code).toBe('42501');
    } finally {
      await hook.end();
    }
    const add = spawnSync(process.execPath, [CLI, 'todo', 'add', 'After the migration', '--id', 'migrated'], {
      cwd: repo,
      env: { ...baseEnv, TURNKEEPER_STORE: v1HookStore() },
      encoding: 'utf8',
    });
    expect(add.status, add.stderr).toBe(0);
  });

  it('v5 (dependencies): the role granted before may add and drop edges through the CLI, never UPDATE one; the database refuses an unknown Todo or a self-edge whatever writes it', async () => {
    const run = (...args: string[]) =>
      spawnSync(process.execPath, [CLI, ...args], { cwd: repo, env: { ...baseEnv, TURNKEEPER_STORE: v1HookStore() }, encoding: 'utf8' });
    const added = run('todo', 'add', 'Ship it', '--id', 'ship', '--after', 'migrated');
    expect(added.status, added.stderr).toBe(0);
    expect(run('todo', 'list').stdout).toContain('(waits on migrated)');
    const hook = await connect(v1HookStore());
    try {
      const goal = (await hook.query<{ goal: string }>("SELECT goal FROM turnkeeper.todos WHERE id = 'ship'")).rows[0]!.goal;
      expect((await refusal(hook, "UPDATE turnkeeper.todo_deps SET dependency = 'ship' WHERE todo = 'ship'")).code).toBe('42501');
      // 23503 foreign_key_violation, 23514 check_violation: the database's own rules, for every role.
      expect((await refusal(hook, `INSERT INTO turnkeeper.todo_deps VALUES ('${goal}', 'ship', 'no-such', 0)`)).code).toBe('23503');
      expect((await refusal(hook, `INSERT INTO turnkeeper.todo_deps VALUES ('${goal}', 'ship', 'ship', 0)`)).code).toBe('23514');
      expect((await hook.query('SELECT todo, dependency FROM turnkeeper.todo_deps')).rows).toStrictEqual([{ todo: 'ship', dependency: 'migrated' }]);
    } finally {
      await hook.end();
    }
    // The control: dropping the edge (DELETE) is what the role may do, with its receipt.
    const dropped = run('todo', 'unblock', 'ship', '--after', 'migrated');
    expect(dropped.status, dropped.stderr).toBe(0);
    expect(dropped.stdout).toContain('no longer waits on migrated');
    expect(JSON.parse(run('next', '--json').stdout)).toEqual(expect.arrayContaining([expect.objectContaining({ id: 'ship' })]));
  });
});
