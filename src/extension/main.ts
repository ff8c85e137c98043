// Activation: register everything, open nothing. The store is opened asynchronously after
// activation: the status bar reads its count of active leases, and only the views and commands read more.
import * as vscode from 'vscode';
import { putCliOnPath, type CliOnPath } from './cliPath';
import { COMMANDS, registerCommands } from './commands';
import { Ctx } from './ctx';
import { SCHEME, TurnkeeperDocuments } from './documents';
import { createStatusBar } from './statusBar';
import { TurnkeeperTree } from './views';

const MIN_NAPI = 8;

export function activate(context: vscode.ExtensionContext): void {
  const started = performance.now();
  const log = vscode.window.createOutputChannel('Turnkeeper', { log: true });
  context.subscriptions.push(log);
  const napi = Number(process.versions.napi ?? 0);
  if (napi < MIN_NAPI) {
    // Fail loudly and early instead of leaving views that can never load.
    const message = vscode.l10n.t('Turnkeeper needs Node-API {0} or newer; this editor provides {1}. Update VS Code.', MIN_NAPI, napi);
    log.error(message);
    void vscode.window.showErrorMessage(message);
    return;
  }
  const ctx = new Ctx(context, log);
  context.subscriptions.push(ctx);
  for (const [id, model] of [
    ['turnkeeper.todos', ctx.todos],
    ['turnkeeper.captures', ctx.captures],
    ['turnkeeper.leases', ctx.leases],
    ['turnkeeper.receipts', ctx.receipts],
  ] as const) {
    const provider = new TurnkeeperTree(ctx.onDidChange, model);
    const view = vscode.window.createTreeView(id, { treeDataProvider: provider, showCollapseAll: id === 'turnkeeper.captures' });
    // Nothing but the status bar's count is read until a view is shown: activation stays free of database work.
    view.onDidChangeVisibility((event) => event.visible && ctx.viewShown(id));
    if (view.visible) ctx.viewShown(id);
    context.subscriptions.push(provider, view);
  }
  context.subscriptions.push(
    ...registerCommands(ctx),
    vscode.workspace.registerTextDocumentContentProvider(SCHEME, new TurnkeeperDocuments(ctx)),
    createStatusBar(ctx),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (!event.affectsConfiguration('turnkeeper')) return;
      safely(log, () => ctx.writeHookSettings());
      safely(log, () => logCli(log, putCliOnPath(context, ctx.env)));
      ctx.settingsChanged();
    }),
  );
  void vscode.commands.executeCommand('setContext', 'turnkeeper.trusted', vscode.workspace.isTrusted);
  context.subscriptions.push(vscode.workspace.onDidGrantWorkspaceTrust(() => void vscode.commands.executeCommand('setContext', 'turnkeeper.trusted', true)));
  // Off the activation path: settings for the hooks, the shim, the native modules' health, and the status
  // bar's count of active leases (one read, then one on each change). The rest of the store is first read
  // when a view becomes visible (ctx.viewShown).
  setTimeout(() => {
    safely(log, () => ctx.writeHookSettings());
    // The `turnkeeper` command in VS Code's terminals: the shim, pointed at this extension when it may (cliPath.ts).
    safely(log, () => logCli(log, putCliOnPath(context, ctx.env)));
    void checkNativeModules(log);
    ctx.readStatus();
  }, 0);
  log.info(
    `activated in ${(performance.now() - started).toFixed(1)} ms (${Object.keys(COMMANDS).length} commands, napi ${napi}, ${process.versions.electron ? `Electron ${process.versions.electron}` : `Node ${process.versions.node}`})`,
  );
}

export function deactivate(): void {
  // Disposables close the store and the watcher.
}

function logCli(log: vscode.LogOutputChannel, cli: CliOnPath): void {
  if (cli.unsafe) {
    log.warn(`turnkeeper command for terminals: not put on PATH, ${cli.unsafe}`);
    return;
  }
  log.info(
    cli.runsThisExtension
      ? `turnkeeper command for terminals: ${cli.shim}`
      : `turnkeeper command for terminals: ${cli.shim}, kept as it is: it runs another Turnkeeper installation (${cli.script}); Install Agent Hooks points it at this extension`,
  );
}

function safely(log: vscode.LogOutputChannel, work: () => void): void {
  try {
    work();
  } catch (error) {
    log.warn((error as Error).message);
  }
}

/** Loads both native modules once and says clearly which one does not load, and on what runtime. */
async function checkNativeModules(log: vscode.LogOutputChannel): Promise<void> {
  const problems: string[] = [];
  try {
    await import('better-sqlite3');
  } catch (error) {
    problems.push(`better-sqlite3: ${(error as Error).message}`);
  }
  try {
    const { hasLaunchBackend, launchBackend } = await import('../launcher/backends');
    // Without a launch backend (spec §6 "Platforms") there is no addon to load, and that is no error:
    // Resume and Start refuse with [unsupported_platform]; hooks, leases and receipts work.
    if (hasLaunchBackend()) launchBackend().native();
    else log.info(`no launch backend on ${process.platform}-${process.arch}: agents are not launched from here (unsupported_platform)`);
  } catch (error) {
    problems.push(`launcher: ${(error as Error).message}`);
  }
  if (problems.length === 0) return;
  const message = vscode.l10n.t('Turnkeeper cannot load its native modules on {0}: {1}', `${process.platform}-${process.arch}`, problems.join('; '));
  log.error(message);
  void vscode.commands.executeCommand('setContext', 'turnkeeper.nativeError', true);
  void vscode.window.showErrorMessage(message);
}
