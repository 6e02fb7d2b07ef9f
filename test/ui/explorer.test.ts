import * as assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { openWorkbench, type Workbench } from '../extension/harness';
import { renderPage, serveSite, type SiteOptions, type SiteServer } from '../../src/demo/site';
import {
  activeEditorLines,
  codeLens,
  explorerItem,
  keepFailureArtifacts,
  openCommandPalette,
  paletteRow,
  quickInput,
  row,
  viewPane,
  waitForCodeLens,
  waitForWorkbench,
} from './support/workbench';
import { alive, until } from '../support/until';
import { demoShopTask } from '../support/demoTask';

// A new user's first crawl in the real workbench: open a folder with a task file, Start Crawl from the CodeLens,
// watch the Queue Explorer fill and drain, stop and restart workers mid-crawl, enqueue a URL by right-clicking
// the queue, retry a failed job from the tree. Redis is the managed one the extension starts by itself.
// Screenshots: test-artifacts/ui/explorer-*.png.

/** The list page held until the test lets it go: the crawl cannot end before. */
const HELD = '/catalogue/page-2.html';

async function contextMenu(page: Page, target: Locator, label: string): Promise<void> {
  const menu = page.locator('.context-view .monaco-menu');
  for (let attempt = 0; ; attempt++) {
    await target.click({ button: 'right' });
    const item = page.locator('.context-view .action-item', { hasText: label }).first();
    await item.waitFor({ state: 'visible', timeout: 10_000 });
    if (attempt === 0) await item.click();
    else {
      // The keyboard, as a user whose click went nowhere would: move onto the item, then Enter.
      await item.hover();
      await item.locator('.action-menu-item').first().focus();
      await page.keyboard.press('Enter');
    }
    // On a loaded machine a click can land while the menu is still laying out, or while the live tree re-renders
    // the row the menu belongs to, and be lost (seen in CI twice, the menu stayed open with the item
    // highlighted): the menu closing is the sign the action ran.
    const closed = await menu.waitFor({ state: 'hidden', timeout: 3_000 }).then(
      () => true,
      () => false,
    );
    if (closed) return;
    if (attempt >= 2) throw new Error(`the context menu item '${label}' took neither a click nor the keyboard`);
    await page.keyboard.press('Escape');
  }
}

describe('Queue Explorer (UI, new user)', function () {
  this.timeout(240_000);
  let wb: Workbench;
  let site: SiteServer;
  /** Answers the held list page (HELD), once: the crawl can end only after it. */
  let release = () => {};

  before(async function () {
    this.timeout(180_000);
    // A polite shop whose second list page is held until the test lets it go (when it stops the workers), so the
    // crawl outlasts the steps that watch it run whatever the machine's load: a loaded machine's workbench took
    // longer than a whole crawl set by the clock. The 40-odd pages it links to come after. book-5 answers 404.
    const options: SiteOptions = { listPages: 5, perPage: 10 };
    let held: (() => void) | null = null;
    let released = false;
    release = () => {
      released = true;
      held?.();
      held = null;
    };
    site = await serveSite(
      options,
      0,
      (req, res) => {
        if (req.url === '/catalogue/book-5.html') {
          res.writeHead(404).end('gone');
          return true;
        }
        if (req.url === HELD && !released) {
          held = () => {
            const page = renderPage(HELD, options)!;
            res.writeHead(page.status, { 'content-type': page.type }).end(page.body);
          };
          res.on('close', () => {
            if (!res.writableEnded) held = null;
          });
          return true;
        }
        return false;
      },
      30,
    );
    const folder = mkdtempSync(join(tmpdir(), 'cs-ui-explorer-'));
    writeFileSync(
      join(folder, 'shop.crawl.yaml'),
      // The held page waits as long as the steps before its release take: no timeout of the task's may end it.
      demoShopTask({ name: 'shop', siteUrl: site.url, perHost: { concurrency: 2, delay: '300ms' }, timeout: '600s' }),
    );
    wb = await openWorkbench({
      workspaceFolder: folder,
      settings: { 'crawlStudio.workers': 2, 'crawlStudio.refreshInterval': 500 },
    });
    await waitForWorkbench(wb.page, { file: 'shop.crawl.yaml' });
  });

  afterEach(async function () {
    await keepFailureArtifacts(this, wb);
  });

  after(async () => {
    release();
    await wb?.close();
    await site?.close();
  });

  it('starts a crawl from the CodeLens and shows the queue filling and draining', async () => {
    const { page } = wb;
    await explorerItem(page, 'shop.crawl.yaml').click();
    const lens = codeLens(page, 'Start Crawl');
    await lens.waitFor({ state: 'visible', timeout: 30_000 });
    await wb.screenshot('ui/explorer-1-task-with-codelens.png');
    await lens.click();

    await page.locator('.activitybar .action-item a[aria-label^="Crawl Studio"]').first().click();
    const explorer = viewPane(page, 'Queue Explorer');
    const queue = row(explorer, /^shop/);
    await queue.waitFor({ state: 'visible', timeout: 60_000 });
    const first = await queue.innerText();
    // Counts move while the crawl runs.
    let later = first;
    for (let i = 0; i < 40 && later === first; i++) {
      await page.waitForTimeout(250);
      later = await queue.innerText();
    }
    assert.notEqual(later, first, 'queue counts changed during the crawl');
    await queue.click();
    await row(explorer, 'completed').waitFor({ state: 'visible' });
    // The workbench asks for lenses again after a delay it sets from how long the provider took (up to a minute on a
    // loaded machine), once the running crawls change.
    await waitForCodeLens(page, 'Stop Crawl');
    // Issue 23, item 7: the editor title said "Start Crawl" while the crawl ran; it offers Stop Crawl now.
    const titleActions = page.locator('.editor-group-container .editor-actions');
    await titleActions
      .locator('a.action-label[aria-label^="Stop Crawl"]')
      .first()
      .waitFor({ state: 'visible', timeout: 60_000 });
    assert.equal(
      await titleActions.locator('a.action-label[aria-label^="Start Crawl"]').count(),
      0,
      'no Start Crawl in the editor title while it runs',
    );
    await wb.screenshot('ui/explorer-2-running.png');
  });

  it('stops and restarts workers mid-crawl', async () => {
    const { page } = wb;
    const workers = viewPane(page, 'Workers');
    await row(workers, /^PID/).waitFor({ state: 'visible', timeout: 30_000 });
    const pidsShown = async () =>
      (await workers.locator('.monaco-list-row', { hasText: /^PID \d+/ }).allTextContents()).map((t) =>
        Number(/^PID (\d+)/.exec(t)![1]),
      );
    const before = await pidsShown();
    assert.ok(
      before.length > 0 && before.every(alive),
      `the workers shown are running processes: ${before.join(', ')}`,
    );
    // The held page answered now: the workers stop once their pages in flight end, with its 40-odd pages queued.
    release();
    await workers.locator('.pane-header').hover();
    await workers.locator('.pane-header .action-label[aria-label^="Stop Workers"]').click();
    await workers
      .locator('.monaco-list-row', { hasText: /^PID/ })
      .first()
      .waitFor({ state: 'detached', timeout: 60_000 });
    await until('the stopped workers to exit', () => !before.some(alive), 30_000);
    await wb.screenshot('ui/explorer-3-workers-stopped.png');

    await openCommandPalette(page, 'Crawl Studio: Start Workers');
    await paletteRow(page, 'Crawl Studio: Start Workers…').click();
    const input = quickInput(page).locator('input.input').first();
    await input.waitFor({ state: 'visible' });
    await input.fill('1');
    await input.press('Enter');
    await row(workers, /^PID/).waitFor({ state: 'visible', timeout: 30_000 });
    const after = await pidsShown();
    assert.equal(after.length, 1, `one worker asked for, shown: ${after.join(', ')}`);
    assert.ok(
      alive(after[0]!) && !before.includes(after[0]!),
      `a new running process (${after[0]}; before: ${before.join(', ')})`,
    );
    await wb.screenshot('ui/explorer-4-workers-restarted.png');
  });

  it('enqueues a URL by right-clicking the queue', async () => {
    const { page } = wb;
    const explorer = viewPane(page, 'Queue Explorer');
    await contextMenu(page, row(explorer, /^shop/), 'Enqueue URL');
    const input = quickInput(page).locator('input.input').first();
    await input.waitFor({ state: 'visible' });
    // The person goes to copy the URL elsewhere (here: clicks into the editor), as the tree refreshes beside the box:
    // the box stays open (it closed on focus out, and the context menu's focus coming back to the tree closed it).
    await activeEditorLines(page).click();
    await page.waitForTimeout(500);
    assert.ok(await input.isVisible(), 'the Enqueue URL box stays open when the focus moves away');
    await input.fill(`${site.url}/about.html`);
    await input.press('Enter');
    const deadline = Date.now() + 60_000;
    while (!site.hits.get('/about.html') && Date.now() < deadline) await page.waitForTimeout(250);
    assert.ok(site.hits.get('/about.html'), 'the enqueued page was fetched');
  });

  it('drains, then retries the failed job from the tree', async () => {
    const { page } = wb;
    const explorer = viewPane(page, 'Queue Explorer');
    const queue = row(explorer, /^shop/);
    // Drained: nothing waiting or active, the 404 in failed.
    const deadline = Date.now() + 120_000;
    while (!/0 waiting · 0 active · 1 failed/.test(await queue.innerText()) && Date.now() < deadline)
      await page.waitForTimeout(500);
    assert.match(await queue.innerText(), /0 waiting · 0 active · 1 failed/);
    await waitForCodeLens(page, 'Start Crawl', 30_000);
    const failed = row(explorer, /^failed/);
    await failed.click();
    const job = row(explorer, 'book-5.html');
    await job.waitFor({ state: 'visible', timeout: 15_000 });
    await wb.screenshot('ui/explorer-5-drained-failed-job.png');
    const before = site.hits.get('/catalogue/book-5.html') ?? 0;
    const fetched = () => (site.hits.get('/catalogue/book-5.html') ?? 0) > before;
    // When the tree refreshes under the open menu (the run ending beside it), Retry Job gets no row and says so:
    // "that job is no longer in the Queue Explorer …: pick it again". A user picks it again; so does the test.
    const gone = page.locator('.notifications-toasts .notification-toast', {
      hasText: 'no longer in the Queue Explorer',
    });
    for (let attempt = 0; attempt < 3 && !fetched(); attempt++) {
      await contextMenu(page, job, 'Retry Job');
      const until = Date.now() + 60_000;
      while (!fetched() && (await gone.count()) === 0 && Date.now() < until) await page.waitForTimeout(250);
      if (fetched() || (await gone.count()) === 0) break;
      for (const t of await gone.all())
        await t
          .locator('.codicon-notifications-clear')
          .click()
          .catch(() => undefined);
      await job.waitFor({ state: 'visible', timeout: 15_000 });
    }
    assert.ok(fetched(), 'the retried job was fetched again');
    await wb.screenshot('ui/explorer-6-after-retry.png');
  });
});
