import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as cheerio from 'cheerio/slim';
import type { Element } from 'domhandler';
import { measurePreviewLatency } from '../../bench/src/previewLatency';
import { compareOutcome, formatTestReport } from '../../src/core/designer/fixtures';
import { fixtureDir, saveFixture, testTaskFile } from '../../src/workspace/fixtureStore';
import { planInsert, yamlScalar } from '../../src/core/designer/insert';
import { listPages, loadPage, pageCacheDir, savePage, setPageRule } from '../../src/workspace/pageCache';
import { highlightSite, pageForFrame, preparePage, suggestFor } from '../../src/core/designer/page';
import { computePreview } from '../../src/core/designer/preview';
import { parseWebviewMessage } from '../../src/core/designer/protocol';
import { scaffoldTask, taskName } from '../../src/core/designer/scaffold';
import { proposeFollows } from '../../src/core/designer/followProposals';
import { similarSelectors } from '../../src/core/designer/similarSelectors';
import { completionContext, hoverAt, keyCompletions, valueCompletions } from '../../src/core/designer/schemaHelp';
import { countAt, countMessage, countSelectors, zeroMatchWarnings } from '../../src/core/designer/selectorChecks';
import { selectorSites, siteAt, siteLabel } from '../../src/core/designer/sites';
import { compileRobots } from '../../src/core/robots';
import { parseTask } from '../../src/core/task/parse';
import { DEMO_SITE, renderPage } from '../../src/demo/site';

// The designer's pure core: what the preview, the picker, Insert and the editor features compute, without an
// editor or a webview around them.

const BASE = 'http://127.0.0.1:8737';
const books = readFileSync('examples/books.crawl.yaml', 'utf8');
const listHtml = renderPage('/catalogue/page-1.html', DEMO_SITE)!.body;
const bookHtml = renderPage('/catalogue/book-17.html', DEMO_SITE)!.body;

describe('designer core', () => {
  describe('selector sites', () => {
    it('finds every selector with its source range and context', () => {
      const sites = selectorSites(books);
      const follows = sites.filter((s) => s.kind === 'follow');
      assert.deepEqual(
        follows.map((s) => s.selector),
        ['ul.nav a, li.next a, header a', 'article.product_pod h3 a', 'ul.related a'],
      );
      const price = sites.find((s) => s.field === 'price')!;
      assert.equal(price.selector, 'p.price_color');
      assert.equal(price.itemScope, 'article.product_page');
      assert.equal(books.slice(price.range![0], price.range![1]), 'p.price_color');
      const title = sites.find((s) => s.field === 'title')!;
      assert.equal(books.slice(title.range![0], title.range![1]), 'h1');
      assert.equal(sites.find((s) => s.field === 'tags')!.all, true);
      // Quotes are part of the scalar's range (Insert replaces them too).
      const f1 = follows[1]!;
      assert.equal(books.slice(f1.range![0], f1.range![1]), '"article.product_pod h3 a"');
      assert.equal(siteLabel(price), 'book items[0].price');
    });

    it('the cursor anywhere in a field selects the field, elsewhere in the item its scope', () => {
      const sites = selectorSites(books);
      const at = (needle: string, delta = 0) => siteAt(sites, books.indexOf(needle) + delta);
      assert.equal(at('price: {', 2)?.field, 'price');
      assert.equal(at('p.price_color', 3)?.field, 'price');
      assert.equal(at('key: [upc]')?.kind, 'scope');
      assert.equal(at('article.product_pod h3 a')?.follow, 1);
      assert.equal(at('name: books'), null);
    });

    it('works on a file with errors', () => {
      const text =
        'name: Bad Name\nrules:\n  - name: r\n    items:\n      - type: t\n        fields:\n          a: "h1["\n';
      const s = selectorSites(text);
      assert.equal(s.find((x) => x.field === 'a')?.selector, 'h1[');
    });
  });

  describe('page, highlight and picker', () => {
    const page = preparePage(listHtml, `${BASE}/catalogue/page-1.html`);

    it('numbers elements in document order and highlights what a field reads', () => {
      assert.equal(page.elements.length, page.$('*').length);
      const text =
        'name: t\nstart: [http://127.0.0.1:8737/]\nrules:\n  - name: list\n    items:\n      - type: c\n        scope: article.product_pod\n        fields:\n          title: h3 a\n          links: { selector: a, all: true }\n';
      const sites = selectorSites(text);
      const title = highlightSite(
        page,
        sites.find((s) => s.field === 'title')!,
        'x',
      );
      assert.equal(title.count, DEMO_SITE.perPage);
      assert.deepEqual(title.scopes, { matched: DEMO_SITE.perPage, total: DEMO_SITE.perPage });
      assert.ok(title.indices.every((i) => page.elements[i]!.name === 'a'));
      const links = highlightSite(
        page,
        sites.find((s) => s.field === 'links')!,
        'x',
      );
      assert.equal(links.count, 2 * DEMO_SITE.perPage, 'all: true reads every match in each scope');
      const scope = highlightSite(
        page,
        sites.find((s) => s.kind === 'scope')!,
        'x',
      );
      assert.equal(scope.count, DEMO_SITE.perPage);
    });

    it('reports an invalid selector instead of throwing', () => {
      const h = highlightSite(
        page,
        { ...selectorSites('rules:\n  - name: r\n    follow:\n      - selector: "a["\n')[0]! },
        'x',
      );
      assert.match(h.error ?? '', /not a valid CSS selector/);
      assert.equal(h.count, 0);
    });

    it('suggests from an element number, relative to the item scope when given', () => {
      const idx = page.index.get(page.$('article.product_pod p.price_color').toArray()[3] as never)!;
      assert.equal(suggestFor(page, idx, null)?.selector, 'article.product_pod p.price_color');
      assert.equal(suggestFor(page, idx, 'article.product_pod')?.selector, 'p.price_color');
      assert.equal(suggestFor(page, 10_000_000, null), null);
    });

    it('renders an inert copy: no scripts, handlers, base, refresh, frames; URLs absolute; CSP first', () => {
      const hostile = preparePage(
        `<html><head><base href="http://evil.example/"><meta http-equiv="refresh" content="0;url=http://evil.example/">
        <script>alert(1)</script><link rel="stylesheet" href="/s.css"></head>
        <body onload="x()"><a href="javascript:alert(1)" onclick="y()">j</a><img src="/i.png" onerror="z()" srcset="/a.png 1x, /b.png 2x">
        <iframe src="http://evil.example/"></iframe><object data="x.swf"></object><svg><script>1</script></svg>
        <form action="/post"><button formaction="javascript:1">b</button></form><div style="width: expression(alert(1))">s</div></body></html>`,
        'http://shop.example/dir/page.html',
      );
      const html = pageForFrame(hostile, false);
      const $ = cheerio.load(html);
      assert.equal($('script, base, iframe, object, link, meta[http-equiv=refresh]').length, 0);
      assert.equal($('meta[http-equiv]').length, 1);
      assert.match($('meta[http-equiv]').attr('content')!, /default-src 'none'; img-src data:;/);
      assert.equal($('head').children().first().is('meta[http-equiv]'), true);
      for (const el of $('*').toArray() as Element[]) {
        for (const a of Object.keys(el.attribs)) assert.doesNotMatch(a, /^on/i, `${el.name} ${a}`);
      }
      assert.equal($('a').attr('href'), undefined);
      // Relative URLs resolve against the page's <base>, as the browser would have.
      assert.equal($('img').attr('src'), 'http://evil.example/i.png');
      assert.equal($('img').attr('srcset'), 'http://evil.example/a.png 1x, http://evil.example/b.png 2x');
      assert.equal($('form').attr('action'), undefined);
      assert.equal($('button').attr('formaction'), undefined);
      assert.equal($('div[style]').length, 0);
      // Elements keep their numbers, so a click maps back.
      assert.ok($('[data-cs-i]').length > 5);
      assert.match(pageForFrame(hostile, true), /img-src http:\/\/shop\.example data:/);
    });
  });

  describe('preview model', () => {
    const page = preparePage(bookHtml, `${BASE}/catalogue/book-17.html`);

    it('runs the matching rule: items with every field, links kept and dropped with reasons', () => {
      const r = computePreview({
        text: books,
        file: 'books.crawl.yaml',
        page,
        rule: null,
        cursor: null,
        lastGood: null,
      });
      assert.ok(r.task);
      assert.equal(r.view.rule.name, 'book');
      assert.equal(r.view.rule.reason, 'matched by its `match` patterns');
      assert.equal(r.view.rule.fallback, false);
      const about = computePreview({
        text: books,
        file: 'b.yaml',
        page: preparePage('<h1>About</h1>', `${BASE}/about.html`),
        rule: null,
        cursor: null,
        lastGood: null,
      });
      assert.equal(about.view.rule.name, 'list');
      assert.equal(about.view.rule.fallback, true);
      assert.equal(r.view.items.length, 1);
      const t = r.view.items[0]!;
      assert.deepEqual(t.columns, ['title', 'price', 'upc', 'in_stock', 'tags', 'cover']);
      assert.equal(t.rows.length, 1);
      assert.equal(t.rows[0]!.cells[2]!.state, 'ok');
      assert.equal(r.view.links.length, 1);
      assert.equal(r.view.links[0]!.keptTotal, 3);
      assert.equal(r.view.stale, false);
      assert.equal(r.view.diagnostics.length, 0);
    });

    it('marks missing and empty values', () => {
      const text = books
        .replace('upc: td.upc', 'upc: td.nothing-here')
        .replace('tags: { selector: li.tag, all: true }', 'tags: { selector: li.nope, all: true }')
        .replace('key: [upc]', 'key: [title]');
      const r = computePreview({ text, file: 'b.yaml', page, rule: null, cursor: null, lastGood: null });
      const t = r.view.items[0]!;
      assert.equal(t.rows[0]!.cells[t.columns.indexOf('upc')]!.state, 'missing');
      assert.equal(t.rows[0]!.cells[t.columns.indexOf('tags')]!.state, 'empty');
    });

    it('while the file has errors: shows them, and the last valid extraction marked stale', () => {
      const good = computePreview({ text: books, file: 'b.yaml', page, rule: null, cursor: null, lastGood: null });
      const broken = books.replace('title: h1', 'title: "h1["');
      const r = computePreview({
        text: broken,
        file: 'b.yaml',
        page,
        rule: null,
        cursor: broken.indexOf('"h1["') + 2,
        lastGood: good.task,
      });
      assert.equal(r.task, null);
      assert.equal(r.view.stale, true);
      assert.equal(r.view.items[0]!.rows.length, 1);
      assert.ok(r.view.diagnostics.some((d) => /not a valid CSS selector/.test(d.message)));
      assert.match(r.view.highlight?.error ?? '', /not a valid CSS selector/);
    });

    it('a start URL gets its rule and depth 0; robots.txt drops links once known', () => {
      const list = preparePage(listHtml, `${BASE}/catalogue/page-1.html`);
      const text = books.replace('start:\n  - http://127.0.0.1:8737/', `start:\n  - ${BASE}/catalogue/page-1.html`);
      const robots = compileRobots(
        BASE,
        { state: 'ok', text: 'User-agent: *\nDisallow: /catalogue/book-1.html\n' },
        'CrawlStudio',
      );
      const pending = computePreview({
        text,
        file: 'b.yaml',
        page: list,
        rule: null,
        cursor: null,
        lastGood: null,
        robots: () => undefined,
      });
      assert.equal(pending.view.rule.reason, 'start URL');
      assert.equal(pending.view.robotsPending, true);
      assert.deepEqual(pending.robotsWanted, [BASE]);
      const known = computePreview({
        text,
        file: 'b.yaml',
        page: list,
        rule: null,
        cursor: null,
        lastGood: null,
        robots: () => robots,
      });
      assert.equal(known.view.robotsPending, false);
      const books1 = known.view.links[1]!;
      assert.ok(books1.dropped.some((d) => d.reason === 'robots' && d.url === `${BASE}/catalogue/book-1.html`));
      assert.equal(books1.keptTotal, DEMO_SITE.perPage - 1);
      // The front page links to page 1 twice (once with a fragment): one of them is a duplicate.
      const home = preparePage(renderPage('/', DEMO_SITE)!.body, `${BASE}/`);
      const front = computePreview({
        text: books,
        file: 'b.yaml',
        page: home,
        rule: null,
        cursor: null,
        lastGood: null,
        robots: () => robots,
      });
      assert.ok(
        front.view.links[0]!.dropped.some((d) => d.reason === 'repeat' && d.url === `${BASE}/catalogue/page-1.html`),
      );
    });

    it('highlights the selector under the cursor', () => {
      const cursor = books.indexOf('li.tag') + 2;
      const r = computePreview({ text: books, file: 'b.yaml', page, rule: null, cursor, lastGood: null });
      assert.equal(r.view.highlight?.label, 'book items[0].tags');
      assert.equal(r.view.highlight?.count, page.$('li.tag').length);
    });

    it('a chosen rule wins over matching', () => {
      const r = computePreview({ text: books, file: 'b.yaml', page, rule: 'list', cursor: null, lastGood: null });
      assert.equal(r.view.rule.name, 'list');
      assert.equal(r.view.rule.auto, false);
      assert.equal(r.view.items.length, 0);
    });
  });

  describe('zero-match warnings and counts', () => {
    it('warns on a selector that finds nothing on its rule page, with the URL', () => {
      const text = books.replace('upc: td.upc', 'upc: td.sku');
      const pages = new Map([['book', preparePage(bookHtml, `${BASE}/catalogue/book-17.html`)]]);
      const counts = countSelectors(text, pages);
      const warnings = zeroMatchWarnings(counts);
      assert.equal(warnings.length, 1);
      assert.equal(text.slice(warnings[0]!.start, warnings[0]!.end), 'td.sku');
      assert.match(
        warnings[0]!.message,
        /'td\.sku' matches 0 elements on http:\/\/127\.0\.0\.1:8737\/catalogue\/book-17\.html/,
      );
      const hover = countAt(counts, text.indexOf('p.price_color') + 1);
      assert.match(
        countMessage(hover!),
        /`p\.price_color` matches 1 element on .*found in 1 of 1 'article\.product_page' elements/,
      );
    });
  });

  describe('completion and hover from the schema', () => {
    it('offers the keys of the mapping at the cursor, minus those present', () => {
      const text = 'name: t\nrequest:\n  timeout: 10s\n  ret\n';
      const ctx = completionContext(text, text.indexOf('ret') + 3)!;
      assert.equal(ctx.kind, 'key');
      assert.deepEqual(ctx.path, ['request']);
      assert.equal(ctx.prefix, 'ret');
      const keys = keyCompletions(ctx.path, ctx.siblings).map((k) => k.key);
      assert.ok(keys.includes('retries'));
      assert.ok(!keys.includes('timeout'));
    });

    it('top level, a new list entry, a field object, a flow mapping', () => {
      const top = 'name: t\n\n';
      const c1 = completionContext(top, top.length)!;
      assert.deepEqual(c1.path, []);
      const top1 = keyCompletions(c1.path, c1.siblings).map((k) => k.key);
      for (const k of ['canonical', 'politeness', 'request', 'rules', 'scope', 'start', 'store'])
        assert.ok(top1.includes(k), k);
      assert.ok(!top1.includes('name'));
      const rule = 'rules:\n  - name: a\n    fo';
      const c2 = completionContext(rule, rule.length)!;
      assert.deepEqual(c2.path, ['rules', 0]);
      assert.ok(keyCompletions(c2.path, c2.siblings).some((k) => k.key === 'follow' && k.shape === 'list'));
      const field =
        'rules:\n  - name: a\n    items:\n      - type: t\n        fields:\n          price:\n            sel';
      const c3 = completionContext(field, field.length)!;
      assert.deepEqual(c3.path, ['rules', 0, 'items', 0, 'fields', 'price']);
      assert.deepEqual(
        keyCompletions(c3.path, c3.siblings).map((k) => k.key),
        [
          'selector',
          'page',
          'jsonld',
          'microdata',
          'opengraph',
          'attr',
          'html',
          'all',
          'trim',
          'regex',
          'url',
          'required',
        ],
      );
      const flow = 'rules:\n  - name: a\n    follow:\n      - { selector: a, ';
      const c4 = completionContext(flow, flow.length)!;
      assert.deepEqual(c4.path, ['rules', 0, 'follow', 0]);
      assert.deepEqual(
        keyCompletions(c4.path, c4.siblings).map((k) => k.key),
        ['attr', 'to', 'priority'],
      );
    });

    it('values: enums, booleans and rule names', () => {
      const text = 'request:\n  retries:\n    backoff: ';
      const ctx = completionContext(text, text.length)!;
      assert.equal(ctx.kind, 'value');
      assert.deepEqual(
        valueCompletions(ctx.path, []).map((v) => v.value),
        ['exponential', 'fixed'],
      );
      const to = 'rules:\n  - name: a\n    follow:\n      - selector: x\n        to: ';
      const c2 = completionContext(to, to.length)!;
      assert.deepEqual(
        valueCompletions(c2.path, ['a', 'b']).map((v) => v.value),
        ['a', 'b'],
      );
      assert.deepEqual(
        valueCompletions(['scope', 'allowPrivate'], []).map((v) => v.value),
        ['true', 'false'],
      );
    });

    it('hovers a key with its description, through $ref', () => {
      const h = hoverAt(books, books.indexOf('timeout') + 2)!;
      assert.equal(h.label, 'request.timeout');
      assert.match(h.description, /Per-request timeout/);
      const p = hoverAt(books, books.indexOf('priority') + 1)!;
      assert.match(p.description, /Lower runs sooner/);
      const f = hoverAt(books, books.indexOf('regex') + 1)!;
      assert.match(f.description, /regular expression/);
      assert.equal(hoverAt(books, books.indexOf('http://127') + 3), null);
    });
  });

  describe('insert', () => {
    it('quotes only when YAML needs it', () => {
      assert.equal(yamlScalar('article.product_pod h3 a'), 'article.product_pod h3 a');
      assert.equal(yamlScalar('td:nth-of-type(3)'), '"td:nth-of-type(3)"');
      assert.equal(yamlScalar('#main li a'), '"#main li a"');
      assert.equal(yamlScalar('a[rel="next"]'), `'a[rel="next"]'`);
      assert.equal(yamlScalar("a[title='x\"']"), `"a[title='x\\"']"`);
      // Whatever the selector, the task reads back exactly it, in block and in flow context.
      for (const s of ['a, b', 'x #y', 'a:hover', '- x', '> p', "it's", '[x]', '*', 'a[b="c\\d"]', 'p.x y', '"q"']) {
        for (const fields of [`fields:\n          v: ${yamlScalar(s)}`, `fields: { v: ${yamlScalar(s)} }`]) {
          const parsed = parseTask(
            `name: t\nstart: [http://a.com/]\nrules:\n  - name: r\n    items:\n      - type: x\n        ${fields}\n`,
            't',
          );
          const field = parsed.task?.rules[0]!.items[0]!.fields[0];
          if (parsed.task) assert.equal(field?.selector, s, fields);
          else
            assert.ok(
              parsed.diagnostics.every((d) => /not a valid CSS selector/.test(d.message)),
              `${fields}: ${parsed.diagnostics.map((d) => d.message)}`,
            );
        }
      }
    });

    it('replaces the selector of the field at the cursor, keeping quote style', () => {
      const p = planInsert(books, books.indexOf('td.upc') + 1, 'table.info td.upc', { all: false });
      assert.equal(books.slice(p.start, p.end), 'td.upc');
      assert.equal(p.text, 'table.info td.upc');
      assert.equal(p.target, 'book items[0].upc');
      const onKey = planInsert(books, books.indexOf('price: {') + 1, 'p.price', { all: false });
      assert.equal(books.slice(onKey.start, onKey.end), 'p.price_color');
      // The follow selector was double-quoted: it stays so.
      const follow = planInsert(books, books.indexOf('article.product_pod h3 a') + 2, 'h3 > a', { all: false });
      assert.equal(follow.text, '"h3 > a"');
      assert.equal(books.slice(follow.start, follow.end), '"article.product_pod h3 a"');
    });

    it('a list pick turns a plain field into { selector, all: true }', () => {
      const text = books.replace('tags: { selector: li.tag, all: true }', 'tags: li.tag');
      const p = planInsert(text, text.indexOf('li.tag') + 1, 'ul.tags li', { all: true });
      assert.equal(p.text, '{ selector: ul.tags li, all: true }');
      const edited = text.slice(0, p.start) + p.text + text.slice(p.end);
      assert.ok(parseTask(edited, 'x').task);
    });

    // Issue 23, item 5: the picker said "4 matches (a list: all: true)" and wrote `tags: a.tag` into a field that had
    // no value yet, so each quote kept only its first tag.
    it('a list pick into a field with no value yet writes { selector, all: true } and reads every match', () => {
      for (const empty of ['tags: ', 'tags:']) {
        const text = books.replace('tags: { selector: li.tag, all: true }', empty);
        const cursor = text.indexOf(empty) + empty.length;
        const p = planInsert(text, cursor, 'ul.tags li', { all: true });
        assert.equal(p.target, 'field tags');
        const edited = text.slice(0, p.start) + p.text + text.slice(p.end);
        const { task } = parseTask(edited, 'x');
        const tags = task!.rules.flatMap((r) => r.items.flatMap((i) => i.fields)).find((f) => f.name === 'tags');
        assert.deepEqual([tags?.selector, tags?.all], ['ul.tags li', true], edited);
      }
      // A single pick into an empty field stays a plain selector, with the space YAML needs after the colon.
      const text = books.replace('tags: { selector: li.tag, all: true }', 'tags:');
      const p = planInsert(text, text.indexOf('tags:') + 5, 'li.tag', { all: false });
      assert.equal(p.text, ' li.tag');
    });

    it('elsewhere: at the cursor', () => {
      const p = planInsert(books, 0, 'h1', { all: false });
      assert.deepEqual([p.start, p.end, p.text, p.target], [0, 0, 'h1', 'the cursor']);
    });
  });

  describe('new task file', () => {
    it('scaffolds a commented task that validates and runs', () => {
      const text = scaffoldTask({ name: 'My Shop!', start: `${BASE}/` });
      assert.match(text, /^# /);
      const { task, diagnostics } = parseTask(text, 'new.crawl.yaml');
      assert.deepEqual(diagnostics, []);
      assert.ok(task);
      assert.equal(task.name, 'my-shop');
      // It runs: the demo shop's front page goes through its first rule without errors.
      const page = preparePage(renderPage('/', DEMO_SITE)!.body, `${BASE}/`);
      const r = computePreview({ text, file: 'new.crawl.yaml', page, rule: null, cursor: null, lastGood: null });
      assert.equal(r.view.rule.name, 'list');
      assert.equal(r.view.diagnostics.length, 0);
      assert.equal(taskName('Books.crawl.yaml'), 'books');
      assert.equal(taskName('***'), 'my-crawl');
    });
  });

  // Issue 23, item 8: the template's `maxDepth: 3` cut a 10-page pagination at page 4, and its follow selectors
  // (`a[rel=next]`, `article a`) matched nothing on most sites.
  describe('follow rules from what the start page shows', () => {
    it('finds the next-page link and the listed items on a list page', () => {
      const page = preparePage(listHtml, `${BASE}/catalogue/page-1.html`);
      const f = proposeFollows(page.$, page.finalUrl);
      assert.equal(f.next?.selector, 'li.next a');
      assert.equal(f.next?.count, 1);
      assert.equal(f.next?.example, `${BASE}/catalogue/page-2.html`);
      assert.equal(f.items?.selector, 'article.product_pod h3 a');
      assert.equal(f.items?.count, DEMO_SITE.perPage);
    });

    it('says nothing it cannot see', () => {
      const page = preparePage(
        '<html><body><h1>Hi</h1><a href="/a">a</a><nav><a href="/1">1</a><a href="/2">2</a><a href="/3">3</a></nav></body></html>',
        `${BASE}/`,
      );
      assert.deepEqual(proposeFollows(page.$, page.finalUrl), { next: null, items: null });
      const rel = preparePage(
        '<html><body><ul><li><a href="/x">Older</a></li></ul><a rel="next" href="/p2">2</a></body></html>',
        `${BASE}/`,
      );
      assert.equal(proposeFollows(rel.$, rel.finalUrl).next?.example, `${BASE}/p2`);
    });

    it('scaffolds those rules, without a depth limit, and they keep every page of the list', () => {
      const page = preparePage(listHtml, `${BASE}/catalogue/page-1.html`);
      const text = scaffoldTask({
        name: 'books',
        start: `${BASE}/catalogue/page-1.html`,
        follows: proposeFollows(page.$, page.finalUrl),
      });
      const { task, diagnostics } = parseTask(text, 'new.crawl.yaml');
      assert.deepEqual(diagnostics, []);
      assert.equal(task!.scope.maxDepth, null, 'no depth limit cuts a pagination');
      assert.ok((task!.scope.maxPages ?? Infinity) >= 500);
      assert.deepEqual(
        task!.rules[0]!.follow.map((f) => (f.kind === 'links' ? f.selector : f.kind)),
        ['li.next a', 'article.product_pod h3 a'],
      );
      const r = computePreview({ text, file: 'new.crawl.yaml', page, rule: null, cursor: null, lastGood: null });
      assert.equal(r.view.diagnostics.length, 0);
      assert.deepEqual(
        r.view.links.map((f) => f.keptTotal),
        [1, DEMO_SITE.perPage],
      );
    });
  });

  // Issue 23, item 10: quick fixes for "matches 0 elements".
  describe('selectors near one that matches nothing', () => {
    const page = preparePage(listHtml, `${BASE}/catalogue/page-1.html`);
    const siteOf = (text: string, selector: string) => selectorSites(text).find((x) => x.selector === selector)!;
    const task = (follow: string, field: string) =>
      `name: t\nstart: [${BASE}/]\nrules:\n  - name: list\n    follow:\n      - { selector: "${follow}", to: list }\n    items:\n      - type: card\n        scope: article.product_pod\n        fields: { price: "${field}" }\n`;

    it('fixes a typo in a class with the nearest one the page has, inside the item scope', () => {
      const text = task('li.next a', 'p.prce_color');
      const s = similarSelectors(page, siteOf(text, 'p.prce_color'));
      assert.equal(s[0]?.selector, 'p.price_color');
      assert.equal(s[0]?.count, DEMO_SITE.perPage);
      assert.match(s[0].why, /'\.price_color' is on the page/);
    });

    it("leaves a part out, and offers the links a follow rule's page shows", () => {
      const text = task('section article.book h3 a', 'p.price_color');
      const s = similarSelectors(page, siteOf(text, 'section article.book h3 a'), 10).map((x) => x.selector);
      assert.ok(s.includes('section article h3 a'), s.join(' | '));
      const nothing = task('div.pagination a.next-page', 'p.price_color');
      const offered = similarSelectors(page, siteOf(nothing, 'div.pagination a.next-page'), 10).map((x) => x.selector);
      assert.ok(offered.includes('li.next a'), offered.join(' | '));
      assert.ok(offered.length <= 10);
    });
  });

  describe('webview messages', () => {
    it('accepts exactly the known shapes', () => {
      assert.deepEqual(parseWebviewMessage({ type: 'pick', index: 3 }), { type: 'pick', index: 3 });
      assert.deepEqual(parseWebviewMessage({ type: 'openPage', url: 'https://a.com/x' }), {
        type: 'openPage',
        url: 'https://a.com/x',
      });
      assert.deepEqual(parseWebviewMessage({ type: 'setRule', rule: null }), { type: 'setRule', rule: null });
      assert.deepEqual(parseWebviewMessage({ type: 'insert', selector: 'h1', all: false }), {
        type: 'insert',
        selector: 'h1',
        all: false,
      });
      for (const bad of [
        null,
        'pick',
        [],
        {},
        { type: 'pick' },
        { type: 'pick', index: -1 },
        { type: 'pick', index: 1.5 },
        { type: 'pick', index: '3' },
        { type: 'pick', index: 1, extra: true },
        { type: 'openPage', url: 'file:///etc/passwd' },
        { type: 'openPage', url: 'javascript:alert(1)' },
        { type: 'openPage', url: 'x'.repeat(3000) },
        { type: 'setRule', rule: '../x' },
        { type: 'setImages', allowed: 'yes' },
        { type: 'insert', selector: 'a\nb: c', all: false },
        { type: 'insert', selector: '', all: false },
        { type: 'insert', selector: 'h1' },
        { type: 'eval', code: '1' },
        { type: 'ready', x: 1 },
      ]) {
        assert.equal(parseWebviewMessage(bad), null, JSON.stringify(bad));
      }
    });
  });

  describe('page cache and fixtures on disk', () => {
    let dir: string;
    beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'cs-designer-'))));
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    it('caches pages by URL hash with their metadata, newest first', async () => {
      const cache = pageCacheDir(join(dir, 'books.crawl.yaml'));
      assert.equal(cache, join(dir, '.crawl', 'pages'));
      assert.deepEqual(await listPages(cache), []);
      const meta = {
        url: `${BASE}/`,
        finalUrl: `${BASE}/`,
        status: 200,
        contentType: 'text/html',
        bytes: 10,
        redirects: 0,
        fetchedAt: '2024-01-01T00:00:00.000Z',
      };
      await savePage(cache, { meta, html: '<h1>a</h1>' });
      await savePage(cache, {
        meta: { ...meta, url: `${BASE}/b`, fetchedAt: '2024-01-02T00:00:00.000Z' },
        html: '<h1>b</h1>',
      });
      assert.equal((await loadPage(cache, `${BASE}/`))?.html, '<h1>a</h1>');
      assert.equal(await loadPage(cache, `${BASE}/nope`), null);
      assert.deepEqual(
        (await listPages(cache)).map((m) => m.url),
        [`${BASE}/b`, `${BASE}/`],
      );
      await setPageRule(cache, `${BASE}/`, 'list');
      assert.equal((await loadPage(cache, `${BASE}/`))?.meta.rule, 'list');
    });

    it('saves a fixture, passes unchanged, reports changed fields after an edit', async () => {
      const file = join(dir, 'books.crawl.yaml');
      writeFileSync(file, books);
      const task = parseTask(books, file).task!;
      const json = await saveFixture(
        file,
        task,
        {
          url: `${BASE}/catalogue/book-17.html`,
          finalUrl: `${BASE}/catalogue/book-17.html`,
          html: bookHtml,
          status: 200,
          fetchedAt: '2026-01-02T03:04:05.000Z',
        },
        'book',
        1,
      );
      assert.ok(json.startsWith(fixtureDir(file, 'books')));
      const ok = await testTaskFile(file);
      assert.equal(ok.ok, true, formatTestReport(ok));
      assert.match(formatTestReport(ok), /1 of 1 fixture unchanged/);

      writeFileSync(file, books.replace('title: h1', 'title: h2').replace('regex: "[0-9.]+"', 'regex: "[0-9]+"'));
      const changed = await testTaskFile(file);
      assert.equal(changed.ok, false);
      const fields = changed.results[0]!.changed.map((c) => c.field).sort();
      assert.deepEqual(fields, ['price', 'title']);
      const report = formatTestReport(changed);
      assert.match(report, /FAIL/);
      assert.match(report, /title changed: ".*17" -> "Related"/);

      writeFileSync(file, books.replace('- name: book', '- name: detail').replace('to: book', 'to: detail'));
      const gone = await testTaskFile(file);
      assert.match(gone.results[0]!.error ?? '', /no rule 'book'/);
    });

    it('reports a task with errors or without fixtures', async () => {
      const file = join(dir, 'x.crawl.yaml');
      writeFileSync(file, 'name: X\n');
      const bad = await testTaskFile(file);
      assert.equal(bad.ok, false);
      assert.ok(bad.errors.length > 0);
      writeFileSync(file, books);
      const none = await testTaskFile(file);
      assert.match(none.errors[0]!, /no fixtures/);
    });

    it('pairs hash-keyed items by position and lists added and removed ones', () => {
      const item = (title: string) => ({ type: 'p', key: `#${title}`, data: { title } });
      const r = compareOutcome(
        { name: 'f', url: 'u', rule: 'r' },
        { items: [item('a'), item('b')], problems: [], links: [] },
        { items: [item('a'), item('c'), item('d')], problems: [], links: [{ url: 'x', rule: 'r' }] },
      );
      assert.deepEqual(
        r.changed.map((c) => [c.field, c.expected, c.actual]),
        [['title', 'b', 'c']],
      );
      assert.deepEqual(r.addedItems, ['p #3']);
      assert.deepEqual(r.addedLinks, ['x -> r']);
      assert.equal(r.ok, false);
    });
  });

  it('benchmark hook: measures a preview update on a 300 KB page', () => {
    const r = measurePreviewLatency({ runs: 3 });
    assert.ok(r.pageBytes >= 300 * 1024);
    assert.equal(r.items, 100);
    assert.ok(r.p50Ms > 0 && r.analyseMs > 0 && r.parseMs > 0);
  });
});
