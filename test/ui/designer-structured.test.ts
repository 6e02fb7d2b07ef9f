import * as assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openWorkbench, type Workbench } from '../extension/harness';
import { PRODUCTS, serveProducts, type ProductSite } from '../support/productSite';
import {
  activeEditorLines,
  activeTab,
  explorerItem,
  keepFailureArtifacts,
  previewFrame,
  renderedFrame,
  runWhenOffered,
  waitForWorkbench,
} from './support/workbench';

// The designer's structured data as a person uses it (issue 30), in the real workbench: the preview's Data tab
// lists the product page's JSON-LD, microdata and OpenGraph paths with their values; Add writes one as a field
// and the items table shows its value; clicking the price in the rendered page offers the same paths beside the
// selector. Screenshots: test-artifacts/ui/designer-structured-*.png.

describe('crawl designer: structured data (UI)', function () {
  this.timeout(180_000);
  let wb: Workbench;
  let site: ProductSite;
  let dir: string;

  before(async function () {
    this.timeout(240_000);
    site = await serveProducts();
    dir = mkdtempSync(join(tmpdir(), 'cs-designer-sd-ui-'));
    writeFileSync(
      join(dir, 'products.crawl.yaml'),
      `name: products
start:
  - ${site.url}/p/1
rules:
  - name: product
    items:
      - type: product
        fields:
          name: h1
`,
    );
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

  it('lists what the page carries in the Data tab, and Add writes a field the table then shows', async () => {
    const { page } = wb;
    const p = PRODUCTS[0]!;
    await waitForWorkbench(page, { file: 'products.crawl.yaml' });
    await explorerItem(page, 'products.crawl.yaml').click();
    await activeTab(page).filter({ hasText: 'products.crawl.yaml' }).waitFor({ state: 'visible', timeout: 30_000 });
    await activeEditorLines(page).filter({ hasText: 'name: products' }).waitFor({ state: 'visible' });
    await runWhenOffered(page, 'Crawl Studio: Open Preview');
    const view = previewFrame(page);
    await view.locator('#items table.items tr').nth(1).waitFor({ state: 'attached', timeout: 60_000 });
    await view.locator('vscode-tab-header[data-tab="data"]').click();
    const row = (source: string, path: string) =>
      view.locator(`table.structured[data-source="${source}"] tr`, {
        has: view.locator('code', { hasText: new RegExp(`^${path.replace(/\./g, '\\.')}$`) }),
      });
    await row('jsonld', 'Product.offers.price').waitFor({ state: 'visible', timeout: 30_000 });
    assert.equal(await row('jsonld', 'Product.offers.price').locator('td').nth(1).textContent(), p.price);
    assert.equal(await row('microdata', 'Product.sku').locator('td').nth(1).textContent(), p.sku);
    assert.equal(await row('opengraph', 'og:title').locator('td').nth(1).textContent(), p.name);
    await wb.screenshot('ui/designer-structured-data.png');
    // The cursor is at the top of the file, in no item: the field goes to the first item of the rule shown.
    await row('jsonld', 'Product.offers.price').locator('vscode-button').click();
    await view.locator('#inserted').waitFor({ timeout: 15_000 });
    await page
      .locator('.monaco-editor .view-line', { hasText: 'price: { jsonld: Product.offers.price }' })
      .first()
      .waitFor({ timeout: 15_000 });
    await view.locator('vscode-tab-header[data-tab="items"]').click();
    await view.locator('#items table.items th', { hasText: /^price$/ }).waitFor({ timeout: 15_000 });
    await view
      .locator('#items table.items td', { hasText: new RegExp(`^${p.price.replace('.', '\\.')}$`) })
      .waitFor({ timeout: 15_000 });
  });

  it('offers the structured paths of a clicked value beside its selector', async () => {
    const { page } = wb;
    const view = previewFrame(page);
    await renderedFrame(page).locator('span.price').click();
    await view.locator('#suggested').waitFor({ timeout: 15_000 });
    const offers = view.locator('#pick-bar .alt code');
    await offers.filter({ hasText: 'product:price:amount' }).waitFor({ timeout: 15_000 });
    const paths = await offers.allTextContents();
    for (const path of ['Product.offers.price', 'product:price:amount'])
      assert.ok(paths.includes(path), `${path} in ${paths.join(', ')}`);
    assert.equal(await view.locator('#pick-bar .add-structured').count(), 3);
    await wb.screenshot('ui/designer-structured-pick.png');
  });
});
