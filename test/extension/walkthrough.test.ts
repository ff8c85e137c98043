// The extension's first run: the walkthrough's steps complete on real events (the first turn when a
// lease exists, not when a view is opened), empty views offer actions, and the words the sidebar uses
// (capture, ready capture) are explained where users meet them.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import * as vscode from 'vscode';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { double } from '../support/vscode';
import { Ctx } from '../../src/extension/ctx';
import { captureNodes } from '../../src/extension/models';
import { makeWorld, payload, type World } from '../support/world';

const ROOT = resolve(__dirname, '../..');
interface Manifest {
  contributes: {
    commands: { command: string }[];
    viewsWelcome: { view: string; contents: string; when?: string }[];
    walkthroughs: { id: string; steps: { id: string; description: string; media: { markdown?: string }; completionEvents?: string[] }[] }[];
  };
}
const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Manifest;
const nls = JSON.parse(readFileSync(join(ROOT, 'package.nls.json'), 'utf8')) as Record<string, string>;
const text = (value: string) => (/^%.+%$/.test(value) ? nls[value.slice(1, -1)]! : value);
const steps = manifest.contributes.walkthroughs.find((walkthrough) => walkthrough.id === 'turnkeeper.setup')!.steps;
const ownCommands = new Set(manifest.contributes.commands.map((command) => command.command));
/** `[label](command:id…)` links of a welcome view or step description. */
const commandLinks = (markdown: string) => [...markdown.matchAll(/\]\(command:([\w.]+)/g)].map((match) => match[1]!);

describe('the walkthrough', () => {
  it('checks "Run a first turn" when a lease exists, never merely when a view opens', () => {
    const turn = steps.find((step) => step.id === 'firstTurn')!;
    expect(turn.completionEvents).toStrictEqual(['onContext:turnkeeper.hasLeases']);
    for (const step of steps) for (const event of step.completionEvents ?? []) expect(event, step.id).not.toMatch(/^onView:/);
  });

  it('checks "Trust the hook" when a hook has reported, and every step completes on something', () => {
    const trust = steps.find((step) => step.id === 'trustHooks')!;
    expect(trust.completionEvents).toStrictEqual(['onContext:turnkeeper.hookReported']);
    for (const step of steps) expect(step.completionEvents?.length ?? 0, step.id).toBeGreaterThan(0);
  });

  it('explains its words, and every page it shows exists', () => {
    for (const step of steps) if (step.media.markdown) expect(existsSync(join(ROOT, step.media.markdown)), step.media.markdown).toBe(true);
    const words = steps.find((step) => step.id === 'words')!;
    const glossary = readFileSync(join(ROOT, words.media.markdown!), 'utf8');
    for (const word of ['Todo', 'Turn', 'Lease', 'Capture', 'Ready capture', 'Receipt'])
      expect(glossary).toMatch(new RegExp(`^\\| \\*\\*${word}\\*\\* +\\|`, 'm')); // a row of the table, however padded
    expect(steps[0]!.id).toBe('words'); // before the steps that use them
  });

  it('links only commands that exist', () => {
    for (const step of steps)
      for (const id of commandLinks(text(step.description)))
        expect(ownCommands.has(id) || /^(workbench\.|turnkeeper\.\w+\.focus$)/.test(id), `${step.id}: ${id}`).toBe(true);
  });
});

describe('empty views', () => {
  it('Leases and Receipts say what will appear there and offer actions', () => {
    for (const view of ['turnkeeper.leases', 'turnkeeper.receipts']) {
      const welcomes = manifest.contributes.viewsWelcome.filter((welcome) => welcome.view === view);
      expect(welcomes.length, view).toBeGreaterThan(0);
      for (const welcome of welcomes) {
        const links = commandLinks(text(welcome.contents));
        expect(links.length, view).toBeGreaterThan(0);
        for (const id of links) expect(ownCommands.has(id) || id.startsWith('workbench.'), `${view}: ${id}`).toBe(true);
      }
    }
  });
});

describe('the Captures view explains capture and ready capture', () => {
  it('on every group', () => {
    for (const group of captureNodes({ leases: [], captures: [], silentLaunches: [] }, Date.now())) {
      expect(group.tooltip, group.id).toContain('**capture**');
      expect(group.tooltip, group.id).toContain('**ready capture**');
    }
  });
});

describe('the context keys the trust and first-turn steps wait for', () => {
  let world: World;
  let ctx: Ctx;
  beforeEach(() => {
    double.reset();
    world = makeWorld('walkthrough');
    double.configuration = { storePath: world.db };
    double.folders = [{ uri: vscode.Uri.file(world.repo), name: 'repo', index: 0 }];
    const log = vscode.window.createOutputChannel('Turnkeeper', { log: true });
    ctx = new Ctx({ extensionPath: world.root, extensionUri: vscode.Uri.file(world.root) } as unknown as vscode.ExtensionContext, log);
  });
  afterEach(() => {
    ctx.dispose();
    world.cleanup();
  });

  it('of the trust step: false until a hook of an agent reports from this repository (control: one from another repository)', async () => {
    expect(world.cli(['todo', 'add', 'Fix login', '--id', 'fix-login']).code).toBe(0);
    await ctx.refresh();
    expect(double.contexts.get('turnkeeper.hookReported')).toBe(false);
    const elsewhere = join(world.root, 'elsewhere');
    mkdirSync(elsewhere);
    execFileSync('git', ['init', '-q', elsewhere]);
    expect(
      world.cli(['hook'], { input: payload.codex({ ...world, repo: elsewhere }, 'SessionStart', 'sess-b', undefined, { source: 'startup' }), cwd: elsewhere })
        .code,
    ).toBe(0);
    const store = await world.store();
    try {
      expect((await store.listSessions()).map((session) => session.owner)).toStrictEqual(['codex:sess-b']);
    } finally {
      store.close();
    }
    await ctx.refresh();
    expect(double.contexts.get('turnkeeper.hookReported')).toBe(false);
    // A session start names no Todo: the hook ran, which is all the step asks (the agent trusts it).
    expect(world.cli(['hook'], { input: payload.codex(world, 'SessionStart', 'sess-a', undefined, { source: 'startup' }) }).code).toBe(0);
    await ctx.refresh();
    expect(double.contexts.get('turnkeeper.hookReported')).toBe(true);
  });

  it('is false with Todos but no lease, and true once a turn claims one', async () => {
    expect(world.cli(['todo', 'add', 'Fix login', '--id', 'fix-login']).code).toBe(0);
    await ctx.refresh();
    expect(double.contexts.get('turnkeeper.hasLeases')).toBe(false);
    expect(world.cli(['hook'], { input: payload.codexPrompt(world, 'sess-a', 'turn-1', '#todo:fix-login') }).code).toBe(0);
    await ctx.refresh();
    expect(double.contexts.get('turnkeeper.hasLeases')).toBe(true);
  });
});
