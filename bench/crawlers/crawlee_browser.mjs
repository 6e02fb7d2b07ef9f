// Crawlee's PlaywrightCrawler on the scripted fixture site (sitegen --scripted: every page built by its script),
// with the bench task's selectors and canonical rules — the browser row (issue 18). Settings are Crawlee's defaults
// except: the concurrency (min = max = the row's, as Crawl Studio's browser pages), robots.txt respected, storage in
// memory (persistStorage: false), and the browser: the machine's Chromium (--executable, no download) launched by
// playwright-core, the same driver and version Crawl Studio uses, with the same flags. Images, fonts and media are
// blocked with Crawlee's own blockRequests(), as a Crawlee user would (Crawl Studio blocks the same by default).
// Prints one JSON line: { result: { pages, failed, items, seconds } }.
import { parseArgs } from 'node:util';
import { fixtureShop } from './crawlee_shop.mjs';
import { chromium } from 'playwright-core';
import { Configuration, PlaywrightCrawler, log, LogLevel } from 'crawlee';

const { values } = parseArgs({
  options: { start: { type: 'string' }, concurrency: { type: 'string' }, executable: { type: 'string' } },
});
const start = values.start;
const concurrency = Number(values.concurrency ?? 4);
log.setLevel(LogLevel.WARNING);
const shop = fixtureShop(start);

// The flags Crawl Studio launches Chromium with (src/worker/browser/pool.ts CHROMIUM_ARGS).
const ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-dev-shm-usage',
];

const config = new Configuration({ persistStorage: false, purgeOnStart: true });
const crawler = new PlaywrightCrawler(
  {
    minConcurrency: concurrency,
    maxConcurrency: concurrency,
    respectRobotsTxtFile: true,
    launchContext: {
      launcher: chromium,
      launchOptions: { executablePath: values.executable, args: ARGS, headless: true },
    },
    preNavigationHooks: [
      async ({ blockRequests }) =>
        blockRequests({
          urlPatterns: [
            '.jpg',
            '.jpeg',
            '.png',
            '.gif',
            '.svg',
            '.webp',
            '.woff',
            '.woff2',
            '.ttf',
            '.otf',
            '.mp4',
            '.webm',
            '.mp3',
          ],
        }),
    ],
    async requestHandler({ request, page, parseWithCheerio, enqueueLinks, pushData }) {
      // The page is built by its script: read it once the script says so, as Crawl Studio's waitFor does.
      await page.waitForSelector('#app.ready', { state: 'attached' });
      const $ = await parseWithCheerio();
      await shop.handle({ request, $, enqueueLinks, pushData });
    },
  },
  config,
);
await shop.crawl(crawler);
