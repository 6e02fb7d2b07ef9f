import assert from 'node:assert/strict';
import type { RequestListener } from 'node:http';
import { serveHttp, startRedis, type HttpServer, type RedisServer } from '../support/services';
import { bufferedPages, session, writeTask } from '../support/crawl';
import { linkedPagesTask } from '../support/linkedPagesTask';
import { grantGaps, watchHostGrants } from '../support/hostGrants';

// Issue 19: a broad crawl, many hosts each allowed one request a second, must keep every host busy at its rate:
// no host's waiting pages may hold the worker while other hosts could be fetched. Before, a page that had to
// wait up to a second for its host waited holding one of the worker's jobs, so a worker's jobs piled up at one
// or two hosts' gates (3.4 pages/s where 200 hosts allowed 200). Now the host gate promises each waiting page a
// start of its own and the page is set aside until then (lua/politeness.lua).
//
// Asserted as outcomes, not speed: every page once, every host's requests a delay apart, and breadth — no host is
// fetched a (k+2)-th time before every host has been fetched k times. With pages hoarding the worker, host 1's
// pages all go before host 2's second page, and that fails.

const HOSTS = 10;
const PAGES = 5; // "/" and /p1../p4 on each host
const DELAY_MS = 1000;

interface Hit {
  readonly host: number;
  readonly path: string;
  readonly at: number;
}

async function serveHosts(hits: Hit[]): Promise<{ urls: string[]; close: () => Promise<void> }> {
  const servers: HttpServer[] = [];
  for (let h = 0; h < HOSTS; h++) {
    const handler: RequestListener = (req, res) => {
      if (req.url === '/robots.txt') {
        res.writeHead(404).end();
        return;
      }
      hits.push({ host: h, path: req.url ?? '', at: Date.now() });
      const links =
        req.url === '/'
          ? Array.from({ length: PAGES - 1 }, (_, i) => `<a href="/p${i + 1}">p${i + 1}</a>`).join('')
          : '';
      res
        .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        .end(`<html><body><h1>host ${h} page ${req.url}</h1>${links}</body></html>`);
    };
    // 127.0.0.2, .3, …: distinct hosts on loopback (Linux routes all of 127/8 there).
    servers.push(await serveHttp(handler, `127.0.0.${h + 2}`));
  }
  return {
    urls: servers.map((s) => s.url),
    close: async () => void (await Promise.all(servers.map((s) => s.close()))),
  };
}

describe('broad crawl: many hosts at their polite rate (issue 19)', function () {
  this.timeout(120_000);
  let redis: RedisServer;
  let web: Awaited<ReturnType<typeof serveHosts>> | undefined;
  before(async () => (redis = await startRedis()));
  after(async () => {
    await web?.close();
    await redis?.stop();
  });

  it('fetches the hosts breadth-first at one page a second each, every page once, without hoarding the worker', async () => {
    const hits: Hit[] = [];
    web = await serveHosts(hits);
    const task = await writeTask(
      linkedPagesTask({
        name: 'broad',
        start: web.urls.map((u) => `${u}/`),
        perHost: { concurrency: 1, delay: `${DELAY_MS}ms` },
      }),
    );
    // One worker with two requests: four jobs at most, so pages that wait holding jobs would stall it.
    const watch = await watchHostGrants(redis.url, DELAY_MS);
    try {
      const s = session(task, redis.url, { workers: 1, concurrency: 2 });
      await s.run();
      await s.close();
    } finally {
      await watch.stop();
    }

    // Every page exactly once, every item stored.
    const seen = new Map<string, number>();
    for (const h of hits) seen.set(`${h.host}${h.path}`, (seen.get(`${h.host}${h.path}`) ?? 0) + 1);
    assert.equal(seen.size, HOSTS * PAGES, `pages fetched: ${seen.size}`);
    for (const [page, n] of seen) assert.equal(n, 1, `${page} fetched ${n} times`);
    const items = (await bufferedPages(redis.url, 'broad')).flatMap((p) => p.items);
    assert.equal(items.length, HOSTS * PAGES);

    const byHost = Array.from({ length: HOSTS }, (_, h) =>
      hits
        .filter((x) => x.host === h)
        .map((x) => x.at)
        .sort((a, b) => a - b),
    );
    // Politeness holds per host, checked where it is kept: every start the host gate granted, by Redis's clock, a
    // full delay after the host's previous one (arrival times at the sites carry a loaded machine's delays).
    for (const [h, url] of web.urls.entries()) {
      const grants = watch.byHost.get(new URL(url).host) ?? [];
      assert.ok(grants.length >= PAGES, `host ${h}: ${grants.length} grants for ${PAGES} pages`);
      const gaps = grantGaps(grants);
      assert.ok(Math.min(...gaps) >= DELAY_MS, `host ${h}: gaps between grants ${gaps.join(', ')} ms`);
    }
    // Breadth: every host's k-th fetch comes before any host's (k+2)-th.
    for (let k = 1; k + 2 <= PAGES; k++) {
      const allKth = Math.max(...byHost.map((t) => t[k - 1]!));
      const firstK2 = Math.min(...byHost.map((t) => t[k + 1]!));
      assert.ok(
        allKth <= firstK2,
        `a host was fetched a ${k + 2}th time ${allKth - firstK2} ms before every host had been fetched ${k} times; ` +
          `fetch times per host (ms from the first): ${byHost.map((t) => t.map((x) => x - hits[0]!.at).join('/')).join('  ')}`,
      );
    }
  });
});
