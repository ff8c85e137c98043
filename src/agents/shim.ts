// The stable shim under TURNKEEPER_HOME that every agent's hook command points at. Installs and
// upgrades rewrite only this file, so the commands in the agents' configs stay byte-identical
// (Codex silently skips a hook whose definition changed until the user trusts it again).
import { randomBytes } from 'node:crypto';
import { chmodSync, constants, copyFileSync, existsSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { shQuote } from './install';
import { writeFileAtomic } from '../files/atomicFile';

export interface ShimTarget {
  /** The executable that runs Turnkeeper's CLI: node, or the extension host's own binary. */
  readonly runtime: string;
  /** Turnkeeper's CLI entry point (`dist/cli.js`). */
  readonly script: string;
  /** The runtime is Electron (VS Code's extension host) and must behave as plain Node. */
  readonly electronRunAsNode?: boolean;
  /**
   * The TURNKEEPER_HOME (and TURNKEEPER_DB) the hooks were installed for: defaults in the shim, so an
   * agent started without those variables still reaches the same store. Set values still win.
   */
  readonly home?: string;
  readonly db?: string;
}

const HEADER = "# Turnkeeper shim: rewritten by every install or upgrade. Agents' hook commands point here, so they never change.";

export const shimPath = (turnkeeperHome: string): string => join(turnkeeperHome, 'bin', 'turnkeeper');

/** The warm hook path's native client, beside the shim (spec §2 "The warm hook path"). */
const warmClientPath = (turnkeeperHome: string): string => join(turnkeeperHome, 'bin', 'turnkeeper-hook');

/**
 * The client built for this platform, found from the CLI's script as the launcher addon is
 * (src/launcher/native.ts): dist/prebuilds/ in a package, native/prebuilds/ in a checkout. Undefined
 * where none was built (every platform but Linux): hooks then always run cold.
 */
function builtWarmClient(script: string): string | undefined {
  const platform = `${process.platform}-${process.arch}`;
  const dist = dirname(script);
  return [join(dist, 'prebuilds', platform, 'turnkeeper-hook'), join(dist, '..', 'native', 'prebuilds', platform, 'turnkeeper-hook')].find((path) =>
    existsSync(path),
  );
}

function shimContent(target: ShimTarget): string {
  for (const value of [target.runtime, target.script]) {
    // sh cannot carry a NUL, and an empty path would exec the wrong thing.
    if (value === '' || value.includes('\0')) throw new Error(`invalid shim target path: ${JSON.stringify(value)}`);
  }
  const lines = ['#!/bin/sh', HEADER];
  if (target.electronRunAsNode === true) lines.push('export ELECTRON_RUN_AS_NODE=1');
  // An absolute TURNKEEPER_HOME in the environment wins; a relative one counts as unset, as everywhere
  // (src/store/location.ts), so the installed home stands in for it.
  if (target.home) lines.push(`case "\${TURNKEEPER_HOME:-}" in /*) ;; *) TURNKEEPER_HOME=${shQuote(target.home)} ;; esac; export TURNKEEPER_HOME`);
  if (target.db) lines.push(`export TURNKEEPER_DB="\${TURNKEEPER_DB:-}"; [ -n "$TURNKEEPER_DB" ] || TURNKEEPER_DB=${shQuote(target.db)}`);
  // A hook goes through the warm client when it is installed; the client runs the line after this
  // one's command itself (the cold hook) whenever the warm path cannot answer.
  if (target.home) {
    const client = shQuote(warmClientPath(target.home));
    lines.push(`if [ "\${1:-}" = hook ] && [ -x ${client} ]; then exec ${client} ${shQuote(target.runtime)} ${shQuote(target.script)} "$@"; fi`);
  }
  lines.push(`exec ${shQuote(target.runtime)} ${shQuote(target.script)} "$@"`);
  return `${lines.join('\n')}\n`;
}

/** Writes the shim (atomically, mode 0755) and reports whether its content changed. */
export function writeShim(turnkeeperHome: string, target: ShimTarget): boolean {
  const path = shimPath(turnkeeperHome);
  const content = shimContent(target);
  const changed = readOrUndefined(path) !== content;
  // Rewritten even when equal: this also repairs a mode someone changed.
  writeFileAtomic(path, content, 0o755);
  installWarmClient(turnkeeperHome, target.script);
  return changed;
}

/**
 * Copies this Turnkeeper's warm client beside the shim (or removes one an earlier install left, where
 * this one has none), renamed into place so a hook never runs half a binary.
 */
function installWarmClient(turnkeeperHome: string, script: string): void {
  const target = warmClientPath(turnkeeperHome);
  const built = builtWarmClient(script);
  if (built === undefined) {
    rmSync(target, { force: true });
    return;
  }
  // A random name created exclusively: never through a file or link already at that name.
  const temporary = `${target}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  copyFileSync(built, temporary, constants.COPYFILE_EXCL);
  chmodSync(temporary, 0o755);
  renameSync(temporary, target);
}

/** The runtime and script the shim runs, and the database it defaults to, or undefined when there is no shim or it is not ours. */
export function readShim(
  turnkeeperHome: string,
): (Required<Pick<ShimTarget, 'runtime' | 'script' | 'electronRunAsNode'>> & Pick<ShimTarget, 'db'>) | undefined {
  const content = readOrUndefined(shimPath(turnkeeperHome));
  if (content === undefined) return undefined;
  const quoted = String.raw`'((?:[^']|'\\'')*)'`;
  const exec = new RegExp(String.raw`^exec ${quoted} ${quoted} "\$@"$`, 'm').exec(content);
  if (exec === null || !content.startsWith('#!/bin/sh\n')) return undefined;
  const unquote = (value: string | undefined): string => (value ?? '').replace(/'\\''/g, "'");
  // The line shimContent writes for `db`, read back the same way.
  const db = new RegExp(String.raw`^export TURNKEEPER_DB="\$\{TURNKEEPER_DB:-\}"; \[ -n "\$TURNKEEPER_DB" \] \|\| TURNKEEPER_DB=${quoted}$`, 'm').exec(content);
  return {
    runtime: unquote(exec[1]),
    script: unquote(exec[2]),
    electronRunAsNode: /^export ELECTRON_RUN_AS_NODE=1$/m.test(content),
    ...(db ? { db: unquote(db[1]) } : {}),
  };
}

function readOrUndefined(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}
