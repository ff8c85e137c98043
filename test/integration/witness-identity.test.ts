// The witness pins the store's identity and compares every head it holds (docs/receipts.md, "The
// witness"; issue 18 item 3). The forgeries, by the database's owner:
// - blinded: the tail cut after a witnessed checkpoint, the head and anchor fixed, and
//   store_meta.store_id changed (on PostgreSQL the hook role may run that UPDATE). The witness then
//   held "no checkpoint of this store yet" and verify passed. Now the witness knows which origin it saw
//   at this location: `store_identity_changed`, and nothing is signed over the new identity.
// - an older witnessed head forked under a newer one that a signer was made to sign: only the highest
//   was compared, so verify said "the store agrees". Now every witnessed head is compared.
// - 1 MiB of other stores' lines after this store's: the witness was read from its last megabyte
//   only, and held none of them. Now the whole file is scanned and other lines are skipped.
// - a witness in a folder others may write (they could delete or replace it): refused, with the fix.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendFileSync, chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { canonicalJson, digestText } from '../../src/core/canonical';
import { checkpointText, signedNote } from '../../src/core/checkpoint';
import { appendedNodes, leafHash, treeRoot } from '../../src/core/merkle';
import { signingKey, signNote } from '../../src/ledger/keys';
import { anchorPath, readAnchor } from '../../src/store/anchor';
import { makeWorld, type World } from '../support/world';
import { usePostgres } from '../support/postgres';
import pg from 'pg';

interface Json {
  ok?: boolean;
  breaks?: { seq: number; kind: string }[];
  [key: string]: unknown;
}

const worlds: World[] = [];
const sharedDirs: string[] = [];
afterAll(() => {
  worlds.forEach((w) => w.cleanup());
  sharedDirs.forEach((dir) => rmSync(dir, { recursive: true, force: true }));
});

const run = (w: World, args: string[], env: Record<string, string> = {}) => {
  const result = w.cli(args, { env: { TURNKEEPER_CHECKPOINT_EVERY: '0', ...env } });
  let json: Json = {};
  try {
    json = JSON.parse(result.stdout) as Json;
  } catch {
    // a command without --json
  }
  return { code: result.code, json, out: result.stdout + result.stderr };
};

/** Receipts 1..3, a checkpoint of #3 (receipt #4), receipts 5..7, a checkpoint of #7 (receipt #8), witnessed in `witness`. */
function signedTwice(name: string, witness?: string): World {
  const w = makeWorld(name);
  worlds.push(w);
  mkdirSync(w.home, { recursive: true });
  writeFileSync(join(w.home, 'config.json'), JSON.stringify({ witness: witness ?? join(w.root, 'witness.jsonl') }));
  for (let i = 1; i <= 3; i += 1) expect(run(w, ['todo', 'add', `Title ${i}`, '--id', `todo-${i}`]).code).toBe(0);
  expect(run(w, ['checkpoint', '--json']).json).toMatchObject({ seq: 3, receipt: 4 });
  for (let i = 4; i <= 6; i += 1) expect(run(w, ['todo', 'add', `Title ${i}`, '--id', `todo-${i}`]).code).toBe(0);
  expect(run(w, ['checkpoint', '--json']).json).toMatchObject({ seq: 7, receipt: 8 });
  expect(run(w, ['verify', '--json']).json).toMatchObject({ ok: true, breaks: [] });
  return w;
}

/**
 * As the database's owner: keep receipts up to `keep`, rewrite from `from` on (relinked, rehashed, the
 * tree rebuilt), fix the head row and the anchor, and optionally give the store another identity.
 * Every row verifies afterwards.
 */
async function rewrite(w: World, options: { keep?: number; from?: number; storeId?: string }): Promise<{ seq: number; hash: string; root: string }> {
  const store = await w.store();
  let head = { seq: 0, hash: '' };
  let root = '';
  try {
    const db = store.connection;
    if (options.keep !== undefined) {
      db.prepare('DELETE FROM receipts WHERE seq > ?').run(options.keep);
      db.prepare('DELETE FROM receipt_index WHERE seq > ?').run(options.keep);
    }
    const rows = db.prepare('SELECT seq, doc, hash FROM receipts ORDER BY seq').all() as { seq: number; doc: string; hash: string }[];
    let prev = 'sha256:' + '0'.repeat(64);
    for (const row of rows) {
      if (options.from !== undefined && row.seq >= options.from) {
        const value = JSON.parse(row.doc) as Record<string, unknown>;
        value.prevHash = prev;
        if (row.seq === options.from) value.at = '2020-01-01T00:00:00.000Z';
        row.doc = canonicalJson(value);
        row.hash = digestText(row.doc);
        db.prepare('UPDATE receipts SET doc = ?, hash = ? WHERE seq = ?').run(row.doc, row.hash, row.seq);
      }
      prev = row.hash;
      head = { seq: row.seq, hash: row.hash };
    }
    db.prepare('DELETE FROM receipt_tree').run();
    const nodes = new Map<string, Uint8Array>();
    rows.forEach((row, i) => {
      for (const { key, hash } of appendedNodes(i, leafHash(Buffer.from(row.doc, 'utf8')), ([level, at]) => nodes.get(`${level}/${at}`)!)) {
        nodes.set(`${key[0]}/${key[1]}`, hash);
        db.prepare('INSERT INTO receipt_tree (level, idx, hash) VALUES (?, ?, ?)').run(key[0], key[1], hash);
      }
    });
    root = `sha256:${Buffer.from(await treeRoot(rows.length, (keys) => Promise.resolve(keys.map(([level, at]) => nodes.get(`${level}/${at}`)!)))).toString('hex')}`;
    db.prepare('UPDATE receipt_head SET seq = ?, hash = ? WHERE id = 1').run(head.seq, head.hash);
    if (options.storeId) db.prepare("UPDATE store_meta SET value = ? WHERE key = 'store_id'").run(options.storeId);
  } finally {
    store.close();
  }
  const anchor = readAnchor(w.db);
  if (!anchor || anchor === 'unreadable') throw new Error('no anchor');
  const storeId = options.storeId ? { storeId: options.storeId } : {};
  writeFileSync(anchorPath(w.db), JSON.stringify({ schema: 'turnkeeper.anchor/v1', ...anchor, ...storeId, seq: head.seq, hash: head.hash }) + '\n');
  return { ...head, root };
}

/** The witness's lines as the previous release wrote them: v1, no store location (so no pin). */
function asVersion1(path: string): void {
  const lines = readFileSync(path, 'utf8').trim().split('\n');
  const old = lines.map((line) => {
    const { store: _store, ...rest } = JSON.parse(line) as Record<string, unknown>;
    return JSON.stringify({ ...rest, schema: 'turnkeeper.witness/v1' });
  });
  writeFileSync(path, old.join('\n') + '\n');
}

describe('the witness pins the store identity it saw at this location', () => {
  it('the tail cut after a witnessed checkpoint, head and anchor fixed, store_id changed: store_identity_changed, and nothing signed over the new identity', async () => {
    const w = signedTwice('witness-blinded');
    const witness = join(w.root, 'witness.jsonl');
    const before = readFileSync(witness, 'utf8');
    expect(before).toContain(`"store":${JSON.stringify(w.db)}`);
    await rewrite(w, { keep: 5, storeId: 'st_forged0000000000000000' });

    const verify = run(w, ['verify', '--json']);
    expect(verify.code).toBe(1);
    expect(verify.json.breaks).toContainEqual({ seq: 7, kind: 'store_identity_changed' });
    expect(run(w, ['verify']).out).toMatch(/holds checkpoints of another store at this location .* the store's identity changed/);
    const checkpoint = run(w, ['checkpoint', '--json']);
    expect(checkpoint.code).toBe(1);
    expect(checkpoint.json.breaks).toContainEqual({ seq: 7, kind: 'store_identity_changed' });
    // Ordinary work with automatic checkpoints signs nothing over the replaced identity either.
    const later = run(w, ['todo', 'add', 'Later', '--id', 'later-1'], { TURNKEEPER_CHECKPOINT_EVERY: '1' });
    expect(later.code).toBe(0);
    expect(readFileSync(witness, 'utf8')).toBe(before);
  });

  it('control: the same forgery against a witness of version 1 lines (no location, nothing pinned) passes verify, as every witness did before', async () => {
    const w = signedTwice('witness-blinded-v1');
    asVersion1(join(w.root, 'witness.jsonl'));
    await rewrite(w, { keep: 5, storeId: 'st_forged0000000000000000' });
    expect(run(w, ['verify', '--json']).json).toMatchObject({ ok: true });
    expect(run(w, ['verify']).out).toMatch(/holds no checkpoint of this store yet/);
  });

  it('the recovery a person takes after recreating the store: the witness moved aside, the new store is witnessed afresh', async () => {
    const w = signedTwice('witness-recreated');
    await rewrite(w, { storeId: 'st_recreated00000000000000' });
    expect(run(w, ['verify', '--json']).code).toBe(1);
    const witness = join(w.root, 'witness.jsonl');
    writeFileSync(`${witness}.old`, readFileSync(witness));
    writeFileSync(witness, '');
    expect(run(w, ['checkpoint', '--json']).code).toBe(0);
    expect(run(w, ['verify', '--json']).json).toMatchObject({ ok: true });
    expect(run(w, ['verify']).out).toMatch(/holds the checkpoint of receipt #8 .*; the store agrees/);
  });
});

describe('every witnessed head is compared', () => {
  it('a fork from #2 that a signer was made to sign at its head: the newest witnessed head agrees, the older ones are named', async () => {
    const w = signedTwice('witness-older-head');
    const witness = join(w.root, 'witness.jsonl');
    const forged = await rewrite(w, { from: 2 });
    // What the previous release's automatic checkpoint did on the way: sign the forged head, witnessed.
    const [line] = readFileSync(witness, 'utf8').trim().split('\n');
    const { origin, store } = JSON.parse(line!) as { origin: string; store: string };
    const text = checkpointText({ origin, seq: forged.seq, hash: forged.hash, root: forged.root, time: new Date().toISOString() });
    const note = signedNote(text, [signNote(signingKey(w.env), text)]);
    appendFileSync(witness, JSON.stringify({ schema: 'turnkeeper.witness/v2', store, origin, seq: forged.seq, receipt: null, checkpoint: note }) + '\n');

    const verify = run(w, ['verify', '--json']);
    expect(run(w, ['verify']).out).toMatch(/holds the checkpoint of receipt #8 /);
    // Only the newest compared, the store agreed with its witness:
    expect(verify.json.breaks).not.toContainEqual(expect.objectContaining({ seq: 8 }));
    // Every head compared, the forged history is named at both earlier checkpoints:
    expect(verify.json.breaks).toEqual(
      expect.arrayContaining([
        { seq: 3, kind: 'checkpoint_mismatch' },
        { seq: 7, kind: 'checkpoint_mismatch' },
      ]),
    );
    expect(verify.code).toBe(1);
  });
});

describe('lines of other stores cannot blind the witness', () => {
  it("2 MiB of other stores' lines after this store's: its checkpoints are still found, and a cut tail is still named", async () => {
    const w = signedTwice('witness-foreign-lines');
    const witness = join(w.root, 'witness.jsonl');
    const foreign = JSON.stringify({
      schema: 'turnkeeper.witness/v2',
      store: '/elsewhere/other.db',
      origin: 'turnkeeper.dev/store/st_other',
      seq: 1,
      receipt: 2,
      checkpoint: 'x'.repeat(400),
    });
    appendFileSync(witness, `${foreign}\n`.repeat(Math.ceil((2 << 20) / (foreign.length + 1))));
    // Beyond the last megabyte, which is all the witness was read from before:
    expect(statSync(witness).size).toBeGreaterThan(2 << 20);
    expect(run(w, ['verify', '--json']).json).toMatchObject({ ok: true });
    expect(run(w, ['verify']).out).toMatch(/holds the checkpoint of receipt #7 .*; the store agrees/);
    await rewrite(w, { keep: 5 });
    expect(run(w, ['verify', '--json']).json.breaks).toContainEqual({ seq: 8, kind: 'truncated_after_checkpoint' });
  });
});

describe('a witness in a folder others may write is refused', () => {
  it('a folder open to others (0777): no line is appended, verify says why; a sticky one (1777) and a private one are used', () => {
    // Unpredictable names (another user could plant a predictable one first), removed afterwards.
    const shared = (mode: number, name: string) => {
      const dir = mkdtempSync(join('/tmp', `${name}-`));
      sharedDirs.push(dir);
      chmodSync(dir, mode);
      return join(dir, 'witness.jsonl');
    };
    const open = shared(0o777, 'tk-witness-open');
    const w = makeWorld('witness-shared');
    worlds.push(w);
    mkdirSync(w.home, { recursive: true });
    writeFileSync(join(w.home, 'config.json'), JSON.stringify({ witness: open }));
    expect(run(w, ['todo', 'add', 'Title', '--id', 'todo-1']).code).toBe(0);
    expect(run(w, ['checkpoint', '--json']).code).toBe(0); // the checkpoint is in the store
    expect(() => statSync(open)).toThrow(/ENOENT/);
    expect(run(w, ['verify']).out).toMatch(/is not used: others may write its folder \(mode 777\).*chmod go-w/);

    for (const mode of [0o1777, 0o700]) {
      const path = shared(mode, `tk-witness-${mode.toString(8)}`);
      writeFileSync(join(w.home, 'config.json'), JSON.stringify({ witness: path }));
      expect(run(w, ['checkpoint', '--json']).code).toBe(0);
      expect(readFileSync(path, 'utf8')).toContain('"schema":"turnkeeper.witness/v2"');
      expect(run(w, ['verify']).out).toMatch(/; the store agrees/);
    }
  });

  it('a witness file another user owns, or others may write: refused (control: the same file as ours, 0600, is read)', () => {
    const w = signedTwice('witness-foreign-owner');
    const witness = join(w.root, 'witness.jsonl');
    chmodSync(witness, 0o666);
    expect(run(w, ['verify']).out).toMatch(/is not used: others may write it \(mode 666\)/);
    chmodSync(witness, 0o600);
    chownSync(witness, 65534, 65534);
    expect(run(w, ['verify']).out).toMatch(/is not used: it is owned by uid 65534/);
    chownSync(witness, process.getuid!(), process.getgid!());
    expect(run(w, ['verify']).out).toMatch(/; the store agrees/);
  });
});

describe('on a PostgreSQL team store', () => {
  const server = usePostgres({ beforeAll, afterAll });

  it("store_meta.store_id changed by the database's owner (the hook role may run the same UPDATE): store_identity_changed, and no checkpoint is signed", async () => {
    const w = makeWorld('witness-pg-identity');
    worlds.push(w);
    await server().createDatabase('pinned');
    const env = { TURNKEEPER_STORE: server().url('pinned') };
    mkdirSync(w.home, { recursive: true });
    writeFileSync(join(w.home, 'config.json'), JSON.stringify({ witness: join(w.root, 'witness.jsonl') }));
    expect(run(w, ['store', 'init'], env).code).toBe(0);
    for (let i = 1; i <= 3; i += 1) expect(run(w, ['todo', 'add', `Title ${i}`, '--id', `todo-${i}`], env).code).toBe(0);
    expect(run(w, ['checkpoint', '--json'], env).code).toBe(0);
    expect(run(w, ['verify'], env).out).toMatch(/; the store agrees/);

    const client = new pg.Client({ connectionString: server().url('pinned') });
    await client.connect();
    try {
      await client.query("UPDATE turnkeeper.store_meta SET value = 'st_forged0000000000000000' WHERE key = 'store_id'");
    } finally {
      await client.end();
    }
    const verify = run(w, ['verify', '--json'], env);
    expect(verify.code).toBe(1);
    expect(verify.json.breaks).toContainEqual({ seq: 3, kind: 'store_identity_changed' });
    const checkpoint = run(w, ['checkpoint', '--json'], env);
    expect(checkpoint.code).toBe(1);
    expect(checkpoint.json.breaks).toContainEqual({ seq: 3, kind: 'store_identity_changed' });
  });
});
