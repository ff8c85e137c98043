// Page objects over the VS Code workbench DOM (code-server 4.139 / VS Code 1.139). Selectors are
// the workbench's own class names and ARIA roles; they live here only, so a VS Code update that
// renames one breaks one place.
import type { Locator, Page } from 'playwright-core';

/**
 * The part of a DOM element that the page functions here read. They run in the browser, but this
 * project's TypeScript has no DOM library, so Playwright's `HTMLElement` parameter is an unresolved
 * type to the compiler; a page function annotates its parameter with this instead.
 */
export interface PageElement {
  readonly textContent: string | null;
  getAttribute(name: string): string | null;
  querySelectorAll(selector: string): Iterable<PageElement>;
}

/** User settings that keep the workbench quiet and deterministic for a test. */
export const QUIET_SETTINGS: Record<string, unknown> = {
  'workbench.startupEditor': 'none',
  'workbench.tips.enabled': false,
  'workbench.welcomePage.walkthroughs.openOnInstall': false,
  'extensions.ignoreRecommendations': true,
  'extensions.autoCheckUpdates': false,
  'extensions.autoUpdate': false,
  'update.mode': 'none',
  'telemetry.telemetryLevel': 'off',
  'workbench.enableExperiments': false,
  'chat.disableAIFeatures': true,
  'git.enabled': false,
  'workbench.secondarySideBar.defaultVisibility': 'hidden',
  // The DOM renderer keeps terminal text readable (and it is the one that works without a GPU).
  'terminal.integrated.gpuAcceleration': 'off',
};

export class Workbench {
  constructor(readonly page: Page) {}

  async open(url: string): Promise<void> {
    await this.page.goto(url, { waitUntil: 'domcontentloaded', timeout: 60_000 });
    await this.page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: 60_000 });
    // The activity bar is rendered once the workbench has restored its parts.
    await this.page.locator('.part.activitybar').waitFor({ state: 'visible', timeout: 60_000 });
  }

  /** The activity-bar tab (an `li[role=tab]`; its name is on the inner action label). */
  activityTab(name: string): Locator {
    return this.page.locator('.part.activitybar li[role="tab"]').filter({ has: this.page.locator(`a.action-label[aria-label^="${name}"]`) });
  }

  /** Opens a view container from the activity bar (no-op when it is already the visible one). */
  async openContainer(name: string): Promise<void> {
    const tab = this.activityTab(name);
    await tab.waitFor({ state: 'visible', timeout: 60_000 });
    if ((await tab.getAttribute('aria-selected')) !== 'true') await tab.click();
    await this.page
      .locator('.part.sidebar .composite.title')
      .filter({ hasText: new RegExp(name, 'i') })
      .waitFor({ timeout: 30_000 });
  }

  /** A view pane in the side bar, by its title ("Captures"). */
  view(title: string): Locator {
    return this.page.locator('.part.sidebar .pane').filter({ has: this.page.locator('.pane-header h3.title', { hasText: new RegExp(`^${title}$`, 'i') }) });
  }

  /** Expands a collapsed view pane. */
  async expandView(title: string): Promise<void> {
    const header = this.view(title).locator('.pane-header');
    if ((await header.getAttribute('aria-expanded')) === 'false') await header.click();
  }

  /** The visible rows of a tree view, as their text (label and description). */
  async rows(title: string): Promise<string[]> {
    await this.expandView(title);
    // A row's aria-label is "<label> <description>"; its text runs the two together.
    const rows = this.view(title).locator('.pane-body .monaco-list-row');
    return rows.evaluateAll((elements: PageElement[]) =>
      elements.map((row) => (row.getAttribute('aria-label') ?? row.textContent ?? '').replace(/\s+/g, ' ').trim()),
    );
  }

  /**
   * Waits until some row of a view contains `text` (expanding groups as they appear); returns all rows
   * then. An array waits until one snapshot of the view has a row for each: a tree being refreshed can
   * show a group's count before all its rows are rendered, so a second look at an earlier snapshot races.
   */
  async waitForRow(title: string, text: string | RegExp | readonly (string | RegExp)[], timeoutMs = 30_000): Promise<string[]> {
    const deadline = Date.now() + timeoutMs;
    const wanted: readonly (string | RegExp)[] = typeof text === 'string' || text instanceof RegExp ? [text] : text;
    let rows: string[] = [];
    while (Date.now() < deadline) {
      await this.expandAll(title);
      rows = await this.rows(title);
      if (wanted.every((one) => rows.some((row) => (typeof one === 'string' ? row.includes(one) : one.test(row))))) return rows;
      await this.page.waitForTimeout(250);
    }
    throw new Error(`no row matching ${String(text)} in view ${title} within ${timeoutMs} ms; rows: ${JSON.stringify(rows)}`);
  }

  /**
   * Expands every collapsed row of a view once (tree groups such as "ready"), but an empty group (its
   * count " 0"): nothing to show, and at the foot of a full pane it is out of reach of a click.
   */
  async expandAll(title: string): Promise<void> {
    const collapsed = this.view(title).locator('.pane-body .monaco-list-row[aria-expanded="false"]:not([aria-label$=" 0"])');
    for (let i = await collapsed.count(); i > 0; i--) {
      await collapsed.first().click();
      await this.page.waitForTimeout(100);
    }
  }

  /** F1, type the command title, run it. Leaves any quick pick the command opens on screen. */
  async runCommand(title: string): Promise<void> {
    await this.page.locator('.monaco-workbench').click({ position: { x: 700, y: 450 } });
    await this.page.keyboard.press('F1');
    const input = this.page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible' });
    await input.fill(`>${title}`);
    const row = this.page.locator('.quick-input-widget .monaco-list-row').filter({ hasText: title }).first();
    await row.waitFor({ state: 'visible' });
    await row.click();
  }

  /** Waits for the open quick pick to offer a row containing `text`; returns all its rows then. */
  async quickPickRows(text: string): Promise<string[]> {
    const rows = this.page.locator('.quick-input-widget .monaco-list-row');
    await rows.filter({ hasText: text }).first().waitFor({ state: 'visible' });
    return rows.evaluateAll((elements: PageElement[]) =>
      elements.map((row) => (row.getAttribute('aria-label') ?? row.textContent ?? '').replace(/\s+/g, ' ').trim()),
    );
  }

  async pickQuickItem(text: string): Promise<void> {
    const row = this.page.locator('.quick-input-widget .monaco-list-row').filter({ hasText: text }).first();
    await row.waitFor({ state: 'visible' });
    await row.click();
  }

  /** Messages of the notification toasts on screen. */
  async notifications(): Promise<string[]> {
    const messages = this.page.locator('.notifications-toasts .notification-list-item-message');
    return (await messages.allTextContents()).map((text) => text.replace(/\s+/g, ' ').trim());
  }

  /** Waits for a toast whose message matches; returns its text. */
  async waitForNotification(pattern: RegExp, timeoutMs = 30_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    let seen: string[] = [];
    while (Date.now() < deadline) {
      seen = await this.notifications();
      const hit = seen.find((message) => pattern.test(message));
      if (hit) return hit;
      await this.page.waitForTimeout(250);
    }
    throw new Error(`no notification matching ${pattern} within ${timeoutMs} ms; on screen: ${JSON.stringify(seen)}`);
  }

  /**
   * Closes the toasts on screen. A toast may go by itself while we close another (VS Code hides
   * some after a few seconds), so this counts again before each close instead of trusting one
   * count: a stale count left `hover()` waiting 30 s for a toast that was already gone.
   */
  async clearNotifications(timeoutMs = 15_000): Promise<void> {
    const toasts = this.page.locator('.notifications-toasts .notification-toast');
    const deadline = Date.now() + timeoutMs;
    while ((await toasts.count()) > 0) {
      if (Date.now() > deadline) throw new Error(`toasts still on screen after ${timeoutMs} ms: ${JSON.stringify(await this.notifications())}`);
      const toast = toasts.first();
      try {
        await toast.hover({ timeout: 2_000 });
        await toast.locator('.codicon-notifications-clear, .codicon-close').first().click({ timeout: 2_000 });
      } catch {
        // Gone while we reached for it: count again.
      }
    }
  }

  /** The text on screen in the terminals (xterm's DOM rows, one line per row; the viewport only, not the scrollback). */
  async terminalText(): Promise<string> {
    const rows = this.page.locator('.terminal-wrapper .xterm-rows > div');
    return (await rows.allTextContents()).join('\n').replace(/\u00a0/g, ' ');
  }

  /** Waits for the visible terminal's text (xterm's DOM rows) to match; returns that text. */
  async waitForTerminalText(pattern: RegExp, timeoutMs = 30_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    let text = '';
    while (Date.now() < deadline) {
      text = await this.terminalText();
      if (pattern.test(text)) return text;
      await this.page.waitForTimeout(250);
    }
    throw new Error(`terminal text did not match ${pattern} within ${timeoutMs} ms; it was: ${JSON.stringify(text.slice(-2000))}`);
  }

  /**
   * Keys into the active terminal, as a person types them: each key is its own keystroke, `delay` ms
   * apart, so a program's paste detection sees typing. The focus goes to xterm's input element (where
   * a click on the terminal puts it) without a click, which a TUI with mouse reporting would receive.
   */
  async typeInTerminal(text: string, delay = 30): Promise<void> {
    await this.focusTerminal();
    await this.page.keyboard.type(text, { delay });
  }

  /** One key (or chord: "Control+c") into the active terminal. */
  async pressInTerminal(key: string): Promise<void> {
    await this.focusTerminal();
    await this.page.keyboard.press(key);
  }

  private async focusTerminal(): Promise<void> {
    await this.page.locator('.terminal-wrapper.active .xterm-helper-textarea').focus();
  }

  /** Types `text` into the open input box (showInputBox) and accepts it with Enter. */
  async answerInput(text: string): Promise<void> {
    const input = this.page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible' });
    await input.fill(text);
    await input.press('Enter');
    await this.page.locator('.quick-input-widget').waitFor({ state: 'hidden' });
  }

  /** Waits for a modal dialog whose message matches, and presses its button named `button`; returns the message. */
  async answerDialog(pattern: RegExp, button: string, timeoutMs = 30_000): Promise<string> {
    const dialog = this.page.locator('.monaco-dialog-box').filter({ hasText: pattern });
    await dialog.waitFor({ state: 'visible', timeout: timeoutMs });
    const message = ((await dialog.textContent()) ?? '').replace(/\s+/g, ' ').trim();
    await dialog.locator('.dialog-buttons a.monaco-button, .dialog-buttons button').filter({ hasText: button }).first().click();
    await dialog.waitFor({ state: 'hidden', timeout: timeoutMs });
    return message;
  }

  /** The number of active leases in Turnkeeper's status bar item (its text is "$(lock) <n>"). */
  async leaseCount(): Promise<string> {
    const item = this.page.locator('.part.statusbar .statusbar-item[id$="turnkeeper.status"]');
    return ((await item.first().textContent({ timeout: 5_000 })) ?? '').trim();
  }

  /** A status bar item by its text (workspace trust shows "Restricted Mode" there). */
  statusBarItem(text: string): Locator {
    return this.page.locator('.part.statusbar .statusbar-item').filter({ hasText: text });
  }
}
