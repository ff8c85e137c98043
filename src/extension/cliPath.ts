// The `turnkeeper` command in VS Code's terminals (spec §8 "Getting the CLI"): at activation the
// extension (re)writes the stable shim `$TURNKEEPER_HOME/bin/turnkeeper` to run this extension's own
// dist/cli.js on the extension host's runtime (process.execPath, ELECTRON_RUN_AS_NODE=1 under
// Electron), and prepends its folder to PATH through the environment variable collection. So the
// terminals, the hooks and the extension all run one Turnkeeper with the native modules of the .vsix,
// and an extension update repoints the shim while every agent's hook command stays byte-identical.
import * as vscode from 'vscode';
import { delimiter, dirname } from 'node:path';
import { shimPath, writeShim } from '../agents/shim';
import { turnkeeperHome, type Env } from '../store/location';

/** Writes the shim and puts its folder first on the PATH of new terminals; returns the shim's path. */
export function putCliOnPath(context: vscode.ExtensionContext, env: Env): string {
  const home = turnkeeperHome(env);
  writeShim(home, {
    runtime: process.execPath,
    script: vscode.Uri.joinPath(context.extensionUri, 'dist', 'cli.js').fsPath,
    electronRunAsNode: process.versions.electron !== undefined,
    home,
    db: env.TURNKEEPER_DB,
  });
  const shim = shimPath(home);
  const collection = context.environmentVariableCollection;
  collection.description = vscode.l10n.t('Puts the turnkeeper command on PATH ({0})', shim);
  // Terminals opened before activation keep their environment; VS Code offers to relaunch them.
  collection.prepend('PATH', `${dirname(shim)}${delimiter}`);
  return shim;
}
