import * as assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { DashboardData, ToDashboard } from '../../../src/extension/dashboard/protocol';
import type { CrawlStudioApi } from '../../../src/extension/extension';
import type { JobNode, QueueNode, StateNode } from '../../../src/extension/explorer/nodes';
import { serveSite, type SiteServer } from '../../../src/demo/site';
import { startRedis, type RedisServer } from '../../support/services';
import { demoShopTask } from '../../support/demoTask';
import { activateWith, restoreSettings, until } from '../support';
import { Redis } from 'ioredis';
import { readTaskFigures } from '../../../src/observe/taskFigures';

// Issue 23, item 4: one source of truth per figure. A real crawl with pages robots.txt refuses and a page that
// fails, and a failed job retried from the tree while the crawl runs: the finish notification, the Queue
// Explorer's groups and the dashboard must give the same figures, skipped pages have their own group, and a run
// reopened after its end keeps its elapsed time going.

async function dashboard(task: string): Promise<DashboardData | undefined> {
  const all =
    (await vscode.commands.executeCommand<
      { task: string; lastPosted: Partial<Record<ToDashboard['type'], ToDashboard>> }[]
    >('crawlStudio.dashboard.testState')) ?? [];
  const d = all.find((x) => x.task === task)?.lastPosted.data;
  return d?.type === 'data' ? d.data : undefined;
}

describe('Figures that agree: explorer, finish message, dashboard (real crawl)', function () {
  this.timeout(180_000);
  let redis: RedisServer;
  let site: SiteServer;
  let api: CrawlStudioApi;
  let taskUri: vscode.Uri;
  let finished: { message: string; failed: number; skipped: number; done: number } | null = null;
  let sub: vscode.Disposable | undefined;

  before(async () => {
    redis = await startRedis();
    // Books 3 and 7 are refused by robots.txt; book 5 answers 404. Slow and polite, so the crawl outlasts the
    // retry the test makes while it runs (~6 s, set by the per-host delay).
    site = await serveSite(
      { listPages: 3, perPage: 8 },
      0,
      (req, res) => {
        if (req.url === '/robots.txt') {
          res
            .writeHead(200, { 'content-type': 'text/plain' })
            .end('User-agent: *\nDisallow: /catalogue/book-3.html\nDisallow: /catalogue/book-7.html\n');
          return true;
        }
        if (req.url === '/catalogue/book-5.html') {
          res.writeHead(404).end('gone');
          return true;
        }
        return false;
      },
      20,
    );
    api = await activateWith({ redisUrl: redis.url, workers: 1, concurrency: 2 });
    const dir = mkdtempSync(join(tmpdir(), 'cs-figures-'));
    const file = join(dir, 'figs.crawl.yaml');
    writeFileSync(file, demoShopTask({ name: 'figs', siteUrl: site.url, perHost: { concurrency: 1, delay: '200ms' } }));
    taskUri = vscode.Uri.file(file);
    sub = api.crawls.onDidFinish(({ task, message, result }) => {
      const s = result.status.stats!;
      if (task === 'figs') finished = { message, failed: s.failed, skipped: s.skipped.robots ?? 0, done: s.done };
    });
  });

  after(async () => {
    sub?.dispose();
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    await vscode.commands.executeCommand('crawlStudio.stopWorkers');
    await restoreSettings(api, ['redisUrl', 'workers', 'concurrency']);
    await site?.close();
    await redis?.stop();
  });

  // The queue is listed once the session has started the run (Start Crawl answers before that).
  const queueNode = async (): Promise<QueueNode> =>
    until('the queue in the explorer', async () => {
      await api.tree.refresh();
      return api.tree.queueNodes().find((n) => n.name === 'figs');
    });
  const group = async (state: string): Promise<StateNode> =>
    ((await api.tree.getChildren(await queueNode())) as StateNode[]).find((s) => s.state === state)!;
  const rows = async (state: string) => {
    const g = await group(state);
    g.jobs = []; // read afresh
    return (await api.tree.getChildren(g)) as JobNode[];
  };

  /** The dashboard's figures, the explorer row's and the Hosts table's beside the read-model's, read now. */
  const sideBySide = async (d: DashboardData) => {
    const client = new Redis(redis.url);
    try {
      const f = await readTaskFigures(client, 'figs');
      assert.equal(d.pagesPerSec, f.rate.pagesPerSec, 'dashboard pages/s');
      assert.ok(f.rate.label.includes(d.rateWindow), `rate window: ${d.rateWindow} / ${f.rate.label}`);
      assert.deepEqual(d.queue, f.queue, 'dashboard queue');
      assert.equal(d.eta.state, f.eta.state, 'dashboard ETA');
      assert.equal(d.eta.seconds, f.eta.seconds);
      assert.equal(d.run?.elapsedMs, f.elapsedMs, 'dashboard duration');
      assert.equal(d.counters.find((c) => c.label === 'Failed')?.value, f.pages.failed);
      assert.equal(
        d.hosts.reduce((a, h) => a + h.failed, 0),
        f.pages.failed,
        'Hosts failed beside the Failed card',
      );
      const q = await queueNode();
      assert.ok(
        String(api.tree.getTreeItem(q).description).includes(f.queue.text),
        `explorer row: ${api.tree.getTreeItem(q).description} / ${f.queue.text}`,
      );
    } finally {
      client.disconnect();
    }
  };

  it('counts a failed job retried mid-crawl once, in the finish message and the explorer alike', async () => {
    await api.connection.get();
    await api.crawls.start(await vscode.workspace.openTextDocument(taskUri));
    // The 404 fails early (the first list page links to it); the crawl still has pages to go.
    const failed = await until('the 404 in the failed group while the crawl runs', async () => {
      const jobs = await rows('failed');
      return jobs.length === 1 ? jobs[0] : undefined;
    });
    assert.ok(api.crawls.get('figs'), 'the crawl still runs: the retry happens mid-crawl');
    const hitsBefore = site.hits.get('/catalogue/book-5.html') ?? 0;
    await vscode.commands.executeCommand('crawlStudio.job.retry', failed);
    await until('the crawl to finish', () => finished, 120_000);
    assert.ok(
      (site.hits.get('/catalogue/book-5.html') ?? 0) > hitsBefore,
      'the retried job ran again (and failed again)',
    );

    const q = await queueNode();
    const f = finished!;
    assert.equal(f.failed, 1, `the run counts the 404 once, not once per attempt: ${f.message}`);
    assert.match(f.message, / 1 failed\b/);
    assert.equal(q.snapshot.counts.failed, f.failed, "the explorer's failed group is the finish message's figure");
    assert.equal((await rows('failed')).length, 1);
  });

  it('shows skipped pages as their own group, not under completed', async () => {
    const q = await queueNode();
    const states = ((await api.tree.getChildren(q)) as StateNode[]).map((s) => s.state);
    assert.deepEqual(states, [
      'frontier',
      'waiting',
      'prioritized',
      'active',
      'delayed',
      'completed',
      'skipped',
      'failed',
    ]);
    const f = finished!;
    assert.equal(f.skipped, 2, 'books 3 and 7 refused by robots.txt');
    assert.equal(q.snapshot.counts.skipped, 2);
    assert.match(f.message, / 2 skipped\b/);
    assert.equal(q.snapshot.counts.completed, f.done, 'completed is the pages fetched, as the finish message says');
    const skipped = await rows('skipped');
    assert.deepEqual(skipped.map((n) => new URL(n.job.data.url).pathname).sort(), [
      '/catalogue/book-3.html',
      '/catalogue/book-7.html',
    ]);
    assert.match(String(api.tree.getTreeItem(skipped[0]!).description), /skipped: robots\.txt/);
    const completed = await rows('completed');
    assert.ok(completed.length > 0);
    assert.ok(
      completed.every((n) => n.job.returnvalue?.outcome !== 'skipped'),
      'no skipped page among the completed',
    );
    assert.match(String(api.tree.getTreeItem(q).description), /1 failed · 2 skipped/);
  });

  it("counts neither the time since its end nor the wait for a worker in a reopened run's elapsed time (issue 32)", async () => {
    assert.deepEqual(await vscode.commands.executeCommand('crawlStudio.openDashboard', taskUri), { task: 'figs' });
    const done = await until('the finished run on the dashboard', async () => {
      const d = await dashboard('figs');
      return d?.run?.state === 'finished' ? d : undefined;
    });
    const counters = Object.fromEntries(done.counters.map((c) => [c.label, c.value]));
    assert.equal(counters['Failed'], finished!.failed);
    assert.equal(counters['Pages done'], finished!.done);
    // Side by side with the read-model every view formats (issue 32, item 3): the finished run's state does not move.
    await sideBySide(done);
    // A URL enqueued after the end reopens the run (no worker takes it: nothing else changes).
    await vscode.commands.executeCommand('crawlStudio.enqueueUrl', taskUri, `${site.url}/about.html`);
    const reopened = await until('the reopened run on the dashboard', async () => {
      const d = await dashboard('figs');
      return d?.run?.state === 'running' ? d : undefined;
    });
    assert.equal(reopened.run!.finishedAt, null, 'a running run has no finish time');
    const later = await until('a later post', async () => {
      const d = await dashboard('figs');
      return d && d.now > reopened.now + 1500 ? d : undefined;
    });
    // Not frozen at its old finish time either: it is the run's crawling time, as the read-model says it
    // (observe/taskFigures.ts); Start Crawl resumes it and the clock goes on from there.
    assert.equal(
      later.run!.elapsedMs,
      done.run!.elapsedMs,
      `elapsed ${done.run!.elapsedMs}, then ${later.run!.elapsedMs} ms while no worker ran`,
    );
    assert.equal(later.eta.state, 'no-worker');
    assert.equal(later.queue.total, 1, 'the enqueued URL waits');
    assert.equal(later.queue.text, '1 waiting · 0 active');
    await sideBySide(later);
  });
});
