// The extension's shared state: settings, the store (opened lazily, off the activation path), the
// four view models, and the refresh that follows the database as hooks in other processes write it.
import * as vscode from 'vscode';
import { existsSync, watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import { AGENTS, type Agent } from '../core/ids';
import { agentHooksStatus } from '../doctor/installation';
import type { ChainReport } from '../core/receipts';
import { isStoreWide, parseReceipt } from '../core/receipts';
import { storePath, type Env } from '../store/location';
import type { Authority, ReceiptRow, Todo, TodoStatus } from '../store/authority';
import type { FeedMode } from '../store/port';
import { describeSelection, openAuthority, selectStore, type StoreSelection } from '../ledger/open';
import { activeLeaseCount, RECENT_CAPTURES, statusSnapshot, type StatusSnapshot } from '../doctor/status';
import { launchProcessState } from '../launcher/liveness';
import { resolveGoal, type ResolvedGoal } from '../checkout/goal';
import { writeHookSettings } from '../config/homeConfig';
import * as settings from './config';
import { captureNodes, leaseNodes, receiptNodes, todoNodes, TreeModel, type ModelChange, type ReceiptRowView, type TodoRowView } from './models';

/** A Todo as a refresh read it, with its dependencies and their statuses (models.ts shows it Blocked while one is undone). */
type ListedTodo = Todo & Pick<TodoRowView, 'after'>;
import { ChainFollower } from './chainFollower';

/** Receipts per page of the Receipts view ("Load more…" adds one). */
const RECEIPTS_PAGE = 50;
/** Done Todos per page of the Todos view (open and blocked ones are all shown). */
const DONE_PAGE = 50;

export class Ctx implements vscode.Disposable {
  readonly todos = new TreeModel();
  readonly captures = new TreeModel();
  readonly leases = new TreeModel();
  readonly receipts = new TreeModel();
  private readonly changed = new vscode.EventEmitter<ModelChange>();
  readonly onDidChange = this.changed.event;
  private readonly snapshotChanged = new vscode.EventEmitter<StatusSnapshot>();
  readonly onDidChangeSnapshot = this.snapshotChanged.event;

  private store: Authority | undefined;
  private watcher: FSWatcher | undefined;
  private refreshTimer: NodeJS.Timeout | undefined;
  private refreshing: Promise<void> | undefined;
  private receiptPages = 1;
  /** Pages of captures (RECENT_CAPTURES each) beside the held ones, and of done Todos (DONE_PAGE each), the views show. */
  private capturePages = 1;
  private donePages = 1;
  /** The chain's walk and checkpoint, for the Receipts view (./chainFollower.ts). */
  private readonly chain = new ChainFollower();
  /** The workspace Goal's leases, captures and silent launches (the whole store's without a local folder): what the views show. */
  snapshot: StatusSnapshot = { leases: [], captures: [], silentLaunches: [] };
  /** Whether `snapshot` has been read from the store (or found none) yet: not before a view is shown. */
  snapshotRead = false;
  /**
   * The number of active leases of the workspace's Goal (of the whole store without a local folder),
   * as the Leases view lists them, for the status bar: read from the window's start and on each change
   * (the status read, `readStatus`), and with every snapshot; undefined until first read.
   */
  activeLeases: number | undefined;
  /** The Todos of the workspace's Goal, as of the last refresh, each with its dependencies (`after`) when it has some. */
  todoList: readonly ListedTodo[] = [];
  /**
   * Whether an agent's Turnkeeper hook has reported in the workspace's repository (a session record:
   * every hook event writes one), so the agent trusts and runs it: the walkthrough's trust step waits
   * for this (`turnkeeper.hookReported`). Read at each full refresh until true.
   */
  private hookReported = false;
  /** Whether any agent has Turnkeeper's hook (user or project scope); read once, reset by Install Agent Hooks. */
  hooksInstalled: boolean | undefined;

  private anyHooksInstalled(): boolean {
    return AGENTS.some((agent) => this.agentHooksInstalled(agent));
  }

  /** Whether the agent has Turnkeeper's hook at user scope, or at project scope in the workspace's checkout (read now). */
  agentHooksInstalled(agent: Agent): boolean {
    // Project-scope configs live in the checkout (a folder); the Goal is an id, not a place.
    const projectRoot = this.checkout;
    return (['user', 'project'] as const).some((scope) =>
      scope === 'project' && !projectRoot ? false : agentHooksStatus({ agent, scope, env: this.env, projectRoot: projectRoot ?? '' }).installed,
    );
  }

  constructor(
    readonly extension: vscode.ExtensionContext,
    readonly log: vscode.LogOutputChannel,
  ) {}

  // ---- settings ----------------------------------------------------------------------------

  /** The environment the hooks and the CLI see, with the extension's settings (./config.ts) folded in. */
  get env(): Env {
    const configured = settings.storePathSetting();
    const team = settings.storeSetting();
    // The machine-scoped `turnkeeper.store` (spec §4 selection): after TURNKEEPER_STORE and config.json.
    const env = configured ? { ...process.env, TURNKEEPER_DB: configured } : process.env;
    return team && !env.TURNKEEPER_STORE ? { ...env, TURNKEEPER_STORE_SETTING: team } : env;
  }

  get dbPath(): string {
    return storePath(this.env);
  }

  agentPath(agent: Agent): string | undefined {
    return settings.agentPathSetting(agent);
  }

  /** The repository (Goal) and checkout of the first workspace folder, or undefined without a (local) folder. */
  get workspace(): ResolvedGoal | undefined {
    const folder = vscode.workspace.workspaceFolders?.find((candidate) => candidate.uri.scheme === 'file');
    if (!folder) return undefined;
    try {
      return resolveGoal(folder.uri.fsPath);
    } catch {
      return undefined;
    }
  }

  /** The Goal id of the workspace: every worktree and clone of one repository shares it. */
  get goal(): string | undefined {
    return this.workspace?.id;
  }

  /** The workspace's checkout (worktree root): where project-scope hooks and preconditions live. */
  get checkout(): string | undefined {
    return this.workspace?.checkout;
  }

  /**
   * Hooks run in other processes and read their settings from TURNKEEPER_HOME: `enabled=false` is
   * the file `off`, onConflict and the lease TTL live in config.json (src/config/homeConfig.ts owns
   * both; these settings are machine-scoped because that file is one per machine).
   */
  writeHookSettings(): void {
    writeHookSettings(this.env, settings.hookSettings());
  }

  // ---- store --------------------------------------------------------------------------------

  /**
   * The open store, or undefined while no database exists. Opening is async and never on activation.
   * `selection` is the caller's reading of config.json when it has one (a refresh reads it once).
   */
  async openStore(create = false, selection: StoreSelection = selectStore(this.env)): Promise<Authority | undefined> {
    if (selection.kind === 'sqlite') {
      if (this.store && !existsSync(this.store.location)) this.closeStore();
      if (this.store && this.store.location !== selection.path) this.closeStore();
    } else if (this.store && `team: ${this.store.location}` !== describeSelection(selection)) {
      this.closeStore();
    }
    if (!this.store) {
      this.store = await openAuthority(this.env, { create, busyTimeoutMs: 2000 });
      if (this.store) this.log.info(`opened ${describeSelection(selection)}`);
      // A team server announces every receipt (LISTEN/NOTIFY, polling while it is down); a local
      // file is watched on disk.
      const follow = await this.store?.follow(
        () => this.scheduleRefresh(),
        (mode) => {
          this.feedMode = mode;
          if (mode.kind === 'listen') this.log.info('change feed: live (LISTEN/NOTIFY)');
          else this.log.warn(`change feed: polling every ${mode.everyMs / 1000} s, because ${mode.reason}`);
          this.snapshotChanged.fire(this.snapshot);
        },
      );
      if (follow) this.unfollow = follow;
      else if (selection.kind === 'sqlite') this.watch(selection.path);
    }
    return this.store;
  }

  /** The open store, for commands and launches that cannot go on without one. */
  async requireStore(): Promise<Authority> {
    const store = await this.openStore();
    if (!store) throw new Error(vscode.l10n.t('no Turnkeeper store yet at {0}: install the agent hooks and add a Todo first', this.dbPath));
    return store;
  }

  /** Forgets the store and what followed it (the change feed, the watch on its folder): the next open follows the store it opens. */
  closeStore(): void {
    this.unfollow?.();
    this.unfollow = undefined;
    this.feedMode = undefined;
    this.watcher?.close();
    this.watcher = undefined;
    this.store?.close();
    this.store = undefined;
  }

  /** Stops following a team server's change feed. */
  private unfollow: (() => void) | undefined;

  /** How the team server's changes reach this window (live, or polled and why); undefined for a local file. */
  feedMode: FeedMode | undefined;

  /** The store selected at the last refresh (spec §4 "Selection"), or undefined before it or when none is valid. */
  private selection: StoreSelection | undefined;

  /** What the status bar names when the authority is not the local default: `team: host:port/db`, as of the last refresh. */
  get authorityLabel(): string | undefined {
    return this.selection?.kind === 'postgres' ? describeSelection(this.selection) : undefined;
  }

  /** Watch the database's folder: hooks write from other processes, and the views follow. */
  private watch(path: string): void {
    if (this.watcher) return;
    const dir = dirname(path);
    if (!existsSync(dir)) return;
    const name = basename(path);
    try {
      this.watcher = watch(dir, (_event, file) => {
        if (file && file.startsWith(name)) this.scheduleRefresh();
      });
    } catch (error) {
      this.log.warn(`cannot watch ${dir}: ${(error as Error).message}`);
    }
  }

  // ---- views -------------------------------------------------------------------------------

  /**
   * Whether a view has been shown: until then the store is read for the status bar's count only (the
   * status read), after activation and on each change; the snapshot, the Todos and the receipts wait.
   */
  private viewsShown = false;
  /**
   * Whether the Receipts view (or Verify Receipt Chain) has asked for receipts: only then does a refresh
   * read the newest page, the newest checkpoint and walk the chain. Every hook's write refreshes, and a
   * window that never opens the Receipts view needs none of them.
   */
  private receiptsWanted = false;

  /** A view became visible: the first one starts reading and following the store; the Receipts view wants the chain. */
  viewShown(view: string): void {
    this.viewsShown = true;
    if (view === 'turnkeeper.receipts') this.receiptsWanted = true;
    this.scheduleRefresh(0);
  }

  /**
   * After activation (main.ts, off its path): the status bar's count, which opens and follows the store.
   * Before a view is shown each change reads that count again, and nothing else.
   */
  readStatus(): void {
    this.scheduleRefresh(0);
  }

  /** A `turnkeeper.*` setting changed: the store may be another one; it is read again (the status read until a view is shown). */
  settingsChanged(): void {
    this.closeStore();
    this.scheduleRefresh(0);
  }

  /** A change (or a view, a setting): a full refresh once a view was shown or the snapshot was read, else the status read. */
  scheduleRefresh(delayMs = 150): void {
    clearTimeout(this.refreshTimer);
    this.refreshTimer = setTimeout(() => void this.read(this.viewsShown || this.snapshotRead), delayMs);
  }

  /** The Captures view's "Load more…": another page of older (released, unbound) captures. */
  loadMoreCaptures(): Promise<void> {
    this.capturePages += 1;
    return this.refresh();
  }

  /** The Todos view's "Load more…" under Done: another page of older done Todos. */
  loadMoreTodos(): Promise<void> {
    this.donePages += 1;
    return this.refresh();
  }

  loadMoreReceipts(): Promise<void> {
    this.receiptPages += 1;
    return this.refresh();
  }

  /** The full walk (the command): rows verified earlier are checked again, so later tampering shows. */
  async verifyChain(): Promise<ChainReport | undefined> {
    this.receiptsWanted = true;
    const report = await this.chain.verifyAll(await this.openStore());
    await this.refresh();
    return report;
  }

  /** Re-reads the store and updates the four models; one refresh at a time, the last one wins. */
  refresh(): Promise<void> {
    return this.read(true);
  }

  /** A full refresh, or (`full` false) the status read: the active leases' count alone. One read at a time. */
  private read(full: boolean): Promise<void> {
    if (this.refreshing) {
      // A command awaits a full refresh and then reads the models: a status read under way is not one.
      if (full && !this.refreshingFull) return this.refreshing.then(() => this.read(true));
      this.scheduleRefresh();
      return this.refreshing;
    }
    this.refreshingFull = full;
    this.refreshing = this.doRefresh(full).finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }
  /** Whether the read under way (`refreshing`) is a full refresh. */
  private refreshingFull = false;

  private async doRefresh(full: boolean): Promise<void> {
    this.selection = undefined;
    try {
      // config.json is read once per refresh: for the store to open and for the status bar's label.
      this.selection = selectStore(this.env);
      const store = await this.openStore(false, this.selection);
      void vscode.commands.executeCommand('setContext', 'turnkeeper.storeExists', store !== undefined);
      if (!full) {
        // No database yet: no lease. The store is not created for a count.
        this.activeLeases = store ? await activeLeaseCount(store, this.goal) : 0;
        this.snapshotChanged.fire(this.snapshot);
        return;
      }
      this.hooksInstalled ??= this.anyHooksInstalled();
      void vscode.commands.executeCommand('setContext', 'turnkeeper.hooksInstalled', this.hooksInstalled);
      if (!store) {
        this.apply({ leases: [], captures: [], silentLaunches: [] }, [], false, []);
        return;
      }
      const now = Date.now();
      // The workspace's Goal only, in every view: every worktree and clone of the repository shares its
      // Todos, leases, captures and receipts, and a store holds other repositories' too. Without a local
      // folder there is no Goal to scope by: Captures, Leases and Receipts show the whole store.
      const goal = this.goal;
      // The live rows and a page of the rest (issue 19): held captures and the newest ones, open and
      // blocked Todos and the newest done ones, each an indexed query; "Load more…" pages further.
      const snapshot = await statusSnapshot(store, now, { goal, recent: RECENT_CAPTURES * this.capturePages, processState: launchProcessState });
      const doneShown = DONE_PAGE * this.donePages;
      const [open, blocked, done, edges] = goal
        ? await Promise.all([
            store.todosWithStatus('open', goal),
            store.todosWithStatus('blocked', goal),
            store.todosWithStatus('done', goal, doneShown + 1),
            store.dependenciesOfLive(goal),
          ])
        : [[], [], [], []];
      const olderDone = done.length > doneShown;
      if (olderDone) done.shift();
      // Each Todo with its dependencies: one waiting on an undone one shows in Blocked (models.ts shownStatus).
      const afterOf = new Map<string, { id: string; status: TodoStatus }[]>();
      for (const edge of edges) afterOf.set(edge.todo, [...(afterOf.get(edge.todo) ?? []), { id: edge.dependency, status: edge.status }]);
      const todos = [...open, ...blocked, ...done].map((todo) => {
        const after = afterOf.get(todo.id);
        return after ? { ...todo, after } : todo;
      });
      if (!this.hookReported) {
        this.hookReported = (await store.listSessions()).some((session) => goal === undefined || session.goal === goal);
        void vscode.commands.executeCommand('setContext', 'turnkeeper.hookReported', this.hookReported);
      }
      const rows = this.receiptsWanted ? await this.readReceipts(store, goal) : [];
      this.apply(
        snapshot,
        rows.slice(0, RECEIPTS_PAGE * this.receiptPages).map((row) => receiptRowView(row, goal !== undefined)),
        rows.length > RECEIPTS_PAGE * this.receiptPages,
        todos,
        olderDone,
      );
    } catch (error) {
      this.log.error(`refresh failed: ${(error as Error).message}`);
      this.closeStore();
      // A team server that is down has no file to watch: try again, which reopens and re-follows it. A
      // local file's folder is watched again, so the next write there retries.
      if (this.selection?.kind === 'postgres') this.scheduleRefresh(5000);
      else if (this.selection) this.watch(this.selection.path);
      // The status bar still names the authority that failed.
      this.snapshotChanged.fire(this.snapshot);
    }
  }

  /**
   * The Receipts view's page of rows (one more, to know whether there are more): the Goal's and the
   * store-wide ones (core/receipts.ts isStoreWide), all without a Goal. Then the newest checkpoint, and
   * the chain, which is the whole store's: walked in full the first time (over the network for a team
   * store), then incrementally while it is intact (hooks only append); a broken chain is walked in full.
   */
  private async readReceipts(store: Authority, goal: string | undefined): Promise<ReceiptRow[]> {
    const rows = await store.receipts({ limit: RECEIPTS_PAGE * this.receiptPages + 1, goal });
    // The chain's head, which another repository's receipt may have moved past the Goal's newest.
    const head = (goal === undefined ? rows[0] : (await store.receipts({ limit: 1 }))[0])?.seq ?? 0;
    await this.chain.follow(store, head);
    return rows;
  }

  private apply(snapshot: StatusSnapshot, rows: ReceiptRowView[], hasMore: boolean, todos: readonly ListedTodo[], olderDone = false): void {
    const now = Date.now();
    this.snapshot = snapshot;
    this.snapshotRead = true;
    this.activeLeases = snapshot.leases.filter((lease) => lease.status === 'active').length;
    this.todoList = todos;
    void vscode.commands.executeCommand('setContext', 'turnkeeper.hasCaptures', snapshot.captures.length > 0);
    // The walkthrough's "Run a first turn" completes on this, a lease that really exists (package.json).
    void vscode.commands.executeCommand('setContext', 'turnkeeper.hasLeases', snapshot.leases.length > 0);
    for (const [model, nodes] of [
      [this.todos, todoNodes(todos, snapshot, now, olderDone)],
      [this.captures, captureNodes(snapshot, now)],
      [this.leases, leaseNodes(snapshot, now)],
      // A chain without a receipt of the workspace's Goal still shows its state (it is the store's).
      [
        this.receipts,
        rows.length > 0 || this.chain.report?.end !== undefined ? receiptNodes(rows, this.chain.report, hasMore, this.chain.checkpointView()) : [],
      ],
    ] as const) {
      const changed = model.update(nodes);
      if (changed.length > 0) this.changed.fire({ model, nodes: changed });
    }
    this.snapshotChanged.fire(snapshot);
  }

  get chainReport(): ChainReport | undefined {
    return this.chain.report;
  }

  dispose(): void {
    clearTimeout(this.refreshTimer);
    this.closeStore();
    this.changed.dispose();
    this.snapshotChanged.dispose();
  }
}

/** `scoped`: the rows are one Goal's, so the store-wide ones among them are marked. */
function receiptRowView(row: { seq: number; doc: string; hash: string | null }, scoped: boolean): ReceiptRowView {
  const doc = parseReceipt(row.doc);
  return {
    seq: row.seq,
    kind: doc?.kind ?? '(unreadable)',
    at: doc?.at ?? '?',
    todo: doc?.todo,
    owner: doc?.owner,
    hash: row.hash,
    ...(scoped && doc && isStoreWide(doc) ? { storeWide: true } : {}),
  };
}
