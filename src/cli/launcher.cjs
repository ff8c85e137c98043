#!/usr/bin/env node
// Entry of the `turnkeeper` command (copied to dist/cli.js). It runs before the bundle, so it does two
// things the bundle cannot do for itself (spec §2 rule 1, §10):
//
// 1. Off: with env TURNKEEPER=off or a file named `off` in TURNKEEPER_HOME, a hook drains its stdin
//    and exits 0 without loading the bundle, and no command turns the compile cache on: nothing is
//    created or opened.
// 2. Compile cache: Node's on-disk compile cache must be enabled before a module is compiled to help
//    it, and compiling the bundle is most of a hook's start-up. Node's default directory is the shared
//    `$TMPDIR/node-compile-cache`, whose folders any local user can create first and fill with code
//    that then runs in our process. So the cache lives in `$TURNKEEPER_HOME/compile-cache`, a
//    directory that must be ours (lstat: a real directory, owned by our euid, mode 0700) inside a
//    TURNKEEPER_HOME that is absolute, ours and not world-writable; otherwise the cache is off. It never falls
//    back to a temporary directory, and TURNKEEPER_HOME itself is never created here.
//
// NODE_DISABLE_COMPILE_CACHE turns the cache off. NODE_COMPILE_CACHE is applied by Node itself before
// this file runs (Turnkeeper cannot vet it; whoever can set it can set NODE_OPTIONS too): then this file
// adds no directory of its own. See docs/decisions.md, "Compile cache".
//
// Before either, it checks the runtime: on a Node older than MIN_NODE, better-sqlite3 (built for
// Node >= 22) would crash the process in native code, and the bundle uses APIs of Node 22.3
// (process.getBuiltinModule). So it says which Node it needs and exits before loading anything:
// 2 (usage error) for every command, but 0 for `hook`, which fails open for the agent (spec §2):
// one line on stderr, the payload drained, nothing on stdout.
'use strict';
const { existsSync, lstatSync, mkdirSync, readSync, statSync } = require('node:fs');
const { isAbsolute, join } = require('node:path');

const env = process.env;
// Keep in sync with turnkeeperHome() in src/store/location.ts.
// A relative TURNKEEPER_HOME counts as unset (it would be relative to the agent's checkout).
const home = env.TURNKEEPER_HOME && isAbsolute(env.TURNKEEPER_HOME) ? env.TURNKEEPER_HOME : join(env.HOME || require('node:os').homedir(), '.turnkeeper');
const off = env.TURNKEEPER === 'off' || existsSync(join(home, 'off'));
const hook = process.argv[2] === 'hook';

// Keep in sync with "engines.node" in package.json.
const MIN_NODE = [22, 3, 0];
if (!nodeIsRecentEnough(process.versions.node) && !(off && hook)) {
  process.stderr.write(
    `turnkeeper: needs Node ${MIN_NODE.join('.')} or newer; this is Node ${process.versions.node} (${process.execPath}).` +
      (hook
        ? ' The hook did nothing; the agent goes on.'
        : ' Install a newer Node, or use the turnkeeper that the VS Code extension puts on the PATH of its terminals.') +
      '\n',
  );
  process.exitCode = hook ? 0 : 2;
  if (hook) drainStdin();
} else if (off && hook) {
  drainStdin();
} else {
  if (!off) enableCompileCache();
  // A hook loads only the hook's bundle (src/cli/hookMain.ts says why); its --help is the full CLI's.
  const args = process.argv.slice(3);
  if (hook && !args.includes('--help') && !args.includes('-h')) require('./hook.js').runHookCli();
  else require('./turnkeeper.js').runCli();
}

function nodeIsRecentEnough(version) {
  const parts = String(version).split('.').map(Number);
  for (let i = 0; i < MIN_NODE.length; i += 1) {
    if ((parts[i] || 0) !== MIN_NODE[i]) return (parts[i] || 0) > MIN_NODE[i];
  }
  return true;
}

/** Reads stdin to its end and drops it, so the agent writing the payload never sees a broken pipe. */
function drainStdin() {
  const chunk = Buffer.allocUnsafe(65536);
  try {
    while (readSync(0, chunk, 0, chunk.length, null) > 0);
  } catch (error) {
    // A non-blocking stdin: let the stream read it to the end (the process exits then).
    if (error.code === 'EAGAIN') process.stdin.on('error', () => {}).resume();
  }
}

function enableCompileCache() {
  const nodeModule = require('node:module');
  // Already enabled: NODE_COMPILE_CACHE, applied by Node at start-up.
  if (!nodeModule.enableCompileCache || env.NODE_DISABLE_COMPILE_CACHE || nodeModule.getCompileCacheDir?.() !== undefined) return;
  const dir = privateCacheDir();
  if (dir !== undefined) nodeModule.enableCompileCache(dir);
}

/** `$TURNKEEPER_HOME/compile-cache` when it is (or has just been made) private to this user, else undefined. */
function privateCacheDir() {
  const euid = process.geteuid?.();
  // A relative home (only a relative HOME can give one now) would be under the agent's working
  // directory: a repository could ship the cache, ours by every test below, whose code then runs here.
  if (euid === undefined || !isAbsolute(home)) return undefined;
  const dir = join(home, 'compile-cache');
  try {
    // Others must not be able to swap the cache directory between the check below and Node's use. A
    // sticky world-writable home (such as /tmp) is fine: only we may rename our entries there. A
    // group-writable one is accepted: the shim agents run (bin/turnkeeper) sits in it with the same exposure.
    const parent = statSync(home);
    if (!parent.isDirectory() || parent.uid !== euid || (parent.mode & 0o1002) === 0o002) return undefined;
    try {
      mkdirSync(dir, { mode: 0o700 });
    } catch (error) {
      if (error.code !== 'EEXIST') return undefined;
    }
    const stat = lstatSync(dir);
    return stat.isDirectory() && stat.uid === euid && (stat.mode & 0o7777) === 0o700 ? dir : undefined;
  } catch {
    return undefined;
  }
}
