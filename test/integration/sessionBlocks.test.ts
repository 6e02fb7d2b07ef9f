import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { redisForSuite, serveHttp, type HttpServer } from '../support/services';
import { session, writeTask } from '../support/crawl';

// `session.retireOn.selector`: a worker reads every page fetched in a session for the block's sign, on its main
// thread, the one that renews its jobs' locks. A page that looks like a block retires its session and is fetched
// again in another; a hostile page must not hold that thread (it is parsed as the analysis thread parses: capped
// nesting, no quadratic stray end tags), and fails with the analysis's reason.

const PAGES = 5;
/** Answered with the block page the first time: its session is retired and the page fetched again in another. */
const BLOCKED_ONCE = '/p3';
/** 400,000 unclosed <div>s: cheerio.load took minutes over it (htmlparser2's open-element stack is quadratic). */
const BOMB = '/bomb';

/** The site's requests by path, and how often it served the block page. */
const seen = { requests: new Map<string, number>(), blocks: 0 };

function blockSite(req: IncomingMessage, res: ServerResponse): void {
  const path = req.url ?? '/';
  seen.requests.set(path, (seen.requests.get(path) ?? 0) + 1);
  const html = (body: string) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(body);
  if (path === '/') {
    const links = Array.from({ length: PAGES }, (_, i) => `<a class="item" href="/p${i + 1}">p${i + 1}</a>`);
    html(`<html><body>${links.join('')}<a class="item" href="${BOMB}">bomb</a></body></html>`);
  } else if (path === BOMB) html(`<html><body>${'<div>'.repeat(400_000)}x`);
  else if (path === BLOCKED_ONCE && seen.blocks === 0) {
    seen.blocks++;
    html('<html><body><div id="captcha">Are you a robot?</div></body></html>');
  } else if (/^\/p\d+$/.test(path)) html(`<html><body><h1 class="title">${path.slice(1)}</h1></body></html>`);
  else res.writeHead(404).end();
}

describe('a session retired by a selector (real site, real Redis and worker processes)', function () {
  this.timeout(120_000);
  const redis = redisForSuite();
  let site: HttpServer;
  before(async () => (site = await serveHttp(blockSite)));
  after(() => site?.close());

  it('retires the session a block page came in and fetches it again; a parser bomb fails as parse without holding the worker', async () => {
    const task = await writeTask(`name: session-blocks
start: [${site.url}/]
request: { retries: { attempts: 3, delay: 10ms } }
session: { pool: 2, retireOn: { selector: '#captcha' } }
rules:
  - name: home
    match: ['${site.url}/']
    follow: [{ selector: a.item, to: item }]
  - name: item
    items: [{ type: item, key: [title], fields: { title: h1.title } }]
`);
    const logs: string[] = [];
    // Locks of 15 s, not the helper's 2 s (no worker dies here): a loaded machine held the bomb's parse (0.1 s on an
    // idle one) long enough for 2 s locks to expire. cheerio.load held the thread for minutes, past these too.
    const s = session(task, redis.server.url, {
      workers: 1,
      lockDurationMs: 15_000,
      stalledIntervalMs: 5_000,
      onWorkerLog: (pid, line) => logs.push(`${pid}: ${line}`),
    });
    const result = await s.run();
    await s.close();
    const stats = result.status.stats!;
    const log = logs.join('\n');
    assert.equal(seen.blocks, 1, 'the block page was served');
    assert.match(log, /answered like a block \(#captcha\)/, `the block retired its session:\n${log}`);
    assert.equal(
      stats.items,
      PAGES,
      `every page's item, the blocked one's from its second fetch: ${JSON.stringify(stats)}`,
    );
    assert.deepEqual(stats.failures, { parse: 1 }, `only the bomb failed, as parse:\n${log}`);
    assert.match(log, /nests elements too deeply to extract/, `with the analysis's reason:\n${log}`);
    // A main thread held past the locks would have had the worker's jobs stall and be fetched again.
    const expected = new Map([
      ['/', 1],
      [BOMB, 1],
      ...Array.from({ length: PAGES }, (_, i) => [`/p${i + 1}`, 1] as const),
    ]);
    expected.set(BLOCKED_ONCE, 2);
    assert.deepEqual(
      new Map([...seen.requests].filter(([p]) => p !== '/robots.txt')),
      expected,
      'each page fetched once, the blocked one twice',
    );
  });
});
