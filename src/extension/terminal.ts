// A launched agent in a VS Code terminal: a Pseudoterminal wired to the launcher's PTY, so the
// interactive agent runs under the attested launch, with its receipt committed before it starts.
// Resume and Start differ only in what they launch; the terminal plumbing is this one function.
import * as vscode from 'vscode';
import type { Agent } from '../core/ids';
import { terminalSafe } from '../core/terminal';
import { resumeCapture, type ResumePlan } from '../launcher/resume';
import { startTodo } from '../launcher/start';
import type { RunningLaunch } from '../launcher/launch';
import type { Refusal } from '../launcher/refusals';
import { binarySetting } from '../agents/profiles';
import type { Ctx } from './ctx';

const t = vscode.l10n.t;

type Launched = { readonly ok: true; readonly launch: RunningLaunch; readonly digest: string } | Refusal;

/**
 * The terminal of each agent this window launched, by Todo: "Open Agent Terminal" on a Todo focuses
 * it. A closed terminal is no longer in `vscode.window.terminals` and is dropped when asked for.
 */
const agentTerminals = new Map<string, vscode.Terminal>();

/** Shows the terminal this window launched the Todo's agent in; false when it has none (started elsewhere, or closed). */
export function focusAgentTerminal(todo: string): boolean {
  const terminal = agentTerminals.get(todo);
  if (!terminal || !vscode.window.terminals.includes(terminal)) {
    agentTerminals.delete(todo);
    return false;
  }
  terminal.show(false);
  return true;
}

interface TerminalLaunch {
  readonly agent: Agent;
  /** The Todo the agent works on: its terminal is found by it (focusAgentTerminal). */
  readonly todo: string;
  readonly name: string;
  readonly icon: string;
  /** What the log and the refusal message call this launch: a capture id, or a Todo id. */
  readonly subject: string;
  readonly refusedMessage: (reason: string) => string;
  readonly launch: (dimensions: vscode.TerminalDimensions | undefined, signal: AbortSignal) => Promise<Launched>;
}

function openLaunchTerminal(ctx: Ctx, spec: TerminalLaunch): vscode.Terminal {
  const write = new vscode.EventEmitter<string>();
  const close = new vscode.EventEmitter<number | void>();
  let launch: RunningLaunch | undefined;
  let refused = false;
  const cancel = new AbortController();

  // The progress notification covers attestation and the receipt, not the agent's whole run.
  const launchUnderProgress = (dimensions: vscode.TerminalDimensions | undefined) =>
    vscode.window.withProgress(
      {
        location: vscode.ProgressLocation.Notification,
        title: t('Turnkeeper: attesting {0} and committing the launch receipt…', spec.agent),
        cancellable: true,
      },
      async (_progress, token) => {
        token.onCancellationRequested(() => cancel.abort());
        return spec.launch(dimensions, cancel.signal);
      },
    );

  // Turnkeeper's own lines carry stored text (a holder's checkout path, a shared store's facts, an
  // error naming a path): shown escaped, as the CLI shows it (src/core/terminal.ts). The agent's own
  // output is its terminal and passes as it is.
  const say = (text: string) => write.fire(terminalSafe(text).replaceAll('\n', '\r\n'));

  const start = async (dimensions: vscode.TerminalDimensions | undefined) => {
    let result: Launched;
    try {
      result = await launchUnderProgress(dimensions);
    } catch (error) {
      say(`Turnkeeper: ${(error as Error).message}\n`);
      close.fire(1);
      return;
    }
    void ctx.refresh();
    if (!result.ok) {
      // The terminal stays, with the whole guidance, until a key closes it: a refusal is not a
      // crash ("terminal process failed to launch"), and the person needs to read it.
      say(`${result.guidance}\n\n${t('Press any key to close this terminal.')}\n`);
      refused = true;
      void showRefusal(spec, result);
      return;
    }
    launch = result.launch;
    ctx.log.info(`launched ${spec.agent} for ${spec.subject}: launch receipt #${launch.receipt.seq}, pid ${launch.pid}, ${result.digest}`);
    say(t('Turnkeeper: launch receipt #{0} committed; {1} is running (pid {2}).', launch.receipt.seq, spec.agent, launch.pid) + '\n');
    // A full-screen agent (Codex's TUI) covers that line at once: the person sees it here too.
    vscode.window.setStatusBarMessage(t('$(check) Turnkeeper: launch receipt #{0} committed before {1} ran', launch.receipt.seq, spec.agent), 15_000);
    launch.pty?.output.on('data', (chunk: Buffer) => write.fire(chunk.toString('utf8')));
    launch.pty?.output.on('error', () => undefined);
    const exit = await launch.exited;
    say(`\n${t('Turnkeeper: {0} exited with {1}.', spec.agent, exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`)}\n`);
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
    handleInput: (data) => {
      if (refused) return close.fire();
      launch?.pty?.write(data);
    },
    setDimensions: (dimensions) => launch?.pty?.resize(dimensions.columns, dimensions.rows),
  };
  const terminal = vscode.window.createTerminal({ name: spec.name, pty, iconPath: new vscode.ThemeIcon(spec.icon) });
  agentTerminals.set(spec.todo, terminal);
  terminal.show();
  return terminal;
}

/**
 * A refused launch as a notification a person can act on: the reason's first sentence, not a bare
 * code, and one action: the agent's path setting when its executable was not found, else the
 * guidance in full.
 */
async function showRefusal(spec: TerminalLaunch, refusal: Refusal): Promise<void> {
  const sentence = refusal.guidance.replace(/^Turnkeeper \[[a-z_]+\]:\s*/, '').split(/(?<=[.:])\s/)[0] ?? refusal.guidance;
  const openSetting = t('Open Setting');
  const showGuidance = t('Show Guidance');
  const action = refusal.reason === 'agent_not_found' ? openSetting : showGuidance;
  const picked = await vscode.window.showWarningMessage(`${spec.refusedMessage(refusal.reason)} ${sentence}`, { detail: refusal.guidance }, action);
  if (picked === openSetting) await vscode.commands.executeCommand('workbench.action.openSettings', binarySetting(spec.agent));
  if (picked === showGuidance)
    await vscode.window.showTextDocument(await vscode.workspace.openTextDocument({ content: refusal.guidance, language: 'markdown' }));
}

/** What a resume and a start from a terminal share: the store, the environment, the agent's path setting, the PTY. */
async function terminalLaunchOptions(ctx: Ctx, agent: Agent, dimensions: vscode.TerminalDimensions | undefined, signal: AbortSignal) {
  return {
    store: await ctx.requireStore(),
    storePath: ctx.dbPath,
    // The agent runs in the editor's terminal, an xterm.js: say so, as the editor's own terminals do,
    // whatever TERM the extension host was started with (none, from a desktop launcher).
    env: { ...ctx.env, TERM: 'xterm-256color', COLORTERM: 'truecolor' },
    setting: ctx.agentPath(agent),
    mode: 'interactive',
    stdio: 'pty',
    cols: dimensions?.columns ?? 80,
    rows: dimensions?.rows ?? 24,
    signal,
  } as const;
}

/** "Resume Captured Turn" on a plan the command checked (and whose drift, if any, the person accepted). */
export function openResumeTerminal(ctx: Ctx, plan: ResumePlan, recreatedWorktree = false): vscode.Terminal {
  const { capture } = plan;
  return openLaunchTerminal(ctx, {
    agent: capture.agent,
    todo: capture.todo,
    name: t('Turnkeeper: {0} ({1})', capture.todo, capture.agent),
    icon: 'debug-continue',
    subject: capture.id,
    refusedMessage: (reason) => t('Turnkeeper did not resume {0}: [{1}]', capture.id, reason),
    launch: async (dimensions, signal) => {
      const result = await resumeCapture({
        ...(await terminalLaunchOptions(ctx, capture.agent, dimensions, signal)),
        captureId: capture.id,
        acceptDrift: plan.drift !== undefined,
        dryRun: false,
        plan,
        recreatedWorktree,
      });
      if (!result.ok) return result;
      if (result.dryRun) throw new Error('unexpected dry run');
      return { ok: true, launch: result.launch, digest: result.attestation.digest };
    },
  });
}

/** "Start Turn on Todo": a new interactive session of `agent` in `checkout`, whose first prompt claims `todo`. */
export function openStartTerminal(
  ctx: Ctx,
  todo: string,
  agent: Agent,
  checkout: string,
  worktree?: { readonly branch: string; readonly created: boolean },
): vscode.Terminal {
  return openLaunchTerminal(ctx, {
    agent,
    todo,
    name: t('Turnkeeper: {0} ({1})', todo, agent),
    icon: 'play',
    subject: todo,
    refusedMessage: (reason) => t('Turnkeeper did not start {0}: [{1}]', todo, reason),
    launch: async (dimensions, signal) => {
      const result = await startTodo({ ...(await terminalLaunchOptions(ctx, agent, dimensions, signal)), todo, agent, cwd: checkout, worktree });
      if (!result.ok) return result;
      ctx.log.info(`started ${agent} on ${todo}: turn ${result.turn}, launch ${result.launchId}`);
      return { ok: true, launch: result.launch, digest: result.attestation.digest };
    },
  });
}
