import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startRedis, type RedisServer } from '../support/services';
import { bufferedPages, session, writeTask } from '../support/crawl';
import { browserOrSkip } from '../support/browser';

// Issue 36: a rendered page loads what its extraction needs and, by default, not its images, fonts or media (what a
// page's extraction never reads); a rule that wants them says `block: []`. Real Chromium, real redis-server, a real
// worker process; asserted on what reached the site (its own request log), never on time or memory.

const PIXEL = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);

/** A page with an image, a web font its text is set in, a video, and a stylesheet; its script writes the title. */
const PAGE = `<!doctype html><html><head><title>t</title><link rel="stylesheet" href="/style.css"></head><body>
<img src="/pic.png" alt=""><video src="/clip.mp4" preload="auto" muted autoplay></video><audio src="/tune.mp3" preload="auto"></audio>
<main></main>
<script>setTimeout(() => { document.querySelector('main').innerHTML = '<h1 class="title">' + location.pathname + '</h1>'; }, 50);</script>
</body></html>`;

const CSS = `@font-face { font-family: "Bench"; src: url("/font.woff2") format("woff2"); }
body, h1 { font-family: "Bench", sans-serif; }`;

async function serve(): Promise<{ url: string; hits: Map<string, number>; close(): Promise<void> }> {
  const hits = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    const path = req.url ?? '/';
    hits.set(path, (hits.get(path) ?? 0) + 1);
    if (path === '/robots.txt') return void res.writeHead(404).end();
    if (path === '/style.css') return void res.writeHead(200, { 'content-type': 'text/css' }).end(CSS);
    if (path === '/pic.png') return void res.writeHead(200, { 'content-type': 'image/png' }).end(PIXEL);
    // Not a real font or clip: what is asserted is whether the browser asked for them.
    if (path === '/font.woff2') return void res.writeHead(200, { 'content-type': 'font/woff2' }).end('wOF2');
    if (path === '/clip.mp4') return void res.writeHead(200, { 'content-type': 'video/mp4' }).end('');
    if (path === '/tune.mp3') return void res.writeHead(200, { 'content-type': 'audio/mpeg' }).end('');
    if (path.startsWith('/page/'))
      return void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    hits,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

function task(url: string, name: string, block: string): string {
  return `name: ${name}
start: ["${url}/page/1", "${url}/page/2", "${url}/page/3"]
request: { timeout: 10s, retries: { attempts: 2, backoff: fixed, delay: 100ms } }
rules:
  - name: page
    match: ["**/page/*"]
    browser: { waitFor: { selector: h1.title }, timeout: 10s${block} }
    items:
      - type: thing
        key: [title]
        fields:
          title: h1.title
`;
}

describe('what a rendered page loads (issue 36: images, fonts and media blocked by default)', function () {
  this.timeout(120_000);
  let redis: RedisServer;
  let site: Awaited<ReturnType<typeof serve>>;

  before(function () {
    browserOrSkip(this);
  });
  beforeEach(async () => {
    redis = await startRedis();
    site = await serve();
  });
  afterEach(async () => {
    await site?.close();
    await redis?.stop();
  });

  async function crawl(name: string, block: string): Promise<string[]> {
    const t = await writeTask(task(site.url, name, block));
    const s = session(t, redis.url, { workers: 1, concurrency: 2, lockDurationMs: 30_000 });
    const result = await s.run();
    await s.close();
    assert.equal(result.status.stats!.failed, 0);
    const pages = await bufferedPages(redis.url, t.name);
    return pages.flatMap((p) => p.items.map((i) => String(i.data.title))).sort();
  }

  it('by default, renders and extracts every page without asking the site for its images, fonts or media', async () => {
    const titles = await crawl('lean', '');
    assert.deepEqual(titles, ['/page/1', '/page/2', '/page/3']);
    const asked = Object.fromEntries(site.hits);
    for (const path of ['/pic.png', '/font.woff2', '/clip.mp4', '/tune.mp3'])
      assert.equal(site.hits.get(path), undefined, `${path} blocked: the site saw ${JSON.stringify(asked)}`);
    // What layout needs is not blocked: a wait for an element, a click or a scroll may depend on it.
    assert.ok((site.hits.get('/style.css') ?? 0) >= 1, `the stylesheet loaded: ${JSON.stringify(asked)}`);
  });

  it('loads them when the rule opts in with `block: []`', async () => {
    const titles = await crawl('everything', ', block: []');
    assert.deepEqual(titles, ['/page/1', '/page/2', '/page/3']);
    const asked = JSON.stringify(Object.fromEntries(site.hits));
    // Each asked for: so the default's absences above are the blocking's doing, not a page that never asks.
    for (const path of ['/pic.png', '/font.woff2', '/clip.mp4', '/tune.mp3'])
      assert.ok((site.hits.get(path) ?? 0) >= 1, `${path} fetched: the site saw ${asked}`);
  });
});
