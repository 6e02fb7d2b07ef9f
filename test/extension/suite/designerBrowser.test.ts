import * as assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { PanelSnapshot } from '../../../src/extension/designer/previewPanel';
import type { DashboardData, ToDashboard } from '../../../src/extension/dashboard/protocol';
import type { CrawlStudioApi } from '../../../src/extension/extension';
import { startRedis, type RedisServer } from '../../support/services';
import { activateWith, restoreSettings } from '../support';

// The designer's Browser toggle in a real VS Code (issue 18): a page whose items only its script builds shows
// them in the preview when rendered (the toggle follows the rule's `browser`), none when fetched, and the picker
// suggests a selector from the rendered DOM. Then the same kind of site crawled from the editor: every item stored,
// and the screenshot of the page that failed to render shown from the dashboard.

const C = {
  open: 'crawlStudio.designer.openPreview',
  state: 'crawlStudio.designer._state',
  message: 'crawlStudio.designer._message',
  pick: 'crawlStudio.designer._pick',
};

async function until<T>(
  what: string,
  probe: () => T | Promise<T>,
  timeoutMs = 30_000,
  explain: () => Promise<unknown> = async () => '',
): Promise<NonNullable<T>> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const last = await probe();
    if (last) return last;
    if (Date.now() > end)
      throw new Error(`timed out waiting for ${what}: ${JSON.stringify(await explain()).slice(0, 800)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('crawl designer: Browser toggle (real Chromium)', function () {
  this.timeout(120_000);
  let server: Server;
  let dir: string;
  let uri: vscode.Uri;
  const snap = () => vscode.commands.executeCommand<PanelSnapshot | null>(C.state, uri);

  before(async () => {
    await vscode.extensions.getExtension('crawl-studio.crawl-studio')!.activate();
    server = createServer((req, res) => {
      if (req.url === '/robots.txt') return res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(
        `<!doctype html><body><ul id="list"></ul><script>setTimeout(() => { for (const t of ['one', 'two', 'three']) { const li = document.createElement('li'); li.className = 'it' + 'em'; li.textContent = t; document.getElementById('list').append(li); } }, 50);</script></body>`,
      );
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    dir = mkdtempSync(join(tmpdir(), 'cs-designer-browser-'));
    const file = join(dir, 'js.crawl.yaml');
    writeFileSync(
      file,
      `name: js\nstart: [${url}]\nrules:\n  - name: list\n    browser: { waitFor: { selector: li.item } }\n    items:\n      - type: entry\n        scope: li.item\n        fields:\n          text: { trim: true }\n`,
    );
    uri = vscode.Uri.file(file);
    await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(uri));
  });

  after(async () => {
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    server?.closeAllConnections();
    server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('shows the rendered page for a browser rule, the fetched one when turned off, and picks from the rendered DOM', async () => {
    await vscode.commands.executeCommand(C.open, uri);
    const rendered = await until(
      'the rendered page analysed',
      async () => {
        const x = await snap();
        return x?.state.browser && x.state.analysis?.items[0]?.rows.length ? x : null;
      },
      60_000,
      async () => {
        const x = await snap();
        return (
          x && {
            browser: x.state.browser,
            loading: x.state.loading,
            pageError: x.state.pageError,
            rule: x.state.analysis?.rule,
            rows: x.state.analysis?.items[0]?.rows.length,
          }
        );
      },
    );
    assert.deepEqual(
      rendered.state.analysis!.items[0]!.rows.map((r) => String(r.cells[0]!.value)),
      ['one', 'two', 'three'],
    );

    const picked = await vscode.commands.executeCommand<{ suggestion: { selector: string; count: number } } | null>(
      C.pick,
      uri,
      'li',
      1,
    );
    assert.ok(picked, 'an element of the rendered DOM can be picked');
    assert.equal(picked.suggestion.count, 3, JSON.stringify(picked.suggestion));

    await vscode.commands.executeCommand(C.message, uri, { type: 'setBrowser', on: false });
    // Fetched, the page has no items yet: the analysis of the fetched copy shows none.
    await until(
      'the fetched page analysed, with no items',
      async () => {
        const x = await snap();
        return (
          x &&
          !x.state.browser &&
          !x.state.loading &&
          x.state.page &&
          x.state.analysis &&
          (x.state.analysis.items[0]?.rows.length ?? 0) === 0
        );
      },
      30_000,
      async () => {
        const x = await snap();
        return (
          x && {
            browser: x.state.browser,
            loading: x.state.loading,
            pageError: x.state.pageError,
            rows: x.state.analysis?.items[0]?.rows.length,
          }
        );
      },
    );
  });
});

describe('crawl from the editor: a site built by JavaScript (real Chromium, Redis, workers)', function () {
  this.timeout(180_000);
  let server: Server;
  let redis: RedisServer;
  let api: CrawlStudioApi;
  let dir: string;
  let file: string;
  let base = '';

  const dashboard = async (): Promise<DashboardData | undefined> => {
    const all =
      (await vscode.commands.executeCommand<
        { task: string; lastPosted: Partial<Record<ToDashboard['type'], ToDashboard>> }[]
      >('crawlStudio.dashboard.testState')) ?? [];
    const d = all.find((x) => x.task === 'jscrawl')?.lastPosted.data;
    return d?.type === 'data' ? d.data : undefined;
  };

  before(async () => {
    redis = await startRedis();
    server = createServer((req, res) => {
      const path = req.url ?? '/';
      if (path === '/robots.txt') return res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'text/html' });
      // The list and its links, and each item's title, exist only once the page's script ran; /item/never never
      // gets its title, so its render fails (a timeout) and leaves a screenshot.
      if (path === '/') {
        const links = ['a', 'b', 'c', 'never'].map((x) => `<a class="item" href="/item/${x}">${x}</a>`).join('');
        return res.end(
          `<!doctype html><body><nav></nav><script>setTimeout(() => { document.querySelector('nav').innerHTML = ${JSON.stringify(links)}; }, 50);</script></body>`,
        );
      }
      const name = /^\/item\/(\w+)$/.exec(path)?.[1] ?? 'none';
      if (name === 'never') return res.end('<!doctype html><body><p>Loading for ever…</p></body>');
      res.end(
        `<!doctype html><body><main></main><script>setTimeout(() => { document.querySelector('main').innerHTML = '<h1>Item ${name}</h1>'; }, 50);</script></body>`,
      );
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    api = await activateWith({ redisUrl: redis.url, workers: 1, concurrency: 2 });
    dir = mkdtempSync(join(tmpdir(), 'cs-jscrawl-'));
    file = join(dir, 'jscrawl.crawl.yaml');
    writeFileSync(
      file,
      `name: jscrawl
start: [${base}/]
request: { retries: { attempts: 1 } }
rules:
  - name: home
    match: ["${base}/"]
    browser: { waitFor: { selector: a.item } }
    follow: [{ selector: a.item, to: item }]
  - name: item
    browser: { waitFor: { selector: h1 }, timeout: 2s, screenshot: failure }
    items:
      - type: item
        key: [title]
        fields: { title: h1 }
`,
    );
  });

  after(async () => {
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    await vscode.commands.executeCommand('crawlStudio.stopWorkers');
    await restoreSettings(api, ['redisUrl', 'workers', 'concurrency']);
    server?.closeAllConnections();
    server?.close();
    await redis?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('stores every rendered item, and shows the screenshot of the page that failed from the dashboard', async () => {
    const uri = vscode.Uri.file(file);
    await api.crawls.start(await vscode.workspace.openTextDocument(uri));
    await until('the crawl to finish', () => !api.crawls.get('jscrawl'), 120_000);
    await vscode.commands.executeCommand('crawlStudio.openDashboard', uri);
    const d = await until(
      'the finished run with its screenshot',
      async () => {
        const x = await dashboard();
        return x?.run?.state === 'finished' && x.screenshots.length > 0 ? x : null;
      },
      30_000,
      async () => dashboard(),
    );
    const count = (label: string) => d.counters.find((c) => c.label === label)?.value;
    assert.equal(count('Items'), 3, JSON.stringify(d.counters));
    assert.equal(count('Failed'), 1, JSON.stringify(d.failures));
    assert.deepEqual(d.screenshots, [`${base}/item/never`]);
    assert.equal(
      await vscode.commands.executeCommand('crawlStudio.dashboard.testMessage', file, {
        type: 'showScreenshot',
        url: `${base}/item/a`,
      }),
      false,
      'no screenshot is offered for a page that has none',
    );
    assert.equal(
      await vscode.commands.executeCommand('crawlStudio.dashboard.testMessage', file, {
        type: 'showScreenshot',
        url: `${base}/item/never`,
      }),
      true,
    );
    const tab = await until('the screenshot open in an editor', () =>
      vscode.window.tabGroups.all
        .flatMap((g) => g.tabs)
        .find((t) => t.input instanceof vscode.TabInputCustom && t.input.uri.fsPath.endsWith('.jpg')),
    );
    const shown = (tab.input as vscode.TabInputCustom).uri.fsPath;
    assert.ok(shown.startsWith(join(dir, '.crawl', 'screenshots', 'jscrawl')), shown);
  });
});
