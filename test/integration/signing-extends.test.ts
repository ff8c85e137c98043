// "Nothing is signed that does not extend what was signed before" (docs/receipts.md, "Before anything
// is signed"): the forgeries of issue 18 against a real store, by its database owner (rows, head, tree
// and anchor rewritten together), each of which today's code signed, and each of which is now a named
// break and no signature: a fork re-signed once ordinary work continues (so `verify` said "the store
// agrees" and two bundles of one origin told different histories), the same with the witness off (the
// store's own last checkpoint), and an attestation of a `launch_committed` row past the head.
import { afterAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { canonicalJson, digestText } from '../../src/core/canonical';
import { appendedNodes, leafHash, verifyInclusion } from '../../src/core/merkle';
import { parseCheckpoint } from '../../src/core/checkpoint';
import { anchorPath, readAnchor } from '../../src/store/anchor';
import { makeWorld, type World } from '../support/world';

interface Json {
  ok?: boolean;
  breaks?: { seq: number; kind: string }[];
  [key: string]: unknown;
}

const worlds: World[] = [];
afterAll(() => worlds.forEach((w) => w.cleanup()));

const witnessOf = (w: World) => join(w.root, 'witness.jsonl');
const json = (w: World, args: string[], env: Record<string, string> = {}) => {
  const run = w.cli(args, { env: { TURNKEEPER_CHECKPOINT_EVERY: '0', ...env } });
  let parsed: Json = {};
  try {
    parsed = JSON.parse(run.stdout) as Json;
  } catch {
    // a command without --json
  }
  return { code: run.code, json: parsed, stderr: run.stderr };
};
const witnessLines = (w: World) => (existsSync(witnessOf(w)) ? readFileSync(witnessOf(w), 'utf8').trim().split('\n').length : 0);

/** Receipts 1..3, a checkpoint of #3 (receipt #4), receipts 5..7, a checkpoint of #7 (receipt #8), witnessed or not. */
function signedTwice(name: string, witness: 'on' | 'off'): World {
  const w = makeWorld(name);
  worlds.push(w);
  mkdirSync(w.home, { recursive: true });
  writeFileSync(join(w.home, 'config.json'), JSON.stringify({ witness: witness === 'on' ? witnessOf(w) : 'off' }));
  for (let i = 1; i <= 3; i += 1) expect(json(w, ['todo', 'add', `Title ${i}`, '--id', `todo-${i}`]).code).toBe(0);
  expect(json(w, ['checkpoint', '--json']).json).toMatchObject({ seq: 3, receipt: 4 });
  for (let i = 4; i <= 6; i += 1) expect(json(w, ['todo', 'add', `Title ${i}`, '--id', `todo-${i}`]).code).toBe(0);
  expect(json(w, ['checkpoint', '--json']).json).toMatchObject({ seq: 7, receipt: 8 });
  expect(json(w, ['verify', '--json']).json).toMatchObject({ ok: true, breaks: [] });
  return w;
}

/**
 * As the database owner: receipt `from` rewritten, every later one relinked and rehashed, the Merkle
 * tree recomputed (where the store has one), the head row and the anchor fixed. Every row verifies.
 */
async function forkFrom(w: World, from: number, edit = (value: Record<string, unknown>) => void (value.at = '2020-01-01T00:00:00.000Z')): Promise<void> {
  const store = await w.store();
  let head = { seq: 0, hash: '' };
  try {
    const db = store.connection;
    const rows = db.prepare('SELECT seq, doc, hash FROM receipts ORDER BY seq').all() as { seq: number; doc: string; hash: string }[];
    let prev = 'sha256:' + '0'.repeat(64);
    for (const row of rows) {
      if (row.seq >= from) {
        const value = JSON.parse(row.doc) as Record<string, unknown>;
        value.prevHash = prev;
        if (row.seq === from) edit(value);
        const doc = canonicalJson(value);
        db.prepare('UPDATE receipts SET doc = ?, hash = ? WHERE seq = ?').run(doc, digestText(doc), row.seq);
        row.doc = doc;
        row.hash = digestText(doc);
      }
      prev = row.hash;
      head = { seq: row.seq, hash: row.hash };
    }
    if (db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'receipt_tree'").get()) {
      db.prepare('DELETE FROM receipt_tree').run();
      const nodes = new Map<string, Uint8Array>();
      rows.forEach((row, i) => {
        for (const { key, hash } of appendedNodes(i, leafHash(Buffer.from(row.doc, 'utf8')), ([level, at]) => nodes.get(`${level}/${at}`)!)) {
          nodes.set(`${key[0]}/${key[1]}`, hash);
          db.prepare('INSERT INTO receipt_tree (level, idx, hash) VALUES (?, ?, ?)').run(key[0], key[1], hash);
        }
      });
    }
    db.prepare('UPDATE receipt_head SET seq = ?, hash = ? WHERE id = 1').run(head.seq, head.hash);
  } finally {
    store.close();
  }
  const anchor = readAnchor(w.db);
  if (!anchor || anchor === 'unreadable') throw new Error('no anchor');
  writeFileSync(anchorPath(w.db), JSON.stringify({ schema: 'turnkeeper.anchor/v1', ...anchor, seq: head.seq, hash: head.hash }) + '\n');
}

/** Ordinary work continues: five more Todos, with automatic checkpoints every 4 receipts. */
function workContinues(w: World): void {
  for (let i = 0; i < 5; i += 1) expect(json(w, ['todo', 'add', `Later ${i}`, '--id', `later-${i}`], { TURNKEEPER_CHECKPOINT_EVERY: '4' }).code).toBe(0);
}

describe('a fork is never signed', () => {
  it('the history rewritten after a witnessed checkpoint: after ordinary work continues, verify still names it, and checkpoint and export are refused with `fork`', async () => {
    const w = signedTwice('fork-witnessed', 'on');
    const bundleA = join(w.root, 'a.tkb');
    expect(json(w, ['receipts', 'export', '--out', bundleA]).code).toBe(0);
    expect(json(w, ['verify', '--bundle', bundleA, '--json']).json).toMatchObject({ ok: true });
    const witnessed = witnessLines(w);
    const meta = async () => {
      const store = await w.store();
      try {
        return (store.connection.prepare("SELECT value FROM store_meta WHERE key = 'checkpoint'").get() as { value: string }).value;
      } finally {
        store.close();
      }
    };
    const signedBefore = await meta();

    await forkFrom(w, 5); // inside the range of the checkpoint of #7, after the one of #3
    expect(json(w, ['verify', '--json']).json.ok).toBe(false);
    workContinues(w);
    // Today's code signed the forged head on the way (an automatic checkpoint), and verify then said
    // the store agrees with its witness. Now no automatic checkpoint is signed over the fork:
    expect(witnessLines(w)).toBe(witnessed);
    expect(await meta()).toBe(signedBefore);
    expect(json(w, ['verify', '--json']).json).toMatchObject({ ok: false });
    const checkpoint = json(w, ['checkpoint', '--json']);
    expect(checkpoint.code).toBe(1);
    expect(checkpoint.json).toMatchObject({ ok: false, reason: 'chain_broken' });
    // The export's checkpoint of #8 (receipt #9), the newest signed and witnessed, is not a prefix any more.
    expect(checkpoint.json.breaks).toContainEqual({ seq: 8, kind: 'fork' });
    // A second bundle of the same origin with another history: refused, nothing written, nothing signed.
    const bundleB = join(w.root, 'b.tkb');
    const exported = json(w, ['receipts', 'export', '--out', bundleB, '--json']);
    expect(exported.code).toBe(1);
    expect(existsSync(bundleB)).toBe(false);
    expect(witnessLines(w)).toBe(witnessed);
  });

  it('the carrier of the newest witnessed checkpoint rewritten (its signed head intact): `fork` at the carrier, no signature', async () => {
    const w = signedTwice('fork-carrier', 'on');
    const witnessed = witnessLines(w);
    // Receipt #8 (which carried the checkpoint of #7) becomes an ordinary receipt: the history after #7 forked.
    await forkFrom(w, 8, (value) => {
      value.kind = 'todo_added';
      value.todo = 'todo-x';
      delete value.detail;
    });
    workContinues(w);
    expect(witnessLines(w)).toBe(witnessed);
    const checkpoint = json(w, ['checkpoint', '--json']);
    expect(checkpoint.code).toBe(1);
    expect(checkpoint.json.breaks).toContainEqual({ seq: 8, kind: 'fork' });
    expect(json(w, ['verify', '--json']).json.breaks).toContainEqual({ seq: 8, kind: 'checkpoint_mismatch' });
  });

  it("with the witness off, the store's own last checkpoint: a fork inside it is refused with `fork` (control: an honest store signs)", async () => {
    const control = signedTwice('fork-meta-control', 'off');
    workContinues(control);
    expect(json(control, ['checkpoint', '--json']).code).toBe(0);

    const w = signedTwice('fork-meta', 'off');
    await forkFrom(w, 6);
    const checkpoint = json(w, ['checkpoint', '--json']);
    expect(checkpoint.code).toBe(1);
    expect(checkpoint.json.breaks).toEqual([{ seq: 7, kind: 'fork' }]);
    expect(json(w, ['receipts', 'export', '--json', '--out', join(w.root, 'x.tkb')]).json).toMatchObject({ ok: false, reason: 'chain_broken' });
  });
});

describe('the walk before an automatic checkpoint is bounded', () => {
  it('a store of more than 10,000 receipts never signed over its tree: hooks skip the checkpoint, `turnkeeper checkpoint` signs it once, then automatic ones resume', async () => {
    const w = makeWorld('walk-bound');
    worlds.push(w);
    const store = await w.store();
    try {
      for (let i = 0; i < 10_050; i += 1) await store.appendReceipt({ kind: 'todo_added', goal: w.goal, todo: `seed-${i}` }, Date.now());
    } finally {
      store.close();
    }
    const lastKind = async () => {
      const s = await w.store();
      try {
        return (s.connection.prepare('SELECT kind FROM receipt_index ORDER BY seq DESC LIMIT 1').get() as { kind: string }).kind;
      } finally {
        s.close();
      }
    };
    const every1 = { TURNKEEPER_CHECKPOINT_EVERY: '1' };
    expect(json(w, ['todo', 'add', 'After', '--id', 'after-1'], every1).code).toBe(0);
    expect(await lastKind()).toBe('todo_added');
    // Doctor says so, with the command that signs them.
    const backlog = /10051 receipts since the last checkpoint signed over the receipt tree: .*turnkeeper checkpoint signs them once/;
    expect(json(w, ['doctor', '--json']).json.problems).toEqual(expect.arrayContaining([expect.stringMatching(backlog)]));
    expect(json(w, ['checkpoint', '--json']).json).toMatchObject({ ok: true, seq: 10_051 });
    expect(json(w, ['todo', 'add', 'After', '--id', 'after-2'], every1).code).toBe(0);
    expect(await lastKind()).toBe('checkpoint');
    expect(json(w, ['doctor', '--json']).json.problems).not.toEqual(expect.arrayContaining([expect.stringMatching(backlog)]));
  }, 120_000);
});

describe('an attestation proves its receipt is in a signed tree', () => {
  const DIGEST = 'sha256:' + 'ab'.repeat(32);
  const launchFields = (w: World) => ({
    kind: 'launch_committed',
    goal: w.goal,
    todo: 'fix-login',
    capture: 'cap_' + '1'.repeat(24),
    owner: 'codex:s1',
    lease: { epoch: 1, version: 1 },
    detail: {
      launch: 'launch_0123456789abcdef',
      agent: 'codex',
      digest: DIGEST,
      argvDigest: DIGEST,
      envDigest: DIGEST,
      cwd: w.repo,
      loaderEnvironment: 'none',
    },
  });

  it('a genuine launch: the statement carries the stored document and an inclusion proof that verifies against the signed root', async () => {
    const w = makeWorld('attest-proof');
    worlds.push(w);
    const store = await w.store();
    let seq: number;
    try {
      await store.appendReceipt({ kind: 'todo_added', goal: w.goal, todo: 'fix-login' }, Date.now());
      seq = (await store.appendReceipt(launchFields(w) as never, Date.now())).seq;
      await store.appendReceipt({ kind: 'todo_added', goal: w.goal, todo: 'other' }, Date.now());
    } finally {
      store.close();
    }
    const run = w.cli(['receipts', 'attestation', String(seq)]);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    const envelope = JSON.parse(run.stdout) as { payload: string };
    const statement = JSON.parse(Buffer.from(envelope.payload, 'base64').toString('utf8')) as {
      predicate: {
        receipt: { seq: number; hash: string; document: string; inclusion: { index: number; size: number; root: string; proof: string[]; checkpoint: string } };
      };
    };
    const { receipt } = statement.predicate;
    expect(digestText(receipt.document)).toBe(receipt.hash);
    const note = parseCheckpoint(receipt.inclusion.checkpoint)!;
    expect(note).toMatchObject({ version: 2, seq: receipt.inclusion.size });
    expect(Buffer.from(note.root!.slice(7), 'hex').toString('base64')).toBe(receipt.inclusion.root);
    const proof = receipt.inclusion.proof.map((hash) => Buffer.from(hash, 'base64'));
    expect(
      verifyInclusion(seq - 1, receipt.inclusion.size, leafHash(Buffer.from(receipt.document, 'utf8')), proof, Buffer.from(receipt.inclusion.root, 'base64')),
    ).toBe(true);
  });

  it('a launch_committed row inserted past the head (linked to it, with its own hash right) is refused: not_in_chain, nothing signed', async () => {
    const w = makeWorld('attest-forged');
    worlds.push(w);
    const store = await w.store();
    let forged: number;
    try {
      await store.appendReceipt({ kind: 'todo_added', goal: w.goal, todo: 'fix-login' }, Date.now());
      const head = store.connection.prepare('SELECT seq, hash FROM receipt_head WHERE id = 1').get() as { seq: number; hash: string };
      forged = head.seq + 1;
      const doc = canonicalJson({ schema: 'turnkeeper.receipt/v1', seq: forged, prevHash: head.hash, at: new Date().toISOString(), ...launchFields(w) });
      store.connection.prepare('INSERT INTO receipts (seq, doc, hash) VALUES (?, ?, ?)').run(forged, doc, digestText(doc));
      const far = canonicalJson({ schema: 'turnkeeper.receipt/v1', seq: forged + 5, prevHash: head.hash, at: new Date().toISOString(), ...launchFields(w) });
      store.connection.prepare('INSERT INTO receipts (seq, doc, hash) VALUES (?, ?, ?)').run(forged + 5, far, digestText(far));
    } finally {
      store.close();
    }
    for (const seq of [forged, forged + 5]) {
      const run = w.cli(['receipts', 'attestation', String(seq)]);
      expect(run.code, run.stdout).toBe(1);
      expect(JSON.parse(run.stdout)).toMatchObject({ ok: false, reason: 'not_in_chain' });
    }
  });
});
