// Crawlee's PlaywrightCrawler on the scripted fixture site (sitegen --scripted: every page built by its script),
// with the bench task's selectors and canonical rules — the browser row (issue 18). Settings are Crawlee's defaults
// except: the concurrency (min = max = the row's, as Crawl Studio's browser pages), robots.txt respected, storage in
// memory (persistStorage: false), and the browser: the machine's Chromium (--executable, no download) launched by
// playwright-core, the same driver and version Crawl Studio uses, with the same flags. Images, fonts and media are
// blocked with Crawlee's own blockRequests(), as a Crawlee user would (Crawl Studio blocks the same by default).
// Prints one JSON line: { result: { pages, failed, items, seconds } }.
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { Configuration, PlaywrightCrawler, log, LogLevel } from 'crawlee';

const { values } = parseArgs({ options: { start: { type: 'string' }, concurrency: { type: 'string' }, executable: { type: 'string' } } });
const start = values.start;
const concurrency = Number(values.concurrency ?? 4);
const host = new URL(start).host;
log.setLevel(LogLevel.WARNING);

const BOOK = /\/catalogue\/book-[^/]*\.html$/;
const LIST = /(^\/$|\/catalogue\/page-[^/]*\.html$)/;
function canonical(url) {
  const u = new URL(url);
  if (u.host !== host) return null;
  u.hash = '';
  if (u.search) {
    const params = [...u.searchParams].filter(([k]) => k !== 'ref' && k !== 'src').sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    u.search = params.length ? new URLSearchParams(params).toString() : '';
  }
  return u.href;
}
const transform = (label) => (req) => {
  const url = canonical(req.url);
  if (!url) return false;
  let l = label;
  if (!l) {
    const path = new URL(url).pathname;
    l = BOOK.test(path) ? 'book' : LIST.test(path) ? 'list' : null;
  }
  if (!l) return false;
  return { ...req, url, label: l };
};

const text = (el) => el.first().text().replace(/\s+/g, ' ').trim();
const abs = (v, base) => (v ? new URL(v, base).href : null);
const counts = { pages: 0, items: {} };
const add = (t, n) => (counts.items[t] = (counts.items[t] ?? 0) + n);

// The flags Crawl Studio launches Chromium with (src/worker/browser/pool.ts CHROMIUM_ARGS).
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-dev-shm-usage'];

const config = new Configuration({ persistStorage: false, purgeOnStart: true });
const crawler = new PlaywrightCrawler(
  {
    minConcurrency: concurrency,
    maxConcurrency: concurrency,
    respectRobotsTxtFile: true,
    launchContext: { launcher: chromium, launchOptions: { executablePath: values.executable, args: ARGS, headless: true } },
    preNavigationHooks: [async ({ blockRequests }) => blockRequests({ urlPatterns: ['.jpg', '.jpeg', '.png', '.gif', '.svg', '.webp', '.woff', '.woff2', '.ttf', '.otf', '.mp4', '.webm', '.mp3'] })],
    async requestHandler({ request, page, parseWithCheerio, enqueueLinks, pushData }) {
      // The page is built by its script: read it once the script says so, as Crawl Studio's waitFor does.
      await page.waitForSelector('#app.ready', { state: 'attached' });
      const $ = await parseWithCheerio();
      counts.pages++;
      const url = request.loadedUrl ?? request.url;
      if (request.label === 'book') {
        const items = $('article.product_page')
          .toArray()
          .map((el) => {
            const p = $(el);
            return {
              title: text(p.find('h1')),
              price: /[0-9.]+/.exec(text(p.find('p.price_color')))?.[0] ?? null,
              upc: text(p.find('td.upc')),
              in_stock: /\((\d+) available\)/.exec(text(p.find('p.availability')))?.[1] ?? null,
              tags: p.find('li.tag').toArray().map((t) => $(t).text().replace(/\s+/g, ' ').trim()),
              cover: abs(p.find('img').first().attr('src'), url),
            };
          });
        if (items.length) await pushData(items.map((d) => ({ type: 'book', ...d })));
        add('book', items.length);
        await enqueueLinks({ selector: 'ul.related a, header a', transformRequestFunction: transform(null) });
      } else {
        const items = $('article.product_pod')
          .toArray()
          .map((el) => {
            const pod = $(el);
            return { title: text(pod.find('h3 a')), price: /[0-9.]+/.exec(text(pod.find('p.price_color')))?.[0] ?? null, url: abs(pod.find('h3 a').first().attr('href'), url) };
          });
        if (items.length) await pushData(items.map((d) => ({ type: 'listing', ...d })));
        add('listing', items.length);
        await enqueueLinks({ selector: 'ul.nav a, li.next a, ul.pages a, ul.sort a, header a, footer a', transformRequestFunction: transform('list') });
        await enqueueLinks({ selector: 'article.product_pod a', transformRequestFunction: transform('book') });
      }
    },
  },
  config,
);
const t0 = performance.now();
const stats = await crawler.run([{ url: canonical(start), label: 'list' }]);
const seconds = (performance.now() - t0) / 1000;
console.log(JSON.stringify({ result: { pages: counts.pages, failed: stats.requestsFailed, finished: stats.requestsFinished, items: counts.items, seconds, pagesPerSec: counts.pages / seconds } }));
