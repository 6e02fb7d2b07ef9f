import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join, dirname, resolve } from 'node:path';
import { writeFileSync, readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { loadSqlite } from '../../src/store/sqliteDriver';
import { Redis } from 'ioredis';
import { startRedis, type RedisServer, serveHttp, type HttpServer } from '../support/services';
import { writeTask } from '../support/crawl';

// Conditional re-crawl (issue 17) through the real CLI, real worker processes, a real redis-server and a real site
// that sends ETags and Last-Modified, honours If-None-Match / If-Modified-Since and counts what it was asked. The
// site is a chain / -> /a -> /b -> /c -> /item/9 whose first three links are unchanged pages: a re-crawl that did not
// follow a 304 page's links would stop at the first one.

const run = promisify(execFile);
const { DatabaseSync } = loadSqlite('recrawl test');
const CLI = resolve('dist/cli.js');
const LAST_MODIFIED = 'Mon, 01 Jan 2024 10:00:00 GMT';

interface Site extends HttpServer {
  /** Changes /item/2 (new title, new ETag) and makes it link to a new page, /item/4. */
  change(): void;
  /** Per request: path, whether it was conditional, the status sent. */
  log: { path: string; conditional: boolean; status: number }[];
}

async function site(): Promise<Site> {
  let version = 1;
  const log: Site['log'] = [];
  const pages = (): Record<string, { html: string; etag?: string; lastModified?: string }> => ({
    '/': {
      etag: '"home-1"',
      html: '<a class="item" href="/item/1">1</a><a class="item" href="/item/2">2</a><a class="more" href="/a">a</a>',
    },
    '/a': { etag: 'W/"a-1"', html: '<a class="item" href="/item/3">3</a><a class="more" href="/b">b</a>' },
    '/b': { lastModified: LAST_MODIFIED, html: '<a class="more" href="/c">c</a>' },
    '/c': { html: '<a class="item" href="/item/9">9</a>' },
    '/item/1': { etag: '"i1"', html: '<p class="id">1</p><h1>One</h1>' },
    '/item/2':
      version === 1
        ? { etag: '"i2-v1"', html: '<p class="id">2</p><h1>Two</h1>' }
        : { etag: '"i2-v2"', html: '<p class="id">2</p><h1>Two, again</h1><a class="item" href="/item/4">4</a>' },
    '/item/3': { etag: '"i3"', lastModified: LAST_MODIFIED, html: '<p class="id">3</p><h1>Three</h1>' },
    '/item/4': { etag: '"i4"', html: '<p class="id">4</p><h1>Four</h1>' },
    '/item/9': { etag: '"i9"', html: '<p class="id">9</p><h1>Nine</h1>' },
  });
  const server = await serveHttp((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const page = pages()[path];
    const inm = req.headers['if-none-match'];
    const ims = req.headers['if-modified-since'];
    const conditional = inm !== undefined || ims !== undefined;
    if (!page) {
      log.push({ path, conditional, status: 404 });
      res.writeHead(404).end();
      return;
    }
    const headers: Record<string, string> = { 'content-type': 'text/html; charset=utf-8' };
    if (page.etag) headers.etag = page.etag;
    if (page.lastModified) headers['last-modified'] = page.lastModified;
    // RFC 9110 13.2.2: If-None-Match decides when present; If-Modified-Since only without it.
    const notModified =
      inm !== undefined
        ? page.etag !== undefined && inm === page.etag
        : ims !== undefined && page.lastModified !== undefined && Date.parse(ims) >= Date.parse(page.lastModified);
    log.push({ path, conditional, status: notModified ? 304 : 200 });
    if (notModified) {
      res.writeHead(304, page.etag ? { etag: page.etag } : {}).end();
      return;
    }
    res.writeHead(200, headers).end(`<!doctype html><html><body>${page.html}</body></html>`);
  });
  return Object.assign(server, { log, change: () => void (version = 2) });
}

const TASK = (url: string, extra = '', title = 'h1') => `name: recrawl
start: [${url}/]
request: { robots: false, conditional: true, retries: { attempts: 2, delay: 50ms } }
${extra}
rules:
  - name: list
    match: ["${url}/", "**/a", "**/b", "**/c"]
    follow: [{ selector: a.item, to: item }, { selector: a.more, to: list }]
  - name: item
    match: ["**/item/*"]
    follow: [{ selector: a.item, to: item }]
    items: [{ type: item, key: [id], fields: { id: .id, title: ${title} } }]
`;

describe('conditional re-crawl: ETag and Last-Modified through the CLI (real site, Redis, workers, SQLite)', function () {
  this.timeout(180_000);
  let redis: RedisServer;
  let s: Site;
  before(async () => {
    redis = await startRedis();
    s = await site();
  });
  after(async () => {
    await s?.close();
    await redis?.stop();
  });

  async function cli(...args: string[]): Promise<string> {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args, '--redis', redis.url], { timeout: 120_000 });
    return stdout + stderr;
  }
  const crawl = async (file: string) => {
    s.log.length = 0;
    return cli('run', file, '--workers', '1', '--concurrency', '2');
  };
  const byPath = () => Object.fromEntries(s.log.map((l) => [l.path, `${l.conditional ? 'if ' : ''}${l.status}`]));

  it('asks again conditionally, keeps unchanged pages items, follows their links, and survives a new Redis', async () => {
    const task = await writeTask(TASK(s.url));
    const db = join(dirname(task.file), '.crawl', 'recrawl.sqlite');
    const items = () => {
      const d = new DatabaseSync(db, { readOnly: true });
      try {
        return d
          .prepare("SELECT key, json_extract(data, '$.title') AS title FROM items_item ORDER BY key")
          .all()
          .map((r) => `${r.key}: ${r.title}`);
      } finally {
        d.close();
      }
    };

    const first = await crawl(task.file);
    assert.ok(
      s.log.every((l) => !l.conditional && l.status === 200),
      `the first run has nothing to compare with: ${JSON.stringify(s.log)}`,
    );
    assert.equal(s.log.length, 8, JSON.stringify(byPath()));
    assert.doesNotMatch(first, /unchanged/, first);
    assert.deepEqual(items(), ['1: One', '2: Two', '3: Three', '9: Nine']);
    const validators = new DatabaseSync(db, { readOnly: true });
    const rows = validators.prepare('SELECT url, etag, last_modified, items FROM page_validators ORDER BY url').all();
    validators.close();
    assert.equal(rows.length, 7, `every page with an ETag or Last-Modified has its row: ${JSON.stringify(rows)}`);

    s.change();
    const second = await crawl(task.file);
    assert.deepEqual(byPath(), {
      '/': 'if 304',
      '/a': 'if 304',
      '/b': 'if 304', // Last-Modified only: If-Modified-Since
      '/c': '200', // no validators: fetched in full, and found through three unchanged pages
      '/item/1': 'if 304',
      '/item/2': 'if 200', // changed
      '/item/3': 'if 304',
      '/item/4': '200', // new, linked from the changed page
      '/item/9': 'if 304',
    });
    assert.equal(s.log.length, 9, 'each page once');
    assert.match(second, /pages fetched +9 \(6 unchanged: 304\)/, second);
    assert.match(second, /items extracted 2 \(3 more kept from unchanged pages\)/, second);
    assert.match(second, /requested again, conditionally/, second);
    assert.deepEqual(
      items(),
      ['1: One', '2: Two, again', '3: Three', '4: Four', '9: Nine'],
      'unchanged items kept once, the changed one updated',
    );
    const status = await cli('status', task.file);
    assert.match(status, /9 done · 6 unchanged ·/, status);

    // A new Redis (here: emptied): the records come back from the store before the run's first page.
    const r = new Redis(redis.url);
    await r.flushall();
    r.disconnect();
    const third = await crawl(task.file);
    assert.match(third, /8 page validators restored from the store/, third);
    assert.equal(s.log.filter((l) => l.status === 304).length, 8, JSON.stringify(byPath()));
    assert.equal(byPath()['/c'], '200');
    assert.deepEqual(items(), ['1: One', '2: Two, again', '3: Three', '4: Four', '9: Nine']);

    // The item rule edited: its pages may yield other items now, so they are fetched in full; the list pages are not.
    writeFileSync(task.file, TASK(s.url, '', '"h1, h2"'));
    const fourth = await crawl(task.file);
    assert.equal(byPath()['/item/1'], '200');
    assert.equal(byPath()['/item/9'], '200');
    assert.equal(byPath()['/a'], 'if 304');
    assert.match(fourth, /items extracted 5\b/, fourth);

    // Off: nothing conditional.
    writeFileSync(task.file, readFileSync(task.file, 'utf8').replace('conditional: true', 'conditional: false'));
    await crawl(task.file);
    assert.ok(
      s.log.every((l) => !l.conditional),
      JSON.stringify(byPath()),
    );
    assert.equal(s.log.length, 9);
  });
});
