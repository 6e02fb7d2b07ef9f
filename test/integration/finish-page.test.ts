import assert from 'node:assert/strict';
import type { KeptLink } from '../../src/core/pipeline/page';
import { parseTask } from '../../src/core/task/parse';
import { CrawlQueue } from '../../src/frontier/crawl';
import { readHostTally } from '../../src/observe/metrics';
import { connectRedis } from '../../src/redis/connect';
import { commandCalls, startRedis, type RedisServer } from '../support/services';
import { readTaskStatus } from '../../src/observe/taskStatus';

// CrawlQueue.finishPage: a page's links enqueued, then the page finished (record in the items stream, counters,
// claim released). When none of its links is new, the discover call finishes the page itself; otherwise the
// new links are added and pageDone finishes it. Either way the outcome must be the same, its host's tally included.

describe('finishing a page (real Redis)', function () {
  this.timeout(60_000);
  let redis: RedisServer;
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    await redis?.stop();
  });

  const { task } = parseTask(`name: finish\nstart: [http://example.com/]\nrules: [{ name: a, follow: [{ selector: a, to: a }] }]\n`, 't.crawl.yaml');
  const link = (path: string): KeptLink => ({ url: `http://example.com${path}`, host: 'example.com', rule: 'a', depth: 1, priority: null, follow: 0 });
  const entry = (path: string): [string, string] => ['page', JSON.stringify({ url: `http://example.com${path}` })];

  it('finishes in the discover call when no link is new, and after enqueueing when one is', async () => {
    const conn = connectRedis(redis.url);
    const q = new CrawlQueue(conn, task!.name);
    try {
      const { run } = await q.startRun(task!, { fresh: true });
      const streamLength = () => conn.xlen(q.keys.items);
      const waiting = async () => (await readTaskStatus(conn, task!.name)).counts;

      // A new link: enqueued (a BullMQ job), then the page finished by pageDone.
      const first = await q.finishPage(task!, run, 'job-1', [link('/a'), link('/')], { entry: entry('/'), counters: { done: 1, items: 2 }, host: 'example.com' });
      assert.deepEqual(first, ['enqueued', 'duplicate']);
      assert.equal(await streamLength(), 1);
      const counts = await waiting();
      assert.equal(counts.waiting + counts.prioritized, 2, 'the start URL and /a wait');
      assert.equal(await conn.exists(q.keys.claim('job-1')), 0, 'the claim is released once the page is finished');

      // Only seen links: finished by the discover call, with the same effects.
      const scriptsBefore = await commandCalls(conn, 'evalsha', 'eval');
      const second = await q.finishPage(task!, run, 'job-2', [link('/a'), link('/')], { entry: entry('/a'), counters: { done: 1, items: 3, 'dropped:scope': 4 }, host: 'example.com' });
      assert.deepEqual(second, ['duplicate', 'duplicate']);
      assert.equal((await commandCalls(conn, 'evalsha', 'eval')) - scriptsBefore, 1, 'one script call: discover, no pageDone');
      assert.equal(await streamLength(), 2);
      const fields = (await conn.xrange(q.keys.items, '-', '+')).map(([, f]) => f);
      assert.deepEqual(fields[1], entry('/a'));
      const stats = await q.stats(run.run);
      assert.equal(stats.done, 2);
      assert.equal(stats.items, 5);
      assert.equal(stats.duplicates, 3);
      assert.equal(stats.dropped.scope, 4);
      assert.equal(await conn.exists(q.keys.claim('job-2')), 0);
      const after = await waiting();
      assert.equal(after.waiting + after.prioritized, 2, 'nothing more was enqueued');

      assert.deepEqual(await readHostTally(conn, task!.name, run.run), [{ host: 'example.com', done: 2, skipped: 0, failed: 0 }], 'each page counted for its host, either way');

      // No links at all: finished by pageDone alone.
      assert.deepEqual(await q.finishPage(task!, run, 'job-3', [], { entry: entry('/b'), counters: { done: 1 }, host: 'example.com' }), []);
      assert.equal(await streamLength(), 3);
      assert.equal((await q.stats(run.run)).done, 3);
      assert.equal((await readHostTally(conn, task!.name, run.run))[0]!.done, 3);
    } finally {
      await q.close();
      conn.disconnect();
    }
  });

  it('a page retried after its worker died between adding its links and finishing is finished once, with no second job', async () => {
    const conn = connectRedis(redis.url);
    const q = new CrawlQueue(conn, task!.name);
    try {
      const { run } = await q.startRun(task!, { fresh: true });
      // The stream belongs to the store, not the run: what the test before left in it stays.
      const stream0 = await conn.xlen(q.keys.items);
      // The first attempt marked /c seen under its claim and added its job, then died before finishing the page.
      assert.deepEqual(await q.enqueueLinks(task!, run, 'job-9', [link('/c')]), ['enqueued']);
      const before = await readTaskStatus(conn, task!.name);
      const scriptsBefore = await commandCalls(conn, 'evalsha', 'eval');
      const retried = await q.finishPage(task!, run, 'job-9', [link('/c')], { entry: entry('/'), counters: { done: 1 }, host: 'example.com' });
      assert.deepEqual(retried, ['enqueued'], 'a link in its own claim is the job\'s to enqueue again (a no-op by job id)');
      // Finishing first would release the claim before the add: a death in between would lose /c for good.
      assert.equal((await commandCalls(conn, 'evalsha', 'eval')) - scriptsBefore, 3, 'discover, then the add (BullMQ), then pageDone');
      const after = await readTaskStatus(conn, task!.name);
      assert.equal(after.counts.waiting + after.counts.prioritized, before.counts.waiting + before.counts.prioritized, 'no second job for /c');
      assert.equal((await conn.xlen(q.keys.items)) - stream0, 1, 'finished once');
      assert.equal((await q.stats(run.run)).done, 1);
      assert.equal(await conn.exists(q.keys.claim('job-9')), 0);
      // Another page linking to /c now: a duplicate, finished in the discover call.
      assert.deepEqual(await q.finishPage(task!, run, 'job-10', [link('/c')], { entry: entry('/x'), counters: { done: 1 }, host: 'example.com' }), ['duplicate']);
      assert.equal((await conn.xlen(q.keys.items)) - stream0, 2);
    } finally {
      await q.close();
      conn.disconnect();
    }
  });

  // Issue 23, item 4: after a Redis outage the dashboard read "Pages done 75" of "Discovered 60". A job whose lock
  // was lost meanwhile runs again (BullMQ's stalled check), and its page was counted and stored once per run.
  it('counts a page once however often its job runs (a job run again after a lost lock)', async () => {
    const conn = connectRedis(redis.url);
    const q = new CrawlQueue(conn, task!.name);
    try {
      const { run } = await q.startRun(task!, { fresh: true });
      // The start URL's job, as a worker holds it: a real BullMQ job hash.
      const [job] = await q.queue.getJobs(['wait', 'prioritized'], 0, 0);
      assert.ok(job?.id, 'the start URL has a job');
      const jobId = String(job.id);
      const stream0 = await conn.xlen(q.keys.items);
      const finishWith = (links: KeptLink[]) => q.finishPage(task!, run, jobId, links, { entry: entry('/'), counters: { done: 1, items: 3 }, host: 'example.com' });
      // First run: a new link, enqueued, then pageDone. The second run finds the link seen: the discover call finishes it.
      assert.deepEqual(await finishWith([link('/p')]), ['enqueued']);
      assert.deepEqual(await finishWith([link('/p')]), ['duplicate']);
      // A third run with no link at all: pageDone again.
      assert.deepEqual(await finishWith([]), []);
      const stats = await q.stats(run.run);
      assert.equal(stats.done, 1, 'the page is counted once');
      assert.equal(stats.items, 3);
      assert.equal((await conn.xlen(q.keys.items)) - stream0, 1, 'stored once');
      assert.equal((await readHostTally(conn, task!.name, run.run)).find((h) => h.host === 'example.com')?.done, 1);
      assert.ok(stats.done <= stats.enqueued, `done ${stats.done} of discovered ${stats.enqueued}`);
      // Pages of other jobs are still counted.
      const [other] = (await q.queue.getJobs(['wait', 'prioritized'], 0, 10)).filter((j) => j?.data.url.endsWith('/p'));
      assert.ok(other?.id);
      await q.finishPage(task!, run, String(other.id), [], { entry: entry('/p'), counters: { done: 1 }, host: 'example.com' });
      assert.equal((await q.stats(run.run)).done, 2);
    } finally {
      await q.close();
      conn.disconnect();
    }
  });
});
