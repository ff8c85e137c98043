// One esbuild call per entry point. Native modules (better-sqlite3, the launcher addon) stay
// external: esbuild cannot bundle .node files; they are loaded from node_modules / native/ in a
// checkout, or from beside the bundle in the packaged extension. Outputs are written to a temporary
// name and renamed, so a hook that starts during a rebuild never loads half a bundle.
import { build } from 'esbuild';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

// A development build (the default: npm run build, F5 in .vscode/launch.json) writes linked source
// maps beside the bundles, so breakpoints in src/ bind; a release build (--release: npm pack, the
// .vsix) has none. Node reads a map only with --enable-source-maps, so a hook pays nothing for it.
const release = process.argv.includes('--release');

// --if-changed (the tests' global setup): nothing is built when the bundles were built, by this
// script, from the sources as they are now: a digest of every file under src/, this script and the
// lockfile, written to dist/.source-digest after every build (of any kind: the bundles behave alike).
const BUNDLES = ['dist/cli.js', 'dist/turnkeeper.js', 'dist/hook.js', 'dist/extension.js', 'dist/pg.js'];
const DIGEST_FILE = 'dist/.source-digest';
function sourceDigest() {
  const hash = createHash('sha256');
  const files = readdirSync('src', { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name))
    .sort();
  // A tree without a lockfile (a copy of the sources) builds all the same: its absence is digested.
  for (const file of [...files, 'scripts/build.mjs', 'package-lock.json'])
    hash
      .update(`${file}\0`)
      .update(existsSync(file) ? readFileSync(file) : '(absent)')
      .update('\0');
  return hash.digest('hex');
}
// A release build's bundles differ (no source maps): its digest names it, and tests rebuild after it.
const digest = `${sourceDigest()}${release ? ' release' : ''}`;
const wanted = ['--demo', '--stand-in'].some((flag) => process.argv.includes(flag));
if (
  process.argv.includes('--if-changed') &&
  !wanted &&
  existsSync(DIGEST_FILE) &&
  readFileSync(DIGEST_FILE, 'utf8') === digest &&
  BUNDLES.every((file) => existsSync(file))
) {
  console.log('bundles up to date: dist/ was built from these sources');
  process.exit(0);
}

const common = {
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node22',
  sourcemap: release ? false : 'linked',
  // The maps point at src/ in this checkout; they need not carry the sources.
  sourcesContent: false,
  legalComments: 'none',
  // pg's optional native binding and its Cloudflare socket shim are never loaded under Node.
  external: ['better-sqlite3', 'vscode', 'pg-native', 'pg-cloudflare', 'cloudflare:sockets'],
  // jsonc-parser's "main" is a UMD build with dynamic requires esbuild cannot follow; its ESM build bundles.
  mainFields: ['module', 'main'],
  logLevel: 'warning',
  write: false,
};

// pg, the PostgreSQL client, is a bundle of its own (dist/pg.js) that the other bundles load only
// when a team store is selected: inside them it cost every SQLite hook the compilation of ~200 KB.
// Only the library moves; src/store/postgres.ts stays in the bundles that use it, so the error
// classes it throws are the ones the hook checks with instanceof.
const pgApart = {
  name: 'pg-apart',
  setup(builder) {
    builder.onResolve({ filter: /^pg$/ }, () => ({ path: './pg.js', external: true }));
  },
};

async function bundle(options) {
  const result = await build({ ...common, ...options });
  for (const file of result.outputFiles) {
    writeFileSync(`${file.path}.tmp`, file.contents);
    renameSync(`${file.path}.tmp`, file.path);
  }
}

mkdirSync('dist', { recursive: true });
// A release build leaves no map of an earlier development build behind to point at.
if (release)
  for (const name of ['turnkeeper', 'hook', 'extension', 'pg', 'demo']) rmSync(`dist/${name}.${name === 'demo' ? 'mjs' : 'js'}.map`, { force: true });
await Promise.all([
  bundle({ entryPoints: ['src/cli/main.ts'], outfile: 'dist/turnkeeper.js', plugins: [pgApart] }),
  bundle({ entryPoints: ['src/cli/hookMain.ts'], outfile: 'dist/hook.js', plugins: [pgApart] }),
  bundle({ entryPoints: ['src/extension/main.ts'], outfile: 'dist/extension.js', plugins: [pgApart] }),
  bundle({ entryPoints: ['pg'], outfile: 'dist/pg.js' }),
]);
// dist/cli.js (the package bin) enables the compile cache, then loads the bundle.
copyFileSync('src/cli/launcher.cjs', 'dist/cli.js.tmp');
chmodSync('dist/cli.js.tmp', 0o755);
renameSync('dist/cli.js.tmp', 'dist/cli.js');
writeFileSync(DIGEST_FILE, digest);

// The demo (npm run demo) is a development tool, never shipped: ESM because its helpers use import.meta.
if (process.argv.includes('--demo')) {
  await bundle({ format: 'esm', entryPoints: ['scripts/demo.ts'], outfile: 'dist/demo.mjs' });
}
// The stand-in model (npm run stand-in), a development tool too: the tests' model stand-ins on one port.
if (process.argv.includes('--stand-in')) {
  await bundle({ format: 'esm', entryPoints: ['scripts/stand-in.ts'], outfile: 'dist/stand-in.mjs' });
}
