// The team store in the field: what a person running real commands against a real PostgreSQL server
// meets, each beside its control. A role short of a privilege, a URL whose query names the host, a
// password from a pgpass file or from nowhere, doctor's text, and `store init` run twice.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { contextOf, runCli, type CliRun } from '../support/world';
import { freeLoopbackPort, usePostgres } from '../support/postgres';
import { makeMachine } from '../support/teamMachine';

const server = usePostgres({ beforeAll, afterAll });
const ORIGIN = 'https://example.invalid/acme/app.git';
const READY = /^Turnkeeper: Todo ([a-z0-9_-]+) · capture (cap_[0-9a-f]{24}) · epoch (\d+)$/m;

let root: string;
let machines = 0;
beforeAll(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'tk-pg-field-')));
});
afterAll(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

/** One machine whose store is `store`: its own HOME and TURNKEEPER_HOME, a clone of the team's repository. */
function machine(store: string) {
  const made = makeMachine(join(root, `machine-${++machines}`), { store, origin: ORIGIN });
  const run = (args: string[], options: { input?: string; env?: Record<string, string | undefined> } = {}): Promise<CliRun> => {
    const env: Record<string, string> = { ...made.env };
    for (const [key, value] of Object.entries(options.env ?? {})) {
      if (value === undefined) delete env[key];
      else env[key] = value;
    }
    return runCli(args, { env, cwd: made.checkout, input: options.input, timeoutMs: 30_000 });
  };
  const prompt = (session: string, turn: string, text: string): string =>
    JSON.stringify({
      session_id: session,
      turn_id: turn,
      transcript_path: join(made.userHome, `${session}.jsonl`),
      cwd: made.checkout,
      hook_event_name: 'UserPromptSubmit',
      model: 'gpt-test',
      permission_mode: 'default',
      prompt: text,
    });
  return { ...made, run, prompt };
}

/** A fresh database with the schema, made by `store init` as the administrator. */
async function initializedDatabase(name: string): Promise<void> {
  await server().createDatabase(name);
  const init = await machine(server().url(name)).run(['store', 'init']);
  expect(init.code, init.stderr).toBe(0);
}

describe('a role short of a privilege', () => {
  it('a claim by a role with SELECT only is [store_unavailable], naming the privilege and the fix, never an internal error', async () => {
    await initializedDatabase('field_select_only');
    await server().createRole('tk_readonly', 'readonly-pw-1');
    await server().psql('GRANT USAGE ON SCHEMA turnkeeper TO tk_readonly; GRANT SELECT ON ALL TABLES IN SCHEMA turnkeeper TO tk_readonly', 'field_select_only');
    const admin = machine(server().url('field_select_only'));
    expect((await admin.run(['todo', 'add', 'Fix login', '--id', 'fix-login'])).code).toBe(0);

    const reader = machine(server().url('field_select_only', 'tk_readonly', 'readonly-pw-1'));
    // Control: reading works for this role.
    const status = await reader.run(['status']);
    expect(status.code, status.stderr).toBe(0);
    const claim = await reader.run(['hook'], { input: reader.prompt('s-ro', 't1', '#todo:fix-login') });
    const context = contextOf(claim.stdout) ?? '';
    expect(context, claim.stdout + claim.stderr).toContain('[store_unavailable]');
    expect(claim.stderr).not.toContain('internal error');
    for (const text of [context, claim.stderr]) {
      expect(text).toContain('permission denied');
      expect(text).toMatch(/role tk_readonly lacks a privilege/);
      expect(text).toMatch(/SELECT, INSERT and UPDATE/);
      expect(text).toContain('turnkeeper store init --hook-role tk_readonly');
    }
    // A command says the same, as a store error.
    const add = await reader.run(['todo', 'add', 'Another', '--id', 'another', '--json']);
    expect(add.code).toBe(1);
    expect(JSON.parse(add.stdout)).toMatchObject({ ok: false, error: { code: 'store_unavailable' } });
    expect(add.stderr).toContain('turnkeeper store init --hook-role tk_readonly');
  });
});

describe('a URL whose query names the host and port (pg honours ?host= and ?port=)', () => {
  it('is named by the host and port pg connects to: in store init, doctor, and a failing connection', async () => {
    await initializedDatabase('field_query');
    const { port, adminPassword } = server();
    const url = `postgres://tk_admin:${encodeURIComponent(adminPassword)}@/field_query?host=127.0.0.1&port=${port}`;
    const where = `127.0.0.1:${port}/field_query`;
    const node = machine(url);
    const init = await node.run(['store', 'init']);
    expect(init.code, init.stderr).toBe(0);
    expect(init.stdout).toContain(`store team: ${where} at schema version`);
    const doctor = JSON.parse((await node.run(['doctor', '--json'])).stdout) as { store: { path: string; authority: string; error?: string } };
    expect(doctor.store.error).toBeUndefined();
    expect(doctor.store).toMatchObject({ path: where, authority: where });

    // The query's port wins over the authority's, as pg connects: a closed one is the one named.
    const closed = await freeLoopbackPort();
    const down = machine(`postgres://tk_admin:${encodeURIComponent(adminPassword)}@127.0.0.1:${port}/field_query?port=${closed}`);
    const status = await down.run(['status']);
    expect(status.code).toBe(1);
    expect(status.stderr).toContain(`cannot connect to the team store 127.0.0.1:${closed}/field_query`);
    expect(status.stderr).not.toContain(`:${port}/`);
    for (const run of [init, status]) expect(run.stdout + run.stderr).not.toContain(adminPassword);
  });

  it('a Unix socket directory in host= is the place named', async () => {
    await initializedDatabase('field_socket');
    const { port, dataDir } = server();
    // The harness's socket accepts tk_admin without a password (trust, inside the private data directory).
    const node = machine(`postgres://tk_admin@/field_socket?host=${encodeURIComponent(dataDir)}&port=${port}`);
    const doctor = JSON.parse((await node.run(['doctor', '--json'])).stdout) as { store: { path: string; error?: string; receipts?: number } };
    expect(doctor.store.error).toBeUndefined();
    expect(doctor.store).toMatchObject({ path: `${dataDir}:${port}/field_socket`, receipts: 0 });
  });
});

describe('a password from a pgpass file, or from nowhere', () => {
  const ROLE = 'tk_pgpass';
  const PASSWORD = 'pgpass-pw:with\\odd';
  const DB = 'field_pgpass';
  /** A pgpass line for this server, the database and the role; ':' and '\\' escaped as the format wants. */
  const line = (password = PASSWORD) => `127.0.0.1:${server().port}:${DB}:${ROLE}:${password.replace(/[\\:]/g, (c) => `\\${c}`)}\n`;
  let todos = 0;

  beforeAll(async () => {
    await server().createRole(ROLE, PASSWORD);
    await server().createDatabase(DB);
    const init = await machine(server().url(DB)).run(['store', 'init', '--hook-role', ROLE]);
    expect(init.code, init.stderr).toBe(0);
  });

  it('PGPASSFILE (mode 0600): every command works and prints nothing on stderr (no DeprecationWarning)', async () => {
    const node = machine(server().url(DB, ROLE));
    const pgpass = join(node.userHome, 'team.pgpass');
    writeFileSync(pgpass, line(), { mode: 0o600 });
    const env = { PGPASSFILE: pgpass };
    const id = `fix-${++todos}`;
    const runs = [
      await node.run(['todo', 'add', 'Fix it', '--id', id], { env }),
      await node.run(['hook'], { input: node.prompt(`s-${id}`, 't1', `#todo:${id}`), env }),
      await node.run(['status'], { env }),
      await node.run(['verify', '--json'], { env }),
      await node.run(['doctor', '--json'], { env }),
      // Reads in parallel (open, blocked and done Todos): one connection takes them in turn.
      await node.run(['todo', 'list'], { env }),
    ];
    expect(contextOf(runs[1]!.stdout), runs[1]!.stderr).toMatch(READY);
    for (const run of runs) expect(run.stderr).toBe('');
    expect(JSON.parse(runs[3]!.stdout)).toMatchObject({ ok: true });
    expect((JSON.parse(runs[4]!.stdout) as { store: { error?: string } }).store.error).toBeUndefined();
  });

  it('~/.pgpass (mode 0600) without PGPASSFILE: the same, and a group-readable one is ignored as libpq and the pgpass module ignore it', async () => {
    const node = machine(server().url(DB, ROLE));
    const pgpass = join(node.userHome, '.pgpass');
    writeFileSync(pgpass, line(), { mode: 0o600 });
    const status = await node.run(['status']);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stderr).toBe('');
    // Control: the password really came from the file.
    rmSync(pgpass);
    writeFileSync(pgpass, line(), { mode: 0o640 });
    const open = await node.run(['status']);
    expect(open.code).toBe(1);
    expect(open.stderr).toContain(`WARNING: password file "${pgpass}" has group or world access`);
    expect(open.stderr).toContain(`the pgpass file ${pgpass} (ignored: it has group or world access; chmod 600 it)`);
    expect(open.stderr).not.toContain(PASSWORD);
  });

  it('no password anywhere: [store_unavailable] saying the server asks for one and where it was looked for, never the raw SASL error', async () => {
    const node = machine(server().url(DB, ROLE));
    const missing = join(node.userHome, 'no-such.pgpass');
    const id = `fix-${++todos}`;
    expect((await machine(server().url(DB)).run(['todo', 'add', 'Fix it', '--id', id])).code).toBe(0);
    const claim = await node.run(['hook'], { input: node.prompt(`s-${id}`, 't1', `#todo:${id}`), env: { PGPASSFILE: missing } });
    const context = contextOf(claim.stdout) ?? '';
    expect(context, claim.stdout + claim.stderr).toContain('[store_unavailable]');
    for (const text of [context, claim.stderr]) {
      expect(text).not.toMatch(/SASL|client password must be a string/);
      expect(text).toContain(`the server asks for a password for role ${ROLE}`);
      expect(text).toContain('none was found in the URL, PGPASSWORD or the pgpass file');
      expect(text).toContain(`${missing} (it does not exist)`);
    }
    // A pgpass file without a line for this server, database and role: named, and said so.
    const other = join(node.userHome, 'other.pgpass');
    writeFileSync(other, `db.example:5432:${DB}:${ROLE}:not-this-one\n`, { mode: 0o600 });
    const status = await node.run(['status', '--json'], { env: { PGPASSFILE: other } });
    expect(status.code).toBe(1);
    expect(JSON.parse(status.stdout)).toMatchObject({ ok: false, error: { code: 'store_unavailable' } });
    expect(status.stderr).toContain(`${other} (no line in it matches 127.0.0.1:${server().port}:${DB}:${ROLE})`);
    // An empty PGPASSWORD is set, so no pgpass file is read (as libpq): said so too.
    const empty = await node.run(['status'], { env: { PGPASSWORD: '', PGPASSFILE: other } });
    expect(empty.code).toBe(1);
    expect(empty.stderr).toContain('PGPASSWORD is set but empty');
    expect(empty.stderr).not.toMatch(/SASL/);
  });
});

describe('doctor on a team store, in text', () => {
  it('prints the server version, the round trip and the clock skew that --json reports', async () => {
    await initializedDatabase('field_doctor');
    const node = machine(server().url('field_doctor'));
    // A client clock 10 min ahead: the skew printed is the server's clock minus this machine's.
    const env = { TURNKEEPER_TEST_CLOCK_OFFSET_MS: '600000' };
    const json = JSON.parse((await node.run(['doctor', '--json'], { env })).stdout) as { store: { serverVersion: string } };
    const text = await node.run(['doctor'], { env });
    expect(text.stdout).toContain(`store: 127.0.0.1:${server().port}/field_doctor (schema`);
    const line = /^server: PostgreSQL (.+?); round trip (\d+) ms; clock skew (-?\d+) ms \(server minus this machine, ±(\d+) ms\)$/m.exec(text.stdout);
    expect(line, text.stdout).not.toBeNull();
    expect(line![1]).toBe(json.store.serverVersion);
    expect(line![1]).toMatch(new RegExp(`^${server().version}\\.`));
    expect(Math.abs(Number(line![3]) + 600_000)).toBeLessThan(2000);
    expect(text.stdout).toMatch(/^problem: this machine's clock is \d+ ms ahead of the team server's/m);
  });
});

describe('store init --hook-role, run again', () => {
  it('says "created" only for grants that were not in place, and "already granted" for the rest', async () => {
    const ROLE = 'tk_again';
    await server().createRole(ROLE, 'again-pw-1');
    await server().createDatabase('field_again');
    const admin = machine(server().url('field_again'));
    const init = (json = false) => admin.run(['store', 'init', '--hook-role', ROLE, ...(json ? ['--json'] : [])]);

    const first = await init();
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(new RegExp(`^  created grants for role ${ROLE}: .*USAGE on schema turnkeeper`, 'm'));
    expect(first.stdout).toMatch(/SELECT, INSERT, UPDATE on [^;]*turnkeeper\.todos/);
    expect(first.stdout).not.toContain('already granted');

    const again = await init();
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).not.toContain('created');
    expect(again.stdout).toContain(`  grants for role ${ROLE} were already granted\n`);
    expect(again.stdout).toContain('nothing to create');
    const json = JSON.parse((await init(true)).stdout) as { ok: boolean; created: string[]; unchanged: string[] };
    expect(json).toMatchObject({ ok: true, created: [], unchanged: [`grants for role ${ROLE} were already granted`] });

    // One privilege taken away by hand: only it is created again.
    await server().psql(`REVOKE INSERT ON turnkeeper.todos FROM ${ROLE}`, 'field_again');
    const repaired = await init();
    expect(repaired.code, repaired.stderr).toBe(0);
    expect(repaired.stdout).toContain(`  created grants for role ${ROLE}: INSERT on turnkeeper.todos\n`);
    expect(repaired.stdout).toContain(`  the other grants for role ${ROLE} were already granted\n`);
    expect(await server().psql(`SELECT has_table_privilege('${ROLE}', 'turnkeeper.todos', 'INSERT')`, 'field_again')).toBe('t');
  });
});
