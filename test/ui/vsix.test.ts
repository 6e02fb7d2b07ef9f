import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { openWorkbench, type Workbench } from '../extension/harness';
import { DEMO_SITE, serveSite, type SiteServer } from '../../src/demo/site';
import { codeLens, explorerItem, openCommandPalette, paletteRow, waitForWorkbench } from './support/workbench';

// What users install is what is tested: the production .vsix (npm run package) installed into a fresh
// code-server with --install-extension, no development extension loaded; a crawl runs through a command.

describe('the packaged .vsix (UI)', function () {
  this.timeout(300_000);
  let wb: Workbench;
  let site: SiteServer;
  let vsix: string;

  before(async function () {
    this.timeout(300_000);
    const out = execFileSync(process.execPath, ['scripts/package.mjs', 'vsix'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    vsix = out.trim().split('\n').pop()!;
    assert.match(vsix, /\.vsix$/);
    // The demo bookshop and the README's task file, on a free port instead of 8737.
    site = await serveSite(DEMO_SITE);
    const folder = mkdtempSync(join(tmpdir(), 'cs-ui-vsix-'));
    writeFileSync(join(folder, 'books.crawl.yaml'), readFileSync('examples/books.crawl.yaml', 'utf8').replaceAll('127.0.0.1:8737', new URL(site.url).host));
    wb = await openWorkbench({ workspaceFolder: folder, extensionDevelopmentPath: null, installExtensions: [vsix], settings: { 'crawlStudio.workers': 2 } });
    await waitForWorkbench(wb.page, { file: 'books.crawl.yaml' });
  });

  afterEach(async function () {
    if (this.currentTest?.state === 'failed' && wb) console.error(`    screenshot ${await wb.saveArtifacts('ui/failed-vsix')}`);
  });

  after(async () => {
    await wb?.close();
    await site?.close();
  });

  it('is a small bundle with no node_modules', () => {
    const listing = execFileSync('unzip', ['-l', vsix], { encoding: 'utf8' });
    assert.ok(!/node_modules\//.test(listing), 'no node_modules in the .vsix');
    for (const f of ['extension/dist/extension.js', 'extension/dist/worker.js', 'extension/dist/worker.bundle.js', 'extension/dist/analysis.js', 'extension/dist/analysis.bundle.js', 'extension/dist/boot.js', 'extension/dist/schema/crawl-task.schema.json', 'extension/dist/playwright-core/lib/index.js', 'extension/dist/playwright-core/package.json', 'extension/media/icon.png']) {
      assert.ok(listing.includes(f), `${f} in the .vsix`);
    }
    assert.ok(!/\.map\n/.test(listing), 'no source maps');
    const version = (JSON.parse(readFileSync(resolve('package.json'), 'utf8')) as { version: string }).version;
    assert.ok(vsix.endsWith(`crawl-studio-${version}.vsix`));
  });

  it('installs, and runs a crawl from the command palette', async () => {
    const { page } = wb;
    await explorerItem(page, 'books.crawl.yaml').click();
    await codeLens(page, 'Start Crawl').waitFor({ state: 'visible', timeout: 60_000 });
    await openCommandPalette(page, 'Crawl Studio: Start Crawl');
    await paletteRow(page, 'Crawl Studio: Start Crawl').click();
    // The pages are fetched by the installed extension's workers…
    const deadline = Date.now() + 120_000;
    const books = Array.from({ length: DEMO_SITE.listPages * DEMO_SITE.perPage }, (_, i) => `/catalogue/book-${i + 1}.html`);
    while (books.some((b) => !site.hits.get(b)) && Date.now() < deadline) await page.waitForTimeout(250);
    for (const b of books) assert.equal(site.hits.get(b), 1, `${b} fetched once`);
    assert.equal(site.hits.get('/private/admin.html'), undefined, 'robots.txt obeyed');
    // …and the run is finalized: its summary is announced (read from the Notifications center, toasts fade).
    await codeLens(page, 'Start Crawl').waitFor({ state: 'visible', timeout: 60_000 });
    await openCommandPalette(page, 'Notifications: Show Notifications');
    await paletteRow(page, 'Notifications: Show Notifications').click();
    const done = page.locator('.notifications-center .notification-list-item', { hasText: /Crawl 'books' finished: 107 pages, 100 items, 1 skipped, 0 failed/ });
    await done.first().waitFor({ state: 'visible', timeout: 60_000 });
    await wb.screenshot('ui/vsix-installed-crawl-finished.png');
  });
});
