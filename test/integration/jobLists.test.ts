import assert from 'node:assert/strict';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { startRedis, type RedisServer } from '../support/services';
import { until } from '../support/until';
import { readJobIds, type ListedState } from '../../src/frontier/jobLists';

// frontier/jobLists.ts reads a state's jobs with plain commands, so a user with reads only can list failed and active
// pages (BullMQ's getJobs is a Lua script). Its order must be getJobs' own, range for range, or `failures` and the
// monitor would show other pages than the editor: both are read here from the same real queue and compared.

describe("frontier/jobLists: a state's jobs in BullMQ's order, without its script", function () {
  this.timeout(60_000);
  let redis: RedisServer;
  before(async () => (redis = await startRedis()));
  after(async () => redis?.stop());

  it('lists failed, completed and active jobs as getJobs does, for every range and both orders', async () => {
    const conn = new Redis(redis.url, { maxRetriesPerRequest: null });
    const queue = new Queue('job-lists', { connection: conn, prefix: 'test' });
    let release: () => void = () => undefined;
    const held = new Promise<void>((r) => (release = r));
    const worker = new Worker(
      'job-lists',
      async (job) => {
        const n = (job.data as { n: number }).n;
        if (n >= 9) return held;
        if (n % 3 === 0) throw new Error(`failed ${n}`);
        return n;
      },
      { connection: new Redis(redis.url, { maxRetriesPerRequest: null }), prefix: 'test', concurrency: 12 },
    );
    try {
      for (let n = 0; n < 12; n++) await queue.add('page', { n }, { attempts: 1 });
      await until('3 failed, 6 completed, 3 active', async () => {
        const c = await queue.getJobCounts('failed', 'completed', 'active');
        return c.failed === 3 && c.completed === 6 && c.active === 3;
      });
      const ranges: [number, number][] = [
        [0, -1],
        [0, 0],
        [0, 1],
        [1, 2],
        [2, -1],
        [1, 10],
      ];
      let compared = 0;
      for (const state of ['failed', 'completed', 'active'] as ListedState[])
        for (const asc of [false, true])
          for (const [start, end] of ranges) {
            const bull = (await queue.getJobs([state], start, end, asc)).map((j) => String(j.id));
            const ours = await readJobIds(conn, queue, state, start, end, asc);
            assert.deepEqual(ours, bull, `${state} ${start}..${end} ${asc ? 'oldest' : 'newest'} first`);
            compared += bull.length;
          }
      // The comparison saw jobs: an empty list on both sides would pass for any order.
      assert.ok(compared > 50, `compared ${compared} ids`);
    } finally {
      release();
      await worker.close();
      await queue.close();
      conn.disconnect();
    }
  });
});
