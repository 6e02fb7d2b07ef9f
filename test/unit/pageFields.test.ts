import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import schema from '../../src/core/task/crawl-task.schema.json';
import { parseTask } from '../../src/core/task/parse';
import { PAGE_VALUES } from '../../src/core/task/model';
import { analysePage } from '../../src/core/pipeline/page';
import { preparePage } from '../../src/core/designer/page';
import { computePreview } from '../../src/core/designer/preview';
import { selectorSites } from '../../src/core/designer/sites';
import { saveFixture, testTaskFile } from '../../src/workspace/fixtureStore';
import { formatTestReport } from '../../src/core/designer/fixtures';
import { urlFacts } from '../support/pageFacts';
import { tempDir } from '../support/tempDir';

// Fields whose value is a fact about the page (issue 21, item 5): `{ page: url }` next to selector fields, the same
// values in a crawl, the designer's preview and a fixture.

const task = (fields: string, scope = '') => `name: pf
start: [http://shop.test/list]
rules:
  - name: book
    items:
      - type: book${scope}
        key: [id]
        fields:
${fields}
`;

const FIELDS = `          title: h1
          id: { page: url, regex: '/book/([0-9]+)' }
          url: { page: url }
          landed: { page: finalUrl }
          status: { page: status }
          fetched: { page: fetchedAt }
          rule: { page: rule }`;

const HTML = '<html><body><h1> A  book </h1></body></html>';
const FETCHED = Date.UTC(2026, 11, 3, 9, 41, 7, 123);

describe('page fields ({ page: url })', () => {
  it('the schema lists the values the engine knows', () => {
    const field = (schema as { definitions: { field: { then: { properties: { page: { enum: string[] } } } } } })
      .definitions.field;
    assert.deepEqual(field.then.properties.page.enum, [...PAGE_VALUES]);
  });

  it('take the page URL as queued, the URL after redirects, the status, the fetch time and the rule, cleaned up like any field', () => {
    const { task: t, diagnostics } = parseTask(task(FIELDS), 'pf.crawl.yaml');
    assert.deepEqual(diagnostics, []);
    const out = analysePage(t!, {
      facts: {
        url: 'http://shop.test/book/17',
        finalUrl: 'http://shop.test/book/17/',
        status: 200,
        fetchedAt: FETCHED,
      },
      html: HTML,
      rule: t!.rules[0]!,
      depth: 1,
    });
    assert.deepEqual(out.problems, []);
    assert.deepEqual(out.items[0]!.data, {
      title: 'A book',
      id: '17',
      url: 'http://shop.test/book/17',
      landed: 'http://shop.test/book/17/',
      status: '200',
      fetched: '2026-12-03T09:41:07.123Z',
      rule: 'book',
    });
    // A page value can be the item's key.
    assert.equal(out.items[0]!.key, '17');
  });

  it('give every item of a scope the same page values, and are null where a fact is not known', () => {
    const { task: t } = parseTask(
      task(
        `          title: span\n          id: span\n          url: { page: url }\n          status: { page: status, required: true }`,
        '\n        scope: li',
      ),
      'pf.crawl.yaml',
    );
    const out = analysePage(t!, {
      facts: urlFacts('http://shop.test/list'),
      html: '<ul><li><span>a</span></li><li><span>b</span></li></ul>',
      rule: t!.rules[0]!,
      depth: 0,
    });
    assert.equal(out.items.length, 0, 'status is required and unknown: no item');
    assert.deepEqual(
      out.problems.map((p) => p.message),
      ["required field 'status' empty", "required field 'status' empty"],
    );
    const known = analysePage(t!, {
      facts: { ...urlFacts('http://shop.test/list'), status: 203 },
      html: '<ul><li><span>a</span></li><li><span>b</span></li></ul>',
      rule: t!.rules[0]!,
      depth: 0,
    });
    assert.deepEqual(
      known.items.map((i) => [i.data.title, i.data.url, i.data.status]),
      [
        ['a', 'http://shop.test/list', '203'],
        ['b', 'http://shop.test/list', '203'],
      ],
    );
  });

  it('need no selector or scope, and refuse what reads an element, at the key, with the way out', () => {
    const ok = parseTask(task('          id: { page: url }'), 'pf.crawl.yaml');
    assert.deepEqual(ok.diagnostics, [], 'a page field alone needs neither selector nor scope');
    const where = (text: string) =>
      parseTask(text, 'pf.crawl.yaml').diagnostics.map((d) => `${d.line}:${d.column} ${d.path}: ${d.message}`);
    assert.deepEqual(where(task(`          id: h1\n          url: { page: url, selector: a, all: true }`)), [
      "10:29 rules[0].items[0].fields.url.selector: 'selector' does not go with 'page: url', which takes the page's url, not an element's: remove one of them",
      "10:42 rules[0].items[0].fields.url.all: 'all' does not go with 'page: url', which takes the page's url, not an element's: remove one of them",
    ]);
    assert.deepEqual(where(task(`          id: h1\n          url: { page: uri }`)), [
      "10:24 rules[0].items[0].fields.url.page: must be one of 'url', 'finalUrl', 'status', 'fetchedAt', 'rule', not 'uri'",
    ]);
  });

  it("show their values in the designer preview, from the cached page's status and fetch time", () => {
    const text = task(FIELDS);
    const page = preparePage(HTML, 'http://shop.test/book/17', 'http://shop.test/book/17/', {
      status: 200,
      fetchedAt: new Date(FETCHED).toISOString(),
    });
    const r = computePreview({ text, file: 'pf.crawl.yaml', page, rule: 'book', cursor: null, lastGood: null });
    const table = r.view.items[0]!;
    const row = Object.fromEntries(table.columns.map((c, i) => [c, table.rows[0]!.cells[i]!.value]));
    assert.deepEqual(row, {
      title: 'A book',
      id: '17',
      url: 'http://shop.test/book/17',
      landed: 'http://shop.test/book/17/',
      status: '200',
      fetched: '2026-12-03T09:41:07.123Z',
      rule: 'book',
    });
    // No element to highlight or pick for a page field: the designer's selector sites leave it out.
    assert.deepEqual(
      selectorSites(text)
        .filter((s) => s.kind === 'field')
        .map((s) => s.field),
      ['title'],
    );
  });

  it('keep their values in a fixture: `test` passes on the saved page, whenever it runs', async () => {
    const dir = tempDir('cs-pagefields-');
    const file = join(dir, 'pf.crawl.yaml');
    writeFileSync(file, task(FIELDS));
    const t = parseTask(readFileSync(file, 'utf8'), file).task!;
    const json = await saveFixture(
      file,
      t,
      {
        url: 'http://shop.test/book/17',
        finalUrl: 'http://shop.test/book/17/',
        html: HTML,
        status: 200,
        fetchedAt: new Date(FETCHED).toISOString(),
      },
      'book',
      1,
    );
    const saved = JSON.parse(readFileSync(json, 'utf8'));
    assert.equal(saved.status, 200);
    assert.equal(saved.expected.items[0].data.fetched, '2026-12-03T09:41:07.123Z');
    const report = await testTaskFile(file);
    assert.equal(report.ok, true, formatTestReport(report));
    // A fixture saved before fixtures kept status and fetch time: fetchedAt is its save time, status unknown.
    const { status: _s, fetchedAt: _f, ...old } = saved;
    writeFileSync(json, JSON.stringify({ ...old, savedAt: '2025-01-01T00:00:00.000Z' }));
    const before = await testTaskFile(file);
    assert.deepEqual(
      before.results[0]!.changed.map((c) => [c.field, c.actual]),
      [
        ['status', null],
        ['fetched', '2025-01-01T00:00:00.000Z'],
      ],
    );
  });
});
