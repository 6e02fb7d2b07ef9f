import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startRedis, type RedisServer } from '../support/services';
import { bufferedPages, session, writeTask } from '../support/crawl';
import { cookiesOf, requestBody as body } from '../support/httpRequest';

// Sessions that keep Retry-After (issue 30, item 1): a real site on 127.0.0.1 whose every page answers its first
// request, and any request within 2 s of its last 429, with 429 + `Retry-After: 2`, crawled by real worker processes
// on a real redis-server, in a pool of sessions and in one logged-in session. Every page must be stored, none lost,
// and no retry may reach the server before its Retry-After, read from the server's own clock.

const PAGES = 20;
const RETRY_AFTER_S = 2;
/** Date.now() is whole milliseconds on both sides: a gap measured at the server may read a millisecond short. */
const CLOCK_GRANULARITY_MS = 2;
const USER = 'rita';
const PASSWORD = 'Ra-Pw-5521z';

interface Hit {
  readonly at: number;
  readonly status: number;
}

interface Site {
  url: string;
  server: Server;
  /** Every request for a page, in the order the server received them. */
  hits: Map<string, Hit[]>;
  logins: number;
  /** Page requests without a valid login (when the site wants one). */
  unauthorised: number;
}

async function retryAfterSite(needsLogin: boolean): Promise<Site> {
  const tokens = new Set<string>();
  const last429 = new Map<string, number>();
  const site: Site = { url: '', server: undefined as unknown as Server, hits: new Map(), logins: 0, unauthorised: 0 };
  const html = (res: ServerResponse, status: number, content: string, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', ...headers });
    res.end(`<!doctype html><html><body>${content}</body></html>`);
  };
  site.server = createServer((req, res) => {
    const at = Date.now();
    void (async () => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      if (path === '/login' && req.method === 'GET') {
        return html(
          res,
          200,
          '<form method="post" action="/login"><input name="user"><input type="password" name="password"></form>',
        );
      }
      if (path === '/login' && req.method === 'POST') {
        const form = new URLSearchParams(await body(req));
        if (form.get('user') !== USER || form.get('password') !== PASSWORD) return html(res, 403, 'bad login');
        site.logins++;
        const token = randomBytes(8).toString('hex');
        tokens.add(token);
        res.writeHead(302, { location: '/welcome', 'set-cookie': `auth=${token}; Path=/; HttpOnly` });
        return res.end();
      }
      if (path === '/welcome') return html(res, 200, '<a class="logout" href="/logout">log out</a>');
      const m = /^\/p\/(\d+)$/.exec(path);
      if (!m) return html(res, 404, 'no such page');
      if (needsLogin && !tokens.has(cookiesOf(req).get('auth') ?? '')) {
        site.unauthorised++;
        res.writeHead(302, { location: '/login' });
        return res.end();
      }
      const hits = site.hits.get(path) ?? [];
      site.hits.set(path, hits);
      const before = last429.get(path);
      if (before === undefined || at - before < RETRY_AFTER_S * 1000) {
        last429.set(path, at);
        hits.push({ at, status: 429 });
        return html(res, 429, 'slow down', { 'retry-after': String(RETRY_AFTER_S) });
      }
      hits.push({ at, status: 200 });
      return html(res, 200, `<h1 class="title">Page ${m[1]}</h1>`);
    })();
  });
  await new Promise<void>((r) => site.server.listen(0, '127.0.0.1', r));
  site.url = `http://127.0.0.1:${(site.server.address() as AddressInfo).port}`;
  return site;
}

/** Retries that reached the server before the Retry-After of the 429 before them, as the server's clock saw them. */
function earlyRetries(site: Site): string[] {
  const early: string[] = [];
  for (const [path, hits] of site.hits) {
    for (let i = 1; i < hits.length; i++) {
      const gap = hits[i]!.at - hits[i - 1]!.at;
      if (hits[i - 1]!.status === 429 && gap < RETRY_AFTER_S * 1000 - CLOCK_GRANULARITY_MS)
        early.push(`${path}: ${gap} ms after its 429`);
    }
  }
  return early;
}

function taskYaml(site: Site, name: string, access: string): string {
  const start = Array.from({ length: PAGES }, (_, i) => `${site.url}/p/${i + 1}`).join(', ');
  return `name: ${name}
start: [${start}]
request: { robots: false }
${access}
rules:
  - name: page
    items: [{ type: page, key: [title], fields: { title: h1.title } }]
`;
}

describe('sessions keep Retry-After (real 429 site, real Redis and worker processes)', function () {
  this.timeout(180_000);
  let redis: RedisServer;
  const saved = { ...process.env };
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    process.env = saved;
    await redis?.stop();
  });

  async function crawl(site: Site, yaml: string, extra: Parameters<typeof session>[2] = {}) {
    const task = await writeTask(yaml);
    const logs: string[] = [];
    const s = session(task, redis.url, {
      workers: 2,
      concurrency: 4,
      onWorkerLog: (pid, line) => logs.push(`${pid}: ${line}`),
      ...extra,
    });
    try {
      const result = await s.run();
      const pages = (await bufferedPages(redis.url, task.name)).filter((p) => p.status === 200);
      return {
        stats: result.status.stats!,
        stored: new Set(pages.map((p) => new URL(p.url).pathname)),
        log: logs.join('\n'),
      };
    } finally {
      await s.close();
    }
  }

  function assertAllStoredInTime(site: Site, r: Awaited<ReturnType<typeof crawl>>): void {
    const hits = [...site.hits.values()].flat();
    const summary = `${JSON.stringify(r.stats.failures)}; ${hits.length} requests, ${hits.filter((h) => h.status === 429).length} answered 429`;
    assert.equal(r.stored.size, PAGES, `every page stored: ${r.stored.size} of ${PAGES} (${summary})\n${r.log}`);
    assert.equal(r.stats.failed, 0, `no page lost: ${summary}\n${r.log}`);
    assert.equal(r.stats.items, PAGES, summary);
    assert.deepEqual(earlyRetries(site), [], `no retry before its Retry-After (${summary})`);
    assert.ok(
      hits.some((h) => h.status === 429),
      'the site did answer 429 (the case under test)',
    );
  }

  it('with a pool of 4 sessions: every page stored, none lost, no retry before its Retry-After', async () => {
    const site = await retryAfterSite(false);
    try {
      const r = await crawl(site, taskYaml(site, 'ra-pool', 'session: { pool: 4 }'));
      assertAllStoredInTime(site, r);
    } finally {
      site.server.close();
    }
  });

  it('with one logged-in session: every page stored, none lost, no retry before its Retry-After, one login', async () => {
    const site = await retryAfterSite(true);
    try {
      const secretEnv = { CRAWL_STUDIO_RA_USER: USER, CRAWL_STUDIO_RA_PASSWORD: PASSWORD };
      const access = `session: { pool: 1 }
login:
  url: ${site.url}/login
  form: { fields: { user: '\${CRAWL_STUDIO_RA_USER}', password: '\${CRAWL_STUDIO_RA_PASSWORD}' } }
  check: { selector: .logout }`;
      const r = await crawl(site, taskYaml(site, 'ra-login', access), { secretEnv });
      assertAllStoredInTime(site, r);
      assert.equal(
        site.logins,
        1,
        `a 429 with Retry-After is a wait, not a block: the one session stays logged in (${site.logins} logins)\n${r.log}`,
      );
      assert.equal(site.unauthorised, 0, 'no page was requested logged out');
    } finally {
      site.server.close();
    }
  });
});
