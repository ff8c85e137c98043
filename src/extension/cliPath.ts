// The `turnkeeper` command in VS Code's terminals (spec §8 "Getting the CLI"): at activation the
// extension prepends the folder of the stable shim `$TURNKEEPER_HOME/bin/turnkeeper` to PATH through
// the environment variable collection, and (re)writes the shim to run this extension's own dist/cli.js
// on the extension host's runtime (process.execPath, ELECTRON_RUN_AS_NODE=1 under Electron) when the
// shim is missing, stale or this extension's. So the terminals, the hooks and the extension run one
// Turnkeeper with the native modules of the .vsix, and an extension update repoints the shim while
// every agent's hook command stays byte-identical.
//
// Every hook on the machine runs this shim, so activation never takes it from another installation
// that works (a global CLI, another editor's extension) and never drops the database default it
// carries: only Install Agent Hooks, which the user asks for, does that (docs/decisions.md, "The
// extension").
//
// The shim's folder goes first on every terminal's PATH, so a folder another user can write (a
// TURNKEEPER_HOME under a shared /tmp that someone else made first) would let them plant `git` or `ls`
// for every terminal: then nothing is written there and PATH is left as it is.
import * as vscode from 'vscode';
import { existsSync, statSync } from 'node:fs';
import { basename, delimiter, dirname } from 'node:path';
import { readShim, shimPath, writeShim } from '../agents/shim';
import { turnkeeperHome, type Env } from '../store/location';

export interface CliOnPath {
  /** The shim's path; its folder is on the PATH of new terminals. */
  readonly shim: string;
  /** Whether the shim now runs this extension (false: another installation's shim was kept). */
  readonly runsThisExtension: boolean;
  /** What the shim runs. */
  readonly script: string;
  /** Why the shim's folder was neither written nor put on PATH (another user can write it), when so. */
  readonly unsafe?: string;
}

/** Puts the shim's folder first on the PATH of new terminals, and points the shim here when it may. */
export function putCliOnPath(context: vscode.ExtensionContext, env: Env): CliOnPath {
  const home = turnkeeperHome(env);
  const shim = shimPath(home);
  const script = vscode.Uri.joinPath(context.extensionUri, 'dist', 'cli.js').fsPath;
  const unsafe = unsafeFolder(home) ?? unsafeFolder(dirname(shim));
  if (unsafe) return { shim, runsThisExtension: false, script, unsafe };
  const current = readShim(home);
  const runsThisExtension =
    current === undefined || !existsSync(current.runtime) || !existsSync(current.script) || isThisExtension(current.script, script, context);
  if (runsThisExtension) {
    writeShim(home, {
      runtime: process.execPath,
      script,
      electronRunAsNode: process.versions.electron !== undefined,
      home,
      // The window's database when it names one (TURNKEEPER_DB, turnkeeper.storePath), else the one the
      // hooks were installed for: a window started without the variable must not move every hook.
      db: env.TURNKEEPER_DB ?? current?.db,
    });
  }
  const collection = context.environmentVariableCollection;
  collection.description = vscode.l10n.t('Puts the turnkeeper command on PATH ({0})', shim);
  // Terminals opened before activation keep their environment; VS Code offers to relaunch them.
  collection.prepend('PATH', `${dirname(shim)}${delimiter}`);
  return { shim, runsThisExtension, script: runsThisExtension ? script : current.script };
}

/** Why `dir` is no folder for PATH: not a directory, another user's, or writable by group or others. Missing is fine (writeShim creates it 0700). */
function unsafeFolder(dir: string): string | undefined {
  const uid = process.geteuid?.();
  const stat = statSync(dir, { throwIfNoEntry: false });
  // Windows has no owner or mode bits to read here.
  if (uid === undefined || stat === undefined) return undefined;
  if (!stat.isDirectory()) return `${dir} is not a directory`;
  if (stat.uid !== uid) return `${dir} is owned by uid ${stat.uid}, not by this user`;
  if ((stat.mode & 0o022) !== 0) return `${dir} is writable by group or others (mode ${(stat.mode & 0o777).toString(8)}); chmod go-w it`;
  return undefined;
}

/**
 * The shim's script is this extension's, or another version of it in the same extensions folder
 * (`<extensions>/<publisher>.<name>-<version>[-<platform>]/dist/cli.js`): an update or a downgrade,
 * which the running version takes over.
 */
function isThisExtension(shimScript: string, ownScript: string, context: vscode.ExtensionContext): boolean {
  if (shimScript === ownScript) return true;
  const own = dirname(dirname(ownScript));
  const other = dirname(dirname(shimScript));
  const id = context.extension?.id.toLowerCase();
  return id !== undefined && dirname(other) === dirname(own) && basename(other).toLowerCase().startsWith(`${id}-`);
}
