import * as assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { DashboardData, ToDashboard } from '../../../src/extension/dashboard/protocol';
import type { CrawlStudioApi } from '../../../src/extension/extension';
import type { ResultsViewState, TableRow, ToResults } from '../../../src/extension/results/protocol';
import { changesSince, openStore } from '../../../src/store';
import { serveHttp, startRedis, type HttpServer, type RedisServer } from '../../support/services';
import { activateWith, restoreSettings, until } from '../support';

// What changed since the last crawl in the editor (issue 33): two real crawls of a site whose content changes
// between them (a price changed, an item added, one removed, one unchanged) into a real SQLite store, then the
// Results view's change filter shows exactly those rows under each filter, with the changed field's old and new
// value, and the finished run's dashboard says how many items it added, changed and removed (the counts `crawl-studio
// changes` reads), and why its notification was not delivered.

type Catalogue = Record<string, { name: string; price: string }>;
const BEFORE: Catalogue = {
  a: { name: 'Apple', price: '10.00' },
  b: { name: 'Bread', price: '2.50' },
  c: { name: 'Cheese', price: '7.00' },
};
const AFTER: Catalogue = {
  a: { name: 'Apple', price: '12.00' },
  b: { name: 'Bread', price: '2.50' },
  d: { name: 'Dates', price: '4.00' },
};

interface PanelState {
  task: string;
  view: ResultsViewState;
  lastPosted: Partial<Record<ToResults['type'], ToResults>>;
}

async function results(task: string): Promise<PanelState | undefined> {
  const all = (await vscode.commands.executeCommand<PanelState[]>('crawlStudio.results.testState')) ?? [];
  return all.find((p) => p.task === task);
}

function posted<T extends ToResults['type']>(
  p: PanelState | undefined,
  type: T,
): Extract<ToResults, { type: T }> | undefined {
  return p?.lastPosted[type] as Extract<ToResults, { type: T }> | undefined;
}

async function dashboard(task: string): Promise<DashboardData | undefined> {
  const all =
    (await vscode.commands.executeCommand<
      { task: string; lastPosted: Partial<Record<ToDashboard['type'], ToDashboard>> }[]
    >('crawlStudio.dashboard.testState')) ?? [];
  const d = all.find((x) => x.task === task)?.lastPosted.data;
  return d?.type === 'data' ? d.data : undefined;
}

describe('What changed, in the editor: the Results change filter and the dashboard (issue 33)', function () {
  this.timeout(240_000);
  let redis: RedisServer;
  let web: HttpServer;
  let hook: HttpServer;
  let api: CrawlStudioApi;
  let file: string;
  let store: string;
  let taskUri: vscode.Uri;
  let catalogue = BEFORE;
  const runs: string[] = [];
  const send = (message: unknown) =>
    vscode.commands.executeCommand<boolean>('crawlStudio.results.testMessage', file, message);

  before(async () => {
    redis = await startRedis();
    web = await serveHttp((req, res) => {
      res.setHeader('content-type', 'text/html');
      const m = /^\/p\/(\w+)$/.exec(req.url ?? '');
      if (m) {
        const it = catalogue[m[1]!];
        if (!it) return res.writeHead(404).end('<p>gone</p>');
        return res.end(
          `<article><h1>${it.name}</h1><span class="sku">${m[1]}</span><span class="price">${it.price}</span></article>`,
        );
      }
      res.end(
        `<ul>${Object.keys(catalogue)
          .map((k) => `<li><a href="/p/${k}">${k}</a></li>`)
          .join('')}</ul>`,
      );
    });
    // A webhook that refuses every message: the run's notification fails, with its reason.
    hook = await serveHttp((_req, res) => res.writeHead(400).end());
    process.env.CRAWL_STUDIO_WEBHOOK_URL = `${hook.url}/hook?token=s3cret`;
    api = await activateWith({ redisUrl: redis.url, workers: 1, concurrency: 2 });
    const dir = mkdtempSync(join(tmpdir(), 'cs-changes-'));
    file = join(dir, 'watched.crawl.yaml');
    store = join(dir, 'watched.sqlite');
    writeFileSync(
      file,
      `name: watched
start: [${web.url}/]
store: { url: "sqlite:${store}" }
notify:
  webhook: \${CRAWL_STUDIO_WEBHOOK_URL}
rules:
  - name: list
    match: ["${web.url}/"]
    follow:
      - selector: "li a"
        to: product
  - name: product
    match: ["**/p/*"]
    items:
      - type: product
        scope: article
        key: [sku]
        fields:
          sku: .sku
          name: h1
          price: .price
`,
    );
    taskUri = vscode.Uri.file(file);
    // Two runs: the second sees a's new price, d added and c gone; b is unchanged.
    for (const c of [BEFORE, AFTER]) {
      catalogue = c;
      const rc = await api.crawls.start(await vscode.workspace.openTextDocument(taskUri));
      const result = await rc.done;
      assert.ok(result.summary, 'the run finalized');
      runs.push(result.run.run);
    }
  });

  after(async () => {
    delete process.env.CRAWL_STUDIO_WEBHOOK_URL;
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    await vscode.commands.executeCommand('crawlStudio.stopWorkers');
    await restoreSettings(api, ['redisUrl', 'workers', 'concurrency']);
    await web?.close();
    await hook?.close();
    await redis?.stop();
  });

  /** Applies a view and reads back the rows the webview would be sent, all of them. */
  async function rowsUnder(
    view: Partial<ResultsViewState>,
  ): Promise<{ rows: readonly TableRow[]; total: number; stored: number }> {
    const before = posted(await results('watched'), 'count')?.generation ?? -1;
    const full: ResultsViewState = {
      itemType: 'product',
      filters: {},
      sort: null,
      hidden: [],
      showQuality: false,
      ...view,
    };
    assert.equal(await send({ type: 'query', view: full, seq: 1 }), true);
    const count = await until('the count of the new query', async () => {
      const c = posted(await results('watched'), 'count');
      return c && c.generation > before ? c : undefined;
    });
    await send({ type: 'rows', generation: count.generation, offset: 0, limit: 100 });
    // The answer is posted when it is read: wait for this query's, not the last one posted.
    const rows = await until('the rows of the new query', async () => {
      const r = posted(await results('watched'), 'rows');
      return r && r.generation === count.generation ? r : undefined;
    });
    return { rows: rows.rows, total: count.total, stored: count.stored };
  }

  it('filters the Results view by added, changed and removed in the latest complete run, with old and new values', async () => {
    await vscode.commands.executeCommand('crawlStudio.openResults', taskUri);
    const init = await until('the results panel', async () => posted(await results('watched'), 'init'));
    // The runs with history, as `crawl-studio changes` counts them (the same read-model).
    const cli = await openStore(`sqlite:${store}`, { task: 'watched', cwd: tmpdir() });
    const report = await changesSince(cli, 'watched', { since: '2000-01-01' }).finally(() => cli.close());
    assert.deepEqual(
      init.changes.runs.map((r) => [r.id, r.added, r.changed, r.removed, r.complete]),
      report.runs.map((r) => [r.run, r.added, r.changed, r.removed, r.complete]),
    );
    assert.deepEqual(
      init.changes.runs.map((r) => [r.id, r.added, r.changed, r.removed]),
      [
        [runs[0], 3, 0, 0],
        [runs[1], 1, 1, 1],
      ],
    );
    assert.equal(init.changes.latest, runs[1]);

    const keys = (r: readonly TableRow[]) => r.map((x) => `${x.change?.kind ?? 'stored'}:${x.key}`);
    const added = await rowsUnder({ changes: 'added' });
    assert.deepEqual(keys(added.rows), ['added:d']);
    assert.equal(added.rows[0]!.cells.name, 'Dates');
    assert.equal(added.stored, 3, 'three items of the type changed in the run');
    assert.equal(
      posted(await results('watched'), 'init')!.changes.shown,
      runs[1],
      'the latest complete run by default',
    );

    const changed = await rowsUnder({ changes: 'changed' });
    assert.deepEqual(keys(changed.rows), ['changed:a']);
    assert.deepEqual(changed.rows[0]!.change!.fields, [{ field: 'price', old: '10.00', new: '12.00' }]);
    assert.equal(changed.rows[0]!.cells.price, '12.00');
    assert.equal(changed.rows[0]!.cells.name, 'Apple');
    // The row detail has the whole old and new value.
    await send({ type: 'detail', offset: 0 });
    const detail = await until('the detail of the changed row', async () => {
      const d = posted(await results('watched'), 'detail');
      return d?.detail.key === 'a' ? d.detail : undefined;
    });
    assert.deepEqual(detail.change, {
      kind: 'changed',
      run: runs[1],
      fields: [{ field: 'price', old: '10.00', new: '12.00' }],
    });

    // The removed item comes from its history, with its last values.
    const removed = await rowsUnder({ changes: 'removed' });
    assert.deepEqual(keys(removed.rows), ['removed:c']);
    assert.equal(removed.rows[0]!.cells.name, 'Cheese');
    assert.equal(removed.rows[0]!.cells.price, '7.00');

    const all = await rowsUnder({ changes: 'all' });
    assert.deepEqual(keys(all.rows), ['changed:a', 'removed:c', 'added:d'], 'b is unchanged: never a change row');
    // Exported as `crawl-studio export --changes` writes them: one record per change.
    const out = join(tmpdir(), `cs-changes-${process.pid}.csv`);
    assert.equal(await vscode.commands.executeCommand<number>('crawlStudio.results.testExport', file, 'csv', out), 3);
    const csv = readFileSync(out, 'utf8').trim().split(/\r?\n/);
    assert.equal(csv[0], 'run,type,key,change,field,old,new,at');
    assert.deepEqual(
      csv.slice(1).map((l) => l.split(',').slice(2, 5).join(',')),
      ['a,changed,price', 'c,removed,', 'd,added,'],
    );
    rmSync(out, { force: true });
    const cols = posted(await results('watched'), 'count')!.columns;
    assert.equal(cols[0], '_change');
    // Column filters and sort apply to the change rows as to the table.
    const filtered = await rowsUnder({
      changes: 'all',
      filters: { name: 'es' },
      sort: { field: 'price', descending: true },
    });
    assert.deepEqual(keys(filtered.rows), ['removed:c', 'added:d'], 'Cheese 7.00 then Dates 4.00');

    // An earlier run: the first added all three.
    const first = await rowsUnder({ changes: 'all', changeRun: runs[0] });
    assert.deepEqual(keys(first.rows), ['added:a', 'added:b', 'added:c']);
    assert.equal(posted(await results('watched'), 'init')!.changes.shown, runs[0]);

    // No change filter: the stored items of the latest run, b among them.
    const stored = await rowsUnder({});
    assert.deepEqual(stored.rows.map((r) => r.key).sort(), ['a', 'b', 'd']);
    assert.ok(stored.rows.every((r) => r.change === undefined));
  });

  it("says on the finished run's dashboard how many items it added, changed and removed, and why its notification failed", async () => {
    assert.deepEqual(await vscode.commands.executeCommand('crawlStudio.openDashboard', taskUri), { task: 'watched' });
    const d = await until(
      'the run changes and the notification outcome on the dashboard',
      async () => {
        const x = await dashboard('watched');
        return x?.changes?.notify ? x : undefined;
      },
      30_000,
    );
    assert.equal(d.run?.id, runs[1]);
    const { notify, ...counts } = d.changes!;
    assert.deepEqual(counts, { run: runs[1], added: 1, changed: 1, removed: 1, complete: true });
    assert.equal(notify!.status, 'failed');
    assert.match(notify!.reason ?? '', /the webhook answered HTTP 400/);
    assert.doesNotMatch(notify!.reason ?? '', /s3cret/, 'the URL and its token are never shown');
  });
});
