import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { FetchFailure, fetchPage, type FetchOptions } from '../../src/worker/fetcher';
import { serveHttp, type HttpServer } from '../support/services';

// The fetcher against a real HTTP server on 127.0.0.1: content codings undone as a browser would, redirects
// followed by hand, bodies nobody reads not downloaded, and the size cap counted after decoding.

const PAGE = '<html><body><h1>Caf\u00e9 \u2603</h1>' + '<p>filler</p>'.repeat(500) + '</body></html>';

describe('fetcher: codings, redirects and caps', () => {
  let web: HttpServer;
  let base = '';
  let seen: IncomingHttpHeaders | null = null;
  before(async () => {
    web = await serveHttp((req, res) => {
      seen = req.headers;
      const html = { 'content-type': 'text/html; charset=utf-8' };
      switch (req.url) {
        case '/gzip':
          return res.writeHead(200, { ...html, 'content-encoding': 'gzip' }).end(gzipSync(PAGE));
        case '/br':
          return res.writeHead(200, { ...html, 'content-encoding': 'br' }).end(brotliCompressSync(PAGE));
        case '/deflate':
          return res.writeHead(200, { ...html, 'content-encoding': 'deflate' }).end(deflateSync(PAGE));
        case '/plain':
          return res.writeHead(200, html).end(PAGE);
        case '/latin1':
          return res
            .writeHead(200, { 'content-type': 'text/html; charset=iso-8859-1' })
            .end(Buffer.from('<p>caf\u00e9</p>', 'latin1'));
        case '/corrupt':
          return res.writeHead(200, { ...html, 'content-encoding': 'gzip' }).end(Buffer.from('not gzip at all'));
        case '/hop1':
          return res.writeHead(301, { location: '/hop2' }).end('moved');
        case '/hop2':
          return res.writeHead(302, { location: `${base}/gzip` }).end();
        case '/big-gzip':
          // 64 KB on the wire, 8 MB once decoded.
          return res.writeHead(200, { ...html, 'content-encoding': 'gzip' }).end(gzipSync(Buffer.alloc(8 << 20, 'a')));
        case '/retry':
          return res.writeHead(503, { 'retry-after': '2' }).end('busy');
        default:
          return res.writeHead(404).end('no');
      }
    });
    base = web.url;
  });
  after(async () => {
    await web.close();
  });

  const opts: FetchOptions = {
    timeoutMs: 5000,
    maxBytes: 1 << 20,
    maxRedirects: 3,
    headers: {},
    userAgent: 'cs-test',
    privateAllowed: null,
  };

  for (const coding of ['gzip', 'br', 'deflate', 'plain']) {
    it(`decodes a ${coding} body to the page's text`, async () => {
      const page = await fetchPage(`${base}/${coding}`, opts);
      assert.equal(page.status, 200);
      assert.equal(page.body, PAGE);
      assert.equal(page.isHtml, true);
      assert.equal(page.bytes, Buffer.byteLength(PAGE));
      assert.match(String(seen?.['accept-encoding']), /gzip/);
      assert.equal(seen?.['user-agent'], 'cs-test');
    });
  }

  it('decodes the charset the server names', async () => {
    assert.equal((await fetchPage(`${base}/latin1`, opts)).body, '<p>caf\u00e9</p>');
  });

  it('follows redirects by hand and reports where it ended', async () => {
    const page = await fetchPage(`${base}/hop1`, opts);
    assert.equal(page.finalUrl, `${base}/gzip`);
    assert.equal(page.redirects, 2);
    assert.equal(page.body, PAGE);
    await assert.rejects(
      fetchPage(`${base}/hop1`, { ...opts, maxRedirects: 1 }),
      (e: unknown) => e instanceof FetchFailure && e.cause_ === 'redirects',
    );
  });

  it('counts the size cap after decoding: a small compressed body that inflates past it fails', async () => {
    await assert.rejects(
      fetchPage(`${base}/big-gzip`, opts),
      (e: unknown) => e instanceof FetchFailure && e.cause_ === 'too-large',
    );
  });

  it('fails a body that is not in the coding it claims as a network error, retryable', async () => {
    await assert.rejects(
      fetchPage(`${base}/corrupt`, opts),
      (e: unknown) => e instanceof FetchFailure && e.cause_ === 'network' && e.retryable,
    );
  });

  it('maps HTTP errors: 404 final, 503 retryable with Retry-After', async () => {
    await assert.rejects(
      fetchPage(`${base}/missing`, opts),
      (e: unknown) => e instanceof FetchFailure && e.group === 'http-404' && !e.retryable,
    );
    await assert.rejects(
      fetchPage(`${base}/retry`, opts),
      (e: unknown) => e instanceof FetchFailure && e.status === 503 && e.retryable && e.retryAfterMs === 2000,
    );
  });

  it('reports a refused connection as a network error', async () => {
    await assert.rejects(
      fetchPage('http://127.0.0.1:1/', opts),
      (e: unknown) => e instanceof FetchFailure && e.cause_ === 'network' && /ECONNREFUSED/.test(e.message),
    );
  });
});
