// Builds turnkeeper-<target>-<version>.vsix from a staged tree (docs/packaging.md).
//
// vsce packs whatever sits in its working directory, and its --ignore-other-target-folders does not
// drop other platforms' binaries, so we never run it on the checkout: we copy exactly the runtime
// files into a temporary directory and package that. .vscodeignore (an allow-list) is the second
// fence, in case staging ever grows a stray file.
//
//   node scripts/package-vsix.mjs [--target linux-x64] [--no-build]
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const MAX_BYTES = 5 * 1024 * 1024;
// Modules the bundles load with require() at runtime (esbuild externals); everything else is bundled
// (pg is pure JavaScript and is bundled too).
const RUNTIME_MODULES = ['better-sqlite3'];
// What each vsce target ships besides the JavaScript: better-sqlite3's prebuild for that platform
// (prebuilds/<target>.node, all of them in its npm package), and the launcher addon only where a
// launch backend exists (LAUNCH_BACKENDS in src/launcher/backends/index.ts). Elsewhere Resume and Start
// refuse with unsupported_platform while hooks, leases, the sidebar and receipts work.
const TARGETS = {
  'linux-x64': { launcher: true, tested: true },
  'linux-arm64': { launcher: false, tested: false },
  'darwin-x64': { launcher: false, tested: false },
  'darwin-arm64': { launcher: false, tested: false },
};
// Targets not packaged yet, and why (docs/packaging.md "Other targets").
const NOT_YET = {
  'win32-x64':
    'the hook shim ($TURNKEEPER_HOME/bin/turnkeeper) is a /bin/sh script and the hook commands written into agent configs are POSIX-quoted; Windows needs a .cmd shim and cmd-quoted commands first',
  'win32-arm64': 'as win32-x64',
  'alpine-x64': "needs better-sqlite3's linuxmusl-x64 prebuild wired in (its lib picks linuxmusl-* on musl)",
  'alpine-arm64': 'as alpine-x64',
};

function fail(message) {
  process.stderr.write(`package-vsix: ${message}\n`);
  process.exit(1);
}

function option(name, fallback) {
  const index = process.argv.indexOf(name);
  return index === -1 ? fallback : process.argv[index + 1];
}

const target = option('--target', 'linux-x64');
if (NOT_YET[target]) fail(`${target} is not packaged yet: ${NOT_YET[target]}`);
if (!TARGETS[target]) fail(`unknown target ${target}; one of ${Object.keys(TARGETS).join(', ')}`);

const rootManifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const out = join(ROOT, `${rootManifest.name}-${target}-${rootManifest.version}.vsix`);

// Build with the Node that runs this script (the pinned Node 24 under `npm run package`).
if (!process.argv.includes('--no-build')) {
  for (const [script, ...args] of [['scripts/build-native.mjs'], ['scripts/build.mjs', '--release']]) {
    execFileSync(process.execPath, [script, ...args], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
  }
}

// Source in the checkout -> path in the vsix (relative to extension/).
const files = [
  ['README.md', 'README.md'],
  ['CHANGELOG.md', 'CHANGELOG.md'],
  ['LICENSE', 'LICENSE'],
  ['.vscodeignore', '.vscodeignore'],
  ['dist/extension.js', 'dist/extension.js'],
  ['dist/cli.js', 'dist/cli.js'],
  ['dist/turnkeeper.js', 'dist/turnkeeper.js'],
  ['dist/hook.js', 'dist/hook.js'],
  ['dist/pg.js', 'dist/pg.js'],
  // node-gyp-build(__dirname of the bundle) finds it in dist/prebuilds/<platform>-<arch>/.
  ...(TARGETS[target].launcher ? [[`native/prebuilds/${target}/turnkeeper-launcher.node`, `dist/prebuilds/${target}/turnkeeper-launcher.node`]] : []),
  // better-sqlite3 13 loads lib/index.js -> lib/binding.js -> prebuilds/<platform>-<arch>.node
  // (build/Release only when compiled locally, which we never ship).
  ['node_modules/better-sqlite3/LICENSE', 'node_modules/better-sqlite3/LICENSE'],
  ['node_modules/better-sqlite3/lib', 'node_modules/better-sqlite3/lib'],
  [`node_modules/better-sqlite3/prebuilds/${target}.node`, `node_modules/better-sqlite3/prebuilds/${target}.node`],
];
// The README is the extension's details page: every file it links or shows, and every file those
// documents link in turn, ships beside it, so its relative links resolve inside the installed
// extension (there is no public repository URL to rewrite them against).
for (const path of linkedDocuments('README.md')) files.push([path, path]);

/** Relative link targets of a Markdown file: inline links and images, reference definitions, <img src>. */
function relativeLinks(markdown) {
  const text = markdown.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  const targets = [
    ...[...text.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+["'(][^)]*)?\)/g)].map((match) => match[1]),
    ...[...text.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)].map((match) => match[1]),
    ...[...text.matchAll(/<img\s[^>]*src=["']([^"']+)["']/gi)].map((match) => match[1]),
  ];
  return targets.filter((link) => !/^([a-z][a-z0-9+.-]*:|#|\/\/)/i.test(link)).map((link) => decodeURIComponent(link.split('#')[0]));
}

/** The documents and images reachable from `start` through relative links, as checkout paths. */
function linkedDocuments(start) {
  const found = new Set();
  const queue = [start];
  while (queue.length > 0) {
    const from = queue.shift();
    for (const link of relativeLinks(readFileSync(join(ROOT, from), 'utf8'))) {
      if (link === '') continue;
      const path = normalize(join(dirname(from), link))
        .split(sep)
        .join('/');
      if (path.startsWith('../') || !/^(docs|media)\//.test(path))
        fail(`${from} links ${link}, which is not under docs/ or media/: link an absolute URL instead`);
      if (!existsSync(join(ROOT, path)) || !statSync(join(ROOT, path)).isFile()) fail(`${from} links ${link}, which does not exist`);
      if (found.has(path)) continue;
      found.add(path);
      if (path.endsWith('.md')) queue.push(path);
    }
  }
  return [...found].sort();
}
for (const [source] of files) {
  if (existsSync(join(ROOT, source))) continue;
  if (source === 'dist/extension.js') fail('dist/extension.js is missing: scripts/build.mjs did not bundle the extension (src/extension/main.ts)');
  if (source.startsWith('native/prebuilds/'))
    fail(`${source} is missing: build the launcher addon for ${target} on that platform (npm run build:native) and copy its prebuilds/${target}/ here`);
  fail(`${source} is missing`);
}
if (!existsSync(join(ROOT, 'media'))) fail('media/ is missing');
// "%key%" strings in the manifest resolve from package.nls.json (and its translations), and
// vscode.l10n.t() from the bundles in the folder named by the manifest's "l10n".
for (const name of readdirSync(ROOT)) if (/^package\.nls(\.[\w-]+)?\.json$/.test(name)) files.push([name, name]);
if (rootManifest.l10n) files.push([rootManifest.l10n, rootManifest.l10n]);

// better-sqlite3's lib/<platform>-<arch>.js entry points name prebuilds we do not ship.
const otherPlatformShim = (path) => /[\\/]lib[\\/](linux|linuxmusl|darwin|win32)-(x64|arm64)\.js$/.test(path) && basename(path) !== `${target}.js`;

const stage = mkdtempSync(join(tmpdir(), 'turnkeeper-vsix-'));
try {
  for (const [source, dest] of files) {
    mkdirSync(dirname(join(stage, dest)), { recursive: true });
    cpSync(join(ROOT, source), join(stage, dest), { recursive: true, filter: (path) => !otherPlatformShim(path) });
  }
  cpSync(join(ROOT, 'media'), join(stage, 'media'), { recursive: true });

  // The extension's manifest: no development fields, and only the dependencies that ship unbundled,
  // so that vsce's `npm list --production` in the stage sees a complete tree.
  const manifest = { ...rootManifest };
  // `files` is npm pack's list for the CLI package; vsce refuses it next to .vscodeignore.
  for (const field of ['devDependencies', 'scripts', 'allowScripts', 'files']) delete manifest[field];
  manifest.dependencies = Object.fromEntries(RUNTIME_MODULES.map((name) => [name, rootManifest.dependencies[name]]));
  writeFileSync(join(stage, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);

  // better-sqlite3 depends on node-addon-api only to compile (C++ headers); it does not ship.
  const sqliteManifest = JSON.parse(readFileSync(join(ROOT, 'node_modules/better-sqlite3/package.json'), 'utf8'));
  delete sqliteManifest.dependencies;
  writeFileSync(join(stage, 'node_modules/better-sqlite3/package.json'), `${JSON.stringify(sqliteManifest, null, 2)}\n`);

  rmSync(out, { force: true });
  // No inherited npm_* variables (npm run sets them; vsce runs `npm list` in the stage), stdin closed
  // so a vsce prompt fails instead of hanging.
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key)));
  try {
    execFileSync(
      process.execPath,
      [join(ROOT, 'node_modules/@vscode/vsce/vsce'), 'package', '--target', target, '--out', out, '--no-rewrite-relative-links', '--allow-missing-repository'],
      { cwd: stage, env, stdio: ['ignore', 'inherit', 'inherit'], timeout: 120_000 },
    );
  } catch (error) {
    fail(`vsce package failed (${error.signal ?? `exit ${error.status}`}); its message is above`);
  }
} finally {
  rmSync(stage, { recursive: true, force: true });
}

const size = statSync(out).size;
process.stdout.write(`${out}: ${(size / 1024 / 1024).toFixed(2)} MB (${size} bytes)\n`);
if (size > MAX_BYTES) fail(`the vsix is ${size} bytes, over the ${MAX_BYTES}-byte budget`);
