import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parseTask } from '../../src/core/task/parse';
import { analysePage } from '../../src/core/pipeline/page';
import { renderPage, book, DEMO_SITE } from '../../src/demo/site';
import { compileRobots } from '../../src/core/robots';
import { urlFacts } from '../support/pageFacts';

const { task } = parseTask(readFileSync('examples/books.crawl.yaml', 'utf8'), 'books.crawl.yaml');
const base = 'http://127.0.0.1:8737';

describe('extraction', () => {
  it('extracts a detail page item with text, regex, lists and resolved URLs', () => {
    const html = renderPage('/catalogue/book-17.html', DEMO_SITE)!.body;
    const out = analysePage(task!, {
      facts: urlFacts(`${base}/catalogue/book-17.html`),
      html,
      rule: task!.rules[1]!,
      depth: 2,
    });
    const b = book(17);
    assert.equal(out.items.length, 1);
    const item = out.items[0]!;
    assert.equal(item.key, b.upc);
    assert.equal(item.data.title, b.title);
    assert.match(b.title, /[^\p{ASCII}]/u, 'book 17 has a unicode title');
    assert.equal(item.data.price, b.price);
    assert.deepEqual(item.data.tags, b.tags);
    assert.equal(item.data.cover, `${base}/media/cover-17.jpg`);
    assert.equal(item.data.in_stock, b.stock > 0 ? String(b.stock) : null);
  });

  it('splits links into kept and dropped with reasons, deduplicated on the page', () => {
    const html = renderPage('/catalogue/page-1.html', DEMO_SITE)!.body;
    const out = analysePage(task!, {
      facts: urlFacts(`${base}/catalogue/page-1.html`),
      html,
      rule: task!.rules[0]!,
      depth: 1,
    });
    const books = out.kept.filter((l) => l.rule === 'book');
    assert.equal(books.length, DEMO_SITE.perPage);
    assert.ok(
      books.every((l) => !l.url.includes('?')),
      'tracking parameters dropped',
    );
    assert.ok(out.kept.some((l) => l.url === `${base}/catalogue/page-2.html` && l.rule === 'list' && l.priority === 1));
    assert.equal(out.items.length, 0);
  });

  it('reports item problems (missing key) without losing other items', () => {
    const { task: t } = parseTask(
      `name: t\nstart: [http://a.com/]\nrules:\n  - name: r\n    items:\n      - type: p\n        scope: li\n        key: [id]\n        fields:\n          id: { attr: data-id }\n          name: span\n`,
      't.yaml',
    );
    const html =
      '<ul><li data-id="1"><span>one</span></li><li><span>no id</span></li><li data-id="3"><span>three</span></li></ul>';
    const out = analysePage(t!, { facts: urlFacts('http://a.com/'), html, rule: t!.rules[0]!, depth: 0 });
    assert.deepEqual(
      out.items.map((i) => i.key),
      ['1', '3'],
    );
    assert.equal(out.problems.length, 1);
    assert.match(out.problems[0]!.message, /key field 'id' empty/);
  });

  it('keys items without key fields by content hash, equal for equal items', () => {
    const { task: t } = parseTask(
      `name: t\nstart: [http://a.com/]\nrules:\n  - name: r\n    items:\n      - type: p\n        scope: li\n        fields: { v: span }\n`,
      't.yaml',
    );
    const out = analysePage(t!, {
      facts: urlFacts('http://a.com/'),
      html: '<li><span>x</span></li><li><span>x</span></li><li><span>y</span></li>',
      rule: t!.rules[0]!,
      depth: 0,
    });
    assert.equal(out.items[0]!.key, out.items[1]!.key);
    assert.notEqual(out.items[0]!.key, out.items[2]!.key);
    assert.match(out.items[0]!.key, /^#[0-9a-f]{40}$/);
  });

  it('survives malformed HTML', () => {
    const out = analysePage(task!, {
      facts: urlFacts(`${base}/catalogue/book-1.html`),
      html: '<article class="product_page"><h1>Unclosed <b>title<table><td class=upc>U1',
      rule: task!.rules[1]!,
      depth: 1,
    });
    assert.equal(out.items[0]!.key, 'U1');
  });
});

describe('robots.txt', () => {
  it('obeys disallow rules for our agent and reads crawl-delay', () => {
    const r = compileRobots(
      'http://a.com',
      { state: 'ok', text: 'User-agent: *\nDisallow: /private/\nCrawl-delay: 2\n' },
      'CrawlStudio/0.1 (+x)',
    );
    assert.equal(r.isAllowed('http://a.com/private/x'), false);
    assert.equal(r.isAllowed('http://a.com/public'), true);
    assert.equal(r.crawlDelayMs, 2000);
  });
  it('allows everything when robots.txt is missing, nothing when it is unreachable', () => {
    assert.equal(compileRobots('http://a.com', { state: 'missing', text: '' }, 'X').isAllowed('http://a.com/a'), true);
    assert.equal(
      compileRobots('http://a.com', { state: 'unreachable', text: '' }, 'X').isAllowed('http://a.com/a'),
      false,
    );
  });
  it('matches groups by product token', () => {
    const r = compileRobots(
      'http://a.com',
      { state: 'ok', text: 'User-agent: CrawlStudio\nDisallow: /\n\nUser-agent: *\nAllow: /\n' },
      'CrawlStudio/0.1 (+x)',
    );
    assert.equal(r.isAllowed('http://a.com/x'), false);
  });
});
