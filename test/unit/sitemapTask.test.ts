import assert from 'node:assert/strict';
import { formatDiagnostic } from '../../src/core/task/diagnostics';
import { parseTask } from '../../src/core/task/parse';

// `start` entries that name sitemaps: what the task gets, and mistakes reported at their file, line and field.

describe('task files: sitemaps in start', () => {
  it('reads sitemap entries beside start URLs, with every field, and counts their hosts as start hosts', () => {
    const { task, diagnostics } = parseTask(
      `name: shop
start:
  - https://shop.test/
  - sitemap: https://shop.test/robots.txt
  - sitemap: https://sitemaps.shop.test/index.xml
    rule: product
    priority: 5
    follow: ["**/products-*.xml.gz"]
    since: 30d
    alternates: true
  - { sitemap: "https://shop.test/robots.txt?v=2", since: 2026-01-01 }
rules:
  - name: home
  - name: product
    match: ["**/p/**"]
`,
      'shop.crawl.yaml',
    );
    assert.deepEqual(diagnostics, []);
    assert.deepEqual(
      task!.start.map((s) => s.url),
      ['https://shop.test/'],
    );
    const [robots, index, query] = task!.sitemaps;
    assert.deepEqual(
      { ...robots!, follow: [] },
      {
        url: 'https://shop.test/robots.txt',
        robots: true,
        rule: null,
        priority: null,
        since: null,
        follow: [],
        alternates: false,
      },
    );
    assert.equal(index!.rule, 'product');
    assert.equal(index!.priority, 5);
    assert.deepEqual(index!.since, { kind: 'age', ms: 30 * 86_400_000 });
    assert.equal(index!.alternates, true);
    assert.ok(index!.follow[0]!.regex.test('https://sitemaps.shop.test/products-1.xml.gz'));
    assert.equal(query!.robots, false, 'only /robots.txt itself lists sitemaps');
    assert.deepEqual(query!.since, { kind: 'date', ms: Date.UTC(2026, 0, 1) });
    assert.deepEqual(task!.scope.startHosts, ['shop.test', 'sitemaps.shop.test']);
  });

  it('a task may start from sitemaps alone', () => {
    const { task, diagnostics } = parseTask(
      'name: s\nstart: [{ sitemap: "https://shop.test/sitemap.xml", rule: r }]\nrules: [{ name: r }]\n',
      's.crawl.yaml',
    );
    assert.deepEqual(diagnostics, []);
    assert.equal(task!.start.length, 0);
    assert.equal(task!.sitemaps.length, 1);
  });

  it("warns when a sitemap's pages could reach no rule (no rule, and no rule has match)", () => {
    const { task, diagnostics } = parseTask(
      'name: s\nstart:\n  - sitemap: https://shop.test/sitemap.xml\nrules: [{ name: page }]\n',
      's.crawl.yaml',
    );
    assert.ok(task, 'a warning, not an error');
    assert.deepEqual(diagnostics.map(formatDiagnostic), [
      "s.crawl.yaml:3:5: warning: start[0].sitemap: no rule has 'match', so every page this sitemap lists would be dropped (no-rule): add 'rule: page' to the entry, or 'match' to a rule",
    ]);
  });

  it('reports each mistake at its file, line and field', () => {
    const text = `name: bad
start:
  - url: https://shop.test/
    sitemap: https://shop.test/sitemap.xml
  - sitemap: /sitemap.xml
  - sitemap: https://shop.test/s.xml
    since: last tuesday
    rule: prodcut
    follow: ["/[/"]
  - url: https://shop.test/a
    since: 7d
  - rule: product
  - sitemap: https://shop.test/t.xml
    alternate: true
rules:
  - name: product
`;
    const { task, diagnostics } = parseTask(text, 'bad.crawl.yaml');
    assert.equal(task, null);
    const lines = diagnostics.map(formatDiagnostic);
    const expect = [
      /^bad\.crawl\.yaml:3:5: error: start\[0\]\.url: give either 'url' \(a page\) or 'sitemap', not both/,
      /^bad\.crawl\.yaml:5:14: error: start\[1\]\.sitemap: '\/sitemap\.xml' is not an absolute URL/,
      /^bad\.crawl\.yaml:7:12: error: start\[2\]\.since: 'last tuesday' is neither a date \(2026-01-01, 2026-01-01T08:00:00Z\) nor an age/,
      /^bad\.crawl\.yaml:8:11: error: start\[2\]\.rule: no rule named 'prodcut'; did you mean 'product'\?/,
      /^bad\.crawl\.yaml:9:14: error: start\[2\]\.follow\[0\]: '\/\[\/' starts with '\/', so it is a path glob now, and it looks like a regular expression/,
      /^bad\.crawl\.yaml:11:5: error: start\[3\]\.since: 'since' is for sitemaps: write 'sitemap: https:\/\/shop\.test\/a' instead of 'url:'/,
      /^bad\.crawl\.yaml:12:5: error: start\[4\]: give the entry a 'url' \(a page\) or a 'sitemap'/,
      /^bad\.crawl\.yaml:14:5: error: start\[5\]\.alternate: unknown field 'alternate'; did you mean 'alternates'\?/,
    ];
    assert.equal(lines.length, expect.length, lines.join('\n'));
    expect.forEach((re, i) => assert.match(lines[i]!, re));
  });
});
