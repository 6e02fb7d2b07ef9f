import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { descendants } from '../../src/worker/browser/processes';
import { taskKeys } from '../../src/frontier/keys';
import { freePort, startRedis, type RedisServer } from '../support/services';
import { bufferedPages, session, writeTask } from '../support/crawl';
import { forwardProxy, type Proxy } from '../support/proxy';
import { redisDump } from '../support/redisDump';
import { cookiesOf } from '../support/httpRequest';
import { browserOrSkip } from '../support/browser';

// Rendered pages in a session, logged in, through a proxy (issue 18): real Chromium, a real login site on 127.0.0.1
// (a CSRF token in the form, a session cookie, an HttpOnly auth cookie after the POST, pages that send you to /login
// without it), a real forward proxy that wants credentials, real Redis and worker processes. The site's items exist
// only once its scripts ran, and its item pages are served only to a browser that carries the consent cookie the
// home page's script set: the cookie has to go from one page's context, through the session in Redis, into the
// next page's context.

const ITEMS = 6;
const USER = 'ann';
const PASSWORD = 'Render-Pw-38k';
const PROXY_USER = 'rx';
const PROXY_PASSWORD = 'Proxy-Pw-52z';

interface Site {
  url: string;
  server: Server;
  logins: number;
  failedLogins: number;
  /** Requests that did not come through the proxy. */
  direct: string[];
  /** Protected pages asked for without a valid auth cookie. */
  unauthorised: number;
  /** Item pages asked for without the consent cookie. */
  noConsent: number;
}

/** A page whose script builds `inner` into <main> after a moment, then marks the page ready. */
function scripted(inner: string, extraScript = ''): string {
  return `<!doctype html><html><body><a class="logout" href="/logout">log out</a><main></main><script>setTimeout(() => { ${extraScript} document.querySelector('main').innerHTML = ${JSON.stringify(inner)}; document.body.classList.add('ready'); }, 100);</script></body></html>`;
}

async function loginSite(otherUrl: () => string): Promise<Site> {
  const csrf = new Map<string, string>();
  const auth = new Set<string>();
  const site = { url: '', logins: 0, failedLogins: 0, direct: [] as string[], unauthorised: 0, noConsent: 0 } as Site;
  const page = (res: ServerResponse, status: number, html: string, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', ...headers });
    res.end(html);
  };
  site.server = createServer((req, res) => {
    void (async () => {
      if (req.headers['x-test-proxy'] !== '1') site.direct.push(req.url ?? '');
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      const cookies = cookiesOf(req);
      if (path === '/robots.txt') return page(res, 404, '');
      // Open pages for the address-guard test: a script reads a private address, directly and through a redirect.
      if (path === '/open/leak') {
        return page(
          res,
          200,
          `<!doctype html><body><main></main><script>Promise.all([fetch(${JSON.stringify(otherUrl())} + '/secret'), fetch('/open/bounce')].map((p) => p.then((r) => r.text(), () => 'refused'))).then((t) => { document.querySelector('main').innerHTML = '<h1 class="title">' + t.join(' ') + '</h1>'; document.body.classList.add('ready'); });</script></body>`,
        );
      }
      if (path === '/open/bounce') return res.writeHead(302, { location: `${otherUrl()}/secret` }).end();
      if (path === '/login' && req.method === 'GET') {
        let sid = cookies.get('sid');
        const headers: Record<string, string> = {};
        if (!sid || !csrf.has(sid)) {
          sid = randomBytes(8).toString('hex');
          csrf.set(sid, randomBytes(8).toString('hex'));
          headers['set-cookie'] = `sid=${sid}; Path=/; HttpOnly`;
        }
        return page(
          res,
          200,
          `<form method="post" action="/login"><input type="hidden" name="csrf" value="${csrf.get(sid)}"><input name="user"><input type="password" name="password"></form>`,
          headers,
        );
      }
      if (path === '/login' && req.method === 'POST') {
        let body = '';
        for await (const chunk of req) body += chunk;
        const form = new URLSearchParams(body);
        const sid = cookies.get('sid');
        if (
          sid === undefined ||
          csrf.get(sid) !== form.get('csrf') ||
          form.get('user') !== USER ||
          form.get('password') !== PASSWORD
        ) {
          site.failedLogins++;
          return page(res, 403, 'bad login');
        }
        site.logins++;
        const token = randomBytes(8).toString('hex');
        auth.add(token);
        res.writeHead(302, { location: '/', 'set-cookie': `auth=${token}; Path=/; HttpOnly` });
        return res.end();
      }
      if (!auth.has(cookies.get('auth') ?? '')) {
        site.unauthorised++;
        return res.writeHead(302, { location: '/login' }).end();
      }
      if (path === '/') {
        const links = Array.from(
          { length: ITEMS },
          (_, i) => `<a class="item" href="/item/${i + 1}">${i + 1}</a>`,
        ).join('');
        return page(res, 200, scripted(links, `document.cookie = 'consent=yes; path=/';`));
      }
      const m = /^\/item\/(\d+)$/.exec(path);
      if (!m) return page(res, 404, 'no such page');
      if (cookies.get('consent') !== 'yes') {
        site.noConsent++;
        return page(res, 200, scripted('<p>Please accept our cookies</p>'));
      }
      return page(res, 200, scripted(`<h1 class="title">Item ${m[1]}</h1>`));
    })();
  });
  await new Promise<void>((r) => site.server.listen(0, '127.0.0.1', r));
  site.url = `http://127.0.0.1:${(site.server.address() as AddressInfo).port}`;
  return site;
}

describe('rendered pages in sessions, logged in, through a proxy (real Chromium, login site, proxy, Redis, workers)', function () {
  this.timeout(180_000);
  let redis: RedisServer;
  let site: Site;
  let proxy: Proxy;
  let other: Server;
  let otherUrl = '';
  const otherHits: string[] = [];
  const saved = { ...process.env };

  before(async function () {
    browserOrSkip(this);
    redis = await startRedis();
    site = await loginSite(() => otherUrl);
    proxy = await forwardProxy(PROXY_USER, PROXY_PASSWORD);
    other = createServer((req, res) => {
      otherHits.push(req.url ?? '');
      res.writeHead(200, { 'access-control-allow-origin': '*' }).end('secret');
    });
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
    otherUrl = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
  });
  after(async () => {
    process.env = saved;
    site?.server.closeAllConnections();
    site?.server.close();
    proxy?.server.closeAllConnections();
    proxy?.server.close();
    other?.closeAllConnections();
    other?.close();
    await redis?.stop();
  });

  it("renders logged in with the session's cookies, sends the cookies its scripts set back to the session, all through the proxy", async () => {
    Object.assign(process.env, { CRAWL_STUDIO_PROXY_USER: PROXY_USER, CRAWL_STUDIO_PROXY_PASSWORD: PROXY_PASSWORD });
    const secretEnv = { CRAWL_STUDIO_SITE_USER: USER, CRAWL_STUDIO_SITE_PASSWORD: PASSWORD };
    const task = await writeTask(`name: browser-login
start: [${site.url}/]
request: { robots: true, retries: { attempts: 3, delay: 10ms } }
session: { pool: 1 }
login:
  url: ${site.url}/login
  form: { fields: { user: '\${CRAWL_STUDIO_SITE_USER}', password: '\${CRAWL_STUDIO_SITE_PASSWORD}' } }
  check: { selector: .logout }
proxy:
  urls: ['http://\${CRAWL_STUDIO_PROXY_USER}:\${CRAWL_STUDIO_PROXY_PASSWORD}@127.0.0.1:${proxy.port}']
browser: { waitFor: { selector: .ready }, timeout: 10s }
rules:
  - name: home
    follow: [{ selector: a.item, to: item }]
  - name: item
    items: [{ type: item, key: [title], fields: { title: h1.title } }]
`);
    const logs: string[] = [];
    const cmdlines = new Map<number, string>();
    const s = session(task, redis.url, {
      workers: 1,
      concurrency: 2,
      secretEnv,
      lockDurationMs: 30_000,
      stalledIntervalMs: 5_000,
      onWorkerLog: (_pid, line) => logs.push(line),
      onProgress: () => {
        // Every process below the workers: Chromium, its renderers and helpers.
        for (const w of s.workers()) {
          for (const pid of [w.pid, ...descendants(w.pid).map((p) => p.pid)]) {
            try {
              cmdlines.set(pid, readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' '));
            } catch {
              // Gone meanwhile.
            }
          }
        }
      },
    });
    const result = await s.run();
    const dump = await redisDump(redis.url);
    const r = new Redis(redis.url);
    const sessionHash = await r.hgetall(taskKeys(task.name).session(0));
    r.disconnect();
    await s.close();
    const pages = await bufferedPages(redis.url, task.name);
    const titles = pages.flatMap((p) => p.items.map((i) => String(i.data.title))).sort();
    const log = logs.join('\n');
    const stats = result.status.stats!;

    assert.equal(stats.failed, 0, `no page failed: ${JSON.stringify(stats.failures)}\n${log}`);
    assert.deepEqual(titles, Array.from({ length: ITEMS }, (_, i) => `Item ${i + 1}`).sort(), log);
    assert.equal(site.failedLogins, 0, 'the login sent the CSRF token, the session cookie and the credentials');
    assert.equal(site.logins, 1, 'one session, logged in once');
    assert.equal(
      site.unauthorised,
      0,
      'every rendered page carried the auth cookie of the login (HttpOnly, set on a redirect)',
    );
    assert.equal(site.noConsent, 0, "the consent cookie the home page's script set reached every item page");
    assert.ok(
      Object.keys(sessionHash).some((k) => /^c:127\.0\.0\.1;\/;consent$/.test(k)),
      `the script's cookie is in the session: ${Object.keys(sessionHash).join(', ')}`,
    );
    assert.deepEqual(site.direct, [], "every request to the site went through the proxy, the browser's included");
    const rendered = proxy.forwarded.filter((u) => /\/item\/\d+$/.test(u));
    assert.equal(
      rendered.length,
      ITEMS,
      `the item pages went through the proxy once each: ${proxy.forwarded.join(', ')}`,
    );
    assert.equal(proxy.refused, 0, 'the proxy got its credentials on every request');
    assert.ok(
      [...cmdlines.values()].some((c) => /chromium/.test(c)),
      'Chromium ran under the worker',
    );
    for (const secret of [PASSWORD, PROXY_PASSWORD]) {
      assert.ok(!dump.includes(secret), 'no credential in Redis');
      assert.ok(!log.includes(secret), `no credential in the worker's log:\n${log}`);
      for (const [pid, line] of cmdlines)
        assert.ok(!line.includes(secret), `process ${pid}'s command line holds a credential: ${line}`);
    }
    // The proxy's credentials never reach Chromium: it knows only the worker's own loopback proxy.
    for (const line of cmdlines.values())
      assert.ok(!line.includes(String(proxy.port)), `a process was told the proxy's address: ${line}`);
  });

  it('keeps the address guard through a proxy, and moves on from a proxy that does not answer', async () => {
    Object.assign(process.env, { CRAWL_STUDIO_PROXY_USER: PROXY_USER, CRAWL_STUDIO_PROXY_PASSWORD: PROXY_PASSWORD });
    const dead = await freePort();
    const forwarded = proxy.forwarded.length;
    const task = await writeTask(`name: browser-proxy-guard
start: [${site.url}/open/leak]
request: { robots: false, retries: { attempts: 3, delay: 10ms } }
proxy:
  urls:
    - 'http://\${CRAWL_STUDIO_PROXY_USER}:\${CRAWL_STUDIO_PROXY_PASSWORD}@127.0.0.1:${dead}'
    - 'http://\${CRAWL_STUDIO_PROXY_USER}:\${CRAWL_STUDIO_PROXY_PASSWORD}@127.0.0.1:${proxy.port}'
  rotate: per-request
browser: { waitFor: { selector: .ready }, timeout: 10s }
rules:
  - name: page
    items: [{ type: page, key: [title], fields: { title: h1.title } }]
`);
    const logs: string[] = [];
    const s = session(task, redis.url, {
      workers: 1,
      concurrency: 2,
      lockDurationMs: 30_000,
      stalledIntervalMs: 5_000,
      onWorkerLog: (_pid, line) => logs.push(line),
    });
    const result = await s.run();
    await s.close();
    const log = logs.join('\n');
    const pages = await bufferedPages(redis.url, task.name);
    assert.equal(result.status.stats!.failed, 0, `${JSON.stringify(result.status.stats!.failures)}\n${log}`);
    assert.deepEqual(
      pages.flatMap((p) => p.items.map((i) => i.data.title)),
      ['refused refused'],
      'the page rendered, and its script got nothing from the private address',
    );
    assert.deepEqual(otherHits, [], 'no request reached the private address');
    const otherHost = new URL(otherUrl).host;
    assert.ok(
      !proxy.forwarded.slice(forwarded).some((u) => u.includes(otherHost)),
      `nothing for the private address was sent to the proxy: ${proxy.forwarded.slice(forwarded).join(', ')}`,
    );
    assert.ok(
      proxy.forwarded.slice(forwarded).some((u) => u.endsWith('/open/bounce')),
      "the page's own requests went through the proxy",
    );
    assert.ok(
      logs.some((l) => l.includes(`proxy http://127.0.0.1:${dead}`) && /another proxy/.test(l)),
      `the dead proxy was named and another tried:\n${log}`,
    );
    assert.ok(!log.includes(PROXY_PASSWORD), 'no credential in the log');
  });
});
