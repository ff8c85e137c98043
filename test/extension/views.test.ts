import { describe, expect, it } from 'vitest';
import { EventEmitter } from '../support/vscode';
import { TurnkeeperTree } from '../../src/extension/views';
import { todoNodes, TreeModel, type ModelChange, type TodoRowView, type ViewNode } from '../../src/extension/models';

const leaf = (id: string, label = id): ViewNode => ({ id, label, contextValue: 'x' });
const group = (id: string, children: ViewNode[], label = id): ViewNode => ({ id, label, contextValue: 'g', children });

describe('TurnkeeperTree', () => {
  it('refreshes a changed group through the element object VS Code already holds, and serves its current data', () => {
    const changes = new EventEmitter<ModelChange>();
    const model = new TreeModel();
    const tree = new TurnkeeperTree(changes.event, model);
    const fired: (ViewNode | undefined)[] = [];
    tree.onDidChangeTreeData((node) => fired.push(node));

    changes.fire({ model, nodes: model.update([group('ready', [leaf('a')], 'Ready 1')]) });
    const [held] = tree.getChildren();
    expect(tree.getChildren(held).map((node) => node.id)).toStrictEqual(['a']);

    // A hook in another process adds a capture: the model builds new objects for the group.
    changes.fire({ model, nodes: model.update([group('ready', [leaf('a'), leaf('b')], 'Ready 2')]) });
    // The event carries the object VS Code was given (a new object would be ignored by VS Code)…
    expect(fired.at(-1)).toBe(held);
    // …and asking with it returns today's data.
    expect(tree.getTreeItem(held!).label).toBe('Ready 2');
    expect(tree.getChildren(held).map((node) => node.id)).toStrictEqual(['a', 'b']);
  });

  it('refreshes from the root when the changed node was never shown', () => {
    const changes = new EventEmitter<ModelChange>();
    const model = new TreeModel();
    const tree = new TurnkeeperTree(changes.event, model);
    const fired: (ViewNode | undefined)[] = [];
    tree.onDidChangeTreeData((node) => fired.push(node));
    model.update([group('ready', [leaf('a')])]);
    changes.fire({ model, nodes: model.update([group('ready', [leaf('a'), leaf('b')])]) });
    expect(fired).toStrictEqual([undefined]);
  });

  it('a Todo whose dependency is reopened moves from Open to Blocked through the groups VS Code holds, with its tooltip', () => {
    const changes = new EventEmitter<ModelChange>();
    const model = new TreeModel();
    const tree = new TurnkeeperTree(changes.event, model);
    const fired: (ViewNode | undefined)[] = [];
    tree.onDidChangeTreeData((node) => fired.push(node));
    const snapshot = { leases: [], captures: [], silentLaunches: [] };
    const todos = (schema: TodoRowView['status']): TodoRowView[] => [
      { goal: '/r', id: 'schema', title: 'Schema', status: schema },
      { goal: '/r', id: 'deploy', title: 'Deploy', status: 'open', after: [{ id: 'schema', status: schema }] },
    ];
    changes.fire({ model, nodes: model.update(todoNodes(todos('done'), snapshot, 0)) });
    const [open, blocked] = tree.getChildren();
    expect(tree.getChildren(open).map((node) => node.id)).toStrictEqual(['todo//r/deploy']);
    expect(tree.getChildren(blocked)).toStrictEqual([]);
    fired.length = 0;

    changes.fire({ model, nodes: model.update(todoNodes(todos('open'), snapshot, 0)) });
    // The groups VS Code was given are the ones refreshed, and they now hold today's children.
    expect(fired).toContain(blocked);
    expect(fired).toContain(open);
    expect(tree.getChildren(open).map((node) => node.id)).toStrictEqual(['todo//r/schema']);
    const [deploy] = tree.getChildren(blocked);
    expect(deploy!.id).toBe('todo//r/deploy');
    const item = tree.getTreeItem(deploy!);
    expect(item.contextValue).toBe('todo.blocked');
    expect((item.tooltip as { value: string }).value).toContain('after schema (open)');
  });
});
