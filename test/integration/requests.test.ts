import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { redisDump } from '../support/redisDump';
import { serveHttp, startRedis, type HttpServer, type RedisServer } from '../support/services';
import { writeTask } from '../support/crawl';
import { requestBody as body } from '../support/httpRequest';

// Requests and JSON responses, end to end: the real CLI (`run`, then `export`) with real worker processes, a real
// redis-server and a real site on 127.0.0.1 that answers as an API does. The site checks what a crawler must
// send: a rule's headers (an API key from the environment, a JSON `accept`), a form's CSRF token and method, a
// JSON or form-encoded body. It counts every request, so deduplication and the end of a series are seen from the
// server's side. The secrets are looked for afterwards in everything Redis holds.

const exec = promisify(execFile);
const CLI = resolve('dist/cli.js');
const API_KEY = `key-${randomBytes(6).toString('hex')}`;
const TOKEN = `tok-${randomBytes(6).toString('hex')}`;
const PRODUCTS = [1, 2, 3, 4, 5, 6].map((id) => ({
  id,
  name: `Product ${id}`,
  price: id * 10,
  href: `/api/products/${id}`,
}));

interface Site extends HttpServer {
  /** "METHOD path?query" of every request, in order. */
  readonly log: string[];
  /** Requests the site refused, with why. */
  readonly refused: string[];
}

async function shopSite(): Promise<Site> {
  const log: string[] = [];
  const refused: string[] = [];
  const tokens = new Set<string>();
  const flaky = new Map<string, number>();
  const json = (res: ServerResponse, value: unknown, type = 'application/json; charset=utf-8') => {
    res.writeHead(200, { 'content-type': type });
    res.end(JSON.stringify(value));
  };
  const html = (res: ServerResponse, text: string) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><html><body>${text}</body></html>`);
  };
  const refuse = (res: ServerResponse, status: number, why: string) => {
    refused.push(why);
    res.writeHead(status, { 'content-type': 'text/plain' });
    res.end(why);
  };
  const server = await serveHttp((req, res) => {
    void (async () => {
      const u = new URL(req.url ?? '/', 'http://x');
      const sent = req.method === 'GET' ? '' : await body(req);
      log.push(`${req.method} ${u.pathname}${u.search}`);
      const form = new URLSearchParams(sent);
      if (u.pathname === '/' || u.pathname === '/about') {
        // A search form on every page, each load with its own CSRF token.
        const token = randomBytes(6).toString('hex');
        tokens.add(token);
        return html(
          res,
          `<h1>${u.pathname}</h1><form id="search" method="post" action="/search"><input type="hidden" name="csrf" value="${token}">` +
            `<input name="q" value=""><select name="sort"><option value="new">new</option><option value="price" selected>price</option></select><button name="go">Go</button></form>`,
        );
      }
      if (u.pathname === '/search' && req.method === 'POST') {
        if (req.headers['content-type'] !== 'application/x-www-form-urlencoded')
          return refuse(res, 415, `search: content-type ${req.headers['content-type']}`);
        if (!tokens.has(form.get('csrf') ?? '')) return refuse(res, 403, 'search: no valid CSRF token');
        if (form.get('token') !== TOKEN) return refuse(res, 403, 'search: wrong token');
        if (form.get('q') !== 'shoes' || form.get('sort') !== 'price' || form.has('go'))
          return refuse(res, 400, `search: form ${sent}`);
        return html(
          res,
          `<span id="q" data-q="shoes"></span><ul><li class="hit">Red shoe</li><li class="hit">Blue shoe</li></ul>`,
        );
      }
      if (u.pathname === '/search/more' && req.method === 'POST') {
        if (form.get('q') !== 'shoes') return refuse(res, 400, `more: form ${sent}`);
        const hits: Record<string, string[]> = { '2': ['Green shoe'], '3': ['Black shoe'] };
        return json(res, { hits: (hits[form.get('page') ?? ''] ?? []).map((name) => ({ name })) });
      }
      if (u.pathname === '/api/products') {
        if (req.headers['x-api-key'] !== API_KEY)
          return refuse(res, 401, `products: x-api-key ${req.headers['x-api-key']}`);
        const page = Number(u.searchParams.get('page'));
        return json(res, { page, products: PRODUCTS.slice((page - 1) * 2, page * 2) });
      }
      const m = /^\/api\/products\/(\d+)$/.exec(u.pathname);
      if (m) {
        if (!/application\/json/.test(req.headers.accept ?? ''))
          return refuse(res, 406, `product: accept ${req.headers.accept}`);
        const p = PRODUCTS.find((x) => x.id === Number(m[1]))!;
        return json(res, { id: p.id, price: { amount: p.price, currency: 'EUR' } }, 'application/vnd.shop+json');
      }
      if (u.pathname === '/flaky') {
        // Fails each body's first try: a POST that may have reached the server is not sent again, an idempotent one is.
        const tries = (flaky.get(sent) ?? 0) + 1;
        flaky.set(sent, tries);
        if (tries === 1) return refuse(res, 500, 'flaky: first try');
        return html(res, '<p class="ok">ok</p>');
      }
      refuse(res, 404, `no ${u.pathname}`);
    })();
  });
  return Object.assign(server, { log, refused });
}

describe('requests and JSON responses (real CLI, worker processes, redis-server and site)', function () {
  this.timeout(180_000);
  let redis: RedisServer;
  let site: Site;
  before(async () => {
    redis = await startRedis();
    site = await shopSite();
  });
  after(async () => {
    await site?.close();
    await redis?.stop();
  });

  async function cli(args: string[], env: Record<string, string> = {}): Promise<string> {
    const { stdout, stderr } = await exec(
      process.execPath,
      [CLI, ...args, ...(['validate', 'export', 'fixture', 'test'].includes(args[0]!) ? [] : ['--redis', redis.url])],
      { timeout: 150_000, env: { ...process.env, ...env } },
    );
    return stdout + stderr;
  }

  async function exported(file: string, type: string): Promise<Record<string, unknown>[]> {
    const out = await cli(['export', file, '--type', type, '--format', 'jsonl']);
    return out
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  }

  it('pages through a JSON API with a rule header, follows JSON links, submits a search form once and counts its "load more" POSTs', async () => {
    const task = await writeTask(`name: shop-requests
start:
  - ${site.url}/
  - ${site.url}/about
  - url: ${site.url}/api/products?page={page}
    rule: products
request: { robots: false, retries: { attempts: 3, delay: 10ms } }
rules:
  - name: home
    follow:
      - form: form#search
        fields: { q: shoes, token: '\${CRAWL_STUDIO_TEST_TOKEN}' }
        to: results
  - name: results
    items: [{ type: hit, scope: li.hit, key: [name], fields: { name: { trim: true } } }]
    follow:
      - url: /search/more
        fields: { q: '{q}', page: '{page}' }
        values: { q: { selector: '#q', attr: data-q } }
        pages: { from: 2 }
        to: more
  - name: more
    items: [{ type: hit, scope: $.hits, key: [name], fields: { name: $.name } }]
  - name: products
    request: { headers: { x-api-key: '\${CRAWL_STUDIO_TEST_API_KEY}' } }
    items: [{ type: product, scope: $.products, key: [id], fields: { id: $.id, name: { selector: $.name, required: true } } }]
    follow: [{ selector: '$.products[*].href', to: product }]
  - name: product
    items: [{ type: price, key: [id], fields: { id: $.id, amount: $.price.amount } }]
`);
    const validate = await cli(['validate', task.file]);
    assert.doesNotMatch(validate, /error/, validate);
    const out = await cli(['run', task.file, '--workers', '2', '--concurrency', '4'], {
      CRAWL_STUDIO_TEST_TOKEN: TOKEN,
      CRAWL_STUDIO_TEST_API_KEY: API_KEY,
    });
    assert.deepEqual(site.refused, [], `the site accepted every request:\n${out}`);

    const count = (line: string) => site.log.filter((l) => l === line).length;
    for (const p of [1, 2, 3, 4])
      assert.equal(count(`GET /api/products?page=${p}`), 1, `API page ${p} fetched once: ${site.log.join(', ')}`);
    assert.equal(count('GET /api/products?page=5'), 0, 'page 4 was empty: the series ended there');
    assert.equal(count('POST /search'), 1, 'the same search form on two pages (two CSRF tokens) was sent once');
    assert.equal(
      site.log.filter((l) => l === 'POST /search/more').length,
      3,
      'load more: pages 2 and 3, then the empty page 4',
    );
    for (const p of PRODUCTS) assert.equal(count(`GET /api/products/${p.id}`), 1);

    const products = await exported(task.file, 'product');
    assert.deepEqual(products.map((p) => [p.id, p.name]).sort(), PRODUCTS.map((p) => [String(p.id), p.name]).sort());
    const prices = await exported(task.file, 'price');
    assert.deepEqual(
      prices.map((p) => [p.id, p.amount]).sort(),
      PRODUCTS.map((p) => [String(p.id), String(p.price)]).sort(),
    );
    const hits = await exported(task.file, 'hit');
    assert.deepEqual(hits.map((h) => h.name).sort(), ['Black shoe', 'Blue shoe', 'Green shoe', 'Red shoe']);

    // A fixture of an API page, saved and re-run from the terminal: read as JSON, sent with the rule's header.
    const saved = await cli(['fixture', 'save', task.file, `${site.url}/api/products?page=2`, '--rule', 'products'], {
      CRAWL_STUDIO_TEST_API_KEY: API_KEY,
    });
    assert.match(saved, /2 items, 2 links, 0 problems/, saved);
    const tested = await cli(['test', task.file]);
    assert.match(tested, /1 of 1 fixture unchanged/, tested);

    const dump = await redisDump(redis.url);
    for (const secret of [TOKEN, API_KEY]) {
      assert.ok(!dump.includes(secret), 'no secret in Redis (job data, streams, stats)');
      assert.ok(!out.includes(secret), 'no secret in the terminal');
    }
    // Job data is JSON inside the hash's JSON: unescaped to read it.
    const jobs = dump.replace(/\\"/g, '"');
    assert.match(jobs, /"method":"POST"/, 'the POST jobs carry their method');
    assert.match(
      jobs,
      /"parts":\["csrf=[0-9a-f]+&sort=price&q=shoes&token=","CRAWL_STUDIO_TEST_TOKEN",""\]/,
      'and their body, the variable by name only',
    );
  });

  it('does not send a failed POST again unless it is idempotent; an unset variable fails its pages by name', async () => {
    site.log.length = 0;
    site.refused.length = 0;
    const task = await writeTask(`name: shop-retries
start:
  - url: ${site.url}/flaky
    fields: { a: '1' }
  - url: ${site.url}/flaky
    fields: { a: '2' }
    idempotent: true
  - url: ${site.url}/about
    rule: keyed
request: { robots: false, retries: { attempts: 3, delay: 10ms } }
rules:
  - name: page
    items: [{ type: ok, fields: { ok: p.ok } }]
  - name: keyed
    request: { headers: { x-api-key: '\${CRAWL_STUDIO_TEST_UNSET}' } }
`);
    const out = await cli(['run', task.file, '--workers', '1', '--concurrency', '1']);
    assert.equal(
      site.log.filter((l) => l === 'POST /flaky').length,
      3,
      `the plain POST once (500, final), the idempotent one twice:\n${site.log.join('\n')}`,
    );
    assert.ok(!site.log.includes('GET /about'), 'the page whose header variable is unset was not sent');
    assert.match(out, /failed +2/, out);
    assert.match(out, /http-500/, out);
    assert.match(out, /request/, out);
    const ok = await exported(task.file, 'ok');
    assert.equal(ok.length, 1, 'the idempotent POST succeeded on its second try');
  });
});
