// Independent verification of the transparency log (docs/receipts.md, "The Merkle tree"): Go's
// golang.org/x/mod/sumdb/tlog and sumdb/note (Debian's golang-go and golang-golang-x-mod-dev, built
// offline in GOPATH mode; .ci/run installs them) recompute the tree from the stored documents alone
// and must accept Turnkeeper's signed checkpoints (note.Open, and the root as tlog.TreeHash gives it),
// its inclusion proofs (`receipts prove`, tlog.CheckRecord) and consistency proofs (`receipts
// consistency`, tlog.CheckTree) for tree sizes 1, 2, 3, 7, 8, 45 and 1000, and reject tampered ones.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { makeWorld, type World } from '../support/world';

const SIZES = [1, 2, 3, 7, 8, 45, 1000];
let world: World;
let verifier: string;
let key: string;
let documents: string[];
const notes = new Map<number, string>();

interface Case {
  kind: 'root' | 'inclusion' | 'consistency' | 'note';
  size?: number;
  index?: number;
  from?: number;
  to?: number;
  root?: string;
  fromRoot?: string;
  proof?: string[];
  note?: string;
  document?: string;
}

/** Go's verdict on each case: "ok" or its error. */
function goSays(cases: Case[], docs = documents): string[] {
  const run = spawnSync(verifier, [], { input: JSON.stringify({ key, documents: docs, cases }), encoding: 'utf8', maxBuffer: 64 << 20 });
  expect(run.status, run.stderr).toBe(0);
  return run.stdout.trimEnd().split('\n');
}

const rootOf = (note: string) => note.split('\n')[2]!;
const cli = (args: string[]) => {
  const result = world.cli(args, { env: { TURNKEEPER_CHECKPOINT_EVERY: '0' } });
  expect(result.code, result.stderr + result.stdout).toBe(0);
  return JSON.parse(result.stdout) as Record<string, unknown>;
};
const prove = (seq: number, size: number) =>
  cli(['receipts', 'prove', String(seq), '--size', String(size), '--json']) as {
    index: number;
    size: number;
    root: string;
    proof: string[];
    checkpoint: string;
  };
const flip = (hash: string) => Buffer.from(Buffer.from(hash, 'base64').map((byte, i) => (i === 0 ? byte ^ 1 : byte))).toString('base64');

beforeAll(async () => {
  world = makeWorld('tlog');
  const gopath = join(world.root, 'gopath');
  mkdirSync(gopath, { recursive: true });
  verifier = join(world.root, 'tlogverify');
  const build = spawnSync('go', ['build', '-o', verifier, resolve(__dirname, '../support/tlogverify/main.go')], {
    encoding: 'utf8',
    env: { ...process.env, GO111MODULE: 'off', GOPATH: `/usr/share/gocode:${gopath}`, GOCACHE: join(gopath, 'cache'), GOFLAGS: '' },
  });
  expect(build.error, 'go is not installed: apt-get install golang-go golang-golang-x-mod-dev (.ci/run)').toBeUndefined();
  expect(build.status, build.stderr).toBe(0);
  key = (JSON.parse(world.cli(['keys', 'show', '--json']).stdout) as { publicKey: string }).publicKey;

  // Receipts through the product's write path; `turnkeeper checkpoint` signs each size (its own
  // checkpoint receipt is the next leaf).
  const store = await world.store();
  try {
    let head = 0;
    for (const size of SIZES) {
      while (head < size) {
        head = (await store.appendReceipt({ kind: 'todo_added', goal: world.goal, todo: `t-${head}` }, Date.now())).seq;
      }
      const written = cli(['checkpoint', '--json']) as { seq: number; note: string };
      expect(written.seq).toBe(size);
      notes.set(size, written.note);
      head = size + 1;
    }
    documents = (store.connection.prepare('SELECT doc FROM receipts ORDER BY seq').all() as { doc: string }[]).map((row) => row.doc);
  } finally {
    store.close();
  }
}, 240_000);
afterAll(() => world.cleanup());

describe("Go's sumdb/tlog and sumdb/note accept Turnkeeper's log", () => {
  it('each signed checkpoint opens with note.Open and its root is tlog.TreeHash of the stored documents', () => {
    const cases: Case[] = SIZES.flatMap((size) => [
      { kind: 'note', note: notes.get(size)! },
      { kind: 'root', size, root: rootOf(notes.get(size)!) },
    ]);
    expect(goSays(cases)).toEqual(cases.map(() => 'ok'));
  });

  it('inclusion proofs of `receipts prove` pass tlog.CheckRecord, for first, middle and last leaves of every size', () => {
    const cases: Case[] = [];
    for (const size of SIZES)
      for (const seq of [...new Set([1, Math.ceil(size / 2), size])]) {
        const proof = prove(seq, size);
        expect(proof).toMatchObject({ index: seq - 1, size, root: rootOf(notes.get(size)!), checkpoint: notes.get(size) });
        cases.push({ kind: 'inclusion', index: proof.index, size, root: proof.root, proof: proof.proof, document: documents[seq - 1]! });
      }
    expect(goSays(cases)).toEqual(cases.map(() => 'ok'));
  });

  it('consistency proofs of `receipts consistency` pass tlog.CheckTree between every pair of signed sizes', () => {
    const cases: Case[] = [];
    for (const from of SIZES)
      for (const to of SIZES.filter((size) => size >= from)) {
        const proof = cli(['receipts', 'consistency', '--from', String(from), '--to', String(to), '--json']) as { from: number; to: number; proof: string[] };
        expect(proof).toMatchObject({ from, to });
        cases.push({ kind: 'consistency', from, to, fromRoot: rootOf(notes.get(from)!), root: rootOf(notes.get(to)!), proof: proof.proof });
      }
    expect(goSays(cases)).toEqual(cases.map(() => 'ok'));
  });

  it('turnkeeper verify --proof checks the same offline (one document, one proof, one key), and names what is wrong', () => {
    const proof = prove(20, 45);
    const file = (name: string, text: string) => {
      const path = join(world.root, name);
      writeFileSync(path, text);
      return path;
    };
    const check = (proofText: string, document: string, extra: string[] = []) => {
      const run = world.cli(['verify', '--proof', file('p.json', proofText), '--document', file('d.txt', document), '--json', ...extra]);
      return { code: run.code, ...(JSON.parse(run.stdout) as { ok: boolean; reason?: string; seq?: number }) };
    };
    expect(check(JSON.stringify(proof), documents[19]! + '\n')).toMatchObject({ code: 0, ok: true, seq: 20, size: 45 });
    expect(check(JSON.stringify(proof), documents[19]!, ['--key', key])).toMatchObject({ code: 0, ok: true });
    expect(check(JSON.stringify(proof), documents[20]!)).toMatchObject({ code: 1, ok: false, reason: 'not_included' });
    expect(check(JSON.stringify({ ...proof, proof: [flip(proof.proof[0]!), ...proof.proof.slice(1)] }), documents[19]!)).toMatchObject({
      reason: 'not_included',
    });
    expect(check(JSON.stringify({ ...proof, root: flip(proof.root) }), documents[19]!)).toMatchObject({ reason: 'checkpoint_mismatch' });
    expect(check(JSON.stringify({ ...proof, checkpoint: proof.checkpoint.replace(proof.root, flip(proof.root)) }), documents[19]!)).toMatchObject({
      reason: 'signature_invalid',
    });
    const other = 'PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW';
    expect(check(JSON.stringify(proof), documents[19]!, ['--key', other])).toMatchObject({ reason: 'untrusted_key' });
  });

  it('rejects tampered ones: a proof hash, the document, the index, the root, a consistency proof, the note', () => {
    const proof = prove(20, 45);
    const root = proof.root;
    const tampered: Case[] = [
      { kind: 'inclusion', index: 19, size: 45, root, proof: [flip(proof.proof[0]!), ...proof.proof.slice(1)], document: documents[19]! },
      { kind: 'inclusion', index: 19, size: 45, root, proof: proof.proof, document: documents[19]!.replace('todo_added', 'todo_addee') },
      { kind: 'inclusion', index: 20, size: 45, root, proof: proof.proof, document: documents[20]! },
      { kind: 'inclusion', index: 19, size: 45, root: flip(root), proof: proof.proof, document: documents[19]! },
      { kind: 'root', size: 44, root },
    ];
    const consistency = cli(['receipts', 'consistency', '--from', '7', '--to', '45', '--json']) as { proof: string[] };
    tampered.push({ kind: 'consistency', from: 7, to: 45, fromRoot: rootOf(notes.get(8)!), root, proof: consistency.proof });
    tampered.push({
      kind: 'consistency',
      from: 7,
      to: 45,
      fromRoot: rootOf(notes.get(7)!),
      root,
      proof: consistency.proof.map((hash, i) => (i === 0 ? flip(hash) : hash)),
    });
    const note = notes.get(45)!;
    tampered.push({ kind: 'note', note: note.replace(rootOf(note), flip(rootOf(note))) });
    // Control: the untouched ones pass.
    const control: Case[] = [
      { kind: 'inclusion', index: 19, size: 45, root, proof: proof.proof, document: documents[19]! },
      { kind: 'consistency', from: 7, to: 45, fromRoot: rootOf(notes.get(7)!), root, proof: consistency.proof },
      { kind: 'note', note },
    ];
    const verdicts = goSays([...control, ...tampered]);
    expect(verdicts.slice(0, control.length)).toEqual(control.map(() => 'ok'));
    for (const [i, verdict] of verdicts.slice(control.length).entries()) expect(verdict, JSON.stringify(tampered[i]).slice(0, 120)).not.toBe('ok');
  });
});
