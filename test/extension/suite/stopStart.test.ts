import * as assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { CrawlStudioApi } from '../../../src/extension/extension';
import type { DashboardData, ToDashboard } from '../../../src/extension/dashboard/protocol';
import type { JobNode, StateNode } from '../../../src/extension/explorer/nodes';
import type { RetryOutcome } from '../../../src/extension/retryNotice';
import { serveSite, type SiteServer } from '../../../src/demo/site';
import { startRedis, type RedisServer } from '../../support/services';
import { demoShopTask } from '../../support/demoTask';
import { activateWith, restoreSettings, until } from '../support';

// Issue 32, items 1 and 4, in the real extension host: Stop Crawl ends the run with one "stopped" message (never
// also "finished"), the dashboard and the explorer say stopped without an ETA, and Start Crawl then begins a new
// run that fetches the pages again (the site's access log). Retry Job on the finished run says what it did and
// that no worker runs, the dashboard says so instead of "estimating" for ever, and Start Crawl finishes it.

async function dashboard(task: string): Promise<DashboardData | undefined> {
  const all =
    (await vscode.commands.executeCommand<
      { task: string; lastPosted: Partial<Record<ToDashboard['type'], ToDashboard>> }[]
    >('crawlStudio.dashboard.testState')) ?? [];
  const d = all.find((x) => x.task === task)?.lastPosted?.data;
  return d?.type === 'data' ? d.data : undefined;
}

describe('Stop, Start and Retry Job in the editor (issue 32)', function () {
  this.timeout(240_000);
  let redis: RedisServer;
  let site: SiteServer;
  let api: CrawlStudioApi;
  let taskUri: vscode.Uri;
  const messages: string[] = [];
  let sub: vscode.Disposable | undefined;
  // Test 3 holds the first page asked for after book-5's 404, so the crawl is stopped with a page in flight.
  const hold = { afterBook5: false, armed: false, url: '', release: () => {} };
  const released = () => new Promise<void>((r) => (hold.release = r));

  before(async () => {
    redis = await startRedis();
    // book-5 is a 404: a failed job to retry once the crawl finished. 40 ms a page, one at a time, 100 ms apart:
    // the crawl is still going when the test stops it.
    site = await serveSite(
      { listPages: 3, perPage: 8 },
      0,
      (req, res) => {
        if (req.url === '/catalogue/book-5.html') {
          res.writeHead(404).end('gone');
          hold.armed ||= hold.afterBook5;
          hold.afterBook5 = false;
          return true;
        }
        if (hold.armed) {
          hold.armed = false;
          hold.url = req.url ?? '';
          void released().then(() => res.writeHead(200, { 'content-type': 'text/html' }).end('<p>held</p>'));
          return true;
        }
        return false;
      },
      40,
    );
    api = await activateWith({ redisUrl: redis.url, workers: 1, concurrency: 1 });
    const dir = mkdtempSync(join(tmpdir(), 'cs-stop-'));
    const file = join(dir, 'stopper.crawl.yaml');
    writeFileSync(
      file,
      demoShopTask({
        name: 'stopper',
        siteUrl: site.url,
        retries: { attempts: 1, delay: '50ms' },
        perHost: { concurrency: 1, delay: '100ms' },
      }),
    );
    taskUri = vscode.Uri.file(file);
    // The one message the editor shows when a crawl ends (extension.ts shows exactly this text).
    sub = api.crawls.onDidFinish((e) => e.task === 'stopper' && messages.push(e.message));
  });

  after(async () => {
    sub?.dispose();
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    if (api?.crawls.get('stopper')) await api.crawls.stop('stopper');
    await vscode.commands.executeCommand('crawlStudio.stopWorkers');
    await restoreSettings(api, ['redisUrl', 'workers', 'concurrency']);
    await site?.close();
    await redis?.stop();
  });

  const start = async () => api.crawls.start(await vscode.workspace.openTextDocument(taskUri));

  it('Stop Crawl ends the run with one "stopped" message; the views say stopped; Start Crawl begins a new run', async () => {
    const rc = await start();
    await until('a few pages', () => (rc.status?.stats?.done ?? 0) >= 3);
    const outcome = await vscode.commands.executeCommand('crawlStudio.stopCrawl', 'stopper');
    assert.equal(outcome, 'stopped');
    await until('the end message', () => messages.length >= 1);
    assert.equal(messages.length, 1, messages.join(' | '));
    assert.match(messages[0]!, /^Crawl 'stopper' stopped: \d+ pages, /);
    assert.match(messages[0]!, /Start Crawl begins a new run/);
    assert.equal(site.hits.get('/'), 1);

    await vscode.commands.executeCommand('crawlStudio.openDashboard', taskUri);
    const d = await until('the dashboard of the stopped run', async () => {
      const x = await dashboard('stopper');
      return x?.run?.state === 'stopped' ? x : undefined;
    });
    assert.equal(d.eta.state, 'stopped', 'no ETA for a stopped run');
    const queues = await vscode.commands.executeCommand<{ name: string }[]>('crawlStudio.refresh');
    assert.ok(queues?.some((q) => q.name === 'stopper'));
    const node = api.tree.queueNodes().find((q) => q.name === 'stopper')!;
    const row = api.tree.getTreeItem(node);
    assert.match(String(row.description), /^stopped · /);
    assert.equal(row.contextValue, 'queue.stopped');
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');

    const again = await start();
    const result = await again.done;
    assert.equal(result.resumed, false, 'a new run, not the stopped one resumed');
    assert.equal(result.outcome, 'finished');
    assert.equal(site.hits.get('/'), 2, 'the start page fetched again (access log)');
    assert.equal(site.hits.get('/catalogue/page-1.html'), 2);
    await until('the second message', () => messages.length >= 2);
    assert.equal(messages.length, 2, messages.join(' | '));
    assert.match(messages[1]!, /^Crawl 'stopper' finished: /);
    assert.equal(messages.filter((m) => /finished/.test(m)).length, 1, 'the stop was never reported as finished');
  });

  it('Retry Job on a finished crawl says what it did and that no worker runs; the dashboard says so; Start Crawl fetches it', async () => {
    await vscode.commands.executeCommand('crawlStudio.refresh');
    const queue = api.tree.queueNodes().find((q) => q.name === 'stopper')!;
    const failed = ((await api.tree.getChildren(queue)) as StateNode[]).find((s) => s.state === 'failed')!;
    const jobs = await api.tree.getChildren(failed);
    assert.equal(jobs.length, 1);
    const job = jobs[0] as JobNode;
    assert.equal(job.job.data.url, `${site.url}/catalogue/book-5.html`);
    const hits = site.hits.get('/catalogue/book-5.html') ?? 0;

    const r = await vscode.commands.executeCommand<RetryOutcome>('crawlStudio.job.retry', job);
    assert.equal(r?.retried, 1);
    assert.equal(r?.workerRunning, false);
    assert.match(r?.message ?? '', /1 failed job\(s\) of 'stopper' are back in the queue\. No worker is running/);
    const redisClient = await api.connection.get();
    assert.equal(await redisClient.hget('cs:{stopper}:#meta', 'state'), 'running', 'the finished run is reopened');

    // The queue row's "N waiting" is what its groups hold: BullMQ's waiting list is labelled "ready" (issue 32, item 3).
    await vscode.commands.executeCommand('crawlStudio.refresh');
    const reopened = api.tree.queueNodes().find((q) => q.name === 'stopper')!;
    assert.match(String(api.tree.getTreeItem(reopened).description), /^1 waiting · 0 active/);
    const groups = (await api.tree.getChildren(reopened)) as StateNode[];
    const labels = groups.map((g) => [
      String(api.tree.getTreeItem(g).label),
      String(api.tree.getTreeItem(g).description),
    ]);
    assert.ok(!labels.some(([l]) => l === 'waiting'), JSON.stringify(labels));
    assert.deepEqual(
      labels.find(([l]) => l === 'ready'),
      ['ready', '1'],
    );

    await vscode.commands.executeCommand('crawlStudio.openDashboard', taskUri);
    const d = await until('the dashboard to say no worker runs', async () => {
      const x = await dashboard('stopper');
      return x?.eta.state === 'no-worker' ? x : undefined;
    });
    assert.equal(d.run?.state, 'running');
    assert.equal(d.queue.total, 1);

    // What the message's Start Crawl button runs: the reopened run is resumed and finished.
    const rc = await start();
    const result = await rc.done;
    assert.equal(result.resumed, true);
    assert.equal(result.outcome, 'finished');
    assert.equal(site.hits.get('/catalogue/book-5.html'), hits + 1, 'the retried page was fetched');
    // It failed again (still a 404): its attempts started again with the retry, never "attempt 2/1".
    await vscode.commands.executeCommand('crawlStudio.refresh');
    const again = api.tree.queueNodes().find((q) => q.name === 'stopper')!;
    const failedAgain = ((await api.tree.getChildren(again)) as StateNode[]).find((s) => s.state === 'failed')!;
    const row = api.tree.getTreeItem(((await api.tree.getChildren(failedAgain)) as JobNode[])[0]!);
    assert.match(String(row.description), /^attempt 1\/1 \(retried by you\) · /);
    const done = await until('the dashboard of the finished run', async () => {
      const x = await dashboard('stopper');
      return x?.run?.state === 'finished' ? x : undefined;
    });
    assert.equal(done.eta.state, 'finished');
  });

  it('Start and Retry Job while a stopped crawl winds down: Retry is refused, Start waits and begins the next', async () => {
    hold.afterBook5 = true;
    const rc = await start();
    await until('a page held in flight after book-5 failed', () => hold.url !== '', 120_000);
    const book5 = `${site.url}/catalogue/book-5.html`;
    const failedJob = async () => {
      await vscode.commands.executeCommand('crawlStudio.refresh');
      const queue = api.tree.queueNodes().find((q) => q.name === 'stopper');
      const failed = queue && ((await api.tree.getChildren(queue)) as StateNode[]).find((s) => s.state === 'failed');
      const jobs = failed ? ((await api.tree.getChildren(failed)) as JobNode[]) : [];
      return jobs.find((j) => j.job.data.url === book5);
    };
    const job = await until('book-5 failed in this run', failedJob);
    const stopping = api.crawls.stop('stopper');
    assert.equal(api.crawls.get('stopper'), rc, 'the stopped crawl winds down: its worker holds a page');
    assert.equal(rc.launch.takingPages, false);

    // Stop ends the run for good: a retry reopened it, and with it every page it had left waiting (the way around
    // Resume, which a stopped run refuses). The command reports the engine's refusal and answers undefined.
    const redisClient = await api.connection.get();
    await until('the run stopped', async () => (await redisClient.hget('cs:{stopper}:#meta', 'state')) === 'stopped');
    const r = await vscode.commands.executeCommand<RetryOutcome>('crawlStudio.job.retry', job);
    assert.equal(r, undefined, 'refused');
    assert.equal(await redisClient.hget('cs:{stopper}:#meta', 'state'), 'stopped', 'not reopened');
    assert.ok(await failedJob(), 'book-5 is still failed');
    // Nor does the explorer offer it: Retry Job's menu is for `job.failed` (package.json), Enqueue URL not on a
    // stopped queue.
    await until('the explorer to show the stopped run', async () => {
      const j = await failedJob();
      return j && api.tree.getTreeItem(j).contextValue === 'job.failed.over';
    });
    const stoppedQueue = api.tree.queueNodes().find((q) => q.name === 'stopper')!;
    assert.equal(api.tree.getTreeItem(stoppedQueue).contextValue, 'queue.stopped');

    // Start now (the message's button) waits for the stopped crawl, then begins the next session.
    const next = start();
    const early = await Promise.race([
      next.then(() => 'returned'),
      new Promise<string>((r) => setTimeout(() => r('waiting'), 3_000)),
    ]);
    assert.equal(early, 'waiting', 'Start returned the crawl that was stopping, and started nothing');
    const hitsBefore = site.hits.get('/catalogue/book-5.html') ?? 0;
    hold.release();
    await stopping;
    const again = await next;
    assert.notEqual(again, rc);
    assert.equal(api.crawls.get('stopper'), again);
    const result = await again.done;
    assert.equal(result.outcome, 'finished');
    assert.ok((site.hits.get('/catalogue/book-5.html') ?? 0) > hitsBefore, 'book-5 fetched again, by the new run');
  });
});
