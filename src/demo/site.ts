import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

// A deterministic sample bookshop: list pages with pagination, detail pages with items, duplicate links that
// differ only by fragment or query order, off-site links, and a robots-disallowed /private/ area. The demo
// crawls it; the tests and benchmarks use it as a site whose every page and item is known in advance.

export interface SiteOptions {
  /** Number of list pages. */
  readonly listPages: number;
  /** Books per list page. */
  readonly perPage: number;
  /** Extra filler paragraphs per book page, to reach realistic page sizes. */
  readonly filler?: number;
}

export interface Book {
  readonly id: number;
  readonly upc: string;
  readonly title: string;
  readonly price: string;
  readonly tags: string[];
  readonly stock: number;
}

const WORDS = [
  'river',
  'glass',
  'orbit',
  'lantern',
  'maple',
  'quiet',
  'ember',
  'harbor',
  'velvet',
  'signal',
  'meadow',
  'cobalt',
  'thistle',
  'atlas',
  'ferry',
  'juniper',
];
const UNICODE = ['Café ☕', 'Ænima', 'Straße', '東京 Nights', 'Øresund', 'naïve “quotes”'];
const TAGS = ['fiction', 'poetry', 'history', 'science', 'travel', 'mystery', 'art'];

/** Deterministic pseudo-random numbers (mulberry32), so every run builds the same site. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function book(id: number): Book {
  const r = rng(id * 7919);
  const w = () => WORDS[Math.floor(r() * WORDS.length)]!;
  const title = id % 17 === 0 ? `${UNICODE[id % UNICODE.length]} ${id}` : `The ${w()} of ${w()} ${id}`;
  const tags = TAGS.filter(() => r() < 0.3);
  return {
    id,
    upc: `UPC${((id * 2654435761) % 4294967296).toString(16).padStart(8, '0')}`,
    title,
    price: (5 + r() * 50).toFixed(2),
    tags,
    stock: Math.floor(r() * 20),
  };
}

export function allBooks(opts: SiteOptions): Book[] {
  return Array.from({ length: opts.listPages * opts.perPage }, (_, i) => book(i + 1));
}

/** Every URL a crawl of the whole allowed site must fetch (robots-disallowed pages excluded). */
export function expectedPages(base: string, opts: SiteOptions): string[] {
  const urls = [`${base}/`];
  for (let p = 1; p <= opts.listPages; p++) urls.push(`${base}/catalogue/page-${p}.html`);
  for (const b of allBooks(opts)) urls.push(`${base}/catalogue/book-${b.id}.html`);
  urls.push(`${base}/about.html`);
  return urls;
}

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function layout(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${esc(title)}</title>
<style>body{font-family:sans-serif;max-width:60em;margin:auto}.product_pod{display:inline-block;width:11em;vertical-align:top;margin:.5em}.price_color{color:#070}</style>
</head><body><header><a href="/">Books to Crawl</a> · <a href="/about.html">About</a> · <a href="/private/admin.html">Admin</a></header>${body}
<footer><a href="https://offsite.example.com/partner">Partner</a> · <a href="mailto:shop@example.com">Mail</a> · <a href="javascript:void(0)">Top</a></footer></body></html>`;
}

export function renderPage(path: string, opts: SiteOptions): { status: number; type: string; body: string } | null {
  const html = (body: string) => ({ status: 200, type: 'text/html; charset=utf-8', body });
  if (path === '/robots.txt') return { status: 200, type: 'text/plain', body: 'User-agent: *\nDisallow: /private/\n' };
  if (path === '/' || path === '/index.html') {
    return html(
      layout(
        'Books to Crawl',
        `<h1>Books to Crawl</h1><p>A sample shop for Crawl Studio.</p>
<ul class="nav"><li><a href="/catalogue/page-1.html">All books</a></li><li><a href="/catalogue/page-1.html#top">All books (top)</a></li></ul>`,
      ),
    );
  }
  if (path === '/about.html') return html(layout('About', '<h1>About</h1><p>Nothing to extract here.</p>'));
  if (path.startsWith('/private/')) return html(layout('Private', '<h1>Private</h1>'));
  let m = /^\/catalogue\/page-(\d+)\.html$/.exec(path);
  if (m) {
    const p = Number(m[1]);
    if (p < 1 || p > opts.listPages) return null;
    const books = Array.from({ length: opts.perPage }, (_, i) => book((p - 1) * opts.perPage + i + 1));
    const pods = books
      .map(
        (
          b,
          i,
        ) => `<article class="product_pod"><h3><a href="book-${b.id}.html${i % 3 === 0 ? '?ref=list&amp;src=p' + p : ''}" title="${esc(b.title)}">${esc(b.title)}</a></h3>
<p class="price_color">£${b.price}</p><a href="/catalogue/book-${b.id}.html#reviews">reviews</a></article>`,
      )
      .join('\n');
    const pager = [
      p > 1 ? `<li class="previous"><a href="page-${p - 1}.html">previous</a></li>` : '',
      p < opts.listPages ? `<li class="next"><a href="page-${p + 1}.html">next</a></li>` : '',
    ].join('');
    return html(
      layout(
        `Page ${p}`,
        `<h1>All books, page ${p} of ${opts.listPages}</h1><section>${pods}</section><ul class="pager">${pager}</ul>`,
      ),
    );
  }
  m = /^\/catalogue\/book-(\d+)\.html$/.exec(path);
  if (m) {
    const id = Number(m[1]);
    if (id < 1 || id > opts.listPages * opts.perPage) return null;
    const b = book(id);
    const r = rng(id);
    const filler = Array.from(
      { length: opts.filler ?? 2 },
      () => `<p>${Array.from({ length: 60 }, () => WORDS[Math.floor(r() * WORDS.length)]).join(' ')}.</p>`,
    ).join('');
    const related = [1, 2, 3]
      .map((k) => ((id + k * 7) % (opts.listPages * opts.perPage)) + 1)
      .map((rid) => `<li><a href="book-${rid}.html?src=related&amp;ref=x">Book ${rid}</a></li>`)
      .join('');
    return html(
      layout(
        b.title,
        `<article class="product_page"><h1>${esc(b.title)}</h1>
<p class="price_color">£${b.price}</p>
<p class="availability">${b.stock > 0 ? `In stock (${b.stock} available)` : 'Out of stock'}</p>
<ul class="tags">${b.tags.map((t) => `<li class="tag">${t}</li>`).join('')}</ul>
<table class="info"><tr><th>UPC</th><td class="upc">${b.upc}</td></tr><tr><th>Price</th><td>£${b.price}</td></tr></table>
<img src="/media/cover-${b.id}.jpg" alt="cover">
<div id="description">${filler}</div>
<h2>Related</h2><ul class="related">${related}</ul></article>`,
      ),
    );
  }
  return null;
}

export interface SiteServer {
  readonly url: string;
  readonly port: number;
  readonly server: Server;
  /** Requests per path (with query), for "fetched exactly once" checks. */
  readonly hits: Map<string, number>;
  close(): Promise<void>;
}

export type Middleware = (req: IncomingMessage, res: ServerResponse) => boolean;

/** Serves the site on 127.0.0.1. A middleware can answer a request first (tests inject faults that way). */
export async function serveSite(
  opts: SiteOptions,
  port = 0,
  middleware?: Middleware,
  latencyMs = 0,
): Promise<SiteServer> {
  const hits = new Map<string, number>();
  const server = createServer((req, res) => {
    const full = req.url ?? '/';
    hits.set(full, (hits.get(full) ?? 0) + 1);
    if (middleware?.(req, res)) return;
    const path = full.split('?')[0]!;
    const page = renderPage(path, opts);
    const send = () => {
      if (!page) res.writeHead(404, { 'content-type': 'text/html' }).end('<h1>Not found</h1>');
      else
        res
          .writeHead(page.status, { 'content-type': page.type, 'content-length': Buffer.byteLength(page.body) })
          .end(page.body);
    };
    if (latencyMs > 0) setTimeout(send, latencyMs);
    else send();
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const actual = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${actual}`,
    port: actual,
    server,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export const DEMO_SITE: SiteOptions = { listPages: 5, perPage: 20, filler: 3 };
export const DEMO_PORT = 8737;
