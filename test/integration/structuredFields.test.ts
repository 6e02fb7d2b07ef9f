import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startRedis, type RedisServer } from '../support/services';
import { bufferedPages, session, writeTask } from '../support/crawl';
import { PRODUCTS, serveProducts, type ProductSite } from '../support/productSite';

// Issue 30's acceptance: "A product page with JSON-LD and microdata in the test site: the fields read from them
// match the page". Product pages carrying JSON-LD, microdata and OpenGraph are crawled by real workers (real HTTP
// server, Redis, worker processes); the fields each source gives equal what the page shows, read by selectors.

describe('structured data fields: JSON-LD, microdata, OpenGraph (real site, Redis and workers)', function () {
  this.timeout(60_000);
  let redis: RedisServer;
  let site: ProductSite;

  before(async () => {
    redis = await startRedis();
    site = await serveProducts();
  });
  after(async () => {
    await site?.close();
    await redis?.stop();
  });

  it('reads each source into fields equal to what the page shows', async () => {
    const task = await writeTask(`name: structured
start: [${site.url}/]
request: { robots: false }
rules:
  - name: home
    follow: [{ selector: a.p, to: product }]
  - name: product
    items:
      - type: product
        key: [sku]
        fields:
          # What the page shows
          sku: { selector: .sku, required: true }
          name: h1
          price: { selector: .price, regex: '[0-9.]+' }
          brand: .brand
          image: { selector: article img, attr: src, url: true }
          # JSON-LD
          ldName: { jsonld: Product.name }
          ldPrice: { jsonld: Product.offers.price }
          ldBrand: { jsonld: Product.brand.name }
          ldImage: { jsonld: Product.image, url: true }
          # Microdata
          mdSku: { microdata: Product.sku }
          mdName: { microdata: Product.name }
          mdPrice: { microdata: Product.offers.price }
          mdCurrency: { microdata: Product.offers.priceCurrency }
          mdBrand: { microdata: Product.brand.name }
          mdImage: { microdata: Product.image }
          mdReleased: { microdata: Product.releaseDate }
          mdStock: { microdata: Product.offers.availability, regex: '([A-Za-z]+)$' }
          # OpenGraph
          ogTitle: { opengraph: og:title }
          ogImage: { opengraph: og:image, url: true }
          ogPrice: { opengraph: product:price:amount }
          ogCurrency: { opengraph: product:price:currency }
`);
    const s = session(task, redis.url, { workers: 1, concurrency: 2 });
    const result = await s.run();
    await s.close();
    assert.equal(result.status.stats!.failed, 0);
    const items = (await bufferedPages(redis.url, task.name))
      .flatMap((p) => p.items.map((i) => i.data))
      .sort((a, b) => String(a.sku).localeCompare(String(b.sku)));
    assert.equal(items.length, PRODUCTS.length);
    for (const item of items) {
      const p = PRODUCTS.find((x) => x.sku === item.sku)!;
      const image = `${site.url}/img/${p.sku}.jpg`;
      // The page as shown: the selectors read what the product is.
      assert.deepEqual([item.name, item.price, item.brand, item.image], [p.name, p.price, p.brand, image]);
      // Every source agrees with the page.
      assert.deepEqual(
        { ldName: item.ldName, ldPrice: item.ldPrice, ldBrand: item.ldBrand, ldImage: item.ldImage },
        { ldName: item.name, ldPrice: item.price, ldBrand: item.brand, ldImage: item.image },
      );
      assert.deepEqual(
        { mdSku: item.mdSku, mdName: item.mdName, mdPrice: item.mdPrice, mdBrand: item.mdBrand, mdImage: item.mdImage },
        { mdSku: item.sku, mdName: item.name, mdPrice: item.price, mdBrand: item.brand, mdImage: item.image },
      );
      assert.deepEqual(
        [item.mdCurrency, item.mdReleased, item.mdStock],
        [p.currency, p.released, p.inStock ? 'InStock' : 'OutOfStock'],
      );
      assert.deepEqual(
        { ogTitle: item.ogTitle, ogImage: item.ogImage, ogPrice: item.ogPrice, ogCurrency: item.ogCurrency },
        { ogTitle: item.name, ogImage: item.image, ogPrice: item.price, ogCurrency: p.currency },
      );
    }
  });

  it('refuses a bad microdata path or OpenGraph key at validate, with its line and field', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'cs-sd-')), 'bad.crawl.yaml');
    writeFileSync(
      file,
      `name: sd-bad
start: [${site.url}/]
rules:
  - name: product
    items:
      - type: product
        fields:
          price: { microdata: Offer }
          title: { opengraph: title, selector: h1 }
`,
    );
    const r = spawnSync(process.execPath, [resolve('dist/cli.js'), 'validate', file], { encoding: 'utf8' });
    assert.notEqual(r.status, 0);
    const out = r.stdout + r.stderr;
    assert.match(
      out,
      /:8:\d+: error: .*'Offer' names a type and no property: write the itemprop to read too, e\.g\. Offer\.name/,
      out,
    );
    assert.match(
      out,
      /:9:\d+: error: .*'title' has no prefix: write the meta property as the page does, e\.g\. og:title/,
      out,
    );
    assert.match(out, /:9:\d+: error: .*'selector' does not go with 'opengraph: title'/, out);
  });
});
