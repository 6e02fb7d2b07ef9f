// Crawlee's CheerioCrawler on the fixture site, with the bench task's selectors and canonical rules.
// Settings are Crawlee's defaults except: the concurrency (min = max = the bench's, so every crawler runs the
// same number of requests in flight), robots.txt respected (as Crawl Studio and Scrapy do), and --no-persist
// (persistStorage: false: request queue and dataset in memory only, nothing written to ./storage).
// Prints one JSON line: { result: { pages, failed, items, seconds } }.
import { parseArgs } from 'node:util';
import { fixtureShop } from './crawlee_shop.mjs';
import { CheerioCrawler, Configuration, log, LogLevel } from 'crawlee';

const { values } = parseArgs({
  options: { start: { type: 'string' }, concurrency: { type: 'string' }, 'no-persist': { type: 'boolean' } },
});
const start = values.start;
const concurrency = Number(values.concurrency ?? 16);
log.setLevel(LogLevel.WARNING);
const shop = fixtureShop(start);

const config = new Configuration({ persistStorage: !values['no-persist'], purgeOnStart: true });
const crawler = new CheerioCrawler(
  {
    minConcurrency: concurrency,
    maxConcurrency: concurrency,
    respectRobotsTxtFile: true,
    async requestHandler({ request, $, enqueueLinks, pushData }) {
      await shop.handle({ request, $, enqueueLinks, pushData });
    },
  },
  config,
);
await shop.crawl(crawler);
