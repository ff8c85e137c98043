import { describe, expect, it } from 'vitest';
import { EventEmitter } from '../support/vscode';
import { TurnkeeperTree } from '../../src/extension/views';
import { TreeModel, type ModelChange, type ViewNode } from '../../src/extension/models';

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
});
