import assert from 'node:assert/strict';
import * as cheerio from 'cheerio/slim';
import { Document, Element, type AnyNode } from 'domhandler';
import { elementsInOrder } from '../../src/core/designer/render';
import { HtmlPage } from '../../src/core/extract/dom';
import { findIn, findInDocument } from '../../src/core/extract/select';
import { renderPage } from '../../src/demo/site';

// Compiled selectors must answer exactly what cheerio's find answers: the same elements, in the same order, for
// every scope. Checked against cheerio itself on real pages, for selectors of every shape, from every element.

const SITE = { listPages: 3, perPage: 20, filler: 2 };

const HAND = `<!doctype html><html><head><title>t</title><base href="/x/"></head><body>
<div id="main" class="a b"><ul class="list"><li class="item"><a href="/1">one</a><span class="p">1</span></li>
<li class="item sel"><a href="/2" rel="next">two</a><div><a href="/2b">two b</a></div></li>
<li><p>para <b>bold</b></p><a>no href</a></li></ul>
<section><div class="card"><h2>Card</h2><div class="card"><h2>Inner</h2></div></div></section>
<form><input type="checkbox" checked><option>opt</option><input type="text" value="v"></form></div>
<table><tr><td>1</td><td>2</td></tr><tr><td>3</td></tr></table></body></html>`;

const SELECTORS = [
  'a',
  'li a',
  'ul li a',
  'div a',
  'div div a',
  'li > a',
  'li > div > a',
  'ul > li',
  'li + li',
  'li ~ li',
  'h2',
  '.card h2',
  '.card > h2',
  '.card .card h2',
  'div.card',
  '#main a',
  '#main',
  'a[href]',
  'a[href^="/catalogue"]',
  'a[rel=next]',
  '[class~=item]',
  'li:not(.sel) a',
  'li:nth-child(2)',
  'li:first-child a',
  'td:last-child',
  'tr:nth-of-type(2) td',
  'a:contains("two")',
  'p b',
  'b',
  'li, h2',
  'h2, li a',
  ':is(h2, b)',
  'input[type=checkbox]',
  'option',
  '*',
  'body *',
  'html body a',
  'section div h2',
  'article h3 a',
  '.product_pod h3 a',
  '.product_pod',
  'p.price_color',
  '.price_color',
  'li.next a',
  'ul.pager a',
  '.pager .next a',
  'img',
  'div p',
  'h1',
  'title',
  'head title',
  'table td',
  'tr > td',
  'a:not([href])',
  'ol.row li',
  '.row > li',
  'p.star-rating',
  '[class*="star"]',
  'div:empty',
  'li:only-child',
  // Through cheerio itself (positionals, :root, :has, a leading combinator): same answers by construction.
  'li:first',
  'li:eq(1) a',
  'a:last',
  ':root',
  'li:has(div)',
  '> li',
];

function pages(): [string, string][] {
  const out: [string, string][] = [['hand', HAND]];
  for (const path of [
    '/',
    '/catalogue/page-1.html',
    '/catalogue/page-2.html',
    '/catalogue/book-7.html',
    '/about.html',
  ]) {
    const p = renderPage(path, SITE);
    if (p) out.push([path, p.body]);
  }
  return out;
}

function label(n: AnyNode): string {
  return 'name' in n ? `<${n.name}>` : n.type;
}

describe('compiled selectors answer what cheerio answers', () => {
  for (const [name, html] of pages()) {
    it(`on ${name}: every selector, from the document and from every element`, () => {
      const $ = cheerio.load(html);
      const page = HtmlPage.of($);
      const scopes: AnyNode[] = [$.root()[0]!, ...$('*').toArray()];
      let compared = 0;
      for (const sel of SELECTORS) {
        const whole = $(sel).toArray();
        assert.deepEqual(findInDocument(page, sel), whole, `$('${sel}')`);
        assert.deepEqual(findInDocument(page, sel, true), whole.slice(0, 1), `$('${sel}').first()`);
        for (const scope of scopes) {
          const expected = $(scope).find(sel).toArray();
          const got = findIn(page, scope, sel);
          if (got.length !== expected.length || got.some((g, i) => g !== expected[i])) {
            assert.fail(
              `${name}: $(${label(scope)}).find('${sel}') gave ${expected.length} element(s), the compiled query ${got.length}: ${got.map(label).join(' ')}`,
            );
          }
          assert.deepEqual(
            findIn(page, scope, sel, true),
            expected.slice(0, 1),
            `${name}: first of $(${label(scope)}).find('${sel}')`,
          );
          compared++;
        }
      }
      assert.ok(compared >= SELECTORS.length * 10, `${compared} comparisons`);
    });

    it(`on ${name}: a page parsed without cheerio is the document cheerio.load makes, and answers the same`, () => {
      // Extraction parses with htmlparser2 itself and binds cheerio only for the selectors that need it.
      const $ = cheerio.load(html);
      const page = HtmlPage.parse(html);
      assert.equal(cheerio.load(page.root).html(), $.html());
      const order = (els: AnyNode[], all: AnyNode[]) => els.map((e) => all.indexOf(e));
      const theirs = $('*').toArray();
      const ours: AnyNode[] = elementsInOrder(page.root);
      assert.equal(ours.length, theirs.length);
      for (const sel of SELECTORS)
        assert.deepEqual(order(findInDocument(page, sel), ours), order($(sel).toArray(), theirs), `$('${sel}')`);
    });
  }

  it('uses each compiled query for many documents: the scope of one query never leaks into the next', () => {
    const a = cheerio.load(HAND);
    const b = cheerio.load(renderPage('/catalogue/page-1.html', SITE)!.body);
    for (let i = 0; i < 3; i++) {
      for (const [$, sel] of [
        [a, 'li a'],
        [b, 'h3 a'],
        [a, '.card h2'],
        [b, 'li a'],
      ] as const) {
        for (const scope of $('li, div, article').toArray())
          assert.deepEqual(findIn(HtmlPage.of($), scope, sel), $(scope).find(sel).toArray(), sel);
      }
    }
  });

  it('reports an invalid selector the way cheerio does', () => {
    const $ = cheerio.load(HAND);
    const page = HtmlPage.of($);
    assert.throws(() => findInDocument(page, 'a['), /Expected|Unmatched|end/i);
    assert.throws(() => findIn(page, $('li')[0]!, 'li:nope'), /nope/);
  });
});

describe('compiled selectors on hostile trees', () => {
  it('search 200,000 nested elements without overflowing the stack', () => {
    // Built directly (parsing such a page takes htmlparser2 minutes): <div> inside <div>, a link at the bottom.
    const doc = new Document([]);
    let parent: Element | Document = doc;
    for (let i = 0; i < 200_000; i++) {
      const div: Element = new Element('div', { class: i % 2 ? 'odd' : 'even' }, []);
      div.parent = parent;
      parent.children.push(div);
      parent = div;
    }
    const a = new Element('a', { href: '/bottom' }, []);
    a.parent = parent;
    parent.children.push(a);
    const page = HtmlPage.of(cheerio.load(doc));
    // domutils' findOne recursed once per level here (RangeError in the analysis thread, seen in CI).
    assert.deepEqual(findInDocument(page, 'a', true), [a]);
    assert.deepEqual(findInDocument(page, 'base[href]', true), []);
    assert.deepEqual(findInDocument(page, 'div.odd > a'), [a]);
    assert.equal(findInDocument(page, 'div.even').length, 100_000);
    assert.deepEqual(findIn(page, doc.children[0]!, 'a'), [a]);
  });
});
