import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { gzipSync } from 'node:zlib';
import { CrawlQueue } from '../../src/frontier/crawl';
import { fingerprintHex } from '../../src/core/url/fingerprint';
import { connectRedis } from '../../src/redis/connect';
import { startRedis, type RedisServer } from '../support/services';
import { bufferedPages, session, writeTask } from '../support/crawl';

// Crawls that start from sitemaps, against a real HTTP server on 127.0.0.1, a real Redis and worker processes: a
// robots.txt naming a gzip-encoded sitemap index, a .xml.gz served as application/octet-stream, a text sitemap, a
// nested index, a sitemap of 120,000 URLs generated as it is sent, and a gzip bomb.

interface SitemapSite {
  readonly url: string;
  /** Requests by path (query kept). */
  readonly hits: Map<string, number>;
  close(): Promise<void>;
}

type Handler = (req: IncomingMessage, res: ServerResponse, path: string) => boolean | Promise<boolean>;

async function serve(handler: Handler): Promise<SitemapSite> {
  const hits = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    const path = req.url ?? '/';
    hits.set(path, (hits.get(path) ?? 0) + 1);
    void Promise.resolve(handler(req, res, path)).then((handled) => {
      if (handled) return;
      const page = /^\/(p|de\/p|keep)\/[\w-]+$|^\/about\.html$/.test(path);
      res.writeHead(page ? 200 : 404, { 'content-type': 'text/html; charset=utf-8' });
      res.end(page ? `<html><body><h1>Page ${path}</h1></body></html>` : 'not found');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    hits,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

const urlset = (entries: string) => `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:xhtml="http://www.w3.org/1999/xhtml">${entries}</urlset>`;
const index = (entries: string) => `<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${entries}</sitemapindex>`;

const TASK_REQUEST = 'request: { timeout: 5s, retries: { attempts: 2, backoff: fixed, delay: 100ms } }';

describe('sitemaps (real Redis, real HTTP, worker processes)', function () {
  this.timeout(180_000);
  let redis: RedisServer;
  let site: SitemapSite | null = null;

  beforeEach(async () => {
    redis = await startRedis();
  });
  afterEach(async () => {
    await site?.close();
    site = null;
    await redis?.stop();
  });

  it('starts from robots.txt: a gzipped index, a .gz sent as octet-stream, a text sitemap, a nested index; since, alternates, rules', async () => {
    site = await serve((_req, res, path) => {
      const base = site!.url;
      const send = (type: string, body: string | Buffer, headers: Record<string, string> = {}) => {
        res.writeHead(200, { 'content-type': type, ...headers });
        res.end(body);
        return true;
      };
      switch (path) {
        case '/robots.txt':
          // Named twice: the second is a duplicate, read once.
          return send(
            'text/plain',
            `User-agent: *\nDisallow: /private/\n\nSitemap: ${base}/sitemap_index.xml\nSitemap: ${base}/sitemap_index.xml\n`,
          );
        case '/sitemap_index.xml':
          return send(
            'application/xml',
            gzipSync(
              index(`
                <sitemap><loc>${base}/products.xml.gz</loc><lastmod>2026-03-01</lastmod></sitemap>
                <sitemap><loc>${base}/old.xml</loc><lastmod>2025-06-01T00:00:00Z</lastmod></sitemap>
                <sitemap><loc>${base}/pages.txt</loc></sitemap>
                <sitemap><loc>${base}/nested_index.xml</loc></sitemap>`),
            ),
            { 'content-encoding': 'gzip' },
          );
        case '/products.xml.gz':
          // A gzip file, not a content coding, with a Content-Type that says nothing: detected by its magic bytes.
          return send(
            'application/octet-stream',
            gzipSync(
              urlset(`
                <url><loc>${base}/p/1</loc><lastmod>2026-03-01</lastmod>
                  <xhtml:link rel="alternate" hreflang="de" href="${base}/de/p/1"/></url>
                <url><loc>${base}/p/2</loc><lastmod>2026-02-15T10:00:00+01:00</lastmod></url>
                <url><loc>${base}/p/3</loc></url>
                <url><loc>${base}/p/old</loc><lastmod>2025-12-31</lastmod></url>
                <url><loc>${base}/private/p/9</loc></url>
                <url><loc>http://elsewhere.test/p/1</loc></url>
                <url><loc>${base}/unrouted.html</loc></url>`),
            ),
          );
        case '/pages.txt':
          return send('text/plain', `${base}/about.html\n${base}/p/4\n\n`);
        case '/nested_index.xml':
          return send('text/xml', index(`<sitemap><loc>${base}/moved.xml</loc></sitemap>`));
        case '/moved.xml':
          res.writeHead(302, { location: '/p/sitemap.xml' });
          res.end();
          return true;
        case '/p/sitemap.xml':
          // A relative <loc> (against the protocol, seen in the wild) resolves against where the sitemap ended up.
          return send('text/xml', urlset(`<url><loc>5</loc></url><url><loc>${base}/p/1</loc></url>`));
        default:
          return false;
      }
    });
    const task = await writeTask(`name: sitemaps
start:
  - sitemap: ${site.url}/robots.txt
    since: 2026-01-01
    alternates: true
${TASK_REQUEST}
rules:
  - name: product
    match: ["**/p/*"]
    items:
      - type: product
        fields: { title: h1 }
  - name: page
    match: ["**/about.html"]
`);
    const s = session(task, redis.url);
    const result = await s.run();
    await s.close();

    const fetched = [...site.hits.keys()].filter((p) => p !== '/robots.txt').sort();
    assert.deepEqual(fetched, [
      '/about.html',
      '/de/p/1',
      '/moved.xml',
      '/nested_index.xml',
      '/p/1',
      '/p/2',
      '/p/3',
      '/p/4',
      '/p/5',
      '/p/sitemap.xml',
      '/pages.txt',
      '/products.xml.gz',
      '/sitemap_index.xml',
    ]);
    for (const [path, n] of site.hits) assert.equal(n, 1, `${path} fetched ${n} times`);

    const stats = result.status.stats!;
    // robots.txt's entry and five sitemaps (old.xml skipped); seven pages (/private/p/9 skipped).
    assert.equal(stats.sitemaps, 6);
    assert.equal(stats.done, 6 + 7);
    assert.equal(stats.failed, 0);
    assert.equal(stats.skipped.robots, 1, '/private/p/9 is listed but robots.txt forbids it');
    assert.deepEqual(
      stats.dropped,
      { since: 2, offsite: 1, 'no-rule': 1, repeat: 1 },
      'old.xml and /p/old by since, elsewhere.test offsite, /unrouted.html no rule, the index named twice by robots.txt',
    );
    assert.equal(stats.duplicates, 1, '/p/1, listed by two sitemaps, is crawled once');

    const pages = await bufferedPages(redis.url, 'sitemaps');
    const rules = Object.fromEntries(pages.map((p) => [new URL(p.url).pathname, p.rule]));
    assert.equal(rules['/p/4'], 'product');
    assert.equal(rules['/about.html'], 'page');
    assert.equal(rules['/de/p/1'], 'product');
    const items = pages.flatMap((p) => p.items.map((i) => i.data.title)).sort();
    assert.deepEqual(items, ['Page /de/p/1', 'Page /p/1', 'Page /p/2', 'Page /p/3', 'Page /p/4', 'Page /p/5']);

    // <lastmod> travels on the page's job.
    const conn = connectRedis(redis.url);
    const crawl = new CrawlQueue(conn, 'sitemaps');
    try {
      const job = await crawl.queue.getJob(`${result.run.run}.${fingerprintHex(`${site.url}/p/2`)}`);
      assert.equal(job?.data.lastmod, Date.UTC(2026, 1, 15, 9));
      const noLastmod = await crawl.queue.getJob(`${result.run.run}.${fingerprintHex(`${site.url}/p/3`)}`);
      assert.ok(noLastmod && !('lastmod' in noLastmod.data));
    } finally {
      await crawl.close();
      conn.disconnect();
    }
  });

  it('streams a 120,000-URL sitemap: pages are crawled while it downloads, 50,000 entries taken, the rest counted', async () => {
    const TOTAL = 120_000;
    // Every 10,000th URL is a page to crawl; the others are denied by scope, so the run stays small.
    const at = (i: number) => (i % 10_000 === 0 ? `keep/${i}` : `skip/${i}`);
    let releaseRest: () => void = () => undefined;
    const firstPageAsked = new Promise<'page'>((r) => (releaseRest = () => r('page')));
    let pageBeforeSitemapEnded = false;
    let sitemapEnded = false;
    site = await serve(async (_req, res, path) => {
      if (path.startsWith('/keep/')) {
        if (!sitemapEnded) pageBeforeSitemapEnded = true;
        releaseRest();
        return false;
      }
      if (path !== '/big.xml') return false;
      res.writeHead(200, { 'content-type': 'application/xml' }); // chunked: no length known in advance
      res.write(
        '<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n',
      );
      for (let i = 0; i < TOTAL; i += 1000) {
        if (i === 20_000) {
          // The rest is sent only once a listed page has been asked for: a worker that held the whole sitemap before
          // enqueueing would never ask, and the fallback after 30 s fails the test below.
          const why = await Promise.race([
            firstPageAsked,
            new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 30_000)),
          ]);
          if (why === 'timeout') res.write('<!-- no page was asked for while the sitemap was downloading -->');
        }
        let chunk = '';
        for (let j = i; j < i + 1000; j++) chunk += `<url><loc>${site!.url}/${at(j)}</loc></url>\n`;
        if (!res.write(chunk)) await new Promise((r) => res.once('drain', r));
      }
      sitemapEnded = true;
      res.end('</urlset>\n');
      return true;
    });
    const task = await writeTask(`name: bigsitemap
start: [{ sitemap: "${site.url}/big.xml", rule: page }]
scope: { deny: ["**/skip/**"] }
${TASK_REQUEST}
rules:
  - name: page
`);
    const s = session(task, redis.url);
    const result = await s.run();
    await s.close();

    const crawled = [...site.hits.keys()].filter((p) => p.startsWith('/keep/')).sort();
    assert.deepEqual(
      crawled,
      ['/keep/0', '/keep/10000', '/keep/20000', '/keep/30000', '/keep/40000'],
      'the listed pages among the first 50,000 entries, no later one',
    );
    assert.equal(pageBeforeSitemapEnded, true, 'a listed page was fetched while the sitemap was still downloading');
    assert.equal(site.hits.get('/big.xml'), 1);
    const stats = result.status.stats!;
    assert.equal(stats.dropped['sitemap-limit'], TOTAL - 50_000);
    assert.equal(stats.dropped.denied, 50_000 - 5);
    assert.equal(stats.sitemaps, 1);
    assert.equal(stats.done, 1 + 5);
  });

  it('stops a gzip bomb at 50 MB with a clear error, keeps the pages read before it, and the crawl goes on', async () => {
    let bomb: Buffer | null = null;
    site = await serve((_req, res, path) => {
      if (path !== '/bomb.xml.gz') return false;
      res.writeHead(200, { 'content-type': 'application/x-gzip', 'content-length': String(bomb!.byteLength) });
      res.end(bomb);
      return true;
    });
    // 60 MB of XML (one page, then blanks) that gzip packs into about 60 KB. Packed before the crawl, not in the
    // request: gzipSync of 60 MB is seconds of this process's CPU on a loaded machine, and the worker's 5 s timeout
    // ran out waiting for the answer, so the first request failed as a (retryable) timeout and a second came.
    bomb = gzipSync(
      Buffer.concat([
        Buffer.from(urlset(`<url><loc>${site.url}/keep/before-bomb</loc></url>`).replace('</urlset>', '')),
        Buffer.alloc(60 * 1024 * 1024, ' '),
        Buffer.from('</urlset>'),
      ]),
    );
    const task = await writeTask(`name: bomb
start:
  - { sitemap: "${site.url}/bomb.xml.gz", rule: page }
  - ${site.url}/p/1
${TASK_REQUEST}
rules:
  - name: page
`);
    // The product's 30 s lock, not session()'s 2 s one (kept short for tests that kill workers): reading 50 MB of
    // inflated XML is seconds of CPU, and on a loaded machine a worker can miss a 2 s renewal; the job is then
    // stalled, handed to the other worker and read again, which is stall recovery working, not a retry, and would
    // make the server count 2 requests where this test checks the retry policy. No worker dies here.
    const s = session(task, redis.url, { lockDurationMs: 30_000, stalledIntervalMs: 5_000 });
    const result = await s.run();
    await s.close();

    assert.ok(bomb.byteLength < 200 * 1024, `the bomb is small on the wire (${bomb.byteLength} bytes)`);
    const stats = result.status.stats!;
    assert.equal(stats.failures['too-large'], 1);
    assert.equal(stats.failed, 1);
    assert.equal(site.hits.get('/bomb.xml.gz'), 1, 'not retried: a retry would meet the same bomb');
    assert.equal(site.hits.get('/keep/before-bomb'), 1, 'the page read before the cap is crawled');
    assert.equal(site.hits.get('/p/1'), 1, 'the rest of the crawl goes on');

    const conn = connectRedis(redis.url);
    const crawl = new CrawlQueue(conn, 'bomb');
    try {
      const [failed] = await crawl.queue.getFailed();
      assert.equal(failed!.attemptsMade, 1, 'one attempt: too-large is not retryable');
      assert.equal(failed!.stalledCounter, 0, 'the job was never taken from a worker that seemed dead');
      assert.match(
        failed!.failedReason,
        /^sitemap http:\/\/127\.0\.0\.1:\d+\/bomb\.xml\.gz decompresses to more than 50 MB, the sitemap protocol's limit/,
      );
    } finally {
      await crawl.close();
      conn.disconnect();
    }
  });
});
