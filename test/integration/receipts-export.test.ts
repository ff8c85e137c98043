// `turnkeeper receipts export --out <file>` writes beside the target and renames over it only when the
// export succeeds: an export refused because the chain is broken leaves the previous bundle whole.
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
