// Crawlee's CheerioCrawler on the broad-crawl site (issue 19): many hosts, a few pages each. Crawlee's defaults
// except: min = max concurrency = the bench's, robots.txt respected, sameDomainDelaySecs: 1 (Crawlee's per-domain
// delay), persistence off. Links are followed on the page's own host only (enqueueLinks' default, same-hostname);
// one item (the page's h1) per page.
// Note: Crawlee keys its delay by registrable domain (tldts getDomain), which is null for an IP address, and a
// request whose domain is null is never delayed; the nginx log's per-host gaps show what that does here.
// Prints one JSON line: { result: { pages, failed, items, seconds } }.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { CheerioCrawler, Configuration, log, LogLevel } from 'crawlee';

const { values } = parseArgs({ options: { starts: { type: 'string' }, concurrency: { type: 'string' } } });
const starts = readFileSync(values.starts, 'utf8').split('\n').filter(Boolean);
const concurrency = Number(values.concurrency ?? 16);
log.setLevel(LogLevel.WARNING);

let pages = 0;
const config = new Configuration({ persistStorage: false, purgeOnStart: true });
const crawler = new CheerioCrawler(
  {
    minConcurrency: concurrency,
    maxConcurrency: concurrency,
    respectRobotsTxtFile: true,
    sameDomainDelaySecs: 1,
    async requestHandler({ $, enqueueLinks, pushData, request }) {
      pages++;
      await pushData({ title: $('h1').first().text().trim(), url: request.loadedUrl ?? request.url });
      await enqueueLinks({ selector: 'a' });
    },
  },
  config,
);
const t0 = performance.now();
const stats = await crawler.run(starts);
const seconds = (performance.now() - t0) / 1000;
console.log(
  JSON.stringify({
    result: {
      pages,
      failed: stats.requestsFailed,
      finished: stats.requestsFinished,
      items: pages,
      seconds,
      pagesPerSec: pages / seconds,
    },
  }),
);
