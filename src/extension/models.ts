// The data of the four Turnkeeper views, built from the store's status as plain objects. No
// `vscode` here (the providers in views.ts translate), so this file is tested in plain Node. Each
// TreeModel keeps its nodes by stable id and reports which ones changed, so a provider refreshes
// only those (in the manner of vscode-pull-request-github's prsTreeModel).
import type { ChainReport } from '../core/receipts';
import type { CaptureView, LeaseView, LiveStatus, StatusSnapshot } from '../doctor/status';

export interface ViewNode {
  readonly id: string;
  readonly label: string;
  readonly description?: string;
  /** Markdown. */
  readonly tooltip?: string;
  /** A codicon id, optionally with a theme colour id: `error` or `warning~list.warningForeground`. */
  readonly icon?: string;
  readonly iconColor?: string;
  /** Drives inline and context menus (package.json `view/item/context`). */
  readonly contextValue: string;
  readonly command?: { readonly command: string; readonly title: string; readonly arguments?: readonly unknown[] };
  readonly children?: readonly ViewNode[];
  readonly expanded?: boolean;
}

/** What a model update changed: undefined means the root list itself changed. */
export type Changed = readonly (ViewNode | undefined)[];

/** A model's change report, as the tree providers hear it: which model, and which of its nodes changed. */
export interface ModelChange {
  readonly model: TreeModel;
  readonly nodes: Changed;
}

export class TreeModel {
  private roots: readonly ViewNode[] = [];
  private readonly byId = new Map<string, ViewNode>();
  private readonly parents = new Map<string, ViewNode | undefined>();

  get rootNodes(): readonly ViewNode[] {
    return this.roots;
  }

  parentOf(node: ViewNode): ViewNode | undefined {
    return this.parents.get(node.id);
  }

  find(id: string): ViewNode | undefined {
    return this.byId.get(id);
  }

  /**
   * Replaces the tree and returns the nodes to refresh: each node whose own fields or list of children
   * changed (not its descendants: the provider's refresh of it reads them again), and, below an
   * unchanged node, whichever of its children changed. Each node is compared once, by its own fields
   * (issue 19: a JSON of every subtree, built twice per node, cost 1.8 s at 100k Todos).
   */
  update(roots: readonly ViewNode[]): Changed {
    const previous = new Map(this.byId);
    const previousRoots = this.roots;
    this.roots = roots;
    this.byId.clear();
    this.parents.clear();
    const walk = (nodes: readonly ViewNode[], parent: ViewNode | undefined) => {
      for (const node of nodes) {
        this.byId.set(node.id, node);
        this.parents.set(node.id, parent);
        if (node.children) walk(node.children, node);
      }
    };
    walk(roots, undefined);
    if (!sameIds(previousRoots, roots)) return [undefined];
    const changed: ViewNode[] = [];
    const visit = (nodes: readonly ViewNode[]) => {
      for (const node of nodes) {
        const before = previous.get(node.id);
        if (!before || !sameOwnFields(before, node) || !sameIds(before.children ?? [], node.children ?? [])) changed.push(node);
        else if (node.children) visit(node.children);
      }
    };
    visit(roots);
    return changed;
  }
}

const sameIds = (a: readonly ViewNode[], b: readonly ViewNode[]): boolean => a.length === b.length && a.every((node, at) => node.id === b[at]!.id);

/** A node's own fields, children aside; `command` (a small plain object) by its JSON. */
function sameOwnFields(a: ViewNode, b: ViewNode): boolean {
  if (a === b) return true;
  const keys = Object.keys(a).filter((key) => key !== 'children');
  if (keys.length !== Object.keys(b).filter((key) => key !== 'children').length) return false;
  for (const key of keys) {
    const x = a[key as keyof ViewNode];
    const y = b[key as keyof ViewNode];
    if (x === y) continue;
    if (key !== 'command' || typeof x !== 'object' || typeof y !== 'object' || JSON.stringify(x) !== JSON.stringify(y)) return false;
  }
  return true;
}

/** What a capture is, for the tooltips: the sidebar is where users meet the word first. */
const CAPTURE_WORDS =
  'A **capture** binds one agent turn to one Todo. Its **ready capture** is the work context the hook gave the agent (the Todo, its recent history, the git state), stored byte for byte: every retry and resume presents the same bytes.';
const GROUPS: readonly { state: CaptureView['state']; label: string; icon: string; tooltip: string }[] = [
  { state: 'ready', label: 'Ready', icon: 'pass', tooltip: `Turns that hold their lease; an interrupted one can be resumed.\n\n${CAPTURE_WORDS}` },
  {
    state: 'needs_recovery',
    label: 'Needs recovery',
    icon: 'warning',
    tooltip: `Turns that still hold their lease but cannot simply go on: the lease expired (still a hold) or the stored ready capture no longer matches its digest. Click one for its recovery guidance.\n\n${CAPTURE_WORDS}`,
  },
  {
    state: 'released',
    label: 'Released',
    icon: 'circle-slash',
    tooltip: `Turns whose lease was released (done, or released by hand): readable, never resumed.\n\n${CAPTURE_WORDS}`,
  },
  {
    state: 'unbound',
    label: 'Unbound',
    icon: 'question',
    tooltip: `Captures without a Turn or a lease (legacy or imported): readable, never claimed, launched or resumed.\n\n${CAPTURE_WORDS}`,
  },
];

export function captureNodes(snapshot: StatusSnapshot, now: number): ViewNode[] {
  const leaseOf = new Map(snapshot.leases.map((lease) => [lease.capture, lease]));
  // Resumes only: a start has no capture yet, and shows on its Todo (todoNodes).
  const silent = new Set(snapshot.silentLaunches.flatMap((launch) => (launch.capture ? [launch.capture] : [])));
  const groups = GROUPS.map((group): ViewNode => {
    const captures = snapshot.captures.filter((capture) => capture.state === group.state);
    return {
      id: `captures/${group.state}`,
      label: group.label,
      description: String(captures.length),
      icon: group.icon,
      tooltip: group.tooltip,
      contextValue: 'captureGroup',
      expanded: group.state === 'ready' || group.state === 'needs_recovery',
      children: captures.map((capture) => captureNode(capture, leaseOf.get(capture.id), silent.has(capture.id), now)),
    };
  });
  // Older (released, unbound) captures than those read: paged on demand (every held one is read).
  return snapshot.olderCaptures
    ? [...groups, loadMoreNode('captures/more', 'Load more captures…', 'turnkeeper.loadMoreCaptures', 'Load More Captures')]
    : groups;
}

function loadMoreNode(id: string, label: string, command: string, title: string): ViewNode {
  return { id, label, icon: 'ellipsis', contextValue: 'loadMore', command: { command, title } };
}

function captureNode(capture: CaptureView, lease: LeaseView | undefined, silent: boolean, now: number): ViewNode {
  const resumable = capture.state === 'ready' || capture.state === 'needs_recovery';
  return {
    id: `capture/${capture.id}`,
    label: capture.todo,
    description: `${capture.agent} · ${lease ? `epoch ${lease.epoch}` : 'no lease'}${silent ? ' · hooks silent' : ''}`,
    icon: silent ? 'warning' : capture.state === 'ready' ? 'debug-pause' : capture.state === 'needs_recovery' ? 'warning' : 'circle-outline',
    contextValue: resumable ? 'capture.resumable' : 'capture',
    tooltip: [
      `**${capture.todo}** — capture \`${capture.id}\``,
      '',
      `| | |`,
      `|---|---|`,
      `| state | ${capture.state} |`,
      `| owner | \`${capture.agent}:${capture.session}\` |`,
      `| turn | \`${capture.turn ?? 'none'}\` |`,
      ...(lease ? [`| lease | epoch ${lease.epoch} v${lease.version}, ${lease.status}, ${relativeTime(Date.parse(lease.expiresAt), now)} |`] : []),
      `| original | \`${capture.originalDigest.slice(0, 23)}…\` |`,
      ...(silent ? ['', '$(warning) The agent launched for this capture never fired a hook: run **Turnkeeper: Doctor**.'] : []),
    ].join('\n'),
    command: { command: 'turnkeeper.showRecoveryGuidance', title: 'Show Recovery Guidance', arguments: [capture.id] },
  };
}

export function leaseNodes(snapshot: StatusSnapshot, now: number): ViewNode[] {
  return snapshot.leases
    .filter((lease) => lease.status === 'active')
    .map((lease) => {
      const expired = Date.parse(lease.expiresAt) <= now;
      return {
        id: `lease/${lease.goal}/${lease.todo}/${lease.epoch}`,
        label: lease.todo,
        // Worktrees of one repository share its leases: the folder name says which checkout holds it,
        // first, because a narrow side bar cuts the description after an agent's long session id.
        description: `${lease.checkout ? `in ${folderName(lease.checkout)} · ` : ''}${lease.owner} · epoch ${lease.epoch} · ${expired ? 'expired (still held)' : `expires ${relativeTime(Date.parse(lease.expiresAt), now)}`}`,
        icon: expired ? 'watch' : 'lock',
        ...(expired ? { iconColor: 'list.warningForeground' } : {}),
        contextValue: 'lease.active',
        tooltip: [
          `**${lease.todo}** held by \`${lease.owner}\``,
          '',
          `epoch ${lease.epoch} (fencing token), version ${lease.version}`,
          '',
          ...(lease.checkout ? [`held in checkout \`${lease.checkout}\``, ''] : []),
          `expires ${lease.expiresAt}${expired ? ' — expired, but expiry is a hold: only an explicit release frees it' : ''}`,
          '',
          `goal \`${lease.goal}\` · capture \`${lease.capture}\``,
        ].join('\n'),
      };
    });
}

/** A Todo as the Todos view needs it (the store's `Todo` fits). */
export interface TodoRowView {
  readonly goal: string;
  readonly id: string;
  readonly title: string;
  readonly body?: string;
  readonly status: 'open' | 'done' | 'blocked';
  /** Why a person blocked it (`todo block --reason`). */
  readonly blockReason?: string;
  /** Its dependencies (`todo add --after`), each with its status as read: an undone one puts it in Blocked. */
  readonly after?: readonly { readonly id: string; readonly status: 'open' | 'done' | 'blocked' }[];
}

/** The group a Todo shows in: a person's status, except that an open Todo waiting on an undone dependency is Blocked. */
const shownStatus = (todo: TodoRowView): TodoRowView['status'] =>
  todo.status === 'open' && (todo.after ?? []).some((dependency) => dependency.status !== 'done') ? 'blocked' : todo.status;

const TODO_GROUPS: readonly { status: TodoRowView['status']; label: string; icon: string; expanded: boolean }[] = [
  { status: 'open', label: 'Open', icon: 'circle-large-outline', expanded: true },
  { status: 'blocked', label: 'Blocked', icon: 'circle-slash', expanded: true },
  { status: 'done', label: 'Done', icon: 'pass', expanded: false },
];

/**
 * The Todos view: open, blocked and done, each claimed Todo with its holder and the checkout it is
 * held in. Context values drive the inline actions: `todo.open` can be started and marked done,
 * `todo.held` (open, leased) only marked done, `todo.done` and `todo.blocked` neither.
 */
export function todoNodes(todos: readonly TodoRowView[], snapshot: StatusSnapshot, now: number, olderDone = false): ViewNode[] {
  // No Todos at all: no groups either, so the view shows its welcome (Add Todo).
  if (todos.length === 0 && !olderDone) return [];
  const holderOf = new Map(snapshot.leases.filter((lease) => lease.status === 'active').map((lease) => [`${lease.goal}\n${lease.todo}`, lease]));
  // Starts whose agent never fired a hook: no capture to show them on, so their Todo says it (the
  // snapshot is the workspace Goal's, as the list of Todos: doctor/status.ts snapshotOfGoal).
  const silentStarts = new Set(snapshot.silentLaunches.flatMap((launch) => (launch.capture === null && launch.todo ? [launch.todo] : [])));
  return TODO_GROUPS.map((group) => {
    const members = todos.filter((todo) => shownStatus(todo) === group.status);
    return {
      id: `todos/${group.status}`,
      label: group.label,
      description: group.status === 'done' && olderDone ? `${members.length}+` : String(members.length),
      icon: group.icon,
      contextValue: 'todoGroup',
      expanded: group.expanded,
      children: [
        ...members.map((todo) => todoNode(todo, holderOf.get(`${todo.goal}\n${todo.id}`), silentStarts.has(todo.id), now)),
        // Older done Todos than those read (the newest pages): paged on demand.
        ...(group.status === 'done' && olderDone ? [loadMoreNode('todos/done/more', 'Load more…', 'turnkeeper.loadMoreTodos', 'Load More Done Todos')] : []),
      ],
    };
  });
}

function todoNode(todo: TodoRowView, lease: LeaseView | undefined, silent: boolean, now: number): ViewNode {
  const status = shownStatus(todo);
  const waitingOn = (todo.after ?? []).filter((dependency) => dependency.status !== 'done').map((dependency) => dependency.id);
  const expired = lease !== undefined && Date.parse(lease.expiresAt) <= now;
  const where = lease?.checkout ? `in ${folderName(lease.checkout)} · ` : '';
  return {
    id: `todo/${todo.goal}/${todo.id}`,
    label: todo.id,
    // The live state, then the holder: a narrow side bar cuts the end of a description.
    description: `${lease ? `${lease.live ? `${LIVE_WORDS[lease.live.state]} · ` : ''}${where}${lease.owner} · epoch ${lease.epoch}${expired ? ' · expired (still held)' : ''}` : todo.title}${waitingOn.length > 0 ? ` · after ${waitingOn.join(', ')}` : ''}${silent ? ' · hooks silent' : ''}`,
    icon: silent ? 'warning' : lease ? (expired ? 'watch' : 'lock') : status === 'open' ? 'circle-large-outline' : status === 'done' ? 'pass' : 'circle-slash',
    ...(expired || silent ? { iconColor: 'list.warningForeground' } : {}),
    // A Todo waiting on a dependency is `todo.blocked` (no Start Turn: a start would be refused), unless held.
    contextValue: status !== 'open' && !(lease && todo.status === 'open') ? `todo.${status}` : lease ? 'todo.held' : 'todo.open',
    tooltip: [
      `**${todo.id}** — ${markdownText(todo.title)}`,
      '',
      `status ${todo.status}${status !== todo.status ? ` (blocked: waits on ${waitingOn.join(', ')})` : ''}`,
      ...(todo.status === 'blocked'
        ? ['', `blocked by a person${todo.blockReason ? `: ${markdownText(todo.blockReason)}` : ''} — lift it: \`turnkeeper todo unblock ${todo.id}\``]
        : []),
      ...(todo.after?.length
        ? [
            '',
            `after ${todo.after.map((dependency) => `${dependency.id} (${dependency.status})`).join(', ')}${waitingOn.length > 0 ? ' — ready once every one is done' : ''}`,
          ]
        : []),
      ...(lease
        ? [
            '',
            `held by \`${lease.owner}\`, epoch ${lease.epoch} v${lease.version}, ${expired ? 'expired (still held)' : `expires ${relativeTime(Date.parse(lease.expiresAt), now)}`}`,
            ...(lease.live ? ['', liveTooltip(lease.live, now)] : []),
            ...(lease.checkout ? ['', `in checkout \`${lease.checkout}\``] : []),
            '',
            `capture \`${lease.capture}\``,
          ]
        : []),
      ...(silent ? ['', '$(warning) The agent started for this Todo never fired a hook: run **Turnkeeper: Doctor**.'] : []),
      ...(todo.body ? ['', '---', '', markdownText(todo.body.length > 500 ? `${todo.body.slice(0, 500)}…` : todo.body)] : []),
    ].join('\n'),
  };
}

/** The live states as the Todos view and the status bar say them (spec §9 "Live status"). */
export const LIVE_WORDS: Readonly<Record<LiveStatus['state'], string>> = {
  working: 'working',
  waiting: 'waiting for input',
  stopped: 'stopped',
  exited: 'exited',
  crashed: 'crashed',
};

function liveTooltip(live: LiveStatus, now: number): string {
  const process = live.launch ? `; launched here, pid ${live.launch.pid ?? '?'}, ${live.launch.process}` : '';
  return `**${LIVE_WORDS[live.state]}** since ${relativeTime(Date.parse(live.since), now)} (last hook ${relativeTime(Date.parse(live.lastHookAt), now)}${process})`;
}

/** User text shown as itself inside a Markdown tooltip: no links, images, HTML or formatting of its own. */
const markdownText = (text: string): string => text.replace(/[\\`*_{}[\]()#+\-.!|<>~$&]/g, (char) => `\\${char}`);

export interface ReceiptRowView {
  readonly seq: number;
  readonly kind: string;
  readonly at: string;
  readonly todo?: string | undefined;
  readonly owner?: string | undefined;
  readonly hash: string | null;
  /** A receipt about the whole store (a checkpoint, a clock skew, an import), shown beside the workspace Goal's own. */
  readonly storeWide?: boolean;
}

/** The newest signed checkpoint (store_meta) and what the witness said when the chain was last verified. */
export interface CheckpointView {
  readonly seq: number;
  readonly signer: string | null;
  readonly time: string;
  /** checked: the store matched the witness's newest checkpoint; none: the witness holds none for this store. */
  readonly witness: 'checked' | 'none' | 'off' | 'unreadable' | 'refused' | 'replaced' | 'unknown';
  readonly witnessPath: string | null;
}

/** The Receipts view's line for the newest checkpoint and its witness (docs/receipts.md, "Checkpoints"). */
function checkpointNode(checkpoint: CheckpointView | null, chain: ChainReport | undefined): ViewNode {
  const cut = chain?.breaks.find(
    (item) =>
      item.kind === 'truncated_after_checkpoint' ||
      item.kind === 'checkpoint_mismatch' ||
      item.kind === 'signature_invalid' ||
      item.kind === 'untrusted_key' ||
      item.kind === 'fork' ||
      item.kind === 'tree_mismatch' ||
      item.kind === 'store_identity_changed',
  );
  const witness = checkpoint?.witness ?? 'unknown';
  const witnessText = cut ? `witness: ${cut.kind} at #${cut.seq}` : witness === 'checked' ? 'witness agrees' : `witness: ${witness}`;
  if (!checkpoint) {
    return {
      id: 'receipts/checkpoint',
      label: 'No signed checkpoint yet',
      description: witnessText,
      icon: 'unverified',
      contextValue: 'checkpoint.none',
      tooltip:
        'Checkpoints are signed periodically (every `checkpointEvery` receipts, set in config.json or `TURNKEEPER_CHECKPOINT_EVERY`), on release, on export and by `turnkeeper checkpoint`.',
    };
  }
  return {
    id: 'receipts/checkpoint',
    label: `Checkpoint of #${checkpoint.seq}`,
    description: `${checkpoint.signer ?? 'unsigned'} · ${witnessText}`,
    icon: cut ? 'error' : witness === 'checked' ? 'workspace-trusted' : 'warning',
    ...(cut ? { iconColor: 'list.errorForeground' } : {}),
    contextValue: cut ? 'checkpoint.broken' : 'checkpoint',
    tooltip: `**Checkpoint of receipt #${checkpoint.seq}**\n\nsigned by \`${checkpoint.signer ?? '?'}\` at ${checkpoint.time}\n\nwitness: ${checkpoint.witnessPath ? `\`${checkpoint.witnessPath}\`` : 'off'} — ${witnessText}`,
    command: { command: 'turnkeeper.verifyReceiptChain', title: 'Verify Receipt Chain' },
  };
}

/** `checkpoint`: the newest signed checkpoint, null when the store has none yet, undefined to show no line for it. */
export function receiptNodes(
  rows: readonly ReceiptRowView[],
  chain: ChainReport | undefined,
  hasMore: boolean,
  checkpoint?: CheckpointView | null,
): ViewNode[] {
  const broken = new Map((chain?.breaks ?? []).map((item) => [item.seq, item.kind]));
  const header: ViewNode = chain
    ? chain.ok
      ? {
          id: 'receipts/chain',
          label: 'Chain verified',
          description: `${chain.verified} receipts`,
          icon: 'verified',
          contextValue: 'chain.ok',
          command: { command: 'turnkeeper.verifyReceiptChain', title: 'Verify Receipt Chain' },
        }
      : {
          id: 'receipts/chain',
          label: 'Chain BROKEN',
          description: chain.breaks
            .map((item) => `#${item.seq} ${item.kind}`)
            .slice(0, 3)
            .join(', '),
          icon: 'error',
          iconColor: 'list.errorForeground',
          contextValue: 'chain.broken',
          tooltip: chain.breaks.map((item) => `- seq ${item.seq}: **${item.kind}**`).join('\n'),
          command: { command: 'turnkeeper.verifyReceiptChain', title: 'Verify Receipt Chain' },
        }
    : {
        id: 'receipts/chain',
        label: 'Chain not verified yet',
        icon: 'shield',
        contextValue: 'chain.unknown',
        command: { command: 'turnkeeper.verifyReceiptChain', title: 'Verify Receipt Chain' },
      };
  const items = rows.map((row): ViewNode => {
    const breakKind = broken.get(row.seq);
    return {
      id: `receipt/${row.seq}`,
      label: `#${row.seq} ${row.kind}`,
      description: [row.storeWide ? 'store-wide' : undefined, row.todo, row.owner, row.at.replace('T', ' ').replace(/\.\d+Z$/, 'Z')]
        .filter(Boolean)
        .join(' · '),
      icon: breakKind ? 'error' : receiptIcon(row.kind),
      ...(breakKind ? { iconColor: 'list.errorForeground' } : {}),
      contextValue: 'receipt',
      tooltip: `**#${row.seq} ${row.kind}**${breakKind ? ` — $(error) **${breakKind}**` : ''}\n\n${row.at}${row.storeWide ? '\n\nstore-wide: about every repository of the store, so listed in each' : ''}\n\nhash \`${row.hash ?? 'missing'}\``,
      command: { command: 'turnkeeper.openReceipt', title: 'Open Receipt', arguments: [row.seq] },
    };
  });
  const more: ViewNode[] = hasMore
    ? [
        {
          id: 'receipts/more',
          label: 'Load more…',
          icon: 'ellipsis',
          contextValue: 'loadMore',
          command: { command: 'turnkeeper.loadMoreReceipts', title: 'Load More Receipts' },
        },
      ]
    : [];
  return [header, ...(checkpoint === undefined ? [] : [checkpointNode(checkpoint, chain)]), ...items, ...more];
}

function receiptIcon(kind: string): string {
  if (kind.startsWith('lease_')) return 'lock';
  if (kind.startsWith('launch_')) return 'rocket';
  if (kind.endsWith('_refused')) return 'circle-slash';
  if (kind.startsWith('todo_')) return 'checklist';
  return 'note';
}

/** The last segment of a checkout path (POSIX or Windows separators), as the editor names a folder. */
function folderName(path: string): string {
  return path.split(/[\\/]/).filter(Boolean).at(-1) ?? path;
}

export function relativeTime(at: number, now: number): string {
  const seconds = Math.round((at - now) / 1000);
  const abs = Math.abs(seconds);
  const text =
    abs < 60 ? `${abs}s` : abs < 3600 ? `${Math.round(abs / 60)} min` : abs < 86_400 ? `${Math.round(abs / 3600)} h` : `${Math.round(abs / 86_400)} d`;
  return seconds >= 0 ? `in ${text}` : `${text} ago`;
}
