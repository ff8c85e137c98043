// Seeding the stores the benchmark measures.
//
// Why two seeding methods:
// - The hook store (rows 1, 2, 4, 5) is seeded through the product's own code: we bundle
//   src/store/sqlite.ts (with esbuild, the tool that builds dist/) into the temp dir and run real
//   addTodo/claim/renew/release calls in-process. That writes every table exactly as hooks do
//   (captures, leases, ready captures, sessions, receipts, receipt_index, head) in a few seconds;
//   running ~1,000 receipts' worth of cold hook processes instead would cost ~a minute of the budget
//   and measure nothing extra. The replay lease itself is then claimed by a real cold hook process.
// - The verify store (row 3, 100,000 receipts) is seeded with direct SQL inserts of receipts built by
//   an independent mirror of buildReceipt (src/core/receipts.ts, contract §5): RFC 8785 canonical
//   JSON, sha256 over the stored text, genesis prevHash of 64 zeros, head row advanced. The real
//   `turnkeeper verify --json` must say ok:true over them before it is timed, which also checks the
//   mirror against the product. The Merkle tree rows are mirrored too (leaf SHA-256(0x00 || doc),
//   node SHA-256(0x01 || left || right)); the first export or checkpoint recomputes the tree from the
//   documents and refuses to sign if they disagree, which checks that mirror.
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { build } from 'esbuild';
import { REPO_ROOT } from './world.mjs';

const requireHere = createRequire(import.meta.url);
export const DRIVER = createRequire(join(REPO_ROOT, 'package.json')).resolve('better-sqlite3');

/** Bundles the product's store and capture code (from src/, like scripts/build.mjs) and loads it. */
export async function loadProductStore(scratch) {
  const outfile = join(scratch, 'bench-store.cjs');
  await build({
    entryPoints: [join(REPO_ROOT, 'bench/lib/storeProduct.ts')],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node22',
    // As scripts/build.mjs: jsonc-parser's ESM build (its UMD build requires files esbuild cannot see).
    mainFields: ['module', 'main'],
    outfile,
    logLevel: 'warning',
    // The native driver stays external (as in dist/) and is loaded from the project's node_modules.
    plugins: [{ name: 'driver', setup: (b) => b.onResolve({ filter: /^better-sqlite3$/ }, () => ({ path: DRIVER, external: true })) }],
  });
  return requireHere(outfile);
}

const TODO_BODY = [
  '## Context',
  'The retry loop in `src/index.ts` swallows the last error, so callers see `undefined` instead of the cause.',
  '',
  '## Acceptance',
  '- a failing unit test reproduces it first',
  '- the error keeps its `cause` chain',
  '- no change to the public API; update the changelog',
  '',
  '## Notes',
  'See the discussion in the design doc; the flaky integration test is a separate Todo.',
].join('\n');

export const todoFields = (goal, id) => ({ goal, id, title: `Fix retry error propagation (${id})`, body: TODO_BODY });

/**
 * Seeds ≥ `minReceipts` receipts of realistic history through the real store code: each cycle adds a
 * Todo, claims it (3 receipts), renews it twice, and releases it (7 receipts per cycle).
 */
export async function seedHistory(product, store, { goal, cwd, minReceipts, startMs }) {
  const preconditions = product.preconditionsOf(cwd);
  let now = startMs;
  let cycle = 0;
  const count = () => store.connection.prepare('SELECT COUNT(*) AS n FROM receipts').get().n;
  while (count() < minReceipts) {
    const id = `hist-${String(cycle).padStart(4, '0')}`;
    await store.addTodo(todoFields(goal, id), now);
    const session = `019a${String(cycle).padStart(4, '0')}-seed-4f1e-9c2d-${String(cycle).padStart(12, '0')}`;
    const owner = `codex:${session}`;
    const capture = product.buildCapture({ goal, todo: id, agent: 'codex', session, turn: `turn-${cycle}-1` });
    const touch = { owner, agent: 'codex', session, goal, cwd, transcriptPath: `/home/dev/.codex/sessions/rollout-${session}.jsonl` };
    const claimed = await store.claim({ capture, cwd, binding: 'prompt', owner, preconditions, ttlSeconds: 2700, session: touch }, (now += 1_000));
    if (claimed.kind !== 'acquired') throw new Error(`seeding claim of ${id} gave ${claimed.kind}`);
    for (let i = 0; i < 2; i += 1) await store.renew(owner, (now += 61_000), 2700);
    const released = await store.release({ goal, todo: id, by: owner, identifiedBy: 'agent_environment', force: false, reason: 'done' }, (now += 5_000));
    if (released.kind !== 'released') throw new Error(`seeding release of ${id} gave ${released.kind}: ${released.why}`);
    cycle += 1;
    now += 60_000;
  }
  return { receipts: count(), cycles: cycle, now };
}

// ---- independent mirror of buildReceipt (contract §5) for the 100k store ----

const ZERO = 'sha256:' + '0'.repeat(64);
const sha = (text) => 'sha256:' + createHash('sha256').update(text, 'utf8').digest('hex');

/** RFC 8785 over this project's value domain (strings, safe integers, booleans, null, arrays, objects). */
function jcs(value) {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw new Error(`not a safe integer: ${value}`);
    return String(value);
  }
  if (Array.isArray(value)) return `[${value.map(jcs).join(',')}]`;
  const keys = Object.keys(value)
    .filter((k) => value[k] !== undefined)
    .sort(); // UTF-16 order, ASCII keys here
  return `{${keys.map((k) => `${JSON.stringify(k)}:${jcs(value[k])}`).join(',')}}`;
}

/** `n` hash-chained receipts after `head`, built by the independent mirror: { seq, text, hash, todo, capture, kind }. */
export function* chainRows({ n, goal, startMs, head }) {
  let { seq, hash } = head ?? { seq: 0, hash: ZERO };
  let cycleValues;
  for (let i = 0; i < n; i += 1) {
    const cycle = Math.floor(i / 6);
    if (i % 6 === 0) {
      const session = `019a${String(cycle).padStart(8, '0')}-1c2d-7e8f-9a0b-${String(cycle).padStart(12, '0')}`;
      cycleValues = {
        todo: `todo-${String(cycle % 5000).padStart(4, '0')}`,
        session,
        owner: `codex:${session}`,
        capture: 'cap_' + sha(`c${cycle}`).slice(7, 31),
        op: 'op_' + sha(`o${cycle}`).slice(7, 39),
        originalDigest: sha(`d${cycle}`),
        readyDigest: sha(`r${cycle}`),
      };
    }
    const { todo, session, owner, capture, op, originalDigest, readyDigest } = cycleValues;
    const at = startMs + i * 1_000;
    const common = { goal, todo, capture, owner, op };
    const lease = { epoch: 1 + (cycle % 3), version: 1 };
    const fields = [
      () => ({ kind: 'capture_bound', ...common, detail: { originalDigest, turn: `turn-${cycle}`, binding: 'prompt' } }),
      () => ({ kind: 'lease_acquired', ...common, lease, detail: { expiresAt: new Date(at + 2_700_000).toISOString() } }),
      () => ({ kind: 'ready_written', ...common, lease, detail: { readyDigest } }),
      () => ({
        kind: 'lease_renewed',
        goal,
        todo,
        capture,
        owner,
        lease: { ...lease, version: 2 },
        detail: { expiresAt: new Date(at + 2_760_000).toISOString() },
      }),
      () => ({ kind: 'claim_refused', goal, todo, owner: `claude:${session}`, op, detail: { reason: 'lease_held', holder: owner, holderEpoch: lease.epoch } }),
      () => ({ kind: 'lease_released', goal, todo, capture, owner, lease: { ...lease, version: 2 }, detail: { reason: 'released by owner', forced: false } }),
    ][i % 6]();
    seq += 1;
    const doc = { schema: 'turnkeeper.receipt/v1', seq, prevHash: hash, at: new Date(at).toISOString(), ...fields };
    const text = jcs(doc);
    hash = sha(text);
    yield { seq, text, hash, todo: fields.todo ?? null, capture: fields.capture ?? null, kind: fields.kind };
  }
}

// ---- independent mirror of the Merkle tree rows (src/core/merkle.ts, docs/receipts.md "The Merkle tree") ----

const leafOf = (text) => createHash('sha256').update(Buffer.of(0)).update(text, 'utf8').digest();
const nodeOf = (left, right) => createHash('sha256').update(Buffer.of(1)).update(left).update(right).digest();

/**
 * The right edge of the stored tree of `count` leaves: its complete subtrees, largest first, read from
 * receipt_tree (RFC 6962: the decomposition of [0, count) into aligned powers of two).
 */
function treeEdge(db, count) {
  const read = db.prepare('SELECT hash FROM receipt_tree WHERE level = ? AND idx = ?').pluck();
  const edge = [];
  for (let lo = 0; lo < count;) {
    let level = 0;
    while (lo % 2 ** (level + 1) === 0 && lo + 2 ** (level + 1) <= count) level += 1;
    const hash = read.get(level, lo / 2 ** level);
    if (!hash) throw new Error(`receipt_tree has no node (${level}, ${lo / 2 ** level})`);
    edge.push({ level, index: lo / 2 ** level, hash });
    lo += 2 ** level;
  }
  return edge;
}

/** Appends `n` hash-chained receipts (and their Merkle tree rows) after the store's current head, in one transaction. */
export function appendChain(db, { n, goal, startMs }) {
  const head = db.prepare('SELECT seq, hash FROM receipt_head WHERE id = 1').get() ?? { seq: 0, hash: ZERO };
  const insert = db.prepare('INSERT INTO receipts (seq, doc, hash) VALUES (?, ?, ?)');
  const index = db.prepare('INSERT INTO receipt_index (seq, goal, todo, capture, kind) VALUES (?, ?, ?, ?, ?)');
  const node = db.prepare('INSERT INTO receipt_tree (level, idx, hash) VALUES (?, ?, ?)');
  const setHead = db.prepare(
    'INSERT INTO receipt_head (id, seq, hash) VALUES (1, ?, ?) ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash',
  );
  let last = head;
  db.transaction(() => {
    const edge = treeEdge(db, head.seq);
    for (const row of chainRows({ n, goal, startMs, head })) {
      insert.run(row.seq, row.text, row.hash);
      index.run(row.seq, goal, row.todo, row.capture, row.kind);
      // Leaf seq-1, then one node per pair of equal-level subtrees at the right edge.
      let top = { level: 0, index: row.seq - 1, hash: leafOf(row.text) };
      node.run(top.level, top.index, top.hash);
      while (edge.length > 0 && edge[edge.length - 1].level === top.level) {
        const left = edge.pop();
        top = { level: top.level + 1, index: left.index / 2, hash: nodeOf(left.hash, top.hash) };
        node.run(top.level, top.index, top.hash);
      }
      edge.push(top);
      last = row;
    }
    setHead.run(last.seq, last.hash);
  }).immediate();
  return { seq: last.seq, hash: last.hash };
}
