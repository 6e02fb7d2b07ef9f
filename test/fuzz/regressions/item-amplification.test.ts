import assert from 'node:assert/strict';
import { MAX_PAGE_ITEM_CHARS } from '../../../src/core/extract/extract';
import { analysePage } from '../../../src/core/pipeline/page';
import { parseTask } from '../../../src/core/task/parse';
import { urlFacts } from '../../support/pageFacts';

// Found while auditing what page content puts in Redis (issue 7): nested elements repeat what they contain, so
// 31 KB of nested markup took 135 s to extract and produced over 512 MB of item JSON for one items-stream entry
// (it ended in 'RangeError: Invalid string length'). A page's items are now bounded as a whole.

describe('fuzz regressions: item data a page can yield is bounded', function () {
  this.timeout(60_000);
  const { task } = parseTask(
    `name: amp\nstart: [http://example.com/]\nrules:\n  - name: a\n    items:\n      - type: t\n        scope: div.p\n        fields:\n          all: { selector: "li", all: true }\n          self: ""\n`,
    'amp.crawl.yaml',
  );

  it('cuts a page of nested scopes at the limit and says so', () => {
    const html = `<html><body>${`<div class="p"><li>${'word '.repeat(10)}`.repeat(500)}</body></html>`;
    // Unbounded, this took 135 s and ended in a RangeError: the suite's timeout (60 s) is the bound, not a clock.
    const out = analysePage(task!, { facts: urlFacts('http://example.com/'), html, rule: task!.rules[0]!, depth: 0 });
    const chars = JSON.stringify(out.items).length;
    assert.ok(chars < MAX_PAGE_ITEM_CHARS * 1.5, `${chars} characters of items`);
    assert.ok(
      out.problems.some((p) => /reached the limit/.test(p.message)),
      JSON.stringify(out.problems),
    );
  });

  it('counts items and problems too: many empty scopes do not add up to hundreds of MB', () => {
    // 10 MB of '<p></p>' used to give 1.4 million items (content-hash keys) and as many problems: a 205 MB entry.
    const { task: t } = parseTask(
      `name: empty\nstart: [http://example.com/]\nrules:\n  - name: a\n    items:\n      - type: t\n        scope: p\n        fields:\n          x: { selector: b, required: true }\n      - type: u\n        scope: p\n        fields:\n          y: i\n`,
      'empty.crawl.yaml',
    );
    const html = `<html><body>${'<p></p>'.repeat(300_000)}</body></html>`;
    const out = analysePage(t!, { facts: urlFacts('http://example.com/'), html, rule: t!.rules[0]!, depth: 0 });
    const chars = JSON.stringify({ items: out.items, problems: out.problems }).length;
    assert.ok(chars < MAX_PAGE_ITEM_CHARS * 1.5, `${chars} characters of items and problems`);
    assert.ok(out.problems.some((p) => /reached the limit/.test(p.message)));
  });

  it('leaves ordinary pages alone', () => {
    const html = `<html><body>${Array.from({ length: 200 }, (_, i) => `<div class="p"><li>a${i}</li><li>b${i}</li></div>`).join('')}</body></html>`;
    const out = analysePage(task!, { facts: urlFacts('http://example.com/'), html, rule: task!.rules[0]!, depth: 0 });
    assert.equal(out.items.length, 200);
    assert.deepEqual(out.problems, []);
    assert.deepEqual(out.items[7]!.data.all, ['a7', 'b7']);
  });
});
