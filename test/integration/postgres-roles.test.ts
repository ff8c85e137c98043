// Who may change the receipt chain on a team server. `store init --hook-role` gives the role hooks
// connect as rows, and receipts SELECT and INSERT only; a trigger refuses UPDATE, DELETE and TRUNCATE
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
  it('claims through a real hook: its INSERTs and the chain head work', () => {
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
