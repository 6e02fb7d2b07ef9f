import assert from 'node:assert/strict';
import { preparePage } from '../../src/core/designer/page';
import { proposeFollows } from '../../src/core/designer/followProposals';
import { mainContent, proposeDetailItem, proposeListItems } from '../../src/core/designer/itemProposals';
import { scaffoldTask } from '../../src/core/designer/scaffold';
import { extractPage } from '../../src/core/extract/extract';
import { parseTask } from '../../src/core/task/parse';
import type { CrawlTask } from '../../src/core/task/model';
import { book, DEMO_SITE, renderPage } from '../../src/demo/site';
import { urlFacts } from '../support/pageFacts';
import { author, QUOTES_PER_PAGE, quotesOn, renderQuotesPage } from '../support/quotesSite';

// New Task File's items (issue 32, item 5): on a list page the repeated blocks its follow rule links from become an
// item type whose fields extract the listed things, and the detail rule's fields come from a detail page's main
// content, never the site's header. Judged by what the real extraction gives with the generated task file, on
// the Demo Shop and on a quotes-like site whose header h1 is a div's and whose content is in no <main>.

const BASE = 'http://127.0.0.1:8737';

interface Site {
  readonly start: string;
  page(path: string): string;
}

const shop: Site = { start: `${BASE}/catalogue/page-1.html`, page: (p) => renderPage(p, DEMO_SITE)!.body };
const quotes: Site = { start: `${BASE}/`, page: (p) => renderQuotesPage(p)!.body };

/** The task file New Task File writes for a site, from its start page and the first page its item links lead to. */
function generate(site: Site): { text: string; task: CrawlTask; detailUrl: string } {
  const list = preparePage(site.page(new URL(site.start).pathname), site.start);
  const follows = proposeFollows(list.$, list.finalUrl);
  assert.ok(follows.items, 'item links found');
  const listItems = proposeListItems(list.$, follows.items.selector);
  const detailUrl = follows.items.example;
  const detail = preparePage(site.page(new URL(detailUrl).pathname), detailUrl);
  const text = scaffoldTask({
    name: 'new',
    start: site.start,
    follows,
    listItems,
    detailItem: proposeDetailItem(detail.$),
    detailUrl,
  });
  const { task, diagnostics } = parseTask(text, 'new.crawl.yaml');
  assert.deepEqual(diagnostics, [], text);
  return { text, task: task!, detailUrl };
}

function extract(task: CrawlTask, rule: string, site: Site, url: string) {
  return extractPage(
    site.page(new URL(url).pathname),
    urlFacts(url),
    task.rules.find((r) => r.name === rule)!,
  );
}

describe('New Task File: proposed items', () => {
  it('Demo Shop: the list rule extracts every listed book, title and price as the page shows them', () => {
    const { task, text } = generate(shop);
    for (const p of [1, 2]) {
      const got = extract(task, 'list', shop, `${BASE}/catalogue/page-${p}.html`);
      assert.deepEqual(got.problems, []);
      const books = Array.from({ length: DEMO_SITE.perPage }, (_, i) => book((p - 1) * DEMO_SITE.perPage + i + 1));
      assert.equal(got.items.length, books.length, text);
      assert.deepEqual(
        got.items.map((i) => i.data.title),
        books.map((b) => b.title),
      );
      assert.deepEqual(
        got.items.map((i) => i.data.price),
        books.map((b) => `£${b.price}`),
      );
      assert.deepEqual(
        got.items.map((i) => i.data.url),
        books
          .map((b) => new URL(`/catalogue/book-${b.id}.html`, BASE).href)
          .map((u, i) => (i % 3 === 0 ? `${u}?ref=list&src=p${p}` : u)),
      );
    }
  });

  it('Demo Shop: the detail rule reads the book, not the header, and no field comes out empty', () => {
    const { task, text } = generate(shop);
    assert.doesNotMatch(text, /meta\[name=description\]|main a/, 'no fixed template');
    for (const id of [1, 17, 42]) {
      const got = extract(task, 'detail', shop, `${BASE}/catalogue/book-${id}.html`);
      assert.equal(got.items.length, 1, text);
      const data = got.items[0]!.data;
      const b = book(id);
      assert.equal(data.title, b.title);
      assert.equal(data.price, `£${b.price}`);
      assert.equal(data.upc, b.upc);
      assert.equal(data.image, `${BASE}/media/cover-${id}.jpg`);
      for (const [k, v] of Object.entries(data)) {
        // A book without tags has none: a list field may be empty on another page, never on the one read.
        if (k === 'tags') continue;
        assert.ok(v !== null && v !== '' && !(Array.isArray(v) && v.length === 0), `${k} is empty on book ${id}`);
        assert.doesNotMatch(String(v), /Books to Crawl|Partner/, `${k} comes from the header or footer`);
      }
    }
  });

  it('quotes site: the list rule extracts each quote with its author; the detail rule the author, not the site header', () => {
    const { task, text, detailUrl } = generate(quotes);
    assert.match(detailUrl, /\/author\//);
    for (const p of [1, 2]) {
      const got = extract(task, 'list', quotes, p === 1 ? `${BASE}/` : `${BASE}/page/${p}/`);
      assert.deepEqual(got.problems, []);
      const expected = quotesOn(p);
      assert.equal(got.items.length, QUOTES_PER_PAGE, text);
      assert.deepEqual(
        got.items.map((i) => i.data.text),
        expected.map((q) => q.text),
      );
      assert.deepEqual(
        got.items.map((i) => i.data.author),
        expected.map((q) => q.author),
      );
      assert.deepEqual(
        got.items.map((i) => i.data.tags),
        expected.map((q) => [...q.tags]),
      );
    }
    for (const i of [0, 1, 5]) {
      const a = author(i);
      const got = extract(task, 'detail', quotes, `${BASE}/author/${a.slug}/`);
      assert.equal(got.items.length, 1);
      const data = got.items[0]!.data;
      assert.equal(data.title, a.name, text);
      assert.equal(data.description, a.description);
      for (const [k, v] of Object.entries(data)) {
        assert.ok(typeof v === 'string' && v !== '', `${k} is empty on ${a.slug}`);
        assert.doesNotMatch(v, /Quotes to Scrape|GoodReads|Login/, `${k} comes from the header or footer`);
      }
    }
  });

  it('takes the main landmark over the header, and its h1 over the site name', () => {
    const page = preparePage(
      `<html><body><header><h1>Site Name</h1><nav><a href="/a">A</a><a href="/b">B</a></nav></header>
<main><h1>The Thing</h1><p class="summary">A summary of the thing, long enough to be text.</p><p class="empty"></p></main>
<footer><p class="legal">© Someone</p></footer></body></html>`,
      `${BASE}/thing`,
    );
    assert.equal(mainContent(page.$)?.name, 'main');
    const item = proposeDetailItem(page.$)!;
    assert.deepEqual(
      item.fields.map((f) => [f.name, f.example]),
      [
        ['title', 'The Thing'],
        ['summary', 'A summary of the thing, long enough to be text.'],
      ],
    );
  });

  it('finds the largest text block when no landmark names it, and proposes nothing on a page without one', () => {
    const page = preparePage(
      `<html><body><div class="top-nav"><h1><a href="/">Shop</a></h1></div><div class="wrap"><div class="profile"><h2 class="name">Ann</h2>
<div class="bio">${'Ann wrote many things over many years. '.repeat(10)}</div></div></div></body></html>`,
      `${BASE}/ann`,
    );
    assert.equal(mainContent(page.$)?.attribs.class, 'profile');
    assert.equal(proposeDetailItem(page.$)?.fields[0]?.example, 'Ann');
    assert.equal(proposeDetailItem(preparePage('<html><body></body></html>', `${BASE}/`).$), null);
    assert.equal(
      proposeListItems(preparePage('<html><body><a href="/x">x</a></body></html>', `${BASE}/`).$, 'a'),
      null,
    );
  });
});
