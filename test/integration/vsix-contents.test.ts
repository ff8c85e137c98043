// The packaged .vsix holds exactly the runtime allow-list (docs/packaging.md), stays under 5 MB, and
// its CLI, SQLite binding and launcher addon work from the extracted tree alone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { buildVsix, extractZip, zipEntries } from '../vscode/vsix';

const ROOT = resolve(__dirname, '../..');

let zip: Buffer;
let names: string[];
let extracted: string;

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((name) => join(dir, name))
    .filter((path) => statSync(path).isFile())
    .map((path) => relative(ROOT, path));
}

/** What the vsix must contain, derived from the checkout (media and better-sqlite3's lib may grow). */
function expectedNames(): string[] {
  const sqliteLib = filesUnder(join(ROOT, 'node_modules/better-sqlite3/lib')).filter(
    (path) => !/lib\/(linux|linuxmusl|darwin|win32)-(x64|arm64)\.js$/.test(path) || path.endsWith('/linux-x64.js'),
  );
  const nls = readdirSync(ROOT).filter((name) => /^package\.nls(\.[\w-]+)?\.json$/.test(name));
  const l10n = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { l10n?: string }).l10n;
  const shipped = [
    'package.json',
    ...nls,
    'readme.md', // vsce renames README.md, CHANGELOG.md and LICENSE
    'changelog.md',
    'LICENSE.txt',
    'dist/extension.js',
    'dist/cli.js',
    'dist/turnkeeper.js',
    'dist/prebuilds/linux-x64/turnkeeper-launcher.node',
    'node_modules/better-sqlite3/package.json',
    'node_modules/better-sqlite3/LICENSE',
    'node_modules/better-sqlite3/prebuilds/linux-x64.node',
    ...sqliteLib,
    ...filesUnder(join(ROOT, 'media')),
    ...(l10n ? filesUnder(join(ROOT, l10n)) : []),
  ];
  return ['[Content_Types].xml', 'extension.vsixmanifest', ...shipped.map((name) => `extension/${name}`)].sort();
}

beforeAll(() => {
  zip = readFileSync(buildVsix());
  names = zipEntries(zip).map((entry) => entry.name).sort();
  extracted = mkdtempSync(join(tmpdir(), 'tk-vsix-'));
  extractZip(zip, extracted);
}, 120_000);
afterAll(() => {
  if (extracted) rmSync(extracted, { recursive: true, force: true });
});

describe('the linux-x64 vsix', () => {
  it('contains exactly the allow-list', () => {
    expect(names).toEqual(expectedNames());
  });

  it('ships no build output, sources, maps, tests or other platforms\' binaries', () => {
    const forbidden = names.filter(
      (name) =>
        /(^|\/)(build|src|test|tests|deps|\.git)\//.test(name) ||
        /\.(map|ts|cc|cpp|h|gyp|mjs)$/.test(name) ||
        (name.endsWith('.node') && !/linux-x64/.test(name)),
    );
    expect(forbidden).toEqual([]);
  });

  it('is at most 5 MB', () => {
    expect(zip.length).toBeGreaterThan(100 * 1024); // a real package, not an empty shell
    expect(zip.length).toBeLessThanOrEqual(5 * 1024 * 1024);
  });

  it('carries a manifest without development fields and only the unbundled dependency', () => {
    const manifest = JSON.parse(readFileSync(join(extracted, 'extension/package.json'), 'utf8')) as Record<string, unknown>;
    expect(manifest.devDependencies).toBeUndefined();
    expect(manifest.scripts).toBeUndefined();
    expect(manifest.allowScripts).toBeUndefined();
    expect(manifest.dependencies).toEqual({ 'better-sqlite3': '13.2.0' });
    expect(manifest.main).toBe('./dist/extension.js');
    expect(existsSync(join(extracted, 'extension', String(manifest.main)))).toBe(true);
  });

  it('runs the CLI from the extracted tree: better-sqlite3 and the launcher load from the vsix', () => {
    const home = join(extracted, 'tkhome');
    // A CWD outside the checkout, so nothing resolves from the repository's node_modules.
    const run = (args: string[]) =>
      spawnSync(process.execPath, [join(extracted, 'extension/dist/cli.js'), ...args], {
        cwd: extracted,
        env: { PATH: process.env.PATH, HOME: extracted, TURNKEEPER_HOME: home, NODE_PATH: '' },
        encoding: 'utf8',
        timeout: 30_000,
      });
    const added = run(['todo', 'add', 'Vsix smoke', '--id', 'vsix-smoke']);
    expect(added.status, added.stderr).toBe(0);
    expect(existsSync(join(home, 'turnkeeper.db'))).toBe(true);
    const listed = run(['todo', 'list', '--json']);
    expect(listed.status, listed.stderr).toBe(0);
    expect(listed.stdout).toContain('vsix-smoke');

    const attest = run(['attest', '/bin/true', '--json']);
    expect(attest.status, attest.stderr).toBe(0);
    expect(JSON.parse(attest.stdout)).toMatchObject({ ok: true, digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) });
  });
});
