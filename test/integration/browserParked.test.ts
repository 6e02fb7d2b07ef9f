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
  /** Requests the server received: a tick with when the page sent it, a refresh with the attempt it belongs to. */
  const seen: { path: string; sentAt?: number; attempt?: string }[] = [];
  /** The ticker page's meta refresh, in seconds: later on a machine too busy to render the page well before it. */
  let refreshSeconds = 1;
  let attempt = 0;

  before(async function () {
    executablePath = browserOrSkip(this);
    server = createServer((req, res) => {
      const u = new URL(req.url ?? '/', 'http://x');
      const sent = u.searchParams.get('t');
      seen.push({ path: u.pathname, sentAt: sent ? Number(sent) : undefined, attempt: u.searchParams.get('a') ?? '' });
      if (u.pathname === '/ticker') {
        // Built by its script, then asks the server for /tick every 50 ms (saying when it asked) and leaves for
        // /refreshed after refreshSeconds.
        return res
          .writeHead(200, { 'content-type': 'text/html' })
          .end(
            `<!doctype html><head><meta http-equiv="refresh" content="${refreshSeconds};url=/refreshed?a=${attempt}"></head><body><main></main><script>` +
              `setTimeout(() => { document.querySelector('main').innerHTML = '<h1 class="t">ticker</h1>'; }, 0);` +
              `setInterval(() => { fetch('/tick?t=' + Date.now()).catch(() => {}); }, 50);</script></body>`,
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
      // The page is parked before render() returns (pool.ts). A tick it sent before then may reach the server later,
      // so ticks count by when the page sent them. Its refresh is due refreshSeconds after it loaded, which was after
      // render() was called: with a render under half of that, a refresh the parking failed to stop comes after
      // render() returned. A busier machine gets a later refresh rather than a wrong answer.
      let returned: number;
      for (;;) {
        attempt++;
        const started = Date.now();
        const ticker = await r.render(`${url}/ticker`, spec, opts);
        returned = Date.now();
        if (returned - started < (refreshSeconds * 1000) / 2) {
          assert.match(ticker.body, /ticker/);
          break;
        }
        assert.ok(refreshSeconds < 16, `a render took ${returned - started} ms, too long to test a later refresh`);
        refreshSeconds *= 2;
      }
      // Watch past when the refresh was due (the page loaded before render() returned), and for at least twenty of the
      // ticker's intervals.
      await new Promise((res) => setTimeout(res, Math.max(returned + refreshSeconds * 1000 + 500 - Date.now(), 1_500)));
      const after = seen
        .filter(
          (s) =>
            (s.path === '/tick' && s.sentAt! >= returned) || (s.path === '/refreshed' && s.attempt === String(attempt)),
        )
        .map((s) => (s.sentAt ? `${s.path} sent at +${s.sentAt - returned} ms` : s.path));
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
