import assert from 'node:assert/strict';
import { previewSitemap, sitemapEntryOf } from '../../src/core/designer/sitemapPreview';
import { formatDiagnostic } from '../../src/core/task/diagnostics';
import { parseTask } from '../../src/core/task/parse';

// The designer's sitemap preview, pure: each entry with the rule a crawl sends it to, or why it drops it, under the
// settings of the task's `sitemap:` entry for that URL (or none for a sitemap the task does not name).

const { task, diagnostics } = parseTask(
  `name: shop
start:
  - sitemap: http://shop.test/sitemap-products.xml
    rule: product
    since: 2026-01-02
  - sitemap: http://shop.test/robots.txt
rules:
  - name: product
  - name: page
    match: ["**/p/*"]
`,
  'shop.crawl.yaml',
);

describe('designer: sitemap preview', () => {
  it('routes a named sitemap with its own settings, and another one by match', () => {
    assert.ok(task, diagnostics.map(formatDiagnostic).join('\n'));
    const page = (loc: string, lastmod: string | null = null) => ({
      kind: 'page' as const,
      loc,
      lastmod,
      alternates: [],
    });
    const entries = [
      page('http://shop.test/p/1', '2026-01-01'),
      page('http://shop.test/p/2', '2026-02-01'),
      page('http://other.test/p/3'),
      page('http://shop.test/p/2'),
    ];
    const named = previewSitemap(
      task,
      {
        url: 'http://shop.test/sitemap-products.xml',
        finalUrl: 'http://shop.test/sitemap-products.xml',
        format: 'urlset',
        entries,
        truncated: false,
      },
      Date.UTC(2026, 5, 1),
    );
    assert.deepEqual(
      named.entries.map((e) => e.rule ?? e.dropped),
      ['since', 'product', 'offsite', 'product'],
    );
    assert.equal(named.kept, 2);
    assert.deepEqual(named.dropped, { since: 1, offsite: 1 });
    assert.match(named.settings, /every page to rule product, older <lastmod>s skipped/);
    const other = previewSitemap(
      task,
      {
        url: 'http://shop.test/other.xml',
        finalUrl: 'http://shop.test/other.xml',
        format: 'urlset',
        entries: [page('http://shop.test/p/1', '2020-01-01'), page('http://shop.test/about')],
        truncated: false,
      },
      0,
    );
    assert.deepEqual(
      other.entries.map((e) => e.rule ?? e.dropped),
      ['page', 'no-rule'],
    );
    assert.match(other.settings, /not a sitemap the task starts from/);
    assert.equal(sitemapEntryOf(task, 'http://SHOP.test:80/robots.txt'), 1, 'URLs compared in their canonical form');
  });

  it("lists a robots.txt's and an index's sitemaps, with the ones off the task's hosts dropped", () => {
    const sm = (loc: string) => ({ kind: 'sitemap' as const, loc, lastmod: null });
    const robots = previewSitemap(
      task!,
      {
        url: 'http://shop.test/robots.txt',
        finalUrl: 'http://shop.test/robots.txt',
        format: 'robots',
        entries: [sm('http://shop.test/a.xml'), sm('http://cdn.other.test/b.xml')],
        truncated: false,
      },
      0,
    );
    assert.deepEqual(
      robots.entries.map((e) => [e.kind, e.dropped]),
      [
        ['sitemap', null],
        ['sitemap', 'offsite'],
      ],
    );
  });
});
