// TreeDataProviders: thin translations of the models in models.ts into VS Code tree items, refreshed
// node by node from the models' change reports.
import * as vscode from 'vscode';
import type { ModelChange, TreeModel, ViewNode } from './models';

export class TurnkeeperTree implements vscode.TreeDataProvider<ViewNode>, vscode.Disposable {
  private readonly emitter = new vscode.EventEmitter<ViewNode | undefined>();
  readonly onDidChangeTreeData = this.emitter.event;
  private readonly subscription: vscode.Disposable;
  /**
   * The element objects VS Code has been given, by id. VS Code refreshes only elements it already
   * knows (by object), while each model update builds new objects: so a change is fired with the
   * object VS Code holds, and the current data is looked up by id when it asks again.
   */
  private readonly given = new Map<string, ViewNode>();

  constructor(
    onDidChange: vscode.Event<ModelChange>,
    private readonly model: TreeModel,
  ) {
    this.subscription = onDidChange(({ model: changedModel, nodes }) => {
      if (changedModel !== this.model) return;
      for (const node of nodes) {
        const known = node && this.given.get(node.id);
        // A node VS Code has never seen cannot be refreshed alone: refresh from the root.
        this.emitter.fire(known ?? undefined);
        if (!known) return;
      }
    });
  }

  private current(node: ViewNode): ViewNode {
    return this.model.find(node.id) ?? node;
  }

  getChildren(node?: ViewNode): ViewNode[] {
    const children = node ? (this.current(node).children ?? []) : this.model.rootNodes;
    for (const child of children) this.given.set(child.id, child);
    return [...children];
  }

  getParent(node: ViewNode): ViewNode | undefined {
    const parent = this.model.parentOf(this.current(node));
    return parent && (this.given.get(parent.id) ?? parent);
  }

  getTreeItem(element: ViewNode): vscode.TreeItem {
    const node = this.current(element);
    const state =
      node.children === undefined
        ? vscode.TreeItemCollapsibleState.None
        : node.expanded
          ? vscode.TreeItemCollapsibleState.Expanded
          : vscode.TreeItemCollapsibleState.Collapsed;
    const item = new vscode.TreeItem(node.label, state);
    item.id = node.id;
    item.description = node.description;
    item.contextValue = node.contextValue;
    if (node.tooltip) item.tooltip = new vscode.MarkdownString(node.tooltip, true);
    if (node.icon) item.iconPath = new vscode.ThemeIcon(node.icon, node.iconColor ? new vscode.ThemeColor(node.iconColor) : undefined);
    if (node.command) item.command = { command: node.command.command, title: node.command.title, arguments: [...(node.command.arguments ?? [])] };
    return item;
  }

  dispose(): void {
    this.subscription.dispose();
    this.emitter.dispose();
  }
}
