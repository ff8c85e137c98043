// The store is the owner's alone, even when another writer created TURNKEEPER_HOME first with the
// umask's 0755 (the folder mode alone no longer protects it): the database is created 0600 before
// SQLite opens it, so its -wal and -shm (created with the database file's mode) are 0600 too; the
// anchor and config.json are 0600; and a home that is ours but open to others is narrowed to 0700.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chmodSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { writeHookSettings } from '../../src/config/homeConfig';
import { anchorPath } from '../../src/store/anchor';
import { contextOf, makeWorld, payload, type World } from '../support/world';

let world: World;
beforeEach(() => {
  world = makeWorld('modes');
});
afterEach(() => world.cleanup());

const modeOf = (path: string) => statSync(path).mode & 0o777;

describe('file modes in TURNKEEPER_HOME', () => {
  it('a home another writer made 0755: the database, -wal, -shm, anchor and config.json are 0600, the home 0700', async () => {
    mkdirSync(world.home, { recursive: true });
    chmodSync(world.home, 0o755);
    expect(world.cli(['todo', 'add', 'Fix login', '--id', 'fix-login']).code).toBe(0);
    expect(modeOf(world.home)).toBe(0o700);
    expect(modeOf(world.db)).toBe(0o600);
    // A connection held open keeps -wal and -shm in place while a hook writes.
    const held = await world.store();
    try {
      expect(contextOf(world.cli(['hook'], { input: payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login') }).stdout)).toMatch(/· epoch 1$/m);
      for (const path of [world.db, `${world.db}-wal`, `${world.db}-shm`, anchorPath(world.db)]) {
        expect(existsSync(path), path).toBe(true);
        expect(modeOf(path), path).toBe(0o600);
      }
    } finally {
      held.close();
    }
    chmodSync(world.home, 0o755);
    expect(writeHookSettings(world.env, { enabled: true, onConflict: 'block', leaseTtlSeconds: 600 })).toBe(true);
    expect(modeOf(join(world.home, 'config.json'))).toBe(0o600);
    expect(modeOf(world.home)).toBe(0o700);
  });

  it('a store elsewhere (TURNKEEPER_DB) is created 0600 in a folder of its own, 0700', () => {
    const db = join(world.root, 'stores', 'team.db');
    expect(world.cli(['todo', 'add', 'Fix login', '--id', 'fix-login'], { env: { TURNKEEPER_DB: db } }).code).toBe(0);
    expect(modeOf(db)).toBe(0o600);
    expect(modeOf(join(world.root, 'stores'))).toBe(0o700);
  });
});
