import assert from 'node:assert/strict';
import type { RobotsSource } from '../../src/core/robots';
import { serveSite, type SiteServer } from '../../src/demo/site';
import { robotsKey } from '../../src/frontier/keys';
import { connectRedis } from '../../src/redis/connect';
import { RobotsCache } from '../../src/frontier/robots';
import { runWorker } from '../../src/worker/runtime';
import { commandCalls, startRedis, type RedisServer } from '../support/services';
import { bookTask, writeTask } from '../support/crawl';

// robots.txt look-ups: once per origin for the fleet (a lock and a copy in Redis), once per process for jobs that
// need the same origin at the same time, and ahead of the first page for a task's start origins.

describe('robots.txt look-ups (real Redis)', function () {
  this.timeout(60_000);
  let redis: RedisServer;
  let site: SiteServer | null = null;
  beforeEach(async () => {
    redis = await startRedis();
  });
  afterEach(async () => {
    await site?.close();
    site = null;
    await redis?.stop();
  });

  it('shares one look-up among the jobs of a process that need a new origin at once', async () => {
    const conn = connectRedis(redis.url);
    try {
      let fetches = 0;
      const cache = new RobotsCache(conn, async (): Promise<RobotsSource> => {
        fetches++;
        await new Promise((r) => setTimeout(r, 50));
        return { state: 'ok', text: 'User-agent: *\nDisallow: /private/\n' };
      });
      const gets = await commandCalls(conn, 'get');
      const sets = await commandCalls(conn, 'set');
      // Sixteen jobs starting together on one origin, as a crawl's first pages do.
      const rules = await Promise.all(
        Array.from({ length: 16 }, () => cache.rulesFor('http://shop.test', 'crawl-studio')),
      );
      assert.equal(fetches, 1);
      assert.ok(rules.every((r) => !r.isAllowed('http://shop.test/private/x') && r.isAllowed('http://shop.test/a')));
      // Two GETs (a miss, and a look again under the lock), one SET NX (the lock), one SET of the copy. Each job
      // on its own would GET, fail the lock, and poll Redis every 100 ms until the copy came.
      assert.equal((await commandCalls(conn, 'get')) - gets, 2, 'a miss and its check under the lock');
      assert.equal((await commandCalls(conn, 'set')) - sets, 2, 'the lock and the copy');
      // A second process (another worker) reads the copy and fetches nothing.
      const other = new RobotsCache(conn, async () => assert.fail('fetched again'));
      assert.ok(!(await other.rulesFor('http://shop.test', 'crawl-studio')).isAllowed('http://shop.test/private/x'));
    } finally {
      conn.disconnect();
    }
  });

  it("a worker looks up its task's start origin's robots.txt as it boots, before any page is asked for", async () => {
    site = await serveSite({ listPages: 2, perPage: 2, filler: 0 });
    const task = await writeTask(bookTask(site.url, 'prefetch'));
    // No run is started: the worker has no job, yet it asks for robots.txt.
    const worker = await runWorker({ tasks: [task], redisUrl: redis.url, concurrency: 2, log: () => undefined });
    try {
      const until = Date.now() + 10_000;
      while (!site.hits.get('/robots.txt') && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      assert.equal(site.hits.get('/robots.txt'), 1);
      assert.deepEqual([...site.hits.keys()], ['/robots.txt'], 'nothing but robots.txt');
      const conn = connectRedis(redis.url);
      try {
        assert.equal(await conn.exists(robotsKey(site.url)), 1, 'the copy for the fleet is in Redis');
      } finally {
        conn.disconnect();
      }
    } finally {
      await worker.close();
    }
  });
});
