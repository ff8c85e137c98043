// Development builds carry source maps so breakpoints in src/ bind (.vscode/launch.json); release
// builds (npm pack, the .vsix) carry none. `npm test` builds first, so dist/ is a development build.
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '../..');

interface SourceMap {
  readonly sources: readonly string[];
  readonly mappings: string;
}

describe('build source maps', () => {
  // Each bundle and a source its map must name: its entry (pg.js is the PostgreSQL library alone).
  const entries: [string, string][] = [
    ['turnkeeper.js', '../src/cli/main.ts'],
    ['hook.js', '../src/cli/hookMain.ts'],
    ['extension.js', '../src/extension/main.ts'],
    ['pg.js', '../node_modules/pg/lib/client.js'],
  ];
  it.each(entries)('the development build of %s links a map whose sources are this checkout’s files', (bundle, entry) => {
    const code = readFileSync(join(ROOT, 'dist', bundle), 'utf8');
    expect(code.trimEnd().endsWith(`//# sourceMappingURL=${bundle}.map`)).toBe(true);
    const map = JSON.parse(readFileSync(join(ROOT, 'dist', `${bundle}.map`), 'utf8')) as SourceMap;
    expect(map.sources).toContain(entry);
    for (const source of map.sources) expect(existsSync(resolve(ROOT, 'dist', source)), source).toBe(true);
    expect(map.mappings.length).toBeGreaterThan(1000);
  });

  it('a release build has neither maps nor links to them, and removes those of an earlier build', () => {
    // In a copy of the sources, so the checkout's development build stays as the tests expect it.
    const copy = mkdtempSync(join(tmpdir(), 'tk-build-maps-'));
    try {
      for (const part of ['src', 'scripts', 'package.json']) cpSync(join(ROOT, part), join(copy, part), { recursive: true });
      symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'));
      cpSync(join(ROOT, 'dist'), join(copy, 'dist'), { recursive: true }); // with the development maps
      expect(existsSync(join(copy, 'dist', 'turnkeeper.js.map'))).toBe(true);
      execFileSync(process.execPath, ['scripts/build.mjs', '--release'], { cwd: copy, stdio: 'pipe' });
      for (const bundle of ['turnkeeper.js', 'hook.js', 'extension.js', 'pg.js']) {
        expect(existsSync(join(copy, 'dist', `${bundle}.map`)), `${bundle}.map`).toBe(false);
        expect(readFileSync(join(copy, 'dist', bundle), 'utf8')).not.toContain('sourceMappingURL');
      }
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });
});
