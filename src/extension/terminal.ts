// A resumed agent in a VS Code terminal: a Pseudoterminal wired to the launcher's PTY, so the
// interactive agent runs under the attested launch, with its receipt committed before it starts.
import * as vscode from 'vscode';
import type { StoredCapture } from '../store/authority';
import { resumeCapture } from '../launcher/resume';
import type { RunningLaunch } from '../launcher/launch';
import type { Ctx } from './ctx';

const t = vscode.l10n.t;

export function openResumeTerminal(ctx: Ctx, capture: StoredCapture, acceptDrift: boolean): vscode.Terminal {
  const write = new vscode.EventEmitter<string>();
  const close = new vscode.EventEmitter<number | void>();
  let launch: RunningLaunch | undefined;
  const cancel = new AbortController();

  // The progress notification covers attestation and the receipt, not the agent's whole run.
  const launchUnderProgress = (dimensions: vscode.TerminalDimensions | undefined) =>
    vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: t('Turnkeeper: attesting {0} and committing the launch receipt…', capture.agent), cancellable: true },
      async (_progress, token) => {
        token.onCancellationRequested(() => cancel.abort());
        const store = await ctx.openStore();
        if (!store) throw new Error(t('the Turnkeeper store is gone'));
        return resumeCapture({
          store,
          storePath: ctx.dbPath,
          captureId: capture.id,
          env: ctx.env,
          acceptDrift,
          dryRun: false,
          setting: ctx.agentPath(capture.agent),
          mode: 'interactive',
          stdio: 'pty',
          cols: dimensions?.columns ?? 80,
          rows: dimensions?.rows ?? 24,
          signal: cancel.signal,
        });
      },
    );

  const start = async (dimensions: vscode.TerminalDimensions | undefined) => {
    let result;
    try {
      result = await launchUnderProgress(dimensions);
    } catch (error) {
      write.fire(`Turnkeeper: ${(error as Error).message}\r\n`);
      close.fire(1);
      return;
    }
    void ctx.refresh();
    if (!result.ok) {
      write.fire(`${result.guidance.replaceAll('\n', '\r\n')}\r\n`);
      void vscode.window.showWarningMessage(t('Turnkeeper did not resume {0}: [{1}]', capture.id, result.reason));
      close.fire(1);
      return;
    }
    if (result.dryRun) return;
    launch = result.launch;
    ctx.log.info(`resumed ${capture.id}: launch receipt #${launch.receipt.seq}, pid ${launch.pid}, ${result.attestation.digest}`);
    write.fire(t('Turnkeeper: launch receipt #{0} committed; {1} is running (pid {2}).', launch.receipt.seq, capture.agent, launch.pid) + '\r\n');
    launch.pty?.output.on('data', (chunk: Buffer) => write.fire(chunk.toString('utf8')));
    launch.pty?.output.on('error', () => undefined);
    const exit = await launch.exited;
    write.fire(`\r\n${t('Turnkeeper: {0} exited with {1}.', capture.agent, exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`)}\r\n`);
    void ctx.refresh();
    close.fire(exit.code ?? 1);
  };

  const pty: vscode.Pseudoterminal = {
    onDidWrite: write.event,
    onDidClose: close.event,
    open: (dimensions) => void start(dimensions),
    close: () => {
      cancel.abort();
      launch?.kill('SIGHUP');
    },
    handleInput: (data) => launch?.pty?.write(data),
    setDimensions: (dimensions) => launch?.pty?.resize(dimensions.columns, dimensions.rows),
  };
  const terminal = vscode.window.createTerminal({ name: t('Turnkeeper: {0} ({1})', capture.todo, capture.agent), pty, iconPath: new vscode.ThemeIcon('debug-continue') });
  terminal.show();
  return terminal;
}
