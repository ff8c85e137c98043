// A real, throwaway PostgreSQL server for one test file: Debian's binaries, a private data directory
// under os.tmpdir(), TCP on 127.0.0.1 only, a password on every TCP connection.
//
//   const pgServer = await startPostgres();      // beforeAll
//   pgServer.url('tk', 'tk_app', 'secret')       // postgres://tk_app:secret@127.0.0.1:<port>/tk
//   await pgServer.stop();                       // afterAll: stops it and removes the directory
//   openAuthority(pgEnv(url), …)                 // an env for code that runs in the test's process
//
// Decisions:
// - Binaries come from the highest /usr/lib/postgresql/<version>/bin, never from PATH, so a stray
//   client-only install or a wrapper script is never picked up.
// - PostgreSQL refuses to run as root, and tests run as root: initdb and pg_ctl run as the `postgres`
//   OS user (./serviceProcess.ts, shared with ./pgbouncer.ts).
// - Authentication: TCP is scram-sha-256 for everyone, so the product is always tested with a real
//   password (in the URL or a pgpass file). The superuser is `tk_admin` with a random password.
//   Only the harness's own psql uses the Unix socket, with `trust`; that socket lives inside the
//   0700 data directory, so only root and the server's owner can reach it.
// - fsync=off: a test's "crash" is `pg_ctl stop -m immediate` (the processes die, the kernel keeps
//   the page cache), which fsync does not take part in; only a power loss would, and no test has one.
// - A test process that dies without stop() (an exception, process.exit, SIGKILL) must not leave a
//   server behind: an 'exit' hook stops it at once, and a detached watchdog that waits for the test
//   process to go stops it and removes the directory if even that hook never ran (guardService).
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { cleanEnv, guardService, quoteShell, runAs, serviceDir } from './serviceProcess';

const PG_ADMIN_USER = 'tk_admin';
const INSTALL_HINT = 'apt-get install postgresql, or run .ci/run';

export interface PgServer {
  /** TCP port on 127.0.0.1; the same across stopImmediate()/start(). */
  readonly port: number;
  /** Password of the superuser `tk_admin`. */
  readonly adminPassword: string;
  /** postgres://tk_admin:<password>@127.0.0.1:<port>/postgres */
  readonly adminUrl: string;
  /** The temporary directory that holds the data directory (removed by stop()). */
  readonly root: string;
  /** The data directory (PGDATA); also holds the Unix socket. */
  readonly dataDir: string;
  /** The PostgreSQL major version of the binaries in use, e.g. 15. */
  readonly version: number;
  /** PID of the running postmaster; undefined while stopped. */
  readonly pid: number | undefined;
  /**
   * postgres://user[:password]@127.0.0.1:<port>/<database>. Without `user`: tk_admin with its password.
   * With `user` but no `password`: no password in the URL (for pgpass / PGPASSWORD tests).
   */
  url(database?: string, user?: string, password?: string): string;
  /** Runs SQL as tk_admin through psql (stdin, ON_ERROR_STOP) and returns its unaligned, tuples-only stdout without the trailing newline. */
  psql(sql: string, database?: string): Promise<string>;
  createDatabase(name: string, owner?: string): Promise<void>;
  /** A LOGIN role with a password (scram-sha-256); `superuser` for a second admin. */
  createRole(name: string, password: string, options?: { superuser?: boolean }): Promise<void>;
  /** `pg_ctl stop -m immediate`: every server process is killed without a checkpoint, like a crash. */
  stopImmediate(): Promise<void>;
  /** Starts the server again on the same data directory and port (crash recovery runs if needed). */
  start(): Promise<void>;
  /** `pg_ctl stop -m fast`, then removes the directory. Idempotent. */
  stop(): Promise<void>;
  /** The server log so far (for failure messages). */
  log(): string;
}

/** The bin directory of the highest installed PostgreSQL under `base`, with its major version. */
export function findPostgresBin(base = '/usr/lib/postgresql'): { bin: string; version: number } {
  const versions = (existsSync(base) ? readdirSync(base) : [])
    .filter((name) => /^\d+(\.\d+)?$/.test(name) && existsSync(path.join(base, name, 'bin', 'initdb')) && existsSync(path.join(base, name, 'bin', 'pg_ctl')))
    .map((name) => ({ name, version: Number(name) }))
    .sort((a, b) => b.version - a.version);
  const best = versions[0];
  if (!best) throw new Error(`No PostgreSQL server binaries under ${base}/<version>/bin (initdb, pg_ctl): ${INSTALL_HINT}`);
  return { bin: path.join(base, best.name, 'bin'), version: Math.floor(best.version) };
}

/** A port on 127.0.0.1 that was free a moment ago (the caller retries if it is taken in between). */
export async function freeLoopbackPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function run(argv: string[], options: { cwd: string; input?: string; timeoutMs?: number }): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      argv[0]!,
      argv.slice(1),
      { cwd: options.cwd, env: cleanEnv(), timeout: options.timeoutMs ?? 60_000, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error)
          reject(
            Object.assign(new Error(`${path.basename(argv.find((a) => a.includes('/')) ?? argv[0]!)} failed: ${error.message}\n${stderr}${stdout}`), {
              stdout,
              stderr,
            }),
          );
        else resolve({ stdout, stderr });
      },
    );
    child.stdin?.end(options.input ?? '');
  });
}

const quoteIdent = (name: string): string => `"${name.replaceAll('"', '""')}"`;
const quoteLiteral = (value: string): string => `'${value.replaceAll("'", "''")}'`;

export interface StartOptions {
  /** Extra `name = value` lines for postgresql.conf. */
  settings?: Record<string, string | number>;
}

export async function startPostgres(options: StartOptions = {}): Promise<PgServer> {
  const { bin, version } = findPostgresBin();
  const as = runAs(INSTALL_HINT);
  const tool = (name: string, ...args: string[]): string[] => [...as.prefix, path.join(bin, name), ...args];

  const root = serviceDir('tk-pg-', as);
  const dataDir = path.join(root, 'data');
  const logFile = path.join(root, 'server.log');
  const adminPassword = randomBytes(18).toString('base64url');

  let port = 0;
  let pid: number | undefined;
  let removed = false;

  const readPid = (): number | undefined => {
    try {
      const first = readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0];
      const value = Number(first);
      return Number.isInteger(value) && value > 0 ? value : undefined;
    } catch {
      return undefined;
    }
  };
  const log = (): string => {
    try {
      return readFileSync(logFile, 'utf8');
    } catch {
      return '';
    }
  };

  const emergencyStop = (): void => {
    try {
      const [command, ...args] = tool('pg_ctl', '-D', dataDir, 'stop', '-m', 'immediate', '-w', '-t', '10');
      execFileSync(command!, args, { stdio: 'ignore', cwd: root, env: cleanEnv() });
    } catch {
      // Not running, or already gone.
    }
    rmSync(root, { recursive: true, force: true });
  };

  try {
    const pwfile = path.join(root, 'pwfile');
    writeFileSync(pwfile, `${adminPassword}\n`, { mode: 0o600 });
    chownSync(pwfile, as.uid, as.gid);
    await run(
      tool(
        'initdb',
        '-D',
        dataDir,
        '-U',
        PG_ADMIN_USER,
        `--pwfile=${pwfile}`,
        '--auth-host=scram-sha-256',
        '--auth-local=trust',
        '-E',
        'UTF8',
        '--locale=C',
        '--no-sync',
        '--no-instructions',
      ),
      { cwd: root },
    );
    rmSync(pwfile);

    const settings: Record<string, string | number> = {
      listen_addresses: "'127.0.0.1'",
      unix_socket_directories: quoteLiteral(dataDir),
      // The cross-machine race opens 64+ connections at once, plus the test's own.
      max_connections: 200,
      shared_buffers: "'16MB'",
      fsync: 'off',
      full_page_writes: 'off',
      log_min_messages: 'warning',
      ...options.settings,
    };
    const conf = Object.entries(settings)
      .map(([name, value]) => `${name} = ${value}`)
      .join('\n');
    // Appended as root onto a file owned by postgres: ownership and mode stay as they were.
    writeFileSync(path.join(dataDir, 'postgresql.conf'), `\n# test/support/postgres.ts\n${conf}\n`, { flag: 'a' });
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    throw error;
  }

  const pgCtlStart = async (): Promise<void> => {
    await run(tool('pg_ctl', '-D', dataDir, '-l', logFile, '-w', '-t', '60', '-o', `-p ${port}`, 'start'), { cwd: root, timeoutMs: 90_000 });
    pid = readPid();
  };

  // Once the test process is gone, the watchdog crashes the server and removes the directory.
  const pgCtl = [...as.prefix, path.join(bin, 'pg_ctl')].map(quoteShell).join(' ');
  const guard = guardService(emergencyStop, `${pgCtl} -D ${quoteShell(dataDir)} stop -m immediate -w -t 10 >/dev/null 2>&1; rm -rf ${quoteShell(root)}`);
  try {
    for (let attempt = 1; ; attempt++) {
      port = await freeLoopbackPort();
      try {
        await pgCtlStart();
        break;
      } catch (error) {
        // Someone took the port between our probe and the server's bind: try another one.
        if (attempt < 5 && /could not (bind|create any TCP\/IP sockets)|Address already in use/i.test(log())) continue;
        throw new Error(`${(error as Error).message}\n--- server log ---\n${log()}`);
      }
    }
  } catch (error) {
    guard.release();
    emergencyStop();
    throw error;
  }

  const url = (database = 'postgres', user?: string, password?: string): string => {
    const who =
      user === undefined
        ? `${encodeURIComponent(PG_ADMIN_USER)}:${encodeURIComponent(adminPassword)}`
        : password === undefined
          ? encodeURIComponent(user)
          : `${encodeURIComponent(user)}:${encodeURIComponent(password)}`;
    return `postgres://${who}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
  };

  const psql = async (sql: string, database = 'postgres'): Promise<string> => {
    const { stdout } = await run(
      [
        path.join(bin, 'psql'),
        '-X',
        '-q',
        '-A',
        '-t',
        '-v',
        'ON_ERROR_STOP=1',
        '-h',
        dataDir,
        '-p',
        String(port),
        '-U',
        PG_ADMIN_USER,
        '-d',
        database,
        '-f',
        '-',
      ],
      { cwd: root, input: sql },
    );
    return stdout.replace(/\n$/, '');
  };

  const server: PgServer = {
    get port() {
      return port;
    },
    adminPassword,
    get adminUrl() {
      return url();
    },
    root,
    dataDir,
    version,
    get pid() {
      return pid;
    },
    url,
    psql,
    async createDatabase(name, owner) {
      await psql(`CREATE DATABASE ${quoteIdent(name)}${owner ? ` OWNER ${quoteIdent(owner)}` : ''}`);
    },
    async createRole(name, password, roleOptions = {}) {
      await psql(`CREATE ROLE ${quoteIdent(name)} LOGIN ${roleOptions.superuser ? 'SUPERUSER' : ''} PASSWORD ${quoteLiteral(password)}`);
    },
    async stopImmediate() {
      await run(tool('pg_ctl', '-D', dataDir, 'stop', '-m', 'immediate', '-w', '-t', '30'), { cwd: root });
      pid = undefined;
    },
    async start() {
      if (removed) throw new Error('this PostgreSQL server was stopped and its directory removed');
      try {
        await pgCtlStart();
      } catch (error) {
        throw new Error(`${(error as Error).message}\n--- server log ---\n${log()}`);
      }
    },
    async stop() {
      if (removed) return;
      removed = true;
      if (readPid() !== undefined) {
        try {
          await run(tool('pg_ctl', '-D', dataDir, 'stop', '-m', 'fast', '-w', '-t', '30'), { cwd: root });
        } catch {
          emergencyStop();
        }
      }
      pid = undefined;
      guard.release();
      rmSync(root, { recursive: true, force: true });
    },
    log,
  };
  return server;
}

/** For a test file: one server, started in beforeAll and stopped in afterAll. */
export function usePostgres(
  hooks: { beforeAll(fn: () => Promise<void>, timeout?: number): void; afterAll(fn: () => Promise<void>, timeout?: number): void },
  options: StartOptions = {},
): () => PgServer {
  let server: PgServer | undefined;
  hooks.beforeAll(async () => {
    server = await startPostgres(options);
  }, 120_000);
  hooks.afterAll(async () => {
    await server?.stop();
  }, 60_000);
  return () => {
    if (!server) throw new Error('usePostgres: the server is started in beforeAll; call the accessor inside a test');
    return server;
  };
}

// One scratch directory per test process for pgEnv(): beside globalSetup's private TURNKEEPER_HOME
// (so its teardown removes it too), or under os.tmpdir() outside vitest; removed when the process exits.
let scratch: string | undefined;
function pgEnvScratch(): string {
  if (scratch === undefined) {
    const parent = process.env.TURNKEEPER_HOME ? path.dirname(process.env.TURNKEEPER_HOME) : os.tmpdir();
    mkdirSync(parent, { recursive: true });
    const dir = mkdtempSync(path.join(parent, 'tk-pg-env-'));
    for (const sub of ['tkhome', 'home']) mkdirSync(path.join(dir, sub), { mode: 0o700 });
    process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
    scratch = dir;
  }
  return scratch;
}

/**
 * The environment for product code that a test runs in its own process against a team store
 * (initializeStore, openAuthority): TURNKEEPER_STORE plus a private TURNKEEPER_HOME and HOME. The
 * product reads only the env it is given, never process.env, so a bare `{ TURNKEEPER_STORE: url }`
 * falls back to os.homedir()/.turnkeeper and signs checkpoints with, and appends witness lines to,
 * the real user's files. `extra` may name its own TURNKEEPER_HOME/HOME (a machine's).
 */
export function pgEnv(url: string, extra: Record<string, string> = {}): Record<string, string> {
  const dir = pgEnvScratch();
  return { HOME: path.join(dir, 'home'), TURNKEEPER_HOME: path.join(dir, 'tkhome'), TURNKEEPER_STORE: url, ...extra };
}

/**
 * A transaction held open on a connection of its own at `url`, after `sql` ran in it (a lock taken,
 * as another session holds it): release() rolls it back and closes the connection, once.
 */
export async function holdInTransaction(url: string, sql: string): Promise<{ release(): Promise<void> }> {
  const holder = new pg.Client({ connectionString: url });
  holder.on('error', () => undefined);
  await holder.connect();
  let released: Promise<void> | undefined;
  const release = () =>
    (released ??= (async () => {
      await holder.query('ROLLBACK').catch(() => undefined);
      await holder.end().catch(() => undefined);
    })());
  try {
    await holder.query('BEGIN');
    await holder.query(sql);
  } catch (error) {
    await release();
    throw error;
  }
  return { release };
}
