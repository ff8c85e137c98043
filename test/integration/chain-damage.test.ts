// Chain damage that `verify` used to miss (hardening finding 10), through the real CLI against a real
// store written by real hook processes: a cut tail with a fixed head, an emptied store, a non-JSON
// document that keeps a valid tail, and a `-wal` file left by another database. Each has its control.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { copyFileSync, existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { digestText } from '../../src/core/canonical';
import { anchorPath } from '../../src/store/anchor';
import { contextOf, makeWorld, payload, type World } from '../support/world';

let world: World;
beforeEach(() => {
  world = makeWorld('chaindamage');
});
afterEach(() => world.cleanup());

interface VerifyJson {
  ok: boolean;
  verified: number;
  breaks: { seq: number; kind: string }[];
  error?: { code: string };
}
const verify = (w: World = world): VerifyJson => JSON.parse(w.cli(['verify', '--json']).stdout) as VerifyJson;

/** A store with a claimed Todo: 4 receipts written by real processes (todo_added + 3 of the claim). */
function claimed(w: World = world, todo = 'fix-login') {
  expect(w.cli(['todo', 'add', `Title ${todo}`, '--id', todo]).code).toBe(0);
  expect(contextOf(w.cli(['hook'], { input: payload.codexPrompt(w, 'sess-a', 'turn-1', `#todo:${todo}`) }).stdout)).toContain('epoch 1');
}

async function tamper(sql: (db: Awaited<ReturnType<World['store']>>['connection']) => void) {
  const store = await world.store();
  try {
    sql(store.connection);
  } finally {
    store.close();
  }
}

function cutTailAndFixHead(db: Awaited<ReturnType<World['store']>>['connection'], keep: number) {
  const kept = db.prepare('SELECT hash FROM receipts WHERE seq = ?').get(keep) as { hash: string };
  db.prepare('DELETE FROM receipts WHERE seq > ?').run(keep);
  db.prepare('DELETE FROM receipt_index WHERE seq > ?').run(keep);
  db.prepare('UPDATE receipt_head SET seq = ?, hash = ? WHERE id = 1').run(keep, kept.hash);
}

describe('finding 10: chain damage verify must name', () => {
  it('deleting the last receipts and fixing the head: truncated_after_checkpoint', async () => {
    claimed();
    expect(verify()).toMatchObject({ ok: true, verified: 4 });
    expect(existsSync(anchorPath(world.db))).toBe(true);
    await tamper((db) => cutTailAndFixHead(db, 2));
    expect(verify()).toMatchObject({ ok: false, breaks: [{ seq: 4, kind: 'truncated_after_checkpoint' }] });

    // Control: the same cut with the anchor removed too links perfectly; this is what only the anchor
    // (outside the database) can see, and what remains undetectable without it (docs/receipts.md).
    rmSync(anchorPath(world.db));
    expect(verify()).toMatchObject({ ok: true, verified: 2, breaks: [] });
  });

  it('deleting every receipt and the head: no longer "0 receipts, verifies"', async () => {
    claimed();
    await tamper((db) => {
      db.exec('DELETE FROM receipts; DELETE FROM receipt_head; DELETE FROM receipt_index;');
    });
    expect(verify()).toMatchObject({ ok: false, verified: 0, breaks: [{ seq: 4, kind: 'truncated_after_checkpoint' }] });
  });

  it('a missing store is said plainly, not reported as an empty verified chain', () => {
    const result = world.cli(['verify', '--json']);
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stdout)).toMatchObject({ ok: false, error: { code: 'no_store' } });
    expect(world.cli(['verify']).stderr).toContain(`no store at ${world.db}`);
  });

  it('a document replaced by non-JSON text that keeps a valid tail and hash: content_altered', async () => {
    claimed();
    const forged = await (async () => {
      let text = '';
      await tamper((db) => {
        const last = db.prepare('SELECT doc FROM receipts WHERE seq = 4').get() as { doc: string };
        // The tail an earlier fast path read ("prevHash", "schema", "seq") survives; the rest is not JSON.
        text = '{GARBAGE that is not json,' + last.doc.slice(last.doc.indexOf('"prevHash"'));
        const hash = digestText(text);
        db.prepare('UPDATE receipts SET doc = ?, hash = ? WHERE seq = 4').run(text, hash);
        db.prepare('UPDATE receipt_head SET hash = ? WHERE id = 1').run(hash);
      });
      return text;
    })();
    expect(forged).toMatch(/"schema":"turnkeeper\.receipt\/v1","seq":4(,"todo":"fix-login")?\}$/);
    const report = verify();
    expect(report.ok).toBe(false);
    expect(report.breaks).toContainEqual({ seq: 4, kind: 'content_altered' });
    // The reader shows the row as what it is, never fields read from it.
    const listed = world.cli(['receipts']).stdout;
    expect(listed).toContain('#4 (not a receipt:');
    expect(listed).not.toContain('[native code]');
  });

  it('a -wal file left by another database is refused, not replayed', () => {
    // The other database: a store with its own chain, whose writer was killed so its WAL stayed.
    const other = makeWorld('chaindamage-other');
    try {
      claimed(other, 'other-task');
      const script = `
        const Database = require(${JSON.stringify(require.resolve('better-sqlite3'))});
        const db = new Database(${JSON.stringify(other.db)});
        db.pragma('wal_autocheckpoint = 0');
        db.exec("INSERT INTO todos (goal, id, title, body, status, created_at, updated_at) VALUES ('g', 'walonly', 't', '', 'open', 1, 1)");
        process.kill(process.pid, 'SIGKILL');`;
      spawnSync(process.execPath, ['-e', script]);
      expect(statSync(`${other.db}-wal`).size).toBeGreaterThan(0);

      claimed(world, 'fix-login');
      const beforeDb = readFileSync(world.db);
      copyFileSync(`${other.db}-wal`, `${world.db}-wal`);
      rmSync(`${world.db}-shm`, { force: true });
      const result = world.cli(['todo', 'list', '--json']);
      expect(result.code).not.toBe(0);
      expect(result.stderr).toContain('does not belong to this database');
      // Not replayed: the database file is byte for byte what it was, and the foreign log is still there.
      expect(readFileSync(world.db).equals(beforeDb)).toBe(true);
      expect(existsSync(`${world.db}-wal`)).toBe(true);
      // The hook fails closed with guidance, and claims nothing.
      const hook = world.cli(['hook'], { input: payload.codexPrompt(world, 'sess-b', 'turn-1', '#todo:fix-login') });
      expect(contextOf(hook.stdout)).toContain('[store_unavailable]');

      // Control: without the foreign log the store opens and its own Todo is there.
      rmSync(`${world.db}-wal`);
      expect(JSON.parse(world.cli(['todo', 'list', '--json']).stdout)).toContainEqual(expect.objectContaining({ id: 'fix-login' }));
      expect(verify()).toMatchObject({ ok: true });
    } finally {
      other.cleanup();
    }
  });

  it("the store's own -wal left by a writer killed before it moved the anchor is replayed as usual", () => {
    claimed();
    // A Turnkeeper writer killed between its commit and the anchor: the log is newer than the anchor.
    expect(world.cli(['todo', 'add', 'Written in the log', '--id', 'in-the-log'], { env: { TURNKEEPER_TEST_FAULT: 'store.after_commit=kill' } }).signal).toBe(
      'SIGKILL',
    );
    expect(statSync(`${world.db}-wal`).size).toBeGreaterThan(0);
    const listed = world.cli(['todo', 'list', '--json']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain('in-the-log');
    expect(verify()).toMatchObject({ ok: true, verified: 5 });
  });

  it('a log written around Turnkeeper (not newer than the anchor) is refused', () => {
    claimed();
    const script = `
      const Database = require(${JSON.stringify(require.resolve('better-sqlite3'))});
      const db = new Database(${JSON.stringify(world.db)});
      db.pragma('wal_autocheckpoint = 0');
      db.exec("DELETE FROM todos WHERE id = 'fix-login'");
      process.kill(process.pid, 'SIGKILL');`;
    spawnSync(process.execPath, ['-e', script]);
    expect(world.cli(['todo', 'list', '--json']).stderr).toContain('does not belong to this database');
  });
});
