// One esbuild call per entry point. Native modules (better-sqlite3, later the launcher addon) stay
// external: esbuild cannot bundle .node files, they are loaded from node_modules or copied beside
// the bundle when packaging.
import { build } from 'esbuild';
import { chmodSync, copyFileSync, mkdirSync } from 'node:fs';

const common = {
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node22',
  sourcemap: false,
  legalComments: 'none',
  external: ['better-sqlite3', 'vscode'],
  // jsonc-parser's "main" is a UMD build with dynamic requires esbuild cannot follow; its ESM build bundles.
  mainFields: ['module', 'main'],
  logLevel: 'warning',
};

await build({ ...common, entryPoints: ['src/cli/main.ts'], outfile: 'dist/turnkeeper.js' });
// dist/cli.js (the package bin) enables the compile cache, then loads the bundle.
mkdirSync('dist', { recursive: true });
copyFileSync('src/cli/launcher.cjs', 'dist/cli.js');
chmodSync('dist/cli.js', 0o755);

// The demo (npm run demo) is a development tool, never shipped: ESM because its helpers use import.meta.
if (process.argv.includes('--demo')) {
  await build({ ...common, format: 'esm', entryPoints: ['scripts/demo.ts'], outfile: 'dist/demo.mjs' });
}
