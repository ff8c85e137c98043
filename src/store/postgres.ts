// The PostgreSQL team authority's rows (spec §4): every machine of a team shares Todos, leases and one
// receipt chain through one server. Rows only, like sqlite.ts; the policy is src/ledger/ledger.ts.
//
// How the rules of §4 are kept:
// - Time: `tx.clock()` is the server's `clock_timestamp()`, so lease times never come from a client.
// - Concurrency: READ COMMITTED; unique indexes guarantee one active lease per Todo and per Owner. A
//   write transaction locks the Todo row it decides about (`todo()` is FOR UPDATE) and the chain head
//   (`chainHead()` through `turnkeeper.lock_chain_head()`), only for the length of that transaction:
//   never while an agent works. Its receipts go to the server in one `turnkeeper.append_receipts`
//   call, and the database's trigger checks each extends the head and moves it (schema v2). Lease
//   updates are compare-and-sets on the version the Ledger planned from, with their row count checked.
// - The head is every write's queue: a claim holds it for the server's time only. Its receipts are
//   appended in its COMMIT message, put after the head by the server (`appendAtCommit`, `commitText`);
//   writes whose answer nobody reads travel with the next statement (`deferWrite`) and the server's
//   clock with BEGIN. On a busy host every answer waits for the client's turn on the CPU, and a lock
//   held across those turns queued every other hook behind it (docs/testing.md, "The burst").
// - All or nothing: a statement that fails inside a write ends it (no COMMIT follows; a client-side
//   timeout drops the connection, so the server rolls back), and a COMMIT answered ROLLBACK fails.
// - Retries: only serialization failures and deadlocks (40001, 40P01), and a unique violation (23505),
//   which means another transaction won a race the locks did not cover: the decision is made again
//   from fresh reads, never replayed blindly.
// - A connection lost during COMMIT is ambiguous: `AmbiguousCommitError`; the Ledger re-reads and
//   decides (claims are idempotent per Turn) or reports the outcome unknown.
// - No advisory locks, no session state (SET LOCAL only, no named statements): safe behind a
//   transaction-mode pooler. Bounds: docs/team.md "Bounds" (src/ledger/open.ts sets them).
// - Credentials never leave this file: `location` is host:port/database, errors are redacted.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Client, ClientConfig, QueryConfig, QueryResult, QueryResultRow } from 'pg';
import { ZERO_DIGEST } from '../core/canonical';
import { ChainWalker, RECEIPT_PREV_HASH_MARKER_TEXT, RECEIPT_SEQ_MARKER_TEXT, STORE_WIDE_KINDS, type ChainLink, type ChainReport } from '../core/receipts';
import type { TreeKey } from '../core/merkle';
import type { Lease } from '../core/lease';
import type { Owner } from '../core/ids';
import {
  AmbiguousCommitError,
  SchemaTooNewError,
  StoreUnavailableError,
  type ReceiptPage,
  type ReceiptRow,
  type SessionRecord,
  type SessionTouch,
  type StoreHealth,
  type StoredCapture,
  type StoredReady,
  type Todo,
  type TodoDependency,
  type TodoStatus,
} from './authority';
import {
  appendPreparedNow,
  decisionMoved,
  type ClaimOfTurn,
  type FeedMode,
  type GoalRecord,
  type HeldElsewhere,
  type PreparedAppend,
  type ReceiptInsert,
  type StorePort,
  type StoreTx,
} from './port';
import { faultPoint } from './faults';
import {
  CAPTURE_COLUMNS,
  captureValues,
  LEASE_COLUMNS,
  LEASE_COLUMNS_OF_L,
  leaseValues,
  TODO_COLUMNS,
  todoValues,
  toCapture,
  toLease,
  sessionTurnParams,
  toSession,
  toTodo,
  type CaptureRowRaw,
  type LeaseRowRaw,
  type SessionRowRaw,
  type TodoRowRaw,
} from './rows';
import { hookRoleGrants, PG_MIGRATIONS, PG_SCHEMA_VERSION } from './postgresSchema';

export interface PostgresOptions {
  readonly url: string;
  /**
   * Bound on one connection attempt, TLS and authentication included (4 s). With a `deadline` (a hook)
   * it bounds the server's silence instead: a server that keeps answering is waited for until
   * DEADLINE_RESERVE_MS before the deadline, one that goes quiet this long is given up.
   */
  readonly connectTimeoutMs?: number;
  /** Bound on the TCP handshake (spec §4: ≤ 2 s): a server or network that does not answer fails within it. Default: connectTimeoutMs. */
  readonly answerTimeoutMs?: number;
  /**
   * How long to keep trying while a live server answers that it is busy (connection slots full,
   * starting up): a burst beyond max_connections queues instead of failing. Default 0: one attempt.
   * A write's BEGIN may wait as long (default 4 s) for its answer: behind a transaction-mode pooler
   * that is the queue for a free server connection, and it is not taken from the write's own bound.
   */
  readonly connectQueueMs?: number;
  /** Bound on every statement outside a write transaction; a stalled network fails within it. */
  readonly statementTimeoutMs?: number;
  /**
   * Bound on one write transaction, all its statements and retries together (default: the statement
   * bound + 1 s). Inside a write a statement may wait for another transaction's row lock (the Todo,
   * the chain head): under a burst of claims (64 hooks at once) those waits queue up, and one wait
   * alone could outlast a statement bound, failing a claim that was only waiting its turn. A stalled
   * network still fails within this bound. For a hook (statements ≤ 1.5 s) that is 2.5 s, so start-up,
   * the write and a reconnect after an ambiguous COMMIT (≤ 2 s) stay inside its 5 s.
   */
  readonly transactionTimeoutMs?: number;
  /**
   * When everything must be over (performance.now() ms), a hook's deadline: the wait for a connection
   * slot ends DEADLINE_RESERVE_MS before it, and no write's bound runs past it.
   */
  readonly deadline?: number;
  /** For `store init` only: create or migrate the schema instead of refusing a missing or older one. */
  readonly initialize?: boolean;
}

const RETRYABLE = new Set(['40001', '40P01', '23505']);
const MAX_ATTEMPTS = 8;
/**
 * How much longer than the server's own bound the client waits for an answer inside a write. The
 * server ends a statement at statement_timeout with an error the client can act on (roll back, retry);
 * only a server or network that stopped answering altogether reaches the client's timer.
 */
const CLIENT_TIMER_GRACE_MS = 500;
const APPEND_FUNCTION_NAME = 'turnkeeper.append_receipts';
/** The channel a new change-feed listener NOTIFYs itself on, to learn whether LISTEN reaches it. */
const FEED_PROBE_CHANNEL = 'turnkeeper_feed_probe';
/** How long a listener waits for its own probe: a server that answers at all delivers it in milliseconds. */
const FEED_PROBE_MS = 2000;

/**
 * BEGIN, with the server's own bounds for what is left of the write's time: each statement (a wait
 * for a row lock included) ends at statement_timeout with an error, and a client that goes quiet in
 * the middle (a stalled network, a frozen process) loses its session, and with it the row locks it
 * holds, instead of holding every other claim up. SET LOCAL lasts for this transaction only: nothing
 * stays on the connection that a transaction-mode pooler would hand to someone else.
 */
function beginWithin(remainingMs: number, primeAppend: boolean): string {
  const ms = Math.max(1, Math.floor(remainingMs));
  const begin = `BEGIN; SET LOCAL statement_timeout = ${ms}; SET LOCAL idle_in_transaction_session_timeout = ${ms + CLIENT_TIMER_GRACE_MS}`;
  return `${begin}; ${primeAppend ? `${PRIME_APPEND}; ` : ''}${SERVER_CLOCK}, ${TRANSACTION_ID}`;
}

/**
 * The write's transaction id, read with the clock in its BEGIN (which gives the transaction one at
 * once instead of at its first write): after a COMMIT whose answer was lost, another connection asks
 * the server what became of it (pg_xact_status, made for exactly this) instead of guessing.
 */
const TRANSACTION_ID = 'pg_current_xact_id()::text AS xid';
/** How long a write whose COMMIT answer was lost keeps asking the server for its transaction's fate. */
const LOST_COMMIT_INQUIRY_MS = 2000;

/**
 * The server's clock in ms, the last statement of every write's BEGIN: nearly every write decides with
 * it first (`tx.clock`), and a round trip of its own was one more turn of the client on a busy host.
 */
/** A claim's lock of its Todo's row (StoreTx.claimState with lockTodo), whatever its version. */
const LOCK_TODO = 'SELECT 1 FROM turnkeeper.todos WHERE goal = $1 AND id = $2 FOR UPDATE; ';
/**
 * The same lock, kept only if the row is still the version `$seen` (its xmin, as the claim's unlocked
 * read saw it): otherwise the subtransaction that took it is rolled back, which releases it at once,
 * on the server. A SELECT FOR UPDATE whose row changed while it waited locks the newest version even
 * when its condition then excludes it, until the transaction ends: a turn of the client later.
 */
const LOCK_TODO_AS_SEEN = `DO $lock$ BEGIN
  BEGIN
    PERFORM 1 FROM turnkeeper.todos WHERE goal = $1 AND id = $2 AND xmin::text = $seen FOR UPDATE;
    IF NOT FOUND THEN RAISE SQLSTATE 'TKMOV'; END IF;
  EXCEPTION WHEN SQLSTATE 'TKMOV' THEN NULL;
  END;
END $lock$; `;
/** Everything a claim decides from, in one statement (StoreTx.claimState); the Todo's row with its version (xmin). */
const CLAIM_STATE = `SELECT
           (SELECT row_to_json(t) FROM (SELECT *, xmin::text AS row_version FROM turnkeeper.todos WHERE goal = $1 AND id = $2) t) AS todo,
           (SELECT row_to_json(l) FROM (SELECT ${LEASE_COLUMNS} FROM turnkeeper.leases WHERE goal = $1 AND todo = $2 AND status = 'active') l) AS active,
           (SELECT MAX(epoch) FROM turnkeeper.leases WHERE goal = $1 AND todo = $2) AS last_epoch,
           (SELECT row_to_json(r) FROM (
              SELECT c.id AS capture, l.epoch AS epoch, l.status AS status FROM turnkeeper.captures c JOIN turnkeeper.leases l ON l.capture = c.id
              WHERE c.goal = $1 AND c.todo = $2 AND c.agent = $3 AND c.session = $4 AND c.turn = $5
              ORDER BY (l.status = 'active') DESC, l.epoch DESC LIMIT 1) r) AS recorded,
           (SELECT row_to_json(o) FROM (SELECT ${LEASE_COLUMNS} FROM turnkeeper.leases WHERE owner = $6 AND status = 'active') o) AS owner_holds,
           (SELECT COALESCE(c.checkout, c.cwd) FROM turnkeeper.leases l JOIN turnkeeper.captures c ON c.id = l.capture
              WHERE l.goal = $1 AND l.todo = $2 AND l.status = 'active') AS active_checkout,
           (SELECT row_to_json(p) FROM (SELECT goal, checkout FROM turnkeeper.checkouts WHERE place = $7) p) AS place_goal`;

const SERVER_CLOCK = 'SELECT (extract(epoch FROM clock_timestamp()) * 1000)::int8 AS now';

/**
 * The lock of the chain head for a hook's append at commit, in a queue that moves. Every write of
 * every machine takes the head in turn, so under a burst a write waits for all the writes before it:
 * 64 claims on two busy cores made a queue of about 4 s, and the last in it passed the write's bound
 * (the busy timeout) while the head moved the whole time (CI at f067326: two refusals and a claim
 * answered [store_unavailable]). So a hook waits for the head as long as it moves, until its own
 * deadline (`remainingMs`, the statement's bound from here on), and gives up as a SQLite writer past
 * its busy timeout does when the head has not moved for `stillMs`: a holder that stopped (a stopped
 * server session, a person's open transaction) ends the wait within that. Each wait is one
 * lock_timeout in a subtransaction; a lock taken there is kept when it commits. What follows the lock
 * (the append, COMMIT) has the busy timeout again: a server slow at a statement is not a queue.
 */
function lockHeadFollowingTheQueue(stillMs: number, remainingMs: number): string {
  const still = Math.max(1, Math.floor(stillMs));
  return `SET LOCAL statement_timeout = ${Math.max(1, Math.floor(remainingMs))}; DO $head$ DECLARE
  seen int8 := (SELECT seq FROM turnkeeper.receipt_head WHERE id = 1);
  moved int8;
BEGIN
  LOOP
    BEGIN
      PERFORM set_config('lock_timeout', '${still}', true);
      PERFORM 1 FROM turnkeeper.lock_chain_head();
      PERFORM set_config('lock_timeout', '0', true);
      RETURN;
    EXCEPTION WHEN lock_not_available THEN
      moved := (SELECT seq FROM turnkeeper.receipt_head WHERE id = 1);
      IF moved IS NOT DISTINCT FROM seen THEN
        RAISE EXCEPTION 'the receipt chain''s head did not move for ${still} ms' USING ERRCODE = 'lock_not_available';
      END IF;
      seen := moved;
    END;
  END LOOP;
END $head$; SET LOCAL statement_timeout = ${still}`;
}

/**
 * The append function called with nothing to append, in the BEGIN of a session's first write. A fresh
 * server session loads PL/pgSQL and compiles the function at its first call: about 9 ms on an idle
 * server, and several times that on a loaded one (measured in docs/testing.md, "The burst"). Paid
 * here, that time is spent before the chain head is locked instead of while every other write waits
 * for it. It appends nothing, locks nothing and writes nothing; a role without EXECUTE skips it.
 */
const PRIME_APPEND =
  `SELECT CASE WHEN has_function_privilege('${APPEND_FUNCTION_NAME}(int8[], text[], text[], text[], text[], text[], text[])', 'EXECUTE') ` +
  `THEN ${APPEND_FUNCTION_NAME}('{}', '{}', '{}', '{}', '{}', '{}', '{}') END`;

/**
 * host:port/database of a postgres:// URL, never its user or password: the place pg connects to. pg
 * (pg-connection-string) takes `host` and `port` from the query before the authority's, so
 * `postgres://u@/db?host=10.0.0.5&port=5433` is 10.0.0.5:5433 and a Unix socket directory in `host=`
 * is named as that directory. What the URL leaves out pg takes from PGHOST, then localhost, and 5432.
 */
export function redactedLocation(url: string): string {
  const read = readPgUrl(url);
  if (!read) return '(unparsable postgres URL)';
  try {
    const authorityHost = read.hostless ? '' : decodeURIComponent(read.url.hostname.replace(/^\[(.+)\]$/, '$1'));
    const host = lastParam(read.url, 'host') || authorityHost;
    const port = lastParam(read.url, 'port') || read.url.port || '5432';
    const database = decodeURI(read.url.pathname.slice(1)) || '(default database)';
    const shown = host === '' ? '(PGHOST)' : host.includes(':') && !host.startsWith('/') ? `[${host}]` : host;
    return `${shown}:${port}/${database}`;
  } catch {
    return '(unparsable postgres URL)';
  }
}

/**
 * A postgres:// URL as pg-connection-string reads it: spaces and stray '%' encoded first, and an
 * authority with credentials but no host (`postgres://u:pw@/db?host=…`), which WHATWG URL refuses,
 * read with a stand-in host (`hostless`).
 */
function readPgUrl(text: string): { url: URL; hostless: boolean } | undefined {
  const encoded = / |%[^a-f0-9]|%[a-f0-9][^a-f0-9]/i.test(text) ? encodeURI(text).replace(/%25(\d\d)/g, '%$1') : text;
  try {
    return { url: new URL(encoded), hostless: false };
  } catch {
    try {
      return { url: new URL(encoded.replace('@/', '@___DUMMY___/')), hostless: true };
    } catch {
      return undefined;
    }
  }
}

/** A query parameter as pg reads it: the last of its name wins; '' when absent. */
const lastParam = (url: URL, name: string): string => url.searchParams.getAll(name).at(-1) ?? '';

/** The passwords of a URL (to scrub from any message): the query's `password=` (which pg uses first) and the authority's. */
function passwordsOf(url: string): string[] {
  const read = readPgUrl(url);
  if (!read) return [];
  let authority = read.url.password;
  try {
    authority = decodeURIComponent(authority);
  } catch {
    // kept as written
  }
  return [...new Set([...read.url.searchParams.getAll('password'), authority])].filter((password) => password !== '');
}

let pgModule: typeof import('pg') | undefined;
/** Loads the driver (once per process); a hook loads it before it waits for a connection slot (ledger/open.ts). */
export function loadPg(): typeof import('pg') {
  if (!pgModule) {
    // require, not import(): pg is CommonJS (dist/pg.js in the bundles), and import() would take it
    // through the ESM loader, milliseconds of every team-store hook. Loaded on first connect only.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const loaded = require('pg') as typeof import('pg') & { default?: typeof import('pg') };
    const pg = loaded.default ?? loaded;
    pgModule = pg;
    // bigint columns hold ms times and sequence numbers, all safe integers.
    pg.types.setTypeParser(20, (value: string) => Number(value));
  }
  return pgModule;
}

/**
 * Calls `onSilence` once `silenceMs` pass with no heard() since the last one (armed by the first).
 * A process that waited long for the CPU runs its due timers before it reads its sockets: the
 * silence is judged one read of them later (setImmediate runs after the poll phase), so an answer
 * that is already here counts (test/unit/silence-watch.test.ts). stop() disarms it, a check already
 * due included.
 */
export function silenceWatch(silenceMs: number, onSilence: () => void): { heard(): void; stop(): void } {
  let timer: NodeJS.Timeout | undefined;
  let heard = 0;
  return {
    heard() {
      clearTimeout(timer);
      heard += 1;
      const heardWhenArmed = heard;
      timer = setTimeout(
        () =>
          setImmediate(() => {
            if (heard === heardWhenArmed) onSilence();
          }),
        silenceMs,
      );
    },
    stop() {
      clearTimeout(timer);
      heard += 1;
    },
  };
}

/** Connects one client (no pool: a hook is one short process; the extension keeps one client; `store init` reads a role's grants on one of its own). */
export async function connectClient(options: PostgresOptions): Promise<Client> {
  const pg = loadPg();
  const answerMs = options.answerTimeoutMs ?? options.connectTimeoutMs ?? 2000;
  const silenceMs = Math.max(options.connectTimeoutMs ?? 2000, answerMs);
  // A hook's connect ends where its queue ends (connectQueued), not at silenceMs: see below.
  const wholeMs = options.deadline === undefined ? silenceMs : Math.max(silenceMs, Math.floor(options.deadline - DEADLINE_RESERVE_MS - performance.now()));
  const config: ClientConfig = {
    connectionString: options.url,
    connectionTimeoutMillis: wholeMs,
    query_timeout: options.statementTimeoutMs ?? 3000,
    application_name: 'turnkeeper',
  };
  const client = new pg.Client(config);
  // pg takes the password from the URL or PGPASSWORD; with neither, pg 8 would read the pgpass file
  // itself and print a DeprecationWarning on stderr. The password function it documents does the
  // same lookup, with the same module, and says where it looked when there is none (./pgPassword.ts).
  if (client.password == null) Object.assign(client, { password: (await import('./pgPassword')).pgpassPassword });
  // A server that goes away later must fail the operation in flight, not crash the process.
  client.on('error', () => undefined);
  // Two bounds: the TCP handshake (a server or network that does not answer at all fails within
  // answerMs), and the connect with TLS and authentication. A live server or pooler under a burst
  // answers its SCRAM exchanges late: on two busy cores one connect of a hook took 4 s and more, each
  // exchange answered (docs/testing.md, "The burst"). So a hook waits for a server that keeps
  // answering until its queue ends (wholeMs), and gives up on one that says nothing for silenceMs
  // (a stalled network, a stopped server whose kernel still accepts): the wait follows the server.
  const connection = (client as unknown as { connection?: import('node:events').EventEmitter & { stream?: import('node:net').Socket } }).connection;
  const stream = connection?.stream;
  let answered = false;
  stream?.once('connect', () => (answered = true));
  const noAnswer = setTimeout(() => {
    if (!answered) stream?.destroy(new Error(`no answer within ${answerMs} ms`));
  }, answerMs);
  // connection.stream: the TLS socket once pg has upgraded to it.
  const silence = silenceWatch(silenceMs, () => connection?.stream?.destroy(new Error(`the server said nothing for ${silenceMs} ms while connecting`)));
  const quiet = (): void => silence.heard();
  const overTls = (): void => void connection?.stream?.on('data', quiet);
  if (wholeMs > silenceMs && stream) {
    stream.once('connect', quiet);
    stream.on('data', quiet);
    connection?.once('sslconnect', overTls);
  }
  try {
    await client.connect();
    return client;
  } catch (error) {
    await client.end().catch(() => undefined);
    throw new StoreUnavailableError(`cannot connect to the team store ${redactedLocation(options.url)}: ${scrubber(options.url)((error as Error).message)}`, {
      cause: error,
    });
  } finally {
    clearTimeout(noAnswer);
    silence.stop();
    stream?.off('data', quiet);
    connection?.stream?.off('data', quiet);
    connection?.off('sslconnect', overTls);
  }
}

/**
 * SQLSTATEs with which a live server refuses a connection for now: its connection slots are full
 * (53300), it is short of memory (53000), it is starting up or shutting down (57P03). A burst of hooks
 * beyond `max_connections` waits its turn in this loop instead of answering [store_unavailable].
 */
const SERVER_BUSY = new Set(['53300', '53000', '57P03']);

/**
 * What a hook keeps of its deadline for its work once it has a connection: a wait for a slot ends this
 * long before the deadline. Under a 64-hook burst on two cores a refusal's or a claim's statements
 * took 1 to 3 s from the connect (docs/testing.md, "The burst").
 */
export const DEADLINE_RESERVE_MS = 1500;

/**
 * connectClient, retried with jittered back-off while the server answers that it is busy and
 * `connectQueueMs` lasts. A server that does not answer, refuses the port or refuses the role fails at
 * the first attempt: waiting would not change that, and a hook must not hold a prompt for it.
 */
async function connectQueued(options: PostgresOptions): Promise<Client> {
  const until = Math.min(performance.now() + (options.connectQueueMs ?? 0), (options.deadline ?? Infinity) - DEADLINE_RESERVE_MS);
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await connectClient(options);
    } catch (error) {
      const code = ((error as { cause?: { code?: unknown } }).cause?.code ?? '') as string;
      const pause = Math.min(500, 40 * attempt) * (0.5 + Math.random());
      if (!SERVER_BUSY.has(code) || performance.now() + pause >= until) throw error;
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}

export async function openPostgresRows(options: PostgresOptions): Promise<PostgresRows> {
  const location = redactedLocation(options.url);
  const scrub = scrubber(options.url);
  const client = await connectQueued(options);
  try {
    if (!options.initialize) {
      const transactionTimeoutMs = options.transactionTimeoutMs ?? (options.statementTimeoutMs ?? 3000) + 1000;
      // The schema's version is checked with this connection's first statement, in its message
      // (PostgresRows.metaPending): a round trip of its own was one more turn of a hook on a busy host.
      return new PostgresRows(
        client,
        location,
        scrub,
        undefined,
        () => connectQueued(options),
        () => connectClient({ ...options, statementTimeoutMs: 0 }),
        transactionTimeoutMs,
        4000,
        options.deadline,
      );
    }
    let meta = await readMeta(client);
    if (options.initialize) {
      const version = meta.get('schema_version') === undefined ? 0 : Number(meta.get('schema_version'));
      if (version > PG_SCHEMA_VERSION) throw new SchemaTooNewError(version, PG_SCHEMA_VERSION);
      for (let at = version; at < PG_SCHEMA_VERSION; at += 1) await inTransaction(client, () => client.query(PG_MIGRATIONS[at]!));
      // The migrations wrote the identity and the version: read them again (store init only).
      if (version < PG_SCHEMA_VERSION) meta = await readMeta(client);
    }
    const transactionTimeoutMs = options.transactionTimeoutMs ?? (options.statementTimeoutMs ?? 3000) + 1000;
    return new PostgresRows(
      client,
      location,
      scrub,
      openedMeta(meta),
      () => connectQueued(options),
      () => connectClient({ ...options, statementTimeoutMs: 0 }),
      transactionTimeoutMs,
      4000,
    );
  } catch (error) {
    await client.end().catch(() => undefined);
    if (error instanceof StoreUnavailableError || error instanceof SchemaTooNewError) throw error;
    throw new StoreUnavailableError(`the team store ${location} cannot be used: ${scrub((error as Error).message)}`, { cause: error });
  }
}

/** The store_meta rows of a store hooks may use, or the error that says why not (and what to run). */
function checkedMeta(meta: ReadonlyMap<string, string>, location: string): ReadonlyMap<string, string> {
  if (meta.get('schema_version') === undefined)
    throw new StoreUnavailableError(`the team store ${location} has no Turnkeeper schema: run turnkeeper store init`);
  const version = Number(meta.get('schema_version'));
  if (version > PG_SCHEMA_VERSION) throw new SchemaTooNewError(version, PG_SCHEMA_VERSION);
  if (version < PG_SCHEMA_VERSION)
    throw new StoreUnavailableError(
      `the team store ${location} has schema version ${version}; run turnkeeper store init to migrate it to ${PG_SCHEMA_VERSION}`,
    );
  return openedMeta(meta);
}

const META_QUERY = 'SELECT key, value FROM turnkeeper.store_meta';

/**
 * The store_meta rows kept from the open, as SQLite keeps them: the identity and the schema version,
 * which never change under an open connection. Every other key (the newest `checkpoint`, the chain's
 * bookkeeping) is read when asked: a long-lived connection (the extension's) must see it move.
 */
const OPENED_META_KEYS = ['store_id', 'schema_version'];
const openedMeta = (meta: ReadonlyMap<string, string>): ReadonlyMap<string, string> => new Map([...meta].filter(([key]) => OPENED_META_KEYS.includes(key)));

async function readMeta(client: Client): Promise<Map<string, string>> {
  try {
    const result = await client.query<{ key: string; value: string }>(META_QUERY);
    return new Map(result.rows.map((row) => [row.key, row.value]));
  } catch (error) {
    if ((error as { code?: string }).code === '42P01' || (error as { code?: string }).code === '3F000') return new Map(); // no schema yet
    throw error;
  }
}

async function inTransaction<T>(client: Client, work: () => Promise<T>): Promise<T> {
  await client.query('BEGIN');
  try {
    const result = await work();
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}

function scrubber(url: string): (text: string) => string {
  const passwords = passwordsOf(url);
  return (text) => {
    let out = text.split(url).join(redactedLocation(url));
    for (const password of passwords) out = out.split(password).join('***');
    return out;
  };
}

// Same column names as the SQLite schema: one set of row converters (rows.ts) serves both stores.
type LeaseRow = LeaseRowRaw & QueryResultRow;

export class PostgresRows implements StorePort {
  /** The transactions of this connection (writes and chain walks), one after another. */
  private writeQueue: Promise<unknown> = Promise.resolve();
  /** Set inside the work this queue runs (oneTransactionAtATime). */
  private readonly queued = new AsyncLocalStorage<true>();

  /** Whether this connection's server session has loaded the append function (PRIME_APPEND). */
  private appendPrimed = false;

  /** Set when the connection failed: the next operation connects again (after an ambiguous COMMIT, to re-read). */
  private broken = false;

  /** While a write transaction runs: when it must be over (performance.now() ms); its statements share that bound. */
  private deadline: number | undefined;

  constructor(
    private client: Client,
    readonly location: string,
    private readonly scrub: (text: string) => string,
    /** Undefined until this connection's first statement reads it (`metaPending`). */
    private meta: ReadonlyMap<string, string> | undefined,
    private readonly reconnect: () => Promise<Client>,
    /** A second connection for LISTEN: a feed must not wait behind (or hold up) a transaction. */
    private readonly listenerConnection: () => Promise<Client>,
    private readonly transactionTimeoutMs = 6000,
    /** How long a write's BEGIN may wait: for a free server connection behind a pooler, else one round trip. */
    private readonly beginTimeoutMs = 4000,
    /** PostgresOptions.deadline: no write's bound runs past it, and no write commits after it. */
    private hardDeadline = Infinity,
  ) {}

  /**
   * The deadline of the request these kept rows serve now (the warm hook server sets it for each
   * request and clears it after: `StoreCache`); Infinity for none.
   */
  serveUntil(deadline: number | undefined): void {
    this.hardDeadline = deadline ?? Infinity;
  }

  /**
   * LISTEN on channel `turnkeeper` (every receipt insert NOTIFYs the new seq). While the feed is down
   * (server restart, network), poll the head every `pollMs` and reconnect; a change seen either way
   * calls `onChange`. Session state on a dedicated connection is what LISTEN needs; the transactional
   * connection stays stateless.
   *
   * A transaction-mode pooler (PgBouncer) accepts LISTEN but leaves the registration on a pooled
   * server connection, and the notifications go nowhere (test/integration/postgres-pooler.test.ts). So
   * the first listener proves it hears, in the background: it NOTIFYs a nonce on a probe channel from
   * the transactional connection and waits for it. Heard: the feed is live ('listen'). Not heard within
   * FEED_PROBE_MS: the listener is closed and the head is polled every `pollMs` for the life of this
   * feed ('polling'). `onMode` is told which, so the editor can say it.
   *
   * The head known at the start is the baseline: a poll that finds it unchanged calls back nothing.
   * The poll reads through `read()`, so a transactional connection lost with the server is replaced
   * (a poll that only re-used it would fail at every tick until something else reconnected). When the
   * feed comes back after being lost, the head is read at once: a change made while nobody listened
   * is reported then, not a poll later. One connect at a time; a connection that errors is dropped
   * only if it is still the feed's.
   */
  async follow(onChange: (headSeq: number | undefined) => void, pollMs = 5000, onMode?: (mode: FeedMode) => void): Promise<() => void> {
    let stopped = false;
    let listener: Client | undefined;
    let connecting = false;
    let lost = false;
    let lastHead: number | undefined;
    /** Set once a listener did not hear its own probe: LISTEN does not reach us here; poll only. */
    let deaf = false;
    let probe: { nonce: string; heard: () => void } | undefined;
    /** The first listener's probe: under way, then answered (heard: live; not heard: deaf). */
    let proving = false;
    let proven = false;
    const report = (seq: number | undefined): void => {
      if (stopped || seq === lastHead) return;
      lastHead = seq;
      onChange(seq);
    };
    const readHead = (): Promise<number | undefined> =>
      this.read(async () => (await this.one<{ seq: number }>('SELECT seq FROM turnkeeper.receipt_head WHERE id = 1'))?.seq);
    const check = (): Promise<void> => readHead().then(report, () => undefined);
    const connect = async (): Promise<void> => {
      if (connecting || listener || stopped || deaf) return;
      connecting = true;
      let client: Client | undefined;
      try {
        client = await this.listenerConnection();
        const own = client;
        own.on('notification', (message) => {
          if (message.channel === FEED_PROBE_CHANNEL) {
            if (probe && message.payload === probe.nonce) probe.heard();
            return;
          }
          const seq = Number(message.payload);
          if (!Number.isSafeInteger(seq)) return void (!stopped && onChange(undefined));
          // Receipts are numbered in commit order; an older seq than the known head is no news.
          if (lastHead === undefined || seq > lastHead) report(seq);
        });
        own.on('error', () => {
          if (listener === own) {
            listener = undefined;
            lost = true;
          }
          void own.end().catch(() => undefined);
        });
        await own.query(`LISTEN turnkeeper; LISTEN ${FEED_PROBE_CHANNEL}`);
        if (stopped) return void own.end().catch(() => undefined);
        listener = own;
        // The first listener proves it hears, in the background: follow() (and the editor's first
        // refresh) does not wait for the probe. Until it answers, the poll runs as always.
        if (!proven && !proving) {
          proving = true;
          void this.hears(own, (pending) => (probe = pending)).then((heard) => {
            probe = undefined;
            proving = false;
            if (stopped) return;
            if (heard) {
              proven = true;
              onMode?.({ kind: 'listen' });
              return;
            }
            // Lost while it waited (a restart): not a verdict; the next listener probes again.
            if (listener !== own) return;
            deaf = true;
            listener = undefined;
            void own.end().catch(() => undefined);
            onMode?.({
              kind: 'polling',
              everyMs: pollMs,
              reason: `a NOTIFY sent to ${this.location} did not come back to its listener within ${FEED_PROBE_MS} ms (a transaction-mode pooler in between?)`,
            });
          });
        }
        if (lost) {
          lost = false;
          await check();
        }
      } catch {
        void client?.end().catch(() => undefined);
        lost = true; // polling goes on; the next tick tries again
      } finally {
        connecting = false;
      }
    };
    const poll = setInterval(() => {
      if (stopped) return;
      void check();
      void connect();
    }, pollMs);
    poll.unref?.();
    await connect();
    // The baseline, read after LISTEN: a change in between is reported by its NOTIFY, never lost.
    const baseline = await readHead().catch(() => undefined);
    lastHead ??= baseline;
    return () => {
      stopped = true;
      clearInterval(poll);
      void listener?.end().catch(() => undefined);
      listener = undefined;
    };
  }

  /**
   * Whether `listener` hears a NOTIFY: one nonce on the probe channel, sent from the transactional
   * connection (another server session, as every hook's is), awaited for FEED_PROBE_MS.
   */
  private async hears(listener: Client, expect: (pending: { nonce: string; heard: () => void }) => void): Promise<boolean> {
    const nonce = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const heard = new Promise<boolean>((resolve) => {
      expect({ nonce, heard: () => resolve(true) });
      timer = setTimeout(() => resolve(false), FEED_PROBE_MS);
      listener.once('end', () => resolve(false));
    });
    try {
      await this.read(() => this.q('SELECT pg_notify($1, $2)', [FEED_PROBE_CHANNEL, nonce]));
      return await heard;
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
    }
  }

  /** The reconnect in flight: reads that find the connection broken at once (the feed's poll and a refresh) share it. */
  private reconnecting: Promise<void> | undefined;

  private async usable(): Promise<void> {
    if (!this.broken) return;
    this.reconnecting ??= (async () => {
      const old = this.client;
      this.client = await this.reconnect();
      this.appendPrimed = false;
      this.broken = false;
      void old.end().catch(() => undefined);
    })().finally(() => (this.reconnecting = undefined));
    await this.reconnecting;
  }

  private clockSample: { server: number; sentAt: number; answeredAt: number } | undefined;

  /** The seqs the last write appended in its COMMIT message (`appendAtCommit`). */
  private committedAppend: { first: number; last: number } | undefined;

  appendedAtCommit(): { first: number; last: number } | undefined {
    return this.committedAppend;
  }

  lastClockSample(): { server: number; sentAt: number; answeredAt: number } | undefined {
    return this.clockSample;
  }

  /**
   * Sends `text`, which begins with META_QUERY, and checks the store's schema from its first answer
   * before anything else is read from the rest (checkedMeta: the same refusals an open made).
   */
  private async withMeta(text: string, send: (text: string) => Promise<unknown>): Promise<QueryResult[]> {
    let answers: QueryResult[];
    try {
      answers = (await send(text)) as QueryResult[];
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (code === '42P01' || code === '3F000') checkedMeta(new Map(), this.location); // no schema yet: says so
      throw error;
    }
    this.meta = checkedMeta(new Map(answers[0]!.rows.map((row: { key: string; value: string }) => [row.key, row.value])), this.location);
    return answers;
  }

  /** The opened store_meta rows, read now if no statement has read them yet. */
  private async openedMeta(): Promise<ReadonlyMap<string, string>> {
    if (this.meta === undefined) await this.read(() => this.q('SELECT 1'));
    return this.meta!;
  }

  /** For the clock-skew measurement: one server read, which the caller brackets with its own clock. */
  serverClock(): Promise<number> {
    return this.read(async () => (await this.q<{ now: number }>('SELECT (extract(epoch FROM clock_timestamp()) * 1000)::int8 AS now')).rows[0]!.now);
  }

  private async q<R extends QueryResultRow = QueryResultRow>(text: string, values: unknown[] = []) {
    if (this.deadline === undefined) {
      // A transaction's BEGIN (a chain walk's, with its isolation level) must be its first statement.
      if (this.meta === undefined && /^\s*BEGIN\b/i.test(text)) await this.openedMeta();
      if (this.meta !== undefined) return this.client.query<R>(text, values);
      const answers = await this.withMeta(`${META_QUERY}; ${values.length > 0 ? this.inline(text, values) : text}`, (query) => this.client.query(query));
      const own = answers.slice(1);
      return (own.length === 1 ? own[0] : own) as unknown as QueryResult<R>;
    }
    // In a write transaction. Receipts appended so far go first, in one call, so every other statement
    // (a read of what they wrote, COMMIT) sees them.
    if (this.pendingAppends.length > 0) await this.flushAppends();
    return this.statementOfWrite<R>(text, values);
  }

  /**
   * One statement of the open write transaction. The server bounds it (statement_timeout, set at
   * BEGIN); the client's own timer, a little longer, only catches a server or network that stopped
   * answering. Any failure poisons the transaction: it is never followed by a COMMIT. A failure the
   * server did not report (the client's timer, a lost socket) also ends the connection at once, so the
   * server rolls the transaction back and releases its row locks; node-postgres would otherwise drop
   * the timed-out statement from its queue and send the next one (issue: a COMMIT after a dropped
   * statement committed half an append).
   */
  private async statementOfWrite<R extends QueryResultRow>(text: string, values: unknown[]) {
    if (this.txFailure !== undefined) throw this.txFailure;
    const query_timeout = Math.max(1, Math.ceil(this.deadline! - performance.now())) + CLIENT_TIMER_GRACE_MS;
    try {
      if (this.deferred.length === 0) return await this.client.query<R>({ text, values, query_timeout } as QueryConfig);
      // The writes deferred so far go first, in the same message (`deferWrite`): the answers are theirs, then this statement's.
      const deferred = this.deferred;
      this.deferred = [];
      const answers = (await this.client.query({
        text: [...deferred, values.length > 0 ? this.inline(text, values) : text].join('; '),
        query_timeout,
      } as QueryConfig)) as unknown as QueryResult<R>[];
      const own = answers.slice(deferred.length);
      return (own.length === 1 ? own[0] : own) as unknown as QueryResult<R>;
    } catch (error) {
      this.txFailure = error instanceof Error ? error : new Error(String(error));
      if (typeof (error as { code?: unknown }).code !== 'string') this.abandonConnection();
      throw error;
    }
  }

  /**
   * A write whose answer nobody reads (an INSERT, an upsert), inside a write transaction: sent with the
   * transaction's next statement, in one message, instead of a round trip of its own. On a busy host
   * every answer waits for the client's turn on the CPU, and a claim's inserts were three of them. A
   * deferred write that fails fails that next statement, and with it the transaction, as it would have
   * failed it on its own (a unique violation is retried from fresh reads all the same).
   */
  private async deferWrite(text: string, values: unknown[]): Promise<void> {
    if (this.deadline === undefined) {
      await this.q(text, values);
      return;
    }
    if (this.txFailure !== undefined) throw this.txFailure;
    this.deferred.push(this.inline(text, values));
  }

  /**
   * `text` with its $n parameters written as literals, for a message of several statements (the simple
   * query protocol has no parameters): strings through pg's escapeLiteral, integers checked, booleans,
   * NULL, and arrays of those. Only for this file's own statements, none of which has a `$` elsewhere.
   */
  private inline(text: string, values: readonly unknown[]): string {
    const literal = (value: unknown): string => {
      if (value === null || value === undefined) return 'NULL';
      if (typeof value === 'boolean') return value ? 'TRUE' : 'FALSE';
      if (typeof value === 'number') {
        if (!Number.isSafeInteger(value)) throw new Error(`parameter ${value} is not an integer`);
        return String(value);
      }
      if (typeof value === 'string') return this.client.escapeLiteral(value);
      if (Array.isArray(value)) return value.length === 0 ? "'{}'" : `ARRAY[${value.map(literal).join(', ')}]`;
      throw new Error(`parameter of type ${typeof value} cannot be written as a literal`);
    };
    return text.replace(/\$(\d+)/g, (_, n: string) => {
      const at = Number(n) - 1;
      if (at < 0 || at >= values.length) throw new Error(`statement names parameter $${n} of ${values.length}`);
      return literal(values[at]);
    });
  }

  /** A write's BEGIN, bounded by the wait for a pooled server connection rather than by the write's own time. */
  private async begin(text: string): Promise<void> {
    try {
      const sentAt = Date.now();
      const send = (query: string) => this.client.query({ text: query, query_timeout: this.beginTimeoutMs } as QueryConfig);
      const answers = (this.meta === undefined ? (await this.withMeta(`${META_QUERY}; ${text}`, send)).slice(1) : await send(text)) as unknown as {
        rows: { now?: number }[];
      }[];
      this.txClock = answers.at(-1)?.rows[0]?.now;
      this.txId = (answers.at(-1)?.rows[0] as { xid?: string } | undefined)?.xid;
      if (this.txClock !== undefined) this.clockSample = { server: this.txClock, sentAt, answeredAt: Date.now() };
    } catch (error) {
      this.txFailure = error instanceof Error ? error : new Error(String(error));
      if (typeof (error as { code?: unknown }).code !== 'string') this.abandonConnection();
      throw error;
    }
  }

  /** Closes the socket without a word to the server (which then rolls back), and reconnects on next use. */
  private abandonConnection(): void {
    this.broken = true;
    const stream = (this.client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream;
    stream?.destroy();
  }

  /** The receipts appended in this transaction that the server has not seen yet, in seq order. */
  private pendingAppends: ReceiptInsert[] = [];
  /** The chain head as this transaction left it (locked by its first read, so no one else moves it). */
  private txHead: ChainLink | undefined;
  /** Whether this transaction has read (and locked) the head row. */
  private txHeadRead = false;
  /** The server's clock as this transaction's BEGIN read it, until `tx.clock` takes it. */
  private txClock: number | undefined;
  /** The version (xmin) of the Todo row this transaction's unlocked claimState read, for its lock. */
  private txTodoSeen: { goal: string; id: string; version: string } | undefined;
  /** This write transaction's id (pg_current_xact_id, read at BEGIN), for `fateOfLostCommit`. */
  private txId: string | undefined;
  /** Writes of this transaction not sent yet, as literal SQL (`deferWrite`). */
  private deferred: string[] = [];
  /** Receipts (and a check) the server appends in this transaction's COMMIT message (`appendAtCommit`). */
  private atCommit: { receipts: readonly PreparedAppend[]; expect: HeldElsewhere | undefined } | undefined;
  /** The first statement of this transaction that failed: nothing after it is sent, COMMIT least of all. */
  private txFailure: Error | undefined;

  /**
   * COMMIT, and before it, in the same message (one simple query, its values written as literals:
   * pg's escapeLiteral, seqs checked integers), whatever is left to append:
   * - receipts appended at commit (`appendAtCommit`): the head is locked, an `expect` is checked, and each receipt is put after the head by the server:
   *   its template's two markers replaced by the seq and the previous hash, its hash the server's digest
   *   of that text (the chain trigger checks all of it again). From the lock to COMMIT no client has a
   *   turn to take, so a write holds the head for the server's own time only;
   * - receipts built on the head this transaction read: the append function's call.
   * The head is held from its lock until COMMIT and every other write waits for it: a client's turn
   * between answers was most of that time on a busy host, where a process waits for the CPU after
   * every answer (docs/testing.md, "The burst"). A statement that fails stops the message there (the
   * simple query protocol runs nothing after an error), so a refused append or check is never followed
   * by a COMMIT. A connection lost meanwhile leaves the outcome unknown, as a lost COMMIT does
   * (AmbiguousCommitError).
   */
  private commitText(followQueue?: { stillMs: number; remainingMs: number }): string {
    const literal = (value: string | null): string => (value === null ? 'NULL' : this.client.escapeLiteral(value));
    const array = (values: readonly (string | null)[]): string => `ARRAY[${values.map(literal).join(', ')}]::text[]`;
    const later = this.atCommit;
    this.atCommit = undefined;
    if (later) {
      const ctes = ['h0 AS (SELECT seq, hash FROM turnkeeper.lock_chain_head())'];
      later.receipts.forEach(({ receipt }, i) => {
        const before = i === 0 ? 'h0' : `r${i}`;
        ctes.push(
          `d${i + 1} AS (SELECT ${before}.seq + 1 AS seq, replace(replace(${literal(receipt.template!)}, ${literal(RECEIPT_SEQ_MARKER_TEXT)}, ` +
            `'"seq":' || (${before}.seq + 1)), ${literal(RECEIPT_PREV_HASH_MARKER_TEXT)}, '"prevHash":"' || ${before}.hash || '"') AS doc FROM ${before})`,
          `r${i + 1} AS (SELECT seq, doc, 'sha256:' || encode(sha256(convert_to(doc, 'UTF8')), 'hex') AS hash FROM d${i + 1})`,
        );
      });
      const r = later.receipts.map((_, i) => `r${i + 1}`);
      const columns = (pick: (one: PreparedAppend) => string | null) => array(later.receipts.map(pick));
      return [
        followQueue ? lockHeadFollowingTheQueue(followQueue.stillMs, followQueue.remainingMs) : 'SELECT 1 FROM turnkeeper.lock_chain_head()',
        ...(later.expect ? [this.expectation(later.expect)] : []),
        `WITH ${ctes.join(', ')} SELECT ${APPEND_FUNCTION_NAME}(ARRAY[${r.map((x) => `${x}.seq`).join(', ')}]::int8[], ` +
          `ARRAY[${r.map((x) => `${x}.doc`).join(', ')}]::text[], ARRAY[${r.map((x) => `${x}.hash`).join(', ')}]::text[], ` +
          `${columns((one) => one.goal)}, ${columns((one) => one.todo)}, ${columns((one) => one.capture)}, ${columns((one) => one.kind)}) FROM ${r.join(', ')}`,
        'COMMIT',
      ].join('; ');
    }
    const rows = this.pendingAppends;
    this.pendingAppends = [];
    if (rows.length === 0) return 'COMMIT';
    const seqs = rows.map((row) => {
      if (!Number.isSafeInteger(row.seq)) throw new Error(`receipt seq ${row.seq} is not an integer`);
      return String(row.seq);
    });
    return (
      `SELECT ${APPEND_FUNCTION_NAME}(ARRAY[${seqs.join(', ')}]::int8[], ${array(rows.map((row) => row.doc))}, ${array(rows.map((row) => row.hash))}, ` +
      `${array(rows.map((row) => row.goal))}, ${array(rows.map((row) => row.todo))}, ${array(rows.map((row) => row.capture))}, ${array(rows.map((row) => row.kind))}); COMMIT`
    );
  }

  /**
   * A statement that fails with decisionMoved's SQLSTATE (40001, retried) unless `expect` holds now:
   * each condition a plain read, which under READ COMMITTED sees what is committed (port.ts `HeldElsewhere`).
   */
  private expectation(expect: HeldElsewhere): string {
    const v = (value: string | number): string => (typeof value === 'number' ? String(Math.trunc(value)) : this.client.escapeLiteral(value));
    const { turn, owner, holder } = expect;
    const condition =
      `EXISTS (SELECT 1 FROM turnkeeper.todos WHERE goal = ${v(turn.goal)} AND id = ${v(turn.todo)} AND status = 'open') ` +
      `AND EXISTS (SELECT 1 FROM turnkeeper.leases WHERE goal = ${v(turn.goal)} AND todo = ${v(turn.todo)} AND status = 'active' ` +
      `AND capture = ${v(holder.capture)} AND epoch = ${v(holder.epoch)} AND version = ${v(holder.version)}) ` +
      `AND NOT EXISTS (SELECT 1 FROM turnkeeper.leases WHERE owner = ${v(owner)} AND status = 'active') ` +
      `AND NOT EXISTS (SELECT 1 FROM turnkeeper.captures WHERE goal = ${v(turn.goal)} AND todo = ${v(turn.todo)} AND agent = ${v(turn.agent)} ` +
      `AND session = ${v(turn.session)} AND turn = ${v(turn.turn)})`;
    // The body is dollar-quoted: a tag that occurs in it would end the quote early, so it never does.
    const tag = '$turnkeeper_expect$';
    if (condition.includes(tag)) throw new Error('a value of this claim contains the statement quote');
    return `DO ${tag} BEGIN IF NOT (${condition}) THEN RAISE EXCEPTION 'the claim state moved while a refusal was decided' USING ERRCODE = '40001'; END IF; END ${tag}`;
  }

  /** Sends the pending receipts in one call of the append function, which checks each against the head. */
  private async flushAppends(): Promise<void> {
    const rows = this.pendingAppends;
    this.pendingAppends = [];
    await this.statementOfWrite(`SELECT ${APPEND_FUNCTION_NAME}($1::int8[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])`, [
      rows.map((row) => row.seq),
      rows.map((row) => row.doc),
      rows.map((row) => row.hash),
      rows.map((row) => row.goal),
      rows.map((row) => row.todo),
      rows.map((row) => row.capture),
      rows.map((row) => row.kind),
    ]);
  }

  private async one<R extends QueryResultRow = QueryResultRow>(text: string, values: unknown[] = []): Promise<R | undefined> {
    return (await this.q<R>(text, values)).rows[0];
  }

  private unavailable(error: unknown): unknown {
    if (error instanceof StoreUnavailableError || error instanceof SchemaTooNewError) return error;
    const code = (error as { code?: unknown }).code;
    // SQLSTATE classes 08 (connection), 53 (resources), 57 (operator intervention), and client-side
    // timeouts and socket errors: the store cannot be used now. Anything else is a bug to surface.
    const message = (error as Error).message ?? String(error);
    // 42501 insufficient_privilege: the role the URL names was never granted what hooks need (a role
    // made by hand, or granted before the tables it now needs existed). A setup to fix, not a bug.
    if (code === '42501') {
      const role = this.client.user ?? '<role>';
      return new StoreUnavailableError(
        `the team store ${this.location}: role ${role} lacks a privilege hooks need (${this.scrub(message)}); hooks need USAGE on schema ` +
          `turnkeeper, SELECT, INSERT and UPDATE on its row tables and EXECUTE on its append functions. As the owner of the schema, run: ` +
          `turnkeeper store init --hook-role ${role}`,
        { cause: error },
      );
    }
    // 55P03 lock_not_available: a lock wait that reached its bound (a chain head that did not move,
    // lockHeadFollowingTheQueue): the store is busy, as a SQLite writer past its busy timeout.
    const transient =
      (typeof code === 'string' && (/^(08|53|57|58)/.test(code) || code === '55P03')) ||
      /timeout|terminated|ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|not queryable|Connection terminated/i.test(message);
    return transient ? new StoreUnavailableError(`the team store ${this.location}: ${this.scrub(message)}`, { cause: error }) : error;
  }

  /**
   * One read of the connection, after every transaction and read queued before it: pg has one query at
   * a time per client, and callers that read in parallel (`Promise.all`: `todo list`, the editor's
   * refresh) had it queue them itself, with a DeprecationWarning on stderr for each.
   */
  private read<T>(work: () => Promise<T>): Promise<T> {
    // A read made by work already queued (a Goal's checkpoint reads the store's id while it signs)
    // runs in its turn: queued behind it, it would wait for itself.
    if (this.queued.getStore()) return this.readNow(work);
    return this.oneTransactionAtATime(() => this.readNow(work));
  }

  private async readNow<T>(work: () => Promise<T>): Promise<T> {
    try {
      await this.usable();
      return await work();
    } catch (error) {
      if (typeof (error as { code?: unknown }).code !== 'string') this.broken = true;
      throw this.unavailable(error);
    }
  }

  write<T>(work: (tx: StoreTx) => Promise<T>): Promise<T> {
    return this.oneTransactionAtATime(() => this.writeNow(work));
  }

  /**
   * Runs `work`, which opens a transaction or reads on the one connection, after everything queued
   * before it. The connection has one transaction at a time: a second BEGIN would only warn and run inside the
   * first, and its COMMIT or ROLLBACK would end the first half way (a chain walk would commit half a
   * claim, or run a claim in its read-only snapshot).
   */
  private oneTransactionAtATime<T>(work: () => Promise<T>): Promise<T> {
    if (this.queued.getStore()) return Promise.reject(new Error('a transaction of this connection was started inside another one'));
    const run = this.writeQueue.then(() => this.queued.run(true, work));
    this.writeQueue = run.catch(() => undefined);
    return run;
  }

  private async writeNow<T>(work: (tx: StoreTx) => Promise<T>): Promise<T> {
    // One bound for the whole write, retries included: its statements wait for row locks out of it.
    // The time a BEGIN waits for its answer is not taken from it: behind a transaction-mode pooler
    // that is the wait for a free server connection (the pooler's queue; the BEGIN has its own
    // bound), and the server counts its statement_timeout from when it has the transaction too.
    this.deadline = Math.min(performance.now() + this.transactionTimeoutMs, this.hardDeadline);
    this.committedAppend = undefined;
    try {
      for (let attempt = 1; ; attempt += 1) {
        let committing = false;
        let result: T | undefined;
        this.pendingAppends = [];
        this.atCommit = undefined;
        this.deferred = [];
        this.txClock = undefined;
        this.txId = undefined;
        this.txTodoSeen = undefined;
        this.txHead = undefined;
        this.txHeadRead = false;
        this.txFailure = undefined;
        try {
          await this.usable();
          const asked = performance.now();
          await this.begin(beginWithin(this.deadline - asked, !this.appendPrimed));
          this.appendPrimed = true;
          this.deadline = Math.min(this.deadline + performance.now() - asked, this.hardDeadline);
          result = await work(this.tx);
          faultPoint('store.before_commit');
          // A statement that failed inside `work` (and was caught there) has aborted the transaction on
          // the server; its COMMIT would answer ROLLBACK. Never ask: the write failed.
          // (Read through a cast: TypeScript narrowed the field to undefined at the top of the attempt.)
          const failed = this.txFailure as Error | undefined;
          if (failed) throw failed;
          // Past the hook's deadline the agent has gone on without its answer (a server stopped and
          // continued, a long queue): the write is dropped with its connection, never committed.
          if (performance.now() >= this.hardDeadline)
            throw new StoreUnavailableError(`the team store ${this.location}: the hook's deadline passed before its write could commit; nothing was written`);
          committing = true;
          // (Read through a cast, as txFailure above: `work` set it.)
          const appendingAtCommit = (this.atCommit as { receipts: readonly unknown[] } | undefined)?.receipts.length ?? 0;
          // A hook's append waits for the head as long as the queue moves, until the hook's deadline
          // (lockHeadFollowingTheQueue): the statement's bound, and the client's timer, are that deadline.
          const followQueue =
            appendingAtCommit > 0 && this.hardDeadline !== Infinity
              ? { stillMs: this.transactionTimeoutMs, remainingMs: this.hardDeadline - performance.now() }
              : undefined;
          let answers;
          try {
            if (followQueue) this.deadline = this.hardDeadline;
            answers = await this.statementOfWrite<QueryResultRow>(this.commitText(followQueue), []);
          } finally {
            // Time in a queue that moved is not the write's to lose: an attempt made again after it
            // (a decision that moved while it waited: 40001) gets the busy timeout afresh, within the
            // deadline, and its BEGIN bounds its statements by that again, not by the deadline.
            if (followQueue) this.deadline = Math.min(performance.now() + this.transactionTimeoutMs, this.hardDeadline);
          }
          const all = (Array.isArray(answers) ? answers : [answers]) as unknown as { command: string; rows: Record<string, unknown>[] }[];
          const commit = all.at(-1)!;
          if (commit.command !== 'COMMIT') throw Object.assign(new Error(`the server rolled the transaction back (${commit.command})`), { code: '25P02' });
          if (appendingAtCommit > 0) {
            const head = Number(Object.values(all.at(-2)?.rows[0] ?? {})[0]);
            if (Number.isSafeInteger(head)) this.committedAppend = { first: head - appendingAtCommit + 1, last: head };
          }
          faultPoint('store.after_commit');
          return result;
        } catch (error) {
          const code = (error as { code?: unknown }).code;
          if (typeof code !== 'string') this.abandonConnection();
          if (committing && typeof code !== 'string') {
            // The COMMIT was sent and its answer lost (a cut connection, the client's timer on a busy
            // host): the server knows whether it committed. Committed, the write is done, and its
            // result stands (redone, a refusal was recorded twice); rolled back, it is an attempt that
            // failed. Only when the server cannot say is the outcome ambiguous (the caller decides).
            const fate = await this.fateOfLostCommit(this.txId);
            if (fate === 'committed') return result as T;
            if (fate === 'unknown') throw new AmbiguousCommitError(this.location, { cause: error });
            if (attempt < MAX_ATTEMPTS && performance.now() < this.deadline) continue;
            throw this.unavailable(error);
          }
          // A lost or stalled connection has no transaction to roll back; another round trip would only
          // spend the hook's time bound.
          if (typeof code !== 'string') throw this.unavailable(error);
          this.txFailure = undefined;
          await this.client.query('ROLLBACK').catch(() => this.abandonConnection());
          if (RETRYABLE.has(code) && attempt < MAX_ATTEMPTS && performance.now() < this.deadline) {
            await new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * attempt));
            continue;
          }
          // A write that kept losing races until its bound or its last attempt: the store is busy, as
          // a SQLite writer that waited its busy timeout is (never an internal error).
          if (RETRYABLE.has(code))
            throw new StoreUnavailableError(`the team store ${this.location} stayed busy: ${this.scrub((error as Error).message)} (attempt ${attempt})`, {
              cause: error,
            });
          throw this.unavailable(error);
        }
      }
    } finally {
      this.deadline = undefined;
      this.pendingAppends = [];
      this.atCommit = undefined;
      this.deferred = [];
      this.txFailure = undefined;
    }
  }

  /**
   * What became of transaction `xid`, whose COMMIT was sent and whose answer was lost: asked on a new
   * connection (this one was abandoned) until the server has finished it, for up to
   * LOST_COMMIT_INQUIRY_MS and never past the hook's deadline. 'unknown' when the server cannot say:
   * no id was read, no connection, or an id it never assigned (a replica promoted since, issue 36).
   */
  private async fateOfLostCommit(xid: string | undefined): Promise<'committed' | 'aborted' | 'unknown'> {
    if (xid === undefined) return 'unknown';
    const until = Math.min(performance.now() + LOST_COMMIT_INQUIRY_MS, this.hardDeadline);
    try {
      await this.usable();
      for (;;) {
        const query_timeout = Math.max(1, Math.ceil(until - performance.now()));
        const answer = await this.client.query<{ status: string | null }>({
          text: 'SELECT pg_xact_status($1::xid8) AS status',
          values: [xid],
          query_timeout,
        } as QueryConfig);
        const status = answer.rows[0]?.status;
        if (status === 'committed' || status === 'aborted') return status;
        // 'in progress': the server has not yet read the COMMIT (or is in it); its session ends
        // once it sees the closed socket. Null: an id too old to know.
        if (status !== 'in progress' || performance.now() + 50 >= until) return 'unknown';
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } catch (error) {
      if (typeof (error as { code?: unknown }).code !== 'string') this.abandonConnection();
      return 'unknown';
    }
  }

  private readonly tx: StoreTx = {
    // The clock BEGIN read, once; a second call reads it again.
    clock: async () => {
      const read = this.txClock;
      this.txClock = undefined;
      return read ?? (await this.one<{ now: number }>(SERVER_CLOCK))!.now;
    },
    // The Todo row is locked for this transaction: claims of one Todo decide one after another.
    todo: async (goal, id) => {
      const row = await this.one('SELECT * FROM turnkeeper.todos WHERE goal = $1 AND id = $2 FOR UPDATE', [goal, id]);
      return row && toTodo(row as TodoRowRaw);
    },
    insertTodo: async (todo) => {
      await this.q(`INSERT INTO turnkeeper.todos (${TODO_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)`, todoValues(todo));
    },
    setTodoStatus: async (goal, id, status, now, blockReason) => {
      await this.q('UPDATE turnkeeper.todos SET status = $1, updated_at = $2, block_reason = $3 WHERE goal = $4 AND id = $5', [
        status,
        now,
        status === 'blocked' ? (blockReason ?? null) : null,
        goal,
        id,
      ]);
    },
    // The rows first (their own statement), then the edges in a statement after the lock: under READ
    // COMMITTED that one sees every edge committed by a transaction the lock waited for (port.ts).
    dependenciesOf: async (goal, todos, lock) => {
      if (todos.length === 0) return [];
      if (lock) await this.q('SELECT 1 FROM turnkeeper.todos WHERE goal = $1 AND id = ANY($2::text[]) ORDER BY id FOR SHARE', [goal, todos]);
      return (
        await this.q<TodoDependency & QueryResultRow>(
          `SELECT d.goal, d.todo, d.dependency, u.status FROM turnkeeper.todo_deps d JOIN turnkeeper.todos u ON u.goal = d.goal AND u.id = d.dependency
           WHERE d.goal = $1 AND d.todo = ANY($2::text[]) ORDER BY d.todo, d.dependency`,
          [goal, todos],
        )
      ).rows.map((row) => ({ goal: row.goal, todo: row.todo, dependency: row.dependency, status: row.status }));
    },
    insertDependencies: async (goal, todo, dependencies, now) => {
      if (dependencies.length === 0) return;
      await this.q(
        `INSERT INTO turnkeeper.todo_deps (goal, todo, dependency, created_at) SELECT $1, $2, d, $4 FROM unnest($3::text[]) AS d ON CONFLICT DO NOTHING`,
        [goal, todo, dependencies, now],
      );
    },
    deleteDependencies: async (goal, todo, dependencies) => {
      if (dependencies.length === 0) return;
      await this.q('DELETE FROM turnkeeper.todo_deps WHERE goal = $1 AND todo = $2 AND dependency = ANY($3::text[])', [goal, todo, dependencies]);
    },
    activeLeaseOfTodo: async (goal, todo) => this.leaseWhere("goal = $1 AND todo = $2 AND status = 'active'", [goal, todo]),
    activeLeaseOfOwner: async (owner) => this.leaseWhere("owner = $1 AND status = 'active'", [owner]),
    leaseOfCapture: async (capture) => this.leaseWhere('capture = $1', [capture]),
    lastEpoch: async (goal, todo) =>
      (await this.one<{ epoch: number | null }>('SELECT MAX(epoch) AS epoch FROM turnkeeper.leases WHERE goal = $1 AND todo = $2', [goal, todo]))?.epoch ?? 0,
    insertLease: async (lease) => {
      await this.deferWrite(`INSERT INTO turnkeeper.leases (${LEASE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, leaseValues(lease));
      // A new version of the Todo's row (nothing in it changes): claims waiting for the row's lock are
      // let go when this commits, instead of taking it in turn (claimState).
      await this.deferWrite('UPDATE turnkeeper.todos SET status = status WHERE goal = $1 AND id = $2', [lease.goal, lease.todo]);
    },
    updateLease: async (planned, next, release) => {
      const result = await this.q(
        `UPDATE turnkeeper.leases SET version = $1, status = $2, renewed_at = $3, expires_at = $4,
           released_at = COALESCE($5, released_at), release_reason = COALESCE($6, release_reason)
         WHERE goal = $7 AND todo = $8 AND epoch = $9 AND version = $10 AND status = 'active'`,
        [
          next.version,
          next.status,
          next.renewedAt,
          next.expiresAt,
          release?.at ?? null,
          release?.reason ?? null,
          planned.goal,
          planned.todo,
          planned.epoch,
          planned.version,
        ],
      );
      return result.rowCount === 1;
    },
    claimOfTurn: async (turn) =>
      this.one<ClaimOfTurn>(
        `SELECT c.id AS capture, l.epoch AS epoch, l.status AS status FROM turnkeeper.captures c JOIN turnkeeper.leases l ON l.capture = c.id
         WHERE c.goal = $1 AND c.todo = $2 AND c.agent = $3 AND c.session = $4 AND c.turn = $5
         ORDER BY (l.status = 'active') DESC, l.epoch DESC LIMIT 1`,
        [turn.goal, turn.todo, turn.agent, turn.session, turn.turn],
      ),
    // One statement: each input a subquery, each row as json (int8 columns are ms times and counters,
    // safe integers, so json numbers keep them exact). No row is locked.
    claimState: async (turn, owner, place, options) => {
      // The lock is kept only on the Todo's row as this transaction's unlocked read saw it (its xmin).
      // A claim that committed meanwhile made a new version of the row (insertLease); a claim that
      // waited for the lock behind it is then let go holding nothing (the lock, which PostgreSQL takes
      // on the newest version, is rolled back with its subtransaction, on the server, in the same
      // message), all of them at once, to start again and find the Todo held. Keeping the lock, they
      // took the row one after another, each holding it for a turn of its client to read the holder
      // and roll back: a convoy that, under a burst on two cores, passed the 4 s write bound
      // (docs/testing.md, "The burst").
      const seen = this.txTodoSeen?.goal === turn.goal && this.txTodoSeen.id === turn.todo ? this.txTodoSeen.version : undefined;
      const values = [turn.goal, turn.todo, turn.agent, turn.session, turn.turn, owner, place ?? null];
      const lock = !options?.lockTodo ? '' : seen === undefined ? LOCK_TODO : LOCK_TODO_AS_SEEN.replace('$seen', this.client.escapeLiteral(seen));
      const answers = (await this.q(`${this.inline(lock, values)}${this.inline(CLAIM_STATE, values)}`)) as unknown as QueryResult[] | QueryResult;
      const state = Array.isArray(answers) ? answers.at(-1)! : answers;
      const row = state.rows[0] as
        | {
            todo: (TodoRowRaw & { row_version: string }) | null;
            active: LeaseRowRaw | null;
            last_epoch: number | null;
            recorded: ClaimOfTurn | null;
            owner_holds: LeaseRowRaw | null;
            active_checkout: string | null;
            place_goal: { goal: string; checkout: string } | null;
          }
        | undefined;
      // The row changed since it was read (and is not locked): decided again from the start.
      if (options?.lockTodo && seen !== undefined && row?.todo && row.todo.row_version !== seen) throw decisionMoved(`the Todo ${turn.todo}`);
      if (row?.todo && !options?.lockTodo) this.txTodoSeen = { goal: turn.goal, id: turn.todo, version: row.todo.row_version };
      return {
        todo: row?.todo ? toTodo(row.todo) : undefined,
        active: row?.active ? toLease(row.active) : undefined,
        lastEpoch: row?.last_epoch ?? 0,
        recorded: row?.recorded ?? undefined,
        ownerHolds: row?.owner_holds ? toLease(row.owner_holds) : undefined,
        activeCheckout: row?.active_checkout ?? undefined,
        placeGoal: row?.place_goal ?? undefined,
      };
    },
    insertCapture: async (c) => {
      await this.deferWrite(
        `INSERT INTO turnkeeper.captures (${CAPTURE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
        captureValues(c),
      );
    },
    insertReady: async (ready) => {
      await this.deferWrite('INSERT INTO turnkeeper.ready_captures (capture, doc, presentation, ready_digest) VALUES ($1, $2, $3, $4)', [
        ready.capture,
        ready.canonical,
        ready.presentation,
        ready.readyDigest,
      ]);
    },
    readReady: async (capture) => this.readyOf(capture),
    upsertSession: async (record: SessionTouch, now) => {
      const turn = sessionTurnParams(record);
      // The state's time moves only when the state changes; a turn base is written when given (null clears it).
      await this.deferWrite(
        `INSERT INTO turnkeeper.sessions AS s (owner, agent, session, goal, cwd, transcript_path, first_hook_at, last_hook_at, state, state_at, turn_id, turn_at, turn_head, turn_tree)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8, $9, $10, $11, $12, $13)
         ON CONFLICT (owner) DO UPDATE SET last_hook_at = GREATEST(s.last_hook_at, EXCLUDED.last_hook_at),
           transcript_path = COALESCE(EXCLUDED.transcript_path, s.transcript_path), cwd = EXCLUDED.cwd,
           state_at = CASE WHEN EXCLUDED.state IS NULL OR EXCLUDED.state IS NOT DISTINCT FROM s.state THEN s.state_at ELSE EXCLUDED.state_at END,
           state = COALESCE(EXCLUDED.state, s.state),
           turn_id = CASE WHEN $14 THEN EXCLUDED.turn_id ELSE s.turn_id END,
           turn_at = CASE WHEN $14 THEN EXCLUDED.turn_at ELSE s.turn_at END,
           turn_head = CASE WHEN $14 THEN EXCLUDED.turn_head ELSE s.turn_head END,
           turn_tree = CASE WHEN $14 THEN EXCLUDED.turn_tree ELSE s.turn_tree END`,
        [
          record.owner,
          record.agent,
          record.session,
          record.goal,
          record.cwd,
          record.transcriptPath,
          now,
          record.state ?? null,
          record.state === undefined ? null : now,
          ...turn.values,
          turn.set,
        ],
      );
    },
    // The head row is locked until this transaction ends: appends to the one chain take turns.
    // The head row is read once and locked until this transaction ends (appends to the one chain take
    // turns); after that this transaction is the only one that moves it, so it is known without a read.
    chainHead: async () => {
      if (this.txHeadRead) return this.txHead;
      if (this.atCommit) throw new Error('appendAtCommit is the last thing a transaction does: the head is not read after it');
      const head = await this.one<{ seq: number; hash: string }>('SELECT seq, hash FROM turnkeeper.lock_chain_head()');
      this.txHeadRead = true;
      this.txHead = head && head.seq > 0 ? head : undefined;
      return this.txHead;
    },
    appendAtCommit: async (receipts, expect) => {
      if (this.atCommit) throw new Error('appendAtCommit is the last thing a transaction does, once');
      if (receipts.length === 0) return undefined;
      // The head already read (and locked) here, or a receipt only the client can put after it: appended
      // now, after the check, as any append is.
      if (this.txHeadRead || receipts.some((one) => one.receipt.template === undefined)) {
        await this.tx.chainHead();
        if (expect) await this.q(this.expectation(expect));
        return appendPreparedNow(this.tx, receipts);
      }
      this.atCommit = { receipts, expect };
      return undefined;
    },
    // Appends are sent together with the next statement or before COMMIT, in one call of the append
    // function: the server checks each extends the head and moves the head (postgresSchema.ts, v2).
    appendReceipt: (row: ReceiptInsert, previous) => {
      const head = this.txHead;
      if (!this.txHeadRead || row.seq !== (head?.seq ?? 0) + 1 || (previous?.hash ?? ZERO_DIGEST) !== (head?.hash ?? ZERO_DIGEST))
        return Promise.reject(new Error(`receipt ${row.seq} was not built on this transaction's chain head`));
      this.pendingAppends.push(row);
      this.txHead = { seq: row.seq, hash: row.hash };
      return Promise.resolve();
    },
    // Reads flush the pending appends first (q): the trigger has written their tree rows by then.
    treeHashes: async (keys) => this.treeQuery(keys),
    receiptsBetween: async (after, upTo) =>
      (await this.q<ReceiptRow>('SELECT seq, doc, hash FROM turnkeeper.receipts WHERE seq > $1 AND seq <= $2 ORDER BY seq', [after, upTo])).rows,
    recentReceiptsOfTodo: async (goal, todo, limit) =>
      (
        await this.q<{ doc: string }>(
          'SELECT r.doc FROM turnkeeper.receipt_index i JOIN turnkeeper.receipts r ON r.seq = i.seq WHERE i.goal = $1 AND i.todo = $2 ORDER BY i.seq DESC LIMIT $3',
          [goal, todo, limit],
        )
      ).rows.map((row) => row.doc),
    checkoutOfCapture: async (capture) =>
      (await this.one<{ checkout: string }>('SELECT COALESCE(checkout, cwd) AS checkout FROM turnkeeper.captures WHERE id = $1', [capture]))?.checkout,
    latestLaunchOfCapture: async (capture) =>
      this.one<{ seq: number; doc: string }>(
        `SELECT r.seq, r.doc FROM turnkeeper.receipt_index i JOIN turnkeeper.receipts r ON r.seq = i.seq
         WHERE i.capture = $1 AND i.kind = 'launch_committed' ORDER BY i.seq DESC LIMIT 1`,
        [capture],
      ),
    launchReceiptsOfTodo: async (goal, todo, limit) => this.launchReceiptsOfTodoQuery(goal, todo, limit),
    goalOfPlace: async (place) => this.placeOf(place),
    // Both rows are written only when they change: an upsert (ON CONFLICT DO UPDATE) locks the row it
    // finds even when nothing in it changes, until COMMIT, and every claim from a new clone of one
    // repository upserted its one Goal row: a burst of them claimed one after another. An UPDATE
    // whose WHERE finds nothing to change locks nothing; only a new row waits for its inserter.
    rememberPlace: async (place, goal, checkout, now) => {
      await this.deferWrite(
        'UPDATE turnkeeper.checkouts SET goal = $2, checkout = $3, updated_at = $4 WHERE place = $1 AND (goal, checkout) IS DISTINCT FROM ($2, $3)',
        [place, goal, checkout, now],
      );
      await this.deferWrite('INSERT INTO turnkeeper.checkouts (place, goal, checkout, updated_at) VALUES ($1, $2, $3, $4) ON CONFLICT (place) DO NOTHING', [
        place,
        goal,
        checkout,
        now,
      ]);
    },
    rememberGoal: async (goal) => {
      await this.deferWrite('UPDATE turnkeeper.goals SET key = $2, display_name = $3 WHERE id = $1 AND (key, display_name) IS DISTINCT FROM ($2, $3)', [
        goal.id,
        goal.key,
        goal.displayName,
      ]);
      await this.deferWrite('INSERT INTO turnkeeper.goals (id, key, display_name) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING', [
        goal.id,
        goal.key,
        goal.displayName,
      ]);
    },
    remapGoal: async (from, to) => {
      for (const table of ['todos', 'leases', 'captures', 'sessions', 'checkouts', 'receipt_index'])
        await this.q(`UPDATE turnkeeper.${table} SET goal = $1 WHERE goal = $2`, [to, from]);
    },
    renameTodo: async (goal, from, to) => {
      for (const table of ['leases', 'captures', 'receipt_index'])
        await this.q(`UPDATE turnkeeper.${table} SET todo = $1 WHERE goal = $2 AND todo = $3`, [to, goal, from]);
      await this.q('UPDATE turnkeeper.todos SET id = $1 WHERE goal = $2 AND id = $3', [to, goal, from]);
    },
    todoIdsOf: async (goal) => (await this.q<{ id: string }>('SELECT id FROM turnkeeper.todos WHERE goal = $1', [goal])).rows.map((row) => row.id),
    goalCounts: async (goal) =>
      (await this.one<{ todos: number; leases: number; captures: number }>(
        `SELECT (SELECT count(*) FROM turnkeeper.todos WHERE goal = $1)::int8 AS todos,
                (SELECT count(*) FROM turnkeeper.leases WHERE goal = $1)::int8 AS leases,
                (SELECT count(*) FROM turnkeeper.captures WHERE goal = $1)::int8 AS captures`,
        [goal],
      ))!,
    // A team store never held path-keyed Goals: it starts with Goal ids.
    legacyGoals: () => Promise.resolve([]),
    meta: async (key) => (await this.one<{ value: string }>('SELECT value FROM turnkeeper.store_meta WHERE key = $1 FOR UPDATE', [key]))?.value,
    setMeta: async (key, value) => {
      if (value === null) await this.q('DELETE FROM turnkeeper.store_meta WHERE key = $1', [key]);
      else await this.q('INSERT INTO turnkeeper.store_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value', [key, value]);
    },
  };

  private async leaseWhere(where: string, values: unknown[]): Promise<Lease | undefined> {
    const row = await this.one<LeaseRow>(`SELECT ${LEASE_COLUMNS} FROM turnkeeper.leases WHERE ${where}`, values);
    return row && toLease(row);
  }

  private async readyOf(capture: string): Promise<StoredReady | undefined> {
    const row = await this.one<{ capture: string; doc: string; presentation: string; ready_digest: string }>(
      'SELECT capture, doc, presentation, ready_digest FROM turnkeeper.ready_captures WHERE capture = $1',
      [capture],
    );
    return row && { capture: row.capture, canonical: row.doc, presentation: row.presentation, readyDigest: row.ready_digest };
  }

  private placeOf(place: string): Promise<{ goal: string; checkout: string } | undefined> {
    return this.one<{ goal: string; checkout: string }>('SELECT goal, checkout FROM turnkeeper.checkouts WHERE place = $1', [place]);
  }

  getTodo(goal: string, id: string): Promise<Todo | undefined> {
    return this.read(async () => {
      const row = await this.one('SELECT * FROM turnkeeper.todos WHERE goal = $1 AND id = $2', [goal, id]);
      return row && toTodo(row as TodoRowRaw);
    });
  }

  listTodos(goal?: string): Promise<Todo[]> {
    return this.read(async () =>
      (goal === undefined
        ? await this.q('SELECT * FROM turnkeeper.todos ORDER BY goal, created_at, id')
        : await this.q('SELECT * FROM turnkeeper.todos WHERE goal = $1 ORDER BY created_at, id', [goal])
      ).rows.map((row) => toTodo(row as TodoRowRaw)),
    );
  }

  activeLeaseOfOwner(owner: Owner): Promise<Lease | undefined> {
    return this.read(() => this.leaseWhere("owner = $1 AND status = 'active'", [owner]));
  }

  latestLeaseOfOwner(owner: Owner): Promise<{ lease: Lease; currentEpoch: number } | undefined> {
    return this.read(async () => {
      // Chain order (the lease_acquired receipt's seq), never a client's wall clock.
      const row = await this.one<LeaseRow>(
        `SELECT ${LEASE_COLUMNS_OF_L} FROM turnkeeper.leases l
         JOIN turnkeeper.receipt_index i ON i.capture = l.capture AND i.kind = 'lease_acquired'
         WHERE l.owner = $1 ORDER BY i.seq DESC LIMIT 1`,
        [owner],
      );
      if (!row) return undefined;
      const current = await this.one<{ epoch: number }>('SELECT MAX(epoch) AS epoch FROM turnkeeper.leases WHERE goal = $1 AND todo = $2', [
        row.goal,
        row.todo,
      ]);
      return { lease: toLease(row), currentEpoch: current!.epoch };
    });
  }

  leaseOfCapture(capture: string): Promise<Lease | undefined> {
    return this.read(() => this.leaseWhere('capture = $1', [capture]));
  }

  readReady(capture: string): Promise<StoredReady | undefined> {
    return this.read(() => this.readyOf(capture));
  }

  getCapture(capture: string): Promise<StoredCapture | undefined> {
    return this.read(async () => {
      const row = await this.one('SELECT * FROM turnkeeper.captures WHERE id = $1', [capture]);
      return row && toCapture(row as CaptureRowRaw);
    });
  }

  launchReceiptRows(capture?: string): Promise<{ seq: number; doc: string }[]> {
    return this.read(async () => {
      const where = capture === undefined ? '' : 'AND i.capture = $1';
      return (
        await this.q<{ seq: number; doc: string }>(
          `SELECT r.seq, r.doc FROM turnkeeper.receipt_index i JOIN turnkeeper.receipts r ON r.seq = i.seq
           WHERE i.kind IN ('launch_committed', 'launch_hooked') ${where} ORDER BY i.seq`,
          capture === undefined ? [] : [capture],
        )
      ).rows;
    });
  }

  launchReceiptsOfTodo(goal: string, todo: string, limit: number): Promise<{ seq: number; doc: string }[]> {
    return this.read(() => this.launchReceiptsOfTodoQuery(goal, todo, limit));
  }
  /** Walks the (goal, todo, seq) index backwards: a Todo's launch receipts without scanning the chain. */
  private async launchReceiptsOfTodoQuery(goal: string, todo: string, limit: number): Promise<{ seq: number; doc: string }[]> {
    return (
      await this.q<{ seq: number; doc: string }>(
        `SELECT r.seq, r.doc FROM turnkeeper.receipt_index i JOIN turnkeeper.receipts r ON r.seq = i.seq
         WHERE i.goal = $1 AND i.todo = $2 AND i.kind IN ('launch_committed', 'launch_hooked') ORDER BY i.seq DESC LIMIT $3`,
        [goal, todo, limit],
      )
    ).rows;
  }

  receiptsOfTodo(goal: string, todo: string, limit: number): Promise<{ seq: number; doc: string }[]> {
    return this.read(
      async () =>
        (
          await this.q<{ seq: number; doc: string }>(
            'SELECT r.seq, r.doc FROM turnkeeper.receipt_index i JOIN turnkeeper.receipts r ON r.seq = i.seq WHERE i.goal = $1 AND i.todo = $2 ORDER BY i.seq DESC LIMIT $3',
            [goal, todo, limit],
          )
        ).rows,
    );
  }

  getSession(owner: Owner): Promise<SessionRecord | undefined> {
    return this.read(async () => {
      const row = await this.one('SELECT * FROM turnkeeper.sessions WHERE owner = $1', [owner]);
      return row && toSession(row as SessionRowRaw);
    });
  }

  listSessions(): Promise<SessionRecord[]> {
    return this.read(async () =>
      (await this.q('SELECT * FROM turnkeeper.sessions ORDER BY last_hook_at DESC')).rows.map((row) => toSession(row as SessionRowRaw)),
    );
  }

  listLeases(): Promise<Lease[]> {
    return this.read(async () =>
      (await this.q<LeaseRow>(`SELECT ${LEASE_COLUMNS} FROM turnkeeper.leases ORDER BY acquired_at DESC, epoch DESC`)).rows.map(toLease),
    );
  }

  activeLeaseCount(goal?: string): Promise<number> {
    // An index-only scan of the partial index leases_one_active_per_owner; of one Goal, of leases_one_active_per_todo (goal, todo).
    return this.read(
      async () =>
        (
          await (goal === undefined
            ? this.q<{ n: number }>("SELECT COUNT(*)::int4 AS n FROM turnkeeper.leases WHERE status = 'active'")
            : this.q<{ n: number }>("SELECT COUNT(*)::int4 AS n FROM turnkeeper.leases WHERE status = 'active' AND goal = $1", [goal]))
        ).rows[0]!.n,
    );
  }

  listCaptures(): Promise<StoredCapture[]> {
    return this.read(async () =>
      (await this.q('SELECT * FROM turnkeeper.captures ORDER BY created_at DESC, id')).rows.map((row) => toCapture(row as CaptureRowRaw)),
    );
  }

  activeLeases(goal?: string): Promise<Lease[]> {
    return this.read(async () =>
      (goal === undefined
        ? await this.q<LeaseRow>(`SELECT ${LEASE_COLUMNS} FROM turnkeeper.leases WHERE status = 'active' ORDER BY acquired_at DESC, epoch DESC`)
        : await this.q<LeaseRow>(`SELECT ${LEASE_COLUMNS} FROM turnkeeper.leases WHERE status = 'active' AND goal = $1 ORDER BY acquired_at DESC, epoch DESC`, [
            goal,
          ])
      ).rows.map(toLease),
    );
  }

  leasesOfCaptures(captures: readonly string[]): Promise<Lease[]> {
    if (captures.length === 0) return Promise.resolve([]);
    return this.read(async () =>
      (await this.q<LeaseRow>(`SELECT ${LEASE_COLUMNS} FROM turnkeeper.leases WHERE capture = ANY($1::text[])`, [captures])).rows.map(toLease),
    );
  }

  recentCaptures(limit: number, goal?: string): Promise<StoredCapture[]> {
    return this.read(async () =>
      (goal === undefined
        ? await this.q('SELECT * FROM turnkeeper.captures ORDER BY created_at DESC, id LIMIT $1', [limit])
        : await this.q('SELECT * FROM turnkeeper.captures WHERE goal = $1 ORDER BY created_at DESC, id LIMIT $2', [goal, limit])
      ).rows.map((row) => toCapture(row as CaptureRowRaw)),
    );
  }

  capturesById(ids: readonly string[]): Promise<StoredCapture[]> {
    if (ids.length === 0) return Promise.resolve([]);
    return this.read(async () =>
      (await this.q('SELECT * FROM turnkeeper.captures WHERE id = ANY($1::text[])', [ids])).rows.map((row) => toCapture(row as CaptureRowRaw)),
    );
  }

  readyOfCaptures(ids: readonly string[]): Promise<StoredReady[]> {
    if (ids.length === 0) return Promise.resolve([]);
    return this.read(async () =>
      (
        await this.q<{ capture: string; doc: string; presentation: string; ready_digest: string }>(
          'SELECT capture, doc, presentation, ready_digest FROM turnkeeper.ready_captures WHERE capture = ANY($1::text[])',
          [ids],
        )
      ).rows.map((row) => ({ capture: row.capture, canonical: row.doc, presentation: row.presentation, readyDigest: row.ready_digest })),
    );
  }

  dependenciesOfLive(goal?: string): Promise<TodoDependency[]> {
    return this.read(async () =>
      (
        await this.q<TodoDependency & QueryResultRow>(
          `SELECT d.goal, d.todo, d.dependency, u.status FROM turnkeeper.todos t
             JOIN turnkeeper.todo_deps d ON d.goal = t.goal AND d.todo = t.id
             JOIN turnkeeper.todos u ON u.goal = d.goal AND u.id = d.dependency
             WHERE t.status IN ('open', 'blocked')${goal === undefined ? '' : ' AND t.goal = $1'} ORDER BY d.goal, d.todo, d.dependency`,
          goal === undefined ? [] : [goal],
        )
      ).rows.map((row) => ({ goal: row.goal, todo: row.todo, dependency: row.dependency, status: row.status })),
    );
  }

  readyTodos(goal: string, limit: number): Promise<Todo[]> {
    return this.read(async () =>
      (
        await this.q(
          `SELECT t.* FROM turnkeeper.todos t WHERE t.status = 'open' AND t.goal = $1
             AND NOT EXISTS (SELECT 1 FROM turnkeeper.todo_deps d JOIN turnkeeper.todos u ON u.goal = d.goal AND u.id = d.dependency
                             WHERE d.goal = t.goal AND d.todo = t.id AND u.status <> 'done')
             AND NOT EXISTS (SELECT 1 FROM turnkeeper.leases l WHERE l.goal = t.goal AND l.todo = t.id AND l.status = 'active')
           ORDER BY t.created_at, t.id LIMIT $2`,
          [goal, limit],
        )
      ).rows.map((row) => toTodo(row as TodoRowRaw)),
    );
  }

  todosWithStatus(status: TodoStatus, goal?: string, limit?: number): Promise<Todo[]> {
    return this.read(async () => {
      const where = goal === undefined ? 'status = $1' : 'status = $1 AND goal = $2';
      const values: unknown[] = goal === undefined ? [status] : [status, goal];
      const rows =
        limit === undefined
          ? (await this.q(`SELECT * FROM turnkeeper.todos WHERE ${where} ORDER BY goal, created_at, id`, values)).rows
          : (
              await this.q(`SELECT * FROM turnkeeper.todos WHERE ${where} ORDER BY goal DESC, created_at DESC, id DESC LIMIT $${values.length + 1}`, [
                ...values,
                limit,
              ])
            ).rows.reverse();
      return rows.map((row) => toTodo(row as TodoRowRaw));
    });
  }

  receipts(page: ReceiptPage): Promise<ReceiptRow[]> {
    const before = page.beforeSeq ?? Number.MAX_SAFE_INTEGER;
    return this.read(
      async () =>
        (page.goal === undefined
          ? await this.q<ReceiptRow>('SELECT seq, doc, hash FROM turnkeeper.receipts WHERE seq < $1 ORDER BY seq DESC LIMIT $2', [before, page.limit])
          : await this.q<ReceiptRow>(
              // One Goal's receipts by receipt_index_by_goal, the store-wide ones (core/receipts.ts
              // isStoreWide) by it and receipt_index_by_kind, each walked backwards to its LIMIT, and
              // receipts past the index's last row (appended without one: kept visible).
              `SELECT seq, doc, hash FROM turnkeeper.receipts WHERE seq IN (
                 (SELECT seq FROM turnkeeper.receipt_index WHERE goal = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3)
                 UNION (SELECT seq FROM turnkeeper.receipt_index WHERE goal = '' AND seq < $2 ORDER BY seq DESC LIMIT $3)
                 UNION (SELECT seq FROM turnkeeper.receipt_index WHERE goal = '-' AND seq < $2 ORDER BY seq DESC LIMIT $3)
                 ${STORE_WIDE_KINDS.map((kind) => `UNION (SELECT seq FROM turnkeeper.receipt_index WHERE kind = '${kind}' AND seq < $2 ORDER BY seq DESC LIMIT $3)`).join('\n                 ')}
                 UNION (SELECT seq FROM turnkeeper.receipts WHERE seq > (SELECT COALESCE(MAX(seq), 0) FROM turnkeeper.receipt_index) AND seq < $2)
               ) ORDER BY seq DESC LIMIT $3`,
              [page.goal, before, page.limit],
            )
        ).rows,
    );
  }

  /** Stored subtree hashes of the receipt tree, in one statement, in the order asked. */
  private async treeQuery(keys: readonly TreeKey[]): Promise<(Uint8Array | undefined)[]> {
    if (keys.length === 0) return [];
    const rows = (
      await this.q<{ level: number; idx: number; hash: Buffer }>(
        'SELECT t.level, t.idx, t.hash FROM turnkeeper.receipt_tree t JOIN unnest($1::int4[], $2::int8[]) AS k(level, idx) ON t.level = k.level AND t.idx = k.idx',
        [keys.map((key) => key[0]), keys.map((key) => key[1])],
      )
    ).rows;
    const found = new Map(rows.map((row) => [`${row.level}/${row.idx}`, row.hash]));
    return keys.map(([level, index]) => found.get(`${level}/${index}`));
  }

  treeHashes(keys: readonly TreeKey[]): Promise<(Uint8Array | undefined)[]> {
    return this.read(() => this.treeQuery(keys));
  }

  chainHead(): Promise<ChainLink | undefined> {
    return this.read(async () => {
      const head = await this.one<{ seq: number; hash: string }>('SELECT seq, hash FROM turnkeeper.receipt_head WHERE id = 1');
      return head && head.seq > 0 ? head : undefined;
    });
  }

  /** One snapshot (REPEATABLE READ), streamed through a server cursor: bounded memory for any length. */
  verifyChain(after?: ChainLink): Promise<ChainReport> {
    return this.oneTransactionAtATime(() => this.walkChain(after));
  }

  private walkChain(after?: ChainLink): Promise<ChainReport> {
    return this.read(async () => {
      await this.q('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      try {
        const head = await this.one<{ seq: number; hash: string }>('SELECT seq, hash FROM turnkeeper.receipt_head WHERE id = 1');
        const walker = new ChainWalker(after);
        await this.q('DECLARE receipts_walk NO SCROLL CURSOR FOR SELECT seq, doc, hash FROM turnkeeper.receipts WHERE seq > $1 ORDER BY seq', [
          after?.seq ?? 0,
        ]);
        for (;;) {
          const page = await this.client.query({ text: 'FETCH 10000 FROM receipts_walk', rowMode: 'array' });
          for (const [seq, doc, hash] of page.rows as [number, unknown, unknown][]) walker.push({ seq, doc, hash });
          if (page.rows.length < 10000) break;
        }
        await this.q('COMMIT');
        return walker.finish(head && head.seq > 0 ? head : undefined);
      } catch (error) {
        await this.q('ROLLBACK').catch(() => undefined);
        throw error;
      }
    });
  }

  async health(): Promise<StoreHealth> {
    const meta = await this.openedMeta();
    return this.read(async () => ({
      path: this.location,
      schemaVersion: Number(meta.get('schema_version') ?? 0),
      integrity: 'ok',
      journalMode: 'postgresql',
      receipts: (await this.one<{ n: number }>('SELECT COUNT(*)::int8 AS n FROM turnkeeper.receipts'))!.n,
    }));
  }

  async stillCurrent(): Promise<boolean> {
    try {
      const now = await this.read(
        async () => (await this.one<{ value: string }>("SELECT value FROM turnkeeper.store_meta WHERE key = 'schema_version'"))?.value,
      );
      return now === (await this.openedMeta()).get('schema_version');
    } catch {
      return false;
    }
  }

  async getMeta(key: string): Promise<string | undefined> {
    if (OPENED_META_KEYS.includes(key)) return (await this.openedMeta()).get(key);
    return this.read(async () => (await this.one<{ value: string }>('SELECT value FROM turnkeeper.store_meta WHERE key = $1', [key]))?.value);
  }

  listGoals(): Promise<GoalRecord[]> {
    return this.read(
      async () => (await this.q<GoalRecord>('SELECT id, key, display_name AS "displayName" FROM turnkeeper.goals ORDER BY display_name, id')).rows,
    );
  }

  goalOfPlace(place: string): Promise<{ goal: string; checkout: string } | undefined> {
    return this.read(() => this.placeOf(place));
  }

  /** `store init --hook-role`: what a hook's role needs, and no UPDATE or DELETE on receipts. */
  async grantHookRole(role: string): Promise<void> {
    if (!/^[A-Za-z_][A-Za-z0-9_$-]{0,62}$/.test(role)) throw new StoreUnavailableError(`role name ${JSON.stringify(role)} is not a plain identifier`);
    await this.read(() => this.q(hookRoleGrants(role)));
  }

  /** The server's version string, for doctor. */
  serverVersion(): Promise<string> {
    return this.read(async () => (await this.one<{ server_version: string }>('SHOW server_version'))!.server_version);
  }

  private readonly onClose: (() => void)[] = [];

  /** Runs `then` once this store is closed (a hook's connection slot is given back: connectionSlots.ts). */
  whenClosed(then: () => void): void {
    this.onClose.push(then);
  }

  close(): void {
    void this.client.end().catch(() => undefined);
    for (const then of this.onClose.splice(0)) then();
  }
}
