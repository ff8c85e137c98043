// TreeDataProviders: thin translations of the models in models.ts into VS Code tree items, refreshed
// node by node from the models' change reports.
import * as vscode from 'vscode';
import type { Ctx } from './ctx';
import type { TreeModel, ViewNode } from './models';

export class TurnkeeperTree implements vscode.TreeDataProvider<ViewNode>, vscode.Disposable {
  private readonly emitter = new vscode.EventEmitter<ViewNode | undefined>();
  readonly onDidChangeTreeData = this.emitter.event;
  private readonly subscription: vscode.Disposable;

  constructor(
    ctx: Ctx,
    private readonly model: TreeModel,
  ) {
    this.subscription = ctx.onDidChange(({ model: changedModel, nodes }) => {
      if (changedModel !== this.model) return;
      for (const node of nodes) this.emitter.fire(node);
    });
  }

  getChildren(node?: ViewNode): ViewNode[] {
    return [...(node ? (node.children ?? []) : this.model.rootNodes)];
  }

  getParent(node: ViewNode): ViewNode | undefined {
    return this.model.parentOf(node);
  }

  getTreeItem(node: ViewNode): vscode.TreeItem {
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
