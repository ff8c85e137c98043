// `turnkeeper start <todo> --worktree [<path>]` and "Turnkeeper: Start Turn in New Worktree" (spec §7
// "Start in a worktree"): the Todo's own linked worktree on its own branch, created or reused, and
// then exactly `start` (./start.ts) run there. And the other end of a worktree's life for resume: a
// capture whose worktree was deleted gets it back at its branch (or captured HEAD) before resuming.
import { existsSync } from 'node:fs';
import type { Authority } from '../store/authority';
import type { ReadyDocument } from '../core/ready';
import { worktreeSettings } from '../config/homeConfig';
import { resolveGoal } from '../checkout/goal';
import { defaultWorktreePath, ensureWorktree, mainWorktree, recreateWorktree, todoBranch, WorktreeError, type TodoWorktree } from '../checkout/worktrees';
import { checkStart, startTodo, type StartOptions, type StartResult } from './start';

export interface WorktreeStartOptions extends StartOptions {
  /** `--worktree <path>`: where the worktree is (or goes); else the configured location. */
  readonly worktreePath?: string | undefined;
  /** `--branch <name>`: the Todo's branch; else `<branchPrefix><todo>`. */
  readonly branch?: string | undefined;
}

/** Where a Todo's worktree is and its branch, from the options and config.json (throws WorktreeConfigError, WorktreeError). */
export async function worktreeTarget(
  options: Pick<WorktreeStartOptions, 'env' | 'cwd' | 'todo' | 'worktreePath' | 'branch'>,
): Promise<{ path: string; branch: string }> {
  const settings = worktreeSettings(options.env);
  const main = await mainWorktree(options.env, options.cwd);
  const branch = await todoBranch(options.env, options.cwd, settings.branchPrefix, options.todo, options.branch);
  return { path: options.worktreePath ?? defaultWorktreePath(main.path, settings.location, options.todo), branch };
}

/**
 * The start check first (a refused start creates no worktree), then the worktree (created, or the
 * branch's existing one reused), then `startTodo` in it, which checks again in its own transaction.
 * Worktree problems throw WorktreeError or WorktreeConfigError; nothing is launched then.
 */
export async function startInWorktree(options: WorktreeStartOptions): Promise<StartResult & { readonly worktree?: TodoWorktree }> {
  const now = options.now ?? Date.now;
  const target = await worktreeTarget(options);
  const goal = resolveGoal(options.cwd);
  const check = await checkStart(options.store, goal, options.todo, options.agent, now(), true);
  if (!check.ok) return check;
  const worktree = await ensureWorktree(options.env, options.cwd, target.branch, target.path);
  const result = await startTodo({ ...options, cwd: worktree.path, worktree: { branch: worktree.branch, created: worktree.created } });
  return { ...result, worktree };
}

/**
 * Recreates the removed worktree a capture ran in (`resume --recreate-worktree`, the editor's offer):
 * at the capture's branch when it exists, else that branch anew at the captured HEAD, else detached
 * at that HEAD. Returns undefined when the checkout exists (nothing to do); WorktreeError when the
 * capture ran outside git or there is nothing to recreate it from.
 */
export async function recreateCaptureCheckout(
  store: Authority,
  captureId: string,
  env: StartOptions['env'],
): Promise<{ readonly path: string; readonly branch: string | null } | undefined> {
  const capture = await store.getCapture(captureId);
  if (!capture) return undefined;
  if (existsSync(capture.checkout)) return undefined;
  if (capture.commonDir === null || !existsSync(capture.commonDir))
    throw new WorktreeError('not_git', `capture ${captureId} ran in ${capture.checkout}, whose repository is gone too: nothing to recreate it from`);
  const ready = await store.readReady(captureId);
  const head = ready ? (JSON.parse(ready.canonical) as ReadyDocument).preconditions.gitHead : null;
  return recreateWorktree(env, capture.commonDir, capture.checkout, capture.branch, head);
}
