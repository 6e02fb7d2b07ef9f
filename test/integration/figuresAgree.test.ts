import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import type { CrawlTask } from '../../src/core/task/model';
import { pauseTask, resumeTask } from '../../src/frontier/control';
import { PartitionsByTask } from '../../src/frontier/partitions';
import { dashboardData, WorkerRates } from '../../src/extension/dashboard/data';
import { QueueModel } from '../../src/extension/explorer/queueModel';
import type { TaskDetail } from '../../src/monitor/views';
import { retryFailureGroup } from '../../src/observe/failures';
import { describeAttempts, describeQueue, WAITING_GROUPS } from '../../src/observe/figures';
import { readHealth } from '../../src/observe/health';
import { readTaskFigures, type TaskFigures } from '../../src/observe/taskFigures';
import type { TaskStatus } from '../../src/observe/taskStatus';
import { launchCrawl, type CrawlLaunch } from '../../src/run/launcher';
import type { Progress } from '../../src/run/session';
import { WORKER_SCRIPT, writeTask } from '../support/crawl';
import { freePort, serveHttp, startRedis, type HttpServer, type RedisServer } from '../support/services';
import { until } from '../support/until';
import { pagesTaskYaml } from '../support/pagesSite';

// Issue 32, item 3: "pages/s 0.4, 1.0 and 0.7 at once; after retries Hosts said 4 failed and the Failed card 2; the
// queue row said '28 waiting' while its `waiting` child said 0". Every figure shown in two places, side by side,
// read from one Redis state: the read-model (observe/taskFigures.ts), `crawl-studio status --json` (the CLI, its own
// process), the web monitor's JSON API (`crawl-studio monitor`, its own process), the dashboard's data and the Queue
// Explorer's model (the extension's, computed as its views compute them), and the session's progress (the status
// bar's and the CLI progress line's input). Three moments: during a crawl (paused, so nothing moves between the
// reads), after Retry all of a failed page, and after a Stop. Real redis-server, worker processes and HTTP site.

const exec = promisify(execFile);
const CLI = resolve('dist/cli.js');
const PAGES = 120;
const NAME = 'agree';

/** The site: a home page linking PAGES pages, one that fails (HTTP 500) until `fixed`, and one that is gone (404). */
function site(state: { fixed: boolean }): Promise<HttpServer> {
  return serveHttp((req, res) => {
    const url = req.url ?? '/';
    if (url === '/robots.txt') return void res.writeHead(404).end();
    if (url === '/flaky' && !state.fixed) return void res.writeHead(500).end('down');
    if (url === '/missing') return void res.writeHead(404).end('gone');
    const body =
      url === '/'
        ? `<h1>home</h1>${Array.from({ length: PAGES }, (_, i) => `<a href="/p${i}">p${i}</a>`).join('')}<a href="/flaky">flaky</a><a href="/missing">missing</a>`
        : `<h1>page ${url}</h1><a href="/">home</a>`;
    setTimeout(() => res.writeHead(200, { 'content-type': 'text/html' }).end(body), 100);
  });
}

describe('figures agree: the read-model, status --json, the monitor, the dashboard and the explorer side by side (issue 32, item 3)', function () {
  this.timeout(300_000);
  const state = { fixed: false };
  let redis: RedisServer;
  let web: HttpServer;
  let client: Redis;
  let parts: PartitionsByTask;
  let model: QueueModel;
  let task: CrawlTask;
  let monitor: ChildProcess | undefined;
  let monitorUrl: string;
  let progress: Progress | null = null;
  const launches: CrawlLaunch[] = [];

  before(async () => {
    redis = await startRedis();
    web = await site(state);
    client = new Redis(redis.url);
    parts = new PartitionsByTask(client);
    model = new QueueModel(client);
    task = await writeTask(
      pagesTaskYaml(
        NAME,
        `${web.url}/`,
        'request: { timeout: 5s, retries: { attempts: 2, backoff: fixed, delay: 100ms } }\npoliteness: { perHost: { concurrency: 4 } }',
      ),
    );
    const port = await freePort();
    monitorUrl = `http://127.0.0.1:${port}`;
    monitor = spawn(
      process.execPath,
      [CLI, 'monitor', '--redis', redis.url, '--port', String(port), '--bind', '127.0.0.1'],
      { stdio: 'ignore' },
    );
    await until(
      'the monitor to answer',
      async () => (await fetch(`${monitorUrl}/healthcheck`).catch(() => null))?.status === 200,
    );
  });

  after(async () => {
    for (const l of launches) {
      l.end();
      await l.done.catch(() => undefined);
    }
    monitor?.kill('SIGKILL');
    await parts?.close();
    await model?.close();
    client?.disconnect();
    await web?.close();
    await redis?.stop();
  });

  const launch = (): CrawlLaunch => {
    const l = launchCrawl({
      task,
      redisUrl: redis.url,
      workers: 1,
      concurrency: 4,
      workerScript: WORKER_SCRIPT,
      pollMs: 100,
      lockDurationMs: 2_000,
      stalledIntervalMs: 1_000,
      onProgress: (p) => (progress = p),
    });
    launches.push(l);
    return l;
  };
  const figures = () => readTaskFigures(client, NAME);
  const statusJson = async () =>
    JSON.parse(
      (await exec(process.execPath, [CLI, 'status', task.file, '--json', '--redis', redis.url], { timeout: 60_000 }))
        .stdout,
    ) as TaskStatus & { figures: TaskFigures };
  const api = async <T>(path: string): Promise<T> => {
    const r = await fetch(`${monitorUrl}${path}`);
    assert.equal(r.status, 200, path);
    return (await r.json()) as T;
  };

  /** Waits until two reads of the figures a second apart agree: nothing moves any more (paused, stopped, idle). */
  async function settled(): Promise<TaskFigures> {
    let last = await figures();
    await until('the figures to settle', async () => {
      await new Promise((r) => setTimeout(r, 1_000));
      const now = await figures();
      const same = JSON.stringify(now) === JSON.stringify(last) && now.queue.active === 0;
      last = now;
      return same;
    });
    return last;
  }

  /** Every figure shown in two places, from every source, at one Redis state; `moment` names it in failures. */
  async function sideBySide(moment: string): Promise<TaskFigures> {
    const f = await settled();
    const [cli, detail, health, snap] = await Promise.all([
      statusJson(),
      api<TaskDetail>(`/api/tasks/${NAME}`),
      readHealth(parts.of(NAME), task, { readFailures: true }),
      model.snapshot(NAME),
    ]);
    const dash = dashboardData(task, health, new WorkerRates(), hostname());
    assert.deepEqual(await figures(), f, `${moment}: the state moved while it was read`);
    const m = (what: string) => `${moment}: ${what}`;

    // `crawl-studio status --json` and the monitor's API: the read-model's figures, every one of them.
    assert.deepEqual(cli.figures, f, m('status --json'));
    assert.deepEqual(detail.figures, f, m('the monitor'));
    assert.deepEqual(detail.status.counts, cli.counts, m("the monitor's counts and status --json's"));
    assert.deepEqual(detail.status.stats, cli.stats, m("the monitor's counters and status --json's"));
    assert.deepEqual(detail.finished, f.pages, m("the monitor's finished pages"));
    assert.equal(detail.waiting, f.queue.waiting, m("the monitor's waiting"));
    assert.equal(detail.queued, f.queue.total, m("the monitor's queue"));
    assert.equal(detail.rates.pagesPerSec, f.rate.pagesPerSec, m("the monitor's pages/s"));
    // Hosts beside the Failed card: the monitor's and the dashboard's tables count what the cards count.
    for (const [who, hosts] of [
      ['monitor', detail.hosts],
      ['dashboard', dash.hosts],
    ] as const) {
      assert.equal(
        hosts.reduce((a, h) => a + h.failed, 0),
        f.pages.failed,
        m(`${who}'s Hosts failed vs the Failed card`),
      );
      assert.equal(
        hosts.reduce((a, h) => a + h.done, 0),
        f.pages.done,
        m(`${who}'s Hosts done vs Pages done`),
      );
    }

    // The dashboard.
    const card = (label: string) => dash.counters.find((c) => c.label === label)?.value;
    assert.equal(card('Pages done'), f.pages.done, m('dashboard Pages done'));
    assert.equal(card('Failed'), f.pages.failed, m('dashboard Failed'));
    assert.equal(card('Items'), f.items, m('dashboard Items'));
    assert.equal(dash.pagesPerSec, f.rate.pagesPerSec, m('dashboard pages/s'));
    assert.ok(
      f.rate.label.includes(dash.rateWindow),
      m(`dashboard's rate window "${dash.rateWindow}" vs "${f.rate.label}"`),
    );
    assert.deepEqual(dash.queue, f.queue, m('dashboard queue'));
    assert.equal(dash.eta.state, f.eta.state, m('dashboard ETA state'));
    assert.equal(dash.eta.seconds, f.eta.seconds, m('dashboard ETA'));
    assert.equal(dash.run?.elapsedMs, f.elapsedMs, m('dashboard duration'));
    assert.equal(dash.run?.state, f.phase, m('dashboard state'));

    // The Queue Explorer: the row's "N waiting" is its groups' sum, and every view's waiting; done and failed too.
    const c = snap.counts;
    assert.equal(describeQueue(c), f.queue.text, m('explorer row'));
    assert.equal(
      WAITING_GROUPS.reduce((a, g) => a + c[g], 0),
      f.queue.waiting,
      m('explorer waiting groups vs the row'),
    );
    assert.equal(c.completed, f.pages.done, m('explorer completed'));
    assert.equal(c.failed, f.pages.failed, m('explorer failed'));
    assert.equal(c.active, f.queue.active, m('explorer active'));

    // The session's progress (the status bar's and the progress line's figures), when a crawl is being driven.
    return f;
  }

  it('during a crawl, after Retry all of a failed page, and after a Stop', async () => {
    // ---- During a crawl: paused a third of the way, so the reads see one state.
    const first = launch();
    await until('a third of the pages', async () => (await figures()).pages.done >= PAGES / 3);
    await pauseTask(client, NAME);
    const during = await sideBySide('during a crawl (paused)');
    assert.equal(during.phase, 'paused');
    assert.equal(during.eta.seconds, null, 'no ETA while paused');
    assert.ok(during.queue.total > 0, 'pages left');
    // The status bar's figures come from the session's progress: the read-model's, at the session's last poll.
    const polled = progress!;
    await until('a poll after the state settled', async () => progress !== polled);
    assert.deepEqual(progress!.figures, during, "the session's progress (status bar, CLI line)");
    assert.equal(progress!.pagesPerSec, during.rate.pagesPerSec);
    await resumeTask(client, NAME);
    const ended = await first.done;
    assert.equal(ended.outcome, 'finished');

    // ---- Finished: two pages failed (the 500 after its two attempts, the 404).
    const finished = await sideBySide('finished');
    assert.equal(finished.phase, 'finished');
    assert.equal(finished.pages.failed, 2);
    assert.equal(finished.rate.basis, 'run');

    // ---- After Retry all of the failed page (the dashboard's Retry all, the monitor's retry): the site is fixed.
    state.fixed = true;
    assert.equal(await retryFailureGroup(parts.of(NAME), 'http-500'), 1);
    const retried = await sideBySide('after a retry');
    assert.equal(retried.pages.failed, 1, 'the retried page left the Failed card');
    assert.equal(retried.eta.state, 'no-worker', 'reopened, no worker: says so, no ETA');
    assert.equal(retried.eta.seconds, null);
    assert.equal(retried.elapsedMs, finished.elapsedMs, 'the time since the end is not crawling time');
    // Its attempts start again: never "attempt 3/2".
    const job = (await model.jobs(NAME, 'waiting', 0, 50)).find((j) => j.data?.url?.endsWith('/flaky'));
    assert.ok(job, 'the retried page waits in the explorer');
    assert.equal(
      describeAttempts(job.attemptsMade, job.opts.attempts, job.data.retried),
      'attempt 1/2 (retried by you)',
    );
    // Start Crawl resumes it: the page is fetched, the run finishes again.
    const second = await launch().done;
    assert.equal(second.outcome, 'finished');
    const fixedRun = await sideBySide('finished after the retry');
    assert.equal(fixedRun.pages.failed, 1);
    assert.equal(fixedRun.pages.done, finished.pages.done + 1);

    // ---- After a Stop: a new run stopped a third of the way.
    state.fixed = false;
    const third = launchCrawl({
      task,
      redisUrl: redis.url,
      workers: 1,
      concurrency: 2,
      workerScript: WORKER_SCRIPT,
      pollMs: 100,
      fresh: true,
      lockDurationMs: 2_000,
      stalledIntervalMs: 1_000,
      onProgress: (p) => (progress = p),
    });
    launches.push(third);
    await until('a new run a third of the way', async () => {
      const f = await figures();
      return f.phase === 'running' && f.pages.done >= PAGES / 3 && f.pages.done < PAGES;
    });
    third.end();
    assert.equal((await third.done).outcome, 'stopped');
    const stopped = await sideBySide('after a stop');
    assert.equal(stopped.phase, 'stopped');
    assert.equal(stopped.eta.state, 'stopped');
    assert.equal(stopped.eta.seconds, null);
    assert.equal(stopped.rate.basis, 'run');
  });
});
