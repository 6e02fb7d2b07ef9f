import assert from 'node:assert/strict';
import { choosePreviewPage } from '../../src/core/designer/pageChoice';
import { parseTask } from '../../src/core/task/parse';
import { renderQuotesPage } from '../support/quotesSite';
import { urlFacts } from '../support/pageFacts';

// The Preview lens's page (issue 32, item 6): a page the rule handles, found in a stated order, each answer saying
// where it came from; never the list page with `detail` forced on it.

const BASE = 'http://127.0.0.1:8737';
const { task } = parseTask(
  `name: quotes
start:
  - ${BASE}/
rules:
  - name: list
    follow:
      - { selector: "li.next a", to: list }
      - { selector: "div.quote span a", to: author }
      - { selector: "div.quote a.tag" }
    items:
      - type: quote
        scope: div.quote
        fields: { text: span.text }
  - name: author
    items:
      - type: author
        fields: { name: h3.author-title }
  - name: tag
    match: ["/tag/**"]
    items:
      - type: tag
        fields: { name: h3 }
  - name: orphan
    items:
      - type: x
        fields: { x: h1 }
`,
  'quotes.crawl.yaml',
);
const start = { facts: urlFacts(`${BASE}/`), html: renderQuotesPage('/')!.body };

describe('the Preview lens: which page a rule is previewed on', () => {
  it('takes a link of the start page that routes to the rule, and says so', () => {
    const c = choosePreviewPage(task!, 'author', { shown: { url: `${BASE}/`, rule: 'list' }, startPages: [start] });
    assert.deepEqual(c, {
      url: `${BASE}/author/Jane-Austen/`,
      source: 'link',
      why: "a page of rule author from the start page's links",
    });
  });

  it('routes by `match` as well as by `to`', () => {
    // The tag links have no `to`: the `tag` rule's `match` takes them.
    assert.equal(choosePreviewPage(task!, 'tag', { startPages: [start] })?.url, `${BASE}/tag/life/page/1/`);
    // No follow leads to `orphan` and it has no `match`: no page of it is known.
    assert.equal(choosePreviewPage(task!, 'orphan', { startPages: [start] }), null);
  });

  it("the start URL for the rule that handles it; the page on show when it is the rule's", () => {
    assert.deepEqual(choosePreviewPage(task!, 'list', { startPages: [start] }), {
      url: `${BASE}/`,
      source: 'start',
      why: 'a start URL of the task, handled by rule list',
    });
    const shown = { url: `${BASE}/author/Mark-Twain/`, rule: 'author' };
    assert.equal(choosePreviewPage(task!, 'author', { shown, startPages: [start] })?.source, 'shown');
  });

  it('prefers the last run, then fixtures, then the start page, then pages previewed before', () => {
    const runPages = [
      { url: `${BASE}/page/2/`, rule: 'list' },
      { url: `${BASE}/author/Ada-Lovelace/`, rule: 'author' },
    ];
    const fixtures = [{ url: `${BASE}/author/Leo-Tolstoy/`, rule: 'author' }];
    const cached = [{ url: `${BASE}/author/Oscar-Wilde/`, rule: 'author' }];
    const pick = (c: Parameters<typeof choosePreviewPage>[2]) => choosePreviewPage(task!, 'author', c);
    assert.deepEqual(pick({ runPages, fixtures, startPages: [start], cached }), {
      url: `${BASE}/author/Ada-Lovelace/`,
      source: 'run',
      why: "a page of rule author from a run (the task's store)",
    });
    assert.equal(pick({ fixtures, startPages: [start], cached })?.url, `${BASE}/author/Leo-Tolstoy/`);
    assert.equal(pick({ startPages: [start], cached })?.url, `${BASE}/author/Jane-Austen/`);
    assert.equal(pick({ cached })?.source, 'cached');
    assert.equal(pick({}), null);
    assert.equal(choosePreviewPage(task!, 'nope', { runPages }), null);
  });
});
