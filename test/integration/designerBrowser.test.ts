import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pageForFrame } from '../../src/core/designer/page';
import { parseTask } from '../../src/core/task/parse';
import { closePreviewBrowser } from '../../src/extension/designer/browserPreview';
import { PageSource } from '../../src/extension/designer/pages';
import { browserOrSkip } from '../support/browser';

// The designer's Browser toggle (issue 18) with real Chromium: the preview gets the DOM after the page's scripts
// ran, cached apart from the fetched copy, and the frame shows it with scripts off.

describe('designer: pages rendered in the browser (real Chromium)', function () {
  this.timeout(60_000);
  let server: Server;
  let url: string;

  before(async function () {
    browserOrSkip(this);
    server = createServer((req, res) => {
      if (req.url === '/robots.txt') return res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(
        `<!doctype html><body><ul id="list"></ul><script>setTimeout(() => { for (const text of ['one', 'two']) { const li = document.createElement('li'); li.className = 'it' + 'em'; li.textContent = text; document.getElementById('list').append(li); } }, 50);</script></body>`,
      );
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  after(async () => {
    await closePreviewBrowser();
    server?.closeAllConnections();
    server?.close();
  });

  it("renders with the rule's browser settings, caches the rendered copy apart, and frames it without scripts", async () => {
    const { task } = parseTask(
      `name: d\nstart: [${url}]\nrules:\n  - name: list\n    browser: { waitFor: { selector: li.item } }\n`,
      'd.crawl.yaml',
    );
    assert.ok(task);
    const source = new PageSource(mkdtempSync(join(tmpdir(), 'cs-designer-browser-')));

    const plain = await source.load(url, task, { refetch: false });
    assert.equal(plain.meta.rendered, undefined);
    assert.doesNotMatch(plain.page.html, /class="item"/, 'fetched: the items do not exist yet');

    const rendered = await source.load(url, task, { refetch: false, browser: { rule: 'list', path: undefined } });
    assert.equal(rendered.fromCache, false, 'the fetched copy is not shown for the rendered one');
    assert.equal(rendered.meta.rendered, true);
    assert.equal(
      (rendered.page.html.match(/<li class="item"/g) ?? []).length,
      2,
      "rendered: the script's items are in the DOM",
    );

    const again = await source.load(url, task, { refetch: false, browser: { rule: 'list', path: undefined } });
    assert.equal(again.fromCache, true);
    assert.equal(again.meta.rendered, true);

    const frame = pageForFrame(rendered.page, false);
    assert.match(frame, /class="item"/);
    assert.doesNotMatch(frame, /createElement/, 'the frame carries no page script');
  });
});
