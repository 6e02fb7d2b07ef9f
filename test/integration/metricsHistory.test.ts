import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { metricsKeys, readHistory, recordSample, TIERS } from '../../src/observe/metrics';
import { finishedPages } from '../../src/observe/figures';
import { session, writeTask } from '../support/crawl';
import { pagesTaskYaml, servePagesSite } from '../support/pagesSite';
import { startRedis, type RedisServer } from '../support/services';

// readHistory's tail (issue 31): the web monitor reads only the newest samples its charts show, not a long run's
// whole history; with fewer samples than asked in the fine tier it reads the whole history, coarse tier included.

describe('metric history: the newest samples only', function () {
  this.timeout(60_000);
  let server: RedisServer;
  let redis: Redis;
  before(async () => {
    server = await startRedis();
    redis = new Redis(server.url);
  });
  after(async () => {
    redis?.disconnect();
    await server?.stop();
  });

  const sample = (t: number) =>
    JSON.stringify({
      t,
      done: t,
      failed: 0,
      skipped: 0,
      items: 0,
      enqueued: 0,
      bytes: 0,
      waiting: 0,
      active: 0,
      delayed: 0,
    });

  it('reads the last N fine samples, or everything when the fine tier holds fewer', async () => {
    const mk = metricsKeys('hist', 'r1');
    await redis.rpush(mk.tier(TIERS[1]!.name), sample(1), sample(2));
    await redis.rpush(mk.tier(TIERS[0]!.name), ...[10, 11, 12, 13, 14].map(sample));
    assert.deepEqual(
      (await readHistory(redis, 'hist', 'r1', 3)).map((s) => s.t),
      [12, 13, 14],
    );
    assert.deepEqual(
      (await readHistory(redis, 'hist', 'r1', 9)).map((s) => s.t),
      [1, 2, 10, 11, 12, 13, 14],
    );
    assert.deepEqual(
      (await readHistory(redis, 'hist', 'r1')).map((s) => s.t),
      [1, 2, 10, 11, 12, 13, 14],
    );
  });

  it("ends a real run's history with the counts it finished with, and adds nothing after its end", async () => {
    const web = await servePagesSite(6);
    try {
      const task = await writeTask(pagesTaskYaml('hist-run', `${web.url}/`));
      const s = session(task, server.url, { workers: 1 });
      const result = await s.run();
      await s.close();
      const run = result.run.run;
      const stats = result.status.stats!;
      const history = await readHistory(redis, 'hist-run', run);
      const last = history.at(-1)!;
      // The driver's last sample, taken as the run drained: however short the crawl, the chart ends at its end.
      assert.deepEqual(
        [last.done, last.failed, last.items, last.enqueued],
        [stats.done, stats.failed, stats.items, stats.enqueued],
      );
      assert.equal(finishedPages(stats).total, 8);
      assert.ok(last.t <= result.status.run!.finishedAt!, 'sampled before the run was marked finished');
      // A view open on the finished run (the monitor samples as it reads) adds nothing.
      await redis.del(metricsKeys('hist-run', run).tick);
      assert.equal(await recordSample(redis, 'hist-run'), null);
      assert.equal((await readHistory(redis, 'hist-run', run)).length, history.length);
    } finally {
      await web.close();
    }
  });
});
