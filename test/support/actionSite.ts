import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

// A site whose data appears only through page actions (issue 30): an infinite-scroll feed (60 entries, 20 per
// scroll), the same feed behind a "load more" button, and a search form whose results a script fetches. Each page's
// script fetches its entries from a JSON API after a short delay, as real feeds do.

export const ENTRIES = 60;
export const PER_LOAD = 20;
/** How long the API takes to answer: longer than a frame, shorter than an action's idle wait (1 s). */
const API_DELAY_MS = 150;

export interface ActionSite {
  readonly url: string;
  /** The API calls each page made, by page (`from` offsets), to tell how the entries came. */
  readonly loads: number[];
  close(): Promise<void>;
}

const ENTRY_SCRIPT = `
let next = 0, loading = false;
async function load() {
  if (loading || next >= ${ENTRIES}) return false;
  loading = true;
  const list = await (await fetch('/api/entries?from=' + next)).json();
  for (const e of list) {
    const a = document.createElement('article');
    a.className = 'entry';
    a.innerHTML = '<h2>' + e.title + '</h2><span class="id">' + e.id + '</span>';
    document.getElementById('feed').append(a);
  }
  next += list.length;
  loading = false;
  return true;
}
load();`;

function page(body: string, script: string): string {
  return `<!doctype html><html><head><title>t</title><style>.entry { height: 120px; border: 1px solid #ccc; }</style></head><body>${body}<script>${script}</script></body></html>`;
}

const PAGES: Record<string, string> = {
  // Loads the next 20 when the reader nears the bottom.
  '/feed': page(
    '<main id="feed"></main>',
    `${ENTRY_SCRIPT}
window.addEventListener('scroll', () => { if (innerHeight + scrollY >= document.documentElement.scrollHeight - 200) load(); });`,
  ),
  // Loads the next 20 on each click; the button is disabled while loading and removed once all are there.
  '/more': page(
    '<main id="feed"></main><button class="more">Load more</button>',
    `${ENTRY_SCRIPT}
const more = document.querySelector('button.more');
more.addEventListener('click', async () => {
  more.disabled = true;
  await load();
  more.disabled = false;
  if (next >= ${ENTRIES}) more.remove();
});`,
  ),
  // Results only after the query is typed and the form submitted (Enter); sorted as the select says.
  '/search': page(
    '<form id="search"><input name="q"><select id="sort"><option value="asc">Ascending</option><option value="desc">Descending</option></select></form><ul id="results"></ul>',
    `document.getElementById('search').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const q = document.querySelector('input[name=q]').value, sort = document.getElementById('sort').value;
  const list = await (await fetch('/api/search?q=' + encodeURIComponent(q) + '&sort=' + sort)).json();
  document.getElementById('results').innerHTML = list.map((t) => '<li class="result"><span>' + t + '</span></li>').join('');
});`,
  ),
};

export async function serveActionSite(): Promise<ActionSite> {
  const loads: number[] = [];
  const server: Server = createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://x');
    const json = (v: unknown) => setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(v)), API_DELAY_MS);
    if (u.pathname === '/api/entries') {
      const from = Number(u.searchParams.get('from') ?? 0);
      loads.push(from);
      const ids = Array.from({ length: Math.max(0, Math.min(PER_LOAD, ENTRIES - from)) }, (_, i) => from + i);
      return json(ids.map((id) => ({ id, title: `Entry ${id}` })));
    }
    if (u.pathname === '/api/search') {
      const q = u.searchParams.get('q') ?? '';
      const list = q ? [1, 2, 3].map((n) => `${q} ${n}`) : [];
      return json(u.searchParams.get('sort') === 'desc' ? list.reverse() : list);
    }
    const html = PAGES[u.pathname];
    if (html) return res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(html);
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    loads,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
