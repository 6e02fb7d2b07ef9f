import * as assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { openWorkbench, type Workbench } from '../extension/harness';
import { serveHttp, type HttpServer } from '../support/services';
import {
  codeLens,
  explorerItem,
  keepFailureArtifacts,
  runCommand,
  waitForWorkbench,
  webview,
} from './support/workbench';

// What changed since the last crawl, as a person sees it in the real workbench (issue 33): two crawls of a shop
// whose price of a changes, d appears and c disappears; the Results view's Changes filter shows the changed price
// struck through → new, the removed item, and the dashboard says what the run did. Screenshots:
// test-artifacts/ui/changes-*.png.

type Catalogue = Record<string, { name: string; price: string }>;
const BEFORE: Catalogue = {
  a: { name: 'Apple', price: '10.00' },
  b: { name: 'Bread', price: '2.50' },
  c: { name: 'Cheese', price: '7.00' },
};
const AFTER: Catalogue = {
  a: { name: 'Apple', price: '12.00' },
  b: { name: 'Bread', price: '2.50' },
  d: { name: 'Dates', price: '4.00' },
};

describe('What changed: the Results change filter and the dashboard (UI)', function () {
  this.timeout(240_000);
  let wb: Workbench;
  let web: HttpServer;
  let catalogue = BEFORE;

  before(async function () {
    this.timeout(180_000);
    web = await serveHttp((req, res) => {
      res.setHeader('content-type', 'text/html');
      const m = /^\/p\/(\w+)$/.exec(req.url ?? '');
      if (m) {
        const it = catalogue[m[1]!];
        if (!it) return res.writeHead(404).end('<p>gone</p>');
        return res.end(
          `<article><h1>${it.name}</h1><span class="sku">${m[1]}</span><span class="price">${it.price}</span></article>`,
        );
      }
      res.end(
        `<ul>${Object.keys(catalogue)
          .map((k) => `<li><a href="/p/${k}">${k}</a></li>`)
          .join('')}</ul>`,
      );
    });
    const folder = mkdtempSync(join(tmpdir(), 'cs-ui-changes-'));
    writeFileSync(
      join(folder, 'watched.crawl.yaml'),
      `name: watched
start: [${web.url}/]
rules:
  - name: list
    match: ["${web.url}/"]
    follow:
      - selector: "li a"
        to: product
  - name: product
    match: ["**/p/*"]
    items:
      - type: product
        scope: article
        key: [sku]
        fields:
          sku: .sku
          name: h1
          price: .price
`,
    );
    wb = await openWorkbench({
      workspaceFolder: folder,
      settings: { 'crawlStudio.workers': 1, 'crawlStudio.concurrency': 2 },
    });
    await waitForWorkbench(wb.page, { file: 'watched.crawl.yaml' });
  });

  afterEach(async function () {
    await keepFailureArtifacts(this, wb);
  });

  after(async () => {
    await wb?.close();
    await web?.close();
  });

  async function crawlToTheEnd(page: Page): Promise<void> {
    for (const t of await page.locator('.notifications-toasts .notification-toast').all())
      await t
        .locator('.codicon-notifications-clear')
        .click()
        .catch(() => undefined);
    const lens = codeLens(page, 'Start Crawl');
    await lens.waitFor({ state: 'visible', timeout: 60_000 });
    await lens.click();
    await page
      .locator('.notifications-toasts', { hasText: "Crawl 'watched' finished" })
      .first()
      .waitFor({ timeout: 120_000 });
  }

  it("shows a run's changed price struck through, the added and the removed item, under each filter", async () => {
    const { page } = wb;
    await explorerItem(page, 'watched.crawl.yaml').click();
    await crawlToTheEnd(page);
    catalogue = AFTER;
    await crawlToTheEnd(page);
    await codeLens(page, 'Open Results').click();
    const wv = webview(page);
    await wv.locator('.row:not(.loading)').first().waitFor({ state: 'visible', timeout: 60_000 });
    const changes = wv.locator('select[aria-label="Changes"]');
    await changes.selectOption('changed');
    const diff = wv.locator('.row.chg-changed .cell.diff');
    await diff.first().waitFor({ timeout: 30_000 });
    assert.equal(await diff.locator('del').innerText(), '10.00');
    assert.equal(await diff.locator('ins').innerText(), '12.00');
    assert.equal(await wv.locator('.row:not(.loading)').count(), 1);
    assert.match(
      await wv.locator('select[aria-label="Run of the changes"] option:checked').innerText(),
      /^Latest complete run .* \+1 ~1 −1$/,
    );
    await wb.screenshot('ui/changes-1-changed.png');

    await changes.selectOption('removed');
    await wv.locator('.row.chg-removed', { hasText: 'Cheese' }).waitFor({ timeout: 30_000 });
    assert.equal(await wv.locator('.row:not(.loading)').count(), 1);
    await changes.selectOption('all');
    await wv.locator('.row.chg-added', { hasText: 'Dates' }).waitFor({ timeout: 30_000 });
    assert.deepEqual(await wv.locator('.row:not(.loading) .cell.change').allInnerTexts(), [
      '~ changed',
      '− removed',
      '+ added',
    ]);
    await wb.screenshot('ui/changes-2-all.png');
  });

  it('says on the dashboard what the finished run added, changed and removed', async () => {
    const { page } = wb;
    await explorerItem(page, 'watched.crawl.yaml').click();
    await runCommand(page, 'Crawl Studio: Open Dashboard');
    const line = webview(page).locator('.changes [data-figure="changes"]');
    await line.waitFor({ timeout: 60_000 });
    assert.equal(await line.innerText(), 'This run: 1 added, 1 changed, 1 removed');
    await wb.screenshot('ui/changes-3-dashboard.png');
  });
});
