import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { CrawlQueue } from '../../src/frontier/crawl';
import { isSchedulerJobId, SCHEDULED_RUN_JOB } from '../../src/frontier/types';
import { QueueModel } from '../../src/extension/explorer/queueModel';
import { readTaskStatus } from '../../src/observe/taskStatus';
import { writeTask } from '../support/crawl';
import { startRedis, type RedisServer } from '../support/services';

// The Queue Explorer's pages of a scheduled task's jobs. BullMQ's job scheduler keeps the task's next run as a job of
// its queue (waiting until a worker takes it, then delayed until its time), which is not a page: the explorer left it
// out after reading a page, so each page that held it showed one job fewer and the next began one early. Real
// redis-server and BullMQ; the explorer's model as its tree reads it (no worker: nothing moves between the reads).

describe("the Queue Explorer's pages of a scheduled task", function () {
  this.timeout(60_000);
  let redis: RedisServer;
  let client: Redis;
  let crawl: CrawlQueue;
  let model: QueueModel;

  before(async () => {
    redis = await startRedis();
    client = new Redis(redis.url);
    model = new QueueModel(client);
  });
  after(async () => {
    await crawl?.close();
    client?.disconnect();
    await redis?.stop();
  });

  /** Every page of `state`, `size` jobs a page as the tree asks for them, until a page comes back short. */
  async function pageThrough(state: 'waiting' | 'delayed', size: number): Promise<string[][]> {
    const pages: string[][] = [];
    for (let start = 0; ; start += size) {
      const page = (await model.jobs('sched', state, start, size)).map((j) => j.data.url);
      pages.push(page);
      if (page.length < size) return pages;
    }
  }

  it('pages through waiting and delayed pages in full, with the scheduler left out and nothing shown twice', async () => {
    const task = await writeTask(`name: sched
start: [http://127.0.0.1:9/start]
schedule: { every: 1h }
rules:
  - name: page
    match: ["**"]
`);
    crawl = new CrawlQueue(client, 'sched');
    await crawl.startRun(task);
    const queue = model.queue('sched');
    // The scheduler's first job waits (no worker takes it; the start page waits in the frontier).
    const raw = await queue.getRanges(['wait'], 0, -1, true);
    assert.equal(raw.filter(isSchedulerJobId).length, 1, `the scheduler's job waits: ${raw.join(', ')}`);
    const run = (await crawl.currentRun())!.run;
    // Pages in both lists, the scheduler's job among them: five waiting, five delayed around its time.
    for (let i = 0; i < 5; i++)
      await queue.add('page', { url: `http://127.0.0.1:9/w${i}`, rule: 'page', depth: 1, run });
    const schedulerDelayed = await queue.add(
      SCHEDULED_RUN_JOB,
      { url: '', rule: '', depth: 0, run: '' },
      {
        jobId: 'repeat:schedule:1',
        delay: 30 * 60_000,
      },
    );
    for (let i = 0; i < 5; i++)
      await queue.add(
        'page',
        { url: `http://127.0.0.1:9/d${i}`, rule: 'page', depth: 1, run },
        { delay: (i + 1) * 12 * 60_000 },
      );
    const delayedIds = await queue.getRanges(['delayed'], 0, -1, true);
    assert.equal(
      delayedIds.indexOf(schedulerDelayed.id!),
      2,
      `the scheduler's job amid the delayed: ${delayedIds.join(', ')}`,
    );

    const waiting = await pageThrough('waiting', 2);
    assert.deepEqual(
      waiting.map((p) => p.length),
      [2, 2, 1],
      `full pages: ${JSON.stringify(waiting)}`,
    );
    assert.deepEqual(new Set(waiting.flat()), new Set([0, 1, 2, 3, 4].map((i) => `http://127.0.0.1:9/w${i}`)));
    const delayed = await pageThrough('delayed', 2);
    assert.deepEqual(delayed, [
      ['http://127.0.0.1:9/d0', 'http://127.0.0.1:9/d1'],
      ['http://127.0.0.1:9/d2', 'http://127.0.0.1:9/d3'],
      ['http://127.0.0.1:9/d4'],
    ]);
    // The counts the tree shows beside them agree with what it lists.
    const { counts } = await readTaskStatus(client, 'sched');
    assert.equal(counts.waiting, waiting.flat().length);
  });
});
