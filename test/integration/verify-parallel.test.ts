// `turnkeeper verify` on a long chain walks it on two threads (dist/verify-worker.js). Its report must
// equal the one-thread walk's for an intact chain and for every kind of tampering, on either half
// and at the seam.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildReceipt, type ChainLink } from '../../src/core/receipts';
import { digestText } from '../../src/core/canonical';
import { openSqliteAuthority } from '../../src/store/sqlite';
import { makeWorld, type World } from '../support/world';

const N = 30_000; // above the parallel threshold; the seam falls after receipt 15,000
let world: World;

beforeAll(async () => {
  world = makeWorld('verify-par');
  const store = (await openSqliteAuthority({ path: world.db, create: true }))!;
  const db = store.connection;
  const insert = db.prepare('INSERT INTO receipts (seq, doc, hash) VALUES (?, ?, ?)');
  let head: ChainLink | undefined;
  db.transaction(() => {
    for (let i = 0; i < N; i += 1) {
      const receipt = buildReceipt(head, { kind: 'lease_renewed', goal: '/repo', todo: 'fix-login', owner: 'codex:s', lease: { epoch: 1, version: i + 1 } }, 1_800_000_000_000 + i);
      insert.run(receipt.document.seq, receipt.text, receipt.hash);
      head = { seq: receipt.document.seq, hash: receipt.hash };
    }
    db.prepare('INSERT INTO receipt_head (id, seq, hash) VALUES (1, ?, ?)').run(head!.seq, head!.hash);
  })();
  store.close();
});
afterAll(() => world.cleanup());

type Tamper = (db: import('better-sqlite3').Database) => void;
const edit = (seq: number, rehash: boolean): Tamper => (db) => {
  const { doc } = db.prepare('SELECT doc FROM receipts WHERE seq = ?').get(seq) as { doc: string };
  const changed = doc.replace('"version":', '"version":9');
  db.prepare('UPDATE receipts SET doc = ?, hash = ? WHERE seq = ?').run(changed, rehash ? digestText(changed) : db.prepare('SELECT hash FROM receipts WHERE seq = ?').pluck().get(seq), seq);
};
const remove = (seq: number): Tamper => (db) => void db.prepare('DELETE FROM receipts WHERE seq = ?').run(seq);
const dropHash = (seq: number): Tamper => (db) => void db.prepare('UPDATE receipts SET hash = NULL WHERE seq = ?').run(seq);
const swap = (a: number, b: number): Tamper => (db) => {
  const row = (seq: number) => db.prepare('SELECT doc, hash FROM receipts WHERE seq = ?').get(seq) as { doc: string; hash: string };
  const [ra, rb] = [row(a), row(b)];
  db.prepare('UPDATE receipts SET doc = ?, hash = ? WHERE seq = ?').run(rb.doc, rb.hash, a);
  db.prepare('UPDATE receipts SET doc = ?, hash = ? WHERE seq = ?').run(ra.doc, ra.hash, b);
};

/** Runs both walks on a copy of the store with `tamper` applied. */
async function bothWalks(tamper?: Tamper) {
  const copy = join(world.root, `copy-${Math.random().toString(16).slice(2)}.db`);
  copyFileSync(world.db, copy);
  const store = (await openSqliteAuthority({ path: copy, create: false }))!;
  if (tamper) tamper(store.connection);
  const serial = await store.verifyChain();
  store.close();
  const cli = world.cli(['verify', '--json'], { env: { TURNKEEPER_DB: copy } });
  return { serial: { ok: serial.ok, verified: serial.verified, breaks: serial.breaks }, parallel: JSON.parse(cli.stdout) as typeof serial };
}

describe('parallel verify', () => {
  const cases: [string, Tamper | undefined][] = [
    ['intact', undefined],
    ['edit in the lower half', edit(5_000, false)],
    ['edit in the upper half', edit(25_000, false)],
    ['re-hashed edit just before the seam', edit(15_000, true)],
    ['the first upper row deleted', remove(15_001)],
    ['the last lower row deleted', remove(15_000)],
    ['the last row deleted (truncation)', remove(N)],
    ['the first upper row without its hash', dropHash(15_001)],
    ['rows swapped across the seam', swap(15_000, 15_001)],
    ['a gap spanning the seam', (db) => void db.prepare('DELETE FROM receipts WHERE seq BETWEEN 14_990 AND 15_010').run()],
  ];
  for (const [name, tamper] of cases) {
    it(`${name}: the two-thread report equals the one-thread report`, async () => {
      const { serial, parallel } = await bothWalks(tamper);
      expect(parallel).toStrictEqual(serial);
      expect(serial.ok).toBe(tamper === undefined);
    });
  }
});
