// The extension puts `turnkeeper` on the PATH of VS Code's terminals (spec §8 "Getting the CLI"):
// the shim under TURNKEEPER_HOME runs the extension's own dist/cli.js on the extension host's runtime,
// and the environment variable collection prepends the shim's folder.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import * as vscode from 'vscode';
import { putCliOnPath } from '../../src/extension/cliPath';
import { readShim } from '../../src/agents/shim';

const ROOT = resolve(__dirname, '../..');
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function fakeContext() {
  const prepended: [string, string][] = [];
  const collection = { description: undefined as unknown, prepend: (name: string, value: string) => prepended.push([name, value]) };
  // The repository stands in for the installed extension: its dist/cli.js is what the vsix ships.
  const context = { extensionUri: vscode.Uri.file(ROOT), environmentVariableCollection: collection } as unknown as vscode.ExtensionContext;
  return { context, prepended, collection };
}

describe('putCliOnPath', () => {
  it('writes a shim that runs this extension on this runtime, and prepends its folder to PATH', () => {
    const home = mkdtempSync(join(tmpdir(), 'tk-clipath-'));
    dirs.push(home);
    const { context, prepended, collection } = fakeContext();
    const shim = putCliOnPath(context, { TURNKEEPER_HOME: home, HOME: home });
    expect(shim).toBe(join(home, 'bin', 'turnkeeper'));
    expect(statSync(shim).mode & 0o777).toBe(0o755);
    expect(readShim(home)).toEqual({ runtime: process.execPath, script: join(ROOT, 'dist', 'cli.js'), electronRunAsNode: false });
    expect(prepended).toEqual([['PATH', `${join(home, 'bin')}${delimiter}`]]);
    expect(String(collection.description)).toContain(shim);
    // What a terminal gets: `turnkeeper` on PATH answers, from an environment without node on PATH.
    const version = execFileSync('turnkeeper', ['--version'], { env: { PATH: `${join(home, 'bin')}${delimiter}/usr/bin:/bin`, HOME: home }, encoding: 'utf8' });
    expect(version).toMatch(/^turnkeeper \d+\.\d+\.\d+/);
  });

  it('repoints an existing shim (an earlier extension or a global install) and keeps the command the agents run', () => {
    const home = mkdtempSync(join(tmpdir(), 'tk-clipath-'));
    dirs.push(home);
    const { context } = fakeContext();
    putCliOnPath(context, { TURNKEEPER_HOME: home, HOME: home, TURNKEEPER_DB: join(home, 'team.db') });
    const first = readFileSync(join(home, 'bin', 'turnkeeper'), 'utf8');
    expect(first).toContain(`TURNKEEPER_DB='${join(home, 'team.db')}'`);
    // Control: a second activation with the same settings writes the same bytes.
    putCliOnPath(context, { TURNKEEPER_HOME: home, HOME: home, TURNKEEPER_DB: join(home, 'team.db') });
    expect(readFileSync(join(home, 'bin', 'turnkeeper'), 'utf8')).toBe(first);
  });
});
