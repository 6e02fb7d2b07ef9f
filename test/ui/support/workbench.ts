import type { FrameLocator, Locator, Page } from 'playwright-core';
import { until } from '../../support/until';

// Playwright helpers for the VS Code web workbench (code-server 4.103.2 = VS Code 1.103.2). Selectors are the
// workbench's own DOM classes and ARIA roles; keep them here so a VS Code update is fixed in one place.

/** Waits until the workbench has rendered its parts and the explorer lists the workspace's files. */
export async function waitForWorkbench(page: Page, opts: { timeoutMs?: number; file?: string } = {}): Promise<void> {
  const timeout = opts.timeoutMs ?? 60_000;
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout });
  await page.locator('.part.activitybar, .part.sidebar').first().waitFor({ state: 'visible', timeout });
  await page.locator('.part.statusbar').waitFor({ state: 'visible', timeout });
  if (opts.file) await explorerItem(page, opts.file).waitFor({ state: 'visible', timeout });
}

/** The explorer's tree row for a file or folder name. */
export function explorerItem(page: Page, name: string): Locator {
  return page.locator('.explorer-folders-view .monaco-list-row', { hasText: name }).first();
}

export function quickInput(page: Page): Locator {
  return page.locator('.quick-input-widget');
}

/** Opens the command palette (F1) and types `text` after its `>` prefix. */
export async function openCommandPalette(page: Page, text = ''): Promise<Locator> {
  const widget = quickInput(page);
  const input = widget.locator('input.input').first();
  // A quick input still open from the step before (a quick pick just answered, or closing) would pass for the
  // palette and then vanish under it: closed first, as a user would.
  if (await widget.isVisible()) {
    await page.keyboard.press('Escape');
    await widget.waitFor({ state: 'hidden', timeout: 5_000 }).catch(() => undefined);
  }
  // A key press can land while the workbench moves focus (a notification closing, a view re-rendering) and go
  // nowhere: pressed again, as a user would, before giving up. The palette is open when its input shows the `>`.
  for (let attempt = 0; ; attempt++) {
    await page.keyboard.press('F1');
    const shown = await input.waitFor({ state: 'visible', timeout: 5_000 }).then(
      async () => (await input.inputValue()).startsWith('>'),
      () => false,
    );
    if (shown) break;
    if (attempt >= 2) throw new Error('the command palette did not open on F1 (pressed three times)');
  }
  if (text) await input.pressSequentially(text, { delay: 10 });
  return widget;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The palette's row whose label is exactly `label` (the palette matches fuzzily: others may rank above it). */
export function paletteRow(page: Page, label: string): Locator {
  return quickInput(page)
    .locator('.monaco-list-row')
    .filter({ has: page.locator('.label-name', { hasText: new RegExp(`^\\s*${escapeRegExp(label)}\\s*$`) }) })
    .first();
}

/**
 * Runs a command by its palette label (e.g. "File: New Untitled Text File") and waits for the palette to close.
 * It clicks the row with exactly that label: Enter would run the top row, which may be another command.
 */
export async function runCommand(page: Page, label: string): Promise<void> {
  const widget = await openCommandPalette(page, label);
  const row = paletteRow(page, label);
  await row.waitFor({ state: 'visible', timeout: 15_000 });
  await row.click();
  await widget.waitFor({ state: 'hidden', timeout: 15_000 });
}

/**
 * Runs a palette command once the workbench offers it: right after the workbench loads, the remote extension
 * host may not have registered the extension's contributions yet, and an open palette does not refresh.
 */
export async function runWhenOffered(page: Page, label: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    await openCommandPalette(page, label);
    const row = paletteRow(page, label);
    try {
      await row.waitFor({ state: 'visible', timeout: 3_000 });
      await row.click();
      await quickInput(page)
        .waitFor({ state: 'hidden', timeout: 15_000 })
        .catch(() => undefined);
      return;
    } catch (err) {
      if (attempt >= 15) throw err;
      await page.keyboard.press('Escape');
      await page.waitForTimeout(1_000);
    }
  }
}

/**
 * The designer preview's content. The workbench puts a webview in an iframe (iframe.webview) that holds the
 * content frame (#active-frame).
 */
export function previewFrame(page: Page): FrameLocator {
  return page.frameLocator('iframe.webview.ready').frameLocator('#active-frame');
}

/** The rendered page inside the preview (#page-frame, sandboxed, scripts off). */
export function renderedFrame(page: Page): FrameLocator {
  return previewFrame(page).frameLocator('#page-frame');
}

/** The CodeLens links titled `title` in the visible editors (all of them: `.first()`, `.nth(i)`). */
export function codeLenses(page: Page, title: string): Locator {
  return page.locator('.codelens-decoration a', { hasText: title });
}

/** The first CodeLens link titled `title`. */
export function codeLens(page: Page, title: string): Locator {
  return codeLenses(page, title).first();
}

/**
 * Waits for the CodeLens titled `title`. The workbench refreshes an editor's lenses only while it has text focus: a
 * refresh still pending when the focus left for a view (its delay grows with how long the provider took, seconds on
 * a loaded machine) is dropped until the editor is focused again (codelensController: a blur cancels it). So the
 * editor is focused every few seconds, as a user looking back at the file would. `index`: the lens of that title to
 * wait for, in the editor's order (0: the first).
 */
export async function waitForCodeLens(page: Page, title: string, timeoutMs = 60_000, index = 0): Promise<void> {
  const lens = codeLenses(page, title).nth(index);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const wait = Math.max(1, Math.min(5_000, deadline - Date.now()));
    if (
      await lens.waitFor({ state: 'visible', timeout: wait }).then(
        () => true,
        () => false,
      )
    )
      return;
    if (Date.now() >= deadline)
      throw new Error(`the CodeLens '${title}' (#${index + 1}) did not show within ${timeoutMs / 1000} s`);
    await page
      .locator('.editor-group-container.active .monaco-editor .view-line')
      .first()
      .click({ position: { x: 2, y: 2 } })
      .catch(() => undefined);
  }
}

/** The active editor tab. */
export function activeTab(page: Page): Locator {
  return page.locator('.tabs-container .tab.active').first();
}

/** The visible text lines of the active text editor. */
export function activeEditorLines(page: Page): Locator {
  return page.locator('.editor-group-container.active .monaco-editor .view-lines').first();
}

/**
 * After a failed test, keeps a screenshot and the workbench transcript under test-artifacts/ui/ (named after the
 * test) and prints where they are. Use as `afterEach(async function () { await keepFailureArtifacts(this, wb); })`.
 */
export async function keepFailureArtifacts(
  ctx: Mocha.Context,
  wb: { saveArtifacts(name: string): Promise<string> } | undefined,
): Promise<void> {
  if (ctx.currentTest?.state !== 'failed' || !wb) return;
  const png = await wb.saveArtifacts(`ui/failed-${ctx.currentTest.fullTitle().replace(/[^\w.-]+/g, '-')}`);
  console.error(`    screenshot ${png}, log ${png.replace(/\.png$/, '.log')}`);
}

/** A view's pane in the side bar, by its title ("Queue Explorer", "Workers"). */
export function viewPane(page: Page, title: string): Locator {
  return page
    .locator('.pane')
    .filter({ has: page.locator('.pane-header', { hasText: title }) })
    .first();
}

/** The first tree row of a pane whose text matches. */
export function row(pane: Locator, text: string | RegExp): Locator {
  return pane.locator('.monaco-list-row', { hasText: text }).first();
}

/** The visible webview's content frame (the dashboard, Results, the designer's preview). */
export function webview(page: Page): FrameLocator {
  return page.frameLocator('iframe.webview.ready:visible').frameLocator('#active-frame');
}

/** Shows the Crawl Studio views; clicking their activity bar item when they are in front would hide them. */
export async function showCrawlStudio(page: Page): Promise<void> {
  if (await viewPane(page, 'Queue Explorer').isVisible()) return;
  await page.locator('.activitybar .action-item a[aria-label^="Crawl Studio"]').first().click();
  await viewPane(page, 'Queue Explorer').waitFor({ state: 'visible', timeout: 30_000 });
}

/** Closes the notification toasts (they cover the views in screenshots), and waits until they are gone. */
export async function clearToasts(page: Page): Promise<void> {
  for (const x of await page.locator('.notifications-toasts .codicon-notifications-clear').all())
    await x.click().catch(() => undefined);
  await until(
    'the toasts to close',
    async () => (await page.locator('.notifications-toasts .notification-toast:visible').count()) === 0,
    10_000,
  ).catch(() => undefined);
}
