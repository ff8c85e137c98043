// The PostgreSQL harness (test/support/postgres.ts) tested on its own: a real server on loopback
// that asks every TCP client for a password, survives a crash with its data, and leaves nothing
// behind, not even when the test process dies without stopping it.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildSync } from 'esbuild';
import pg from 'pg';
import { findPostgresBin, startPostgres, usePostgres, type PgServer } from '../support/postgres';
import { waitFor } from '../support/waitFor';

const server = usePostgres({ beforeAll, afterAll });

const scratch = mkdtempSync(path.join(tmpdir(), 'tk-pg-harness-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const clients: pg.Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.end().catch(() => undefined)));
});
async function connect(config: string | pg.ClientConfig): Promise<pg.Client> {
  const client = new pg.Client(
    typeof config === 'string' ? { connectionString: config, connectionTimeoutMillis: 5000 } : { connectionTimeoutMillis: 5000, ...config },
  );
  client.on('error', () => undefined);
  clients.push(client);
  await client.connect();
  return client;
}
// Alive and not a zombie: the postmaster's parent is PID 1 (pg_ctl detaches it), which may reap late.
const alive = (pid: number): boolean => {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
};

describe('binaries', () => {
  it('takes the highest version by number, not by name, and only a directory with initdb and pg_ctl', () => {
    const base = path.join(scratch, 'lib-postgresql');
    const make = (version: string, tools: string[]) => {
      mkdirSync(path.join(base, version, 'bin'), { recursive: true });
      for (const tool of tools) writeFileSync(path.join(base, version, 'bin', tool), '');
    };
    make('9.6', ['initdb', 'pg_ctl']);
    make('15', ['initdb', 'pg_ctl']);
    make('17', ['psql']); // client-only: not a server
    make('current', ['initdb', 'pg_ctl']);
    expect(findPostgresBin(base)).toStrictEqual({ bin: path.join(base, '15', 'bin'), version: 15 });
  });

  it('without any server, says what to install', () => {
    expect(() => findPostgresBin(path.join(scratch, 'nothing-here'))).toThrow(/apt-get install postgresql, or run \.ci\/run/);
  });
});

describe('a running server', () => {
  it('listens on 127.0.0.1 only, in a private data directory, with room for a 64-process race', async () => {
    const admin = await connect(server().adminUrl);
    const setting = async (name: string) => (await admin.query<{ value: string }>('SELECT current_setting($1) AS value', [name])).rows[0]!.value;
    expect(await setting('listen_addresses')).toBe('127.0.0.1');
    expect(await setting('port')).toBe(String(server().port));
    expect(Number(await setting('max_connections'))).toBeGreaterThanOrEqual(200);
    expect(await setting('server_version_num')).toMatch(new RegExp(`^${server().version}`));
    expect(statSync(server().dataDir).mode & 0o777).toBe(0o700);
    expect(server().pid).toBeGreaterThan(0);
    expect(alive(server().pid!)).toBe(true);
    expect(await server().psql("SELECT 'psql works'")).toBe('psql works');
    // The admin password is on no command line.
    expect(readFileSync(`/proc/${server().pid}/cmdline`, 'utf8')).not.toContain(server().adminPassword);
  });

  it('opens 70 password connections at once', async () => {
    const many = await Promise.all(Array.from({ length: 70 }, () => connect(server().adminUrl)));
    const pids = await Promise.all(many.map(async (client) => (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid));
    expect(new Set(pids).size).toBe(70);
  });
});

describe('password roles over TCP', () => {
  beforeAll(async () => {
    await server().createRole('tk_app', "pa'ss word/@:?");
    await server().createDatabase('tk_team', 'tk_app');
  });

  it('a role connects with the password in the URL (special characters encoded)', async () => {
    const client = await connect(server().url('tk_team', 'tk_app', "pa'ss word/@:?"));
    const { rows } = await client.query('SELECT current_user AS who, current_database() AS db, host(inet_client_addr()) AS addr');
    expect(rows).toStrictEqual([{ who: 'tk_app', db: 'tk_team', addr: '127.0.0.1' }]);
  });

  it('control: a wrong password and a missing password are refused (TCP is not trust)', async () => {
    const saved = process.env.PGPASSFILE;
    process.env.PGPASSFILE = path.join(scratch, 'no-such-pgpass');
    try {
      await expect(connect(server().url('tk_team', 'tk_app', 'wrong'))).rejects.toMatchObject({ code: '28P01' });
      await expect(connect(server().url('tk_team', 'tk_app'))).rejects.toThrow(/password/i);
    } finally {
      if (saved === undefined) delete process.env.PGPASSFILE;
      else process.env.PGPASSFILE = saved;
    }
  });

  it('a URL without a password finds it in a pgpass file', async () => {
    const pgpass = path.join(scratch, 'pgpass');
    writeFileSync(pgpass, `127.0.0.1:${server().port}:tk_team:tk_app:pa'ss word/@\\:?\n`, { mode: 0o600 });
    const saved = process.env.PGPASSFILE;
    process.env.PGPASSFILE = pgpass;
    try {
      const client = await connect(server().url('tk_team', 'tk_app'));
      expect((await client.query('SELECT current_user AS who')).rows).toStrictEqual([{ who: 'tk_app' }]);
    } finally {
      if (saved === undefined) delete process.env.PGPASSFILE;
      else process.env.PGPASSFILE = saved;
    }
  });
});

describe('crash and restart', () => {
  it('stopImmediate kills the server without a checkpoint; start recovers on the same port with the data', async () => {
    await server().psql('CREATE TABLE survives (id int); INSERT INTO survives VALUES (42)');
    const before = server().pid!;
    const port = server().port;
    await server().stopImmediate();
    expect(server().pid).toBeUndefined();
    // pg_ctl returns once the pid file is gone; the process itself may take a moment more to exit.
    expect(await waitFor(() => !alive(before), 5000, 100)).toBe(true);
    // Control: the server is really down, not merely forgotten by the harness.
    await expect(connect(server().adminUrl)).rejects.toThrow(/ECONNREFUSED/);

    await server().start();
    expect(server().port).toBe(port);
    expect(server().pid).not.toBe(before);
    expect(await server().psql('SELECT id FROM survives')).toBe('42');
    // It was a crash: the restart replayed WAL.
    expect(server().log()).toMatch(/not properly shut down|automatic recovery in progress|interrupted/);
  });
});

describe('stop', () => {
  let own: PgServer | undefined;
  afterEach(async () => {
    await own?.stop();
  });

  it('stops the server, removes its directory, and may be called twice', async () => {
    own = await startPostgres();
    const { pid, root, port } = own;
    expect(existsSync(root)).toBe(true);
    await own.stop();
    await own.stop();
    expect(existsSync(root)).toBe(false);
    expect(await waitFor(() => !alive(pid!), 5000, 100)).toBe(true);
    await expect(connect({ host: '127.0.0.1', port, user: 'tk_admin', password: own.adminPassword, database: 'postgres' })).rejects.toThrow(/ECONNREFUSED/);
    await expect(own.start()).rejects.toThrow(/removed/);
  });
});

describe('a test process that dies without stop()', () => {
  // The harness bundled for a plain Node child; the child starts a server and then dies.
  const bundle = path.join(scratch, 'harness.cjs');
  beforeAll(() => {
    buildSync({
      entryPoints: [path.resolve(__dirname, '../support/postgres.ts')],
      bundle: true,
      platform: 'node',
      format: 'cjs',
      outfile: bundle,
      logLevel: 'warning',
    });
  });

  async function orphan(how: 'exit' | 'sigkill'): Promise<{ pid: number; root: string }> {
    const script = `require(${JSON.stringify(bundle)}).startPostgres().then((s) => { process.stdout.write(JSON.stringify({ pid: s.pid, root: s.root }) + '\\n'); if (${JSON.stringify(how)} === 'exit') process.exit(3); setInterval(() => {}, 1000); }, (e) => { console.error(e); process.exit(1); });`;
    const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    const started = await new Promise<{ pid: number; root: string }>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0]!) as { pid: number; root: string });
      });
      child.on('exit', (code) => (out.includes('\n') ? undefined : reject(new Error(`child exited ${code} before starting a server`))));
    });
    expect(alive(started.pid)).toBe(true);
    if (how === 'sigkill') child.kill('SIGKILL');
    await new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve(undefined) : child.once('exit', resolve)));
    return started;
  }

  it('process.exit: the exit hook has stopped the server and removed the directory by the time the process is gone', async () => {
    const { pid, root } = await orphan('exit');
    expect(existsSync(root)).toBe(false);
    expect(await waitFor(() => !alive(pid), 5000, 100)).toBe(true);
  });

  it('SIGKILL: the watchdog stops the server and removes the directory within seconds', async () => {
    const { pid, root } = await orphan('sigkill');
    expect(await waitFor(() => !alive(pid) && !existsSync(root), 15_000, 100)).toBe(true);
  });
});
