// `turnkeeper receipts export --out <file>` writes beside the target and renames over it only when the
// export succeeds: an export refused because the chain is broken leaves the previous bundle whole. An
// export is written as it is read (pages of the store, chunks of about 64 KiB): across many of both,
// the bundle holds every stored document exactly once, in seq order, byte for byte.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { makeWorld } from '../support/world';

const world = makeWorld('tk-export-out');
afterAll(() => world.cleanup());

it('a refused export (broken chain) keeps the previous bundle byte for byte and leaves no temporary file (control: a good export replaces it)', async () => {
  expect(world.cli(['todo', 'add', 'Fix login', '--id', 'fix-login']).code).toBe(0);
  expect(world.cli(['todo', 'add', 'Fix logout', '--id', 'fix-logout']).code).toBe(0);
  const out = join(world.root, 'bundle.tkb');
  expect(world.cli(['receipts', 'export', '--out', out]).code).toBe(0);
  const first = readFileSync(out, 'utf8');
  expect(first.split('\n')[0]).toMatch(/^\{.*"checkpoint"/);
  // Control: a second good export replaces the file (it now has the first export's checkpoint receipt too).
  expect(world.cli(['receipts', 'export', '--out', out]).code).toBe(0);
  const previous = readFileSync(out, 'utf8');
  expect(previous).not.toBe(first);

  const store = await world.store();
  try {
    const row = store.connection.prepare('SELECT doc FROM receipts WHERE seq = 1').get() as { doc: string };
    store.connection.prepare('UPDATE receipts SET doc = ? WHERE seq = 1').run(row.doc.replace(/(\d)Z"/, (_, digit: string) => `${(Number(digit) + 1) % 10}Z"`));
  } finally {
    store.close();
  }
  const refused = world.cli(['receipts', 'export', '--out', out, '--json']);
  expect(refused.code).toBe(1);
  expect(JSON.parse(refused.stdout)).toMatchObject({ ok: false, reason: 'chain_broken' });
  expect(readFileSync(out, 'utf8')).toBe(previous);
  expect(readdirSync(world.root).filter((name) => name.includes('bundle.tkb'))).toEqual(['bundle.tkb']);
});

it('an export across many pages and write chunks holds every stored document once, in seq order, as stored, to --out and to stdout', async () => {
  const other = makeWorld('tk-export-pages');
  try {
    const store = await other.store();
    let docs: string[];
    try {
      // 1,200 receipts of ~400 bytes: 5 pages of 250, about 8 chunks of 64 KiB.
      for (let i = 0; i < 1200; i += 1)
        await store.addTodo({ goal: other.goal, id: `todo-${i}`, title: `Todo number ${i} ${'x'.repeat(200)}`, body: '' }, Date.now());
      docs = store.connection.prepare('SELECT doc FROM receipts ORDER BY seq').pluck().all() as string[];
    } finally {
      store.close();
    }
    const out = join(other.root, 'pages.tkb');
    const exported = other.cli(['receipts', 'export', '--out', out, '--json']);
    expect(exported.code, exported.stderr).toBe(0);
    const lines = readFileSync(out, 'utf8').split('\n');
    expect(lines.at(-1)).toBe('');
    const body = lines.slice(1, -1);
    // The export's own checkpoint receipt follows the documents it signs; everything before it is as stored.
    expect(body.slice(0, docs.length)).toStrictEqual(docs);
    expect(body.length).toBe((JSON.parse(exported.stdout) as { to: number }).to);
    expect(other.cli(['verify', '--bundle', out, '--json']).code).toBe(0);

    const stdout = other.cli(['receipts', 'export']);
    expect(stdout.code).toBe(0);
    expect(stdout.stdout.split('\n').slice(1, docs.length + 1)).toStrictEqual(docs);
  } finally {
    other.cleanup();
  }
});
