import { describe, expect, it } from 'vitest';
import { like } from '../support/matchers';
import { captureNodes, leaseNodes, receiptNodes, todoNodes, TreeModel, type TodoRowView, type ViewNode } from '../../src/extension/models';
import type { StatusSnapshot } from '../../src/doctor/status';

const NOW = Date.parse('2026-11-30T12:00:00.000Z');
const snapshot = (over: Partial<StatusSnapshot> = {}): StatusSnapshot => ({
  leases: [
    {
      goal: '/r',
      todo: 'fix-login',
      owner: 'codex:s1',
      capture: 'cap_aaaaaaaaaaaaaaaaaaaaaaaa',
      epoch: 2,
      version: 1,
      status: 'active',
      expiresAt: '2026-11-30T12:30:00.000Z',
    },
    {
      goal: '/r',
      todo: 'old-task',
      owner: 'claude:s2',
      capture: 'cap_bbbbbbbbbbbbbbbbbbbbbbbb',
      epoch: 1,
      version: 3,
      status: 'released',
      expiresAt: '2026-11-30T11:00:00.000Z',
    },
  ],
  captures: [
    {
      id: 'cap_aaaaaaaaaaaaaaaaaaaaaaaa',
      goal: '/r',
      todo: 'fix-login',
      agent: 'codex',
      session: 's1',
      turn: 't1',
      state: 'ready',
      originalDigest: 'sha256:' + 'a'.repeat(64),
      readyDigest: 'sha256:' + 'b'.repeat(64),
      checkout: '/r',
    },
    {
      id: 'cap_bbbbbbbbbbbbbbbbbbbbbbbb',
      goal: '/r',
      todo: 'old-task',
      agent: 'claude',
      session: 's2',
      turn: 't9',
      state: 'released',
      originalDigest: 'sha256:' + 'c'.repeat(64),
      readyDigest: null,
      checkout: '/r',
    },
  ],
  silentLaunches: [],
  ...over,
});

describe('view models', () => {
  it('groups captures by state with stable ids and resumable context values', () => {
    const groups = captureNodes(snapshot(), NOW);
    expect(groups.map((group) => [group.id, group.description])).toStrictEqual([
      ['captures/ready', '1'],
      ['captures/needs_recovery', '0'],
      ['captures/released', '1'],
      ['captures/unbound', '0'],
    ]);
    const ready = groups[0]!.children![0]!;
    expect(ready).toMatchObject({
      id: 'capture/cap_aaaaaaaaaaaaaaaaaaaaaaaa',
      label: 'fix-login',
      contextValue: 'capture.resumable',
      description: 'codex · epoch 2',
    });
    expect(groups[2]!.children![0]!.contextValue).toBe('capture');
  });

  it('marks a capture whose launched agent never fired a hook', () => {
    const groups = captureNodes(
      snapshot({
        silentLaunches: [
          {
            capture: 'cap_aaaaaaaaaaaaaaaaaaaaaaaa',
            launch: 'launch_0000000000000001',
            todo: 'fix-login',
            agent: 'codex',
            seq: 9,
            committedAt: '2026-11-30T11:58:00.000Z',
          },
        ],
      }),
      NOW,
    );
    expect(groups[0]!.children![0]).toMatchObject({ icon: 'warning', description: like.stringContaining('hooks silent') });
  });

  it('lists only active leases, and shows an expired one as a hold', () => {
    expect(leaseNodes(snapshot(), NOW).map((node) => node.label)).toStrictEqual(['fix-login']);
    const [expired] = leaseNodes(snapshot(), Date.parse('2026-11-30T13:00:00.000Z'));
    expect(expired).toMatchObject({ icon: 'watch', description: like.stringContaining('expired (still held)') });
  });

  it("names the holder's checkout by its folder name, with the whole path in the tooltip", () => {
    const held = (checkout: string | undefined) => {
      const [active, released] = snapshot().leases;
      return leaseNodes(snapshot({ leases: [{ ...active!, ...(checkout === undefined ? {} : { checkout }) }, released!] }), NOW)[0]!;
    };
    const node = held('/src/app-wt');
    expect(node.description).toBe('in app-wt · codex:s1 · epoch 2 · expires in 30 min');
    expect(node.tooltip).toContain('held in checkout `/src/app-wt`');
    expect(held('C:\\src\\app-wt\\').description).toMatch(/^in app-wt · /);
    // A lease whose capture is unknown names no checkout.
    expect(held(undefined).description).toBe('codex:s1 · epoch 2 · expires in 30 min');
    expect(held(undefined).tooltip).not.toContain('checkout');
  });

  it('puts the chain state first, marks broken receipts, and offers more when there is more', () => {
    const rows = [
      { seq: 3, kind: 'lease_acquired', at: '2026-11-30T11:00:00.000Z', todo: 'fix-login', owner: 'codex:s1', hash: 'sha256:x' },
      { seq: 2, kind: 'capture_bound', at: '2026-11-30T11:00:00.000Z', hash: 'sha256:y' },
    ];
    const nodes = receiptNodes(rows, { ok: false, verified: 2, breaks: [{ seq: 2, kind: 'content_altered' }] }, true);
    expect(nodes.map((node) => node.id)).toStrictEqual(['receipts/chain', 'receipt/3', 'receipt/2', 'receipts/more']);
    expect(nodes[0]).toMatchObject({ label: 'Chain BROKEN', description: '#2 content_altered' });
    expect(nodes[2]).toMatchObject({ icon: 'error' });
    expect(nodes[1]!.command).toStrictEqual({ command: 'turnkeeper.openReceipt', title: 'Open Receipt', arguments: [3] });
    expect(receiptNodes(rows, { ok: true, verified: 3, breaks: [] }, false).at(-1)!.id).toBe('receipt/2');
  });
});

describe('Todos view model', () => {
  const todos: TodoRowView[] = [
    { goal: '/r', id: 'fix-login', title: 'Fix login', status: 'open' },
    { goal: '/r', id: 'write-docs', title: 'Write the docs', status: 'open' },
    { goal: '/r', id: 'old-task', title: 'Old task', status: 'done' },
    { goal: '/r', id: 'needs-key', title: 'Needs a key', status: 'blocked' },
  ];
  const held = (checkout?: string) => {
    const [active, released] = snapshot().leases;
    return snapshot({ leases: [{ ...active!, ...(checkout ? { checkout } : {}) }, released!] });
  };

  it('groups open, blocked and done; a claimed Todo shows its holder, checkout and epoch, and only open unheld Todos can be started', () => {
    const groups = todoNodes(todos, held('/src/app-wt'), NOW);
    expect(groups.map((group) => [group.id, group.description, group.expanded])).toStrictEqual([
      ['todos/open', '2', true],
      ['todos/blocked', '1', true],
      ['todos/done', '1', false],
    ]);
    const [claimed, free] = groups[0]!.children!;
    expect(claimed).toMatchObject({
      id: 'todo//r/fix-login',
      label: 'fix-login',
      contextValue: 'todo.held',
      icon: 'lock',
      description: 'in app-wt · codex:s1 · epoch 2',
    });
    expect(claimed!.tooltip).toContain('held by `codex:s1`, epoch 2 v1');
    expect(claimed!.tooltip).toContain('in checkout `/src/app-wt`');
    expect(free).toMatchObject({ contextValue: 'todo.open', description: 'Write the docs', icon: 'circle-large-outline' });
    expect(groups[1]!.children![0]).toMatchObject({ contextValue: 'todo.blocked', icon: 'circle-slash' });
    // A released lease (old-task's) is not a holder.
    expect(groups[2]!.children![0]).toMatchObject({ contextValue: 'todo.done', description: 'Old task', icon: 'pass' });
  });

  it('fills Blocked with the Todos waiting on an undone dependency and those a person blocked, naming the reason and every dependency in the tooltip', () => {
    const waiting: TodoRowView[] = [
      { goal: '/r', id: 'schema', title: 'Schema', status: 'open' },
      {
        goal: '/r',
        id: 'deploy',
        title: 'Deploy',
        status: 'open',
        after: [
          { id: 'schema', status: 'open' },
          { id: 'old-task', status: 'done' },
        ],
      },
      { goal: '/r', id: 'docs', title: 'Docs', status: 'open', after: [{ id: 'old-task', status: 'done' }] },
      { goal: '/r', id: 'needs-key', title: 'Needs a key', status: 'blocked', blockReason: 'waiting for the *API* key' },
      { goal: '/r', id: 'old-task', title: 'Old task', status: 'done' },
    ];
    const groups = todoNodes(waiting, snapshot({ leases: [] }), NOW);
    expect(groups.map((group) => [group.id, group.children!.map((node) => node.label)])).toStrictEqual([
      ['todos/open', ['schema', 'docs']],
      ['todos/blocked', ['deploy', 'needs-key']],
      ['todos/done', ['old-task']],
    ]);
    const [deploy, key] = groups[1]!.children!;
    // No Start Turn on a waiting Todo: its start would be refused [todo_blocked].
    expect(deploy).toMatchObject({ contextValue: 'todo.blocked', icon: 'circle-slash', description: 'Deploy · after schema' });
    expect(deploy!.tooltip).toContain('status open (blocked: waits on schema)');
    expect(deploy!.tooltip).toContain('after schema (open), old-task (done) — ready once every one is done');
    expect(key).toMatchObject({ contextValue: 'todo.blocked', description: 'Needs a key' });
    expect(key!.tooltip).toContain('blocked by a person: waiting for the \\*API\\* key — lift it: `turnkeeper todo unblock needs-key`');
    // The control: a Todo whose dependencies are all done stays Open and can be started.
    expect(groups[0]!.children![1]).toMatchObject({ contextValue: 'todo.open', description: 'Docs' });
    expect(groups[0]!.children![1]!.tooltip).toContain('after old-task (done)');
    expect(groups[0]!.children![1]!.tooltip).not.toContain('ready once');
  });

  it('a held Todo whose dependency was reopened shows in Blocked but keeps its holder and Mark Done', () => {
    const [active] = snapshot().leases;
    const groups = todoNodes(
      [{ goal: '/r', id: 'fix-login', title: 'Fix login', status: 'open', after: [{ id: 'schema', status: 'open' }] }],
      snapshot({ leases: [active!] }),
      NOW,
    );
    expect(groups[1]!.children![0]).toMatchObject({ id: 'todo//r/fix-login', contextValue: 'todo.held', icon: 'lock' });
  });

  it("puts a held Todo's live state first in its description, with since-when and the launched process in its tooltip (control: none without one)", () => {
    const base = held('/src/app-wt');
    const live = {
      ...base,
      leases: base.leases.map((lease) =>
        lease.status === 'active'
          ? {
              ...lease,
              live: {
                state: 'waiting' as const,
                since: '2026-11-30T11:58:00.000Z',
                lastHookAt: '2026-11-30T11:59:00.000Z',
                launch: { launch: 'launch_1', pid: 4242, process: 'running' as const },
              },
            }
          : lease,
      ),
    };
    const [claimed] = todoNodes(todos, live, NOW)[0]!.children!;
    expect(claimed).toMatchObject({ description: 'waiting for input · in app-wt · codex:s1 · epoch 2' });
    expect(claimed!.tooltip).toMatch(/\*\*waiting for input\*\* since .+ \(last hook .+; launched here, pid 4242, running\)/);
    const [plain] = todoNodes(todos, base, NOW)[0]!.children!;
    expect(plain!.tooltip).not.toContain('since');
  });

  it('shows an expired lease as a hold, a holder without a known checkout without one, and nothing at all without Todos', () => {
    const [expired] = todoNodes(todos, held(), Date.parse('2026-11-30T13:00:00.000Z'))[0]!.children!;
    expect(expired).toMatchObject({ icon: 'watch', contextValue: 'todo.held', description: 'codex:s1 · epoch 2 · expired (still held)' });
    // No groups for an empty list: the view shows its welcome (Add Todo).
    expect(todoNodes([], snapshot(), NOW)).toStrictEqual([]);
  });

  it('marks a Todo whose started agent never fired a hook (a start has no capture, so the Captures view cannot)', () => {
    const silent = snapshot({
      silentLaunches: [
        { capture: null, launch: 'launch_0000000000000002', todo: 'write-docs', agent: 'codex', seq: 12, committedAt: '2026-11-30T11:58:00.000Z' },
      ],
    });
    const [claimed, started] = todoNodes(todos, silent, NOW)[0]!.children!;
    expect(started).toMatchObject({ contextValue: 'todo.open', icon: 'warning', description: 'Write the docs · hooks silent' });
    expect(started!.tooltip).toContain('never fired a hook');
    // Control: the other Todo, and every capture, stay as they were.
    expect(claimed).toMatchObject({ icon: 'lock', description: like.not.stringContaining('hooks silent') });
    expect(
      captureNodes(silent, NOW)
        .flatMap((group) => group.children ?? [])
        .map((node) => node.icon),
    ).not.toContain('warning');
  });

  it('shows Todo text in the tooltip as text, not as Markdown of its own', () => {
    const [node] = todoNodes(
      [{ goal: '/r', id: 'evil', title: '[click](command:turnkeeper.doctor) ![x](https://e.invalid/x.png) $(alert)', body: '<img src=x>', status: 'open' }],
      snapshot(),
      NOW,
    )[0]!.children!;
    expect(node!.tooltip).toContain('\\[click\\]\\(command:turnkeeper\\.doctor\\)');
    expect(node!.tooltip).toContain('\\!\\[x\\]');
    expect(node!.tooltip).toContain('\\$\\(alert\\)');
    expect(node!.tooltip).toContain('\\<img src=x\\>');
  });
});

describe('TreeModel partial refresh', () => {
  const leaf = (id: string, label = id): ViewNode => ({ id, label, contextValue: 'x' });
  const group = (id: string, children: ViewNode[]): ViewNode => ({ id, label: id, contextValue: 'g', children });

  it('reports the root when the root list changes, nothing when nothing changed, and only the changed subtree otherwise', () => {
    const model = new TreeModel();
    expect(model.update([group('a', [leaf('a1')]), group('b', [leaf('b1')])])).toStrictEqual([undefined]);
    expect(model.update([group('a', [leaf('a1')]), group('b', [leaf('b1')])])).toStrictEqual([]);
    const changed = model.update([group('a', [leaf('a1')]), group('b', [leaf('b1'), leaf('b2')])]);
    expect(changed.map((node) => node?.id)).toStrictEqual(['b']);
    const relabelled = model.update([group('a', [leaf('a1', 'renamed')]), group('b', [leaf('b1'), leaf('b2')])]);
    expect(relabelled.map((node) => node?.id)).toStrictEqual(['a1']);
    expect(model.parentOf(model.find('b2')!)?.id).toBe('b');
  });
});

describe('TreeModel compares each node by its own fields (issue 19)', () => {
  const leaf = (id: string, label = id, args: unknown[] = [id]): ViewNode => ({
    id,
    label,
    contextValue: 'x',
    command: { command: 'c', title: 't', arguments: args },
  });
  const group = (id: string, children: ViewNode[], description = ''): ViewNode => ({ id, label: id, description, contextValue: 'g', children });

  it('reports the deepest node whose own fields changed, a parent whose children list changed, and nothing for equal copies', () => {
    const model = new TreeModel();
    model.update([group('a', [group('a/x', [leaf('a/x/1'), leaf('a/x/2')])]), group('b', [leaf('b1')])]);
    // Fresh objects, equal fields (as every refresh builds them): nothing changed.
    expect(model.update([group('a', [group('a/x', [leaf('a/x/1'), leaf('a/x/2')])]), group('b', [leaf('b1')])])).toStrictEqual([]);
    // A grandchild's label: that node alone (was: the root group 'a', its whole subtree re-rendered).
    expect(model.update([group('a', [group('a/x', [leaf('a/x/1', 'new'), leaf('a/x/2')])]), group('b', [leaf('b1')])]).map((n) => n?.id)).toStrictEqual([
      'a/x/1',
    ]);
    // A command's arguments are fields of the node too.
    expect(
      model.update([group('a', [group('a/x', [leaf('a/x/1', 'new'), leaf('a/x/2', 'a/x/2', ['other'])])]), group('b', [leaf('b1')])]).map((n) => n?.id),
    ).toStrictEqual(['a/x/2']);
    // Children reordered: their parent; a group's own description and a child's label: both.
    expect(
      model.update([group('a', [group('a/x', [leaf('a/x/2', 'a/x/2', ['other']), leaf('a/x/1', 'new')])]), group('b', [leaf('b1')])]).map((n) => n?.id),
    ).toStrictEqual(['a/x']);
    expect(
      model
        .update([group('a', [group('a/x', [leaf('a/x/2', 'a/x/2', ['other']), leaf('a/x/1', 'new')])], '1'), group('b', [leaf('b1', 'B')])])
        .map((n) => n?.id),
    ).toStrictEqual(['a', 'b1']);
  });
});

describe('Load more… in the Captures and Todos views (issue 19)', () => {
  it('ends the Captures view with a Load more node when older captures exist, and not otherwise', () => {
    expect(captureNodes(snapshot(), NOW).map((node) => node.id)).not.toContain('captures/more');
    const nodes = captureNodes(snapshot({ olderCaptures: true }), NOW);
    expect(nodes.at(-1)).toMatchObject({ id: 'captures/more', contextValue: 'loadMore', command: { command: 'turnkeeper.loadMoreCaptures' } });
  });

  it('ends the Done group with a Load more node when older done Todos exist, its count marked as partial', () => {
    const todos: TodoRowView[] = [
      { goal: '/r', id: 'a', title: 'A', status: 'open' },
      { goal: '/r', id: 'b', title: 'B', status: 'done' },
    ];
    const done = (older: boolean) => todoNodes(todos, snapshot(), NOW, older).find((node) => node.id === 'todos/done')!;
    expect(done(false)).toMatchObject({ description: '1' });
    expect(done(false).children!.map((node) => node.id)).toStrictEqual(['todo//r/b']);
    expect(done(true)).toMatchObject({ description: '1+' });
    expect(done(true).children!.map((node) => node.id)).toStrictEqual(['todo//r/b', 'todos/done/more']);
    expect(done(true).children!.at(-1)).toMatchObject({ command: { command: 'turnkeeper.loadMoreTodos' } });
  });
});
