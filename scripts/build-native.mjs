// Builds the launcher addon into native/prebuilds/<platform>-<arch>/ with prebuildify (Node-API, so one
// binary serves Node 24, code-server and Electron). Skips the build when the prebuild is newer than
// its sources, and removes native/build afterwards: node-gyp-build prefers build/ over prebuilds/,
// so a stale build/ must never exist to shadow the prebuild.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';

const native = 'native';
const prebuild = join(native, 'prebuilds', `${process.platform}-${process.arch}`, 'turnkeeper-launcher.node');
const sources = [join(native, 'binding.gyp'), ...readdirSync(join(native, 'src')).map((name) => join(native, 'src', name))];
const newest = Math.max(...sources.map((file) => statSync(file).mtimeMs));

if (!process.argv.includes('--force') && existsSync(prebuild) && statSync(prebuild).mtimeMs >= newest) {
  console.log(`launcher addon up to date: ${prebuild}`);
} else {
  execFileSync('prebuildify', ['--napi', '--strip', '--target', `node@${process.versions.node}`], { cwd: native, stdio: 'inherit' });
  console.log(`built ${prebuild}`);
}
rmSync(join(native, 'build'), { recursive: true, force: true });
