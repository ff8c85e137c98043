// Integration tests run the real `dist/cli.js`; build it once per test run so it is never stale.
// Every test process also gets a private TURNKEEPER_HOME, so no test (or code under test that falls back
// to the defaults: keys, witness, shim, config) writes into the real user's ~/.turnkeeper. HOME stays:
// npm's cache under it serves the code-server install of the editor e2e.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default function setup(): () => void {
  execFileSync(process.execPath, ['scripts/build.mjs'], { stdio: 'inherit' });
  const root = mkdtempSync(join(tmpdir(), 'tk-test-home-'));
  process.env.TURNKEEPER_HOME = join(root, 'turnkeeper');
  return () => rmSync(root, { recursive: true, force: true });
}
