import assert from 'node:assert/strict';
import { parseTask } from '../../src/core/task/parse';
import type { CrawlTask } from '../../src/core/task/model';
import { fingerprintHex } from '../../src/core/url/fingerprint';
import { requestKey, type JobRequest, type SeriesRef } from '../../src/core/request/build';
import { CrawlQueue } from '../../src/frontier/crawl';
import type { FrontierLink } from '../../src/frontier/types';
import { fillBatch, frontierArgs } from '../../src/frontier/scriptArgs';
import { dropWaiting } from '../../src/frontier/dropWaiting';
import { withScripts } from '../../src/frontier/scripts';
import { listFrontier } from '../../src/observe/frontier';
import { connectRedis } from '../../src/redis/connect';
import { readJobCounts } from '../../src/observe/taskStatus';
import { retryFailedJobs } from '../../src/observe/failures';
import { UnrecoverableError, Worker } from 'bullmq';
import { serveHttp, startRedis, type RedisServer } from '../support/services';
import { session, writeTask } from '../support/crawl';
import { until } from '../support/until';

// The compact frontier (issue 19): waiting pages are short records in per-host lists, and only a window of them, sized
// to the fleet, are BullMQ jobs. These tests drive the frontier's scripts directly, on a real Redis: what becomes a
// job and when (bands, hosts in turn, a host's delay and cap), what happens to a page whose taker dies before adding
// its job, when a run counts as drained, and forced fetches.

function taskOf(extra = '', follow = '{ selector: a, to: page }'): CrawlTask {
  const r = parseTask(
    `name: front\nstart: [http://a.test/]\n${extra}\nrules:\n  - name: page\n    follow: [${follow}]\n  - name: other-page\n    match: ["**/other/**"]\n`,
    't.crawl.yaml',
  );
  assert.ok(r.task, JSON.stringify(r.diagnostics));
  return r.task;
}

const link = (url: string, o: Partial<FrontierLink> = {}): FrontierLink => ({
  url,
  host: new URL(url).host,
  rule: 'page',
  depth: 1,
  priority: null,
  ...o,
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the compact frontier and its window (real Redis)', function () {
  this.timeout(60_000);
  let redis: RedisServer;
  let conn: ReturnType<typeof connectRedis>;
  const queues: CrawlQueue[] = [];
  before(async () => {
    redis = await startRedis();
    conn = connectRedis(redis.url);
  });
  after(async () => {
    conn?.disconnect();
    await redis?.stop();
  });
  afterEach(async () => {
    await Promise.all(queues.splice(0).map((q) => q.close()));
  });

  /** A queue whose window holds `target` pages (a fleet of that size), with a short lease. */
  function queue(task: CrawlTask, target: number, leaseMs = 30_000): CrawlQueue {
    const q = new CrawlQueue(conn, task.name, conn, { windowTarget: async () => target, leaseMs });
    queues.push(q);
    return q;
  }

  it('keeps waiting pages in the frontier and makes jobs of a window of them, hosts in turn, a host never past its cap', async () => {
    const task = taskOf('politeness: { perHost: { concurrency: 1 } }');
    const idle = queue(task, 0);
    const { run } = await idle.startRun(task, { fresh: true });
    const links: FrontierLink[] = [];
    for (let h = 0; h < 5; h++)
      for (let p = 0; p < 20; p++) links.push(link(`http://h${h}.test/p/${p}?x=${p}`, { depth: 2 }));
    links.push(link('https://h0.test/other/q', { rule: 'other-page', lastmod: 1_700_000_000_123 }));
    const outcomes = await idle.enqueueLinks(task, run, links);
    assert.equal(outcomes.filter((o) => o === 'enqueued').length, 101);
    let counts = await readJobCounts(conn, idle.taskName);
    assert.equal(counts.frontier, 102, 'the start page and 101 links wait in the frontier');
    assert.equal(counts.waiting + counts.prioritized, 0, 'no live worker: no job yet');

    const fleet = queue(task, 8);
    const r = await fleet.fill(task);
    assert.equal(r.added, 8);
    counts = await readJobCounts(conn, fleet.taskName);
    assert.equal(counts.waiting, 8);
    assert.equal(counts.frontier, 94);
    const jobs = await fleet.queue.getWaiting(0, -1);
    const byHost = new Map<string, number>();
    for (const j of jobs) {
      assert.equal(
        j.id,
        `${run.run}.${fingerprintHex(j.data.url)}`,
        'one job id per URL per run, as before the frontier',
      );
      byHost.set(new URL(j.data.url).host, (byHost.get(new URL(j.data.url).host) ?? 0) + 1);
    }
    assert.deepEqual(
      [...byHost.values()].sort(),
      [1, 1, 1, 1, 2, 2],
      `6 hosts in turn, two pages at most each: ${JSON.stringify([...byHost])}`,
    );
    const h1 = jobs.find((j) => j.data.url === 'http://h1.test/p/0?x=0');
    assert.ok(h1, 'a host gives its oldest pages first');
    assert.ok(jobs.some((j) => j.data.url === 'http://h1.test/p/1?x=1'));
    assert.deepEqual({ ...h1.data }, { url: 'http://h1.test/p/0?x=0', rule: 'page', depth: 2, run: run.run });

    // The window is full: nothing more until a page leaves it.
    assert.equal((await fleet.fill(task)).next, -3);
    assert.equal((await readJobCounts(conn, fleet.taskName)).waiting, 8);

    // A finished page leaves the window and another takes its place in the same call.
    await fleet.completePage(task, run.run, String(h1.id), {
      entry: ['page', '{}'],
      counters: { done: 1 },
      host: 'h1.test',
    });
    counts = await readJobCounts(conn, fleet.taskName);
    assert.equal(
      counts.waiting,
      9,
      "the finished page's job is still waiting here (no worker took it), and one more was added",
    );
    assert.equal(counts.frontier, 93);
    assert.equal(await fleet.isSettled(h1), true, 'a finished page is never fetched again by its job');
    const other = jobs.find((j) => j !== h1)!;
    assert.equal(await fleet.isSettled(other), false);

    // A second run of the same job (its lock ran out on a starved worker and BullMQ gave it to another meanwhile)
    // finishes nothing more: the page is counted and stored once.
    const stream = await conn.xlen(fleet.keys.items);
    const done = (await fleet.stats(run.run)).done;
    await fleet.completePage(task, run.run, String(h1.id), {
      entry: ['page', '{}'],
      counters: { done: 1 },
      host: 'h1.test',
    });
    await fleet.finishPage(task, run, String(h1.id), [link('http://h1.test/new')], {
      entry: ['page', '{}'],
      counters: { done: 1 },
      host: 'h1.test',
    });
    assert.equal(await conn.xlen(fleet.keys.items), stream);
    assert.equal((await fleet.stats(run.run)).done, done);
  });

  it("rebuilds a page's job from its record: URL, rule, depth, lastmod, sitemap", async () => {
    const task = taskOf('politeness: { perHost: { concurrency: 100 } }');
    const idle = queue(task, 0);
    const { run } = await idle.startRun(task, { fresh: true });
    const links = [
      link('https://h0.test/other/q?b=2&a=1', { rule: 'other-page', lastmod: 1_700_000_000_123 }),
      link('http://h0.test:8080/sitemap.xml', { rule: '', depth: 0, sitemap: 2 }),
      link('http://h0.test/a%20b/c', { depth: 40 }),
    ];
    await idle.enqueueLinks(task, run, links);
    const fleet = queue(task, 100);
    assert.equal((await fleet.fill(task)).added, 4);
    assert.equal(await fleet.frontierCount(), 0);
    const jobs = new Map((await fleet.queue.getWaiting(0, -1)).map((j) => [j.data.url, j]));
    assert.deepEqual(
      { ...jobs.get('https://h0.test/other/q?b=2&a=1')!.data },
      {
        url: 'https://h0.test/other/q?b=2&a=1',
        rule: 'other-page',
        depth: 1,
        run: run.run,
        lastmod: 1_700_000_000_123,
      },
    );
    assert.equal(jobs.get('https://h0.test/other/q?b=2&a=1')!.name, 'other-page');
    const sitemap = jobs.get('http://h0.test:8080/sitemap.xml')!;
    assert.deepEqual(
      { ...sitemap.data },
      { url: 'http://h0.test:8080/sitemap.xml', rule: '', depth: 0, run: run.run, sitemap: 2 },
    );
    assert.equal(sitemap.name, 'sitemap');
    assert.equal(jobs.get('http://h0.test/a%20b/c')!.data.depth, 40);
    for (const [url, j] of jobs) assert.equal(j.id, `${run.run}.${fingerprintHex(url)}`);
  });

  it("carries a request (method, body) and a series into the job, named by the request's deduplication key", async () => {
    const task = taskOf('politeness: { perHost: { concurrency: 100 } }');
    const idle = queue(task, 0);
    const { run } = await idle.startRun(task, { fresh: true });
    const request: JobRequest = {
      method: 'POST',
      body: { type: 'json', parts: ['{"q": "a b", "k": ', 'CRAWL_STUDIO_KEY', '}'] },
      idempotent: false,
      id: '0123456789abcdef',
    };
    const series: SeriesRef = {
      of: { rule: 'page', follow: 0 },
      page: 3,
      values: { term: 'x y' },
      base: 'http://api.test/list',
    };
    const url = 'http://api.test/search?p=3';
    const outcomes = await idle.enqueueLinks(task, run, [
      link(url, { request, series }),
      link(url, { series }),
      link(url),
    ]);
    assert.deepEqual(
      outcomes,
      ['enqueued', 'enqueued', 'duplicate'],
      'a POST and a GET of one URL are two pages; the plain GET is the series page',
    );
    // The explorer's rows name them as their jobs will be named.
    const rows = (await listFrontier(conn, task.name, 0, 10)).filter((r) => r.url === url);
    assert.deepEqual(
      rows.map((r) => [r.id, r.request?.method ?? 'GET']).sort(),
      [
        [fingerprintHex(requestKey(url, request)), 'POST'],
        [fingerprintHex(url), 'GET'],
      ].sort(),
    );
    const fleet = queue(task, 10);
    assert.equal((await fleet.fill(task)).added, 3, 'the two and the start page');
    const jobs = (await fleet.queue.getWaiting(0, -1)).filter((j) => j.data.url === url);
    const post = jobs.find((j) => j.data.request)!;
    assert.deepEqual({ ...post.data }, { url, rule: 'page', depth: 1, run: run.run, request, series });
    assert.equal(
      post.id,
      `${run.run}.${fingerprintHex(requestKey(url, request))}`,
      'its job id is the one main gives a request',
    );
    const get = jobs.find((j) => !j.data.request)!;
    assert.deepEqual({ ...get.data }, { url, rule: 'page', depth: 1, run: run.run, series });
    assert.equal(get.id, `${run.run}.${fingerprintHex(url)}`);
  });

  it('takes the best priority band first, and gives jobs BullMQ priorities', async () => {
    const task = taskOf('', '{ selector: a, to: page, priority: 5 }');
    const idle = queue(task, 0);
    const { run } = await idle.startRun(task, { fresh: true });
    await idle.enqueueLinks(task, run, [
      link('http://a.test/late', { priority: 50 }),
      link('http://b.test/first', { priority: 1 }),
      link('http://c.test/default'),
      link('http://a.test/also-first', { priority: 1 }),
    ]);
    const fleet = queue(task, 2);
    await fleet.fill(task);
    const taken = (await fleet.queue.getJobs(['waiting', 'prioritized'], 0, -1)).map((j) => j.data.url).sort();
    assert.deepEqual(taken, ['http://a.test/also-first', 'http://b.test/first']);
    assert.deepEqual(
      (await fleet.queue.getPrioritized(0, -1)).map((j) => j.priority),
      [1, 1],
      'a task with priorities gives its jobs theirs',
    );
    const more = queue(task, 3);
    await more.fill(task);
    const next = (await more.queue.getJobs(['waiting', 'prioritized'], 0, -1)).map((j) => j.data.url).sort();
    assert.deepEqual(
      next,
      ['http://a.test/also-first', 'http://a.test/late', 'http://b.test/first'],
      'band 50 before the default band (1000)',
    );
  });

  it("spaces the pages taken from a host by the task's per-host delay", async () => {
    const task = taskOf('politeness: { perHost: { concurrency: 4, delay: 400ms } }');
    const idle = queue(task, 0);
    const { run } = await idle.startRun(task, { fresh: true });
    await idle.enqueueLinks(
      task,
      run,
      [1, 2, 3].map((i) => link(`http://a.test/${i}`)),
    );
    const fleet = queue(task, 10);
    const first = await fleet.fill(task);
    assert.equal(first.added, 1, 'the start page of a.test; the rest wait for its delay');
    assert.ok(first.next > 300 && first.next <= 400, `next page of the host in ${first.next} ms`);
    assert.equal((await fleet.fill(task)).added, 0);
    await until("the host's delay to pass", async () => (await fleet.fill(task)).added === 1, 10_000, 20);
  });

  it('hands out again the pages of a taker that died before adding their jobs, once its lease runs out, and only those', async () => {
    const task = taskOf('');
    const idle = queue(task, 0);
    const { run } = await idle.startRun(task, { fresh: true });
    await idle.enqueueLinks(
      task,
      run,
      [1, 2, 3, 4].map((i) => link(`http://h${i}.test/`)),
    );
    // A process takes three pages (the script's reply is its to add) and dies before adding any.
    const scripts = withScripts(conn);
    const reply = await scripts.csFill(idle.keys.frontier.meta, ...frontierArgs(task, 3, 300), '0');
    assert.equal((reply.length - 2) / 5, 3);
    const fleet = queue(task, 3, 300);
    assert.equal((await fleet.fill(task)).added, 0, 'their leases are running: they may still be on their way');
    assert.equal((await readJobCounts(conn, fleet.taskName)).waiting, 0);
    assert.equal(await fleet.tryFinalize(task, run.run), 'pending', 'pages on their way into BullMQ are work');
    const again = await until(
      'the leases to run out',
      async () => {
        const f = await fleet.fill(task);
        return f.added > 0 && f;
      },
      10_000,
      20,
    );
    assert.equal(again.added, 3, 'all three at once');
    const jobs = await fleet.queue.getWaiting(0, -1);
    assert.equal(jobs.length, 3);
    for (const j of jobs) {
      assert.equal(j.data.recovered, true);
      assert.equal(await fleet.isSettled(j), false, 'a recovered page still in the window is fetched');
    }
    // Their jobs exist now: when their new leases run out, nobody adds them again. An absence cannot be polled for:
    // the time is the scenario (past the 300 ms lease).
    await sleep(400);
    assert.equal((await fleet.fill(task)).added, 0);
    assert.equal((await readJobCounts(conn, fleet.taskName)).waiting, 3);
    // A recovered job whose page finished meanwhile (its first adder was only slow) does not fetch it again.
    await fleet.completePage(task, run.run, String(jobs[0]!.id), {
      entry: ['page', '{}'],
      counters: { done: 1 },
      host: null,
    });
    const twin = { id: jobs[0]!.id, data: { ...jobs[0]!.data } };
    await conn.hdel(`${fleet.keys.bull.job}${jobs[0]!.id}`, 'csd');
    assert.equal(await fleet.isSettled(twin), true);
  });

  it('fetches a recovered page again when its failed job is retried by hand, though its page left the window', async () => {
    const task = taskOf('');
    const idle = queue(task, 0);
    const { run } = await idle.startRun(task, { fresh: true });
    await idle.enqueueLinks(task, run, [link('http://h1.test/')]);
    // Taken by a process that died before adding its job: handed out again, as a recovered job.
    const scripts = withScripts(conn);
    await scripts.csFill(idle.keys.frontier.meta, ...frontierArgs(task, 1, 200), '0');
    const fleet = queue(task, 1, 200);
    await until('the lease to run out', async () => (await fleet.fill(task)).added === 1, 10_000, 20);
    const [waiting] = await fleet.queue.getWaiting(0, -1);
    assert.equal(waiting?.data.recovered, true);
    // It fails for good (a 404), and its page leaves the window, as the worker does.
    const workerConn = conn.duplicate();
    const worker = new Worker(
      fleet.queue.name,
      async () => {
        throw new UnrecoverableError('HTTP 404');
      },
      { connection: workerConn, prefix: fleet.queue.opts.prefix },
    );
    await new Promise<void>((r) => worker.once('failed', () => r()));
    await worker.close();
    workerConn.disconnect();
    await fleet.settle(task, String(waiting.id));
    const [job] = await fleet.queue.getFailed(0, -1);
    assert.ok(job);
    assert.equal(
      await fleet.isSettled(job),
      true,
      'as a recovered job out of the window, it would end without fetching',
    );
    // Retry Job (Queue Explorer) or Retry all (dashboard): the person asked for the page again.
    assert.equal(await retryFailedJobs(conn, task.name, [job]), 1);
    const again = await fleet.queue.getJob(String(job.id));
    assert.ok(again && (await again.getState()) === 'waiting');
    assert.equal(await fleet.isSettled(again), false, 'the retried job fetches its page');
  });

  it('counts a run drained only when the frontier, the window and BullMQ are all empty, settling what ended without it', async () => {
    const task = taskOf('');
    const idle = queue(task, 0);
    const { run } = await idle.startRun(task, { fresh: true });
    assert.equal(await idle.tryFinalize(task, run.run), 'pending', 'the start page waits in the frontier');
    const fleet = queue(task, 5, 200);
    await fleet.fill(task);
    const [job] = await fleet.queue.getWaiting(0, -1);
    assert.ok(job);
    assert.equal(await fleet.tryFinalize(task, run.run), 'pending', 'its job waits');
    // The job is removed by hand (Queue Explorer): its page is no longer anybody's work.
    await job.remove();
    assert.equal(await fleet.tryFinalize(task, run.run), 'pending', 'within its lease its job may still be on its way');
    await until('the lease to run out', async () => (await fleet.fill(task)).added > 0, 10_000, 20);
    const readded = await fleet.queue.getWaiting(0, -1);
    assert.equal(readded.length, 1, 'a page whose job vanished within its lease is handed out again');
    await fleet.completePage(task, run.run, String(readded[0]!.id), {
      entry: ['page', '{}'],
      counters: { done: 1 },
      host: null,
    });
    await readded[0]!.remove();
    assert.equal(await fleet.tryFinalize(task, run.run), 'won');
  });

  it('settles a page whose job failed without settling it (its worker killed in between), and unparks its host', async () => {
    const task = taskOf('politeness: { perHost: { concurrency: 1 } }');
    const idle = queue(task, 0);
    const { run } = await idle.startRun(task, { fresh: true });
    await idle.enqueueLinks(
      task,
      run,
      [1, 2, 3, 4].map((i) => link(`http://a.test/${i}`)),
    );
    const fleet = queue(task, 10, 100);
    assert.equal(
      (await fleet.fill(task)).added,
      3,
      'a.test has its cap (3: per request, as a slot has in the window) in the window',
    );
    // Both jobs end without settling: removed here, as a failed job trimmed by removeOnFail would be.
    for (const j of await fleet.queue.getWaiting(0, -1)) await j.remove();
    await until(
      'the leases to run out: the jobs are missing, so the pages are handed out again',
      async () => (await fleet.fill(task)).added > 0,
      10_000,
      20,
    );
    for (const j of await fleet.queue.getWaiting(0, -1)) {
      // ...and this time they fail for good, and their settle is lost.
      await conn.hset(`${fleet.keys.bull.job}${j.id}`, 'finishedOn', Date.now());
    }
    // The leases run out with the jobs present: verified, which adds nothing to wait for (the time is the scenario).
    await sleep(150);
    await fleet.fill(task);
    assert.equal((await fleet.fill(task)).added, 0, 'the host is still parked: three pages in its window');
    assert.ok((await fleet.fill(task, { reconcile: true })).added >= 1, 'reconciled, the host gives its next page');
    assert.equal(await fleet.frontierCount(), 0);
  });

  // What a Redis restart with appendfsync everysec can leave (the last second of writes lost, the processes acting on
  // what they saw before): counts that no longer match the records they count. The window recounts from its truth.
  it("recounts a host's pages in the window from transit: a count that drifted up no longer parks the host for good", async () => {
    const task = taskOf('politeness: { perHost: { concurrency: 1 } }');
    const idle = queue(task, 0);
    const { run } = await idle.startRun(task, { fresh: true });
    await idle.enqueueLinks(
      task,
      run,
      [1, 2, 3, 4, 5].map((i) => link(`http://a.test/${i}`)),
    );
    const fleet = queue(task, 10, 100);
    assert.equal((await fleet.fill(task)).added, 3, 'a.test has its cap (3) in the window');
    // Finished where no page is taken in the same call (no fleet): the window empties.
    for (const j of await fleet.queue.getWaiting(0, -1)) {
      await idle.completePage(task, run.run, String(j.id), {
        entry: ['page', '{}'],
        counters: { done: 1 },
        host: null,
      });
      await j.remove();
    }
    assert.equal(await conn.hexists(fleet.keys.frontier.win, 'a.test'), 0, 'its pages finished: none in the window');
    // The count is bumped back to the cap and the host parked, as if its pages' settles were lost but not the rest.
    await conn.hset(fleet.keys.frontier.win, 'a.test', 3);
    for (const band of await conn.zrange(fleet.keys.frontier.bands, 0, -1))
      await conn.zadd(fleet.keys.frontier.ready(band), 'XX', 1e15, 'a.test');
    assert.equal((await fleet.fill(task)).added, 0, 'parked: it believes its window full');
    assert.equal(
      (await fleet.fill(task, { reconcile: true })).added,
      3,
      'recounted: nothing of it is in the window, it gives its cap again',
    );
    assert.equal(await conn.hget(fleet.keys.frontier.win, 'a.test'), '3');
  });

  it('hands out again a page whose job is in no state BullMQ takes jobs from, and the run drains once it is done', async () => {
    const task = taskOf('politeness: { perHost: { concurrency: 100 } }');
    const idle = queue(task, 0);
    const { run } = await idle.startRun(task, { fresh: true });
    await idle.enqueueLinks(
      task,
      run,
      [1, 2, 3].map((i) => link(`http://a.test/${i}`)),
    );
    const fleet = queue(task, 10, 100);
    assert.equal((await fleet.fill(task)).added, 4);
    // Past their leases, with their jobs present: the leases are dropped (the time is the scenario).
    await sleep(150);
    await fleet.fill(task);
    const jobs = await fleet.queue.getWaiting(0, -1);
    assert.equal(jobs.length, 4);
    // One job's place in the wait list is lost, its hash kept: nothing would ever start it, and the window counts it.
    const lost = jobs[0]!;
    await conn.lrem(fleet.queue.keys.wait!, 0, String(lost.id));
    assert.equal((await fleet.fill(task)).added, 0, 'no reconcile: the page stays in the window, its job nowhere');
    assert.equal(await fleet.tryFinalize(task, run.run), 'pending');
    assert.equal((await fleet.fill(task, { reconcile: true })).added, 1, 'reconciled: its page is handed out again');
    const again = await fleet.queue.getJob(String(lost.id));
    assert.ok(again && (await again.getState()) === 'waiting');
    assert.equal(again.data.recovered, true);
    assert.equal(again.data.url, lost.data.url);
    assert.equal(await fleet.isSettled(again), false, 'its page is fetched');
    for (const j of await fleet.queue.getWaiting(0, -1)) {
      await fleet.completePage(task, run.run, String(j.id), {
        entry: ['page', '{}'],
        counters: { done: 1 },
        host: null,
      });
      await j.remove();
    }
    assert.equal(await fleet.tryFinalize(task, run.run), 'won');
  });

  it('drains a run whose count of waiting pages drifted up while no band has any', async () => {
    const task = taskOf('');
    const idle = queue(task, 0);
    const { run } = await idle.startRun(task, { fresh: true });
    const fleet = queue(task, 5, 100);
    await fleet.fill(task);
    const [job] = await fleet.queue.getWaiting(0, -1);
    await fleet.completePage(task, run.run, String(job!.id), {
      entry: ['page', '{}'],
      counters: { done: 1 },
      host: null,
    });
    await job!.remove();
    await conn.hincrby(fleet.keys.frontier.meta, 'n', 2);
    await conn.hincrby(fleet.keys.frontier.meta, 'b:5', 2);
    assert.equal(
      await fleet.tryFinalize(task, run.run),
      'won',
      'nothing waits in any band: the count is wrong, not the run',
    );
    assert.equal(await conn.hget(fleet.keys.frontier.meta, 'n'), '0');
  });

  it('tops the window up a few pages at a time where pages finish; the filler takes the rest', async () => {
    const task = taskOf('politeness: { perHost: { concurrency: 100 } }');
    const idle = queue(task, 0);
    const { run } = await idle.startRun(task, { fresh: true });
    await idle.enqueueLinks(
      task,
      run,
      Array.from({ length: 60 }, (_, i) => link(`http://h${i % 6}.test/${i}`)),
    );
    const fleet = queue(task, 36);
    assert.equal(fillBatch(36), 3);
    assert.equal((await fleet.fill(task)).added, 36);
    const jobs = await fleet.queue.getWaiting(0, -1);
    const done = (i: number) =>
      fleet.completePage(task, run.run, String(jobs[i]!.id), {
        entry: ['page', '{}'],
        counters: { done: 1 },
        host: null,
      });
    // Each finished job leaves BullMQ as a worker's would (completed), so the window counts only the others.
    const finish = async (i: number) => {
      await done(i);
      await jobs[i]!.remove();
    };
    await finish(0);
    await finish(1);
    assert.equal(
      await fleet.frontierCount(),
      25,
      'two places free (61 pages, 36 taken): fewer than a batch, nothing taken yet',
    );
    await finish(2);
    assert.equal(await fleet.frontierCount(), 22, 'the third frees a batch: three pages taken in that call');
    await finish(3);
    assert.equal(await fleet.frontierCount(), 22);
    assert.equal((await fleet.fill(task)).added, 1, "the filler takes what a finished page's call left");
    assert.equal(await fleet.frontierCount(), 21);
  });

  it("drops the waiting pages (Drain) but keeps the run: the window's pages finish and their links are queued", async () => {
    const task = taskOf('politeness: { perHost: { concurrency: 100 } }');
    const idle = queue(task, 0);
    const { run } = await idle.startRun(task, { fresh: true });
    await idle.enqueueLinks(
      task,
      run,
      Array.from({ length: 30 }, (_, i) => link(`http://h${i % 3}.test/${i}`, { priority: i % 2 ? 5 : null })),
    );
    const fleet = queue(task, 4);
    await fleet.fill(task);
    assert.equal(await fleet.frontierCount(), 27);
    assert.equal(await dropWaiting(conn, fleet.keys.frontier, { counted: false }), 27);
    assert.equal(await fleet.frontierCount(), 0);
    assert.equal(await conn.exists(fleet.keys.frontier.bands), 0);
    // A page of the window finishes with a new link: queued in the same run, as before the drain.
    const [job] = await fleet.queue.getWaiting(0, -1);
    assert.ok(job);
    const codes = await fleet.finishPage(task, run, String(job.id), [link('http://h9.test/after')], {
      entry: ['page', '{}'],
      counters: { done: 1 },
      host: null,
    });
    assert.deepEqual(codes, ['enqueued']);
    assert.equal(await fleet.isSettled(job), true);
    await job.remove();
    const waiting = (await fleet.queue.getWaiting(0, -1)).map((j) => j.data.url);
    assert.equal(waiting.length, 4, 'the window is full again');
    assert.ok(waiting.includes('http://h9.test/after'), 'with the new link, taken in the same call');
    assert.equal(await fleet.frontierCount(), 0);
  });

  it('queues a forced fetch of a seen URL with a job id of its own', async () => {
    const task = taskOf('');
    const fleet = queue(task, 10);
    const { run } = await fleet.startRun(task, { fresh: true });
    assert.deepEqual(
      (await fleet.enqueueUrls(task, ['http://a.test/'])).map((r) => r.outcome),
      ['duplicate'],
    );
    assert.deepEqual(
      (await fleet.enqueueUrls(task, ['http://a.test/'], { force: true })).map((r) => r.outcome),
      ['enqueued'],
    );
    const ids = (await fleet.queue.getWaiting(0, -1)).map((j) => String(j.id)).sort();
    const base = `${run.run}.${fingerprintHex('http://a.test/')}`;
    assert.equal(ids.length, 2, ids.join(' '));
    assert.equal(ids[0], base);
    assert.match(ids[1]!, new RegExp(`^${base.replace('.', '\\.')}\\.[0-9a-z]+$`));
  });
});

describe('a page that finished before its worker died (real worker process)', function () {
  this.timeout(60_000);
  let redis: RedisServer;
  before(async () => (redis = await startRedis()));
  after(async () => redis?.stop());

  // Issue 35: what a Redis restart with appendfsync everysec can leave, written directly: a host's count of pages in
  // the window far above its cap (so it is parked: "the window is full"), and a job whose place in BullMQ was lost
  // with its hash kept. Nothing would ever take another page of the host; the workers' reconcile heals both.
  it("finishes a crawl whose window counts drifted and whose job lost its place (a Redis restart's lost writes)", async () => {
    const hits = new Map<string, number>();
    const web = await serveHttp((req, res) => {
      hits.set(req.url ?? '', (hits.get(req.url ?? '') ?? 0) + 1);
      if (req.url === '/robots.txt') return void res.writeHead(404).end();
      const links = req.url === '/' ? Array.from({ length: 20 }, (_, i) => `<a href="/p/${i}">${i}</a>`).join('') : '';
      res.writeHead(200, { 'content-type': 'text/html' }).end(`<html><body>${links}</body></html>`);
    });
    const conn = connectRedis(redis.url);
    try {
      const task = await writeTask(
        `name: healed\nstart: [${web.url}/]\nrules:\n  - name: page\n    follow: [{ selector: a, to: page }]\n`,
      );
      const host = new URL(web.url).host;
      const q = new CrawlQueue(conn, task.name, conn, { windowTarget: async () => 6, leaseMs: 100 });
      const { run } = await q.startRun(task, { fresh: true });
      await q.enqueueLinks(
        task,
        run,
        Array.from({ length: 20 }, (_, i) => link(`${web.url}/p/${i}`)),
      );
      await q.fill(task);
      await sleep(150); // past the leases, with the jobs present: the time is the scenario
      await q.fill(task);
      const jobs = await q.queue.getWaiting(0, -1);
      assert.ok(jobs.length >= 2, `${jobs.length} jobs in the window`);
      const lost = jobs[jobs.length - 1]!;
      await conn.lrem(q.queue.keys.wait!, 0, String(lost.id));
      await conn.hset(q.keys.frontier.win, host, 1000);
      for (const band of await conn.zrange(q.keys.frontier.bands, 0, -1))
        await conn.zadd(q.keys.frontier.ready(band), 'XX', 1e15, host);
      await q.close();
      const s = session(task, redis.url, { workers: 1, fresh: false });
      const outcome = await Promise.race([s.run(), sleep(45_000).then(() => 'stalled' as const)]);
      if (outcome === 'stalled') s.stop();
      await s.close();
      assert.ok(outcome !== 'stalled', 'the crawl finished');
      assert.equal(outcome.status.stats?.done, 21, 'the start page and its 20 links');
      const twice = [...hits].filter(([url, n]) => url !== '/robots.txt' && n !== 1);
      assert.deepEqual(twice, [], 'every page fetched once');
      assert.equal(hits.get(new URL(lost.data.url).pathname), 1, 'the page of the job that lost its place too');
    } finally {
      conn.disconnect();
      await web.close();
    }
  });

  it('is not fetched again when its job comes back (the stall BullMQ makes of a worker killed after pageDone)', async () => {
    const hits = new Map<string, number>();
    const web = await serveHttp((req, res) => {
      hits.set(req.url ?? '', (hits.get(req.url ?? '') ?? 0) + 1);
      if (req.url === '/robots.txt') return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body><a href="/next">next</a></body></html>');
    });
    const conn = connectRedis(redis.url);
    try {
      const task = await writeTask(
        `name: settled\nstart: [${web.url}/]\nrules:\n  - name: page\n    follow: [{ selector: a, to: page }]\n`,
      );
      const q = new CrawlQueue(conn, task.name, conn, { windowTarget: async () => 5 });
      const { run } = await q.startRun(task, { fresh: true });
      const [job] = await q.queue.getWaiting(0, -1);
      assert.equal(job?.data.url, `${web.url}/`);
      // Its first attempt fetched and finished the page, then its worker died before BullMQ completed the job: a
      // stalled-jobs check moves it back to wait, counting the stall.
      await q.finishPage(task, run, String(job.id), [], {
        entry: ['page', JSON.stringify({ url: job.data.url })],
        counters: { done: 1 },
        host: new URL(web.url).host,
      });
      await conn.hset(`${q.keys.bull.job}${job.id}`, 'stc', 1);
      await q.close();
      const s = session(task, redis.url, { workers: 1, fresh: false });
      const result = await s.run();
      await s.close();
      assert.equal(hits.get('/') ?? 0, 0, 'the finished page was not fetched a second time');
      assert.equal(result.status.stats?.done, 1, 'and not counted twice');
      const done = await new CrawlQueue(conn, task.name).queue.getJob(String(job.id));
      assert.equal(done?.returnvalue?.reason, 'finished before its worker stopped');
    } finally {
      conn.disconnect();
      await web.close();
    }
  });
});
