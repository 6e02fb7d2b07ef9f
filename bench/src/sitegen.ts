import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { allBooks, renderPage, type SiteOptions } from '../../src/demo/site';

// The benchmark's fixture site, written as static files for nginx. Pages are the demo bookshop's own
// (src/demo/site.ts renderPage), made realistic in size and link structure:
//  - every page gets a category sidebar (links no rule follows) and an inline analytics script, as real shops
//    have, so list pages weigh ~11 KB and book pages ~14 KB;
//  - list pages carry a "sort" widget linking to `page-N.html?view=grid&sort=price` and
//    `page-N.html?sort=price&view=grid#top`: one canonical URL (query order and fragment differ), a second
//    variant of every list page with the same listings;
//  - book links come with and without tracking parameters (?ref=&src=, dropped by the task's canonical rules),
//    with #reviews fragments, and as "related" links from other books: many duplicates per new URL;
//  - list pages have numbered pagination (ten pages each way, first and last);
//  - robots.txt disallows /private/ (linked from every header); the footer links off-site, to mailto: and
//    javascript: — all must be dropped, never fetched.
// Deterministic: the same options write byte-identical files.

const { values } = parseArgs({
  options: {
    out: { type: 'string' },
    list: { type: 'string' },
    per: { type: 'string' },
    filler: { type: 'string' },
    scripted: { type: 'boolean' },
  },
});
const out = values.out!;
const opts: SiteOptions = {
  listPages: Number(values.list ?? 250),
  perPage: Number(values.per ?? 20),
  filler: Number(values.filler ?? 22),
};

const WORDS = [
  'fiction',
  'poetry',
  'history',
  'science',
  'travel',
  'mystery',
  'art',
  'music',
  'cooking',
  'health',
  'sports',
  'religion',
  'business',
  'romance',
  'horror',
  'humor',
];
const sidebar =
  '<aside class="sidebar"><h3>Categories</h3><ul class="categories">' +
  Array.from(
    { length: 48 },
    (_, i) =>
      `<li><a href="/catalogue/category/books/${WORDS[i % WORDS.length]}_${i + 2}/index.html">${WORDS[i % WORDS.length]} ${i + 2}</a></li>`,
  ).join('') +
  '</ul></aside>';
function script(seed: number): string {
  const ids = Array.from({ length: 120 }, (_, i) => ((seed * 2654435761 + i * 40503) >>> 0).toString(36));
  return `<script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)}gtag('js',new Date());gtag('config','G-BENCH');var __cfg=${JSON.stringify({ page: seed, ab: ids.slice(0, 8), impressions: ids })};</script>`;
}

/**
 * --scripted (the browser row, issue 18): the same page built by its script, as a client-rendered shop is. The body
 * arrives empty but for a script that writes the page into #app after the document is parsed and then marks it
 * ready; links, listings and books exist only in the rendered DOM. The page's other scripts stay outside and run.
 */
function scripted(html: string): string {
  const open = html.indexOf('<body>') + '<body>'.length;
  const close = html.lastIndexOf('</body>');
  const inner = html.slice(open, close);
  const scripts = inner.match(/<script>[\s\S]*?<\/script>/g) ?? [];
  const content = inner.replace(/<script>[\s\S]*?<\/script>/g, '');
  // \u003c: no '</script>' can end the script early.
  const payload = JSON.stringify(content).replace(/</g, '\\u003c');
  const render = `<div id="app"></div><script>setTimeout(function(){var a=document.getElementById('app');a.innerHTML=${payload};a.className='ready'},0)</script>`;
  return `${html.slice(0, open)}${render}${scripts.join('')}${html.slice(close)}`;
}

function decorate(html: string, path: string, seed: number): string {
  let h = html.replace('</header>', `</header>${sidebar}`).replace('</body>', `${script(seed)}</body>`);
  const m = /^\/catalogue\/page-(\d+)\.html$/.exec(path);
  if (m) {
    const p = m[1]!;
    const n = Number(p);
    // Numbered pagination (a window of ten pages each way, plus first and last), as most shops have: the
    // crawl frontier widens quickly instead of following one "next" link at a time, so every crawler is bound
    // by its throughput, not by the latency of a 250-step chain.
    const nums = [1, ...Array.from({ length: 21 }, (_, i) => n - 10 + i), opts.listPages].filter(
      (k, i, a) => k >= 1 && k <= opts.listPages && k !== n && a.indexOf(k) === i,
    );
    const pages = `<ul class="pages">${nums.map((k) => `<li><a href="page-${k}.html">${k}</a></li>`).join('')}</ul>`;
    h = h.replace(
      '<section>',
      `${pages}<ul class="sort"><li><a href="page-${p}.html?view=grid&amp;sort=price">grid view</a></li><li><a href="page-${p}.html?sort=price&amp;view=grid#top">by price</a></li></ul><section>`,
    );
  }
  return h;
}

rmSync(out, { recursive: true, force: true });
mkdirSync(join(out, 'catalogue'), { recursive: true });
mkdirSync(join(out, 'private'), { recursive: true });
let bytes = 0;
let files = 0;
let min = Infinity;
let max = 0;
function write(path: string, seed: number): void {
  const page = renderPage(path, opts);
  if (!page) throw new Error(`no page for ${path}`);
  const html = page.type.startsWith('text/html');
  const body = html
    ? values.scripted
      ? scripted(decorate(page.body, path, seed))
      : decorate(page.body, path, seed)
    : page.body;
  const file = join(out, path === '/' ? 'index.html' : path.slice(1));
  writeFileSync(file, body);
  const n = Buffer.byteLength(body);
  bytes += n;
  files++;
  if (html) {
    min = Math.min(min, n);
    max = Math.max(max, n);
  }
}
write('/robots.txt', 0);
write('/', 1);
write('/about.html', 2);
write('/private/admin.html', 3);
for (let p = 1; p <= opts.listPages; p++) write(`/catalogue/page-${p}.html`, 10 + p);
const books = allBooks(opts);
for (const b of books) write(`/catalogue/book-${b.id}.html`, 100_000 + b.id);

// What a complete crawl fetches (canonical path + query) and extracts.
const pages = ['/', '/about.html'];
for (let p = 1; p <= opts.listPages; p++)
  pages.push(`/catalogue/page-${p}.html`, `/catalogue/page-${p}.html?sort=price&view=grid`);
for (const b of books) pages.push(`/catalogue/book-${b.id}.html`);
const expected = {
  options: opts,
  pages,
  disallowed: ['/private/admin.html'],
  items: { book: books.length, listing: books.length },
  /** Listings are extracted twice (plain and sorted list page); a store with dedup keeps one row each. */
  extracted: { book: books.length, listing: books.length * 2 },
  bytes,
  files,
  htmlBytes: { min, max, mean: Math.round(bytes / files) },
};
writeFileSync(join(out, 'expected.json'), JSON.stringify(expected));
console.log(JSON.stringify({ files, pages: pages.length, bytes, min, max, mean: Math.round(bytes / files) }));
