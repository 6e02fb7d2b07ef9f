import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium } from 'playwright-core';
import { BrowserPool } from '../../src/worker/browser/pool';
import { poolRenderer } from '../../src/worker/browser/render';
import { descendants } from '../../src/worker/browser/processes';
import { LIGHTER_DISABLED, withDisabledFeatures } from '../../src/worker/browser/features';
import { browserOrSkip, renderOptions, renderSpec } from '../support/browser';

// Issue 36: a worker's browser runs without what no crawl uses, and without losing what Playwright turns off. Real
// Chromium (Debian's), a real HTTP server; asserted on the browser's processes as /proc shows them.

/** The command lines of every process below this one (Chromium writes its own as one string with spaces). */
function commandLines(): string[] {
  return descendants().flatMap((p) => {
    try {
      return [readFileSync(`/proc/${p.pid}/cmdline`, 'utf8').replace(/\0/g, ' ')];
    } catch {
      return [];
    }
  });
}

/** The features a process runs without, as Chromium passes them to its child processes (the ones in effect). */
function disabledInEffect(lines: readonly string[]): string[] {
  const child = lines.find((l) => /--type=(renderer|gpu-process|utility)/.test(l) && /--disable-features=/.test(l));
  return child ? /--disable-features=(\S*)/.exec(child)![1]!.split(',') : [];
}

/** Renderers of the browser's own web UI (the address bar's popup), which no crawled page ever needs. */
const uiRenderers = (lines: readonly string[]) =>
  lines.filter((l) => l.includes('--type=renderer') && l.includes('--top-chrome-webui'));

/** Renderers of web pages (a spare one among them: made ahead for the context that navigated last). */
const pageRenderers = (lines: readonly string[]) =>
  lines.filter((l) => l.includes('--type=renderer') && !l.includes('--top-chrome-webui'));

/**
 * Page renderers at rest: the fewest seen over `ms`, sampled every 50 ms. A spare renderer starts after the
 * navigation it follows has ended and stays until a navigation takes it; a renderer on its way out (a kept page moved
 * to a new process, pool.ts's fallback) is gone a moment later. So the fewest over a second counts what stays.
 */
async function pageRenderersAtRest(ms: number): Promise<number> {
  await new Promise((r) => setTimeout(r, 500));
  let fewest = Infinity;
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 50)))
    fewest = Math.min(fewest, pageRenderers(commandLines()).length);
  return fewest;
}

describe("the worker's browser flags (issue 36: lighter rendered pages)", function () {
  this.timeout(120_000);
  let executablePath: string;
  let server: Server;
  let url: string;

  before(async function () {
    executablePath = browserOrSkip(this);
    server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><body><h1 class="t">page</h1></body>');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => server?.close());

  it("keeps every feature Playwright disables, adds its own, and merges the user's", async () => {
    // What Playwright alone passes, read from a browser it launched with no --disable-features of ours.
    const plain = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
    let playwrights: string[];
    try {
      const page = await plain.newPage();
      await page.goto(`${url}/`);
      playwrights = disabledInEffect(commandLines());
    } finally {
      await plain.close();
    }
    assert.ok(playwrights.length > 0, 'found the features Playwright disables');
    const ours = /^--disable-features=(.*)$/.exec(
      withDisabledFeatures(['--disable-features=Foo', '--mute-audio'])[0]!,
    )!;
    const list = ours[1]!.split(',');
    for (const f of [...playwrights, ...LIGHTER_DISABLED, 'Foo'])
      assert.ok(list.includes(f), `${f} is disabled (Playwright ${playwrights.join(',')})`);
  });

  it('renders pages in several contexts with no renderer for the browser UI and no spare one, which a plain launch has', async () => {
    // The control: Playwright's defaults alone give each context's window an address-bar popup renderer, and keep a
    // spare renderer made ahead for the context that navigated last, beside one renderer per page.
    const plain = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
    try {
      for (let i = 0; i < 3; i++) await (await plain.newContext()).newPage().then((p) => p.goto(`${url}/${i}`));
      assert.ok(uiRenderers(commandLines()).length > 0, 'a plain launch has a browser-UI renderer');
      assert.ok(
        (await pageRenderersAtRest(1_000)) > 3,
        'a plain launch has a spare renderer beside the pages of 3 contexts',
      );
    } finally {
      await plain.close();
    }

    const pool = new BrowserPool({ executablePath, maxOpenPages: 3 });
    const spec = renderSpec('h1.t');
    const opts = renderOptions;
    try {
      const r = poolRenderer(pool);
      // Three at once: three contexts (pool.ts keeps one per page in flight).
      const pages = await Promise.all([1, 2, 3].map((i) => r.render(`${url}/p/${i}`, spec, opts)));
      assert.ok(pages.every((p) => p.body.includes('page')));
      const lines = commandLines();
      assert.ok(
        lines.some((l) => l.includes('--type=renderer')),
        'the pool has renderers',
      );
      assert.deepEqual(uiRenderers(lines), [], 'no browser-UI renderer');
      // A kept page stays in its renderer between renders (pool.ts); a spare would be one more, made for whichever
      // context navigated last and thrown away when another one navigates next.
      const atRest = await pageRenderersAtRest(1_000);
      assert.ok(atRest <= 3, `no spare renderer: ${atRest} page renderers for 3 kept pages`);
    } finally {
      await pool.close();
    }
  });
});
