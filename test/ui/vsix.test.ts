import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join, resolve } from 'node:path';
import { openWorkbench, type Workbench } from '../extension/harness';
import { DEMO_SITE, serveSite, type SiteServer } from '../../src/demo/site';
import {
  codeLens,
  explorerItem,
  openCommandPalette,
  paletteRow,
  waitForCodeLens,
  waitForWorkbench,
} from './support/workbench';

// What users install is what is tested: the production .vsix (npm run package) installed into a fresh
// code-server with --install-extension, no development extension loaded; a crawl runs through a command, one of
// its pages rendered in Chromium by the playwright-core the .vsix carries (nothing downloaded: offline).

/** The Marketplace's goal for the package (issue 34: it had grown to 3,229 KB). */
const MAX_VSIX_BYTES = 3 * 1024 * 1024;

/**
 * A page whose content its script builds from data it fetches: only a browser sees its title, and only a browser
 * asks for its data. The books task gets it as a second start, with a `browser` rule.
 */
const RENDERED = '/rendered/';
const RENDERED_DATA = '/rendered/data.json';

function serveRendered(req: IncomingMessage, res: ServerResponse): boolean {
  if (req.url === RENDERED) {
    const script = `fetch('${RENDERED_DATA}').then((r) => r.json()).then((d) => { document.querySelector('main').innerHTML = '<h1 class="title">' + d.title + '</h1>'; });`;
    res
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      .end(
        `<!doctype html><html><head><title>rendered</title></head><body><main></main><script>${script}</script></body></html>`,
      );
    return true;
  }
  if (req.url === RENDERED_DATA) {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ title: 'Rendered by the script' }));
    return true;
  }
  return false;
}

/** examples/books.crawl.yaml on the test's site, with the rendered page as a second start and its rule. */
function booksTask(site: SiteServer): string {
  const host = new URL(site.url).host;
  const yaml = readFileSync('examples/books.crawl.yaml', 'utf8').replaceAll('127.0.0.1:8737', host);
  const withStart = yaml.replace(/^start:\n/m, `start:\n  - { url: "${site.url}${RENDERED}", rule: rendered }\n`);
  assert.notEqual(withStart, yaml, 'the books task has a start list');
  return `${withStart.trimEnd()}
  - name: rendered
    browser: { waitFor: { selector: h1.title }, timeout: 30s }
    items:
      - type: rendered
        key: [title]
        fields:
          title: h1.title
`;
}

describe('the packaged .vsix (UI)', function () {
  this.timeout(300_000);
  let wb: Workbench;
  let site: SiteServer;
  let vsix: string;

  before(async function () {
    this.timeout(300_000);
    const out = execFileSync(process.execPath, ['scripts/package.mjs', 'vsix'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    vsix = out.trim().split('\n').pop()!;
    assert.match(vsix, /\.vsix$/);
    // The demo bookshop and the README's task file, on a free port instead of 8737.
    site = await serveSite(DEMO_SITE, 0, serveRendered);
    const folder = mkdtempSync(join(tmpdir(), 'cs-ui-vsix-'));
    writeFileSync(join(folder, 'books.crawl.yaml'), booksTask(site));
    wb = await openWorkbench({
      workspaceFolder: folder,
      extensionDevelopmentPath: null,
      installExtensions: [vsix],
      settings: { 'crawlStudio.workers': 2 },
    });
    await waitForWorkbench(wb.page, { file: 'books.crawl.yaml' });
  });

  afterEach(async function () {
    if (this.currentTest?.state === 'failed' && wb)
      console.error(`    screenshot ${await wb.saveArtifacts('ui/failed-vsix')}`);
  });

  after(async () => {
    await wb?.close();
    await site?.close();
  });

  it('is a small bundle with no node_modules', () => {
    const bytes = statSync(vsix).size;
    assert.ok(bytes <= MAX_VSIX_BYTES, `the .vsix is ${bytes} bytes, more than ${MAX_VSIX_BYTES}`);
    const listing = execFileSync('unzip', ['-l', vsix], { encoding: 'utf8' });
    assert.ok(!/node_modules\//.test(listing), 'no node_modules in the .vsix');
    for (const f of [
      'extension/dist/extension.js',
      'extension/dist/worker.js',
      'extension/dist/worker.bundle.js',
      'extension/dist/analysis.js',
      'extension/dist/analysis.bundle.js',
      'extension/dist/boot.js',
      'extension/dist/schema/crawl-task.schema.json',
      'extension/dist/playwright-core/lib/index.js',
      'extension/dist/playwright-core/package.json',
      'extension/media/icon.png',
    ]) {
      assert.ok(listing.includes(f), `${f} in the .vsix`);
    }
    assert.ok(!/\.map\n/.test(listing), 'no source maps');
    const version = (JSON.parse(readFileSync(resolve('package.json'), 'utf8')) as { version: string }).version;
    assert.ok(vsix.endsWith(`crawl-studio-${version}.vsix`));
  });

  it('installs, and runs a crawl from the command palette, a page rendered in Chromium', async () => {
    const { page } = wb;
    await explorerItem(page, 'books.crawl.yaml').click();
    await codeLens(page, 'Start Crawl').waitFor({ state: 'visible', timeout: 60_000 });
    await openCommandPalette(page, 'Crawl Studio: Start Crawl');
    await paletteRow(page, 'Crawl Studio: Start Crawl').click();
    // The pages are fetched by the installed extension's workers…
    const deadline = Date.now() + 120_000;
    const books = Array.from(
      { length: DEMO_SITE.listPages * DEMO_SITE.perPage },
      (_, i) => `/catalogue/book-${i + 1}.html`,
    );
    while (books.some((b) => !site.hits.get(b)) && Date.now() < deadline) await page.waitForTimeout(250);
    for (const b of books) assert.equal(site.hits.get(b), 1, `${b} fetched once`);
    assert.equal(site.hits.get('/private/admin.html'), undefined, 'robots.txt obeyed');
    // …and the rendered page by a browser the worker launched: its script asked for the data.
    while (!site.hits.get(RENDERED_DATA) && Date.now() < deadline) await page.waitForTimeout(250);
    assert.equal(site.hits.get(RENDERED), 1, `${RENDERED} fetched once`);
    assert.equal(site.hits.get(RENDERED_DATA), 1, `${RENDERED} rendered: its script fetched ${RENDERED_DATA}`);
    // …and the run is finalized: its summary is announced (read from the Notifications center, toasts fade).
    await waitForCodeLens(page, 'Start Crawl');
    await openCommandPalette(page, 'Notifications: Show Notifications');
    await paletteRow(page, 'Notifications: Show Notifications').click();
    const done = page.locator('.notifications-center .notification-list-item', {
      hasText: /Crawl 'books' finished: 108 pages, 101 items, 1 skipped, 0 failed/,
    });
    await done.first().waitFor({ state: 'visible', timeout: 60_000 });
    await wb.screenshot('ui/vsix-installed-crawl-finished.png');
  });
});
