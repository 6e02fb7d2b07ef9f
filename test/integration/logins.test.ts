import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readdirSync, readFileSync } from 'node:fs';
import { startRedis, type RedisServer } from '../support/services';
import { session, writeTask } from '../support/crawl';
import { FetchFailure, fetchPage } from '../../src/worker/fetcher';
import { freePort } from '../support/services';
import { forwardProxy, type Proxy } from '../support/proxy';
import { redisDump } from '../support/redisDump';
import { cookiesOf, requestBody as body } from '../support/httpRequest';

// A crawl that must log in, through a proxy that wants credentials: a real login site on 127.0.0.1 (a session
// cookie, a CSRF token in the form, an auth cookie after the POST, protected pages that send you to /login, and a
// block after a few pages per login), a real forward proxy (absolute-form requests and CONNECT, Proxy-Authorization
// checked), a real redis-server and real worker processes. The credentials are looked for afterwards in Redis,
// the workers' logs and their command lines.

const ITEMS = 12;
/** Pages an auth cookie may fetch before the site answers 403: the crawl has to retire sessions and log in again. */
const BLOCK_AFTER = 4;
const USER = 'ann';
const PASSWORD = 'Sesame-Pw-91x';
const PROXY_USER = 'px';
const PROXY_PASSWORD = 'Proxy-Pw-77q';

interface LoginSite {
  url: string;
  server: Server;
  logins: number;
  failedLogins: number;
  /** Requests that did not come through the proxy. */
  direct: string[];
  /** Protected pages served without a valid auth cookie. */
  unauthorised: number;
  blocks: number;
  /** Sitemaps served (to a logged-in session only). */
  sitemaps: number;
}

async function loginSite(): Promise<LoginSite> {
  const csrf = new Map<string, string>(); // sid -> token
  const auth = new Map<string, number>(); // auth cookie -> pages served
  const site = {
    url: '',
    logins: 0,
    failedLogins: 0,
    direct: [] as string[],
    unauthorised: 0,
    blocks: 0,
    sitemaps: 0,
  } as LoginSite;
  const page = (res: ServerResponse, status: number, html: string, headers: Record<string, string | string[]> = {}) => {
    res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', ...headers });
    res.end(`<!doctype html><html><body>${html}</body></html>`);
  };
  site.server = createServer((req, res) => {
    void (async () => {
      if (req.headers['x-test-proxy'] !== '1') site.direct.push(req.url ?? '');
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      const cookies = cookiesOf(req);
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
          `<form method="post" action="/login"><input type="hidden" name="csrf" value="${csrf.get(sid)}">` +
            `<input name="user"><input type="password" name="password"><input type="checkbox" name="remember"><button type="submit" name="go">Log in</button></form>`,
          headers,
        );
      }
      if (path === '/login' && req.method === 'POST') {
        const form = new URLSearchParams(await body(req));
        const sid = cookies.get('sid');
        const ok =
          sid !== undefined &&
          csrf.get(sid) === form.get('csrf') &&
          form.get('user') === USER &&
          form.get('password') === PASSWORD &&
          !form.has('go') &&
          !form.has('remember');
        if (!ok) {
          site.failedLogins++;
          return page(res, 403, 'bad login');
        }
        site.logins++;
        const token = randomBytes(8).toString('hex');
        auth.set(token, 0);
        res.writeHead(302, { location: '/', 'set-cookie': `auth=${token}; Path=/; HttpOnly` });
        return res.end();
      }
      const token = cookies.get('auth');
      if (token === undefined || !auth.has(token)) {
        site.unauthorised++;
        res.writeHead(302, { location: '/login' });
        return res.end();
      }
      if (path === '/sitemap.xml') {
        site.sitemaps++;
        res.writeHead(200, { 'content-type': 'application/xml' });
        return res.end(
          `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${[1, 2, 3].map((i) => `<url><loc>${site.url}/item/${i}</loc></url>`).join('')}</urlset>`,
        );
      }
      if (path === '/') {
        return page(
          res,
          200,
          `<a class="logout" href="/logout">log out</a>` +
            Array.from({ length: ITEMS }, (_, i) => `<a class="item" href="/item/${i + 1}">${i + 1}</a>`).join(''),
        );
      }
      const m = /^\/item\/(\d+)$/.exec(path);
      if (!m) return page(res, 404, 'no such page');
      const served = auth.get(token)! + 1;
      auth.set(token, served);
      if (served > BLOCK_AFTER) {
        site.blocks++;
        return page(res, 403, 'too many requests for this login');
      }
      return page(res, 200, `<a class="logout" href="/logout">log out</a><h1 class="title">Item ${m[1]}</h1>`);
    })();
  });
  await new Promise<void>((r) => site.server.listen(0, '127.0.0.1', r));
  site.url = `http://127.0.0.1:${(site.server.address() as AddressInfo).port}`;
  return site;
}

/** Every process below `root`, from /proc/PID/stat's parent field. */
function descendants(root: number): number[] {
  const parent = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      parent.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // Gone meanwhile.
    }
  }
  const out: number[] = [];
  const walk = (pid: number) => {
    for (const [child, pp] of parent) {
      if (pp !== pid) continue;
      out.push(child);
      walk(child);
    }
  };
  walk(root);
  return out;
}

describe('logins, sessions and proxies (real login site, real proxy, real Redis and worker processes)', function () {
  this.timeout(120_000);
  let redis: RedisServer;
  let site: LoginSite;
  let proxy: Proxy;
  const saved = { ...process.env };

  before(async () => {
    redis = await startRedis();
    site = await loginSite();
    proxy = await forwardProxy(PROXY_USER, PROXY_PASSWORD);
  });
  after(async () => {
    process.env = saved;
    site?.server.close();
    proxy?.server.close();
    await redis?.stop();
  });

  it('logs each session in through the form (CSRF token kept), retires blocked sessions, logs in again, and sends every request through the proxy', async () => {
    // What the workers get, by environment only: the proxy's from this process's environment (the supervisor passes
    // it on), the site's as the editor hands over its Secret Storage (secretEnv), not in this process's environment.
    delete process.env.CRAWL_STUDIO_SITE_USER;
    delete process.env.CRAWL_STUDIO_SITE_PASSWORD;
    const secretEnv = { CRAWL_STUDIO_SITE_USER: USER, CRAWL_STUDIO_SITE_PASSWORD: PASSWORD };
    Object.assign(process.env, {
      CRAWL_STUDIO_PROXY_USER: PROXY_USER,
      CRAWL_STUDIO_PROXY_PASSWORD: PROXY_PASSWORD,
    });
    const task = await writeTask(`name: login-site
start: [${site.url}/]
request: { robots: true, retries: { attempts: 6, delay: 10ms } }  # robots.txt through the proxy too
session: { pool: 2, retireOn: { status: [403] } }
login:
  url: ${site.url}/login
  form:
    fields: { user: '\${CRAWL_STUDIO_SITE_USER}', password: '\${CRAWL_STUDIO_SITE_PASSWORD}' }
  check: { selector: .logout }
proxy:
  urls: ['http://\${CRAWL_STUDIO_PROXY_USER}:\${CRAWL_STUDIO_PROXY_PASSWORD}@127.0.0.1:${proxy.port}']
rules:
  - name: home
    follow: [{ selector: a.item, to: item }]
  - name: item
    items: [{ type: item, key: [title], fields: { title: h1.title } }]
`);
    const logs: string[] = [];
    const cmdlines = new Map<number, string>();
    const s = session(task, redis.url, {
      workers: 2,
      concurrency: 2,
      secretEnv,
      onWorkerLog: (pid, line) => logs.push(`${pid}: ${line}`),
    });
    let running = true;
    const watch = (async () => {
      while (running) {
        for (const pid of descendants(process.pid)) {
          try {
            const line = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
            if (line.includes('worker')) cmdlines.set(pid, line);
          } catch {
            // Gone meanwhile.
          }
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const result = await s.run();
    const dump = await redisDump(redis.url);
    await s.close();
    running = false;
    await watch;

    const stats = result.status.stats!;
    const log = logs.join('\n');
    assert.equal(stats.failed, 0, `no page failed: ${JSON.stringify(stats.failures)}\n${log}`);
    assert.equal(stats.items, ITEMS, `every protected item extracted: ${JSON.stringify(stats)}\n${log}`);
    assert.equal(stats.problems, 0, 'no page was read logged out (a login form taken for an item page)');
    assert.equal(site.failedLogins, 0, 'every login sent the CSRF token, the session cookie and the credentials');
    assert.ok(site.blocks > 0, 'the site blocked some sessions (the case under test)');
    assert.ok(
      site.logins > 2,
      `blocked sessions were replaced and logged in again: ${site.logins} logins for a pool of 2`,
    );
    assert.ok(
      site.logins <= 2 + site.blocks,
      `a login per new session, no loop: ${site.logins} logins, ${site.blocks} blocks`,
    );
    assert.deepEqual(site.direct, [], 'every request to the site went through the proxy');
    assert.ok(
      proxy.forwarded.some((u) => u.endsWith('/robots.txt')),
      'robots.txt too',
    );
    assert.equal(proxy.refused, 0, 'the proxy got its credentials on every request');
    assert.ok(
      proxy.forwarded.length >= ITEMS + 1 + 2 * site.logins,
      `the proxy forwarded ${proxy.forwarded.length} requests`,
    );
    assert.ok(cmdlines.size >= 2, `the worker processes were seen: ${[...cmdlines.values()].join('\n')}`);
    for (const secret of [PASSWORD, PROXY_PASSWORD]) {
      assert.ok(!dump.includes(secret), 'no credential in Redis (job data, sessions, streams)');
      assert.ok(!log.includes(secret), `no credential in the workers' logs:\n${log}`);
      for (const [pid, line] of cmdlines)
        assert.ok(!line.includes(secret), `process ${pid}'s command line holds a credential`);
      assert.ok(!JSON.stringify(stats).includes(secret), 'no credential in the run numbers');
    }
    assert.match(dump, /#session:\d/, 'the sessions are kept in Redis');
  });
  it('reads a sitemap that needs the login in a logged-in session, through the proxy, like a page', async () => {
    Object.assign(process.env, {
      CRAWL_STUDIO_SITE_USER: USER,
      CRAWL_STUDIO_SITE_PASSWORD: PASSWORD,
      CRAWL_STUDIO_PROXY_USER: PROXY_USER,
      CRAWL_STUDIO_PROXY_PASSWORD: PROXY_PASSWORD,
    });
    const before = { direct: site.direct.length, sitemaps: site.sitemaps, unauthorised: site.unauthorised };
    const task = await writeTask(`name: login-sitemap
start:
  - sitemap: ${site.url}/sitemap.xml
    rule: item
request: { robots: false, retries: { attempts: 3, delay: 10ms } }
session: { pool: 1 }
login:
  url: ${site.url}/login
  form: { fields: { user: '\${CRAWL_STUDIO_SITE_USER}', password: '\${CRAWL_STUDIO_SITE_PASSWORD}' } }
  check: { selector: .logout }
proxy:
  urls: ['http://\${CRAWL_STUDIO_PROXY_USER}:\${CRAWL_STUDIO_PROXY_PASSWORD}@127.0.0.1:${proxy.port}']
rules:
  - name: item
    items: [{ type: item, key: [title], fields: { title: h1.title } }]
`);
    const logs: string[] = [];
    const s = session(task, redis.url, { workers: 1, concurrency: 2, onWorkerLog: (_pid, line) => logs.push(line) });
    const result = await s.run();
    await s.close();
    const stats = result.status.stats!;
    assert.deepEqual(stats.failures, {}, logs.join('\n'));
    assert.equal(stats.sitemaps, 1);
    assert.equal(stats.items, 3, `the sitemap's pages were crawled: ${JSON.stringify(stats)}\n${logs.join('\n')}`);
    assert.equal(
      site.sitemaps - before.sitemaps,
      1,
      'the sitemap was served to a logged-in session (not sent to /login)',
    );
    assert.equal(site.unauthorised, before.unauthorised, 'no request without the session cookie');
    assert.deepEqual(site.direct.slice(before.direct), [], 'the sitemap and its pages went through the proxy');
  });

  it('reports a failed login once per session and fails its pages as login, without retrying; a refusing proxy is named and skipped', async () => {
    Object.assign(process.env, {
      CRAWL_STUDIO_SITE_USER: USER,
      CRAWL_STUDIO_SITE_PASSWORD: 'wrong-password-x',
      CRAWL_STUDIO_PROXY_USER: PROXY_USER,
      CRAWL_STUDIO_PROXY_PASSWORD: PROXY_PASSWORD,
    });
    const dead = await freePort(); // nothing listens there: connections are refused
    const before = { logins: site.logins, failed: site.failedLogins };
    const task = await writeTask(`name: login-fails
start: [${site.url}/, ${site.url}/item/1, ${site.url}/item/2, ${site.url}/item/3]
request: { robots: false, retries: { attempts: 3, delay: 10ms } }
session: { pool: 2 }
login:
  url: ${site.url}/login
  form: { fields: { user: '\${CRAWL_STUDIO_SITE_USER}', password: '\${CRAWL_STUDIO_SITE_PASSWORD}' } }
proxy:
  urls:
    - 'http://\${CRAWL_STUDIO_PROXY_USER}:\${CRAWL_STUDIO_PROXY_PASSWORD}@127.0.0.1:${dead}'
    - 'http://\${CRAWL_STUDIO_PROXY_USER}:\${CRAWL_STUDIO_PROXY_PASSWORD}@127.0.0.1:${proxy.port}'
  rotate: per-request
rules: [{ name: page }]
`);
    const logs: string[] = [];
    const s = session(task, redis.url, { workers: 2, concurrency: 2, onWorkerLog: (_pid, line) => logs.push(line) });
    const result = await s.run();
    await s.close();
    const log = logs.join('\n');
    const stats = result.status.stats!;
    assert.equal(stats.failed, 4, `every page failed: ${JSON.stringify(stats)}\n${log}`);
    assert.deepEqual(stats.failures, { login: 4 }, log);
    const attempts = site.failedLogins - before.failed;
    assert.ok(attempts >= 1 && attempts <= 2, `one login attempt per session of the pool of 2, no loop: ${attempts}`);
    assert.equal(site.logins, before.logins);
    const reported = logs.filter((l) => / error login to .* failed: HTTP 403 \(session \d\)/.test(l));
    assert.equal(reported.length, attempts, `each failed login said once, with its status:\n${log}`);
    assert.ok(
      logs.some((l) => l.includes(`proxy http://127.0.0.1:${dead}`) && /another proxy/.test(l)),
      `the refusing proxy was named:\n${log}`,
    );
    assert.ok(!log.includes(PROXY_PASSWORD) && !log.includes('wrong-password-x'), `no credential in the logs:\n${log}`);
  });

  it('fails a page at once when its proxy refuses the credentials (407), naming the proxy and not the credentials', async () => {
    Object.assign(process.env, {
      CRAWL_STUDIO_PROXY_USER: PROXY_USER,
      CRAWL_STUDIO_PROXY_PASSWORD: 'wrong-proxy-pw-3',
    });
    const refused = proxy.refused;
    const task = await writeTask(`name: proxy-407
start: [${site.url}/item/1, ${site.url}/item/2, ${site.url}/item/3]
request: { robots: false, retries: { attempts: 3, delay: 10ms } }
proxy:
  urls: ['http://\${CRAWL_STUDIO_PROXY_USER}:\${CRAWL_STUDIO_PROXY_PASSWORD}@127.0.0.1:${proxy.port}']
rules: [{ name: page }]
`);
    const logs: string[] = [];
    const s = session(task, redis.url, { workers: 1, concurrency: 2, onWorkerLog: (_pid, line) => logs.push(line) });
    const result = await s.run();
    await s.close();
    const log = logs.join('\n');
    const stats = result.status.stats!;
    assert.deepEqual(
      stats.failures,
      { 'proxy-auth': 3 },
      `every page failed as proxy-auth: ${JSON.stringify(stats)}\n${log}`,
    );
    assert.equal(proxy.refused - refused, 3, 'one request a page: a 407 is not retried as if it were transient');
    assert.ok(!logs.some((l) => /will retry/.test(l)), log);
    assert.ok(
      logs.some((l) => l.includes(`proxy http://127.0.0.1:${proxy.port} refused its credentials (HTTP 407)`)),
      `the proxy named:\n${log}`,
    );
    assert.ok(
      !log.includes('wrong-proxy-pw-3') && !log.includes(PROXY_USER + ':'),
      `no credential in the logs:\n${log}`,
    );
  });

  it("logs in afresh in a new run: the previous run's logged-in session is not reused, so changed credentials are tried", async () => {
    const yaml = `name: login-rerun
start: [${site.url}/item/1]
request: { robots: false, retries: { attempts: 2, delay: 10ms } }
session: { pool: 1 }
login:
  url: ${site.url}/login
  form: { fields: { user: '\${CRAWL_STUDIO_SITE_USER}', password: '\${CRAWL_STUDIO_SITE_PASSWORD}' } }
  check: { selector: .logout }
rules:
  - name: item
    items: [{ type: item, key: [title], fields: { title: h1.title } }]
`;
    const crawl = async (password: string) => {
      const task = await writeTask(yaml);
      const logs: string[] = [];
      const s = session(task, redis.url, {
        workers: 1,
        concurrency: 1,
        secretEnv: { CRAWL_STUDIO_SITE_USER: USER, CRAWL_STUDIO_SITE_PASSWORD: password },
        onWorkerLog: (_pid, line) => logs.push(line),
      });
      const result = await s.run();
      await s.close();
      return { stats: result.status.stats!, log: logs.join('\n') };
    };
    delete process.env.CRAWL_STUDIO_SITE_USER;
    delete process.env.CRAWL_STUDIO_SITE_PASSWORD;
    const before = { logins: site.logins, failed: site.failedLogins };
    const first = await crawl(PASSWORD);
    assert.deepEqual(first.stats.failures, {}, first.log);
    assert.equal(first.stats.items, 1);
    assert.equal(site.logins - before.logins, 1);
    const second = await crawl('changed-and-wrong-7');
    assert.equal(site.failedLogins - before.failed, 1, `the new run tried its own credentials:\n${second.log}`);
    assert.deepEqual(
      second.stats.failures,
      { login: 1 },
      `a wrong password fails, though the last run's session was logged in:\n${second.log}`,
    );
  });

  it('checks the target, not the proxy, against private addresses', async () => {
    const forwarded = proxy.forwarded.length;
    const url = `http://${PROXY_USER}:${PROXY_PASSWORD}@127.0.0.1:${proxy.port}`;
    const opts = {
      timeoutMs: 5_000,
      maxBytes: 1e6,
      maxRedirects: 2,
      headers: {},
      userAgent: 'test',
      privateAllowed: [] as string[],
      proxy: url,
    };
    await assert.rejects(
      fetchPage(`${site.url}/login`, opts),
      (err: unknown) => err instanceof FetchFailure && err.cause_ === 'blocked',
    );
    await assert.rejects(
      fetchPage('http://localhost.test-private.invalid/', {
        ...opts,
        resolver: async () => [{ address: '10.1.2.3', family: 4 }],
      }),
      (err: unknown) => err instanceof FetchFailure && err.cause_ === 'blocked',
    );
    assert.equal(proxy.forwarded.length, forwarded, 'nothing was sent to the proxy');
    // The target allowed (a start host), the same proxy on a loopback address is used.
    const page = await fetchPage(`${site.url}/login`, { ...opts, privateAllowed: [new URL(site.url).host] });
    assert.equal(page.status, 200);
    assert.equal(proxy.forwarded.length, forwarded + 1);
    // An https target goes through a CONNECT tunnel with the same credentials (TLS then fails here: the site
    // speaks plain HTTP, which is enough to see the tunnel was asked for and granted).
    const refused = proxy.refused;
    const host = new URL(site.url).host;
    await assert.rejects(
      fetchPage(`https://${host}/login`, { ...opts, privateAllowed: [host] }),
      (e: unknown) => e instanceof FetchFailure && !/connect is not a function/.test(e.message),
    );
    assert.deepEqual(proxy.forwarded.slice(forwarded + 1), [`CONNECT ${host}`]);
    assert.equal(proxy.refused, refused, 'the tunnel was authorised');
  });
});
