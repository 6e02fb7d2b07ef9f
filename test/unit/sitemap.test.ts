import assert from 'node:assert/strict';
import { parseLastmod, parseSince, sinceCutoff } from '../../src/core/sitemap/lastmod';
import { MAX_LOC_CHARS, MAX_SITEMAP_DEPTH, SitemapParser, type SitemapEntry } from '../../src/core/sitemap/parser';
import { decideSitemap, MAX_SITEMAP_ENTRIES, MAX_SITEMAP_NESTING, SitemapRouter } from '../../src/core/sitemap/route';
import { parseTask } from '../../src/core/task/parse';

// The pure half of sitemaps: the streaming parser, <lastmod> and `since`, and routing entries like links.

function parseAll(text: string, opts = {}, chunk = text.length): { entries: SitemapEntry[]; parser: SitemapParser } {
  const parser = new SitemapParser(opts);
  const entries: SitemapEntry[] = [];
  for (let i = 0; i < text.length; i += chunk) {
    parser.write(text.slice(i, i + chunk));
    entries.push(...parser.take());
  }
  parser.end();
  entries.push(...parser.take());
  return { entries, parser };
}

const URLSET = `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"
        xmlns:xhtml="http://www.w3.org/1999/xhtml">
  <url>
    <loc> https://shop.test/a?x=1&amp;y=2 </loc>
    <lastmod>2026-03-01</lastmod>
    <image:image><image:loc>https://cdn.test/a.jpg</image:loc></image:image>
    <xhtml:link rel="alternate" hreflang="de" href="https://shop.test/de/a"/>
    <xhtml:link rel="alternate" hreflang="fr" href="https://shop.test/fr/a"/>
  </url>
  <url><loc><![CDATA[https://shop.test/b]]></loc></url>
  <url><lastmod>2026-01-01</lastmod></url>
</urlset>`;

describe('sitemap parser', () => {
  it("reads <url> entries with lastmod, entities and CDATA, and never an extension's nested <loc>", () => {
    const { entries, parser } = parseAll(URLSET);
    assert.equal(parser.format, 'urlset');
    assert.deepEqual(entries, [
      { kind: 'page', loc: 'https://shop.test/a?x=1&y=2', lastmod: '2026-03-01', alternates: [] },
      { kind: 'page', loc: 'https://shop.test/b', lastmod: null, alternates: [] },
    ]);
  });

  it('gives the same entries whatever the chunks, one character at a time included', () => {
    const whole = parseAll(URLSET, { alternates: true }).entries;
    for (const chunk of [1, 2, 7, 64])
      assert.deepEqual(parseAll(URLSET, { alternates: true }, chunk).entries, whole, `chunks of ${chunk}`);
    assert.deepEqual(whole[0], {
      kind: 'page',
      loc: 'https://shop.test/a?x=1&y=2',
      lastmod: '2026-03-01',
      alternates: ['https://shop.test/de/a', 'https://shop.test/fr/a'],
    });
  });

  it('reads a sitemap index, with a namespace prefix too', () => {
    const { entries, parser } = parseAll(`<sm:sitemapindex xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9">
      <sm:sitemap><sm:loc>https://shop.test/s1.xml.gz</sm:loc><sm:lastmod>2026-02-02T10:00:00+01:00</sm:lastmod></sm:sitemap>
      <sm:sitemap><sm:loc>https://shop.test/s2.xml</sm:loc></sm:sitemap>
    </sm:sitemapindex>`);
    assert.equal(parser.format, 'sitemapindex');
    assert.deepEqual(entries, [
      { kind: 'sitemap', loc: 'https://shop.test/s1.xml.gz', lastmod: '2026-02-02T10:00:00+01:00' },
      { kind: 'sitemap', loc: 'https://shop.test/s2.xml', lastmod: null },
    ]);
  });

  it('reads the text format, one URL a line, across chunks (a BOM and blank lines are no URLs)', () => {
    const text = '\uFEFFhttps://shop.test/1\r\n\nhttps://shop.test/2\n  https://shop.test/3  ';
    for (const chunk of [1, 5, text.length]) {
      const { entries, parser } = parseAll(text, {}, chunk);
      assert.equal(parser.format, 'text');
      assert.deepEqual(
        entries.map((e) => e.loc),
        ['https://shop.test/1', 'https://shop.test/2', 'https://shop.test/3'],
        `chunks of ${chunk}`,
      );
    }
  });

  it('says an HTML page or a feed is not a sitemap, and takes nothing from it', () => {
    const html = parseAll('<!doctype html><html><body><url><loc>https://x.test/</loc></url></body></html>');
    assert.equal(html.parser.format, null);
    assert.equal(html.parser.root, 'html');
    assert.deepEqual(html.entries, []);
    assert.equal(
      parseAll('<rss><channel><item><link>https://x.test/</link></item></channel></rss>').parser.format,
      null,
    );
  });

  it('cuts a giant <loc> or line instead of holding it', () => {
    const huge = 'https://shop.test/' + 'a'.repeat(100_000);
    const xml = parseAll(`<urlset><url><loc>${huge}</loc></url></urlset>`, {}, 1000).entries;
    assert.equal(xml[0]!.loc.length, MAX_LOC_CHARS + 1);
    const text = parseAll(`${huge}\nhttps://shop.test/ok\n`, {}, 1000).entries;
    assert.equal(text[0]!.loc.length, MAX_LOC_CHARS + 1);
    assert.equal(text[1]!.loc, 'https://shop.test/ok');
  });
});

describe('sitemap parser on hostile input', () => {
  it('never throws and never keeps a <loc> past its cap, whatever the bytes and the chunks', () => {
    let seed = 17;
    const rand = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    const pieces = [
      '<urlset>',
      '<url>',
      '<loc>',
      '</loc>',
      '</url>',
      '<sitemapindex>',
      '<sitemap>',
      '<lastmod>',
      '2026-01-01',
      '<![CDATA[',
      ']]>',
      '<!--',
      '-->',
      '&amp;',
      '&#x0;',
      '&bogus;',
      '<',
      '>',
      '/',
      '"',
      "'",
      'https://x.test/',
      'a'.repeat(5000),
      '<?xml ?>',
      '<!DOCTYPE x [<!ENTITY e "eeee">]>',
      '&e;',
      '\u0000',
      '\n',
      ' ',
    ];
    for (let round = 0; round < 300; round++) {
      let text = '';
      for (let i = rand(200); i > 0; i--) text += pieces[rand(pieces.length)];
      const { entries } = parseAll(text, { alternates: true }, 1 + rand(300));
      for (const e of entries)
        assert.ok(e.loc.length <= MAX_LOC_CHARS + 1, `round ${round}: a ${e.loc.length}-character <loc>`);
    }
  });

  it(`refuses nesting deeper than ${MAX_SITEMAP_DEPTH}, keeping the entries read before it`, () => {
    const url = (n: number) => `<url><loc>https://x.test/${n}</loc></url>`;
    const nest = (depth: number) => `${'<x>'.repeat(depth)}${'</x>'.repeat(depth)}`;
    // At the limit: the urlset and MAX_SITEMAP_DEPTH - 1 levels inside it.
    assert.equal(parseAll(`<urlset>${url(1)}${nest(MAX_SITEMAP_DEPTH - 1)}${url(2)}</urlset>`).entries.length, 2);
    const parser = new SitemapParser();
    parser.write(`<urlset>${url(1)}`);
    // 400,000 levels (2 MB): quadratic for htmlparser2, minutes; refused at the first element past the limit.
    assert.throws(
      () => parser.write(`${'<x>'.repeat(400_000)}`),
      new RegExp(`it nests elements more than ${MAX_SITEMAP_DEPTH} deep, which no sitemap does`),
    );
    assert.deepEqual(
      parser.take().map((e) => e.loc),
      ['https://x.test/1'],
    );
  });

  it('expands no entity a DTD declares (no billion laughs)', () => {
    const { entries } = parseAll(
      '<!DOCTYPE x [<!ENTITY e "eeee">]><urlset><url><loc>https://x.test/&e;</loc></url></urlset>',
    );
    assert.deepEqual(
      entries.map((e) => e.loc),
      ['https://x.test/&e;'],
    );
  });
});

describe('sitemap dates', () => {
  it('reads every W3C Datetime form, zones included, and refuses what is not a date', () => {
    assert.equal(parseLastmod('2026'), Date.UTC(2026, 0, 1));
    assert.equal(parseLastmod('2026-03'), Date.UTC(2026, 2, 1));
    assert.equal(parseLastmod('2026-03-04'), Date.UTC(2026, 2, 4));
    assert.equal(parseLastmod('2026-03-04T10:20Z'), Date.UTC(2026, 2, 4, 10, 20));
    assert.equal(parseLastmod('2026-03-04T10:20:30.123+02:00'), Date.UTC(2026, 2, 4, 8, 20, 30));
    assert.equal(parseLastmod('2026-03-04T10:20:30-0500'), Date.UTC(2026, 2, 4, 15, 20, 30));
    for (const bad of ['', 'yesterday', '2026-13-01', '2026-02-30', '04/03/2026', '2026-03-04T25:00Z'])
      assert.equal(parseLastmod(bad), null, bad);
  });

  it('reads `since` as a date or an age counted back from when the sitemap is read', () => {
    assert.deepEqual(parseSince('2026-01-01'), { kind: 'date', ms: Date.UTC(2026, 0, 1) });
    assert.deepEqual(parseSince('30d'), { kind: 'age', ms: 30 * 86_400_000 });
    assert.deepEqual(parseSince('2w'), { kind: 'age', ms: 14 * 86_400_000 });
    assert.equal(sinceCutoff(parseSince('12h')!, Date.UTC(2026, 0, 2)), Date.UTC(2026, 0, 1, 12));
    assert.equal(parseSince('soon'), null);
    assert.equal(parseSince('30s'), null, 'seconds are no age for a sitemap');
  });
});

const TASK = `name: sm
start:
  - sitemap: https://shop.test/sitemap.xml
    since: 2026-02-01
  - sitemap: https://shop.test/index.xml
    rule: product
    follow: ["**/products-*.xml"]
    alternates: true
scope:
  deny: ["**/private/**"]
rules:
  - name: list
    match: ["**/list/**"]
  - name: product
    match: ["**/p/**"]
`;

describe('sitemap routing', () => {
  const task = parseTask(TASK, 'sm.crawl.yaml').task!;
  const page = (loc: string, lastmod: string | null = null, alternates: string[] = []): SitemapEntry => ({
    kind: 'page',
    loc,
    lastmod,
    alternates,
  });

  it('routes pages to rules by match, drops them like links, and skips what is older than `since`', () => {
    const router = new SitemapRouter({ task, entry: 0, url: 'https://shop.test/sitemap.xml', level: 0, nowMs: 0 });
    const r = router.route([
      page('https://shop.test/p/1', '2026-03-01'),
      page('/list/2'),
      page('https://shop.test/p/old', '2026-01-31T23:59:59Z'),
      page('https://shop.test/other'),
      page('https://elsewhere.test/p/3'),
      page('https://shop.test/private/p/4'),
      page('https://shop.test/p/5', 'not a date'),
    ]);
    assert.deepEqual(
      r.links.map((l) => [l.url, l.rule, l.depth, l.lastmod]),
      [
        ['https://shop.test/p/1', 'product', 0, Date.UTC(2026, 2, 1)],
        ['https://shop.test/list/2', 'list', 0, undefined],
        ['https://shop.test/p/5', 'product', 0, undefined],
      ],
    );
    assert.ok(
      r.links.every((l) => l.sitemap === undefined),
      'pages are page jobs',
    );
    assert.deepEqual(r.dropped, { since: 1, 'no-rule': 1, offsite: 1, denied: 1 });
  });

  it('sends every page of an entry with `rule` to that rule, alternates included', () => {
    const router = new SitemapRouter({ task, entry: 1, url: 'https://shop.test/index.xml', level: 0, nowMs: 0 });
    const r = router.route([page('https://shop.test/anything', null, ['https://shop.test/de/anything'])]);
    assert.deepEqual(
      r.links.map((l) => [l.url, l.rule]),
      [
        ['https://shop.test/anything', 'product'],
        ['https://shop.test/de/anything', 'product'],
      ],
    );
  });

  it('reads the sitemaps of an index that `follow` names, one level deeper, and stops at the nesting limit', () => {
    const sitemap = (loc: string): SitemapEntry => ({ kind: 'sitemap', loc, lastmod: '2026-03-01' });
    const router = new SitemapRouter({ task, entry: 1, url: 'https://shop.test/index.xml', level: 2, nowMs: 0 });
    const r = router.route([
      sitemap('/products-1.xml'),
      sitemap('/blog.xml'),
      sitemap('https://elsewhere.test/products-2.xml'),
    ]);
    assert.deepEqual(
      r.links.map((l) => [l.url, l.sitemap, l.depth, l.lastmod]),
      [['https://shop.test/products-1.xml', 1, 3, Date.UTC(2026, 2, 1)]],
    );
    assert.deepEqual(r.dropped, { follow: 1, offsite: 1 });
    const deepest = new SitemapRouter({
      task,
      entry: 1,
      url: 'https://shop.test/index.xml',
      level: MAX_SITEMAP_NESTING,
      nowMs: 0,
    });
    assert.deepEqual(deepest.route([sitemap('/products-9.xml')]).dropped, { nesting: 1 });
  });

  it('takes at most 50,000 entries of one sitemap and counts every one past them', () => {
    const router = new SitemapRouter({ task, entry: 1, url: 'https://shop.test/index.xml', level: 0, nowMs: 0 });
    let kept = 0;
    const dropped: Record<string, number> = {};
    const total = MAX_SITEMAP_ENTRIES + 1234;
    for (let i = 0; i < total; i += 1000) {
      const batch = Array.from({ length: Math.min(1000, total - i) }, (_, j) => page(`https://shop.test/p/${i + j}`));
      const r = router.route(batch);
      kept += r.links.length;
      for (const [k, n] of Object.entries(r.dropped)) dropped[k] = (dropped[k] ?? 0) + n;
    }
    assert.equal(kept, MAX_SITEMAP_ENTRIES);
    assert.deepEqual(dropped, { 'sitemap-limit': 1234 });
    assert.equal(router.entries, total);
  });

  it('reads a sitemap on a start host or one `scope.allow` names, even when `allow` names only pages', () => {
    const allowing = parseTask(
      `name: a\nstart: [{ sitemap: "https://shop.test/robots.txt" }]\nscope: { allow: ["https://shop.test/p/**", "https://s3.test/shop/**"] }\nrules: [{ name: r }]\n`,
      'a.crawl.yaml',
    ).task!;
    assert.equal(allowing.sitemaps[0]!.robots, true);
    assert.deepEqual(decideSitemap(allowing, '/sitemap.xml', 'https://shop.test/robots.txt'), {
      ok: true,
      url: 'https://shop.test/sitemap.xml',
      host: 'shop.test',
    });
    assert.equal(decideSitemap(allowing, 'https://s3.test/shop/sitemap.xml', 'https://shop.test/robots.txt').ok, true);
    assert.deepEqual(decideSitemap(allowing, 'https://evil.test/sitemap.xml', 'https://shop.test/robots.txt'), {
      ok: false,
      reason: 'offsite',
    });
    assert.deepEqual(decideSitemap(allowing, 'http://10.0.0.1/sitemap.xml', 'https://shop.test/robots.txt'), {
      ok: false,
      reason: 'private',
    });
  });
});
