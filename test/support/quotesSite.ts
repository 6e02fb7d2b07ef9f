import { createServer, type Server } from 'node:http';

// A second list-and-detail site, unlike the Demo Shop in the ways that tripped New Task File (issue 32, item 5):
// quotes in `div.quote` blocks with no heading and no price, authors' pages whose only h1 is the site's header
// (a plain `div.header-box`, not a <header>) and whose content sits in a `div` (no <main>, no <article>), a
// sidebar of tags, a footer. Modelled on quotes.toscrape.com's markup. Every quote and author is known here, so a
// test can say what a task must extract.
//
// With `troubles` it is also the site issue 32's tester crawled: the first list page links (in a `ul.more`) to an
// author that does not exist (404), a page that breaks (500), a page robots.txt forbids and an author page that
// answers slowly, besides its off-site footer links; `pages` lengthens the list.

export interface Quote {
  readonly text: string;
  readonly author: string;
  readonly tags: readonly string[];
}

export interface Author {
  readonly name: string;
  readonly slug: string;
  readonly born: string;
  readonly place: string;
  readonly description: string;
}

const NAMES = [
  'Jane Austen',
  'Albert Einstein',
  'Marie Curie',
  'Mark Twain',
  'Ada Lovelace',
  'Leo Tolstoy',
  'Rosalind Franklin',
  'Oscar Wilde',
  'Emily Dickinson',
  'Carl Sagan',
  'Frida Kahlo',
  'Isaac Newton',
];
const TAGS = ['life', 'love', 'books', 'humor', 'science', 'truth'];
const WORDS = [
  'a',
  'mind',
  'that',
  'is',
  'stretched',
  'by',
  'new',
  'experience',
  'can',
  'never',
  'go',
  'back',
  'to',
  'its',
  'old',
  'dimensions',
  'and',
  'the',
  'world',
  'reads',
];

export const QUOTES_PER_PAGE = 10;
export const QUOTE_PAGES = 2;

export function author(i: number): Author {
  const name = NAMES[i % NAMES.length]!;
  return {
    name,
    slug: name.replace(/ /g, '-'),
    born: `March ${(i % 27) + 1}, ${1700 + i * 13}`,
    place: `in Town ${i}, Country ${i % 4}`,
    description: Array.from({ length: 80 }, (_, k) => WORDS[(i * 7 + k * 3) % WORDS.length]).join(' ') + '.',
  };
}

export function quote(n: number): Quote {
  const words = Array.from({ length: 12 + (n % 9) }, (_, k) => WORDS[(n * 5 + k) % WORDS.length]).join(' ');
  return {
    text: `“${words[0]!.toUpperCase()}${words.slice(1)} (${n}).”`,
    author: author(n % NAMES.length).name,
    tags: TAGS.filter((_, k) => (n + k) % 3 === 0),
  };
}

/** The quotes of list page `p` (1-based). */
export function quotesOn(p: number): Quote[] {
  return Array.from({ length: QUOTES_PER_PAGE }, (_, i) => quote((p - 1) * QUOTES_PER_PAGE + i));
}

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function layout(body: string, sidebar = ''): string {
  return `<!DOCTYPE html><html lang="en"><head><meta charset="UTF-8"><title>Quotes to Scrape</title></head>
<body><div class="container">
<div class="row header-box"><div class="col-md-8"><h1><a href="/" style="text-decoration: none">Quotes to Scrape</a></h1></div>
<div class="col-md-4"><p><a href="/login">Login</a></p></div></div>
<div class="row"><div class="col-md-8">${body}</div>${sidebar}</div></div>
<footer class="footer"><div class="container"><p class="text-muted">Quotes by: <a href="https://www.goodreads.com/quotes">GoodReads.com</a></p>
<p class="copyright">Made with <span class="zyte">❤</span> by <a href="https://offsite.example.com/">a team</a></p></div></footer>
</body></html>`;
}

export interface QuotesOptions {
  /** List pages (default QUOTE_PAGES). */
  readonly pages?: number;
  /** The 404, 500, robots-forbidden and slow pages, linked from the first list page (see TROUBLES). */
  readonly troubles?: boolean;
  /** How long the slow page takes to answer (default 1,500 ms). */
  readonly slowMs?: number;
}

/** The troubled pages' paths, linked from the first list page when `troubles` is on. */
export const TROUBLES = {
  notFound: '/author/Anonymous-Author/',
  serverError: '/random/',
  forbidden: '/private/drafts/',
  slow: '/author/Slow-Poke/',
  offsite: 'https://offsite.example.com/quotes',
} as const;

/** The slow page's author: a page like the others, only late. */
export const SLOW_AUTHOR: Author = {
  name: 'Slow Poke',
  slug: 'Slow-Poke',
  born: 'June 1, 1900',
  place: 'in Lateville',
  description: 'Answers every request, in its own time.',
};

const ROBOTS = `User-agent: *\nDisallow: /private/\n`;

function troublesBlock(): string {
  return `<ul class="more"><li><a href="${TROUBLES.notFound}">An anonymous author</a></li>
<li><a href="${TROUBLES.serverError}">A random quote</a></li>
<li><a href="${TROUBLES.forbidden}">Drafts</a></li>
<li><a href="${TROUBLES.slow}">Slow Poke</a></li>
<li><a href="${TROUBLES.offsite}">More quotes elsewhere</a></li></ul>`;
}

function authorPage(a: Author): string {
  return layout(`<div class="author-details">
<h3 class="author-title">${esc(a.name)}</h3>
<p><strong>Born:</strong> <span class="author-born-date">${esc(a.born)}</span> <span class="author-born-location">${esc(a.place)}</span></p>
<p><strong>Description:</strong></p>
<div class="author-description">
${esc(a.description)}
</div></div>`);
}

export function renderQuotesPage(path: string, o: QuotesOptions = {}): { status: number; body: string } | null {
  let m = /^\/(?:page\/(\d+)\/)?$/.exec(path);
  if (m) {
    const p = Number(m[1] ?? 1);
    if (p < 1 || p > (o.pages ?? QUOTE_PAGES)) return null;
    const quotes = quotesOn(p)
      .map(
        (q) => `<div class="quote" itemscope itemtype="http://schema.org/CreativeWork">
<span class="text" itemprop="text">${esc(q.text)}</span>
<span>by <small class="author" itemprop="author">${esc(q.author)}</small>
<a href="/author/${q.author.replace(/ /g, '-')}/">(about)</a></span>
<div class="tags">Tags: <meta class="keywords" itemprop="keywords" content="${q.tags.join(',')}">
${q.tags.map((t) => `<a class="tag" href="/tag/${t}/page/1/">${t}</a>`).join('\n')}</div></div>`,
      )
      .join('\n');
    const pager = `<nav><ul class="pager">${p > 1 ? `<li class="previous"><a href="/page/${p - 1}/"><span aria-hidden="true">&larr;</span> Previous</a></li>` : ''}${p < (o.pages ?? QUOTE_PAGES) ? `<li class="next"><a href="/page/${p + 1}/">Next <span aria-hidden="true">&rarr;</span></a></li>` : ''}</ul></nav>`;
    const sidebar = `<div class="col-md-4 tags-box"><h2>Top Ten tags</h2>${TAGS.map((t) => `<span class="tag-item"><a class="tag" href="/tag/${t}/">${t}</a></span>`).join('\n')}</div>`;
    const more = o.troubles && p === 1 ? troublesBlock() : '';
    return { status: 200, body: layout(quotes + more + pager, sidebar) };
  }
  m = /^\/author\/([A-Za-z-]+)\/$/.exec(path);
  if (m) {
    const i = NAMES.findIndex((n) => n.replace(/ /g, '-') === m[1]);
    if (i >= 0) return { status: 200, body: authorPage(author(i)) };
  }
  if (!o.troubles) return null;
  if (path === TROUBLES.slow) return { status: 200, body: authorPage(SLOW_AUTHOR) };
  if (path === TROUBLES.serverError) return { status: 500, body: '<h1>Internal Server Error</h1>' };
  // Served, so only robots.txt keeps a crawl from it.
  if (path === TROUBLES.forbidden) return { status: 200, body: layout('<p>Unpublished drafts.</p>') };
  return null;
}

export interface QuotesServer {
  readonly url: string;
  /** Requests by path (robots.txt included). */
  readonly hits: Map<string, number>;
  close(): Promise<void>;
}

/** Serves the site on 127.0.0.1 (a free port). */
export async function serveQuotes(o: QuotesOptions = {}): Promise<QuotesServer> {
  const hits = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    if (o.troubles && path === '/robots.txt') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end(ROBOTS);
      return;
    }
    const page = renderQuotesPage(path, o);
    const send = () => {
      if (!page) res.writeHead(404, { 'content-type': 'text/html' }).end('<h1>Not found</h1>');
      else res.writeHead(page.status, { 'content-type': 'text/html; charset=utf-8' }).end(page.body);
    };
    if (o.troubles && path === TROUBLES.slow) setTimeout(send, o.slowMs ?? 1_500);
    else send();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A task for the site: list pages hold quotes and follow the pager, the quotes' authors, the `ul.more` links and the
 * footer's (off-site: dropped); an author page holds an author. `perHost` sets the crawl's pace.
 */
export function quotesTask(o: {
  readonly name: string;
  readonly siteUrl: string;
  readonly perHost?: { readonly concurrency: number; readonly delay: string };
}): string {
  return [
    `name: ${o.name}`,
    `start: [${o.siteUrl}/]`,
    'request: { retries: { attempts: 2, backoff: fixed, delay: 100ms } }',
    ...(o.perHost
      ? [`politeness: { perHost: { concurrency: ${o.perHost.concurrency}, delay: ${o.perHost.delay} } }`]
      : []),
    'rules:',
    '  - name: list',
    `    match: ["${o.siteUrl}/", "**/page/*/"]`,
    '    follow:',
    '      - { selector: "li.next a", to: list }',
    '      - { selector: "div.quote span a, ul.more a, footer a", to: author }',
    '    items:',
    '      - type: quote',
    '        scope: div.quote',
    '        key: [text]',
    '        fields: { text: span.text, author: small.author }',
    '  - name: author',
    '    items:',
    '      - type: author',
    '        scope: div.author-details',
    '        key: [name]',
    '        fields: { name: h3.author-title, born: span.author-born-date }',
    '',
  ].join('\n');
}
