import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startRedis, type RedisServer } from '../support/services';
import { bufferedPages, session, writeTask } from '../support/crawl';
import { cookiesOf, requestBody as body } from '../support/httpRequest';

// A retired session's pages in flight (issue 30, item 1): a real login site on 127.0.0.1 blocks a login (403, and
// every later request with it) when one page is asked for, answering that page only once another page is in
// flight in the same session, so the block always takes an innocent page with it (answered 403 once the crawl
// has replaced the session). Each page has one attempt: the blocked page fails, and every other page, in flight in
// the blocked session or not, is stored.

const PAGES = 12;
const BLOCKING_PAGE = '/p/1';
const USER = 'bo';
const PASSWORD = 'Retire-Pw-40k';

interface Site {
  url: string;
  server: Server;
  logins: number;
  /** Requests answered 403 because their login was blocked by the blocking page, though they were not it. */
  innocentBlocks: number;
}

async function blockingSite(): Promise<Site> {
  const tokens = new Map<string, 'ok' | 'blocked'>();
  /** Per login: the blocking page's request, waiting for another page of the same login. */
  const waiting = new Map<string, () => void>();
  const site: Site = { url: '', server: undefined as unknown as Server, logins: 0, innocentBlocks: 0 };
  const html = (res: ServerResponse, status: number, content: string) =>
    res
      .writeHead(status, { 'content-type': 'text/html; charset=utf-8' })
      .end(`<!doctype html><html><body>${content}</body></html>`);
  let blocked = false;
  let loggedInAgain: () => void = () => undefined;
  const secondLogin = new Promise<void>((r) => (loggedInAgain = r));
  site.server = createServer((req, res) => {
    void (async () => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      if (path === '/login' && req.method === 'GET')
        return html(
          res,
          200,
          '<form method="post" action="/login"><input name="user"><input type="password" name="password"></form>',
        );
      if (path === '/login' && req.method === 'POST') {
        const form = new URLSearchParams(await body(req));
        if (form.get('user') !== USER || form.get('password') !== PASSWORD) return html(res, 403, 'bad login');
        if (++site.logins === 2) loggedInAgain();
        const token = randomBytes(8).toString('hex');
        tokens.set(token, 'ok');
        res.writeHead(302, { location: '/welcome', 'set-cookie': `auth=${token}; Path=/; HttpOnly` });
        return res.end();
      }
      if (path === '/welcome') return html(res, 200, '<a class="logout" href="/logout">out</a>');
      const token = cookiesOf(req).get('auth') ?? '';
      if (!tokens.has(token)) {
        res.writeHead(302, { location: '/login' });
        return res.end();
      }
      if (path === BLOCKING_PAGE && !blocked) {
        // The block, once: held until another page of this login is in flight, then this login is blocked.
        blocked = true;
        await new Promise<void>((resolve) => waiting.set(token, resolve));
        tokens.set(token, 'blocked');
        return html(res, 403, 'blocked');
      }
      const release = waiting.get(token);
      if (release) {
        waiting.delete(token);
        release();
        await new Promise((r) => setImmediate(r));
      }
      if (tokens.get(token) === 'blocked') {
        // Caught in the block, and answered once the crawl has acted on it (retired the session, whose replacement
        // logged in): this answer is the block seen again, not this page's fault.
        site.innocentBlocks++;
        await secondLogin;
        return html(res, 403, 'blocked');
      }
      const m = /^\/p\/(\d+)$/.exec(path);
      return m ? html(res, 200, `<h1 class="title">Page ${m[1]}</h1>`) : html(res, 404, 'no such page');
    })();
  });
  await new Promise<void>((r) => site.server.listen(0, '127.0.0.1', r));
  site.url = `http://127.0.0.1:${(site.server.address() as AddressInfo).port}`;
  return site;
}

describe('a retired session sends its pages in flight back without spending an attempt (real site, Redis, workers)', function () {
  this.timeout(120_000);
  let redis: RedisServer;
  let site: Site;
  before(async () => {
    redis = await startRedis();
    site = await blockingSite();
  });
  after(async () => {
    site?.server.closeAllConnections();
    site?.server.close();
    await redis?.stop();
  });

  it('fails only the page that was blocked; the pages in flight in its session are fetched again in a new one', async () => {
    const start = Array.from({ length: PAGES }, (_, i) => `${site.url}/p/${i + 1}`).join(', ');
    const task = await writeTask(`name: retire-inflight
start: [${start}]
request: { robots: false, retries: { attempts: 1 } }
session: { pool: 1 }
login:
  url: ${site.url}/login
  form: { fields: { user: '\${CRAWL_STUDIO_RT_USER}', password: '\${CRAWL_STUDIO_RT_PASSWORD}' } }
  check: { selector: .logout }
rules:
  - name: page
    items: [{ type: page, key: [title], fields: { title: h1.title } }]
`);
    const logs: string[] = [];
    const s = session(task, redis.url, {
      workers: 1,
      concurrency: 4,
      secretEnv: { CRAWL_STUDIO_RT_USER: USER, CRAWL_STUDIO_RT_PASSWORD: PASSWORD },
      onWorkerLog: (_pid, line) => logs.push(line),
    });
    let result;
    try {
      result = await s.run();
    } finally {
      await s.close();
    }
    const log = logs.join('\n');
    const stats = result.status.stats!;
    assert.ok(
      site.innocentBlocks >= 1,
      `another page was in flight in the blocked session (the case under test):\n${log}`,
    );
    assert.deepEqual(stats.failures, { 'http-403': 1 }, `only the blocked page failed:\n${log}`);
    const stored = (await bufferedPages(redis.url, 'retire-inflight'))
      .filter((p) => p.status === 200)
      .map((p) => new URL(p.url).pathname);
    assert.equal(new Set(stored).size, PAGES - 1, `every other page stored: ${stored.sort().join(' ')}\n${log}`);
    assert.ok(!stored.includes(BLOCKING_PAGE));
    assert.equal(site.logins, 2, 'one login, and one for the session that replaced the blocked one');
  });
});
