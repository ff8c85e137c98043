// The fault proxy (test/support/tcpProxy.ts) against a real PostgreSQL server: each mode does what
// the fault tests rely on, and each check has a control showing the fault, not something else, made
// the difference.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { like } from '../support/matchers';
import pg from 'pg';
import { usePostgres } from '../support/postgres';
import { startProxy, type TcpProxy } from '../support/tcpProxy';

const server = usePostgres({ beforeAll, afterAll });

let proxy: TcpProxy;
const clients: pg.Client[] = [];
afterEach(async () => {
  await proxy?.close();
  // Clients of a closed proxy end with an error or never hear back; none may keep the file alive.
  await Promise.all(
    clients.splice(0).map((client) => Promise.race([client.end().catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 1000))])),
  );
});

async function connect(port: number, config: Partial<pg.ClientConfig> = {}): Promise<pg.Client> {
  const client = new pg.Client({
    host: '127.0.0.1',
    port,
    user: 'tk_admin',
    password: server().adminPassword,
    database: 'postgres',
    connectionTimeoutMillis: 5000,
    ...config,
  });
  const errors: Error[] = [];
  client.on('error', (error) => errors.push(error));
  clients.push(client);
  await client.connect();
  return client;
}

const settle = <T>(promise: Promise<T>) =>
  promise.then(
    (value) => ({ ok: true as const, value }),
    (error: Error) => ({ ok: false as const, error }),
  );

describe('forward', () => {
  it('carries a session to the real server and back', async () => {
    proxy = await startProxy(server().port);
    const client = await connect(proxy.port);
    const { rows } = await client.query<{ port: number; sum: number }>('SELECT inet_server_port() AS port, $1::int + $2::int AS sum', [2, 3]);
    // The server saw its own port: the bytes went through the proxy to this server, parameters and all.
    expect(rows).toStrictEqual([{ port: server().port, sum: 5 }]);
    expect(proxy.accepted).toBe(1);
    // A large result crosses many TCP segments and arrives whole.
    const big = await client.query<{ text: string }>("SELECT repeat('x', 1000000) AS text");
    expect(big.rows[0]!.text).toHaveLength(1_000_000);
  });

  it('control: once the proxy is closed, its port refuses, so the client above really went through it', async () => {
    proxy = await startProxy(server().port);
    const { port } = proxy;
    await proxy.close();
    const client = new pg.Client({
      host: '127.0.0.1',
      port,
      user: 'tk_admin',
      password: server().adminPassword,
      database: 'postgres',
      connectionTimeoutMillis: 2000,
    });
    await expect(client.connect()).rejects.toThrow(/ECONNREFUSED/);
  });
});

describe('stall', () => {
  it('holds a query without closing anything; forward lets it finish', async () => {
    proxy = await startProxy(server().port);
    const client = await connect(proxy.port);
    expect((await client.query('SELECT 1 AS one')).rows).toStrictEqual([{ one: 1 }]);

    proxy.mode('stall');
    const stalled = settle(client.query<{ two: number }>('SELECT 2 AS two'));
    let settled = false;
    void stalled.then(() => (settled = true));
    // Control: the server itself answers during the stall; only the path through the proxy is stuck.
    const direct = await connect(server().port);
    expect((await direct.query('SELECT 3 AS three')).rows).toStrictEqual([{ three: 3 }]);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(settled).toBe(false);

    proxy.mode('forward');
    expect(await stalled).toStrictEqual({ ok: true, value: like.objectContaining({ rows: [{ two: 2 }] }) });
  });

  it('makes a query with a timeout time out; the same query and timeout pass when forwarding (control)', async () => {
    proxy = await startProxy(server().port);
    const client = await connect(proxy.port, { query_timeout: 1000 });
    // Control first: the timeout is generous for this query on an open path.
    expect((await client.query('SELECT 1 AS one')).rows).toStrictEqual([{ one: 1 }]);

    proxy.mode('stall');
    const started = Date.now();
    await expect(client.query('SELECT 1 AS one')).rejects.toThrow(/timeout/i);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    // A new connection during a stall is accepted by the proxy but never reaches the server.
    const late = new pg.Client({
      host: '127.0.0.1',
      port: proxy.port,
      user: 'tk_admin',
      password: server().adminPassword,
      database: 'postgres',
      connectionTimeoutMillis: 1000,
    });
    late.on('error', () => undefined);
    await expect(late.connect()).rejects.toThrow(/timeout/i);
  });
});

describe('dropReplyAfter COMMIT', () => {
  beforeAll(async () => {
    await server().psql('CREATE TABLE drops (id int PRIMARY KEY)');
  });
  const rowsOnServer = async () => (await server().psql('SELECT id FROM drops ORDER BY id')).split('\n').filter(Boolean).map(Number);

  it('simple protocol: the server commits, the client gets a connection error and never the outcome', async () => {
    proxy = await startProxy(server().port);
    const client = await connect(proxy.port);
    proxy.mode({ dropReplyAfter: 'COMMIT' });
    // 'READ COMMITTED' contains COMMIT but is not the statement: it passes.
    await client.query('BEGIN ISOLATION LEVEL READ COMMITTED');
    await client.query('INSERT INTO drops VALUES (1)');
    const outcome = await settle(client.query('COMMIT'));
    expect(outcome.ok).toBe(false);
    expect(outcome.ok ? '' : outcome.error.message).toMatch(/Connection terminated|ECONNRESET|closed/i);
    expect(proxy.drops).toBe(1);
    // The row was committed before the client's connection was cut: visible right away, no waiting.
    expect(await rowsOnServer()).toContain(1);
    // One-shot: the next COMMIT through the proxy passes.
    expect(proxy.currentMode).toBe('forward');
    const again = await connect(proxy.port);
    await again.query('BEGIN');
    await again.query('INSERT INTO drops VALUES (2)');
    await expect(again.query('COMMIT')).resolves.toMatchObject({ command: 'COMMIT' });
  });

  it('extended protocol: a prepared COMMIT (Parse/Bind/Execute/Sync) is dropped the same way', async () => {
    proxy = await startProxy(server().port);
    const client = await connect(proxy.port);
    proxy.mode({ dropReplyAfter: /^\s*COMMIT\s*$/i });
    await client.query('BEGIN');
    await client.query('INSERT INTO drops VALUES ($1)', [3]);
    const outcome = await settle(client.query({ name: 'tk-commit', text: 'COMMIT' }));
    expect(outcome.ok).toBe(false);
    expect(proxy.drops).toBe(1);
    expect(await rowsOnServer()).toContain(3);
  });

  it('control: with the same mode armed, a ROLLBACK passes, nothing is cut and nothing is committed', async () => {
    proxy = await startProxy(server().port);
    const client = await connect(proxy.port);
    proxy.mode({ dropReplyAfter: 'COMMIT' });
    await client.query('BEGIN');
    await client.query('INSERT INTO drops VALUES (4)');
    await expect(client.query('ROLLBACK')).resolves.toMatchObject({ command: 'ROLLBACK' });
    expect(proxy.drops).toBe(0);
    expect(await rowsOnServer()).not.toContain(4);
    // Still armed, and the same session's COMMIT of a new transaction is then dropped after committing.
    await client.query('BEGIN');
    await client.query('INSERT INTO drops VALUES (5)');
    expect((await settle(client.query('COMMIT'))).ok).toBe(false);
    expect(await rowsOnServer()).toContain(5);
  });

  it('control: without the mode, the same transaction commits and the client hears it', async () => {
    proxy = await startProxy(server().port);
    const client = await connect(proxy.port);
    await client.query('BEGIN ISOLATION LEVEL READ COMMITTED');
    await client.query('INSERT INTO drops VALUES (6)');
    await expect(client.query('COMMIT')).resolves.toMatchObject({ command: 'COMMIT' });
    expect(proxy.drops).toBe(0);
    expect(await rowsOnServer()).toContain(6);
  });
});
