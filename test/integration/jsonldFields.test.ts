import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startRedis, type RedisServer } from '../support/services';
import { bufferedPages, session, writeTask } from '../support/crawl';

// Structured data as a field source (issue 30): product pages whose JSON-LD (a Product in an @graph, offers as a
// list, a price as a number) is read by `jsonld:` fields, next to a selector field, in a real crawl: real HTTP
// server, real Redis, real worker processes. And a bad path is refused at validate, at its line and field.

const PRODUCTS = [
  { id: 1, name: 'Lamp', price: 19.5, sku: 'L-1' },
  { id: 2, name: 'Chair', price: 120, sku: 'C-2' },
];

function productPage(p: (typeof PRODUCTS)[number]): string {
  const ld = {
    '@context': 'https://schema.org',
    '@graph': [
      { '@type': 'BreadcrumbList', itemListElement: [] },
      {
        '@type': 'Product',
        name: p.name,
        sku: p.sku,
        offers: [{ '@type': 'Offer', price: p.price, priceCurrency: 'EUR' }],
        brand: { '@type': 'Brand', name: 'Acme' },
      },
    ],
  };
  // The visible markup says something else (a sale banner): the structured data is what the fields read.
  return `<!doctype html><html><head><script type="application/ld+json">${JSON.stringify(ld)}</script><script type="application/ld+json">{ not json</script></head>
<body><h1>${p.name} — SALE!</h1><span class="price">see basket</span></body></html>`;
}

describe('jsonld: fields (real site, Redis and workers)', function () {
  this.timeout(60_000);
  let redis: RedisServer;
  let server: Server;
  let url = '';

  before(async () => {
    redis = await startRedis();
    server = createServer((req, res) => {
      const m = /^\/p\/(\d+)$/.exec(req.url ?? '');
      const p = m ? PRODUCTS.find((x) => x.id === Number(m[1])) : undefined;
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      if (req.url === '/') return res.end(PRODUCTS.map((x) => `<a class="p" href="/p/${x.id}">${x.name}</a>`).join(''));
      res.end(p ? productPage(p) : 'none');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server?.close();
    await redis?.stop();
  });

  it("reads the page's JSON-LD Product into fields that match the page's data", async () => {
    const task = await writeTask(`name: ld
start: [${url}/]
request: { robots: false }
rules:
  - name: home
    follow: [{ selector: a.p, to: product }]
  - name: product
    items:
      - type: product
        key: [sku]
        fields:
          sku: { jsonld: Product.sku, required: true }
          name: { jsonld: Product.name }
          price: { jsonld: Product.offers.price }
          currency: { jsonld: Product.offers.priceCurrency }
          brand: { jsonld: Product.brand.name }
          heading: h1
`);
    const s = session(task, redis.url, { workers: 1, concurrency: 2 });
    const result = await s.run();
    await s.close();
    assert.equal(result.status.stats!.failed, 0);
    const items = (await bufferedPages(redis.url, task.name))
      .flatMap((p) => p.items.map((i) => i.data))
      .sort((a, b) => String(a.sku).localeCompare(String(b.sku)));
    assert.deepEqual(
      items,
      [...PRODUCTS]
        .sort((a, b) => a.sku.localeCompare(b.sku))
        .map((p) => ({
          sku: p.sku,
          name: p.name,
          price: String(p.price),
          currency: 'EUR',
          brand: 'Acme',
          heading: `${p.name} — SALE!`,
        })),
    );
  });

  it('refuses a bad path at validate, with its line and field', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'cs-ld-')), 'bad.crawl.yaml');
    writeFileSync(
      file,
      `name: ld-bad
start: [${url}/]
rules:
  - name: product
    items:
      - type: product
        fields:
          price: { jsonld: Product..price }
          name: { jsonld: Product, selector: h1 }
`,
    );
    const r = spawnSync(process.execPath, [resolve('dist/cli.js'), 'validate', file], { encoding: 'utf8' });
    assert.notEqual(r.status, 0);
    const out = r.stdout + r.stderr;
    assert.match(
      out,
      /:8:\d+: error: .*jsonld.*'Product\.\.price' is not a JSON-LD path: an empty part at part 2; write a type and its properties, e\.g\. Product\.offers\.price/,
      out,
    );
    assert.match(out, /:9:\d+: error: .*'Product' names a type and no property/, out);
    assert.match(out, /:9:\d+: error: .*'selector' does not go with 'jsonld: Product'/, out);
  });
});
