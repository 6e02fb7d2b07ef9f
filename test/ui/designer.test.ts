import * as assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openWorkbench, type Workbench } from '../extension/harness';
import { DEMO_SITE, serveSite, type SiteServer } from '../../src/demo/site';
import {
  activeEditorLines,
  activeTab,
  explorerItem,
  keepFailureArtifacts,
  previewFrame,
  renderedFrame,
  runCommand,
  runWhenOffered,
  waitForWorkbench,
} from './support/workbench';

// The designer as a person uses it, in the real workbench: open a task file, open the preview, type a selector
// and watch the items table change, click an element in the rendered page, insert the suggested selector.
// Screenshots: test-artifacts/ui/designer-*.png.
//
// The preview is a webview: the workbench puts it in an iframe (iframe.webview) that holds the content frame
// (#active-frame), which holds the rendered page (#page-frame, sandboxed, scripts off).

const TASK = (base: string) => `# The demo shop's list pages: one card item per book.
name: shop
start:
  - ${base}/catalogue/page-1.html
rules:
  - name: list
    follow:
      - { selector: "li.next a", to: list }
    items:
      - type: card
        scope: article.product_pod
        fields:
          title: h3 a
          price: p.price_color
`;

describe('crawl designer (UI)', function () {
  this.timeout(180_000);
  let wb: Workbench;
  let site: SiteServer;
  let dir: string;

  before(async function () {
    this.timeout(240_000);
    // A hostile page: scripts, handlers, a refresh and a beacon; the preview must run none of it.
    site = await serveSite(DEMO_SITE, 0, (req, res) => {
      if (req.url === '/mislabelled.html') {
        // UTF-8 bytes that the header calls iso-8859-1 (issue 30): read as the header says, with a warning.
        res
          .writeHead(200, { 'content-type': 'text/html; charset=iso-8859-1' })
          .end(
            Buffer.from(
              '<html><head><meta charset="utf-8"></head><body><h1 class="headline">Crème brûlée</h1></body></html>',
              'utf8',
            ),
          );
        return true;
      }
      if (req.url !== '/hostile.html') return false;
      res.writeHead(200, { 'content-type': 'text/html' }).end(`<html><head><title>hostile</title>
<meta http-equiv="refresh" content="0;url=/catalogue/page-2.html"><base href="/elsewhere/">
<script>document.title = 'ran'; document.documentElement.setAttribute('data-ran', '1'); fetch('/beacon?script');</script></head>
<body onload="document.body.setAttribute('data-ran', 'onload')"><h1 class="headline">Hostile</h1>
<img src="/beacon?img" onerror="document.body.setAttribute('data-ran', 'onerror')">
<a class="go" href="javascript:document.body.setAttribute('data-ran', 'href')">go</a>
<iframe src="/beacon?iframe"></iframe><object data="/beacon?object"></object></body></html>`);
      return true;
    });
    dir = mkdtempSync(join(tmpdir(), 'cs-designer-ui-'));
    writeFileSync(join(dir, 'shop.crawl.yaml'), TASK(site.url));
    wb = await openWorkbench({ workspaceFolder: dir, viewport: { width: 1600, height: 1000 } });
  });

  afterEach(async function () {
    await keepFailureArtifacts(this, wb);
  });

  after(async () => {
    await wb?.close();
    await site?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('opens the preview of a task file beside it', async () => {
    const { page } = wb;
    await waitForWorkbench(page, { file: 'shop.crawl.yaml' });
    await explorerItem(page, 'shop.crawl.yaml').click();
    await activeTab(page).filter({ hasText: 'shop.crawl.yaml' }).waitFor({ state: 'visible', timeout: 30_000 });
    await activeEditorLines(page).filter({ hasText: 'name: shop' }).waitFor({ state: 'visible' });
    await runWhenOffered(page, 'Crawl Studio: Open Preview');
    const view = previewFrame(page);
    // The items table fills once the page is fetched and the list rule has run.
    await view.locator('table.items tr').nth(DEMO_SITE.perPage).waitFor({ state: 'attached', timeout: 60_000 });
    assert.equal(await view.locator('table.items tr').count(), DEMO_SITE.perPage + 1);
    assert.match((await view.locator('table.items td').nth(2).textContent()) ?? '', /^£\d+\.\d\d$/);
    // The rendered page is there, scripts off.
    await renderedFrame(page).locator('article.product_pod').first().waitFor({ state: 'visible', timeout: 30_000 });
    assert.match((await view.locator('#status').textContent()) ?? '', /HTTP 200 .* rule list \(start URL\)/);
    await wb.screenshot('ui/designer-preview.png');
  });

  it('re-runs the rule as a selector is typed: the table changes', async () => {
    const { page } = wb;
    const view = previewFrame(page);
    // Select the price selector in the editor and type another one over it.
    await activeEditorLines(page).locator('.view-line', { hasText: 'price: p.price_color' }).click();
    await page.keyboard.press('End');
    for (let i = 0; i < 'p.price_color'.length; i++) await page.keyboard.press('Shift+ArrowLeft');
    await page.keyboard.type('p.price', { delay: 40 });
    // `p.price` matches nothing: every price is marked missing.
    await view
      .locator('table.items .cell-missing')
      .nth(DEMO_SITE.perPage - 1)
      .waitFor({ state: 'attached', timeout: 15_000 });
    assert.equal(await view.locator('table.items .cell-missing').count(), DEMO_SITE.perPage);
    // The cursor is on that selector: the highlight bar shows it with its count.
    await view.locator('#hl-bar code', { hasText: 'p.price' }).waitFor({ timeout: 10_000 });
    assert.equal(await view.locator('#hl-count').textContent(), '0 matches');
    await page.keyboard.type('_color', { delay: 40 });
    await view.locator('#hl-count', { hasText: `${DEMO_SITE.perPage} matches` }).waitFor({ timeout: 15_000 });
    assert.equal(await view.locator('table.items .cell-missing').count(), 0);
    // Highlighted in the rendered page.
    await renderedFrame(page)
      .locator('p.price_color[data-cs-hl]')
      .nth(DEMO_SITE.perPage - 1)
      .waitFor({ state: 'attached', timeout: 10_000 });
    await wb.screenshot('ui/designer-typed.png');
  });

  it('suggests a selector for an element clicked in the rendered page and inserts it', async () => {
    const { page } = wb;
    const view = previewFrame(page);
    // Point the field at something wrong, then fix it with the picker.
    await page.keyboard.press('End');
    for (let i = 0; i < 'p.price_color'.length; i++) await page.keyboard.press('Shift+ArrowLeft');
    await page.keyboard.type('h3', { delay: 40 });
    await view.locator('#hl-bar code', { hasText: /^h3$/ }).waitFor({ timeout: 10_000 });
    // The cursor stays in the price field of the card item: the suggestion is relative to the card.
    await renderedFrame(page).locator('article.product_pod p.price_color').nth(2).click();
    const suggested = view.locator('#suggested');
    await suggested.waitFor({ timeout: 15_000 });
    assert.equal(await suggested.textContent(), 'p.price_color');
    const insert = view.locator('#insert');
    assert.match((await insert.textContent()) ?? '', /Insert into list items\[0\]\.price/);
    await renderedFrame(page).locator('p.price_color[data-cs-picked]').waitFor({ state: 'attached' });
    await wb.screenshot('ui/designer-picked.png');
    await insert.click();
    await view.locator('#inserted').waitFor({ timeout: 10_000 });
    // The task file's editor (the active group is the preview's now).
    await page
      .locator('.monaco-editor .view-line', { hasText: 'price: p.price_color' })
      .first()
      .waitFor({ timeout: 10_000 });
    // `h3` also matches once per card, so the count alone cannot tell the re-run rule from the old one: wait
    // for the prices to come back in the table (the old rule put the titles there).
    await view
      .locator('table.items td')
      .nth(2)
      .filter({ hasText: /^£\d+\.\d\d$/ })
      .waitFor({ timeout: 15_000 });
    await view.locator('#hl-bar code', { hasText: /^p\.price_color$/ }).waitFor({ timeout: 15_000 });
    assert.equal(await view.locator('#hl-count').textContent(), `${DEMO_SITE.perPage} matches`);
    await wb.screenshot('ui/designer-inserted.png');
  });

  it('renders a hostile page inert: no script, no handler, no refresh, no request', async () => {
    const { page } = wb;
    const view = previewFrame(page);
    await view.locator('#url input').fill(`${site.url}/hostile.html`);
    await view.locator('#url input').press('Enter');
    const frame = renderedFrame(page);
    await frame.locator('h1.headline').waitFor({ timeout: 30_000 });
    await frame.locator('a.go').click();
    await view.locator('#suggested', { hasText: 'a.go' }).waitFor({ timeout: 15_000 });
    // What follows checks absences (no script ran, no navigation, no request): a moment for them, then none.
    await page.waitForTimeout(1500);
    assert.equal(await frame.locator('[data-ran]').count(), 0);
    assert.equal(await frame.locator('h1.headline').count(), 1, 'no refresh or navigation replaced the page');
    assert.equal(await frame.locator('script, iframe, object, base, meta[http-equiv=refresh]').count(), 0);
    const beacons = [...site.hits.keys()].filter((k) => k.startsWith('/beacon'));
    assert.deepEqual(beacons, [], 'the rendered page made no request');
    await wb.screenshot('ui/designer-hostile.png');
    // Back to the list page for the next test (from the cache).
    await view.locator('#url input').fill(`${site.url}/catalogue/page-1.html`);
    await view.locator('#url input').press('Enter');
    await frame.locator('article.product_pod').first().waitFor({ timeout: 30_000 });
  });

  it('says in its banner when the Content-Type charset garbles a page its <meta charset> reads cleanly', async () => {
    const view = previewFrame(wb.page);
    await view.locator('#url input').fill(`${site.url}/mislabelled.html`);
    await view.locator('#url input').press('Enter');
    await view
      .locator('#banner', { hasText: "Content-Type says charset windows-1252 but the page's <meta> says utf-8" })
      .waitFor({ timeout: 30_000 });
    await renderedFrame(wb.page).locator('h1.headline', { hasText: 'CrÃ¨me' }).waitFor({ timeout: 15_000 });
    await wb.screenshot('ui/designer-charset.png');
    // Back to the list page for the next test (from the cache); its banner is clear again.
    await view.locator('#url input').fill(`${site.url}/catalogue/page-1.html`);
    await view.locator('#url input').press('Enter');
    await renderedFrame(wb.page).locator('article.product_pod').first().waitFor({ timeout: 30_000 });
    await view.locator('#banner').waitFor({ state: 'hidden', timeout: 15_000 });
  });

  it('clicking a link in the rendered page picks it instead of navigating', async () => {
    const { page } = wb;
    const view = previewFrame(page);
    // Cursor out of the item (the keyboard is in the webview now): the suggestion is for the whole page.
    await page.locator('.monaco-editor .view-line', { hasText: 'name: shop' }).first().click();
    // The pick is relative to the cursor the extension host last heard of: wait until the preview shows it moved.
    await view.locator('#hl-bar .label', { hasText: /^Put the cursor on a selector/ }).waitFor({ timeout: 10_000 });
    await renderedFrame(page).locator('article.product_pod h3 a').nth(5).click();
    await view.locator('#suggested', { hasText: 'article.product_pod h3 a' }).waitFor({ timeout: 15_000 });
    assert.match((await view.locator('#pick-bar').textContent()) ?? '', /20 matches \(a list: all: true\)/);
    // Still the same page in the frame.
    assert.equal(await renderedFrame(page).locator('article.product_pod').count(), DEMO_SITE.perPage);
    await wb.screenshot('ui/designer-list-pick.png');
  });

  // Issue 23, item 10: the preview did not come back after a reload (the results and the dashboard did).
  it('comes back after a window reload, on the page it showed', async () => {
    const { page } = wb;
    const view = previewFrame(page);
    await view.locator('#url input').fill(`${site.url}/catalogue/page-2.html`);
    await view.locator('#url input').press('Enter');
    await view.locator('#status', { hasText: /HTTP 200/ }).waitFor({ timeout: 30_000 });
    await renderedFrame(page).locator('h1', { hasText: 'page 2 of' }).waitFor({ timeout: 30_000 });
    const reloaded = page.waitForEvent('load', { timeout: 60_000 });
    await runCommand(page, 'Developer: Reload Window');
    await reloaded;
    await waitForWorkbench(page);
    const tab = page.locator('.tabs-container .tab', { hasText: 'Preview shop.crawl.yaml' }).first();
    await tab.waitFor({ timeout: 60_000 });
    await tab.click();
    const again = previewFrame(page);
    await again.locator('#status', { hasText: /cached copy/ }).waitFor({ timeout: 60_000 });
    await renderedFrame(page).locator('h1', { hasText: 'page 2 of' }).waitFor({ timeout: 30_000 });
    await again.locator('table.items tr').nth(DEMO_SITE.perPage).waitFor({ state: 'attached', timeout: 30_000 });
    // The same page, from the designer's cache rather than fetched again, with its items.
    assert.match(await again.locator('#status').innerText(), /HTTP 200.*cached copy/s);
    assert.match(await renderedFrame(page).locator('h1').first().innerText(), /page 2 of/);
    assert.ok(
      (await again.locator('table.items tr').count()) > DEMO_SITE.perPage,
      'a row per book of the page, under the header',
    );
    await wb.screenshot('ui/designer-restored-after-reload.png');
  });
});
