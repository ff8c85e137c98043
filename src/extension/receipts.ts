// "Turnkeeper: Export Receipts…": the bundle of `turnkeeper receipts export` (docs/receipts.md,
// "Export and offline verification"), written where the user chooses in a save dialog.
import * as vscode from 'vscode';
import { join } from 'node:path';
import { writeFileAtomicStreaming } from '../files/atomicFile';
import { exportBundle, ExportRefused } from '../ledger/bundle';
import type { Ctx } from './ctx';

const t = vscode.l10n.t;

export async function exportReceipts(ctx: Ctx): Promise<void> {
  const store = await ctx.openStore();
  if (!store) {
    void vscode.window.showInformationMessage(t('No Turnkeeper store yet: nothing to export.'));
    return;
  }
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const target = await vscode.window.showSaveDialog({
    title: t('Export Receipts'),
    saveLabel: t('Export'),
    filters: { [t('Turnkeeper receipt bundle')]: ['tkb'] },
    ...(folder ? { defaultUri: vscode.Uri.file(join(folder, 'turnkeeper-receipts.tkb')) } : {}),
  });
  if (!target) return;
  // Written beside the chosen file and renamed over it only once the bundle is complete: a refused or
  // failed export leaves an existing bundle of that name as it was.
  let result: Awaited<ReturnType<typeof exportBundle>> | undefined;
  let failure: unknown;
  try {
    result = await writeFileAtomicStreaming(target.fsPath, 0o644, (write) => exportBundle(store, ctx.goal ?? '', 1, write));
  } catch (error) {
    failure = error;
  }
  await ctx.refresh();
  if (result) {
    void vscode.window.showInformationMessage(
      t(
        'Exported receipts {0}–{1} to {2}, signed by {3}. Anyone can check it: turnkeeper verify --bundle <file> --key <public key>.',
        result.from,
        result.to,
        target.fsPath,
        result.checkpoint.key,
      ),
    );
    return;
  }
  if (!(failure instanceof ExportRefused)) throw failure;
  const first = failure.report.breaks[0]!;
  void vscode.window.showErrorMessage(
    t('Not exported: the receipt chain is broken at receipt #{0} ({1}); nothing is signed over a broken chain.', first.seq, first.kind),
  );
}
