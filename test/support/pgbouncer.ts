// A real, throwaway PgBouncer in front of a server from ./postgres.ts, for one test file: Debian's
// /usr/sbin/pgbouncer in transaction pooling mode, TCP on 127.0.0.1 only, SCRAM on both sides.
//
//   const bouncer = await startPgBouncer(pgServer, { users: { tk_app: 'secret' }, poolSize: 2 });
//   bouncer.url('tk', 'tk_app', 'secret')   // postgres://tk_app:secret@127.0.0.1:<bouncer port>/tk
//   await bouncer.serverConnections()        // server backends the bouncer holds right now (pg_stat_activity)
//   await bouncer.stop();                    // kills it and removes its directory
//
// Decisions:
// - PgBouncer refuses root: it runs as the `postgres` OS user (./serviceProcess.ts), in the
//   foreground, so that a failure to start is its exit, seen at once; it is ready when it logs
//   `process up` (after it listens). Its log goes to a file in its directory (log()).
// - Every database name is routed to the server (`* = host=127.0.0.1 port=…`): a test may create
//   databases after the bouncer started. One pool per (database, user), `poolSize` server connections
//   at most, no reserve pool, no minimum: the server never sees more than poolSize per pair.
// - Authentication: clients must use SCRAM (`auth_type = scram-sha-256`); the auth_file holds the
//   roles' passwords in plain text (a test's roles, in a 0600 file the postgres user owns), which is
//   what lets PgBouncer log in to the server with SCRAM in turn. `tk_admin` is always in it and is
//   the bouncer's admin (the `pgbouncer` console database: show()).
// - A test process that dies without stop() does not leave a bouncer behind: guardService's exit
//   hook and watchdog, as for the server (the watchdog kills the pid in the bouncer's pid file).
import { spawn, type ChildProcess } from 'node:child_process';
import { chownSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { freeLoopbackPort, type PgServer } from './postgres';
import { cleanEnv, guardService, quoteShell, runAs, serviceDir } from './serviceProcess';

const PGBOUNCER = '/usr/sbin/pgbouncer';
const INSTALL_HINT = 'apt-get install pgbouncer postgresql, or run .ci/run';
const ADMIN = 'tk_admin';

export interface PgBouncerOptions {
  /** Roles clients may log in as (name → password); each must exist on the server with that password. tk_admin is always added. */
  readonly users?: Readonly<Record<string, string>>;
  /** default_pool_size: server connections per (database, user) at most. Default 4. */
  readonly poolSize?: number;
  /** max_client_conn. Default 500. */
  readonly maxClientConn?: number;
  /** Extra `name = value` lines for the [pgbouncer] section (they override the defaults above). */
  readonly settings?: Readonly<Record<string, string | number>>;
}

export interface PgBouncer {
  /** TCP port of the bouncer on 127.0.0.1. */
  readonly port: number;
  /** Its temporary directory: config, auth_file, log, pid file (removed by stop()). */
  readonly root: string;
  /** PID of the pgbouncer process; undefined once stopped. */
  readonly pid: number | undefined;
  readonly poolSize: number;
  /** postgres://user[:password]@127.0.0.1:<bouncer port>/<database>; without `user`, tk_admin with its password. */
  url(database?: string, user?: string, password?: string): string;
  /**
   * Server backends (pg_stat_activity on the server, read over a direct connection as tk_admin) logged
   * in as `users` (default: every user of the bouncer but tk_admin), in `database` if given. Only the
   * bouncer should connect as those users while a test samples this.
   */
  serverConnections(options?: { users?: readonly string[]; database?: string }): Promise<number>;
  /** `SHOW <what>` on the bouncer's admin console (POOLS, SERVERS, CLIENTS, STATS, …), as rows. */
  show(what: string): Promise<Record<string, unknown>[]>;
  /** The bouncer's log so far (for failure messages). */
  log(): string;
  /** Stops it (SIGTERM, then SIGKILL after 10 s) and removes its directory. Idempotent. */
  stop(): Promise<void>;
}

/** A double-quoted auth_file field (a `"` inside is doubled). */
const authField = (value: string): string => `"${value.replaceAll('"', '""')}"`;

export async function startPgBouncer(server: PgServer, options: PgBouncerOptions = {}): Promise<PgBouncer> {
  const as = runAs(INSTALL_HINT);
  const poolSize = options.poolSize ?? 4;
  const users: Record<string, string> = { ...options.users, [ADMIN]: server.adminPassword };
  const root = serviceDir('tk-pgb-', as);
  const ini = path.join(root, 'pgbouncer.ini');
  const authFile = path.join(root, 'userlist.txt');
  const logFile = path.join(root, 'pgbouncer.log');
  const pidFile = path.join(root, 'pgbouncer.pid');

  const log = (): string => {
    try {
      return readFileSync(logFile, 'utf8');
    } catch {
      return '';
    }
  };
  const readPid = (): number | undefined => {
    try {
      const value = Number(readFileSync(pidFile, 'utf8').trim());
      return Number.isInteger(value) && value > 0 ? value : undefined;
    } catch {
      return undefined;
    }
  };

  let pid: number | undefined;
  let child: ChildProcess | undefined;
  let removed = false;
  const kill = (signal: NodeJS.Signals): void => {
    try {
      // Before it is up, the pid file may already name it (the exit hook can run at any time).
      const target = pid ?? readPid();
      if (target !== undefined) process.kill(target, signal);
    } catch {
      // Already gone.
    }
  };
  const emergencyStop = (): void => {
    kill('SIGKILL');
    rmSync(root, { recursive: true, force: true });
  };
  const pidFileShell = quoteShell(pidFile);
  const guard = guardService(emergencyStop, `[ -f ${pidFileShell} ] && kill -9 "$(cat ${pidFileShell})" 2>/dev/null; rm -rf ${quoteShell(root)}`);

  const write = (file: string, text: string): void => {
    writeFileSync(file, text, { mode: 0o600 });
    chownSync(file, as.uid, as.gid);
  };
  write(
    authFile,
    Object.entries(users)
      .map(([name, password]) => `${authField(name)} ${authField(password)}\n`)
      .join(''),
  );

  /** Starts pgbouncer on `port`; resolves once it listens, rejects with its log if it exits first. */
  const launch = (port: number): Promise<void> => {
    const settings: Record<string, string | number> = {
      listen_addr: '127.0.0.1',
      listen_port: port,
      unix_socket_dir: '', // no Unix socket: TCP on loopback only
      auth_type: 'scram-sha-256',
      auth_file: authFile,
      admin_users: ADMIN,
      pool_mode: 'transaction',
      default_pool_size: poolSize,
      min_pool_size: 0,
      reserve_pool_size: 0,
      max_client_conn: options.maxClientConn ?? 500,
      logfile: logFile,
      pidfile: pidFile,
      ...options.settings,
    };
    write(
      ini,
      [
        '; test/support/pgbouncer.ts',
        '[databases]',
        `* = host=127.0.0.1 port=${server.port}`,
        '[pgbouncer]',
        ...Object.entries(settings).map(([name, value]) => `${name} = ${value}`),
        '',
      ].join('\n'),
    );
    return new Promise((resolve, reject) => {
      const argv = [...as.prefix, PGBOUNCER, ini];
      const started = spawn(argv[0]!, argv.slice(1), {
        cwd: root,
        env: cleanEnv(),
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      child = started;
      let stderr = '';
      let up = false;
      started.on('error', reject);
      // In the foreground PgBouncer logs to stderr as well as to its log file: stderr is read to
      // the end (a full pipe would block the bouncer), and kept only until it is up.
      started.stderr.setEncoding('utf8').on('data', (chunk: string) => {
        if (up) return;
        stderr += chunk;
        if (/LOG process up: /.test(stderr)) {
          up = true;
          stderr = '';
          pid = readPid();
          if (pid === undefined) reject(new Error(`pgbouncer is up but wrote no pid file ${pidFile}`));
          else resolve();
        }
      });
      // 'close', not 'exit': its stderr has been read to the end by then.
      started.on('close', (code, signal) => {
        if (!up) reject(new Error(`pgbouncer exited (${signal ?? code}) before it was up:\n${stderr || log()}`));
      });
    });
  };

  let port = 0;
  try {
    for (let attempt = 1; ; attempt++) {
      port = await freeLoopbackPort();
      try {
        await launch(port);
        break;
      } catch (error) {
        // Someone took the port between our probe and the bouncer's bind: try another one.
        if (attempt < 5 && /Address already in use/i.test((error as Error).message)) continue;
        throw error;
      }
    }
  } catch (error) {
    guard.release();
    emergencyStop();
    throw error;
  }
  child!.unref();
  (child!.stderr as unknown as { unref?: () => void }).unref?.();

  const url = (database = 'postgres', user?: string, password?: string): string => {
    const who =
      user === undefined
        ? `${encodeURIComponent(ADMIN)}:${encodeURIComponent(server.adminPassword)}`
        : password === undefined
          ? encodeURIComponent(user)
          : `${encodeURIComponent(user)}:${encodeURIComponent(password)}`;
    return `postgres://${who}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
  };

  // One direct connection to the server for the counts, opened on first use: a sampler that
  // connected per sample would itself take a backend and time from what it measures.
  let counter: Promise<pg.Client> | undefined;
  const counterClient = (): Promise<pg.Client> =>
    (counter ??= (async () => {
      const client = new pg.Client({ connectionString: server.adminUrl, application_name: 'tk-pgbouncer-counter' });
      client.on('error', () => undefined);
      await client.connect();
      return client;
    })());

  const bouncer: PgBouncer = {
    port,
    root,
    get pid() {
      return pid;
    },
    poolSize,
    url,
    async serverConnections(query = {}) {
      const counted = query.users ?? Object.keys(users).filter((name) => name !== ADMIN);
      const client = await counterClient();
      const result = await client.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
         WHERE backend_type = 'client backend' AND usename = ANY($1::text[]) AND ($2::text IS NULL OR datname = $2) AND pid <> pg_backend_pid()`,
        [counted, query.database ?? null],
      );
      return result.rows[0]!.n;
    },
    async show(what) {
      if (!/^[A-Za-z_]+$/.test(what)) throw new Error(`SHOW ${what}: not a console command`);
      const client = new pg.Client({ connectionString: url('pgbouncer') });
      client.on('error', () => undefined);
      await client.connect();
      try {
        // The console speaks only the simple query protocol: a query without parameters.
        return (await client.query(`SHOW ${what}`)).rows as Record<string, unknown>[];
      } finally {
        await client.end().catch(() => undefined);
      }
    },
    log,
    async stop() {
      if (removed) return;
      removed = true;
      const client = counter;
      counter = undefined;
      await client?.then((c) => c.end()).catch(() => undefined);
      if (child && child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child!.once('exit', resolve));
        kill('SIGTERM'); // PgBouncer's fast exit
        const timer = setTimeout(() => kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }
      pid = undefined;
      guard.release();
      rmSync(root, { recursive: true, force: true });
    },
  };
  return bouncer;
}

/** For a test file: one bouncer in front of `server()`, started in beforeAll (after the server's) and stopped in afterAll. */
export function usePgBouncer(
  hooks: { beforeAll(fn: () => Promise<void>, timeout?: number): void; afterAll(fn: () => Promise<void>, timeout?: number): void },
  server: () => PgServer,
  options: PgBouncerOptions | (() => PgBouncerOptions | Promise<PgBouncerOptions>) = {},
): () => PgBouncer {
  let bouncer: PgBouncer | undefined;
  hooks.beforeAll(async () => {
    bouncer = await startPgBouncer(server(), typeof options === 'function' ? await options() : options);
  }, 60_000);
  hooks.afterAll(async () => {
    await bouncer?.stop();
  }, 30_000);
  return () => {
    if (!bouncer) throw new Error('usePgBouncer: the bouncer is started in beforeAll; call the accessor inside a test');
    return bouncer;
  };
}
