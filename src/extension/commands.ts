// Every command of the extension, registered from one table of factories (in the manner of
// rust-analyzer's editors/code). scripts/check-commands.mjs keeps this table and package.json's
// `contributes.commands` equal.
import * as vscode from 'vscode';
import { AGENTS, isTodoId, todoIdFromTitle, type Agent } from '../core/ids';
import { byAgent } from '../agents/profiles';
import type { CaptureView, StatusSnapshot } from '../doctor/status';
import { doctorReport, installAgentHooks } from '../doctor/installation';
import { requesterOf } from '../config/settings';
import { cachedWorkspace, checkResume, driftGuidance, type ResumeCheck } from '../launcher/resume';
import { checkStart } from '../launcher/start';
import { recreateCaptureCheckout, worktreeTarget } from '../launcher/worktreeStart';
import { finishTodo } from '../launcher/finish';
import { ensureWorktree, FINISH_STRATEGIES, WorktreeError, type FinishStrategy, type TodoWorktree } from '../checkout/worktrees';
import { WorktreeConfigError } from '../config/homeConfig';
import { REASONS } from '../core/reasons';
import { TodoExistsError, type Authority } from '../store/authority';
import { openAuthority } from '../ledger/open';
import type { Ctx } from './ctx';
import { receiptUri, guidanceUri, doctorUri, RECEIPT_LANGUAGE } from './documents';
import { doctorMarkdown } from '../doctor/doctorMarkdown';
import { relativeTime, type ViewNode } from './models';
import { exportReceipts } from './receipts';
import { focusAgentTerminal, openResumeTerminal, openStartTerminal } from './terminal';
import { launchProcessState, runningProcesses } from '../launcher/liveness';

const t = vscode.l10n.t;

type Factory = (ctx: Ctx) => (...args: unknown[]) => unknown;

export const COMMANDS: Readonly<Record<string, Factory>> = {
  'turnkeeper.startTurn': (ctx) => (arg) => startTurn(ctx, todoIdOf(arg)),
  'turnkeeper.startTurnInWorktree': (ctx) => (arg) => startTurn(ctx, todoIdOf(arg), true),
  'turnkeeper.finishTodo': (ctx) => (arg) => finishTodoCommand(ctx, todoIdOf(arg)),
  'turnkeeper.resumeCapturedTurn': (ctx) => (arg) => resumeCapturedTurn(ctx, captureIdOf(arg)),
  'turnkeeper.showRecoveryGuidance': (ctx) => (arg) => showRecoveryGuidance(ctx, captureIdOf(arg)),
  'turnkeeper.releaseLease': (ctx) => (arg) => releaseLease(ctx, arg as ViewNode | undefined),
  'turnkeeper.verifyReceiptChain': (ctx) => () => verifyReceiptChain(ctx),
  'turnkeeper.exportReceipts': (ctx) => () => exportReceipts(ctx),
  'turnkeeper.installAgentHooks': (ctx) => () => installHooks(ctx),
  'turnkeeper.addTodo': (ctx) => () => addTodo(ctx),
  'turnkeeper.markTodoDone': (ctx) => (arg) => markTodoDone(ctx, todoIdOf(arg)),
  'turnkeeper.openAgentTerminal': () => (arg) => openAgentTerminal(todoIdOf(arg)),
  'turnkeeper.openReceipt': () => (arg) => openReceipt(arg),
  'turnkeeper.copyCaptureId': (ctx) => (arg) => copyCaptureId(ctx, captureIdOf(arg)),
  'turnkeeper.doctor': (ctx) => () => doctor(ctx),
  'turnkeeper.refresh': (ctx) => () => ctx.refresh(),
  'turnkeeper.loadMoreReceipts': (ctx) => () => ctx.loadMoreReceipts(),
  'turnkeeper.loadMoreCaptures': (ctx) => () => ctx.loadMoreCaptures(),
  'turnkeeper.loadMoreTodos': (ctx) => () => ctx.loadMoreTodos(),
};

export function registerCommands(ctx: Ctx): vscode.Disposable[] {
  return Object.entries(COMMANDS).map(([id, factory]) => {
    const run = factory(ctx);
    return vscode.commands.registerCommand(id, async (...args: unknown[]) => {
      try {
        return await run(...args);
      } catch (error) {
        ctx.log.error(`${id}: ${(error as Error).stack ?? String(error)}`);
        void vscode.window.showErrorMessage(t('Turnkeeper: {0}', (error as Error).message));
        return undefined;
      }
    });
  });
}

/** Commands get a capture id from a tree node (`capture/<id>`), a string, or nothing (then they ask). */
function captureIdOf(arg: unknown): string | undefined {
  if (typeof arg === 'string') return arg;
  const id = (arg as ViewNode | undefined)?.id;
  return id?.startsWith('capture/') ? id.slice('capture/'.length) : undefined;
}

/** Commands get a Todo id from a Todos view node (`todo/<goal>/<id>`), a string, or nothing (then they ask). */
/** "Open Agent Terminal" on a held Todo: the terminal this window launched its agent in. */
async function openAgentTerminal(todo: string | undefined): Promise<void> {
  if (todo === undefined || focusAgentTerminal(todo)) return;
  await vscode.window.showInformationMessage(
    t('No terminal of this window runs the agent of {0}: it was started elsewhere, or its terminal was closed. Its live state is in the Todos view.', todo),
  );
}

function todoIdOf(arg: unknown): string | undefined {
  if (typeof arg === 'string') return isTodoId(arg) ? arg : undefined;
  const id = (arg as ViewNode | undefined)?.id;
  const todo = id?.startsWith('todo/') ? id.slice(id.lastIndexOf('/') + 1) : undefined;
  return isTodoId(todo) ? todo : undefined;
}

const AGENT_NAMES: Readonly<Record<Agent, string>> = byAgent((profile) => profile.displayName);

/** A modal warning with one action besides Cancel: true when the user chose `action`. */
async function confirm(message: string, detail: string, action: string): Promise<boolean> {
  return (await vscode.window.showWarningMessage(message, { modal: true, detail }, action)) === action;
}

function requireTrust(action: string): boolean {
  if (vscode.workspace.isTrusted) return true;
  void vscode.window.showErrorMessage(
    t('Turnkeeper does not {0} in an untrusted workspace. Trust the workspace first (Workspaces: Manage Workspace Trust).', action),
  );
  return false;
}

/**
 * "Start Turn on Todo" (spec §7 "Start"): pick an open Todo of the workspace's Goal and an agent, then
 * run that agent in a terminal through the launcher; its first prompt claims the Todo. "Start Turn in
 * New Worktree" (`inWorktree`): the same in the Todo's own worktree, created (or reused) first as
 * `turnkeeper start --worktree` does (src/launcher/worktreeStart.ts).
 */
async function startTurn(ctx: Ctx, given: string | undefined, inWorktree = false): Promise<void> {
  const title = inWorktree ? t('Start Turn in New Worktree') : t('Start Turn on Todo');
  if (!requireTrust(t('launch agents'))) return;
  const workspace = ctx.workspace;
  if (!workspace) throw new Error(t('open a folder first: a Todo belongs to a workspace'));
  const store = await ctx.requireStore();
  let todo = given;
  if (!todo) {
    // The pick lists the Todos as they are now. A Todo given by the view (its inline button, its
    // context menu) needs no refresh here: redrawing the views while the agent pick opens can take the
    // focus from it, and a pick that loses focus closes (seen in code-server from the context menu).
    await ctx.refresh();
    // Open and waiting on nothing undone: a start of a waiting Todo would be refused [todo_blocked].
    const open = ctx.todoList.filter((candidate) => candidate.status === 'open' && !candidate.after?.some((dependency) => dependency.status !== 'done'));
    if (open.length === 0) {
      void vscode.window.showInformationMessage(t('No open Todo to start: add one first.'));
      return;
    }
    const holders = new Map(
      ctx.snapshot.leases.filter((lease) => lease.status === 'active' && lease.goal === workspace.id).map((lease) => [lease.todo, lease]),
    );
    const picked = await vscode.window.showQuickPick(
      open.map((candidate) => {
        const holder = holders.get(candidate.id);
        return {
          label: `${holder ? '$(lock)' : '$(circle-large-outline)'} ${candidate.id}`,
          description: candidate.title,
          detail: holder ? t('held by {0} (epoch {1})', holder.owner, holder.epoch) : undefined,
          todo: candidate.id,
        };
      }),
      { title, placeHolder: t('Pick an open Todo'), matchOnDescription: true },
    );
    if (!picked) return;
    todo = picked.todo;
  }
  // Every agent is offered, those with Turnkeeper's hooks first; the others say so (docs/decisions.md,
  // "The extension"). Picking one of them offers the install first: without its hooks the agent's
  // prompts would claim nothing, and the launch would only end as a warning that its hooks never fired.
  const installed = new Set(AGENTS.filter((name) => ctx.agentHooksInstalled(name)));
  const agent = await vscode.window.showQuickPick(
    [...AGENTS.filter((name) => installed.has(name)), ...AGENTS.filter((name) => !installed.has(name))].map((name) => ({
      label: name,
      description: installed.has(name) ? AGENT_NAMES[name] : t('{0} (hooks not installed: run Install Agent Hooks)', AGENT_NAMES[name]),
      agent: name,
    })),
    {
      title: t('{0}: {1}, which agent?', title, todo),
      ...(installed.size === 0 ? { placeHolder: t('No agent has Turnkeeper hooks yet: the one you pick gets them first') } : {}),
    },
  );
  if (!agent) return;
  if (!installed.has(agent.agent)) {
    const install = t('Install Agent Hooks');
    const detail = t("Without them {0}'s prompts claim nothing and Turnkeeper never hears from it. Install them, then start?", AGENT_NAMES[agent.agent]);
    if (!(await confirm(t('{0} has no Turnkeeper hooks', AGENT_NAMES[agent.agent]), detail, install))) return;
    if (!(await installHooks(ctx, agent.agent))) return;
  }
  // Said here, before any terminal opens; the launch checks again (and the first prompt's claim decides).
  const check = await checkStart(store, workspace, todo, agent.agent, Date.now());
  if (!check.ok) {
    void vscode.window.showWarningMessage(t('Turnkeeper cannot start {0}: [{1}]', todo, check.reason), { modal: true, detail: check.guidance });
    return;
  }
  if (!inWorktree) {
    openStartTerminal(ctx, todo, agent.agent, workspace.checkout);
    return;
  }
  let worktree: TodoWorktree;
  try {
    const target = await worktreeTarget({ env: ctx.env, cwd: workspace.checkout, todo });
    worktree = await ensureWorktree(ctx.env, workspace.checkout, target.branch, target.path);
  } catch (error) {
    if (!(error instanceof WorktreeError || error instanceof WorktreeConfigError)) throw error;
    const reason = error instanceof WorktreeError ? error.code : 'worktree_config';
    void vscode.window.showWarningMessage(t('Turnkeeper cannot start {0} in a worktree: [{1}]', todo, reason), { modal: true, detail: error.message });
    return;
  }
  ctx.log.info(`${worktree.created ? 'created' : 'reusing'} worktree ${worktree.path} on ${worktree.branch} for ${todo}`);
  openStartTerminal(ctx, todo, agent.agent, worktree.path, { branch: worktree.branch, created: worktree.created });
}

async function resumeCapturedTurn(ctx: Ctx, given: string | undefined): Promise<void> {
  if (!requireTrust(t('launch agents'))) return;
  const store = await ctx.requireStore();
  await ctx.refresh();
  let captureId = given;
  let check: ResumeCheck | undefined;
  if (!captureId) {
    // The workspace's Goal only (every Goal without a folder), and never an unbound capture.
    const goal = ctx.goal;
    const candidates = ctx.snapshot.captures.filter((capture) => capture.state !== 'unbound' && (goal === undefined || capture.goal === goal));
    if (candidates.length === 0) {
      void vscode.window.showInformationMessage(t('Nothing to resume: no captured turns yet.'));
      return;
    }
    const items = await resumePicks(store, ctx.snapshot, candidates);
    const picked = await vscode.window.showQuickPick(items, {
      title: t('Resume Captured Turn'),
      placeHolder: t('Pick an interrupted turn'),
      matchOnDescription: true,
      matchOnDetail: true,
    });
    if (!picked) return;
    captureId = picked.captureId;
    check = picked.check;
  }
  // One check (git runs included) per resume: the pick's own, else one here; the terminal launches
  // that plan, and the launch's commit re-checks the lease in its transaction.
  check ??= await checkResume(store, captureId, { acceptDrift: true });
  let recreated = false;
  if (!check.ok && check.reason === 'checkout_missing') {
    // The worktree it ran in is gone: offered back at its branch (or captured HEAD), then resumed.
    const recreate = t('Recreate Worktree');
    const answer = await vscode.window.showWarningMessage(
      t('The worktree this turn ran in is gone: {0}', check.facts.checkout ?? '?'),
      { modal: true, detail: t('Recreate it at its branch (or the commit it was captured at) and resume there?') },
      recreate,
    );
    if (answer !== recreate) return;
    try {
      recreated = (await recreateCaptureCheckout(store, captureId, ctx.env)) !== undefined;
    } catch (error) {
      if (!(error instanceof WorktreeError)) throw error;
      void vscode.window.showErrorMessage(t('Turnkeeper could not recreate the worktree: [{0}] {1}', error.code, error.message));
      return;
    }
    check = await checkResume(store, captureId, { acceptDrift: true });
  }
  if (!check.ok) {
    await showGuidanceDocument(captureId, check.guidance, check.reason);
    return;
  }
  if (check.plan.drift !== undefined) {
    const accept = t('Resume Anyway');
    const answer = await vscode.window.showWarningMessage(
      t('The workspace changed since this session left it.'),
      { modal: true, detail: driftGuidance(check.plan) },
      accept,
    );
    if (answer !== accept) return;
  }
  openResumeTerminal(ctx, check.plan, recreated);
}

interface ResumePick extends vscode.QuickPickItem {
  readonly captureId: string;
  /** The check this row was made from (drift accepted, to be asked about): undefined for a capture not held. */
  readonly check: ResumeCheck | undefined;
}

/**
 * The resume pick's rows. Only a capture whose lease is still held can resume, so only those are
 * checked (git state, transcript); a released one is marked from the snapshot, and picking it shows
 * its guidance. The captures' times come from one listing, not a read per row.
 */
async function resumePicks(store: Authority, snapshot: StatusSnapshot, candidates: readonly CaptureView[]): Promise<ResumePick[]> {
  const workspace = cachedWorkspace();
  const now = Date.now();
  const createdAt = new Map((await store.listCaptures()).map((capture) => [capture.id, capture.createdAt]));
  const leaseOf = new Map(snapshot.leases.map((lease) => [lease.capture, lease]));
  return Promise.all(
    candidates.map(async (capture): Promise<ResumePick> => {
      const lease = leaseOf.get(capture.id);
      const held = lease?.status === 'active';
      const check = held ? await checkResume(store, capture.id, { acceptDrift: true, workspace }) : undefined;
      // Not held: the refusal checkResume would give, from the snapshot (another turn holds the Todo, or none).
      const holder = held
        ? undefined
        : snapshot.leases.find((other) => other.status === 'active' && other.goal === capture.goal && other.todo === capture.todo);
      const facts = { capture: capture.id, todo: capture.todo };
      return {
        captureId: capture.id,
        check,
        label: `${check?.ok ? '$(debug-continue)' : '$(circle-slash)'} ${capture.todo}`,
        description: `${capture.agent} · ${relativeTime(createdAt.get(capture.id) ?? now, now)}${lease ? ` · epoch ${lease.epoch} ${lease.status}` : ''}`,
        detail: check?.ok
          ? t('resumable: {0}', capture.id)
          : check
            ? `[${check.reason}] ${REASONS[check.reason].explain(check.facts)}`
            : holder
              ? `[lease_moved] ${REASONS.lease_moved.explain({ ...facts, holder: holder.owner, epoch: holder.epoch })}`
              : `[capture_released] ${REASONS.capture_released.explain({ ...facts, epoch: lease?.epoch })}`,
      };
    }),
  );
}

async function showRecoveryGuidance(ctx: Ctx, given: string | undefined): Promise<void> {
  const store = await ctx.requireStore();
  let captureId = given;
  if (!captureId) {
    const picked = await vscode.window.showQuickPick(
      ctx.snapshot.captures.map((capture) => ({ label: capture.todo, description: `${capture.state} · ${capture.id}`, captureId: capture.id })),
      { title: t('Show Recovery Guidance') },
    );
    captureId = picked?.captureId;
  }
  if (!captureId) return;
  const check = await checkResume(store, captureId, { acceptDrift: false });
  if (check.ok) await showGuidanceDocument(captureId, t('Capture {0} can be resumed: run "Turnkeeper: Resume Captured Turn".', captureId));
  else await showGuidanceDocument(captureId, check.guidance, check.reason);
}

/** The guidance as a read-only document; with the refusal's code, a warning that names it too. */
async function showGuidanceDocument(captureId: string, guidance: string, code?: string): Promise<void> {
  const document = await vscode.workspace.openTextDocument(guidanceUri(captureId, guidance));
  await vscode.window.showTextDocument(document, { preview: true });
  if (code) void vscode.window.showWarningMessage(t('Turnkeeper cannot resume {0}: [{1}]', captureId, code));
}

async function releaseLease(ctx: Ctx, node: ViewNode | undefined): Promise<void> {
  const store = await ctx.requireStore();
  await ctx.refresh();
  const active = ctx.snapshot.leases.filter((lease) => lease.status === 'active');
  let lease = active.find((candidate) => node?.id === `lease/${candidate.goal}/${candidate.todo}/${candidate.epoch}`);
  if (!lease) {
    const picked = await vscode.window.showQuickPick(
      active.map((candidate) => ({ label: candidate.todo, description: `${candidate.owner} · epoch ${candidate.epoch}`, lease: candidate })),
      { title: t('Release Lease') },
    );
    lease = picked?.lease;
  }
  if (!lease) return;
  const confirmed = await confirm(
    t('Release {0}, held by {1} (epoch {2})?', lease.todo, lease.owner, lease.epoch),
    t('A released lease never comes back: its capture stays released, and that agent is fenced from further writes.'),
    t('Release'),
  );
  if (!confirmed) return;
  const reason = await vscode.window.showInputBox({
    title: t('Why is this lease released?'),
    prompt: t('The reason goes into the receipt.'),
    validateInput: (value) => (value.trim() ? undefined : t('A reason is required.')),
  });
  if (!reason) return;
  const result = await store.release(
    { goal: lease.goal, todo: lease.todo, identifiedBy: 'force', requester: requesterOf(process.env), force: true, reason: reason.trim() },
    Date.now(),
  );
  await ctx.refresh();
  if (result.kind === 'released') void vscode.window.showInformationMessage(t('Released {0} (epoch {1}).', lease.todo, lease.epoch));
  else void vscode.window.showWarningMessage(t('Not released: {0}', result.why));
}

async function verifyReceiptChain(ctx: Ctx): Promise<void> {
  const report = await ctx.verifyChain();
  if (!report) {
    void vscode.window.showInformationMessage(t('No Turnkeeper store yet: nothing to verify.'));
    return;
  }
  if (report.ok) {
    void vscode.window.showInformationMessage(t('Receipt chain verifies: {0} receipts.', report.verified));
    return;
  }
  const first = report.breaks[0]!;
  ctx.log.warn(`receipt chain breaks: ${report.breaks.map((item) => `${item.seq}:${item.kind}`).join(', ')}`);
  void vscode.window.showErrorMessage(t('Receipt chain broken at receipt #{0}: {1} ({2} breaks in all).', first.seq, first.kind, report.breaks.length));
}

/** Install Agent Hooks: asks for the agent (unless given: Start Turn's pick) and the scope; true when installed. */
async function installHooks(ctx: Ctx, given?: Agent): Promise<boolean> {
  if (!requireTrust(t('install agent hooks'))) return false;
  const agent = given
    ? { label: given }
    : await vscode.window.showQuickPick(
        AGENTS.map((name) => ({ label: name, description: AGENT_NAMES[name] })),
        { title: t('Install Agent Hooks: which agent?') },
      );
  if (!agent) return false;
  const projectRoot = ctx.checkout;
  const scopes: { label: string; description: string; scope: 'user' | 'project' }[] = [{ label: t('User'), description: t('every repository'), scope: 'user' }];
  if (projectRoot) scopes.push({ label: t('Project'), description: projectRoot, scope: 'project' });
  const scope = await vscode.window.showQuickPick(scopes, { title: t('Install Agent Hooks: where?') });
  if (!scope) return false;
  // The hook runs on this extension host's own runtime, so every process loads the modules shipped here.
  const result = installAgentHooks(
    { agent: agent.label, scope: scope.scope, env: ctx.env, projectRoot: projectRoot ?? ctx.extension.extensionPath },
    {
      runtime: process.execPath,
      script: vscode.Uri.joinPath(ctx.extension.extensionUri, 'dist', 'cli.js').fsPath,
      electronRunAsNode: process.versions.electron !== undefined,
    },
  );
  ctx.log.info(`hooks installed for ${agent.label} in ${result.path} (${result.command})`);
  ctx.hooksInstalled = true;
  void vscode.commands.executeCommand('setContext', 'turnkeeper.hooksInstalled', true);
  void vscode.window.showInformationMessage(t('{0} hooks installed in {1}. {2}', agent.label, result.path, result.trustHint));
  return true;
}

async function addTodo(ctx: Ctx): Promise<void> {
  const goal = ctx.goal;
  if (!goal) throw new Error(t('open a folder first: a Todo belongs to a workspace'));
  const title = await vscode.window.showInputBox({
    title: t('Add Todo'),
    prompt: t('Title'),
    validateInput: (value) => (value.trim() ? undefined : t('A title is required.')),
  });
  if (!title) return;
  const id = await vscode.window.showInputBox({
    title: t('Add Todo'),
    prompt: t('Id (agents name it as #todo:<id>)'),
    value: todoIdFromTitle(title),
    validateInput: (value) => (isTodoId(value) ? undefined : t('3–64 characters: a-z, 0-9, "_" and "-", starting with a letter or digit.')),
  });
  if (!id) return;
  const body = (await vscode.window.showInputBox({ title: t('Add Todo'), prompt: t('Details for the agent (optional)') })) ?? '';
  const store = (await ctx.openStore(true))!;
  try {
    await store.addTodo({ goal, id, title: title.trim(), body }, Date.now());
  } catch (error) {
    if (error instanceof TodoExistsError) throw new Error(t('Todo {0} already exists', id));
    throw error;
  }
  await ctx.refresh();
  void vscode.window.showInformationMessage(t('Added Todo {0}: prompt an agent with #todo:{0}', id));
}

async function markTodoDone(ctx: Ctx, given: string | undefined): Promise<void> {
  const store = await ctx.requireStore();
  const goal = ctx.goal;
  const todos = (await store.listTodos(goal)).filter((todo) => todo.status === 'open');
  // From the Todos view: that Todo (still open); from the palette: pick one.
  const picked = given
    ? todos.find((todo) => todo.id === given)
    : (
        await vscode.window.showQuickPick(
          todos.map((todo) => ({ label: todo.id, description: todo.title, todo })),
          { title: t('Mark Todo Done') },
        )
      )?.todo;
  if (!picked) return;
  const holder = (await store.listLeases()).find((lease) => lease.goal === picked.goal && lease.todo === picked.id && lease.status === 'active');
  // Marking a held Todo done releases someone else's lease: forced, with a reason, as Release Lease.
  let reason: string | undefined;
  if (holder) {
    const confirmed = await confirm(
      t('{0} is held by {1} (epoch {2}). Mark it done?', picked.id, holder.owner, holder.epoch),
      t('Marking it done releases the lease: that agent is fenced from further writes.'),
      t('Mark Done'),
    );
    if (!confirmed) return;
    reason = await vscode.window.showInputBox({
      title: t('Why is this lease released?'),
      prompt: t('The reason goes into the receipt.'),
      validateInput: (value) => (value.trim() ? undefined : t('A reason is required.')),
    });
    if (!reason) return;
  }
  const result = await store.setTodoStatus(picked.goal, picked.id, 'done', Date.now(), {
    identifiedBy: reason === undefined ? 'unidentified' : 'force',
    requester: requesterOf(process.env),
    force: reason !== undefined,
    reason: reason?.trim(),
  });
  await ctx.refresh();
  if (result?.kind === 'refused')
    void vscode.window.showWarningMessage(t('Not done: {0} is held by {1} (epoch {2})', picked.id, result.lease.owner, result.lease.epoch));
  else if (result?.kind === 'already_done') void vscode.window.showInformationMessage(t('Todo {0} was already done', picked.id));
  else void vscode.window.showInformationMessage(t('Todo {0} is done{1}', picked.id, result?.released ? t('; its lease is released') : ''));
}

/**
 * "Finish Todo…" (spec §7 "Finish"): pick a Todo, how to merge its branch back (merge, squash, rebase,
 * or keep the branch unmerged) and whether to remove its worktree, then finishTodo as `todo done
 * --merge…` does. A held Todo is finished as Mark Todo Done releases it: confirmed, with a reason.
 */
async function finishTodoCommand(ctx: Ctx, given: string | undefined): Promise<void> {
  if (!requireTrust(t('merge branches'))) return;
  const workspace = ctx.workspace;
  if (!workspace) throw new Error(t('open a folder first: a Todo belongs to a workspace'));
  const store = await ctx.requireStore();
  const todos = (await store.listTodos(workspace.id)).filter((todo) => todo.status !== 'done');
  const picked = given
    ? todos.find((todo) => todo.id === given)
    : (
        await vscode.window.showQuickPick(
          todos.map((todo) => ({ label: todo.id, description: todo.title, todo })),
          { title: t('Finish Todo') },
        )
      )?.todo;
  if (!picked) return;
  const strategies: Record<FinishStrategy, string> = {
    merge: t('Merge: a merge commit of its branch into the current branch'),
    squash: t('Squash: its branch as one new commit on the current branch'),
    rebase: t('Rebase: its branch onto the current branch, then fast-forward'),
    'keep-branch': t('Keep the branch: mark done without merging'),
  };
  const strategy = (
    await vscode.window.showQuickPick(
      FINISH_STRATEGIES.map((name) => ({ label: name, description: strategies[name], strategy: name })),
      { title: t('Finish {0}: how?', picked.id) },
    )
  )?.strategy;
  if (!strategy) return;
  const keep = t('Keep the worktree');
  const remove = strategy === 'keep-branch' ? t('Remove the worktree (the branch stays)') : t('Remove the worktree and its branch');
  const cleanup = await vscode.window.showQuickPick([keep, remove], { title: t('Finish {0}: and its worktree?', picked.id) });
  if (!cleanup) return;
  const holder = (await store.listLeases()).find((lease) => lease.goal === picked.goal && lease.todo === picked.id && lease.status === 'active');
  let reason: string | undefined;
  if (holder) {
    const confirmed = await confirm(
      t('{0} is held by {1} (epoch {2}). Finish it?', picked.id, holder.owner, holder.epoch),
      cleanup === remove
        ? t(
            'Finishing it releases the lease: that agent is fenced from further writes, and its worktree is removed even if the agent still works in it. Quit it first to keep its directory.',
          )
        : t('Finishing it releases the lease: that agent is fenced from further writes.'),
      t('Finish'),
    );
    if (!confirmed) return;
    reason = await vscode.window.showInputBox({
      title: t('Why is this lease released?'),
      prompt: t('The reason goes into the receipt.'),
      validateInput: (value) => (value.trim() ? undefined : t('A reason is required.')),
    });
    if (!reason) return;
  }
  const result = await finishTodo({
    store,
    goal: picked.goal,
    todo: picked.id,
    cwd: workspace.checkout,
    env: ctx.env,
    strategy,
    removeWorktree: cleanup === remove,
    request: {
      identifiedBy: reason === undefined ? 'unidentified' : 'force',
      requester: requesterOf(process.env),
      force: reason !== undefined,
      reason: reason?.trim(),
    },
  });
  await ctx.refresh();
  if (!result.ok) {
    void vscode.window.showWarningMessage(t('Turnkeeper did not finish {0}: [{1}]', picked.id, result.reason), { modal: true, detail: result.detail });
    return;
  }
  const { plan, outcome } = result;
  void vscode.window.showInformationMessage(
    outcome.merged
      ? plan.ahead === 1
        ? t('Todo {0} is done: {1} of {2} into {3} (1 commit)', picked.id, strategy, plan.branch, plan.into)
        : t('Todo {0} is done: {1} of {2} into {3} ({4} commits)', picked.id, strategy, plan.branch, plan.into, plan.ahead)
      : t('Todo {0} is done; nothing was merged', picked.id),
  );
}

async function openReceipt(arg: unknown): Promise<void> {
  const seq = typeof arg === 'number' ? arg : Number(/^receipt\/(\d+)$/.exec((arg as ViewNode | undefined)?.id ?? '')?.[1]);
  if (!Number.isSafeInteger(seq)) return;
  const document = await vscode.workspace.openTextDocument(receiptUri(seq));
  await vscode.languages.setTextDocumentLanguage(document, RECEIPT_LANGUAGE);
  await vscode.window.showTextDocument(document, { preview: true });
}

async function copyCaptureId(ctx: Ctx, captureId: string | undefined): Promise<void> {
  if (!captureId) return;
  await vscode.env.clipboard.writeText(captureId);
  ctx.log.info(`copied ${captureId}`);
  void vscode.window.setStatusBarMessage(t('Copied {0}', captureId), 2000);
}

async function doctor(ctx: Ctx): Promise<void> {
  // doctorReport closes the store it opens, so it gets its own connection, not the views' one. PATH is
  // the terminals' (the shim's folder first), where agents started from the editor find `turnkeeper`.
  const report = await doctorReport(ctx.env, ctx.checkout ?? ctx.extension.extensionPath, () => openAuthority(ctx.env, { create: false }), {
    shimOnTerminalPath: true,
    launchProcessState,
    runningProcesses,
  });
  // A document a person reads (problems first, each with its fix; a section per agent), read-only;
  // the JSON goes to the log for a bug report.
  ctx.log.info(`doctor: ${JSON.stringify(report)}`);
  await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(doctorUri(doctorMarkdown(report))), { preview: true });
  if (report.problems.length === 0) void vscode.window.showInformationMessage(t('Turnkeeper doctor: no problems found.'));
  else void vscode.window.showWarningMessage(t('Turnkeeper doctor: {0}', report.problems[0]!), { detail: report.problems.join('\n') });
}
