// One esbuild call per entry point. Native modules (better-sqlite3, later the launcher addon) stay
// external: esbuild cannot bundle .node files, they are loaded from node_modules or copied beside
// the bundle when packaging.
import { build } from 'esbuild';
import { chmodSync } from 'node:fs';

const common = {
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node22',
  sourcemap: false,
  legalComments: 'none',
  external: ['better-sqlite3', 'vscode'],
  logLevel: 'warning',
};

await build({ ...common, entryPoints: ['src/cli/main.ts'], outfile: 'dist/cli.js', banner: { js: '#!/usr/bin/env node' } });
chmodSync('dist/cli.js', 0o755);
