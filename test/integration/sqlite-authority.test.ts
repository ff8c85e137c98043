import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { authorityConformance } from './authority.conformance';
import { initializeStore, openSqliteAuthority } from '../../src/ledger/open';
import { SchemaTooNewError } from '../../src/store/authority';
import { SCHEMA_VERSION } from '../../src/store/schema';

const tempDb = () => {
  const dir = mkdtempSync(join(tmpdir(), 'authority-'));
  return { path: join(dir, 'nested', 'turnkeeper.db'), dispose: () => rmSync(dir, { recursive: true, force: true }) };
};

authorityConformance('SQLite', async () => {
  const { path, dispose } = tempDb();
  const authority = (await openSqliteAuthority({ path, create: true }))!;
  return { authority, dispose: () => (authority.close(), dispose()) };
});

describe('SQLite store specifics', () => {
  it('uses WAL, synchronous=FULL and records its schema version', async () => {
    const { path, dispose } = tempDb();
    const store = (await openSqliteAuthority({ path, create: true }))!;
    expect(store.connection.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(store.connection.pragma('synchronous', { simple: true })).toBe(2);
    expect(await store.health()).toMatchObject({ schemaVersion: SCHEMA_VERSION, integrity: 'ok' });
    store.close();
    dispose();
  });

  it('refuses a database from a newer Turnkeeper and leaves it untouched', async () => {
    const { path, dispose } = tempDb();
    const store = (await openSqliteAuthority({ path, create: true }))!;
    store.connection.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    store.close();
    await expect(openSqliteAuthority({ path, create: true })).rejects.toBeInstanceOf(SchemaTooNewError);
    const Database = (await import('better-sqlite3')).default;
    const raw = new Database(path, { readonly: true });
    expect(raw.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION + 1);
    raw.close();
    dispose();
  });

  it('store init says what it created, and nothing the second time', async () => {
    const { path, dispose } = tempDb();
    const env = { TURNKEEPER_HOME: join(path, '..', 'home'), TURNKEEPER_DB: path };
    const first = await initializeStore(env);
    expect(first).toMatchObject({ store: path, kind: 'sqlite', schemaVersion: SCHEMA_VERSION });
    expect(first.created).toStrictEqual([`SQLite database ${path} (schema ${SCHEMA_VERSION})`]);
    expect(await initializeStore(env)).toMatchObject({ store: path, created: [] });
    dispose();
  });

  it('creates nothing when asked not to', async () => {
    const { path, dispose } = tempDb();
    expect(await openSqliteAuthority({ path, create: false })).toBeUndefined();
    // Control: with create the file appears.
    (await openSqliteAuthority({ path, create: true }))!.close();
    expect(await openSqliteAuthority({ path, create: false })).toBeDefined();
    dispose();
  });

  it('reports a file that is not a database as unavailable, not as a crash', async () => {
    const { path, dispose } = tempDb();
    (await openSqliteAuthority({ path, create: true }))!.close();
    writeFileSync(path, 'this is not a database'.repeat(100));
    await expect(openSqliteAuthority({ path, create: false })).rejects.toMatchObject({ name: 'StoreUnavailableError' });
    dispose();
  });
});
