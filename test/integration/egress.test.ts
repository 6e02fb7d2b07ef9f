import assert from 'node:assert/strict';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { Egress } from '../../src/worker/browser/egress';
import { forwardProxy, type Proxy } from '../support/proxy';
import { serveHttp, type HttpServer } from '../support/services';

// The worker's egress proxy alone (issue 18), as Chromium uses it: absolute-form requests and CONNECT, a lease's
// token as the proxy user name. Real sockets on 127.0.0.1, a real upstream proxy that wants credentials.

const UP_USER = 'up';
const UP_PASSWORD = 'Up-Pw-61q';

interface Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

function viaEgress(egress: Egress, target: string, token: string | null): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port: egress.port,
        path: target,
        method: 'GET',
        headers: {
          host: new URL(target).host,
          ...(token ? { 'proxy-authorization': `Basic ${Buffer.from(`${token}:x`).toString('base64')}` } : {}),
        },
      },
      (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

function connectVia(egress: Egress, hostPort: string, token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({
      host: '127.0.0.1',
      port: egress.port,
      method: 'CONNECT',
      path: hostPort,
      headers: { 'proxy-authorization': `Basic ${Buffer.from(`${token}:x`).toString('base64')}` },
    });
    req.on('connect', (res, socket) => {
      socket.destroy();
      resolve(res.statusCode!);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('egress proxy of rendered pages', function () {
  let egress: Egress;
  let site: HttpServer;
  let upstream: Proxy;
  const hits: string[] = [];

  before(async () => {
    egress = await Egress.start();
    site = await serveHttp((req, res) => {
      hits.push(req.url ?? '');
      res
        .writeHead(200, { 'content-type': 'text/plain', 'set-cookie': ['a=1', 'b=2'] })
        .end(`hello ${req.headers['x-test-proxy'] ? 'via upstream' : 'direct'}`);
    });
    upstream = await forwardProxy(UP_USER, UP_PASSWORD);
  });
  after(async () => {
    await egress?.close();
    await site?.close();
    upstream?.server.close();
  });

  it('answers 407 to a request without a live token, and forwards nothing for it', async () => {
    const lease = egress.lease({ privateAllowed: null });
    lease.release();
    const before = hits.length;
    assert.equal((await viaEgress(egress, `${site.url}/x`, null)).status, 407);
    assert.equal((await viaEgress(egress, `${site.url}/x`, 'not-a-token')).status, 407);
    assert.equal(
      (await viaEgress(egress, `${site.url}/x`, lease.proxy.username)).status,
      407,
      'a released lease is no longer honoured',
    );
    assert.equal(hits.length, before);
  });

  it('forwards for a lease, keeping repeated headers, and refuses private addresses unless allowed', async () => {
    const open = egress.lease({ privateAllowed: [new URL(site.url).host] });
    const ok = await viaEgress(egress, `${site.url}/page`, open.proxy.username);
    assert.equal(ok.status, 200);
    assert.equal(ok.body, 'hello direct');
    assert.deepEqual(ok.headers['set-cookie'], ['a=1', 'b=2']);

    const guarded = egress.lease({ privateAllowed: [] });
    const before = hits.length;
    assert.equal((await viaEgress(egress, `${site.url}/secret`, guarded.proxy.username)).status, 403);
    assert.equal(await connectVia(egress, new URL(site.url).host, guarded.proxy.username), 403);
    // A name that resolves to a private address is refused inside the connection's own lookup.
    const named = egress.lease({ privateAllowed: [], resolver: async () => [{ address: '127.0.0.1', family: 4 }] });
    assert.equal(
      (await viaEgress(egress, `http://intranet.test:${new URL(site.url).port}/secret`, named.proxy.username)).status,
      403,
    );
    assert.deepEqual(named.refused, [`intranet.test:${new URL(site.url).port}`]);
    assert.equal(hits.length, before, 'nothing reached the private address');
    guarded.reset();
    assert.deepEqual(guarded.refused, []);
    for (const l of [open, guarded, named]) l.release();
  });

  it('chains the upstream proxy with its credentials, and names it without them when it fails', async () => {
    const lease = egress.lease({
      privateAllowed: null,
      proxy: `http://${UP_USER}:${UP_PASSWORD}@127.0.0.1:${upstream.port}`,
    });
    const ok = await viaEgress(egress, `${site.url}/up`, lease.proxy.username);
    assert.equal(ok.body, 'hello via upstream');
    assert.equal(await connectVia(egress, new URL(site.url).host, lease.proxy.username), 200);
    assert.ok(
      upstream.forwarded.includes(`${site.url}/up`) && upstream.forwarded.includes(`CONNECT ${new URL(site.url).host}`),
      upstream.forwarded.join(', '),
    );
    assert.equal(upstream.refused, 0);
    lease.release();

    const wrong = egress.lease({ privateAllowed: null, proxy: `http://${UP_USER}:wrong@127.0.0.1:${upstream.port}` });
    await viaEgress(egress, `${site.url}/up`, wrong.proxy.username);
    assert.equal(wrong.proxyFailure, `proxy http://127.0.0.1:${upstream.port} refused its credentials (HTTP 407)`);
    wrong.release();
  });
});
