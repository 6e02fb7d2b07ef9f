import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BrowserPool } from '../../src/worker/browser/pool';
import { poolRenderer } from '../../src/worker/browser/render';
import { browserOrSkip, renderOptions, renderSpec } from '../support/browser';

// Issue 36: between two renders a kept page is parked where the last render left it (pool.ts), not taken to
// about:blank. What a parked page's site would still do (timers, a meta refresh) must neither run nor reach any
// server, and the next render on it runs its own scripts. Real Chromium (Debian's), a real HTTP server.

describe('a kept browser page between renders (issue 36: parked, not navigated)', function () {
  this.timeout(120_000);
  let executablePath: string;
  let server: Server;
  let url: string;
  /** Requests the server received, with when. */
  const seen: { path: string; at: number }[] = [];

  before(async function () {
    executablePath = browserOrSkip(this);
    server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0]!;
      seen.push({ path, at: Date.now() });
      if (path === '/ticker') {
        // Built by its script, then asks the server for /tick every 50 ms and leaves for /refreshed after a second.
        return res
          .writeHead(200, { 'content-type': 'text/html' })
          .end(
            `<!doctype html><head><meta http-equiv="refresh" content="1;url=/refreshed"></head><body><main></main><script>` +
              `setTimeout(() => { document.querySelector('main').innerHTML = '<h1 class="t">ticker</h1>'; }, 0);` +
              `setInterval(() => { fetch('/tick').catch(() => {}); }, 50);</script></body>`,
          );
      }
      // A page whose content only its script writes: read, it says its scripts ran.
      res
        .writeHead(200, { 'content-type': 'text/html' })
        .end(
          `<!doctype html><body><main></main><script>document.querySelector('main').innerHTML = '<h1 class="t">built ' + location.pathname + '</h1>';</script></body>`,
        );
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => server?.close());

  const spec = renderSpec('h1.t');
  const opts = renderOptions;

  it("runs none of the last page's scripts and sends none of its requests, and the next render runs its own", async () => {
    // One page at a time: every render after the first is on the same kept page.
    const pool = new BrowserPool({ executablePath, maxOpenPages: 1 });
    try {
      const r = poolRenderer(pool);
      const ticker = await r.render(`${url}/ticker`, spec, opts);
      assert.match(ticker.body, /ticker/);
      // A request the page sent before it was parked may still be on its way: what arrives from 300 ms on is the
      // parked page's own. The window holds the refresh's second and twenty of the ticker's intervals.
      await new Promise((res) => setTimeout(res, 300));
      const from = Date.now();
      await new Promise((res) => setTimeout(res, 1_500));
      const after = seen.filter((s) => s.at >= from).map((s) => `${s.path} at +${s.at - from} ms`);
      assert.deepEqual(after, [], `requests of the parked page reached the server: ${after.join(', ')}`);

      // The kept page again: its scripts run for the next render, and then for the one after.
      for (const path of ['/next', '/again']) {
        const page = await r.render(`${url}${path}`, spec, opts);
        assert.match(page.body, new RegExp(`built ${path}`));
      }
      assert.equal(pool.launched(), 1, 'one browser served all three renders');
    } finally {
      await pool.close();
    }
  });
});
