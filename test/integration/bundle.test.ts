// Receipts a third party can verify (docs/receipts.md, "Checkpoints" and "Export"): a chain written by
// real hook processes is exported and verified with no store; every tampering of the bundle is named
// by `verify --bundle`, and the tamperings of the store that the anchor alone could not see are named
// through the witness. Each case has its control: the untouched bundle (or store) verifies.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPairSync, sign } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { digestText } from '../../src/core/canonical';
import { parseCheckpoint, signedNote } from '../../src/core/checkpoint';
import { anchorPath, readAnchor } from '../../src/store/anchor';
import { keyHashOf } from '../../src/ledger/keys';
import { contextOf, makeWorld, payload, type World } from '../support/world';
import { signOnTwoMachines } from '../support/twoMachines';

interface Report {
  ok: boolean;
  verified: number;
  breaks: { seq: number; kind: string }[];
  signers?: { key: string | null; checkpoints: number[] }[];
}

let world: World;
/** Automatic checkpoints every 5 receipts, so the bundle carries checkpoints inside the chain too. */
const EVERY = { TURNKEEPER_CHECKPOINT_EVERY: '5' };
const cli = (args: string[], env: Record<string, string | undefined> = {}) => world.cli(args, { env: { ...EVERY, ...env } });
let bundleText: string;
let lines: string[];
let keyId: string;
let vkey: string;

/** Writes `text` as a bundle and verifies it through the real CLI. */
function verifyBundle(text: string, extra: string[] = [], env: Record<string, string | undefined> = {}): Report {
  const file = join(world.root, `check-${Math.random().toString(36).slice(2)}.tkb`);
  writeFileSync(file, text);
  const result = cli(['verify', '--bundle', file, '--json', ...extra], env);
  const report = JSON.parse(result.stdout) as Report;
  expect(result.code, result.stderr).toBe(report.ok ? 0 : 1);
  return report;
}
const joined = (parts: string[]) => parts.join('\n') + '\n';
const header = () => JSON.parse(lines[0]!) as { from: number; to: number; checkpoint: string; origin: string };
const withHeader = (changes: Record<string, unknown>) => JSON.stringify({ ...header(), ...changes });
const checkpointReceipts = () =>
  lines
    .slice(1)
    .filter((line) => line.includes('"kind":"checkpoint"'))
    .map((line) => JSON.parse(line) as { seq: number; detail: { note: string; signedSeq: number } });

beforeAll(() => {
  world = makeWorld('bundle');
  for (const todo of ['fix-login', 'fix-logout', 'add-docs']) expect(cli(['todo', 'add', `Title ${todo}`, '--id', todo]).code).toBe(0);
  ['fix-login', 'fix-logout', 'add-docs'].forEach((todo, i) => {
    const claimed = world.cli(['hook'], { input: payload.codexPrompt(world, `sess-${i}`, 'turn-1', `#todo:${todo}`), env: EVERY });
    expect(contextOf(claimed.stdout)).toContain('epoch 1');
  });
  expect(cli(['release', 'fix-login', '--owner', 'codex:sess-0']).code).toBe(0);
  const shown = JSON.parse(cli(['keys', 'show', '--json']).stdout) as { keyId: string; publicKey: string };
  keyId = shown.keyId;
  vkey = shown.publicKey;
  const out = join(world.root, 'export.tkb');
  const exported = cli(['receipts', 'export', '--out', out, '--json']);
  expect(exported.code, exported.stderr).toBe(0);
  bundleText = readFileSync(out, 'utf8');
  lines = bundleText.split('\n').slice(0, -1);
});
afterAll(() => world.cleanup());

describe('export', () => {
  it('writes the stored documents exactly as stored, one per line, after a header with the signed checkpoint', async () => {
    const store = await world.store();
    try {
      const rows = store.connection.prepare('SELECT seq, doc, hash FROM receipts ORDER BY seq').all() as { seq: number; doc: string; hash: string }[];
      const { to, checkpoint } = header();
      // Every receipt up to the signed head, byte for byte; the checkpoint receipt of the export follows it in the store.
      expect(lines.slice(1)).toEqual(rows.filter((row) => row.seq <= to).map((row) => row.doc));
      expect(rows.at(-1)!.seq).toBe(to + 1);
      expect(JSON.parse(rows.at(-1)!.doc)).toMatchObject({ kind: 'checkpoint', detail: { note: checkpoint, signedSeq: to } });
      const note = parseCheckpoint(checkpoint)!;
      expect(note).toMatchObject({ seq: to, hash: rows.find((row) => row.seq === to)!.hash, origin: header().origin });
      expect(note.signatures[0]!.name).toBe(keyId);
    } finally {
      store.close();
    }
    // Automatic checkpoints in the chain: one each time a write's receipts crossed a multiple of 5.
    expect(checkpointReceipts().length).toBeGreaterThanOrEqual(3);
    expect(lines.some((line) => line.includes('"kind":"lease_released"'))).toBe(true);
  });

  it('control: the untouched bundle verifies, and says which key signed which checkpoint', () => {
    const report = verifyBundle(bundleText);
    expect(report).toMatchObject({ ok: true, breaks: [], verified: header().to });
    expect(report.signers).toEqual([{ key: keyId, checkpoints: [...checkpointReceipts().map((receipt) => receipt.detail.signedSeq), header().to] }]);
  });
});

describe('export --from', () => {
  it('a bundle of the receipts from a seq on verifies: its first link is vouched for by the signed head', () => {
    const out = join(world.root, 'from.tkb');
    expect(cli(['receipts', 'export', '--from', '5', '--out', out]).code).toBe(0);
    const partial = readFileSync(out, 'utf8');
    const partialLines = partial.split('\n').slice(0, -1);
    expect(JSON.parse(partialLines[0]!)).toMatchObject({ from: 5 });
    expect(JSON.parse(partialLines[1]!)).toMatchObject({ seq: 5 });
    expect(verifyBundle(partial)).toMatchObject({ ok: true, breaks: [] });
    // Control: its first document (seq 5, whose own prev the bundle cannot check) edited is named at the next link.
    partialLines[1] = partialLines[1]!.replace(/(\d)Z"/, (_, digit: string) => `${(Number(digit) + 1) % 10}Z"`);
    // Its leaf is in every signed root after it too: each of those roots is named (tree_mismatch).
    const breaks = verifyBundle(joined(partialLines)).breaks;
    expect(breaks[0]).toEqual({ seq: 6, kind: 'link_broken' });
    expect(breaks.length).toBeGreaterThan(1);
    expect(breaks.slice(1).every((item) => item.kind === 'tree_mismatch')).toBe(true);
  });
});

describe('tamper matrix of a bundle: each named by verify --bundle', () => {
  const k = 3;
  it('edit one document (JSON still valid): link_broken at the next receipt', () => {
    const edited = [...lines];
    edited[k] = edited[k]!.replace(/(\d)Z"/, (_, digit: string) => `${(Number(digit) + 1) % 10}Z"`);
    expect(edited[k]).not.toBe(lines[k]);
    expect(verifyBundle(joined(edited)).breaks).toContainEqual({ seq: k + 1, kind: 'link_broken' });
  });

  it('replace a document by text that is not a receipt: content_altered', () => {
    const edited = [...lines];
    edited[k] = 'not json';
    expect(verifyBundle(joined(edited)).breaks).toContainEqual({ seq: k, kind: 'content_altered' });
  });

  it('edit the signed head itself: checkpoint_mismatch', () => {
    const edited = [...lines];
    const last = edited.length - 1;
    edited[last] = edited[last]!.replace(/(\d)Z"/, (_, digit: string) => `${(Number(digit) + 1) % 10}Z"`);
    expect(verifyBundle(joined(edited)).breaks).toEqual([{ seq: header().to, kind: 'checkpoint_mismatch' }]);
  });

  it('delete one document: missing', () => {
    const edited = lines.filter((_, index) => index !== k);
    expect(verifyBundle(joined(edited)).breaks).toContainEqual({ seq: k, kind: 'missing' });
  });

  it('reorder two documents: missing at the first one out of place', () => {
    const edited = [...lines];
    [edited[k], edited[k + 1]] = [edited[k + 1]!, edited[k]!];
    const report = verifyBundle(joined(edited));
    expect(report.ok).toBe(false);
    expect(report.breaks).toContainEqual({ seq: k, kind: 'missing' });
  });

  it('truncate with the head fixed (the last receipts cut, the header says so): truncated_after_checkpoint', () => {
    const edited = [withHeader({ to: header().to - 2 }), ...lines.slice(1, -2)];
    expect(verifyBundle(joined(edited)).breaks).toEqual([{ seq: header().to, kind: 'truncated_after_checkpoint' }]);
  });

  it('cut the bundle before its checkpoint: truncated_after_checkpoint', () => {
    expect(verifyBundle(joined(lines.slice(0, -1))).breaks).toEqual([{ seq: header().to, kind: 'truncated_after_checkpoint' }]);
    expect(verifyBundle(joined(lines.slice(0, 1))).breaks).toEqual([{ seq: header().to, kind: 'truncated_after_checkpoint' }]);
  });

  it('replace the checkpoint by an earlier genuine one: checkpoint_mismatch', () => {
    const earlier = checkpointReceipts()[0]!;
    const edited = [withHeader({ checkpoint: earlier.detail.note }), ...lines.slice(1)];
    expect(verifyBundle(joined(edited)).breaks).toEqual([{ seq: earlier.detail.signedSeq, kind: 'checkpoint_mismatch' }]);
  });

  it('replace a checkpoint inside the chain by another genuine one: checkpoint_mismatch there', () => {
    const [first, second] = checkpointReceipts();
    const edited = lines.map((line, index) =>
      index === first!.seq ? line.replace(JSON.stringify(first!.detail.note), JSON.stringify(second!.detail.note)) : line,
    );
    expect(edited[first!.seq]).not.toBe(lines[first!.seq]);
    const report = verifyBundle(joined(edited));
    expect(report.breaks).toContainEqual({ seq: first!.seq, kind: 'checkpoint_mismatch' });
    expect(report.breaks).toContainEqual({ seq: first!.seq + 1, kind: 'link_broken' });
  });

  it('sign the checkpoint with a key nobody trusted: untrusted_key', () => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(12);
    const note = parseCheckpoint(header().checkpoint)!;
    const forged = signedNote(note.text, [{ name: 'mallory', keyHash: keyHashOf('mallory', raw), signature: sign(null, Buffer.from(note.text), privateKey) }]);
    expect(verifyBundle(joined([withHeader({ checkpoint: forged }), ...lines.slice(1)])).breaks).toEqual([{ seq: header().to, kind: 'untrusted_key' }]);
    // Under this key's own name: the key hash does not match any trusted key of that name either.
    const posing = signedNote(note.text, [{ name: keyId, keyHash: keyHashOf(keyId, raw), signature: sign(null, Buffer.from(note.text), privateKey) }]);
    expect(verifyBundle(joined([withHeader({ checkpoint: posing }), ...lines.slice(1)])).breaks).toEqual([{ seq: header().to, kind: 'untrusted_key' }]);
  });

  it('a signature that does not verify: signature_invalid', () => {
    const note = header().checkpoint;
    const at = note.lastIndexOf(' ') + 10;
    const flipped = note.slice(0, at) + (note[at] === 'A' ? 'B' : 'A') + note.slice(at + 1);
    expect(verifyBundle(joined([withHeader({ checkpoint: flipped }), ...lines.slice(1)])).breaks).toEqual([{ seq: header().to, kind: 'signature_invalid' }]);
  });

  it('the text of the checkpoint changed under its signature (another head): signature_invalid', () => {
    const note = parseCheckpoint(header().checkpoint)!;
    const moved = header().checkpoint.replace(`\n${note.seq}\n`, `\n${note.seq - 1}\n`);
    expect(verifyBundle(joined([withHeader({ checkpoint: moved }), ...lines.slice(0, -1).slice(1)])).breaks).toEqual([
      { seq: note.seq - 1, kind: 'signature_invalid' },
    ]);
  });

  it("keys: without this installation's keys the bundle is untrusted; --key with its public key or PEM verifies it (control)", () => {
    const elsewhere = { TURNKEEPER_HOME: join(world.root, 'other-home') };
    const untrusted = verifyBundle(bundleText, [], elsewhere);
    expect(untrusted.ok).toBe(false);
    expect(new Set(untrusted.breaks.map((item) => item.kind))).toEqual(new Set(['untrusted_key']));
    expect(verifyBundle(bundleText, ['--key', vkey], elsewhere)).toMatchObject({ ok: true, breaks: [] });
    const pem = join(world.root, 'key.pem');
    writeFileSync(pem, cli(['keys', 'show', '--pem']).stdout);
    expect(verifyBundle(bundleText, ['--key', pem], elsewhere)).toMatchObject({ ok: true, breaks: [] });
    // Trusted through `keys trust` on the other installation: verifies without --key.
    expect(cli(['keys', 'trust', vkey], elsewhere).code).toBe(0);
    expect(verifyBundle(bundleText, [], elsewhere)).toMatchObject({ ok: true });
  });
});

describe('the store against its witness (tamperings of the store the anchor alone could not name)', () => {
  interface VerifyJson {
    ok: boolean;
    verified: number;
    breaks: { seq: number; kind: string }[];
  }
  /** A witness outside TURNKEEPER_HOME, as a user would choose one (another disk, a synced folder), in config.json. */
  const witnessOf = (w: World) => join(w.root, 'witness.jsonl');
  const chooseWitness = (w: World, witness: string) => {
    mkdirSync(w.home, { recursive: true });
    writeFileSync(join(w.home, 'config.json'), JSON.stringify({ witness }));
  };
  /** `verify --json`; `witness: 'off'` turns the witness off in config.json first. */
  const verify = (w: World, options: { readonly witness?: 'off' } = {}): VerifyJson => {
    if (options.witness) chooseWitness(w, options.witness);
    return JSON.parse(w.cli(['verify', '--json']).stdout) as VerifyJson;
  };
  const run = (w: World, args: string[], input?: string) => w.cli(args, input === undefined ? {} : { input });
  const worlds: World[] = [];
  afterAll(() => worlds.forEach((w) => w.cleanup()));

  /** todo_added, the claim's three receipts (a real hook process), then a checkpoint of #4 (receipt #5). */
  function witnessed(name: string): World {
    const w = makeWorld(name);
    worlds.push(w);
    chooseWitness(w, witnessOf(w));
    expect(run(w, ['todo', 'add', 'Title', '--id', 'fix-login']).code).toBe(0);
    expect(contextOf(run(w, ['hook'], payload.codexPrompt(w, 's1', 'turn-1', '#todo:fix-login')).stdout)).toContain('epoch 1');
    expect(JSON.parse(run(w, ['checkpoint', '--json']).stdout)).toMatchObject({ seq: 4, receipt: 5 });
    expect(verify(w)).toMatchObject({ ok: true, verified: 5, breaks: [] });
    return w;
  }
  async function tamper(w: World, sql: (db: Awaited<ReturnType<World['store']>>['connection']) => void) {
    const store = await w.store();
    try {
      sql(store.connection);
    } finally {
      store.close();
    }
  }
  /** The head row and the anchor rewritten to (seq, hash), as whoever cut or forked the chain would do. */
  async function fixHeadAndAnchor(w: World, seq: number, hash: string) {
    await tamper(w, (db) => db.prepare('UPDATE receipt_head SET seq = ?, hash = ? WHERE id = 1').run(seq, hash));
    const anchor = readAnchor(w.db);
    if (!anchor || anchor === 'unreadable') throw new Error('no anchor');
    writeFileSync(anchorPath(w.db), JSON.stringify({ schema: 'turnkeeper.anchor/v1', ...anchor, seq, hash }) + '\n');
  }
  /** The receipts after `seq` deleted, the head and the anchor fixed to it: a cut no anchor alone can see. */
  async function cutAfter(w: World, seq: number) {
    let kept = '';
    await tamper(w, (db) => {
      kept = (db.prepare('SELECT hash FROM receipts WHERE seq = ?').get(seq) as { hash: string }).hash;
      db.prepare('DELETE FROM receipts WHERE seq > ?').run(seq);
      db.prepare('DELETE FROM receipt_index WHERE seq > ?').run(seq);
    });
    await fixHeadAndAnchor(w, seq, kept);
  }

  it('the tail cut, the head fixed AND the anchor rewritten: truncated_after_checkpoint, through the witness', async () => {
    const w = witnessed('wit-cut');
    await cutAfter(w, 2);
    expect(verify(w)).toMatchObject({ ok: false, breaks: [{ seq: 5, kind: 'truncated_after_checkpoint' }] });
    // Control: without the witness the same store verifies, as chain-damage.test.ts's first control shows.
    expect(verify(w, { witness: 'off' })).toMatchObject({ ok: true, verified: 2, breaks: [] });
  });

  it('verify and doctor say in words what the witness holds, and that the store disagrees after the cut', async () => {
    const w = witnessed('wit-words');
    const said = (args: string[]) =>
      run(w, args)
        .stdout.split('\n')
        .find((line) => line.startsWith('witness: ')) ?? '';
    const agrees = new RegExp(`^witness: ${witnessOf(w)} holds the checkpoint of receipt #4 signed by \\S+ at \\S+; the store agrees$`);
    expect(said(['verify'])).toMatch(agrees);
    expect(said(['doctor'])).toMatch(agrees);
    await cutAfter(w, 2);
    expect(said(['verify'])).toMatch(/; the store disagrees: truncated_after_checkpoint at #5$/);
    expect(said(['doctor'])).toMatch(/; the store disagrees: truncated_after_checkpoint at #5$/);
    chooseWitness(w, 'off');
    expect(said(['verify'])).toBe('witness: off (witness in config.json)');
  });

  it('the checkpoint receipt replaced by another genuine one (rehashed, head and anchor fixed): checkpoint_mismatch', async () => {
    const w = witnessed('wit-replace');
    const second = JSON.parse(run(w, ['checkpoint', '--json']).stdout) as { note: string; receipt: number };
    const first = parseReceiptNote(w, 5);
    let hash = '';
    await tamper(w, (db) => {
      const row = db.prepare('SELECT doc FROM receipts WHERE seq = ?').get(second.receipt) as { doc: string };
      const doc = row.doc.replace(JSON.stringify(second.note), JSON.stringify(first));
      expect(doc).not.toBe(row.doc);
      hash = digestText(doc);
      db.prepare('UPDATE receipts SET doc = ?, hash = ? WHERE seq = ?').run(doc, hash, second.receipt);
    });
    await fixHeadAndAnchor(w, second.receipt, hash);
    expect(verify(w)).toMatchObject({ ok: false, breaks: [{ seq: second.receipt, kind: 'checkpoint_mismatch' }] });
  });

  it('a forked history (receipt 1 rewritten, every later one relinked and rehashed, head and anchor fixed): checkpoint_mismatch', async () => {
    const w = witnessed('wit-fork');
    let head = { seq: 0, hash: '' };
    await tamper(w, (db) => {
      const rows = db.prepare('SELECT seq, doc FROM receipts ORDER BY seq').all() as { seq: number; doc: string }[];
      let prev = 'sha256:' + '0'.repeat(64);
      for (const row of rows) {
        const value = JSON.parse(row.doc) as Record<string, unknown>;
        value.prevHash = prev;
        if (row.seq === 1) value.at = '2020-01-01T00:00:00.000Z';
        const doc = JSON.stringify(Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : 1))));
        prev = digestText(doc);
        db.prepare('UPDATE receipts SET doc = ?, hash = ? WHERE seq = ?').run(doc, prev, row.seq);
        head = { seq: row.seq, hash: prev };
      }
    });
    await fixHeadAndAnchor(w, head.seq, head.hash);
    expect(verify(w)).toMatchObject({ ok: false, breaks: [{ seq: 4, kind: 'checkpoint_mismatch' }] });
    expect(verify(w, { witness: 'off' })).toMatchObject({ ok: true });
  });

  it('a witnessed checkpoint with an altered signature: signature_invalid; one signed by an untrusted key: untrusted_key', () => {
    const w = witnessed('wit-sign');
    const original = readFileSync(witnessOf(w), 'utf8');
    const last = JSON.parse(original.trim().split('\n').at(-1)!) as { checkpoint: string; seq: number };
    const at = last.checkpoint.lastIndexOf(' ') + 10;
    const flipped = last.checkpoint.slice(0, at) + (last.checkpoint[at] === 'A' ? 'B' : 'A') + last.checkpoint.slice(at + 1);
    writeFileSync(witnessOf(w), original + JSON.stringify({ ...last, checkpoint: flipped }) + '\n');
    expect(verify(w).breaks).toContainEqual({ seq: 5, kind: 'signature_invalid' });

    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(12);
    const note = parseCheckpoint(last.checkpoint)!;
    const forged = signedNote(note.text, [{ name: 'mallory', keyHash: keyHashOf('mallory', raw), signature: sign(null, Buffer.from(note.text), privateKey) }]);
    writeFileSync(witnessOf(w), original + JSON.stringify({ ...last, checkpoint: forged }) + '\n');
    expect(verify(w).breaks).toContainEqual({ seq: 5, kind: 'untrusted_key' });
    // Control: the witness as it was.
    writeFileSync(witnessOf(w), original);
    expect(verify(w)).toMatchObject({ ok: true });
  });

  it('a release is checkpointed out of the chain: it stays the newest receipt, and cutting it is named', async () => {
    const w = witnessed('wit-release');
    expect(run(w, ['release', 'fix-login', '--owner', 'codex:s1']).code).toBe(0);
    const newest = JSON.parse(run(w, ['receipts', '--json', '--limit', '1']).stdout) as { seq: number; hash: string; doc: { kind: string } }[];
    expect(newest[0]).toMatchObject({ seq: 6, doc: { kind: 'lease_released' } });
    const entry = JSON.parse(readFileSync(witnessOf(w), 'utf8').trim().split('\n').at(-1)!) as { seq: number; receipt: number | null; checkpoint: string };
    expect(entry).toMatchObject({ seq: 6, receipt: null });
    expect(parseCheckpoint(entry.checkpoint)).toMatchObject({ seq: 6, hash: newest[0]!.hash });
    expect(verify(w)).toMatchObject({ ok: true, verified: 6 });
    let kept = '';
    await tamper(w, (db) => {
      kept = (db.prepare('SELECT hash FROM receipts WHERE seq = 5').get() as { hash: string }).hash;
      db.prepare('DELETE FROM receipts WHERE seq = 6').run();
    });
    await fixHeadAndAnchor(w, 5, kept);
    expect(verify(w)).toMatchObject({ ok: false, breaks: [{ seq: 6, kind: 'truncated_after_checkpoint' }] });
  });

  it('edit, delete and reorder in the store are named by the chain walk (the witness adds nothing to them)', async () => {
    const w = witnessed('wit-walk');
    await tamper(w, (db) => db.prepare("UPDATE receipts SET doc = replace(doc, 'fix-login', 'fix-logon') WHERE seq = 1").run());
    expect(verify(w).breaks).toContainEqual({ seq: 1, kind: 'content_altered' });
    const v = witnessed('wit-walk2');
    await tamper(v, (db) => db.prepare('DELETE FROM receipts WHERE seq = 2').run());
    expect(verify(v).breaks).toContainEqual({ seq: 2, kind: 'missing' });
    const r = witnessed('wit-walk3');
    await tamper(r, (db) => {
      const two = db.prepare('SELECT doc, hash FROM receipts WHERE seq = 2').get() as { doc: string; hash: string };
      const three = db.prepare('SELECT doc, hash FROM receipts WHERE seq = 3').get() as { doc: string; hash: string };
      db.prepare('UPDATE receipts SET doc = ?, hash = ? WHERE seq = 2').run(three.doc, three.hash);
      db.prepare('UPDATE receipts SET doc = ?, hash = ? WHERE seq = 3').run(two.doc, two.hash);
    });
    expect(verify(r).breaks).toContainEqual({ seq: 2, kind: 'content_altered' });
  });
});

/** The signed note carried by checkpoint receipt `seq` of a world's store. */
function parseReceiptNote(w: World, seq: number): string {
  const rows = JSON.parse(w.cli(['receipts', '--json', '--limit', '100']).stdout) as { seq: number; doc: { detail: { note: string } } }[];
  return rows.find((row) => row.seq === seq)!.doc.detail.note;
}

describe('one store, two machines: each signs with its own key', () => {
  // A team store is shared by machines with their own $TURNKEEPER_HOME (and key). Here on one SQLite
  // file shared by two installations; bundle-postgres.test.ts does the same on a PostgreSQL server.
  it('on one SQLite file shared by two installations: verify --bundle accepts checkpoints by any trusted key and says which key signed which', () => {
    const w = makeWorld('two-machines');
    try {
      signOnTwoMachines(w, { TURNKEEPER_DB: w.db, TURNKEEPER_HOME: join(w.root, 'home-a') }, { TURNKEEPER_DB: w.db, TURNKEEPER_HOME: join(w.root, 'home-b') });
    } finally {
      w.cleanup();
    }
  });
});
