import assert from 'node:assert/strict';
import { parseTask } from '../../src/core/task/parse';
import { analysePage } from '../../src/core/pipeline/page';
import { HtmlPage } from '../../src/core/extract/dom';
import { microdataItems, microdataValues, parseMicrodataPath, itemJson } from '../../src/core/extract/microdata';
import { openGraphTags, openGraphValues, parseOpenGraphKey } from '../../src/core/extract/opengraph';
import { structuredDataPaths, structuredMatches } from '../../src/core/extract/structuredData';
import { selectorSites } from '../../src/core/designer/sites';
import { fieldNameFor, planFieldInsert } from '../../src/core/designer/insert';
import { PRODUCTS, productHtml } from '../support/productSite';
import { urlFacts } from '../support/pageFacts';

// Structured data as a field source (issue 30): microdata and OpenGraph beside JSON-LD, the paths a page offers
// (what the designer lists), and that every path listed reads back its value through a field.

const task = (fields: string) => `name: sd
start: [http://shop.test/]
rules:
  - name: product
    items:
      - type: product
        fields:
${fields}
`;

describe('structured data fields (microdata, OpenGraph)', () => {
  it('read microdata values as the HTML standard says: content, meta, link, img, time, data, text; nested items apart', () => {
    const html = `<div itemscope itemtype="http://schema.org/Product">
      <span itemprop="name">  Lamp </span>
      <span itemprop="price" content="9.90">€9,90</span>
      <meta itemprop="sku" content="L-1">
      <link itemprop="url" href="/p/1">
      <img itemprop="image" src="img/l.jpg">
      <time itemprop="releaseDate" datetime="2026-01-02">Jan 2</time>
      <data itemprop="gtin" value="123">one two three</data>
      <p itemprop="color size">red</p>
      <div itemprop="offers" itemscope itemtype="https://schema.org/Offer"><span itemprop="price">10</span></div>
      <div itemscope itemtype="https://schema.org/Review"><span itemprop="author">Ann</span></div>
    </div>`;
    const items = microdataItems(HtmlPage.parse(html).root, 'http://shop.test/p/');
    assert.deepEqual(
      items.map((i) => [i.types, i.top]),
      [
        [['Product'], true],
        [['Offer'], false],
        [['Review'], true],
      ],
    );
    const read = (path: string, all = false) => microdataValues(items, parseMicrodataPath(path) as never, all);
    assert.deepEqual(read('Product.name'), ['  Lamp ']);
    assert.deepEqual(read('Product.price'), ['9.90'], "the item's own price, not its offer's");
    assert.deepEqual(read('Product.sku'), ['L-1']);
    assert.deepEqual(read('Product.url'), ['http://shop.test/p/1']);
    assert.deepEqual(read('Product.image'), ['http://shop.test/p/img/l.jpg']);
    assert.deepEqual(read('Product.releaseDate'), ['2026-01-02']);
    assert.deepEqual(read('Product.gtin'), ['123']);
    assert.deepEqual([read('Product.color'), read('Product.size')], [['red'], ['red']]);
    assert.deepEqual(read('Product.offers.price'), ['10']);
    assert.deepEqual(read('Offer.price'), ['10']);
    assert.deepEqual(read('Product.author'), [], 'a nested item that is not a property keeps its properties');
    assert.deepEqual(read('Review.author'), ['Ann']);
    assert.deepEqual(JSON.parse(read('Product.offers')[0]!), { '@type': 'Offer', price: '10' });
    assert.deepEqual(itemJson(items[2]!), { '@type': 'Review', author: 'Ann' });
  });

  it('read OpenGraph tags by property or name, case-insensitively, a repeated one as a list', () => {
    const root = HtmlPage.parse(`<head><meta property="og:title" content="T"><meta property="OG:Image" content="a.jpg">
      <meta property="og:image" content="b.jpg"><meta name="twitter:card" content="summary"><meta name="description" content="d">
      <meta property="product:price:amount" content="5"></head>`).root;
    const tags = openGraphTags(root);
    assert.deepEqual(
      tags.map(([k]) => k),
      ['og:title', 'og:image', 'og:image', 'twitter:card', 'product:price:amount'],
      'a key without a prefix is not OpenGraph',
    );
    assert.deepEqual(openGraphValues(tags, 'og:image', true), ['a.jpg', 'b.jpg']);
    assert.deepEqual(openGraphValues(tags, 'og:image', false), ['a.jpg']);
    assert.equal(parseOpenGraphKey('OG:Title'), 'og:title');
    assert.deepEqual(parseOpenGraphKey('title'), {
      error:
        "'title' has no prefix: write the meta property as the page does, e.g. og:title (or product:price:amount, twitter:title)",
    });
  });

  it('list the paths a page carries with their values, each read back the same through its field', () => {
    const p = PRODUCTS[0]!;
    const entries = structuredDataPaths(productHtml(p), 'http://shop.test/p/1');
    const by = (source: string) =>
      Object.fromEntries(entries.filter((e) => e.source === source).map((e) => [e.path, e.value]));
    assert.deepEqual(by('jsonld'), {
      'WebPage.name': `${p.name} | Shop`,
      'Product.name': p.name,
      'Product.sku': p.sku,
      'Product.image': `/img/${p.sku}.jpg`,
      'Product.brand.name': p.brand,
      'Product.offers.price': p.price,
      'Product.offers.priceCurrency': p.currency,
      'Product.offers.availability': 'https://schema.org/InStock',
    });
    assert.deepEqual(by('microdata'), {
      'Product.name': p.name,
      'Product.image': `http://shop.test/img/${p.sku}.jpg`,
      'Product.brand.name': p.brand,
      'Product.sku': p.sku,
      'Product.releaseDate': p.released,
      'Product.offers.price': p.price,
      'Product.offers.priceCurrency': p.currency,
      'Product.offers.availability': 'https://schema.org/InStock',
    });
    assert.deepEqual(by('opengraph'), {
      'og:type': 'product',
      'og:title': p.name,
      'og:image': `/img/${p.sku}.jpg`,
      'product:price:amount': p.price,
      'product:price:currency': p.currency,
      'twitter:title': p.name,
    });
    // Every entry, written as a field, reads its value back.
    const names = entries.map((_, i) => `f${i}`);
    const { task: t, diagnostics } = parseTask(
      task(entries.map((e, i) => `          ${names[i]}: { ${e.source}: ${e.path} }`).join('\n')),
      'sd.crawl.yaml',
    );
    assert.deepEqual(diagnostics, []);
    const out = analysePage(t!, {
      facts: urlFacts('http://shop.test/p/1'),
      html: productHtml(p),
      rule: t!.rules[0]!,
      depth: 0,
    });
    assert.deepEqual(out.items[0]!.data, Object.fromEntries(entries.map((e, i) => [names[i], e.value])));
    // Nothing to highlight for them in the designer: they read no element.
    assert.deepEqual(
      selectorSites(
        task(`          a: { microdata: Product.sku }\n          b: { opengraph: og:title }\n          c: h1`),
      )
        .filter((s) => s.kind === 'field')
        .map((s) => s.field),
      ['c'],
    );
  });

  it('read a page nested 10,000 levels deep without overflowing the stack (a recursive walk overflows at 8,000)', () => {
    const depth = 10_000;
    const html = `${'<div>'.repeat(depth)}<div itemscope itemtype="https://schema.org/Thing"><meta property="og:title" content="deep"><b itemprop="name">x</b></div>${'</div>'.repeat(depth)}`;
    const { task: t } = parseTask(
      task('          name: { microdata: Thing.name }\n          title: { opengraph: og:title }'),
      'sd.crawl.yaml',
    );
    const out = analysePage(t!, { facts: urlFacts('http://shop.test/'), html, rule: t!.rules[0]!, depth: 0 });
    assert.deepEqual(out.items[0]!.data, { name: 'x', title: 'deep' });
    assert.deepEqual(
      structuredDataPaths(html).map((e) => `${e.source}: ${e.path}`),
      ['microdata: Thing.name', 'opengraph: og:title'],
    );
  });

  it('list nothing on a page without structured data, and skip a broken JSON-LD block', () => {
    assert.deepEqual(
      structuredDataPaths('<p itemprop="name">x</p><script type="application/ld+json">{ no</script>'),
      [],
    );
  });

  it('refuse a bad path or key at its field and line, and anything that reads an element beside them', () => {
    const where = (fields: string) =>
      parseTask(task(fields), 'sd.crawl.yaml').diagnostics.map((d) => `${d.line} ${d.path}: ${d.message}`);
    assert.deepEqual(
      where(
        '          a: { microdata: Product }\n          b: { microdata: "Product..price" }\n          c: { opengraph: title }\n          d: { opengraph: "og title" }',
      ),
      [
        "8 rules[0].items[0].fields.a.microdata: 'Product' names a type and no property: write the itemprop to read too, e.g. Product.name",
        "9 rules[0].items[0].fields.b.microdata: 'Product..price' is not a microdata path: an empty part at part 2; write an itemtype and its itemprops, e.g. Product.offers.price",
        "10 rules[0].items[0].fields.c.opengraph: 'title' has no prefix: write the meta property as the page does, e.g. og:title (or product:price:amount, twitter:title)",
        "11 rules[0].items[0].fields.d.opengraph: 'og title' is not an OpenGraph property: write a <meta property> as the page does, e.g. og:title or product:price:amount",
      ],
    );
    assert.deepEqual(
      where(
        '          a: { microdata: Product.sku, selector: h1 }\n          b: { opengraph: og:title, jsonld: Product.name }\n          c: { microdata: Product.sku, attr: content, page: url }',
      ),
      [
        "8 rules[0].items[0].fields.a.selector: 'selector' does not go with 'microdata: Product.sku', which reads the page's microdata, not an element: remove one of them",
        "9 rules[0].items[0].fields.b.opengraph: 'opengraph' does not go with 'jsonld: Product.name': a field reads one source, remove one of them",
        "10 rules[0].items[0].fields.c.attr: 'attr' does not go with 'microdata: Product.sku', which reads the page's microdata, not an element: remove one of them",
        "10 rules[0].items[0].fields.c.page: 'page' does not go with 'microdata: Product.sku', which reads the page's microdata, not an element: remove one of them",
      ],
    );
  });
});

describe('designer: a structured-data path inserted as a field', () => {
  const text = `name: sd
rules:
  - name: product
    items:
      - type: product
        fields:
          title: h1   # the heading
          price:
            selector: .price
            all: true
          empty:
  - name: other
`;
  const apply = (cursorAt: string, delta: number, source: 'jsonld' | 'microdata' | 'opengraph', path: string) => {
    const plan = planFieldInsert(text, text.indexOf(cursorAt) + delta, source, path);
    return { out: text.slice(0, plan.start) + plan.text + text.slice(plan.end), target: plan.target };
  };

  it('gives the field under the cursor that source, whatever its value was', () => {
    const a = apply('title: h1', 2, 'jsonld', 'Product.name');
    assert.equal(a.target, 'field title');
    assert.match(a.out, /\n {10}title: \{ jsonld: Product\.name \} {3}# the heading\n/);
    const b = apply('selector: .price', 3, 'microdata', 'Product.offers.price');
    assert.equal(b.target, 'field price');
    assert.match(b.out, /\n {10}price: \{ microdata: Product\.offers\.price \}\n {10}empty:\n/);
    const c = apply('empty:', 6, 'opengraph', 'og:title');
    assert.equal(c.target, 'field empty');
    assert.match(c.out, /\n {10}empty: \{ opengraph: og:title \}\n {2}- name: other/);
    // What was written is a valid field.
    for (const { out, target } of [a, b, c])
      assert.deepEqual(
        parseTask(out, 'sd.crawl.yaml').diagnostics.filter((d) =>
          d.path.startsWith(`rules[0].items[0].fields.${target.slice(6)}`),
        ),
        [],
      );
  });

  it('adds a new field after the last one of the item the cursor is in, named by the path, never twice the same name', () => {
    const a = apply('type: product', 0, 'opengraph', 'product:price:amount');
    assert.equal(a.target, 'field price_amount');
    assert.match(a.out, /\n {10}empty:\n {10}price_amount: \{ opengraph: product:price:amount \}\n {2}- name: other/);
    const b = apply('type: product', 0, 'jsonld', 'Product.offers.price');
    assert.equal(b.target, 'field price2');
    // After a last field written as a block mapping, too.
    const blockLast = text.replace('          empty:\n', '');
    const plan = planFieldInsert(blockLast, blockLast.indexOf('type: product'), 'microdata', 'Product.sku');
    assert.match(
      blockLast.slice(0, plan.start) + plan.text + blockLast.slice(plan.end),
      /\n {12}all: true\n {10}sku: \{ microdata: Product\.sku \}\n {2}- name: other/,
    );
    assert.equal(fieldNameFor('jsonld', 'Product.offers.price'), 'price');
    assert.equal(fieldNameFor('opengraph', 'og:title'), 'title');
  });

  it("adds it to the preview's rule's first item when the cursor is in none, else writes it at the cursor", () => {
    const plan = planFieldInsert(text, 0, 'jsonld', 'Product.sku', 'product');
    assert.equal(plan.target, 'field sku');
    assert.match(
      text.slice(0, plan.start) + plan.text + text.slice(plan.end),
      /\n {10}empty:\n {10}sku: \{ jsonld: Product\.sku \}\n {2}- name: other/,
    );
    const a = apply('name: other', 0, 'jsonld', 'Product.sku');
    assert.equal(a.target, 'the cursor');
    assert.match(a.out, /- \{ jsonld: Product\.sku \}name: other/);
  });
});

describe('designer: structured data offered when picking', () => {
  const entries = structuredDataPaths(productHtml(PRODUCTS[0]!), 'http://shop.test/p/1');

  it('offers the paths whose value the picked element shows, exactly or inside a short text', () => {
    const price = structuredMatches(entries, { text: ' €19.50 ', attrs: ['19.50'] });
    assert.deepEqual(
      price.map((e) => `${e.source}: ${e.path}`),
      ['jsonld: Product.offers.price', 'microdata: Product.offers.price', 'opengraph: product:price:amount'],
    );
    const name = structuredMatches(entries, { text: 'Brass Lamp', attrs: [] });
    assert.deepEqual(
      name.map((e) => `${e.source}: ${e.path}`),
      ['jsonld: Product.name', 'microdata: Product.name', 'opengraph: og:title', 'opengraph: twitter:title'],
    );
    const sku = structuredMatches(entries, { text: 'SKU: L-100', attrs: [] });
    assert.deepEqual(
      sku.map((e) => e.path),
      ['Product.sku', 'Product.sku'],
    );
  });

  it('offers nothing for a container holding many values, or an element showing none', () => {
    assert.deepEqual(
      structuredMatches(entries, {
        text: 'Brass Lamp Brand: Acme SKU: L-100 Released: 2026-03-01 €19.50 In stock',
        attrs: [],
      }),
      [],
    );
    assert.deepEqual(structuredMatches(entries, { text: 'Shop', attrs: ['/'] }), []);
  });
});
