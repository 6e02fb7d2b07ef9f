import * as assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { DashboardData, ToDashboard } from '../../../src/extension/dashboard/protocol';
import type { CrawlStudioApi } from '../../../src/extension/extension';
import { serveSite, type SiteServer } from '../../../src/demo/site';
import { startRedis, type RedisServer } from '../../support/services';
import { demoShopTask } from '../../support/demoTask';
import { activateWith, restoreSettings, until } from '../support';

// The crawl dashboard against a real crawl: metrics arrive and move while it runs, history is in Redis (a
// reopened dashboard shows the run so far), failures are grouped by cause with sample URLs, and "Retry all of
// this group" sends exactly that group's failed jobs back to the queue.

async function data(task: string): Promise<DashboardData | undefined> {
  const all =
    (await vscode.commands.executeCommand<
      { task: string; lastPosted: Partial<Record<ToDashboard['type'], ToDashboard>> }[]
    >('crawlStudio.dashboard.testState')) ?? [];
  const p = all.find((x) => x.task === task)?.lastPosted;
  if (p?.error?.type === 'error') lastError = p.error.message;
  const d = p?.data;
  return d?.type === 'data' ? d.data : undefined;
}

let lastError = '';

describe('Crawl dashboard (real crawl)', function () {
  this.timeout(180_000);
  let redis: RedisServer;
  let site: SiteServer;
  let api: CrawlStudioApi;
  let file: string;
  let taskUri: vscode.Uri;
  let broken = true;

  before(async () => {
    redis = await startRedis();
    // Books 3 and 4 answer 503 until the test "fixes" the site; book 9 is a 404.
    // ~5 s of crawl (the per-host delay): long enough for a heartbeat and a few samples on a fast machine.
    site = await serveSite(
      { listPages: 4, perPage: 10 },
      0,
      (req, res) => {
        if (broken && /^\/catalogue\/book-[34]\.html/.test(req.url ?? '')) {
          res.writeHead(503).end('busy');
          return true;
        }
        if (req.url?.startsWith('/catalogue/book-9.html')) {
          res.writeHead(404).end('gone');
          return true;
        }
        return false;
      },
      60,
    );
    api = await activateWith({ redisUrl: redis.url, workers: 1, concurrency: 2 });
    const dir = mkdtempSync(join(tmpdir(), 'cs-dash-'));
    file = join(dir, 'dash.crawl.yaml');
    writeFileSync(
      file,
      demoShopTask({
        name: 'dash',
        siteUrl: site.url,
        retries: { attempts: 2, delay: '50ms' },
        perHost: { concurrency: 2, delay: '100ms' },
        headerLinks: true,
      }),
    );
    taskUri = vscode.Uri.file(file);
  });

  // The crawl manager directly, not the Start Crawl command: the command also refreshes the Queue Explorer,
  // whose model would then stay bound to this suite's Redis client after the suite resets the connection.
  const startCrawl = async () => api.crawls.start(await vscode.workspace.openTextDocument(taskUri));

  after(async () => {
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    await vscode.commands.executeCommand('crawlStudio.stopWorkers');
    await restoreSettings(api, ['redisUrl', 'workers', 'concurrency']);
    await site?.close();
    await redis?.stop();
  });

  it('receives metrics that move while the crawl runs', async () => {
    await startCrawl();
    assert.deepEqual(await vscode.commands.executeCommand('crawlStudio.openDashboard', taskUri), { task: 'dash' });
    const first = await until('running data', async () => {
      const d = await data('dash');
      return d?.run?.state === 'running' ? d : undefined;
    });
    assert.equal(first.file, file);
    // The worker shows while the crawl runs (a worker that exits cleanly removes its heartbeat, and a fast machine
    // can finish this crawl before the series has grown): wait for it on its own.
    const withWorker = await until('the local worker from its heartbeat', async () => {
      const d = await data('dash');
      return d && d.workers.length >= 1 ? d : undefined;
    });
    assert.equal(withWorker.workers[0]!.local, true);
    const moved = await until('the series to grow and pages to be done', async () => {
      const d = await data('dash');
      return d && d.series.t.length >= 3 && (d.counters.find((c) => c.label === 'Pages done')?.value ?? 0) > 0
        ? d
        : undefined;
    });
    assert.ok(
      moved.series.pages.some((v) => v > 0),
      'a non-zero pages/s point',
    );
    await until('the crawl to finish', () => !api.crawls.get('dash'), 120_000);
    const done = await until(
      'finished data',
      async () => {
        const d = await data('dash');
        return d?.run?.state === 'finished' ? d : undefined;
      },
      20_000,
    );
    assert.equal(done.eta.state, 'finished');
    assert.ok(done.hosts.length === 1 && done.hosts[0]!.done > 0, JSON.stringify(done.hosts));
    const robots = done.skipped.find((g) => g.group === 'robots');
    assert.ok(robots && robots.count === 1, JSON.stringify(done.skipped));
  });

  it('groups failures by cause with sample URLs', async () => {
    const d = await until(
      'failure groups',
      async () => {
        const x = await data('dash');
        // Both groups whole: a worker counts a failure just before BullMQ moves its job to the failed set, so a
        // refresh in between shows the group with a job (and a sample URL) short until the next re-read.
        const by = (g: string) => x?.failures.find((f) => f.group === g);
        return x && x.failures.length === 2 && by('http-503')?.jobs === 2 && by('http-404')?.jobs === 1 ? x : undefined;
      },
      20_000,
    ).catch(async (err: Error) => {
      throw new Error(`${err.message}: ${JSON.stringify((await data('dash'))?.failures)} ${lastError}`);
    });
    const f503 = d.failures.find((g) => g.group === 'http-503')!;
    const f404 = d.failures.find((g) => g.group === 'http-404')!;
    assert.equal(f503.count, 2);
    assert.equal(f503.jobs, 2);
    assert.equal(f503.label, 'HTTP 503');
    assert.deepEqual([...f503.urls].sort(), [`${site.url}/catalogue/book-3.html`, `${site.url}/catalogue/book-4.html`]);
    assert.equal(f404.count, 1);
  });

  it('keeps the history in Redis: a reopened dashboard shows the run so far', async () => {
    const before = (await data('dash'))!.series.t.length;
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    await until('the panel to close', async () => !(await data('dash')));
    await vscode.commands.executeCommand('crawlStudio.openDashboard', taskUri);
    const d = await until('data again', () => data('dash'));
    assert.ok(d.series.t.length >= before - 1, `${d.series.t.length} points after reopening, ${before} before`);
  });

  it('retries all failed jobs of one group, not the others', async () => {
    broken = false;
    assert.equal(
      await vscode.commands.executeCommand('crawlStudio.dashboard.testMessage', file, {
        type: 'retryGroup',
        group: 'http-999',
      }),
      false,
      'a group the dashboard does not show is refused',
    );
    assert.equal(
      await vscode.commands.executeCommand('crawlStudio.dashboard.testMessage', file, {
        type: 'retryGroup',
        group: 'http-503',
      }),
      true,
    );
    const all = await vscode.commands.executeCommand<{ task: string; lastPosted: Record<string, ToDashboard> }[]>(
      'crawlStudio.dashboard.testState',
    );
    const retried = all.find((p) => p.task === 'dash')!.lastPosted.retried;
    assert.deepEqual(retried, { type: 'retried', group: 'http-503', count: 2 });
    const redisClient = await api.connection.get();
    assert.equal(await redisClient.hget('cs:{dash}:#meta', 'state'), 'running', 'the finished run is reopened');
    // Read the queue directly: crawlStudio.refresh would bind the Queue Explorer's model to this suite's Redis.
    const failedJobs = await redisClient.zcard('cs:{dash}:dash:failed');
    const waiting =
      (await redisClient.llen('cs:{dash}:dash:wait')) + (await redisClient.zcard('cs:{dash}:dash:prioritized'));
    assert.equal(failedJobs, 1, 'only the 404 stays failed');
    assert.equal(waiting, 2);
    // Resume: the two pages are fetched now that the site answers.
    await startCrawl();
    await until(
      'the retried pages to be stored',
      async () => {
        const d = await data('dash');
        return d &&
          d.failures.every((g) => g.group !== 'http-503') &&
          d.counters.find((c) => c.label === 'Items')?.value === 39
          ? d
          : undefined;
      },
      90_000,
    );
    await until('the resumed crawl to finish', () => !api.crawls.get('dash'), 60_000);
  });
});
