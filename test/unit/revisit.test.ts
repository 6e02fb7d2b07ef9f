import assert from 'node:assert/strict';
import {
  conditionalHeaders,
  decodeRevisit,
  encodeRevisit,
  packLinks,
  relink,
  revisitShape,
} from '../../src/core/pipeline/revisit';
import { analysePage } from '../../src/core/pipeline/page';
import { progressLine, summaryLines } from '../../src/cli/format';
import { parseStats } from '../../src/frontier/stats';
import { formatDiagnostic } from '../../src/core/task/diagnostics';
import { parseTask } from '../../src/core/task/parse';
import { urlFacts } from '../support/pageFacts';

// Conditional re-crawl, the pure part: the task file's switch, a record's shape, and a 304 page's links found again.

const task = (
  extra = '',
  rules = `rules:
  - name: list
    follow: [{ selector: a.item, to: item, priority: 3 }, { selector: a.next }]
  - name: item
    match: ["**/item/*"]
    items: [{ type: item, key: [t], fields: { t: h1 } }]
  - name: more
    match: ["**/list-*"]
`,
) => {
  const { task: t, diagnostics } = parseTask(
    `name: shop\nstart: [http://shop.test/]\n${extra}\n${rules}`,
    'shop.crawl.yaml',
  );
  assert.ok(t, diagnostics.map(formatDiagnostic).join('\n'));
  return t;
};

const html = `<a class="item" href="/item/1">1</a><a class="item" href="/item/2#x">2</a><a class="item" href="/item/1">1 again</a>
<a class="next" href="/list-2">next</a><a class="next" href="http://elsewhere.test/">off</a>`;

describe('conditional re-crawl (core)', () => {
  it('is on for scheduled tasks, off otherwise, and the task file says otherwise either way', () => {
    assert.equal(task().request.conditional, false);
    assert.equal(task('schedule: { every: 6h }').request.conditional, true);
    assert.equal(task('request: { conditional: true }').request.conditional, true);
    assert.equal(task('schedule: { every: 6h }\nrequest: { conditional: false }').request.conditional, false);
    const bad = parseTask(
      'name: shop\nstart: [http://shop.test/]\nrequest: { conditional: yes please }\nrules: [{ name: a }]\n',
      'shop.crawl.yaml',
    );
    assert.equal(bad.task, null);
    assert.match(formatDiagnostic(bad.diagnostics[0]!), /shop\.crawl\.yaml:3:.*request\.conditional/);
  });

  it('finds a 304 page links again: the kept ones of its last full fetch, routed and limited as at this visit', () => {
    const t = task();
    const list = t.rules[0]!;
    const full = analysePage(t, { facts: urlFacts('http://shop.test/'), html, rule: list, depth: 0 });
    const again = relink(t, list, packLinks(full.kept), 0);
    assert.deepEqual(again.kept, full.kept, 'the same links, rules, depths and priorities as the full fetch');
    assert.deepEqual(again.dropped, {});
    // Reached deeper this time, under a maxDepth: the depth is decided at this visit.
    const deep = task('scope: { maxDepth: 2 }');
    const deeper = relink(deep, deep.rules[0]!, packLinks(full.kept), 2);
    assert.deepEqual(deeper.kept, []);
    assert.deepEqual(deeper.dropped, { depth: 3 });
  });

  it("changes a record's shape with anything that changes what a page yields, and only then", () => {
    const shape = (t: ReturnType<typeof task>) => revisitShape(t, t.rules[0]!);
    const base = shape(task());
    assert.equal(shape(task()), base, 'stable across parses (and processes)');
    assert.equal(
      shape(
        task('politeness: { perHost: { delay: 2s } }\nrequest: { timeout: 3s }\nscope: { maxPages: 10, maxDepth: 4 }'),
      ),
      base,
      'fetch settings and limits are decided at each visit',
    );
    assert.notEqual(shape(task('canonical: { dropParams: [utm_*] }')), base);
    assert.notEqual(shape(task('scope: { deny: ["/private/**"] }')), base);
    assert.notEqual(
      shape(
        task(
          '',
          'rules:\n  - name: list\n    follow: [{ selector: a.item, to: item }]\n  - name: item\n    match: ["**/item/*"]\n',
        ),
      ),
      base,
    );
    const other = task(
      '',
      'rules:\n  - name: list\n    follow: [{ selector: a.item, to: item, priority: 3 }, { selector: a.next }]\n  - name: item\n    match: ["**/item/*"]\n    items: [{ type: item, key: [t], fields: { t: h2 } }]\n  - name: more\n    match: ["**/list-*"]\n',
    );
    assert.notEqual(
      revisitShape(other, other.rules[1]!),
      revisitShape(task(), task().rules[1]!),
      'an item field changed',
    );
  });

  it('encodes records compactly and refuses what is not one', () => {
    const rec = {
      etag: 'W/"5f-1"',
      lastModified: null,
      finalUrl: 'http://shop.test/',
      shape: 'abc',
      items: 4,
      links: 'eJw=',
    };
    assert.deepEqual(decodeRevisit(encodeRevisit(rec)), rec);
    for (const junk of [null, '', 'x', '[2,"a",1,null,null,"u",null]', '{"a":1}'])
      assert.equal(decodeRevisit(junk), null);
    assert.deepEqual(conditionalHeaders(rec), { 'if-none-match': 'W/"5f-1"' });
    assert.deepEqual(conditionalHeaders({ etag: null, lastModified: 'Mon, 01 Jan 2024 00:00:00 GMT' }), {
      'if-modified-since': 'Mon, 01 Jan 2024 00:00:00 GMT',
    });
  });

  it('counts unchanged pages in the progress line and the run summary', () => {
    const stats = parseStats({ done: '10', items: '4', unchanged: '6', 'unchanged-items': '18', bytes: '2048' });
    const status = {
      task: 'shop',
      run: null,
      stats,
      counts: { frontier: 0, waiting: 0, active: 0, delayed: 0, prioritized: 0, completed: 10, failed: 0 },
      isPaused: false,
    };
    assert.match(progressLine(status, 0, 1000), /^shop · 10 done · 6 unchanged · 0 failed/);
    const lines = summaryLines(status, 1000);
    assert.ok(lines.includes('  pages fetched   10 (6 unchanged: 304), 2.0 KB'), lines.join('\n'));
    assert.ok(lines.includes('  items extracted 4 (18 more kept from unchanged pages)'), lines.join('\n'));
    const plain = summaryLines({ ...status, stats: parseStats({ done: '10', items: '4' }) }, 1000);
    assert.ok(plain.includes('  items extracted 4'), 'nothing said when nothing was unchanged');
  });
});
