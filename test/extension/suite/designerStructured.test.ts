import * as assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { PanelSnapshot } from '../../../src/extension/designer/previewPanel';
import type { SuggestionView } from '../../../src/core/designer/protocol';
import { PRODUCTS, serveProducts, type ProductSite } from '../../support/productSite';

// The designer shows the structured data a page carries and offers it when picking (issue 30): on a product page
// with JSON-LD, microdata and OpenGraph, the preview's Data tab lists each path with its value (the webview
// acknowledges the rows it shows), and adding one writes a field reading it, whose value the preview then shows.

const C = {
  open: 'crawlStudio.designer.openPreview',
  state: 'crawlStudio.designer._state',
  message: 'crawlStudio.designer._message',
  pick: 'crawlStudio.designer._pick',
};

async function until<T>(what: string, probe: () => T | Promise<T>, timeoutMs = 30_000): Promise<NonNullable<T>> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const last = await probe();
    if (last) return last;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('designer: structured data (JSON-LD, microdata, OpenGraph)', function () {
  this.timeout(90_000);
  let site: ProductSite;
  let dir: string;
  let uri: vscode.Uri;
  let editor: vscode.TextEditor;
  const snap = () => vscode.commands.executeCommand<PanelSnapshot | null>(C.state, uri);

  before(async () => {
    await vscode.extensions.getExtension('crawl-studio.crawl-studio')!.activate();
    site = await serveProducts();
    dir = mkdtempSync(join(tmpdir(), 'cs-designer-sd-'));
    const file = join(dir, 'products.crawl.yaml');
    writeFileSync(
      file,
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
    uri = vscode.Uri.file(file);
    editor = await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(uri));
  });

  after(async () => {
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    await site?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('lists the paths the page carries, with their values, in the Data tab', async () => {
    await vscode.commands.executeCommand(C.open, uri);
    const s = await until('the structured data', async () => {
      const x = await snap();
      return x?.state.page && x.state.structured?.length ? x : null;
    });
    const p = PRODUCTS[0]!;
    const offered = new Map(s.state.structured!.map((e) => [`${e.source}: ${e.path}`, e.value]));
    assert.equal(offered.get('jsonld: Product.offers.price'), p.price);
    assert.equal(offered.get('jsonld: Product.brand.name'), p.brand);
    assert.equal(offered.get('microdata: Product.sku'), p.sku);
    assert.equal(offered.get('microdata: Product.offers.priceCurrency'), p.currency);
    assert.equal(offered.get('microdata: Product.image'), `${site.url}/img/${p.sku}.jpg`);
    assert.equal(offered.get('opengraph: og:title'), p.name);
    assert.equal(offered.get('opengraph: product:price:amount'), p.price);
    // The webview shows them: its acknowledgement counts the Data tab's rows.
    await until(
      'the webview to show the Data rows',
      async () => {
        const x = await snap();
        return x?.rendered?.seq === x?.seq && x?.rendered?.data === s.state.structured!.length;
      },
      60_000,
    );
  });

  it('offers the paths whose value a picked element shows, beside its selector', async () => {
    const price = await vscode.commands.executeCommand<SuggestionView | null>(C.pick, uri, 'span.price', 0);
    assert.deepEqual(
      price?.structured?.map((e) => `${e.source}: ${e.path}`),
      ['jsonld: Product.offers.price', 'microdata: Product.offers.price', 'opengraph: product:price:amount'],
    );
    const nav = await vscode.commands.executeCommand<SuggestionView | null>(C.pick, uri, 'nav a', 0);
    assert.ok(nav && !nav.structured, 'a link that shows no structured value offers none');
  });

  it('adds a path as a new field of the item at the cursor, and the preview reads it', async () => {
    const at = editor.document.getText().indexOf('type: product');
    editor.selection = new vscode.Selection(editor.document.positionAt(at), editor.document.positionAt(at));
    await until('the cursor in the item', async () =>
      /items\[0\]/.test((await snap())?.state.analysis?.highlight?.label ?? ''),
    );
    // The message the Data tab's Add button sends (validated like any message from the webview).
    const ok = await vscode.commands.executeCommand<boolean>(C.message, uri, {
      type: 'insertField',
      source: 'jsonld',
      path: 'Product.offers.price',
    });
    assert.equal(ok, true);
    assert.match(editor.document.getText(), /\n {10}name: h1\n {10}price: \{ jsonld: Product\.offers\.price \}/);
    const ok2 = await vscode.commands.executeCommand<boolean>(C.message, uri, {
      type: 'insertField',
      source: 'opengraph',
      path: 'og:title',
    });
    assert.equal(ok2, true);
    const table = await until('the new columns', async () => {
      const x = await snap();
      const t = x?.state.analysis?.items[0];
      return t?.columns.includes('title') && x?.lastInsert?.target === 'field title' ? t : null;
    });
    const row = Object.fromEntries(table.columns.map((c, i) => [c, table.rows[0]!.cells[i]!.value]));
    assert.deepEqual(row, { name: PRODUCTS[0]!.name, price: PRODUCTS[0]!.price, title: PRODUCTS[0]!.name });
  });

  it('drops a malformed insertField message', async () => {
    const before = editor.document.getText();
    for (const bad of [
      { type: 'insertField', source: 'rdfa', path: 'x.y' },
      { type: 'insertField', source: 'jsonld', path: 'a\nname: x' },
      { type: 'insertField', source: 'jsonld' },
    ]) {
      assert.equal(await vscode.commands.executeCommand<boolean>(C.message, uri, bad), false, JSON.stringify(bad));
    }
    assert.equal(editor.document.getText(), before);
  });
});
