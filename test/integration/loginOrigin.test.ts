import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeTask } from '../support/crawl';
import { createAccess } from '../../src/worker/access';
import { FetchFailure } from '../../src/worker/fetcher';
import { fetchOptions } from '../../src/worker/processor';
import { MemorySessions } from '../../src/worker/sessions';
import { requestBody } from '../support/httpRequest';

// Login credentials go only to the login's origin (issue 35, item 1): a login page whose form posts to another
// server, or whose own endpoint answers 307 to another server, must not hand that server the password. Two real
// HTTP servers on 127.0.0.1 (two origins by port), the worker's own access code, a session in memory.

const PASSWORD = 'Origin-Pw-4417';

interface Collector {
  url: string;
  server: Server;
  /** Every request body it received. */
  bodies: string[];
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function collector(): Promise<Collector> {
  const c = { bodies: [] as string[] } as Collector;
  c.server = createServer((req, res) => {
    void requestBody(req).then((b) => {
      c.bodies.push(`${req.method} ${req.url} ${b}`);
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html><body><a class="logout" href="/logout">out</a></body></html>');
    });
  });
  c.url = await listen(c.server);
  return c;
}

/** A login site whose form posts to `action` (absolute); its own /post answers 307 to `redirect`. */
async function loginSite(
  action: () => string,
  redirect: () => string,
): Promise<{ url: string; server: Server; posts: number }> {
  const site = { posts: 0 } as { url: string; server: Server; posts: number };
  site.server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (path === '/login') {
      res.writeHead(200, { 'content-type': 'text/html' });
      return res.end(
        `<html><body><form method="post" action="${action()}"><input type="hidden" name="csrf" value="t1"><input name="user"><input type="password" name="password"></form></body></html>`,
      );
    }
    if (path === '/post') {
      site.posts++;
      res.writeHead(307, { location: `${redirect()}/collect` });
      return res.end();
    }
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<html><body><a class="logout" href="/logout">out</a><h1>members</h1></body></html>');
  });
  site.url = await listen(site.server);
  return site;
}

describe('login credentials go only to the login origin (real HTTP servers)', function () {
  this.timeout(30_000);
  let evil: Collector;
  let site: Awaited<ReturnType<typeof loginSite>>;
  let action = '';

  before(async () => {
    evil = await collector();
    site = await loginSite(
      () => action,
      () => evil.url,
    );
  });
  after(() => {
    evil?.server.close();
    site?.server.close();
  });

  async function tryLogin(): Promise<FetchFailure> {
    // allowPrivate: the address guard would stop the other loopback server anyway; the origin rule must stand alone.
    const task = await writeTask(`name: origin
start: [${site.url}/]
scope: { allowPrivate: true }
session: { pool: 1 }
login:
  url: ${site.url}/login
  form: { fields: { user: ann, password: '\${CRAWL_STUDIO_SITE_PASSWORD}' } }
  check: { selector: .logout }
rules: [{ name: home, match: ['**'] }]
`);
    const env = { CRAWL_STUDIO_SITE_PASSWORD: PASSWORD };
    const logs: string[] = [];
    const access = createAccess(
      task,
      new MemorySessions(task.session!),
      (_l, m) => logs.push(m),
      fetchOptions(task),
      env,
    )!;
    const err = await access.fetch(`${site.url}/`).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(err instanceof FetchFailure, `the login must fail, got ${String(err)}`);
    assert.equal(err.cause_, 'login');
    assert.ok(!err.message.includes(PASSWORD) && !logs.join('\n').includes(PASSWORD), 'no message holds the password');
    return err;
  }

  it('refuses a form whose action is on another origin: that server receives nothing', async () => {
    action = `${evil.url}/collect`;
    const err = await tryLogin();
    assert.match(
      err.message,
      new RegExp(
        `posts to ${evil.url.replace(/\./g, '\\.')}, another origin than login\\.url's \\(${site.url.replace(/\./g, '\\.')}\\)`,
      ),
    );
    assert.deepEqual(evil.bodies, [], 'the other origin received no request');
  });

  it('refuses a 307 redirect that would carry the credentials to another origin', async () => {
    action = `${site.url}/post`;
    const err = await tryLogin();
    assert.equal(site.posts, 1, 'the login origin got the form');
    assert.match(err.message, /redirected \(HTTP 307\) to http:\/\/127\.0\.0\.1:\d+, another origin than login\.url's/);
    assert.ok(err.message.includes(evil.url));
    assert.deepEqual(evil.bodies, [], 'the other origin received no request');
  });
});
