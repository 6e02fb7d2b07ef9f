import * as assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openWorkbench, type Workbench } from '../extension/harness';
import { serveSite, type SiteServer } from '../../src/demo/site';
import {
  codeLens,
  explorerItem,
  keepFailureArtifacts,
  quickInput,
  runCommand,
  waitForCodeLens,
  waitForWorkbench,
  webview,
} from './support/workbench';
import { demoShopTask, PRICE_FIELD } from '../support/demoTask';

// A new user's look at a crawl's results in the real workbench: Start Crawl, open Results while it runs and
// watch rows arrive, sort by price, filter titles, spot the broken selector in Field quality, open a row, and
// export the filtered view as CSV through the save dialog. Screenshots: test-artifacts/ui/results-*.png.

describe('Results view (UI)', function () {
  this.timeout(240_000);
  let wb: Workbench;
  let site: SiteServer;
  let folder: string;

  before(async function () {
    this.timeout(180_000);
    site = await serveSite({ listPages: 10, perPage: 20 }, 0, undefined, 60);
    folder = mkdtempSync(join(tmpdir(), 'cs-ui-results-'));
    writeFileSync(
      join(folder, 'shop.crawl.yaml'),
      demoShopTask({
        name: 'shop',
        siteUrl: site.url,
        perHost: { concurrency: 2, delay: '50ms' },
        fields: { title: 'h1', price: PRICE_FIELD, upc: 'td.upc', isbn: 'td.isbn' },
      }),
    );
    wb = await openWorkbench({
      workspaceFolder: folder,
      settings: { 'crawlStudio.workers': 1, 'crawlStudio.concurrency': 2 },
    });
    await waitForWorkbench(wb.page, { file: 'shop.crawl.yaml' });
  });

  afterEach(async function () {
    await keepFailureArtifacts(this, wb);
  });

  after(async () => {
    await wb?.close();
    await site?.close();
  });

  it('opens Results during a crawl and shows rows arriving', async () => {
    const { page } = wb;
    await explorerItem(page, 'shop.crawl.yaml').click();
    const lens = codeLens(page, 'Start Crawl');
    await lens.waitFor({ state: 'visible', timeout: 30_000 });
    await lens.click();
    await waitForCodeLens(page, 'Stop Crawl');
    await codeLens(page, 'Open Results').click();
    const wv = webview(page);
    await wv.locator('.row:not(.loading)').first().waitFor({ state: 'visible', timeout: 60_000 });
    const count = wv.locator('.toolbar .count').first();
    const first = await count.innerText();
    await wv.locator('.live').waitFor({ state: 'visible' });
    // The rows drawn now, to tell below whether the polls that bring more rows rebuilt them.
    type Drawn = { el: Element; text: string | null; index: string | undefined }[];
    await wv.locator('body').evaluate(() => {
      const rows = Array.from(document.querySelectorAll<HTMLElement>('.body .row:not(.loading)'));
      const drawn = rows.map((el) => ({ el, text: el.textContent, index: el.dataset.index }));
      Object.defineProperty(globalThis, '__rowsBefore', { value: drawn, configurable: true });
      // The pickers' options too: a poll changes a count in a run's label, never which runs there are.
      const options = Array.from(document.querySelectorAll('select option'));
      Object.defineProperty(globalThis, '__optionsBefore', { value: options, configurable: true });
    });
    let later = first;
    for (let i = 0; i < 60 && later === first; i++) {
      await page.waitForTimeout(500);
      later = await count.innerText();
    }
    assert.notEqual(later, first, 'the count grows while the crawl runs');
    // A row that shows what it showed is the same element: one built anew every poll takes a click pressed on the
    // old one (press on it, release on its replacement: no click), and a selection of its text, with it.
    await page.waitForTimeout(1500);
    const kept = await wv.locator('body').evaluate(() => {
      const before = (globalThis as unknown as { __rowsBefore: Drawn }).__rowsBefore;
      let same = 0;
      let rebuilt = 0;
      for (const b of before) {
        const now = document.querySelector(`.body .row[data-index="${b.index}"]`);
        if (now?.textContent !== b.text) continue;
        if (now === b.el) same++;
        else rebuilt++;
      }
      const options = (globalThis as unknown as { __optionsBefore: Element[] }).__optionsBefore;
      const optionsReplaced = options.filter((o) => !o.isConnected).length;
      return { same, rebuilt, before: before.length, options: options.length, optionsReplaced };
    });
    assert.ok(kept.same > 0, `no row drawn before the count grew still shows the same item: ${JSON.stringify(kept)}`);
    assert.equal(kept.rebuilt, 0, `rows rebuilt by polls that changed nothing in them: ${JSON.stringify(kept)}`);
    // An open list of runs would close under the user, and the run they were about to pick go with it.
    assert.ok(kept.options > 0, 'the pickers have options');
    assert.equal(kept.optionsReplaced, 0, `the pickers' options were built anew by polls: ${JSON.stringify(kept)}`);
    await wb.screenshot('ui/results-1-live.png');
  });

  it('keeps a sort and hidden columns while an older view from the extension is on its way', async () => {
    // While a crawl runs, the extension polls the store, and a poll posts the view it has: one that began before a
    // click answers with the view from before it. The click must stand, and the next click toggle from it. Columns
    // hidden in the webview must be known to the extension, or its next answer shows them again.
    const wv = webview(wb.page);
    await wv.locator('body').evaluate(() => {
      const answers: unknown[] = [];
      Object.defineProperty(globalThis, '__answers', { value: answers, configurable: true });
      addEventListener('message', (e: MessageEvent<{ type?: unknown }>) => {
        if (e.data?.type === 'init') answers.push(e.data);
      });
    });
    const isbn = wv.locator('.hcell[data-col="isbn"]');
    const toggleIsbn = async () => {
      await wv.locator('vscode-button', { hasText: 'Columns' }).click();
      await wv.locator('.popup vscode-checkbox[label="isbn"]').click();
      await wb.page.keyboard.press('Escape');
    };
    await toggleIsbn();
    await isbn.waitFor({ state: 'detached' });
    const upc = wv.locator('.hcell[data-col="upc"]');
    await upc.click();
    await wv.locator('.hcell[data-col="upc"][aria-sort="ascending"]').waitFor();
    // The click's answer, then the same as a poll begun before the click would have sent it: unsorted, every column
    // shown, its seq older.
    const seen = await wv.locator('body').evaluate(async () => {
      type Init = { seq: number; view: { sort: unknown; hidden: string[] } };
      const answers = (globalThis as unknown as { __answers: Init[] }).__answers;
      for (let i = 0; i < 600 && !answers.some((m) => m.seq > 1); i++) await new Promise((r) => setTimeout(r, 50));
      const answer = answers.find((m) => m.seq > 1);
      if (!answer) throw new Error('the extension did not answer the click with its view');
      const before = {
        ...answer,
        seq: answer.seq - 1,
        view: { ...answer.view, sort: null, hidden: answer.view.hidden.filter((c) => c !== 'isbn') },
      };
      dispatchEvent(new MessageEvent('message', { data: before }));
      return answer.view.hidden;
    });
    assert.ok(seen.includes('isbn'), `the extension's answer hides isbn too: ${seen.join(', ')}`);
    await upc.click();
    await wv.locator('.hcell[data-col="upc"][aria-sort="descending"]').waitFor({ timeout: 15_000 });
    assert.equal(await isbn.count(), 0, 'isbn stays hidden');
    // Back to storage order and every column, for the tests below.
    await upc.click();
    await wv.locator('.hcell[data-col="upc"][aria-sort="none"]').waitFor();
    await toggleIsbn();
    await isbn.waitFor();
  });

  it('sorts by a column and filters by text', async () => {
    const { page } = wb;
    const wv = webview(page);
    // Sort by price, descending (second click).
    const price = wv.locator('.hcell[data-col="price"]');
    await price.click();
    await price.click();
    await wv.locator('.hcell[data-col="price"][aria-sort="descending"]').waitFor();
    const filter = wv.locator('.frow input[data-col="title"]');
    await filter.click();
    await filter.pressSequentially('river', { delay: 20 });
    // The webview rewrites its count ("N of M") as soon as the filter changes, before the extension host has run
    // the query, and the crawl is still writing: wait for what only the filtered rows give, titles that are all
    // "river" ones.
    const titleCells = wv.locator('.row:not(.loading) .cell:first-child');
    await wv
      .locator('.grid')
      .filter({ has: titleCells })
      .filter({ hasNot: titleCells.filter({ hasNotText: /river/i }) })
      .waitFor({ timeout: 30_000 });
    const titles = await titleCells.allInnerTexts();
    assert.ok(titles.length > 0);
    assert.ok(
      titles.every((t) => /river/i.test(t)),
      titles.join(' | '),
    );
    const cols = await wv.locator('.hcell').evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.col));
    const priceIdx = cols.indexOf('price');
    const prices = (await wv.locator(`.row:not(.loading) .cell:nth-child(${priceIdx + 1})`).allInnerTexts()).map(
      Number,
    );
    assert.deepEqual(
      prices,
      [...prices].sort((a, b) => b - a),
      'descending prices',
    );
    await wb.screenshot('ui/results-2-sorted-filtered.png');
  });

  it('shows field quality: the broken isbn selector is 100% empty', async () => {
    const { page } = wb;
    const wv = webview(page);
    await wv.locator('vscode-button', { hasText: 'Field quality' }).click();
    const isbn = wv.locator('.qrow', { has: wv.locator('button.field', { hasText: 'isbn' }) });
    await isbn.waitFor({ timeout: 30_000 });
    assert.match(await isbn.innerText(), /100% empty/);
    assert.match(await wv.locator('.quality h2').innerText(), /always empty: isbn/);
    await wb.screenshot('ui/results-3-field-quality.png');
    // New figures arrive every poll; the field's button must stay the element it was, or a click pressed on it and
    // released on its replacement does nothing.
    await wv.locator('body').evaluate(() => {
      const seen = { quality: 0, button: document.querySelector('.quality button.field') };
      Object.defineProperty(globalThis, '__quality', { value: seen, configurable: true });
      addEventListener('message', (e: MessageEvent<{ type?: unknown }>) => {
        if (e.data?.type === 'quality') seen.quality++;
      });
    });
    await wv.locator('body').evaluate(
      () =>
        new Promise<void>((resolve, reject) => {
          const seen = (globalThis as unknown as { __quality: { quality: number } }).__quality;
          const until = Date.now() + 30_000;
          const check = () =>
            seen.quality >= 2
              ? resolve()
              : Date.now() > until
                ? reject(new Error(`${seen.quality} quality message(s) in 30 s`))
                : setTimeout(check, 100);
          check();
        }),
    );
    const kept = await wv
      .locator('body')
      .evaluate(
        () =>
          (globalThis as unknown as { __quality: { button: Element | null } }).__quality.button?.isConnected ?? null,
      );
    assert.equal(kept, true, "the field's button was built anew by figures that came after it");
  });

  it('opens a row detail with the keyboard', async () => {
    const { page } = wb;
    const wv = webview(page);
    await wv.locator('.grid').focus();
    await page.keyboard.press('Home');
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('Enter');
    const side = wv.locator('aside.side');
    await side.waitFor({ state: 'visible', timeout: 15_000 });
    assert.match(await side.innerText(), /source URL[\s\S]*catalogue\/book-\d+\.html/);
    assert.match(await side.innerText(), /page rule\s*book/);
    await wb.screenshot('ui/results-4-row-detail.png');
    await page.keyboard.press('Escape');
    await side.waitFor({ state: 'hidden' });
  });

  it('exports the filtered view as CSV through the save dialog', async () => {
    const { page } = wb;
    const wv = webview(page);
    // Let the crawl finish so the view holds still while we compare it with the file.
    await wv.locator('.live').waitFor({ state: 'hidden', timeout: 120_000 });
    // The message that ends "live" may carry a count taken before the writer's last flush; the next one (a poll
    // later) has them all: 25 of the 200 books are "river" ones.
    await wv
      .locator('.toolbar .count', { hasText: /^25 of 200 items/ })
      .first()
      .waitFor({ timeout: 15_000 });
    const shown = 25;
    await wv.locator('vscode-button[data-format="csv"]').click();
    // code-server's save dialog is a quick input holding a path.
    const input = quickInput(page).locator('input.input').first();
    await input.waitFor({ state: 'visible', timeout: 15_000 });
    const target = join(folder, 'river-books.csv');
    // The dialog fills in its default name asynchronously: wait for it, or it may overwrite what we type.
    const until = Date.now() + 10_000;
    while (!(await input.inputValue()).endsWith('shop-book.csv') && Date.now() < until) await page.waitForTimeout(100);
    await input.fill(target);
    await page.waitForTimeout(300);
    if ((await input.inputValue()) !== target) await input.fill(target);
    assert.equal(await input.inputValue(), target);
    await wb.screenshot('ui/results-5-export-dialog.png');
    await input.press('Enter');
    // The file exists from the first byte; the toast comes once it is written and closed.
    await page.locator('.notifications-toasts', { hasText: 'Exported' }).first().waitFor({ timeout: 30_000 });
    const lines = readFileSync(target, 'utf8').trim().split(/\r?\n/);
    assert.equal(lines[0], '_key,_url,_fetched_at,title,price,upc,isbn');
    assert.equal(lines.length - 1, shown, 'the CSV holds exactly the filtered rows');
    assert.ok(lines.slice(1).every((l) => /river/i.test(l)));
    // The finished crawl's toast would cover the field quality panel: keep only the export's.
    for (const t of await page.locator('.notifications-toasts .notification-toast', { hasNotText: 'Exported' }).all())
      await t
        .locator('.codicon-notifications-clear')
        .click()
        .catch(() => undefined);
    const quality = wv.locator('.quality h2');
    const deadline2 = Date.now() + 15_000;
    while (!/^\D*200 book items/.test(await quality.innerText()) && Date.now() < deadline2)
      await page.waitForTimeout(250);
    assert.match(await quality.innerText(), /200 book items/, 'field quality keeps up with the stored items');
    await wb.screenshot('ui/results-6-exported.png');
  });

  it('comes back after a window reload with its filters and sort', async () => {
    const { page } = wb;
    // Every state waited for below is also true on the page before the reload: wait for the new one first.
    const reloaded = page.waitForEvent('load', { timeout: 60_000 });
    await runCommand(page, 'Developer: Reload Window');
    await reloaded;
    await waitForWorkbench(page, { file: 'shop.crawl.yaml' });
    await page.locator('.tabs-container .tab', { hasText: 'Results: shop' }).first().click();
    const wv = webview(page);
    await wv.locator('.row:not(.loading)').first().waitFor({ state: 'visible', timeout: 60_000 });
    assert.equal(await wv.locator('.frow input[data-col="title"]').inputValue(), 'river');
    await wv.locator('.hcell[data-col="price"][aria-sort="descending"]').waitFor();
    await wv
      .locator('.toolbar .count', { hasText: /^25 of 200 items/ })
      .first()
      .waitFor({ timeout: 30_000 });
    await wb.screenshot('ui/results-7-restored-after-reload.png');
  });
});
