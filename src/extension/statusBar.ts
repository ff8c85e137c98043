// The status bar item: active leases, and a warning when a launched agent's hooks never fired or
// the receipt chain is broken.
import * as vscode from 'vscode';
import type { Ctx } from './ctx';
import { LIVE_WORDS } from './models';

const t = vscode.l10n.t;

export function createStatusBar(ctx: Ctx): vscode.Disposable {
  const item = vscode.window.createStatusBarItem('turnkeeper.status', vscode.StatusBarAlignment.Left, 20);
  item.name = t('Turnkeeper');
  item.command = 'workbench.view.extension.turnkeeper';
  const render = () => {
    // The authority is named when it is not this machine's own file (spec §9): `team: host:port/db`,
    // as the last refresh selected it (the status bar reads no config.json of its own).
    const team = ctx.authorityLabel;
    const active = ctx.activeLeases;
    // The count is read from the window's start (docs/decisions.md); until that first read, no number
    // rather than a wrong one.
    if (active === undefined) {
      item.text = `$(lock)${team ? ` · ${team}` : ''}`;
      item.tooltip = t('Turnkeeper: reading the store');
      item.show();
      return;
    }
    // Before a view is shown only the count is read: the launches and the chain wait for the views.
    if (!ctx.snapshotRead) {
      item.text = `$(lock) ${active}${team ? ` · ${team}` : ''}`;
      item.tooltip = [
        t('Turnkeeper: {0} active leases', active),
        ...(team ? [t('authority: {0}', team)] : []),
        t('open the Turnkeeper view to check launches and the receipt chain'),
      ].join('\n');
      item.backgroundColor = undefined;
      item.show();
      return;
    }
    const silent = ctx.snapshot.silentLaunches.length;
    const broken = ctx.chainReport && !ctx.chainReport.ok;
    // What needs the person: agents waiting for input, and agents that crashed mid-turn (spec §9 "Live status").
    const live = ctx.snapshot.leases.filter((lease) => lease.status === 'active' && lease.live);
    const count = (state: string) => live.filter((lease) => lease.live!.state === state).length;
    const attention = [count('waiting') > 0 ? `$(bell) ${count('waiting')}` : '', count('crashed') > 0 ? `$(error) ${count('crashed')}` : ''].filter(Boolean);
    item.text = `$(${broken || silent > 0 ? 'warning' : 'lock'}) ${active}${attention.length ? ` ${attention.join(' ')}` : ''}${team ? ` · ${team}` : ''}`;
    item.tooltip = [
      t('Turnkeeper: {0} active leases', active),
      ...live.map((lease) => t('{0}: {1} since {2}', lease.todo, LIVE_WORDS[lease.live!.state], lease.live!.since)),
      ...(team ? [t('authority: {0}', team)] : []),
      ...(ctx.feedMode?.kind === 'listen' ? [t('changes: live (LISTEN/NOTIFY)')] : []),
      ...(ctx.feedMode?.kind === 'polling' ? [t('changes: polled every {0} s ({1})', ctx.feedMode.everyMs / 1000, ctx.feedMode.reason)] : []),
      ...(silent > 0 ? [t('{0} launched agents never fired a hook (run Turnkeeper: Doctor)', silent)] : []),
      ...(broken ? [t('the receipt chain is broken (run Turnkeeper: Verify Receipt Chain)')] : []),
    ].join('\n');
    item.backgroundColor = broken || silent > 0 ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
    item.show();
  };
  render();
  const subscription = ctx.onDidChangeSnapshot(render);
  return vscode.Disposable.from(item, subscription);
}
