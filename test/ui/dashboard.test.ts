import * as assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FrameLocator } from 'playwright-core';
import { openWorkbench, type Workbench } from '../extension/harness';
import { serveSite, type SiteServer } from '../../src/demo/site';
import {
  clearToasts,
  codeLens,
  explorerItem,
  keepFailureArtifacts,
  runCommand,
  waitForCodeLens,
  waitForWorkbench,
  webview,
} from './support/workbench';
import { demoShopTask, PRICE_FIELD } from '../support/demoTask';
import { until } from '../support/until';

// The crawl dashboard as a new user sees it on the demo shop: the crawl starts, peaks and drains on the
// charts, failures are grouped by cause with sample URLs, and a group is retried from the dashboard once the
// site is healthy again. Screenshots: test-artifacts/ui/dashboard-*.png.

/** Closes notification toasts so they do not cover the dashboard in screenshots. */
describe('Crawl dashboard (UI)', function () {
  this.timeout(300_000);
  let wb: Workbench;
  let site: SiteServer;
  let unhealthy = true;

  before(async function () {
    this.timeout(180_000);
    // Every 12th book answers 503 while the site is "unhealthy"; book 50 is gone for good.
    site = await serveSite(
      { listPages: 12, perPage: 20 },
      0,
      (req, res) => {
        const m = /^\/catalogue\/book-(\d+)\.html/.exec(req.url ?? '');
        if (m && Number(m[1]) === 50) {
          res.writeHead(404).end('gone');
          return true;
        }
        if (m && unhealthy && Number(m[1]) % 12 === 0) {
          res.writeHead(503).end('busy');
          return true;
        }
        return false;
      },
      50,
    );
    const folder = mkdtempSync(join(tmpdir(), 'cs-ui-dashboard-'));
    writeFileSync(
      join(folder, 'shop.crawl.yaml'),
      demoShopTask({
        name: 'shop',
        siteUrl: site.url,
        retries: { attempts: 2, delay: '100ms' },
        perHost: { concurrency: 3, delay: '40ms' },
        headerLinks: true,
        fields: { title: 'h1', upc: 'td.upc', price: PRICE_FIELD },
      }),
    );
    wb = await openWorkbench({
      workspaceFolder: folder,
      settings: { 'crawlStudio.workers': 1, 'crawlStudio.concurrency': 3 },
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

  const kpi = (wv: FrameLocator, label: string) =>
    wv.locator('.kpi', { has: wv.locator('.label', { hasText: new RegExp(`^${label}$`) }) }).locator('.value');

  it('shows the crawl start and move on the charts', async () => {
    const { page } = wb;
    await explorerItem(page, 'shop.crawl.yaml').click();
    const lens = codeLens(page, 'Start Crawl');
    await lens.waitFor({ state: 'visible', timeout: 30_000 });
    await lens.click();
    await waitForCodeLens(page, 'Stop Crawl');
    await runCommand(page, 'Crawl Studio: Open Dashboard');
    const wv = webview(page);
    await wv.locator('.state.running').waitFor({ timeout: 60_000 });
    // The local worker, with its rate and last heartbeat: checked now, while it surely runs (a worker that exits
    // takes its row with it, and the crawl lasts ~12 s whatever the machine's load).
    const workers = wv.locator('section[aria-label="Workers"]');
    await workers.locator('tr', { hasText: 'this machine' }).waitFor({ timeout: 20_000 });
    await wv.locator('.chart canvas').first().waitFor({ timeout: 30_000 });
    const done = kpi(wv, 'Pages done');
    const first = await done.innerText();
    const later = await until(
      `pages done to move from ${first}`,
      async () => {
        const now = await done.innerText();
        return now !== first && now;
      },
      20_000,
      250,
    );
    assert.notEqual(later, first, 'pages done moves while the crawl runs');
    await until('the charts to have points', async () => (await wv.locator('.chart .none').count()) === 0, 20_000, 250);
    assert.equal(await wv.locator('.chart .none').count(), 0, 'the charts have points');
    await wb.screenshot('ui/dashboard-1-running.png');
    await workers.scrollIntoViewIfNeeded();
    await wb.screenshot('ui/dashboard-2-hosts-workers.png');
    await wv.locator('header').scrollIntoViewIfNeeded();
  });

  it('shows the drain, failures by cause with sample URLs, skips, hosts and workers', async () => {
    const { page } = wb;
    const wv = webview(page);
    await wv.locator('.state.finished').waitFor({ timeout: 180_000 });
    const failures = wv.locator('section[aria-label="Failures by cause"]');
    const row503 = failures.locator('tr', { hasText: 'HTTP 503' });
    await row503.waitFor({ timeout: 20_000 });
    // The finished run's last figures: each section shows them once the view has them.
    await failures.locator('tr', { hasText: 'HTTP 404' }).waitFor({ timeout: 20_000 });
    // innerText, not the locator's hasText: that reads textContent, where a table's cells have no space between them.
    await until(
      'the skipped pages',
      async () => /robots\.txt\s+1/.test(await wv.locator('section[aria-label="Skipped pages"]').innerText()),
      20_000,
      250,
    );
    await wv
      .locator('.kpi', { has: wv.locator('.label', { hasText: /^ETA$/ }) })
      .locator('.value', { hasText: /^done$/ })
      .waitFor({ timeout: 20_000 });
    assert.match(await row503.innerText(), /book-\d+\.html/);
    assert.match(await failures.locator('tr', { hasText: 'HTTP 404' }).innerText(), /book-50\.html/);
    assert.match(await wv.locator('section[aria-label="Skipped pages"]').innerText(), /robots\.txt\s+1/);
    assert.match(await wv.locator('section[aria-label="Hosts"]').innerText(), /127\.0\.0\.1:\d+/);
    assert.equal(await kpi(wv, 'ETA').innerText(), 'done');
    await clearToasts(page);
    await wb.screenshot('ui/dashboard-3-finished.png');
    // During a crawl a group's count moves with every snapshot, and its Retry all must stay the element under the
    // pointer (replaced between a click's press and its release, it gets no click). The next snapshot the extension
    // posts, with the 404 group's count one higher, stands in for a crawl's.
    const moved = await wv.locator('body').evaluate(
      () =>
        new Promise<{ same: boolean; count: string; wanted: string }>((resolve, reject) => {
          type Group = { label: string; count: number };
          type Snapshot = { type?: string; moved?: boolean; data?: { failures: Group[] } };
          const button = () =>
            Array.from(document.querySelectorAll('section[aria-label="Failures by cause"] tr')).find((tr) =>
              tr.textContent?.includes('HTTP 404'),
            );
          const before = button()?.querySelector('vscode-button');
          if (!before) return reject(new Error('no Retry all in the 404 row'));
          const next = (e: MessageEvent<Snapshot>) => {
            if (e.data?.type !== 'data' || e.data.moved || !e.data.data) return;
            removeEventListener('message', next);
            const failures = e.data.data.failures.map((g) =>
              g.label.includes('404') ? { ...g, count: g.count + 1 } : g,
            );
            dispatchEvent(
              new MessageEvent('message', { data: { ...e.data, moved: true, data: { ...e.data.data, failures } } }),
            );
            const row = button();
            const wanted = String(failures.find((g) => g.label.includes('404'))?.count);
            resolve({
              same: row?.querySelector('vscode-button') === before,
              count: row?.querySelectorAll('td')[1]?.textContent ?? '',
              wanted,
            });
          };
          addEventListener('message', next);
          setTimeout(() => reject(new Error('no snapshot came in 30 s')), 30_000);
        }),
    );
    assert.equal(moved.count, moved.wanted, 'the moved count is shown');
    assert.ok(moved.same, "Retry all was built anew when its group's count moved");
  });

  it('retries all failures of one group from the dashboard', async () => {
    const { page } = wb;
    const wv = webview(page);
    unhealthy = false;
    const failures = wv.locator('section[aria-label="Failures by cause"]');
    const items = Number((await kpi(wv, 'Items').innerText()).replace(/,/g, ''));
    await failures.locator('tr', { hasText: 'HTTP 503' }).locator('vscode-button', { hasText: 'Retry all' }).click();
    // No worker runs after the crawl: the notification offers to start it.
    const start = page.locator('.notifications-toasts .monaco-button', { hasText: 'Start Crawl' }).first();
    await start.waitFor({ timeout: 20_000 });
    await wb.screenshot('ui/dashboard-4-retry-offered.png');
    await start.click();
    await failures.locator('tr', { hasText: 'HTTP 503' }).waitFor({ state: 'detached', timeout: 120_000 });
    await wv.locator('.state.finished').waitFor({ timeout: 120_000 });
    const after = Number((await kpi(wv, 'Items').innerText()).replace(/,/g, ''));
    assert.ok(after > items, `items ${items} -> ${after}`);
    assert.match(await failures.innerText(), /HTTP 404/, 'the other group stays');
    await clearToasts(page);
    await wb.screenshot('ui/dashboard-5-after-retry.png');
  });
});
