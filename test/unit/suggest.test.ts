import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as cheerio from 'cheerio/slim';
import type { Element } from 'domhandler';
import { classKind, looksGenerated } from '../../src/core/extract/selectorNames';
import { closestMatching, suggestSelector, type SelectorSuggestion } from '../../src/core/extract/suggest';
import { DEMO_SITE, renderPage } from '../../src/demo/site';

// The picker's suggestions on pages shaped like real sites: a shop grid with CSS-in-JS class soup, a
// WordPress-style article, data and key-value tables, a Tailwind docs page with nested menus.

const FIXTURES = join(__dirname, '..', '..', '..', 'test', 'fixtures', 'pages');
const page = (name: string) => cheerio.load(readFileSync(join(FIXTURES, name), 'utf8'));

function pick($: cheerio.CheerioAPI, selector: string, nth = 0): Element {
  const el = $(selector).toArray()[nth];
  assert.ok(el, `${selector}[${nth}] is on the page`);
  return el as Element;
}

function suggest($: cheerio.CheerioAPI, selector: string, nth = 0, scopeSelector?: string): SelectorSuggestion {
  const el = pick($, selector, nth);
  if (!scopeSelector) return suggestSelector($, el);
  const scope = closestMatching($, el, scopeSelector);
  assert.ok(scope, `${selector}[${nth}] is inside ${scopeSelector}`);
  return suggestSelector($, el, { scope: { element: scope, all: $(scopeSelector).toArray() as Element[] } });
}

describe('selector suggestion', () => {
  describe('names', () => {
    it('treats machine-made class names and ids as unusable', () => {
      for (const t of [
        'css-1x9v3kq',
        'sc-bdfBwQ',
        'kgBfvc',
        'Price_wrap__x7Ka2',
        '_3xYz1',
        'post-48213',
        'ember402',
        'ng-star-inserted',
        'radix-:r1:',
        'md:flex',
        'w-1/2',
        'jsx-2923',
      ]) {
        assert.equal(looksGenerated(t), true, t);
      }
      for (const t of [
        'product_pod',
        'price_color',
        'product-card__title',
        'entry-title',
        'main-nav',
        'h2',
        'col2',
        'btn-primary',
        'comment-author',
      ]) {
        assert.equal(looksGenerated(t), false, t);
      }
    });

    it('ranks state and utility classes below meaningful ones', () => {
      assert.equal(classKind('active'), 'weak');
      assert.equal(classKind('is-featured'), 'weak');
      assert.equal(classKind('text-lg'), 'weak');
      assert.equal(classKind('scroll-m-20'), 'weak');
      assert.equal(classKind('mt-4'), 'weak');
      assert.equal(classKind('price'), 'meaningful');
      assert.equal(classKind('css-q1w2e3'), 'unusable');
    });
  });

  describe('demo bookshop', () => {
    const list = cheerio.load(renderPage('/catalogue/page-2.html', DEMO_SITE)!.body);
    const book = cheerio.load(renderPage('/catalogue/book-17.html', DEMO_SITE)!.body);

    it('proposes the list selector for a book link among many', () => {
      const s = suggest(list, 'article.product_pod h3 a', 4);
      assert.equal(s.kind, 'list');
      assert.equal(s.selector, 'article.product_pod h3 a');
      assert.equal(s.count, DEMO_SITE.perPage);
      assert.equal(s.multiple, true);
      assert.equal(s.list?.itemScope, 'article.product_pod');
      assert.equal(s.list?.relative, 'h3 a');
      // The unique alternative names that one book.
      assert.equal(list(s.unique.selector).length, 1);
      assert.match(s.element, /^a "/);
    });

    it('relative to an item scope: short, found in every scope element', () => {
      const s = suggest(list, 'p.price_color', 7, 'article.product_pod');
      assert.equal(s.kind, 'scoped');
      assert.equal(s.selector, 'p.price_color');
      assert.equal(s.count, 1);
      assert.deepEqual(s.scoped?.coverage, { matched: DEMO_SITE.perPage, scopes: DEMO_SITE.perPage });
      assert.equal(suggest(list, 'article.product_pod h3 a', 3, 'article.product_pod').selector, 'h3 a');
    });

    it('singles out elements that have a name of their own', () => {
      assert.equal(suggest(list, 'li.next a').selector, 'li.next a');
      assert.equal(suggest(list, 'h1').selector, 'h1');
      const upc = suggest(book, 'td.upc', 0, 'article.product_page');
      assert.equal(upc.selector, 'td.upc');
      assert.equal(upc.kind, 'scoped');
    });

    it('a tag inside the item scope is a list within the scope (a field with all: true)', () => {
      const tags = book('li.tag').length;
      assert.ok(tags >= 2, 'book 17 has several tags');
      const s = suggest(book, 'li.tag', 1, 'article.product_page');
      assert.equal(s.kind, 'list');
      assert.equal(s.selector, 'li.tag');
      assert.equal(s.count, tags);
      assert.equal(s.multiple, true);
    });
  });

  describe('shop grid with generated class names', () => {
    const $ = page('shop-list.html');

    it('never uses css-in-js or css-module class names', () => {
      for (const sel of ['h2.product-card__title', 'span.price', 'a.product-card__link', 'button']) {
        const s = suggest($, sel, 1);
        for (const c of [s.selector, s.unique.selector, s.list?.selector ?? ''])
          assert.doesNotMatch(c, /css-|sc-|__x7Ka2|kgBfvc/, c);
      }
    });

    it('lists product titles under the product card', () => {
      const s = suggest($, 'h2.product-card__title', 1);
      assert.equal(s.selector, 'li.product-card h2.product-card__title');
      assert.equal(s.count, 4);
      assert.equal(s.list?.itemScope, 'li.product-card');
    });

    it('ignores state classes for the list: the featured card is one of the cards', () => {
      const s = suggest($, 'span.price', 2);
      assert.equal(s.kind, 'list');
      assert.equal(s.count, 4);
      assert.doesNotMatch(s.selector, /is-featured/);
    });

    it('prefers a link relation to a list of page links', () => {
      const s = suggest($, 'a[rel=next]');
      assert.equal(s.kind, 'unique');
      assert.equal(s.selector, 'a[rel="next"]');
      assert.equal(s.list?.selector, 'a.page-link');
    });

    it('for a selector that reads every match (a follow rule), the list comes first', () => {
      const el = pick($, 'nav.main-nav a', 1);
      assert.equal(suggestSelector($, el).kind, 'list');
      const nav = page('nav.html');
      const col = nav('.footer-col a').toArray()[2] as Element; // two plain <li>s: not list-like enough on its own
      assert.equal(suggestSelector(nav, col).kind, 'unique');
      const s = suggestSelector(nav, col, { preferList: true });
      assert.equal(s.kind, 'list');
      assert.equal(s.selector, 'div.footer-col li a');
      assert.equal(s.multiple, true);
    });

    it('scoped selectors for fields of a product card', () => {
      assert.equal(suggest($, 'span.price', 1, 'li.product-card').selector, 'span.price');
      assert.equal(suggest($, 'a.product-card__link', 3, 'li.product-card').selector, 'a.product-card__link');
      assert.equal(suggest($, 'img', 2, 'li.product-card').selector, 'img.product-card__image');
    });
  });

  describe('article page', () => {
    const $ = page('article.html');

    it('uses meaningful classes for one-off elements, not post ids', () => {
      assert.equal(suggest($, 'h1').selector, 'h1.entry-title');
      assert.equal(suggest($, 'time').selector, 'time.entry-date');
      assert.equal(suggest($, 'a.author-name').selector, 'a.author-name');
      assert.doesNotMatch(suggest($, '.entry-content p', 2).unique.selector, /post-48213|postid/);
    });

    it('lists tags and paragraphs', () => {
      const tags = suggest($, '.post-tags a', 1);
      assert.equal(tags.selector, 'ul.post-tags li a');
      assert.equal(tags.count, 3);
      const paras = suggest($, '.entry-content p', 1);
      assert.equal(paras.selector, 'div.entry-content p');
      assert.equal(paras.count, 3);
    });

    it('anchors a list on a stable id when the list has no class', () => {
      const s = suggest($, '#secondary li a', 0);
      assert.equal(s.selector, '#secondary li a');
      assert.equal(s.count, 3);
    });

    it('comments: list page-wide, one field relative to the comment', () => {
      assert.equal(suggest($, '.comment-author', 1).selector, 'li.comment div.comment-author');
      assert.equal(suggest($, '.comment-author', 1, 'li.comment').selector, 'div.comment-author');
    });
  });

  describe('tables', () => {
    const $ = page('table.html');

    it('a data cell: the column across rows, by position', () => {
      const s = suggest($, '#rates tbody td', 6); // row 2, column 3
      assert.equal(s.kind, 'list');
      assert.equal(s.count, 5);
      assert.deepEqual(
        $(s.selector)
          .toArray()
          .map((e) => $(e).text()),
        ['1.0842', '0.7931', '151.32', '0.9012', '10.611'],
      );
    });

    it('a data cell relative to its row', () => {
      const s = suggest($, '#rates tbody td', 6, '#rates tbody tr');
      assert.equal(s.selector, 'td:nth-of-type(3)');
      assert.deepEqual(s.scoped?.coverage, { matched: 5, scopes: 5 });
    });

    it('a key-value row: by its label, not its position', () => {
      const s = suggest($, 'table.meta td', 1);
      assert.equal(s.kind, 'unique');
      assert.equal(s.selector, 'tr:has(th:contains("Provider")) td');
      assert.equal($(s.selector).text(), 'Central bank');
    });
  });

  describe('navigation-heavy page with utility classes', () => {
    const $ = page('nav.html');

    it('skips utility classes when a plain tag is unique', () => {
      assert.equal(suggest($, 'h1').selector, 'h1');
    });

    it('menu links: a list; one menu entry: a short anchored path', () => {
      const s = suggest($, '#main-nav a', 1);
      assert.equal(s.kind, 'list');
      assert.ok(s.count >= 4);
      assert.equal($(s.unique.selector).length, 1);
      assert.equal($(s.unique.selector).text(), 'Pricing');
      assert.ok(s.unique.selector.length < 40, s.unique.selector);
    });

    it('sidebar links and breadcrumbs', () => {
      assert.equal(suggest($, 'a.sidebar-link', 3).selector, 'a.sidebar-link');
      assert.equal(suggest($, 'a.sidebar-link', 3).count, 5);
      assert.equal(suggest($, '.breadcrumbs a', 1).selector, 'ol.breadcrumbs li a');
      assert.equal(suggest($, 'a.pager-next').selector, 'a.pager-next');
    });
  });

  describe('invariants on every element of every page', () => {
    const pages: Array<[string, cheerio.CheerioAPI]> = [
      ...['shop-list.html', 'article.html', 'table.html', 'nav.html'].map(
        (n) => [n, page(n)] as [string, cheerio.CheerioAPI],
      ),
      ['demo book', cheerio.load(renderPage('/catalogue/book-3.html', DEMO_SITE)!.body)],
    ];
    for (const [name, $] of pages) {
      it(`${name}: the unique selector matches exactly the element; the list contains it`, () => {
        const all: Element[] = $('body *').toArray();
        assert.ok(all.length > 20);
        for (const el of all) {
          const s = suggestSelector($, el);
          const u = $(s.unique.selector).toArray();
          assert.equal(u.length, 1, `${s.unique.selector} for ${s.element}`);
          assert.equal(u[0], el, `${s.unique.selector} for ${s.element}`);
          assert.equal(s.unique.count, 1);
          if (s.list) assert.ok($(s.list.selector).toArray().includes(el), `${s.list.selector} contains ${s.element}`);
          assert.equal($(s.selector).length, s.count, s.selector);
        }
      });
    }

    it('scoped selectors find the element first inside its scope', () => {
      const $ = page('shop-list.html');
      const scopes: Element[] = $('li.product-card').toArray();
      for (const scope of scopes) {
        for (const el of $(scope).find<Element>('*').toArray()) {
          const s = suggestSelector($, el, { scope: { element: scope, all: scopes } });
          assert.ok(s.scoped);
          assert.equal($(scope).find(s.scoped.selector).toArray()[0], el, `${s.scoped.selector} for ${s.element}`);
        }
      }
    });
  });

  // How fast: the bench's picker row (npm run bench), not a timing assertion here.
  it('suggests the list selector on a 300 KB page of 1,400 cards', () => {
    const big = renderPage('/catalogue/page-1.html', { listPages: 1, perPage: 1400 })!.body;
    assert.ok(big.length > 300_000, `${big.length} bytes`);
    const $ = cheerio.load(big);
    const s = suggest($, 'article.product_pod h3 a', 700);
    assert.equal(s.selector, 'article.product_pod h3 a');
    assert.equal(s.count, 1400);
  });
});
