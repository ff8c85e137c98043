// The extension's shared state (src/extension/ctx.ts) against real stores and real hook configs,
// with the editor API played by test/support/vscode.ts.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import * as vscode from 'vscode';
import { double } from '../support/vscode';
import { Ctx } from '../../src/extension/ctx';
import { makeWorld, type World } from '../support/world';

let world: World;
let ctx: Ctx | undefined;
const saved = { HOME: process.env.HOME, TURNKEEPER_HOME: process.env.TURNKEEPER_HOME };

function newCtx(): Ctx {
  ctx?.dispose();
  const log = vscode.window.createOutputChannel('Turnkeeper', { log: true }) as unknown as vscode.LogOutputChannel;
  ctx = new Ctx({ extensionPath: world.root, extensionUri: vscode.Uri.file(world.root) } as unknown as vscode.ExtensionContext, log);
  return ctx;
}

beforeEach(() => {
  double.reset();
  world = makeWorld('ext-ctx');
  // The extension host's environment is its process's: the hooks' configs live in this world's homes.
  process.env.HOME = world.env.HOME;
  process.env.TURNKEEPER_HOME = world.home;
  double.configuration = { storePath: world.db };
  double.folders = [{ uri: vscode.Uri.file(world.repo), name: 'repo', index: 0 }];
});
afterEach(() => {
  ctx?.dispose();
  ctx = undefined;
  world.cleanup();
  for (const [key, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[key];
    else process.env[key] = value;
  }
});

describe('whether an agent has the hook (the welcome views and the walkthrough)', () => {
  it('sees hooks installed at project scope in the workspace checkout', async () => {
    expect(world.cli(['hooks', 'install', '--agent', 'claude', '--scope', 'project']).code).toBe(0);
    await newCtx().refresh();
    expect(double.contexts.get('turnkeeper.hooksInstalled')).toBe(true);
  });

  it('control: none installed, then user scope', async () => {
    await newCtx().refresh();
    expect(double.contexts.get('turnkeeper.hooksInstalled')).toBe(false);
    expect(world.cli(['hooks', 'install', '--agent', 'claude', '--scope', 'user']).code).toBe(0);
    await newCtx().refresh();
    expect(double.contexts.get('turnkeeper.hooksInstalled')).toBe(true);
  });
});
