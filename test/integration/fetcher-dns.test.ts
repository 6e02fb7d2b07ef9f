import assert from 'node:assert/strict';
import type { LookupAddress } from 'node:dns';
import { createServer, type Server } from 'node:http';
import { FetchFailure, fetchPage, type FetchOptions } from '../../src/worker/fetcher';
import type { Resolver } from '../../src/worker/dispatcher';

// DNS rebinding: a host that resolves to a public address when it is checked and to 127.0.0.1 when it is
// connected to. The fetcher must check the address it actually connects to. These tests stand in a DNS server
// (the fetcher's resolver) for names that only they know, served by a real HTTP server on 127.0.0.1.

describe('fetcher: the address checked is the address connected to (DNS rebinding)', () => {
  let server: Server;
  let port = 0;
  let hits = 0;
  before(async () => {
    server = createServer((req, res) => {
      hits++;
      if (req.url === '/hop') return res.writeHead(302, { location: `http://rebind.test:${port}/secret` }).end();
      res.writeHead(200, { 'content-type': 'text/html' }).end(`<p>${req.headers.host}${req.url}</p>`);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as { port: number }).port;
  });
  beforeEach(() => (hits = 0));
  after(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  /** A DNS server that answers each name from a script of answers, one per query, the last repeated. */
  function scriptedDns(script: Record<string, string[]>): Resolver & { queries: string[] } {
    const queries: string[] = [];
    const resolver = async (hostname: string): Promise<LookupAddress[]> => {
      queries.push(hostname);
      const answers = script[hostname];
      if (!answers) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
      const n = queries.filter((q) => q === hostname).length;
      return [{ address: answers[Math.min(n, answers.length) - 1]!, family: 4 }];
    };
    return Object.assign(resolver, { queries });
  }

  const opts = (resolver: Resolver, privateAllowed: string[] | null): FetchOptions => ({
    timeoutMs: 3000,
    maxBytes: 1 << 20,
    maxRedirects: 5,
    headers: {},
    userAgent: 'test',
    privateAllowed,
    resolver,
  });

  it('connects through the resolver it checks with: an allowed name that only the stand-in DNS knows is fetched', async () => {
    const dns = scriptedDns({ 'start.test': ['127.0.0.1'] });
    const page = await fetchPage(`http://start.test:${port}/a`, opts(dns, [`start.test:${port}`]));
    assert.equal(page.status, 200);
    assert.match(page.body, new RegExp(`start.test:${port}/a`));
    assert.deepEqual(dns.queries, ['start.test']);
  });

  it('looks a name up once per connection and connects to that answer: a second, loopback answer is never used', async () => {
    // First answer public (TEST-NET-3, unroutable), every later one loopback. A fetcher that checks with one
    // lookup and lets fetch do another connects to 127.0.0.1; this one connects where its check looked.
    const dns = scriptedDns({ 'rebind.test': ['203.0.113.7', '127.0.0.1'] });
    await assert.rejects(
      fetchPage(`http://rebind.test:${port}/secret`, { ...opts(dns, ['example.com']), timeoutMs: 1000 }),
      (e: unknown) => {
        assert.ok(e instanceof FetchFailure, String(e));
        assert.ok(e.cause_ === 'timeout' || e.cause_ === 'network', `${e.cause_}: ${e.message}`);
        return true;
      },
    );
    assert.equal(hits, 0, 'nothing reached the loopback server');
    assert.deepEqual(dns.queries, ['rebind.test']);
  });

  it('refuses a name that resolves to 127.0.0.1 when the connection is made', async () => {
    const dns = scriptedDns({ 'rebind.test': ['127.0.0.1'] });
    await assert.rejects(fetchPage(`http://rebind.test:${port}/secret`, opts(dns, ['example.com'])), (e: unknown) => {
      assert.ok(e instanceof FetchFailure, String(e));
      assert.equal(e.cause_, 'blocked');
      assert.match(e.message, /rebind\.test:\d+ resolves to a private address; set scope\.allowPrivate/);
      return true;
    });
    assert.equal(hits, 0, 'nothing reached the loopback server');
  });

  it('refuses a redirect from an allowed start host to a name that resolves to loopback', async () => {
    const dns = scriptedDns({ 'start.test': ['127.0.0.1'], 'rebind.test': ['127.0.0.1'] });
    await assert.rejects(
      fetchPage(`http://start.test:${port}/hop`, opts(dns, [`start.test:${port}`])),
      (e: unknown) => e instanceof FetchFailure && e.cause_ === 'blocked',
    );
    assert.equal(hits, 1, 'the start host answered, the redirect target was never connected to');
    assert.deepEqual(dns.queries, ['start.test', 'rebind.test']);
  });

  it('refuses a name with one public and one private address', async () => {
    const resolver: Resolver = async () => [
      { address: '203.0.113.7', family: 4 },
      { address: '127.0.0.1', family: 4 },
    ];
    await assert.rejects(
      fetchPage(`http://mixed.test:${port}/`, opts(resolver, [])),
      (e: unknown) => e instanceof FetchFailure && e.cause_ === 'blocked',
    );
    assert.equal(hits, 0);
  });

  it('with scope.allowPrivate (privateAllowed null) fetches any name, through the same resolver', async () => {
    const dns = scriptedDns({ 'rebind.test': ['127.0.0.1'] });
    const page = await fetchPage(`http://rebind.test:${port}/ok`, opts(dns, null));
    assert.equal(page.status, 200);
  });

  it('reports an unknown name as a DNS failure, not a block', async () => {
    const dns = scriptedDns({});
    await assert.rejects(
      fetchPage(`http://nowhere.test:${port}/`, opts(dns, [])),
      (e: unknown) => e instanceof FetchFailure && e.cause_ === 'dns',
    );
  });
});
