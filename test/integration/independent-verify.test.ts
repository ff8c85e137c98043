// The independent recipe of docs/receipts.md ("An independent recipe: sha256sum, openssl, jq"), run as
// written in the docs (the test reads the code blocks from the file) against a real export of a chain
// written by real hook processes: it accepts the export and refuses tampered copies. Nothing of
// Turnkeeper's code runs in the recipe; the CLI's own `verify --bundle` is asked too, and agrees.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { contextOf, makeWorld, payload, type World } from '../support/world';

/** The bash block that follows `<!-- recipe: name -->` in docs/receipts.md. */
function recipe(name: string): string {
  const docs = readFileSync(resolve(__dirname, '../../docs/receipts.md'), 'utf8');
  const match = new RegExp(`<!-- recipe: ${name} -->\\n+\`\`\`bash\\n([\\s\\S]*?)\\n\`\`\``).exec(docs);
  if (!match) throw new Error(`no recipe ${name} in docs/receipts.md`);
  return match[1]!;
}

let world: World;
let bundle: string;
let lines: string[];
let pem: string;
const script = () => join(world.root, 'verify-bundle.sh');

/** Runs the docs' recipe on `text` with bash, in an environment with nothing of Turnkeeper's. */
function runRecipe(text: string, key = pem): { code: number | null; out: string } {
  const file = join(world.root, `bundle-${Math.random().toString(36).slice(2)}.tkb`);
  writeFileSync(file, text);
  const result = spawnSync('bash', [script(), file, key], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
  return { code: result.status, out: result.stdout + result.stderr };
}
const turnkeeperSays = (text: string): boolean => {
  const file = join(world.root, `tk-${Math.random().toString(36).slice(2)}.tkb`);
  writeFileSync(file, text);
  return (JSON.parse(world.cli(['verify', '--bundle', file, '--json']).stdout) as { ok: boolean }).ok;
};
const joined = (parts: string[]) => parts.join('\n') + '\n';

beforeAll(() => {
  world = makeWorld('recipe');
  const env = { TURNKEEPER_CHECKPOINT_EVERY: '4' };
  for (const todo of ['fix-login', 'fix-logout']) expect(world.cli(['todo', 'add', `Title ${todo}`, '--id', todo], { env }).code).toBe(0);
  ['fix-login', 'fix-logout'].forEach((todo, i) => {
    const claimed = world.cli(['hook'], { input: payload.codexPrompt(world, `sess-${i}`, 'turn-1', `#todo:${todo}`), env });
    expect(contextOf(claimed.stdout)).toContain('epoch 1');
    // The same prompt again: a replay of the claim.
    world.cli(['hook'], { input: payload.codexPrompt(world, `sess-${i}`, 'turn-1', `#todo:${todo}`), env });
  });
  expect(world.cli(['release', 'fix-login', '--owner', 'codex:sess-0'], { env }).code).toBe(0);
  const out = join(world.root, 'export.tkb');
  expect(world.cli(['receipts', 'export', '--out', out], { env }).code).toBe(0);
  bundle = readFileSync(out, 'utf8');
  lines = bundle.split('\n').slice(0, -1);
  writeFileSync(script(), recipe('verify-bundle') + '\n');
  // The public key from the verifier key alone, with the docs' recipe.
  const vkey = (JSON.parse(world.cli(['keys', 'show', '--json']).stdout) as { publicKey: string }).publicKey;
  pem = join(world.root, 'key.pem');
  const derived = spawnSync(
    'bash',
    ['-c', `set -euo pipefail\nvkey=${JSON.stringify(vkey)}\ncd ${JSON.stringify(world.root)}\n${recipe('pem-from-verifier-key')}`],
    { encoding: 'utf8' },
  );
  expect(derived.status, derived.stderr).toBe(0);
  expect(readFileSync(pem, 'utf8')).toBe(world.cli(['keys', 'show', '--pem']).stdout);
});
afterAll(() => world.cleanup());

describe('the independent recipe (bash, sha256sum, openssl, jq) from docs/receipts.md', () => {
  it('the tools are there', () => {
    for (const tool of ['jq', 'sha256sum', 'openssl', 'awk', 'base64']) expect(spawnSync('bash', ['-c', `command -v ${tool}`]).status, tool).toBe(0);
  });

  it('verifies the real export (control), as turnkeeper verify --bundle does', () => {
    expect(lines.length).toBeGreaterThan(10);
    expect(lines.some((line) => line.includes('"kind":"checkpoint"'))).toBe(true);
    const result = runRecipe(bundle);
    expect(result.out).toContain('Signature Verified Successfully');
    expect(result.code, result.out).toBe(0);
    expect(turnkeeperSays(bundle)).toBe(true);
  });

  it('refuses tampered copies, each of which turnkeeper refuses too', () => {
    const editAt = (k: number) => lines.map((line, i) => (i === k ? line.replace(/(\d)Z"/, (_, d: string) => `${(Number(d) + 1) % 10}Z"`) : line));
    const header = JSON.parse(lines[0]!) as Record<string, unknown> & { checkpoint: string };
    const at = header.checkpoint.lastIndexOf(' ') + 10;
    const cases: [string, string][] = [
      ['a document edited', joined(editAt(3))],
      ['the signed head edited', joined(editAt(lines.length - 1))],
      ['a document deleted', joined(lines.filter((_, i) => i !== 3))],
      ['two documents swapped', joined(lines.map((line, i) => (i === 3 ? lines[4]! : i === 4 ? lines[3]! : line)))],
      ['cut before its checkpoint', joined(lines.slice(0, -2))],
      [
        'a signature byte changed',
        joined([
          JSON.stringify({
            ...header,
            checkpoint: header.checkpoint.slice(0, at) + (header.checkpoint[at] === 'A' ? 'B' : 'A') + header.checkpoint.slice(at + 1),
          }),
          ...lines.slice(1),
        ]),
      ],
    ];
    for (const [what, text] of cases) {
      const result = runRecipe(text);
      expect(result.code, `${what}: ${result.out}`).not.toBe(0);
      expect(turnkeeperSays(text), what).toBe(false);
    }
  });

  it('refuses the real export under another key', () => {
    const other = join(world.root, 'other.pem');
    expect(spawnSync('openssl', ['genpkey', '-algorithm', 'ed25519', '-out', join(world.root, 'other.key')]).status).toBe(0);
    expect(spawnSync('openssl', ['pkey', '-in', join(world.root, 'other.key'), '-pubout', '-out', other]).status).toBe(0);
    expect(runRecipe(bundle, other).code).not.toBe(0);
  });
});
