import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { parseTask } from '../../../src/core/task/parse';
import { isLocalHostname, isPrivateAddress } from '../../../src/core/url/hosts';
import { decideLink } from '../../../src/core/url/scope';
import { FetchFailure, fetchPage, type FetchOptions } from '../../../src/worker/fetcher';

// Found by the link fuzzer (test/fuzz): WHATWG URL writes an IPv4-mapped IPv6 address in hex
// (http://[::ffff:127.0.0.1]/ becomes http://[::ffff:7f00:1]/), the private-address check only knew the dotted
// spelling, and Node's fetch connects such an address to 127.0.0.1. A page could steer the crawl to any port on
// the user's machine.

describe('fuzz regressions: private addresses in every IPv6 spelling', () => {
  it('classifies mapped, compatible, NAT64, 6to4, site-local and multicast forms by what they reach', () => {
    const priv = [
      '::ffff:7f00:1',
      '[::ffff:7f00:1]',
      '::ffff:127.0.0.1',
      '::ffff:a9fe:a9fe',
      '::ffff:c0a8:101',
      '0:0:0:0:0:ffff:7f00:1',
      '::7f00:1',
      '::',
      '::1',
      '64:ff9b::7f00:1',
      '64:ff9b::a00:1',
      '2002:7f00:1::1',
      '2002:c0a8:101::',
      'fec0::1',
      'ff02::1',
      'fe80::1%eth0',
      'fd12::1',
      '100::1',
      '::ffff:0:7f00:1',
    ];
    const pub = [
      '::ffff:808:808',
      '64:ff9b::808:808',
      '2002:808:808::1',
      '2606:4700::1111',
      '2a00:1450:4001:80b::200e',
      '8.8.8.8',
    ];
    for (const a of priv) assert.ok(isPrivateAddress(a), `${a} is private`);
    for (const a of pub) assert.ok(!isPrivateAddress(a), `${a} is public`);
    assert.ok(isLocalHostname(new URL('http://[::ffff:127.0.0.1]/').hostname));
  });

  it('drops links to them from a public site', () => {
    const { task } = parseTask(
      'name: t\nstart: [http://example.com/]\nscope: { allow: ["http://**"] }\nrules: [{ name: a }]\n',
      't.crawl.yaml',
    );
    for (const href of [
      'http://[::ffff:127.0.0.1]:6379/',
      'http://[::ffff:7f00:1]/admin',
      'http://[::ffff:a9fe:a9fe]/latest/meta-data/',
      'http://[64:ff9b::7f00:1]/',
    ]) {
      const d = decideLink(task!, href, 'http://example.com/', 1);
      assert.equal(d.ok, false, href);
      assert.equal(!d.ok && d.reason, 'private', href);
    }
  });

  describe('the fetcher refuses them, directly and after a redirect', () => {
    let target: Server;
    let redirector: Server;
    let targetHits = 0;
    let targetPort = 0;
    let redirectorPort = 0;
    before(async () => {
      target = createServer((_req, res) => {
        targetHits++;
        res.writeHead(200, { 'content-type': 'text/html' }).end('<p>a service on loopback</p>');
      });
      await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
      targetPort = (target.address() as { port: number }).port;
      redirector = createServer((_req, res) =>
        res.writeHead(302, { location: `http://[::ffff:7f00:1]:${targetPort}/secret` }).end(),
      );
      await new Promise<void>((r) => redirector.listen(0, '127.0.0.1', r));
      redirectorPort = (redirector.address() as { port: number }).port;
    });
    after(async () => {
      target.closeAllConnections();
      redirector.closeAllConnections();
      await new Promise((r) => target.close(r));
      await new Promise((r) => redirector.close(r));
    });

    const opts = (privateAllowed: string[]): FetchOptions => ({
      timeoutMs: 3000,
      maxBytes: 1 << 20,
      maxRedirects: 5,
      headers: {},
      userAgent: 'test',
      privateAllowed,
    });

    it('a direct fetch', async () => {
      await assert.rejects(
        fetchPage(`http://[::ffff:7f00:1]:${targetPort}/`, opts(['example.com'])),
        (e: unknown) => e instanceof FetchFailure && e.cause_ === 'blocked',
      );
      assert.equal(targetHits, 0);
    });

    it('a redirect from an allowed private start host to another port on the machine', async () => {
      await assert.rejects(
        fetchPage(`http://127.0.0.1:${redirectorPort}/`, opts([`127.0.0.1:${redirectorPort}`])),
        (e: unknown) => e instanceof FetchFailure && e.cause_ === 'blocked',
      );
      assert.equal(targetHits, 0);
    });
  });
});
