import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { writeTask } from '../support/crawl';
import { browserOrSkip } from '../support/browser';
import { saveFixture, fixtureDir } from '../../src/workspace/fixtureStore';
import { fetchPage } from '../../src/worker/fetcher';
import { fetchOptions } from '../../src/worker/processor';

// Fixtures of rendered rules (issue 30, item 4): `fixture save` on a `browser:` rule keeps the DOM a real Chromium
// rendered (the worker's render code), says so, and `test` fails a fixture that extracts nothing its rule expects
// or that holds a browser rule's page as fetched. A real HTTP server whose list is built by its script.

function cli(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((res) => {
    const child = spawn(process.execPath, [resolve('dist/cli.js'), ...args], {
      env: { ...process.env, CRAWL_STUDIO_BROWSER: process.env.CRAWL_STUDIO_BROWSER ?? browserPath },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b) => (stdout += b));
    child.stderr.on('data', (b) => (stderr += b));
    child.on('exit', (status) => res({ status, stdout, stderr }));
  });
}

let browserPath = '';

describe('fixtures of rendered rules (real Chromium, real HTTP server, the real CLI)', function () {
  this.timeout(120_000);
  let server: Server;
  let url = '';
  /** The class the page's script gives its cards: a redesign changes it. */
  let cardClass = 'product';

  before(async function () {
    browserPath = browserOrSkip(this);
    server = createServer((req, res) => {
      if (req.url === '/app.js') {
        res.writeHead(200, { 'content-type': 'text/javascript' });
        return res.end(`for (const name of ['Lamp', 'Chair', 'Desk']) {
  const d = document.createElement('div'); d.className = '${cardClass}';
  d.innerHTML = '<span class="name">' + name + '</span>'; document.getElementById('app').appendChild(d);
}`);
      }
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<!doctype html><html><body><div id="app"></div><script src="/app.js"></script></body></html>');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/list`;
  });
  after(() => server?.close());

  it('saves the rendered DOM and its items; test fails once the script renders something the rule no longer reads', async () => {
    const task = await writeTask(`name: shop
start: [${url}]
rules:
  - name: list
    browser: { waitFor: load }
    items: [{ type: product, scope: .product, key: [name], fields: { name: .name } }]
`);
    let r = await cli(['fixture', 'save', task.file, url]);
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /\(rule list, HTTP 200, rendered in a browser\): 3 items/, r.stdout);
    const dir = fixtureDir(task.file, task.name);
    const stem = readdirSync(dir)
      .find((n) => n.endsWith('.json'))!
      .slice(0, -5);
    const saved = JSON.parse(readFileSync(join(dir, `${stem}.json`), 'utf8')) as {
      rendered?: boolean;
      expected: { items: { data: { name: string } }[] };
    };
    assert.equal(saved.rendered, true, 'the fixture says it was rendered');
    assert.deepEqual(
      saved.expected.items.map((i) => i.data.name),
      ['Lamp', 'Chair', 'Desk'],
    );
    assert.match(
      readFileSync(join(dir, `${stem}.html`), 'utf8'),
      /<span class="name">Desk<\/span>/,
      'the page saved is the rendered DOM',
    );

    r = await cli(['test', task.file]);
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /^ok +.* \(list, /m);

    // The site's script changes: the cards are rendered under another class. Saved again, the fixture holds a page
    // the rule reads nothing from, and `test` says so rather than "unchanged".
    cardClass = 'card';
    r = await cli(['fixture', 'save', task.file, url]);
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /: 0 items/, r.stdout);
    r = await cli(['test', task.file]);
    assert.equal(r.status, 1, r.stdout + r.stderr);
    assert.match(r.stdout, /^FAIL +.* \(list, /m);
    assert.match(r.stdout, /extracts nothing: rule 'list' expects items \(product\) and the page gives none/, r.stdout);
  });

  it('reports a browser rule fixture saved as fetched: saved the wrong way', async () => {
    cardClass = 'product';
    const task = await writeTask(`name: shop2
start: [${url}]
rules:
  - name: list
    browser: true
    items: [{ type: product, scope: .product, key: [name], fields: { name: .name } }]
`);
    rmSync(fixtureDir(task.file, task.name), { recursive: true, force: true });
    const page = await fetchPage(url, fetchOptions(task));
    await saveFixture(
      task.file,
      task,
      { url, finalUrl: page.finalUrl, html: page.body, status: page.status, fetchedAt: new Date().toISOString() },
      'list',
      0,
    );
    const r = await cli(['test', task.file]);
    assert.equal(r.status, 1, r.stdout + r.stderr);
    assert.match(
      r.stdout,
      /saved the wrong way: rule 'list' renders in a browser, but this fixture holds the page as fetched/,
      r.stdout,
    );
  });
});
