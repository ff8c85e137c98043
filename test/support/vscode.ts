// A small hand-written stand-in for the `vscode` module, aliased in vitest.config.mts, so command
// handlers run in plain Node against a real store. Dialogs answer from queues the test fills;
// everything shown is recorded. Only what the extension uses is here.
type Listener<T> = (value: T) => unknown;

export class EventEmitter<T> {
  private listeners: Listener<T>[] = [];
  readonly event = (listener: Listener<T>) => {
    this.listeners.push(listener);
    return { dispose: () => (this.listeners = this.listeners.filter((item) => item !== listener)) };
  };
  fire(value: T): void {
    for (const listener of [...this.listeners]) listener(value);
  }
  dispose(): void {
    this.listeners = [];
  }
}

export class Disposable {
  constructor(private readonly callback: () => void = () => undefined) {}
  static from(...items: { dispose(): unknown }[]): Disposable {
    return new Disposable(() => items.forEach((item) => item.dispose()));
  }
  dispose(): void {
    this.callback();
  }
}

export const TreeItemCollapsibleState = { None: 0, Collapsed: 1, Expanded: 2 } as const;
export const StatusBarAlignment = { Left: 1, Right: 2 } as const;
export const ProgressLocation = { SourceControl: 1, Window: 10, Notification: 15 } as const;

export class TreeItem {
  id?: string;
  description?: string;
  tooltip?: unknown;
  iconPath?: unknown;
  contextValue?: string;
  command?: unknown;
  constructor(
    readonly label: string,
    readonly collapsibleState: number = 0,
  ) {}
}
export class ThemeIcon {
  constructor(
    readonly id: string,
    readonly color?: unknown,
  ) {}
}
export class ThemeColor {
  constructor(readonly id: string) {}
}
export class MarkdownString {
  constructor(
    readonly value: string,
    readonly supportThemeIcons = false,
  ) {}
}
export class Uri {
  private constructor(
    readonly scheme: string,
    readonly path: string,
    readonly query: string,
  ) {}
  static from(parts: { scheme: string; path: string; query?: string }): Uri {
    return new Uri(parts.scheme, parts.path, parts.query ?? '');
  }
  static file(path: string): Uri {
    return new Uri('file', path, '');
  }
  static joinPath(base: Uri, ...segments: string[]): Uri {
    return new Uri(base.scheme, [base.path, ...segments].join('/'), '');
  }
  get fsPath(): string {
    return this.path;
  }
  toString(): string {
    return `${this.scheme}:${this.path}${this.query ? `?${this.query}` : ''}`;
  }
}

/** What the test scripts and what it can observe. */
export const double = {
  answers: { quickPick: [] as unknown[], inputBox: [] as (string | undefined)[], message: [] as (string | undefined)[], saveDialog: [] as (Uri | undefined)[] },
  shown: [] as { kind: string; text: string; detail?: string }[],
  /** Texts given to window.setStatusBarMessage, oldest first. */
  statusMessages: [] as string[],
  /** Documents the extension opened, with the language the editor gives them (its file extension, or setTextDocumentLanguage). */
  documents: [] as { uri: Uri; text: string; languageId: string }[],
  configuration: {} as Record<string, unknown>,
  trusted: true,
  folders: [] as { uri: Uri; name: string; index: number }[],
  commands: new Map<string, (...args: unknown[]) => unknown>(),
  contexts: new Map<string, unknown>(),
  providers: new Map<string, { provideTextDocumentContent(uri: Uri): Promise<string> | string }>(),
  /** Terminals the extension created; a Pseudoterminal is opened at once, as the editor does on show. */
  terminals: [] as DoubleTerminal[],
  /** Tree views the extension created, by id: hidden until the test shows one (`setVisible`). */
  treeViews: new Map<string, DoubleTreeView>(),
  /** Status bar items the extension created. */
  statusBarItems: [] as { text: string; tooltip: unknown }[],
  reset(): void {
    this.answers = { quickPick: [], inputBox: [], message: [], saveDialog: [] };
    this.shown = [];
    this.statusMessages = [];
    this.documents = [];
    this.configuration = {};
    this.trusted = true;
    this.folders = [];
    this.commands.clear();
    this.contexts.clear();
    this.providers.clear();
    for (const terminal of this.terminals) terminal.close();
    this.terminals = [];
    this.treeViews.clear();
    this.statusBarItems = [];
  },
};

interface PseudoterminalLike {
  readonly onDidWrite: (listener: (text: string) => unknown) => unknown;
  readonly onDidClose?: (listener: (code: number | void) => unknown) => unknown;
  open(dimensions: { columns: number; rows: number } | undefined): void;
  close(): void;
  handleInput?(data: string): void;
}

export interface DoubleTerminal {
  readonly name: string;
  /** Everything the Pseudoterminal wrote. */
  output: string;
  /** The exit code it closed with, once closed. */
  exitCode: number | void | undefined;
  closed: boolean;
  /** The user closes the terminal (the editor calls the Pseudoterminal's close). */
  close(): void;
  /** The user types into the terminal (the editor calls the Pseudoterminal's handleInput). */
  input(data: string): void;
}

function createTerminal(options: { name: string; pty?: PseudoterminalLike }): { show(): void; dispose(): void } {
  const terminal: DoubleTerminal = {
    name: options.name,
    output: '',
    exitCode: undefined,
    closed: false,
    close: () => {
      if (terminal.closed) return;
      terminal.closed = true;
      options.pty?.close();
    },
    input: (data) => options.pty?.handleInput?.(data),
  };
  double.terminals.push(terminal);
  options.pty?.onDidWrite((text) => (terminal.output += text));
  options.pty?.onDidClose?.((code) => {
    terminal.exitCode = code;
    terminal.closed = true;
  });
  options.pty?.open({ columns: 100, rows: 30 });
  return { show() {}, dispose: () => terminal.close() };
}

export interface DoubleTreeView {
  visible: boolean;
  /** The user opens or collapses the view: the editor fires onDidChangeVisibility. */
  setVisible(visible: boolean): void;
  dispose(): void;
}

function createTreeView(id: string): DoubleTreeView & { onDidChangeVisibility: (listener: Listener<{ visible: boolean }>) => Disposable } {
  const changes = new EventEmitter<{ visible: boolean }>();
  const view = {
    visible: false,
    onDidChangeVisibility: (listener: Listener<{ visible: boolean }>) => new Disposable(changes.event(listener).dispose),
    setVisible(visible: boolean) {
      if (view.visible === visible) return;
      view.visible = visible;
      changes.fire({ visible });
    },
    dispose: () => changes.dispose(),
  };
  double.treeViews.set(id, view);
  return view;
}

function createStatusBarItem() {
  const item = { text: '', tooltip: '' as unknown, show() {}, dispose() {} };
  double.statusBarItems.push(item);
  return item;
}

const message =
  (kind: string) =>
  (text: string, ...rest: unknown[]): Promise<string | undefined> => {
    const options = typeof rest[0] === 'object' && rest[0] !== null ? (rest[0] as { detail?: string }) : undefined;
    double.shown.push({ kind, text, ...(options?.detail ? { detail: options.detail } : {}) });
    return Promise.resolve(double.answers.message.shift());
  };

const logChannel = () => ({
  lines: [] as string[],
  info(text: string) {
    this.lines.push(text);
  },
  warn(text: string) {
    this.lines.push(text);
  },
  error(text: string) {
    this.lines.push(text);
  },
  show() {},
  dispose() {},
});

export const window = {
  createOutputChannel: () => logChannel(),
  showInformationMessage: message('info'),
  showWarningMessage: message('warning'),
  showErrorMessage: message('error'),
  setStatusBarMessage: (text: string) => {
    double.statusMessages.push(text);
    return new Disposable();
  },
  showQuickPick: async (items: unknown[] | Promise<unknown[]>) => {
    const list = await items;
    const answer = double.answers.quickPick.shift();
    return typeof answer === 'function' ? (answer as (items: unknown[]) => unknown)(list) : answer;
  },
  showInputBox: () => Promise.resolve(double.answers.inputBox.shift()),
  showSaveDialog: () => Promise.resolve(double.answers.saveDialog.shift()),
  showTextDocument: (document: unknown) => Promise.resolve(document),
  withProgress: async <T>(_options: unknown, task: (progress: unknown, token: { onCancellationRequested(): void }) => Promise<T>) =>
    task({ report() {} }, { onCancellationRequested() {} }),
  createTreeView,
  createStatusBarItem,
  createTerminal,
};

export const commands = {
  registerCommand: (id: string, run: (...args: unknown[]) => unknown) => {
    double.commands.set(id, run);
    return new Disposable(() => double.commands.delete(id));
  },
  executeCommand: async (id: string, ...args: unknown[]) => {
    if (id === 'setContext') {
      double.contexts.set(args[0] as string, args[1]);
      return undefined;
    }
    return await double.commands.get(id)?.(...args);
  },
};

export const workspace = {
  getConfiguration: () => ({
    get: <T>(key: string, fallback?: T): T | undefined => (key in double.configuration ? (double.configuration[key] as T) : fallback),
  }),
  get workspaceFolders() {
    return double.folders;
  },
  get isTrusted() {
    return double.trusted;
  },
  openTextDocument: async (uri: Uri) => {
    const provider = double.providers.get(uri.scheme);
    const text = provider ? await provider.provideTextDocumentContent(uri) : '';
    const record = { uri, text, languageId: languageOfPath(uri.path) };
    double.documents.push(record);
    return {
      uri,
      getText: () => text,
      get languageId() {
        return record.languageId;
      },
    };
  },
  registerTextDocumentContentProvider: (scheme: string, provider: { provideTextDocumentContent(uri: Uri): Promise<string> | string }) => {
    double.providers.set(scheme, provider);
    return new Disposable();
  },
  onDidChangeConfiguration: () => new Disposable(),
  onDidGrantWorkspaceTrust: () => new Disposable(),
};

/** The language the editor's built-in extensions give a path by its extension (the ones the extension opens). */
const languageOfPath = (path: string): string => ({ json: 'json', jsonc: 'jsonc', md: 'markdown' })[/\.([a-z]+)$/.exec(path)?.[1] ?? ''] ?? 'plaintext';

export const languages = {
  setTextDocumentLanguage: (document: { uri: Uri }, languageId: string) => {
    for (const record of double.documents) if (record.uri === document.uri) record.languageId = languageId;
    return Promise.resolve(document);
  },
};
export const env = {
  clipboard: {
    text: '',
    writeText: (text: string) => {
      env.clipboard.text = text;
      return Promise.resolve();
    },
  },
};
export const l10n = {
  t: (text: string, ...args: unknown[]) => text.replace(/\{(\d+)\}/g, (_, index: string) => String(args[Number(index)])),
};
