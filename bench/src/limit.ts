import * as cheerio from 'cheerio/slim';
import robotsParser from 'robots-parser';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import { loadTaskFile } from '../../src/workspace/taskFile';
import { analysePage, ruleByName, routeRule } from '../../src/core/pipeline/page';
import type { PageFacts } from '../../src/core/extract/extract';
import type { CrawlTask } from '../../src/core/task/model';

// The "no-queue limit": what one Node process does with nothing but fetch + parse + an in-memory seen set and a
// concurrency limit. Same fetch as Crawl Studio's worker (undici's request(), the same headers), the same parse
// path (cheerio/slim, i.e. htmlparser2), the same selectors and canonical rules as the bench task; no Redis,
// no store, no retries. Crawl Studio's pages/s is reported as a ratio to this.
//
// --pipeline: the same loop, but each page goes through Crawl Studio's own analysePage (extraction + URL rules
// of the task file). The gap between the two rows is the cost of the engine's pipeline code; the gap between
// this row and Crawl Studio's is the queue, politeness, dedup and storage.

const { values } = parseArgs({
  options: {
    start: { type: 'string' },
    concurrency: { type: 'string' },
    pipeline: { type: 'boolean' },
    task: { type: 'string' },
  },
});
const start = values.start!;
const concurrency = Number(values.concurrency ?? 16);
const origin = new URL(start).origin;
const host = new URL(start).host;
const UA = 'CrawlStudio/0.1 (+https://github.com/crawl-studio/crawl-studio)';
// The site is served without compression, so the limit needs no decoder for the Accept-Encoding it sends.
const HEADERS = {
  'user-agent': UA,
  accept: 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.5',
  'accept-encoding': 'gzip, deflate, br',
};

const LIST_FOLLOW = 'ul.nav a, li.next a, ul.pages a, ul.sort a, header a, footer a';
const BOOK_PATTERN = /\/catalogue\/book-[^/]*\.html$/;
const LIST_PATTERN = /(^\/$|\/catalogue\/page-[^/]*\.html$)/;

type Kind = 'list' | 'book';
interface Job {
  url: string;
  kind: Kind;
  depth: number;
}

function canonical(href: string, base: string): string | null {
  let u: URL;
  try {
    u = new URL(href, base);
  } catch {
    return null;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
  if (u.host !== host) return null;
  u.hash = '';
  if (u.search) {
    const params = [...u.searchParams]
      .filter(([k]) => k !== 'ref' && k !== 'src')
      .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    u.search = params.length ? new URLSearchParams(params).toString() : '';
  }
  return u.href;
}

const text = (el: cheerio.Cheerio<any>) => el.first().text().replace(/\s+/g, ' ').trim();
const PRICE = /[0-9.]+/;
const STOCK = /\((\d+) available\)/;
function abs(v: string | undefined, base: string): string | null {
  if (!v) return null;
  try {
    return new URL(v, base).href;
  } catch {
    return v;
  }
}

interface Counts {
  pages: number;
  bytes: number;
  failed: number;
  robots: number;
  duplicates: number;
  items: Record<string, number>;
}
const counts: Counts = { pages: 0, bytes: 0, failed: 0, robots: 0, duplicates: 0, items: {} };
const addItems = (type: string, n: number) => (counts.items[type] = (counts.items[type] ?? 0) + n);

function extractOwn(html: string, url: string, kind: Kind): Job[] {
  const $ = cheerio.load(html);
  const found: Job[] = [];
  const follow = (sel: string, to: Kind | null) =>
    $(sel).each((_, el) => {
      const href = $(el).attr('href');
      if (!href || !href.trim()) return;
      const c = canonical(href.trim(), url);
      if (!c) return;
      let k = to;
      if (k === null) {
        const path = new URL(c).pathname;
        k = BOOK_PATTERN.test(path) ? 'book' : LIST_PATTERN.test(path) ? 'list' : null;
      }
      if (k) found.push({ url: c, kind: k, depth: 0 });
    });
  if (kind === 'list') {
    let n = 0;
    $('article.product_pod').each((_, el) => {
      const pod = $(el);
      const item = {
        title: text(pod.find('h3 a')),
        price: PRICE.exec(text(pod.find('p.price_color')))?.[0] ?? null,
        url: abs(pod.find('h3 a').first().attr('href'), url),
      };
      if (item.url) n++;
    });
    addItems('listing', n);
    follow(LIST_FOLLOW, 'list');
    follow('article.product_pod a', 'book');
  } else {
    let n = 0;
    $('article.product_page').each((_, el) => {
      const p = $(el);
      const item = {
        title: text(p.find('h1')),
        price: PRICE.exec(text(p.find('p.price_color')))?.[0] ?? null,
        upc: text(p.find('td.upc')),
        in_stock: STOCK.exec(text(p.find('p.availability')))?.[1] ?? null,
        tags: p
          .find('li.tag')
          .toArray()
          .map((t) => $(t).text().replace(/\s+/g, ' ').trim()),
        cover: abs(p.find('img').first().attr('src'), url),
      };
      if (item.upc) n++;
    });
    addItems('book', n);
    follow('ul.related a, header a', null);
  }
  return found;
}

let task: CrawlTask | null = null;
function extractPipeline(html: string, job: Job, facts: PageFacts): Job[] {
  const rule = ruleByName(task!, job.kind)!;
  const out = analysePage(task!, { facts, html, rule, depth: job.depth });
  for (const it of out.items) addItems(it.type, 1);
  return out.kept.map((k) => ({ url: k.url, kind: k.rule as Kind, depth: k.depth }));
}

async function main(): Promise<void> {
  const t0 = performance.now();
  if (values.pipeline) task = await loadTaskFile(values.task!);
  const robotsText = await (await request(`${origin}/robots.txt`, { headers: HEADERS })).body.text();
  const robots = robotsParser(`${origin}/robots.txt`, robotsText);

  const queue: Job[] = [];
  let head = 0;
  let active = 0;
  const seen = new Set<string>();
  let waiters: (() => void)[] = [];
  const wakeAll = () => {
    const w = waiters;
    waiters = [];
    for (const r of w) r();
  };
  const push = (j: Job) => {
    if (seen.has(j.url)) {
      counts.duplicates++;
      return;
    }
    seen.add(j.url);
    queue.push(j);
  };
  const first = canonical(start, start)!;
  push({ url: first, kind: task ? (routeRule(task, first, null)?.name as Kind) : 'list', depth: 0 });

  const visit = async (job: Job) => {
    if (!robots.isAllowed(job.url, UA)) {
      counts.robots++;
      return;
    }
    let html: string;
    let facts: PageFacts;
    try {
      const res = await request(job.url, { headers: HEADERS });
      html = await res.body.text();
      // As the worker's fetch describes a page (worker/fetcher.ts factsOfFetch); no redirects are followed here.
      facts = { url: job.url, finalUrl: job.url, status: res.statusCode, fetchedAt: Date.now() };
      if (res.statusCode >= 400) {
        counts.failed++;
        return;
      }
    } catch {
      counts.failed++;
      return;
    }
    counts.pages++;
    counts.bytes += Buffer.byteLength(html);
    const links = task ? extractPipeline(html, job, facts) : extractOwn(html, job.url, job.kind);
    for (const l of links) push({ ...l, depth: job.depth + 1 });
  };

  const loop = async () => {
    for (;;) {
      if (head < queue.length) {
        const job = queue[head++]!;
        active++;
        await visit(job);
        active--;
        wakeAll();
        continue;
      }
      if (active === 0) {
        wakeAll();
        return;
      }
      await new Promise<void>((r) => waiters.push(r));
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  const seconds = (performance.now() - t0) / 1000;
  console.log(JSON.stringify({ result: { ...counts, seconds, pagesPerSec: counts.pages / seconds } }));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
