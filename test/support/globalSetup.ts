// Integration tests run the real `dist/cli.js`; build it once per test run so it is never stale.
import { execFileSync } from 'node:child_process';

export default function setup(): void {
  execFileSync(process.execPath, ['scripts/build.mjs'], { stdio: 'inherit' });
}
