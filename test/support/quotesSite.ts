import { createServer, type Server } from 'node:http';

// A second list-and-detail site, unlike the Demo Shop in the ways that tripped New Task File (issue 32, item 5):
// quotes in `div.quote` blocks with no heading and no price, authors' pages whose only h1 is the site's header
// (a plain `div.header-box`, not a <header>) and whose content sits in a `div` (no <main>, no <article>), a
// sidebar of tags, a footer. Modelled on quotes.toscrape.com's markup. Every quote and author is known here, so a
// test can say what a task must extract.

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

export function renderQuotesPage(path: string): { status: number; body: string } | null {
  let m = /^\/(?:page\/(\d+)\/)?$/.exec(path);
  if (m) {
    const p = Number(m[1] ?? 1);
    if (p < 1 || p > QUOTE_PAGES) return null;
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
    const pager = `<nav><ul class="pager">${p > 1 ? `<li class="previous"><a href="/page/${p - 1}/"><span aria-hidden="true">&larr;</span> Previous</a></li>` : ''}${p < QUOTE_PAGES ? `<li class="next"><a href="/page/${p + 1}/">Next <span aria-hidden="true">&rarr;</span></a></li>` : ''}</ul></nav>`;
    const sidebar = `<div class="col-md-4 tags-box"><h2>Top Ten tags</h2>${TAGS.map((t) => `<span class="tag-item"><a class="tag" href="/tag/${t}/">${t}</a></span>`).join('\n')}</div>`;
    return { status: 200, body: layout(quotes + pager, sidebar) };
  }
  m = /^\/author\/([A-Za-z-]+)\/$/.exec(path);
  if (m) {
    const i = NAMES.findIndex((n) => n.replace(/ /g, '-') === m[1]);
    if (i < 0) return null;
    const a = author(i);
    return {
      status: 200,
      body: layout(`<div class="author-details">
<h3 class="author-title">${esc(a.name)}</h3>
<p><strong>Born:</strong> <span class="author-born-date">${esc(a.born)}</span> <span class="author-born-location">${esc(a.place)}</span></p>
<p><strong>Description:</strong></p>
<div class="author-description">
${esc(a.description)}
</div></div>`),
    };
  }
  return null;
}

export interface QuotesServer {
  readonly url: string;
  close(): Promise<void>;
}

/** Serves the site on 127.0.0.1 (a free port). */
export async function serveQuotes(): Promise<QuotesServer> {
  const server: Server = createServer((req, res) => {
    const page = renderQuotesPage((req.url ?? '/').split('?')[0]!);
    if (!page) res.writeHead(404, { 'content-type': 'text/html' }).end('<h1>Not found</h1>');
    else res.writeHead(page.status, { 'content-type': 'text/html; charset=utf-8' }).end(page.body);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
