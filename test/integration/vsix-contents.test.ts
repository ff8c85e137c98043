// Each packaged .vsix holds exactly the runtime allow-list for its platform (docs/packaging.md): that
// platform's native binaries and nobody else's (checked in their ELF, Mach-O and PE headers, not just
// their names), the documents and images its README links, under 5 MB. The linux-x64 one also runs:
// its CLI, SQLite binding and launcher addon work from the extracted tree alone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { like } from '../support/matchers';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, normalize, relative, resolve } from 'node:path';
import { buildVsix, extractZip, zipEntries } from '../vscode/vsix';

const ROOT = resolve(__dirname, '../..');
const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { l10n?: string; repository?: unknown; dependencies: Record<string, string> };

/** Packaged targets; linux-x64 is the one with a launch backend (LAUNCH_BACKENDS in src/launcher/backends/index.ts). */
const TARGETS = ['linux-x64', 'linux-arm64', 'darwin-x64', 'darwin-arm64'] as const;
type Target = (typeof TARGETS)[number];
const hasLauncher = (target: Target) => target === 'linux-x64';

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((name) => join(dir, name))
    .filter((path) => statSync(path).isFile())
    .map((path) => relative(ROOT, path));
}

/** Relative link and image targets of a Markdown text, without their #fragment (code spans and blocks skipped). */
function relativeLinks(markdown: string): string[] {
  const text = markdown.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  return [
    ...[...text.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+["'(][^)]*)?\)/g)].map((match) => match[1]!),
    ...[...text.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)].map((match) => match[1]!),
    ...[...text.matchAll(/<img\s[^>]*src=["']([^"']+)["']/gi)].map((match) => match[1]!),
  ]
    .filter((link) => !/^([a-z][a-z0-9+.-]*:|#|\/\/)/i.test(link))
    .map((link) => decodeURIComponent(link.split('#')[0]!))
    .filter((link) => link !== '');
}

/** Every document and image reachable from the checkout's README through relative links. */
function linkedFromReadme(): string[] {
  const found = new Set<string>();
  const queue = ['README.md'];
  while (queue.length > 0) {
    const from = queue.shift()!;
    for (const link of relativeLinks(readFileSync(join(ROOT, from), 'utf8'))) {
      const path = normalize(join(dirname(from), link));
      if (found.has(path)) continue;
      found.add(path);
      if (path.endsWith('.md')) queue.push(path);
    }
  }
  return [...found];
}

/** What the vsix must contain, derived from the checkout (media, docs and better-sqlite3's lib may grow). */
function expectedNames(target: Target): string[] {
  const sqliteLib = filesUnder(join(ROOT, 'node_modules/better-sqlite3/lib')).filter(
    (path) => !/lib\/(linux|linuxmusl|darwin|win32)-(x64|arm64)\.js$/.test(path) || path.endsWith(`/${target}.js`),
  );
  const nls = readdirSync(ROOT).filter((name) => /^package\.nls(\.[\w-]+)?\.json$/.test(name));
  const shipped = [
    'package.json',
    ...nls,
    'readme.md', // vsce renames README.md, CHANGELOG.md and LICENSE
    'changelog.md',
    'LICENSE.txt',
    'dist/extension.js',
    'dist/cli.js',
    'dist/turnkeeper.js',
    'dist/hook.js',
    'dist/pg.js',
    ...(hasLauncher(target) ? [`dist/prebuilds/${target}/turnkeeper-launcher.node`] : []),
    'node_modules/better-sqlite3/package.json',
    'node_modules/better-sqlite3/LICENSE',
    `node_modules/better-sqlite3/prebuilds/${target}.node`,
    ...sqliteLib,
    ...filesUnder(join(ROOT, 'media')),
    ...(manifest.l10n ? filesUnder(join(ROOT, manifest.l10n)) : []),
    ...linkedFromReadme(),
  ];
  return ['[Content_Types].xml', 'extension.vsixmanifest', ...new Set(shipped.map((name) => `extension/${name}`))].sort();
}

/** The platform a native binary was built for, from its header; undefined when it is not one. */
function binaryPlatform(bytes: Buffer): string | undefined {
  if (bytes.length < 64) return undefined;
  if (bytes.readUInt32BE(0) === 0x7f454c46) {
    // ELF: 64-bit (EI_CLASS 2), little-endian (EI_DATA 1), e_machine at 18.
    const machine = bytes.readUInt16LE(18);
    const arch = machine === 0x3e ? 'x64' : machine === 0xb7 ? 'arm64' : `machine-${machine}`;
    return bytes[4] === 2 && bytes[5] === 1 ? `linux-${arch}` : `linux-${arch}-not-64-bit-le`;
  }
  if (bytes.readUInt32LE(0) === 0xfeedfacf) {
    // Mach-O 64-bit, little-endian: cputype at 4 (CPU_ARCH_ABI64 | x86 or arm).
    const cpu = bytes.readUInt32LE(4);
    return `darwin-${cpu === 0x01000007 ? 'x64' : cpu === 0x0100000c ? 'arm64' : `cpu-${cpu}`}`;
  }
  if ([0xcafebabe, 0xbebafeca, 0xfeedface, 0xcefaedfe].includes(bytes.readUInt32BE(0))) return 'darwin-universal-or-32-bit';
  if (bytes.toString('latin1', 0, 2) === 'MZ') {
    const pe = bytes.readUInt32LE(0x3c);
    if (pe + 6 <= bytes.length && bytes.readUInt32BE(pe) === 0x50450000) {
      const machine = bytes.readUInt16LE(pe + 4);
      return `win32-${machine === 0x8664 ? 'x64' : machine === 0xaa64 ? 'arm64' : `machine-${machine}`}`;
    }
    return 'win32-dos';
  }
  return undefined;
}

const built = new Map<Target, { zip: Buffer; names: string[]; extracted: string }>();

beforeAll(() => {
  for (const target of TARGETS) {
    const zip = readFileSync(buildVsix(target));
    const extracted = mkdtempSync(join(tmpdir(), `tk-vsix-${target}-`));
    extractZip(zip, extracted);
    built.set(target, {
      zip,
      names: zipEntries(zip)
        .map((entry) => entry.name)
        .sort(),
      extracted,
    });
  }
}, 300_000);
afterAll(() => {
  for (const { extracted } of built.values()) rmSync(extracted, { recursive: true, force: true });
});

for (const target of TARGETS) {
  describe(`the ${target} vsix`, () => {
    const get = () => built.get(target)!;

    it('contains exactly the allow-list', () => {
      expect(get().names).toEqual(expectedNames(target));
    });

    it(`ships native code for ${target} only, judged by the binaries' own headers`, () => {
      const { names, extracted } = get();
      const binaries = names
        .filter((name) => !name.endsWith('/'))
        .map((name) => ({ name, platform: binaryPlatform(readFileSync(join(extracted, name))) }))
        .filter((file) => file.platform !== undefined);
      expect(binaries).toStrictEqual(
        [
          `extension/node_modules/better-sqlite3/prebuilds/${target}.node`,
          ...(hasLauncher(target) ? [`extension/dist/prebuilds/${target}/turnkeeper-launcher.node`] : []),
        ]
          .sort()
          .map((name) => ({ name, platform: target })),
      );
      // Nor a name that belongs to another platform (better-sqlite3's lib/<platform>.js entry points).
      const others = names.filter((name) => /(linux|linuxmusl|darwin|win32|alpine)-(x64|arm64)/.test(name) && !name.includes(target));
      expect(others).toStrictEqual([]);
    });

    it('ships no build output, sources, maps or tests', () => {
      const forbidden = get().names.filter((name) => /(^|\/)(build|src|test|tests|deps|notes|\.git)\//.test(name) || /\.(map|ts|cc|cpp|h|gyp|mjs)$/.test(name));
      expect(forbidden).toStrictEqual([]);
    });

    it('is at most 5 MB', () => {
      expect(get().zip.length).toBeGreaterThan(100 * 1024); // a real package, not an empty shell
      expect(get().zip.length).toBeLessThanOrEqual(5 * 1024 * 1024);
    });

    it('has a README whose every relative link and image, and theirs in turn, resolves inside the vsix', () => {
      const { names, extracted } = get();
      const inside = new Set(names);
      const markdown = names.filter((name) => name.endsWith('.md'));
      expect(markdown).toContain('extension/readme.md');
      const dangling = markdown.flatMap((name) =>
        relativeLinks(readFileSync(join(extracted, name), 'utf8'))
          .map((link) => ({ from: name, link, resolved: normalize(join(dirname(name), link)) }))
          .filter((item) => !inside.has(item.resolved)),
      );
      expect(dangling).toStrictEqual([]);
      // Not vacuous: the README does link documents and show images.
      const fromReadme = relativeLinks(readFileSync(join(extracted, 'extension/readme.md'), 'utf8'));
      expect(fromReadme.some((link) => link.endsWith('.png'))).toBe(true);
      expect(fromReadme.some((link) => link.endsWith('.md'))).toBe(true);
    });

    it('carries a manifest without development fields, placeholders or bundled dependencies', () => {
      const shipped = JSON.parse(readFileSync(join(get().extracted, 'extension/package.json'), 'utf8')) as Record<string, unknown>;
      expect(shipped.devDependencies).toBeUndefined();
      expect(shipped.scripts).toBeUndefined();
      expect(shipped.allowScripts).toBeUndefined();
      // pg is pure JavaScript, bundled into dist/ by esbuild; only better-sqlite3 ships unbundled.
      expect(shipped.dependencies).toEqual({ 'better-sqlite3': manifest.dependencies['better-sqlite3'] });
      // No repository rather than a made-up one (docs/packaging.md): a placeholder breaks the details page.
      expect(JSON.stringify(shipped.repository ?? '')).not.toMatch(/example\.|invalid|placeholder/);
      expect(shipped.main).toBe('./dist/extension.js');
      expect(existsSync(join(get().extracted, 'extension', String(shipped.main)))).toBe(true);
    });

    it("has a CLI that loads without any launcher addon (only --help: the SQLite binary is not this machine's)", () => {
      const run = spawnSync(process.execPath, [join(get().extracted, 'extension/dist/cli.js'), '--help'], {
        cwd: get().extracted,
        env: { PATH: process.env.PATH, HOME: get().extracted, TURNKEEPER_HOME: join(get().extracted, 'tkhome'), NODE_PATH: '' },
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(run.status, run.stderr).toBe(0);
      expect(run.stdout).toContain('turnkeeper');
    });
  });
}

describe('the linux-x64 vsix at work', () => {
  it('runs the CLI from the extracted tree: better-sqlite3 and the launcher load from the vsix', () => {
    const { extracted } = built.get('linux-x64')!;
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
    expect(JSON.parse(attest.stdout)).toMatchObject({ ok: true, digest: like.stringMatching(/^sha256:[0-9a-f]{64}$/) });
  });
});

describe('targets not packaged yet', () => {
  it('win32-x64 is refused with the reason, not packaged half-working', () => {
    const run = spawnSync(process.execPath, [join(ROOT, 'scripts/package-vsix.mjs'), '--no-build', '--target', 'win32-x64'], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('win32-x64 is not packaged yet');
    expect(run.stderr).toContain('/bin/sh');
  });
});
