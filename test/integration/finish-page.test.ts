import assert from 'node:assert/strict';
import type { KeptLink } from '../../src/core/pipeline/page';
import { parseTask } from '../../src/core/task/parse';
import { CrawlQueue } from '../../src/frontier/crawl';
import { readHostTally } from '../../src/observe/metrics';
import { connectRedis } from '../../src/redis/connect';
import { commandCalls, startRedis, type RedisServer } from '../support/services';
import { readJobCounts, readTaskStatus } from '../../src/observe/taskStatus';

// CrawlQueue.finishPage: a page's new links queued in the frontier and the page finished (record in the items
// stream, counters, host tally, its job marked done, its page out of the window), in one script call whatever its
// links. A retry of a page whose worker died after queueing its links finds them queued, and queues nothing twice.

describe('finishing a page (real Redis)', function () {
  this.timeout(60_000);
  let redis: RedisServer;
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    await redis?.stop();
  });

  const { task } = parseTask(
    `name: finish\nstart: [http://example.com/]\nrules: [{ name: a, follow: [{ selector: a, to: a }] }]\n`,
    't.crawl.yaml',
  );
  const link = (path: string): KeptLink => ({
    url: `http://example.com${path}`,
    host: 'example.com',
    rule: 'a',
    depth: 1,
    priority: null,
    follow: 0,
  });
  const entry = (path: string): [string, string] => ['page', JSON.stringify({ url: `http://example.com${path}` })];
  // No live worker: the window stays empty and every page waits in the frontier.
  const queue = (conn: ReturnType<typeof connectRedis>) =>
    new CrawlQueue(conn, task!.name, conn, { windowTarget: async () => 0 });

  it('queues the new links and finishes the page in one script call, with or without new links', async () => {
    const conn = connectRedis(redis.url);
    const q = queue(conn);
    try {
      const { run } = await q.startRun(task!, { fresh: true });
      const streamLength = () => conn.xlen(q.keys.items);
      const stream0 = await streamLength();

      let scriptsBefore = await commandCalls(conn, 'evalsha', 'eval');
      const first = await q.finishPage(task!, run, `${run.run}.job-1`, [link('/a'), link('/')], {
        entry: entry('/'),
        counters: { done: 1, items: 2 },
        host: 'example.com',
      });
      assert.deepEqual(first, ['enqueued', 'duplicate']);
      assert.equal(
        (await commandCalls(conn, 'evalsha', 'eval')) - scriptsBefore,
        1,
        'one script call: discover finishes the page',
      );
      assert.equal((await streamLength()) - stream0, 1);
      assert.equal((await readJobCounts(conn, task!.name)).frontier, 2, 'the start URL and /a wait in the frontier');

      scriptsBefore = await commandCalls(conn, 'evalsha', 'eval');
      const second = await q.finishPage(task!, run, `${run.run}.job-2`, [link('/a'), link('/')], {
        entry: entry('/a'),
        counters: { done: 1, items: 3, 'dropped:scope': 4 },
        host: 'example.com',
      });
      assert.deepEqual(second, ['duplicate', 'duplicate']);
      assert.equal((await commandCalls(conn, 'evalsha', 'eval')) - scriptsBefore, 1);
      const fields = (await conn.xrange(q.keys.items, '-', '+')).map(([, f]) => f);
      assert.deepEqual(fields.at(-1), entry('/a'));
      const stats = await q.stats(run.run);
      assert.equal(stats.done, 2);
      assert.equal(stats.items, 5);
      assert.equal(stats.duplicates, 3);
      assert.equal(stats.dropped.scope, 4);
      assert.equal(stats.enqueued, 2);
      assert.equal((await readJobCounts(conn, task!.name)).frontier, 2, 'nothing more was queued');
      assert.deepEqual(await readHostTally(conn, task!.name, run.run), [
        { host: 'example.com', done: 2, skipped: 0, failed: 0 },
      ]);

      // No links at all: finished by pageDone alone.
      assert.deepEqual(
        await q.finishPage(task!, run, `${run.run}.job-3`, [], {
          entry: entry('/b'),
          counters: { done: 1 },
          host: 'example.com',
        }),
        [],
      );
      assert.equal((await streamLength()) - stream0, 3);
      assert.equal((await q.stats(run.run)).done, 3);
      assert.equal((await readHostTally(conn, task!.name, run.run))[0]!.done, 3);
    } finally {
      await q.close();
      conn.disconnect();
    }
  });

  it('a page retried after its worker died between queueing its links and finishing is finished once, nothing queued twice', async () => {
    const conn = connectRedis(redis.url);
    const q = queue(conn);
    try {
      const { run } = await q.startRun(task!, { fresh: true });
      const stream0 = await conn.xlen(q.keys.items);
      // A page of more than 1,000 links is queued in chunks, and only the last chunk finishes the page: the first
      // attempt queued /c (an earlier chunk) and died.
      assert.deepEqual(await q.enqueueLinks(task!, run, [link('/c')]), ['enqueued']);
      const before = await q.frontierCount();
      const retried = await q.finishPage(task!, run, `${run.run}.job-9`, [link('/c'), link('/d')], {
        entry: entry('/'),
        counters: { done: 1 },
        host: 'example.com',
      });
      assert.deepEqual(
        retried,
        ['duplicate', 'enqueued'],
        '/c is queued already (marking seen and queueing are one call)',
      );
      assert.equal(await q.frontierCount(), before + 1);
      assert.equal((await conn.xlen(q.keys.items)) - stream0, 1, 'finished once');
      assert.equal((await q.stats(run.run)).done, 1);
    } finally {
      await q.close();
      conn.disconnect();
    }
  });

  // Issue 23, item 4: after a Redis outage the dashboard read "Pages done 75" of "Discovered 60". A job whose lock
  // was lost meanwhile runs again (BullMQ's stalled check), and its page was counted and stored once per run.
  it('counts a page once however often its job runs (a job run again after a lost lock)', async () => {
    const conn = connectRedis(redis.url);
    // A window: the start URL and the links found become BullMQ jobs, as a worker holds them.
    const q = new CrawlQueue(conn, task!.name, conn, { windowTarget: async () => 10 });
    try {
      const { run } = await q.startRun(task!, { fresh: true });
      await q.fill(task!);
      const [job] = await q.queue.getJobs(['wait', 'prioritized'], 0, 0);
      assert.ok(job?.id, 'the start URL has a job');
      const jobId = String(job.id);
      const stream0 = await conn.xlen(q.keys.items);
      const finishWith = (links: KeptLink[]) =>
        q.finishPage(task!, run, jobId, links, {
          entry: entry('/'),
          counters: { done: 1, items: 3 },
          host: 'example.com',
        });
      // First run: a new link, queued, the page finished. The second run finds the link seen; the third has none.
      assert.deepEqual(await finishWith([link('/p')]), ['enqueued']);
      assert.deepEqual(await finishWith([link('/p')]), ['duplicate']);
      assert.deepEqual(await finishWith([]), []);
      const stats = await q.stats(run.run);
      assert.equal(stats.done, 1, 'the page is counted once');
      assert.equal(stats.items, 3);
      assert.equal((await conn.xlen(q.keys.items)) - stream0, 1, 'stored once');
      assert.equal((await readHostTally(conn, task!.name, run.run)).find((h) => h.host === 'example.com')?.done, 1);
      assert.ok(stats.done <= stats.enqueued, `done ${stats.done} of discovered ${stats.enqueued}`);
      // Pages of other jobs are still counted.
      await q.fill(task!);
      const [other] = (await q.queue.getJobs(['wait', 'prioritized'], 0, 10)).filter((j) => j?.data.url.endsWith('/p'));
      assert.ok(other?.id, '/p became a job');
      await q.finishPage(task!, run, String(other.id), [], {
        entry: entry('/p'),
        counters: { done: 1 },
        host: 'example.com',
      });
      assert.equal((await q.stats(run.run)).done, 2);
      assert.equal((await readTaskStatus(conn, task!.name)).counts.frontier, 0, 'nothing waits in the frontier');
    } finally {
      await q.close();
      conn.disconnect();
    }
  });
});
