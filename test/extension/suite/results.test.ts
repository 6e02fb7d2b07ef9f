import * as assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { CrawlStudioApi } from '../../../src/extension/extension';
import type { ToResults } from '../../../src/extension/results/protocol';
import type { UrlSearchResult } from '../../../src/observe/findUrl';
import { serveSite, type SiteServer } from '../../../src/demo/site';
import { startRedis, type RedisServer } from '../../support/services';
import { demoShopTask, PRICE_FIELD } from '../../support/demoTask';
import { activateWith, restoreSettings, until } from '../support';

// The results view and Find URL against a real crawl of the demo shop (real Redis, worker processes, SQLite):
// the webview receives pages of rows and new rows while the crawl runs, filters and sorts, exports the filtered
// rows, shows field quality, and Find URL answers for a URL in each place it can be.

interface PanelState {
  task: string;
  file: string;
  view: { filters: Record<string, string>; sort: { field: string; descending: boolean } | null };
  lastPosted: Partial<Record<ToResults['type'], ToResults>>;
}

async function panel(task: string): Promise<PanelState | undefined> {
  const all = (await vscode.commands.executeCommand<PanelState[]>('crawlStudio.results.testState')) ?? [];
  return all.find((p) => p.task === task);
}

function posted<T extends ToResults['type']>(
  p: PanelState | undefined,
  type: T,
): Extract<ToResults, { type: T }> | undefined {
  return p?.lastPosted[type] as Extract<ToResults, { type: T }> | undefined;
}

// The webview numbers its queries from 1; the tests speak for it.
let seq = 0;
const nextSeq = () => ++seq;
const send = (file: string, message: unknown) =>
  vscode.commands.executeCommand<boolean>('crawlStudio.results.testMessage', file, message);

describe('Results view and Find URL (real crawl)', function () {
  this.timeout(180_000);
  let redis: RedisServer;
  let site: SiteServer;
  let api: CrawlStudioApi;
  let dir: string;
  let file: string;
  let taskUri: vscode.Uri;

  before(async () => {
    redis = await startRedis();
    // Slow enough to watch rows arrive; book-7 is gone (404), and `isbn` reads a selector the page lacks.
    site = await serveSite(
      { listPages: 4, perPage: 10 },
      0,
      (req, res) => {
        if (req.url?.startsWith('/catalogue/book-7.html')) {
          res.writeHead(404).end('gone');
          return true;
        }
        return false;
      },
      40,
    );
    api = await activateWith({ redisUrl: redis.url, workers: 1, concurrency: 2 });
    dir = mkdtempSync(join(tmpdir(), 'cs-results-'));
    file = join(dir, 'books.crawl.yaml');
    writeFileSync(
      file,
      demoShopTask({
        name: 'books',
        siteUrl: site.url,
        retries: { attempts: 1, delay: '50ms' },
        // ~7 s of crawl, set by the clock: the panel's first count must come while it runs.
        perHost: { concurrency: 2, delay: '150ms' },
        headerLinks: true,
        fields: { title: 'h1', upc: 'td.upc', price: PRICE_FIELD, isbn: 'td.isbn' },
      }),
    );
    taskUri = vscode.Uri.file(file);
  });

  after(async () => {
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    await vscode.commands.executeCommand('crawlStudio.stopWorkers');
    await restoreSettings(api, ['redisUrl', 'workers', 'concurrency']);
    await site?.close();
    await redis?.stop();
  });

  it('opens during a crawl, receives pages of rows and new rows as they are stored', async () => {
    await vscode.commands.executeCommand('crawlStudio.startCrawl', taskUri);
    await vscode.commands.executeCommand('crawlStudio.openResults', taskUri);
    const p = await until('the panel', () => panel('books'));
    assert.equal(p.file, file);
    // The webview loads and says 'ready'; the panel answers with init and a count.
    const first = await until('a first count with rows stored', async () => {
      const c = posted(await panel('books'), 'count');
      return c && c.total > 0 && c.total < 39 ? c : undefined;
    });
    assert.equal(first.running, true, 'the panel knows the crawl is running');
    const init = posted(await panel('books'), 'init')!;
    assert.deepEqual(init.types, ['book']);
    assert.ok(init.columns.includes('title') && init.columns.includes('_url'), init.columns.join());
    // Ask for a page like the webview does when it scrolls.
    assert.equal(await send(file, { type: 'rows', generation: first.generation, offset: 0, limit: 100 }), true);
    const rows = posted(await panel('books'), 'rows')!;
    assert.equal(rows.offset, 0);
    assert.ok(rows.rows.length >= first.total);
    assert.match(rows.rows[0]!.cells.title ?? '', /\S/);
    // More rows arrive while the panel is open (it polls the store while visible).
    await until(
      'the count to grow',
      async () => (posted(await panel('books'), 'count')?.total ?? 0) > first.total,
      60_000,
    );
    await until('the crawl to finish', () => !api.crawls.get('books'), 120_000);
    const done = await until(
      'the final count',
      async () => {
        const c = posted(await panel('books'), 'count');
        return c && !c.running && c.total === 39 ? c : undefined;
      },
      30_000,
    );
    assert.equal(done.stored, 39, '40 books minus the one that 404s');
  });

  it('refuses malformed messages from the webview', async () => {
    assert.equal(await send(file, { type: 'rows', generation: 0, offset: -1, limit: 10 }), false);
    assert.equal(
      await send(file, { type: 'openUrl', offset: 0, url: 'file:///etc/passwd' }),
      false,
      'extra fields are refused',
    );
    assert.equal(await send(file, { type: 'runCommand', command: 'workbench.action.quit' }), false);
    assert.equal(await send(file, { type: 'export', format: 'exe' }), false);
  });

  it('filters and sorts by a field, and exports exactly the filtered rows', async () => {
    const base = posted(await panel('books'), 'count')!;
    await send(file, {
      type: 'query',
      seq: nextSeq(),
      view: {
        itemType: 'book',
        filters: { title: '1' },
        sort: { field: 'price', descending: true },
        hidden: [],
        showQuality: false,
      },
    });
    const c = posted(await panel('books'), 'count')!;
    assert.ok(c.generation > base.generation);
    // Titles end with the book's number: 1, 10..19, 21, 31.
    assert.ok(c.total > 0 && c.total < base.total, `${c.total} of ${base.total}`);
    await send(file, { type: 'rows', generation: c.generation, offset: 0, limit: 100 });
    const rows = posted(await panel('books'), 'rows')!.rows;
    assert.equal(rows.length, c.total);
    assert.ok(rows.every((r) => (r.cells.title ?? '').includes('1')));
    const prices = rows.map((r) => Number(r.cells.price));
    assert.deepEqual(
      prices,
      [...prices].sort((a, b) => b - a),
      'sorted by price, descending',
    );

    for (const format of ['jsonl', 'csv', 'json'] as const) {
      const out = join(dir, `export.${format}`);
      const n = await vscode.commands.executeCommand<number>('crawlStudio.results.testExport', file, format, out);
      assert.equal(n, c.total, format);
      const text = readFileSync(out, 'utf8');
      if (format === 'jsonl') {
        const lines = text
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as Record<string, unknown>);
        assert.deepEqual(
          lines.map((l) => l.title),
          rows.map((r) => r.cells.title),
          'same rows, same order as the view',
        );
        assert.ok(lines.every((l) => typeof l._url === 'string' && typeof l._key === 'string'));
      } else if (format === 'csv') assert.equal(text.trim().split('\n').length, c.total + 1);
      else assert.equal((JSON.parse(text) as unknown[]).length, c.total);
    }
    assert.equal(
      await vscode.commands.executeCommand(
        'crawlStudio.results.testExport',
        file,
        'json',
        '/etc/crawl-studio-test.json',
      ),
      undefined,
      'the hook writes nowhere outside the workspace and temp',
    );
  });

  it('shows field quality: a selector that matches nothing is 100% empty', async () => {
    await send(file, {
      type: 'query',
      seq: nextSeq(),
      view: { itemType: 'book', filters: {}, sort: null, hidden: [], showQuality: true },
    });
    await send(file, { type: 'quality', show: true, seq: nextSeq() });
    const q = posted(await panel('books'), 'quality')!;
    assert.equal(q.total, 39);
    const isbn = q.fields.find((f) => f.field === 'isbn');
    assert.ok(isbn, q.fields.map((f) => f.field).join());
    assert.equal(isbn.empty, 39, 'isbn is always empty');
    const title = q.fields.find((f) => f.field === 'title')!;
    assert.equal(title.empty, 0);
    assert.equal(title.distinct, 39);
  });

  it('sends the row detail with every field, source URL, fetch time and rule', async () => {
    await send(file, { type: 'detail', offset: 0 });
    const d = posted(await panel('books'), 'detail')!.detail;
    assert.equal(d.rule, 'book');
    assert.match(d.url ?? '', /\/catalogue\/book-\d+\.html$/);
    assert.ok(d.fetchedAt > 0);
    assert.deepEqual(d.fields.map((f) => f.name).sort(), ['isbn', 'price', 'title', 'upc']);
  });

  // Issue 23, item 6: results mixed every run; after a run with a broken selector the table held both runs' items
  // and field quality read "author 50% empty".
  it('shows the latest run by default, with its run column, and field quality per run', async () => {
    const firstRun = posted(await panel('books'), 'init')!.runs.shown;
    assert.match(firstRun, /^\w+$/, 'the one run is shown');
    // A second run with a broken title selector, and a key read from elsewhere: 39 new items, titles empty.
    writeFileSync(
      file,
      demoShopTask({
        name: 'books',
        siteUrl: site.url,
        retries: { attempts: 1, delay: '50ms' },
        perHost: { concurrency: 2, delay: '50ms' },
        headerLinks: true,
        fields: { title: 'h9', upc: 'h1', price: PRICE_FIELD, isbn: 'td.isbn' },
      }),
    );
    await vscode.commands.executeCommand('crawlStudio.startCrawl', taskUri);
    await until('the second run to finish', () => !api.crawls.get('books'), 120_000);
    const latest = await until(
      'the panel to show the second run',
      async () => {
        const p = await panel('books');
        const init = posted(p, 'init');
        const c = posted(p, 'count');
        return init && init.runs.shown !== firstRun && c?.stored === 78 && c.total === 39 ? { init, c } : undefined;
      },
      30_000,
    );
    assert.deepEqual(
      latest.init.runs.runs.map((r) => [r.id, r.items]),
      [
        [firstRun, 39],
        [latest.init.runs.shown, 39],
      ],
    );
    assert.ok(latest.init.columns.includes('_run'), 'the table has a run column');
    await send(file, { type: 'rows', generation: latest.c.generation, offset: 0, limit: 100 });
    const rows = posted(await panel('books'), 'rows')!.rows;
    assert.equal(rows.length, 39);
    assert.ok(
      rows.every((r) => r.cells._run === latest.init.runs.shown),
      "only the latest run's rows, each showing its run",
    );
    await send(file, { type: 'quality', show: true, seq: nextSeq() });
    const q = posted(await panel('books'), 'quality')!;
    assert.equal(q.run, latest.init.runs.shown);
    assert.equal(q.total, 39);
    assert.equal(
      q.fields.find((f) => f.field === 'title')!.empty,
      39,
      "the broken run's titles are all empty, not half",
    );
    // Every run, or the first one, on request.
    const view = { itemType: 'book', filters: {}, sort: null, hidden: [], showQuality: true };
    await send(file, { type: 'query', seq: nextSeq(), view: { ...view, run: 'all' } });
    assert.equal(posted(await panel('books'), 'count')!.total, 78);
    assert.equal(posted(await panel('books'), 'quality')!.fields.find((f) => f.field === 'title')!.empty, 39);
    await send(file, { type: 'query', seq: nextSeq(), view: { ...view, run: firstRun } });
    assert.equal(posted(await panel('books'), 'count')!.total, 39);
    assert.equal(posted(await panel('books'), 'quality')!.fields.find((f) => f.field === 'title')!.empty, 0);
    await send(file, { type: 'query', seq: nextSeq(), view: { ...view, run: 'latest' } });
  });

  it('Find URL answers for a URL in each place', async () => {
    const find = (url: string) => vscode.commands.executeCommand<UrlSearchResult>('crawlStudio.findUrl', url, taskUri);
    const close = () => vscode.commands.executeCommand('workbench.action.closeQuickOpen');
    const stored = await find(`${site.url}/catalogue/book-3.html`);
    await close();
    assert.ok(
      stored.findings.some((f) => f.place === 'store' && /^stored as book /.test(f.text)),
      JSON.stringify(stored.findings),
    );
    const failed = await find(`${site.url}/catalogue/book-7.html`);
    await close();
    assert.ok(
      failed.findings.some((f) => f.place === 'failed' && /failed \(attempt 1\/\d+\): HTTP 404/.test(f.text)),
      JSON.stringify(failed.findings),
    );
    const robots = await find(`${site.url}/private/admin.html`);
    await close();
    assert.ok(
      robots.findings.some((f) => f.place === 'queue' && f.text === 'skipped: robots.txt'),
      JSON.stringify(robots.findings),
    );
    const unseen = await find(`${site.url}/catalogue/book-999.html`);
    await close();
    assert.ok(
      unseen.findings.some((f) => f.place === 'seen' && /^not seen/.test(f.text)),
      JSON.stringify(unseen.findings),
    );
    const offsite = await find('http://elsewhere.test/x');
    await close();
    assert.ok(
      offsite.findings.some((f) => f.place === 'scope' && /out of scope: (offsite|private)/.test(f.text)),
      JSON.stringify(offsite.findings),
    );
    // A URL still waiting in the queue: the crawl is over and its workers are gone, so an enqueued URL stays waiting in
    // the compact frontier (no worker calls for a window of jobs).
    await vscode.commands.executeCommand('crawlStudio.enqueueUrl', taskUri, `${site.url}/about.html?x=1`);
    const waiting = await find(`${site.url}/about.html?x=1`);
    await close();
    assert.ok(
      waiting.findings.some(
        (f) =>
          f.place === 'queue' &&
          /^waiting in the frontier \(not a job yet\): priority band 1000, next of its host$/.test(f.text),
      ),
      JSON.stringify(waiting.findings),
    );
    assert.ok(waiting.findings.some((f) => f.place === 'store' && /no stored item/.test(f.text)));
  });
});
