import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cookiesOf, requestBody } from './httpRequest';

// A site whose data appears only through page actions (issue 30): an infinite-scroll feed (60 entries, 20 per
// scroll), the same feed behind a "load more" button, and a search form whose results a script fetches. Each page's
// script fetches its entries from a JSON API after a short delay, as real feeds do.
//
// Optionally (issue 30's acceptance) members-only behind a login form a script builds (its CSRF token fetched by the
// script), and answering each page's first request, and any retry of it within `retryAfterS`, with 429 and that
// Retry-After.

export const ENTRIES = 60;
export const PER_LOAD = 20;
/** How long the API takes to answer: longer than a frame, shorter than an action's idle wait (1 s). */
const API_DELAY_MS = 150;

export interface ActionSiteOptions {
  /** The pages and the API need the cookie a login gives; the login page is built by its script. */
  readonly login?: { readonly user: string; readonly password: string };
  /** Each HTML page answers 429 with this Retry-After (seconds) until asked again that long after its first answer. */
  readonly retryAfterS?: number;
}

export interface ActionSite {
  readonly url: string;
  /** Successful logins. */
  readonly logins: () => number;
  /** When each page (path and query) was asked for, ms since epoch, and what it answered. */
  readonly requests: Map<string, { at: number; status: number }[]>;
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

const LOGIN_SCRIPT = `(async () => {
  const { token } = await (await fetch('/csrf')).json();
  const app = document.getElementById('app');
  app.innerHTML = '<form id="f"><input id="user"><input id="password" type="password"><button id="go" type="submit">Log in</button></form>';
  document.getElementById('f').addEventListener('submit', async (e) => {
    e.preventDefault();
    const r = await fetch('/session', { method: 'POST', headers: { 'content-type': 'application/json', 'x-csrf': token },
      body: JSON.stringify({ user: document.getElementById('user').value, password: document.getElementById('password').value }) });
    if (r.ok) location.href = '/';
  });
})();`;

/** The login's pages, or null when `req` is for another page; `authed` says whether its cookie is a login's. */
function loginRoutes(
  o: NonNullable<ActionSiteOptions['login']>,
  state: { csrf: Map<string, string>; auth: Set<string>; logins: number },
) {
  return async (req: IncomingMessage, res: ServerResponse, path: string): Promise<boolean> => {
    const html = (body: string) =>
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<!doctype html><body>${body}</body>`);
    if (path === '/login') return (html('<div id="app">loading…</div><script src="/login.js"></script>'), true);
    if (path === '/login.js')
      return (res.writeHead(200, { 'content-type': 'text/javascript' }).end(LOGIN_SCRIPT), true);
    if (path === '/csrf') {
      const sid = randomBytes(8).toString('hex');
      const token = randomBytes(8).toString('hex');
      state.csrf.set(sid, token);
      res
        .writeHead(200, { 'content-type': 'application/json', 'set-cookie': `sid=${sid}; Path=/; HttpOnly` })
        .end(JSON.stringify({ token }));
      return true;
    }
    if (path === '/session' && req.method === 'POST') {
      const body = JSON.parse(await requestBody(req)) as { user?: string; password?: string };
      const sid = cookiesOf(req).get('sid');
      if (
        sid === undefined ||
        state.csrf.get(sid) !== req.headers['x-csrf'] ||
        body.user !== o.user ||
        body.password !== o.password
      ) {
        res.writeHead(403, { 'content-type': 'application/json' }).end('{"ok":false}');
        return true;
      }
      state.logins++;
      const token = randomBytes(8).toString('hex');
      state.auth.add(token);
      res
        .writeHead(200, { 'content-type': 'application/json', 'set-cookie': `auth=${token}; Path=/; HttpOnly` })
        .end('{"ok":true}');
      return true;
    }
    const token = cookiesOf(req).get('auth');
    if (token === undefined || !state.auth.has(token)) {
      res.writeHead(path.startsWith('/api/') ? 403 : 302, { location: '/login' }).end();
      return true;
    }
    if (path === '/') return (html('<a class="logout" href="/logout">log out</a>'), true);
    return false;
  };
}

export async function serveActionSite(o: ActionSiteOptions = {}): Promise<ActionSite> {
  const loads: number[] = [];
  const requests = new Map<string, { at: number; status: number }[]>();
  const state = { csrf: new Map<string, string>(), auth: new Set<string>(), logins: 0 };
  const login = o.login ? loginRoutes(o.login, state) : null;
  const server: Server = createServer((req, res) => void route(req, res));
  const route = async (req: IncomingMessage, res: ServerResponse) => {
    const u = new URL(req.url ?? '/', 'http://x');
    if (u.pathname === '/robots.txt') return res.writeHead(404).end();
    if (login && (await login(req, res, u.pathname))) return;
    const json = (v: unknown) =>
      setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(v)), API_DELAY_MS);
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
    if (!html) return res.writeHead(404).end();
    const seen = requests.get(u.pathname + u.search) ?? [];
    requests.set(u.pathname + u.search, seen);
    const now = Date.now();
    if (o.retryAfterS !== undefined && (seen.length === 0 || now - seen[0]!.at < o.retryAfterS * 1000)) {
      seen.push({ at: now, status: 429 });
      return res
        .writeHead(429, { 'retry-after': String(o.retryAfterS), 'content-type': 'text/html' })
        .end('<!doctype html><p>slow down</p>');
    }
    seen.push({ at: now, status: 200 });
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(html);
  };
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    logins: () => state.logins,
    requests,
    loads,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
