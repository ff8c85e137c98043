// The extension puts `turnkeeper` on the PATH of VS Code's terminals (spec §8 "Getting the CLI"):
// the shim under TURNKEEPER_HOME runs the extension's own dist/cli.js on the extension host's runtime,
// and the environment variable collection prepends the shim's folder.
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import * as vscode from 'vscode';
import { putCliOnPath } from '../../src/extension/cliPath';
import { readShim, writeShim } from '../../src/agents/shim';

const ROOT = resolve(__dirname, '../..');
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function fakeContext(extensionDir = ROOT) {
  const prepended: [string, string][] = [];
  const collection = { description: undefined as unknown, prepend: (name: string, value: string) => prepended.push([name, value]) };
  // The repository stands in for the installed extension: its dist/cli.js is what the vsix ships.
  const context = {
    extension: { id: 'turnkeeper.turnkeeper' },
    extensionUri: vscode.Uri.file(extensionDir),
    environmentVariableCollection: collection,
  } as unknown as vscode.ExtensionContext;
  return { context, prepended, collection };
}

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tk-clipath-'));
  dirs.push(dir);
  return dir;
}

/** An installed Turnkeeper whose dist/cli.js exists (its content is never run here). */
function installation(dir: string): string {
  mkdirSync(join(dir, 'dist'), { recursive: true });
  writeFileSync(join(dir, 'dist', 'cli.js'), '');
  return join(dir, 'dist', 'cli.js');
}

describe('putCliOnPath', () => {
  it('writes a shim that runs this extension on this runtime where there is none, and prepends its folder to PATH', () => {
    const home = mkdtempSync(join(tmpdir(), 'tk-clipath-'));
    dirs.push(home);
    const { context, prepended, collection } = fakeContext();
    const { shim } = putCliOnPath(context, { TURNKEEPER_HOME: home, HOME: home });
    expect(shim).toBe(join(home, 'bin', 'turnkeeper'));
    expect(statSync(shim).mode & 0o777).toBe(0o755);
    expect(readShim(home)).toEqual({ runtime: process.execPath, script: join(ROOT, 'dist', 'cli.js'), electronRunAsNode: false });
    expect(prepended).toEqual([['PATH', `${join(home, 'bin')}${delimiter}`]]);
    expect(String(collection.description)).toContain(shim);
    // What a terminal gets: `turnkeeper` on PATH answers, from an environment without node on PATH.
    const version = execFileSync('turnkeeper', ['--version'], { env: { PATH: `${join(home, 'bin')}${delimiter}/usr/bin:/bin`, HOME: home }, encoding: 'utf8' });
    expect(version).toMatch(/^turnkeeper \d+\.\d+\.\d+/);
  });

  it('repoints a shim of an earlier version of this extension, and writes the same bytes again with the same settings', () => {
    const home = tempDir();
    const extensions = tempDir();
    const earlier = installation(join(extensions, 'turnkeeper.turnkeeper-0.0.9-linux-x64'));
    writeShim(home, { runtime: process.execPath, script: earlier, home });
    const current = join(extensions, 'turnkeeper.turnkeeper-0.1.0-linux-x64');
    installation(current);
    const { context } = fakeContext(current);
    expect(putCliOnPath(context, { TURNKEEPER_HOME: home, HOME: home, TURNKEEPER_DB: join(home, 'team.db') }).runsThisExtension).toBe(true);
    expect(readShim(home)?.script).toBe(join(current, 'dist', 'cli.js'));
    const first = readFileSync(join(home, 'bin', 'turnkeeper'), 'utf8');
    expect(first).toContain(`TURNKEEPER_DB='${join(home, 'team.db')}'`);
    // Control: a second activation with the same settings writes the same bytes.
    putCliOnPath(context, { TURNKEEPER_HOME: home, HOME: home, TURNKEEPER_DB: join(home, 'team.db') });
    expect(readFileSync(join(home, 'bin', 'turnkeeper'), 'utf8')).toBe(first);
  });

  it("keeps the database default of the shim the hooks were installed with when the window names none (control: the window's own wins)", () => {
    const home = tempDir();
    const { context } = fakeContext();
    // `TURNKEEPER_DB=/x turnkeeper hooks install` from a shell, then a window opened without the variable.
    writeShim(home, { runtime: process.execPath, script: join(ROOT, 'dist', 'cli.js'), home, db: "/srv/it's/x.db" });
    putCliOnPath(context, { TURNKEEPER_HOME: home, HOME: home });
    expect(readFileSync(join(home, 'bin', 'turnkeeper'), 'utf8')).toContain(`TURNKEEPER_DB='/srv/it'\\''s/x.db'`);
    // What every hook started without the variable now reaches.
    const status = execFileSync(join(home, 'bin', 'turnkeeper'), ['status'], { cwd: home, env: { PATH: '/usr/bin:/bin', HOME: home }, encoding: 'utf8' });
    expect(status).toContain("no store at /srv/it's/x.db yet");
    putCliOnPath(context, { TURNKEEPER_HOME: home, HOME: home, TURNKEEPER_DB: join(home, 'window.db') });
    expect(readFileSync(join(home, 'bin', 'turnkeeper'), 'utf8')).toContain(`TURNKEEPER_DB='${join(home, 'window.db')}'`);
  });

  it('leaves a shim that runs another Turnkeeper installation (a global CLI) alone, and still puts it on PATH (control: a missing one is replaced)', () => {
    const home = tempDir();
    const global = installation(join(tempDir(), 'lib', 'node_modules', 'turnkeeper'));
    writeShim(home, { runtime: process.execPath, script: global, home, db: '/x.db' });
    const before = readFileSync(join(home, 'bin', 'turnkeeper'), 'utf8');
    const { context, prepended } = fakeContext();
    expect(putCliOnPath(context, { TURNKEEPER_HOME: home, HOME: home })).toMatchObject({ runsThisExtension: false, script: global });
    expect(readFileSync(join(home, 'bin', 'turnkeeper'), 'utf8')).toBe(before);
    expect(prepended).toEqual([['PATH', `${join(home, 'bin')}${delimiter}`]]);
    // Uninstalled since (its script is gone): the shim would fail every hook, so this extension takes it.
    rmSync(global);
    expect(putCliOnPath(context, { TURNKEEPER_HOME: home, HOME: home }).runsThisExtension).toBe(true);
    expect(readShim(home)?.script).toBe(join(ROOT, 'dist', 'cli.js'));
    expect(readFileSync(join(home, 'bin', 'turnkeeper'), 'utf8')).toContain("TURNKEEPER_DB='/x.db'");
  });

  it('puts no folder on PATH, and writes no shim there, that another user can write (control: a private one is put first)', () => {
    const home = tempDir();
    // A bin folder someone else made open to all (a TURNKEEPER_HOME under a shared /tmp).
    mkdirSync(join(home, 'bin'));
    chmodSync(join(home, 'bin'), 0o777);
    const { context, prepended } = fakeContext();
    expect(putCliOnPath(context, { TURNKEEPER_HOME: home, HOME: home }).unsafe).toMatch(/bin is writable by group or others \(mode 777\)/);
    expect(prepended).toEqual([]);
    expect(existsSync(join(home, 'bin', 'turnkeeper'))).toBe(false);
    // The home itself open to others: the same (its bin folder could be swapped).
    chmodSync(join(home, 'bin'), 0o755);
    chmodSync(home, 0o757);
    expect(putCliOnPath(context, { TURNKEEPER_HOME: home, HOME: home }).unsafe).toMatch(/is writable by group or others \(mode 757\)/);
    expect(prepended).toEqual([]);
    // Control: closed to others, it is written and put first.
    chmodSync(home, 0o755);
    expect(putCliOnPath(context, { TURNKEEPER_HOME: home, HOME: home }).unsafe).toBeUndefined();
    expect(prepended).toEqual([['PATH', `${join(home, 'bin')}${delimiter}`]]);
    expect(readShim(home)?.script).toBe(join(ROOT, 'dist', 'cli.js'));
  });
});
