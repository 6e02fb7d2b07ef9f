import assert from 'node:assert/strict';
import { FetchFailure, fetchPage, type FetchOptions } from '../../src/worker/fetcher';
import { freePort, serveHttp, startRedis, type HttpServer, type RedisServer } from '../support/services';
import { startSocks5, type SocksServer } from '../support/socks';
import { session, writeTask } from '../support/crawl';

// SOCKS5 proxies (issue 17), through undici's own SOCKS5 dispatcher: a real SOCKS5 server on 127.0.0.1 (written in
// test/support/socks.ts, with username/password authentication), credentials from the environment, rotation and a
// refusing proxy skipped as for HTTP proxies, and the private-address guard on the target, never on the proxy.

const USER = 'sx';
const PASSWORD = 'Socks-Pw:7/z@';

describe('SOCKS5 proxies (real SOCKS5 server, real Redis and worker processes)', function () {
  this.timeout(90_000);
  let site: HttpServer;
  let socks: SocksServer;
  let redis: RedisServer;
  /** The client port of each request the site served. */
  const seen: { path: string; port: number }[] = [];
  const saved = { ...process.env };
  const proxyUrl = () => `socks5://${USER}:${encodeURIComponent(PASSWORD)}@127.0.0.1:${socks.port}`;
  const opts = (extra: Partial<FetchOptions> = {}): FetchOptions => ({
    timeoutMs: 5_000,
    maxBytes: 1e6,
    maxRedirects: 2,
    headers: {},
    userAgent: 'test',
    privateAllowed: [new URL(site.url).host],
    proxy: proxyUrl(),
    ...extra,
  });

  before(async () => {
    site = await serveHttp((req, res) => {
      seen.push({ path: req.url ?? '', port: req.socket.remotePort! });
      res.setHeader('content-type', 'text/html');
      const n = /^\/p(\d+)$/.exec(req.url ?? '')?.[1];
      res.end(
        req.url === '/'
          ? Array.from({ length: 6 }, (_, i) => `<a href="/p${i + 1}">${i + 1}</a>`).join('')
          : `<h1>page ${n}</h1>`,
      );
    });
    socks = await startSocks5({ user: USER, password: PASSWORD });
    redis = await startRedis();
  });
  after(async () => {
    process.env = saved;
    await socks?.close();
    await site?.close();
    await redis?.stop();
  });

  it('fetches through the proxy with its credentials; the target name goes to the proxy', async () => {
    const before = socks.targets.length;
    const page = await fetchPage(`${site.url}/p1`, opts());
    assert.equal(page.status, 200);
    assert.match(page.body, /page 1/);
    assert.deepEqual(socks.targets.slice(before), [new URL(site.url).host]);
    // A name, not an address: the proxy resolves it (socks5h).
    const byName = await fetchPage(
      `http://localhost:${new URL(site.url).port}/p2`,
      opts({
        privateAllowed: [`localhost:${new URL(site.url).port}`],
        proxy: proxyUrl().replace('socks5:', 'socks5h:'),
      }),
    );
    assert.equal(byName.status, 200);
    assert.equal(socks.targets.at(-1), `localhost:${new URL(site.url).port}`);
  });

  it('names a proxy that refuses the credentials, or the connection, without the password', async () => {
    const refused = socks.refused;
    await assert.rejects(
      fetchPage(`${site.url}/p1`, opts({ proxy: `socks5://${USER}:wrong@127.0.0.1:${socks.port}` })),
      (err: unknown) => {
        assert.ok(err instanceof FetchFailure && err.cause_ === 'proxy', String(err));
        assert.match(err.message, new RegExp(`^proxy socks5://127\\.0\\.0\\.1:${socks.port}: `));
        assert.ok(!err.message.includes('wrong'), err.message);
        return true;
      },
    );
    assert.equal(socks.refused, refused + 1);
    const dead = await freePort();
    await assert.rejects(
      fetchPage(
        `${site.url}/p1`,
        opts({ proxy: `socks5://${USER}:${encodeURIComponent(PASSWORD)}@127.0.0.1:${dead}` }),
      ),
      (err: unknown) => {
        assert.ok(err instanceof FetchFailure && err.cause_ === 'proxy' && err.retryable, String(err));
        assert.ok(!err.message.includes(PASSWORD) && !err.message.includes(encodeURIComponent(PASSWORD)), err.message);
        return true;
      },
    );
  });

  it('checks the target, not the proxy, against private addresses', async () => {
    const before = socks.targets.length;
    await assert.rejects(
      fetchPage(`${site.url}/p1`, opts({ privateAllowed: [] })),
      (err: unknown) => err instanceof FetchFailure && err.cause_ === 'blocked',
    );
    await assert.rejects(
      fetchPage(
        'http://intranet.test-private.invalid/',
        opts({ privateAllowed: [], resolver: async () => [{ address: '10.1.2.3', family: 4 }] }),
      ),
      (err: unknown) => err instanceof FetchFailure && err.cause_ === 'blocked',
    );
    assert.equal(socks.targets.length, before, 'nothing was asked of the proxy');
  });

  it('crawls through the proxies, rotated per request, skipping one that refuses connections', async () => {
    const dead = await freePort();
    Object.assign(process.env, { CRAWL_STUDIO_SOCKS_USER: USER, CRAWL_STUDIO_SOCKS_PASSWORD: PASSWORD });
    const task = await writeTask(`name: socks
start: [${site.url}/]
request: { robots: true, retries: { attempts: 3, delay: 10ms } }
proxy:
  urls:
    - 'socks5://\${CRAWL_STUDIO_SOCKS_USER}:\${CRAWL_STUDIO_SOCKS_PASSWORD}@127.0.0.1:${dead}'
    - 'socks5://\${CRAWL_STUDIO_SOCKS_USER}:\${CRAWL_STUDIO_SOCKS_PASSWORD}@127.0.0.1:${socks.port}'
  rotate: per-request
rules:
  - name: home
    follow: [{ selector: a, to: page }]
  - name: page
    items: [{ type: page, key: [title], fields: { title: h1 } }]
`);
    const before = seen.length;
    const logs: string[] = [];
    const s = session(task, redis.url, { workers: 1, concurrency: 2, onWorkerLog: (_pid, line) => logs.push(line) });
    const result = await s.run();
    await s.close();
    const log = logs.join('\n');
    const stats = result.status.stats!;
    assert.deepEqual(stats.failures, {}, log);
    assert.equal(stats.items, 6, `${JSON.stringify(stats)}\n${log}`);
    // 7 pages and robots.txt, each through the live proxy.
    const served = seen.slice(before);
    assert.equal(served.length, 8, JSON.stringify(served));
    assert.ok(served.some((r) => r.path === '/robots.txt'));
    assert.deepEqual(
      served.filter((r) => !socks.upstreamPorts.has(r.port)),
      [],
      'every request came through the SOCKS server',
    );
    assert.ok(
      logs.some((l) => l.includes(`proxy socks5://127.0.0.1:${dead}`) && /another proxy/.test(l)),
      `the refusing proxy was named:\n${log}`,
    );
    assert.ok(!log.includes(PASSWORD) && !log.includes(encodeURIComponent(PASSWORD)), 'no credential in the logs');
    assert.ok(
      !/ExperimentalWarning/.test(log),
      `undici's experimental warning is kept out of the workers' logs:\n${log}`,
    );
  });
});
