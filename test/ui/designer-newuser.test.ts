import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { openWorkbench, repoRoot, type Workbench } from '../extension/harness';
import { book, DEMO_SITE, serveSite, type SiteServer } from '../../src/demo/site';
import {
  activeTab,
  codeLenses,
  keepFailureArtifacts,
  previewFrame,
  quickInput,
  renderedFrame,
  runWhenOffered,
  waitForCodeLens,
  waitForWorkbench,
} from './support/workbench';
import { parseTask } from '../../src/core/task/parse';

// The acceptance, tried as a new user would: "New Task File", then design a task for the demo shop
// entirely in the preview, with the picker, save it, and run it (the CLI's `run`, the same engine the extension's
// Start Crawl drives). Screenshots: test-artifacts/ui/designer-new-*.png.

/** Puts the editor cursor on the line of the task file showing `text` (the preview tracks it). */
async function cursorOn(page: Page, text: string): Promise<void> {
  await page.locator('.monaco-editor .view-line', { hasText: text }).first().click();
}

function run(args: string[], cwd: string, timeoutMs: number): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(repoRoot(), 'dist', 'cli.js'), ...args], {
      cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => child.kill('SIGINT'), timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

describe('crawl designer, as a new user (UI)', function () {
  this.timeout(240_000);
  let wb: Workbench;
  let site: SiteServer;
  let dir: string;

  before(async function () {
    this.timeout(240_000);
    site = await serveSite(DEMO_SITE, 0);
    dir = mkdtempSync(join(tmpdir(), 'cs-designer-new-'));
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

  it('New Task File scaffolds a task and opens its preview', async () => {
    const { page } = wb;
    await waitForWorkbench(page);
    await page.locator('.part.editor').click();
    await runWhenOffered(page, 'Crawl Studio: New Task File');
    const input = quickInput(page).locator('input.input').first();
    await input.waitFor({ state: 'visible' });
    for (let i = 0; i < 100 && (await input.inputValue()) !== 'my-crawl'; i++) await page.waitForTimeout(100);
    await input.fill('books');
    await page.keyboard.press('Enter');
    // The second prompt (start URL) comes with its example value.
    for (let i = 0; i < 100 && (await input.inputValue()) !== 'https://example.com/'; i++)
      await page.waitForTimeout(100);
    await input.fill(`${site.url}/catalogue/page-1.html`);
    await page.keyboard.press('Enter');
    // The preview opens beside the new file, which keeps the focus.
    await page.locator('.tabs-container .tab', { hasText: 'Preview books.crawl.yaml' }).waitFor({ timeout: 30_000 });
    await activeTab(page).filter({ hasText: 'books.crawl.yaml' }).waitFor({ timeout: 10_000 });
    const view = previewFrame(page);
    await view.locator('#status', { hasText: 'rule list (start URL)' }).waitFor({ timeout: 60_000 });
    await renderedFrame(page).locator('article.product_pod').first().waitFor({ timeout: 30_000 });
    assert.match(await activeTab(page).innerText(), /books\.crawl\.yaml/, 'the new file keeps the focus');
    assert.equal(
      await renderedFrame(page).locator('article.product_pod').count(),
      DEMO_SITE.perPage,
      'the start page rendered, a card per book',
    );
    assert.match(await view.locator('#status').innerText(), /HTTP 200/);
    await wb.screenshot('ui/designer-new-1-scaffold.png');
  });

  // Issue 23, item 8: the scaffold's follow selectors were guesses (`a[rel=next]`, `article a`) that match nothing
  // on most sites; they are now read from the start page.
  it('follows what the start page shows: its next-page link and its book links', async () => {
    const { page } = wb;
    const view = previewFrame(page);
    await page
      .locator('.monaco-editor .view-line', { hasText: 'selector: "li.next a"' })
      .first()
      .waitFor({ timeout: 10_000 });
    await page
      .locator('.monaco-editor .view-line', { hasText: 'selector: "article.product_pod h3 a"' })
      .first()
      .waitFor({ timeout: 10_000 });
    await view.locator('vscode-tab-header[data-tab=links]').click();
    await view
      .locator('h3', { hasText: 'follow[1]' })
      .filter({ hasText: `${DEMO_SITE.perPage} kept` })
      .waitFor({ timeout: 10_000 });
    await view.locator('h3', { hasText: 'follow[0]' }).filter({ hasText: '1 kept' }).waitFor({ timeout: 10_000 });
    // The picker still offers the same selector for a click on a title.
    await cursorOn(page, 'selector: "article.product_pod h3 a"');
    await view.locator('#hl-count', { hasText: `${DEMO_SITE.perPage} matches` }).waitFor({ timeout: 10_000 });
    await renderedFrame(page).locator('article.product_pod h3 a').nth(3).click();
    await view.locator('#suggested', { hasText: 'article.product_pod h3 a' }).waitFor({ timeout: 15_000 });
    const follows = await view.locator('h3', { hasText: /^follow\[/ }).allInnerTexts();
    assert.ok(
      follows.some((t) => t.startsWith('follow[0]') && t.includes('1 kept')) &&
        follows.some((t) => t.startsWith('follow[1]') && t.includes(`${DEMO_SITE.perPage} kept`)),
      follows.join(' | '),
    );
    assert.match(await view.locator('#hl-count').innerText(), new RegExp(`\\b${DEMO_SITE.perPage} matches`));
    await wb.screenshot('ui/designer-new-2-follow.png');
  });

  // Issue 32, items 5 and 6: the scaffold proposes the list's items from its repeated blocks and the detail rule's
  // fields from a book page's main content; the detail rule's lens opens a book page (it forced `detail` on the list
  // page) and says which.
  it('designs the detail rule on a book page', async () => {
    const { page } = wb;
    const view = previewFrame(page);
    await page
      .locator('.monaco-editor .view-line', { hasText: 'scope: "article.product_pod"' })
      .first()
      .waitFor({ timeout: 10_000 });
    await view.locator('vscode-tab-header[data-tab=items]').click();
    const card = view.locator('table.items[data-type="product"] tr').nth(1);
    await card.waitFor({ timeout: 15_000 });
    const cardCells = await card.locator('td').allTextContents();
    assert.ok(cardCells.includes(book(1).title) && cardCells.includes(`£${book(1).price}`), cardCells.join(' | '));
    // The "Preview" lens above the detail rule opens a page of that rule: a book the list links to. The rule was just
    // written, and its lens comes with the editor's next lens refresh (waitForCodeLens).
    await waitForCodeLens(page, 'Preview', 60_000, 1);
    await codeLenses(page, 'Preview').nth(1).click();
    await view
      .locator('#status', { hasText: "a page of rule detail from the start page's links" })
      .waitFor({ timeout: 30_000 });
    const row = view.locator('table.items[data-type="product_page"] tr').nth(1);
    await row.waitFor({ timeout: 15_000 });
    const cells = await row.locator('td').allTextContents();
    // Book 1's page (the first the list links to): its title (not the shop's name in the header), its price, and no
    // field missing.
    assert.ok(cells.includes(book(1).title) && cells.includes(`£${book(1).price}`), cells.join(' | '));
    assert.ok(!cells.some((c) => c === 'missing' || c === 'empty' || c.includes('Books to Crawl')), cells.join(' | '));
    await wb.screenshot('ui/designer-new-3-detail.png');
    // Any URL can be typed: another book, read with the same fields.
    await view.locator('#url input').fill(`${site.url}/catalogue/book-7.html`);
    await view.locator('#url input').press('Enter');
    await view
      .locator('table.items[data-type="product_page"] td', { hasText: book(7).title })
      .first()
      .waitFor({ timeout: 30_000 });
  });

  it('saves the task, which validates and runs', async () => {
    const { page } = wb;
    await cursorOn(page, 'name: books');
    await page.keyboard.press('Control+S');
    const file = join(dir, 'books.crawl.yaml');
    const deadline = Date.now() + 10_000;
    while (!/related_links/.test(readFileSync(file, 'utf8')) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    const text = readFileSync(file, 'utf8');
    const { task, diagnostics } = parseTask(text, file);
    assert.deepEqual(diagnostics, []);
    assert.deepEqual(
      task!.rules[0]!.follow.map((f) => (f.kind === 'links' ? f.selector : null)),
      ['li.next a', 'article.product_pod h3 a'],
    );
    await wb.screenshot('ui/designer-new-4-saved.png');
    const r = await run(['run', file, '--workers', '1', '--concurrency', '4'], dir, 150_000);
    console.log(
      r.out
        .split('\n')
        .filter((l) => /finished in|pages fetched|items extracted|items stored/.test(l))
        .map((l) => `      ${l}`)
        .join('\n'),
    );
    assert.equal(r.code, 0, r.out);
    const items = Number(/items extracted\s+([\d,]+)/.exec(r.out)?.[1]?.replace(/,/g, '') ?? '0');
    // Every book of every list page, twice: a `product` from its list page's block and a `product_page` from its
    // own page (the template's `maxDepth: 3` stopped the 5-page list at page 4).
    assert.equal(items, 2 * DEMO_SITE.listPages * DEMO_SITE.perPage, r.out);
    assert.ok(existsSync(join(dir, '.crawl')));
  });
});
