import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { Redis } from 'ioredis';
import { expectedPages, serveSite, type SiteOptions, type SiteServer } from '../../src/demo/site';
import { taskKeys } from '../../src/frontier/keys';
import { launchCrawl } from '../../src/run/launcher';
import { RunInProgressError, RunTakenOverError } from '../../src/run/runErrors';
import { startRedis, type RedisServer } from '../support/services';
import { bookTask, session, WORKER_SCRIPT, writeTask } from '../support/crawl';

// Two drivers of one task at once (issue 22, item 8): a second `run` used to resume the first one's run silently
// and print a wrong row count, and a second `run --fresh` replaced it under its feet (pages fetched twice, both
// said "finished"). The first driver holds the run's lease; a second one is told who drives it and starts
// nothing, unless forced. Real Redis, real HTTP, real worker processes.

const SITE: SiteOptions = { listPages: 3, perPage: 6, filler: 1 };

describe('one driver per run (the run lease)', function () {
  this.timeout(120_000);
  let redis: RedisServer;
  let site: SiteServer;

  beforeEach(async () => {
    redis = await startRedis();
    // Slow pages, one at a time: the first run is still going when the second driver arrives.
    site = await serveSite(SITE, 0, undefined, 60);
  });
  afterEach(async () => {
    await site?.close();
    await redis?.stop();
  });

  it('refuses a second run and a second --fresh of a running task, starts no worker for them, and the first run finishes whole', async () => {
    const task = await writeTask(
      bookTask(site.url, 'twice', 'politeness: { perHost: { concurrency: 1, delay: 0ms } }'),
    );
    const first = session(task, redis.url, { workers: 1 });
    const firstDone = first.run();
    while (site.hits.size < 4) await new Promise((r) => setTimeout(r, 20));

    for (const fresh of [false, true]) {
      const second = session(task, redis.url, { workers: 1, fresh });
      const err = await second.run().then(
        () => null,
        (e: Error) => e,
      );
      await second.close();
      assert.ok(err instanceof RunInProgressError, `second driver (fresh: ${fresh}) refused; got ${err}`);
      assert.match(
        err.message,
        new RegExp(`task 'twice' is already running: crawl-studio run \\(pid ${process.pid} on `),
      );
      assert.match(
        err.message,
        fresh ? /--force \(its queue and progress are replaced/ : /stop that process or add --force/,
      );
      assert.equal(second.workers().length, 0, 'the refused driver started no worker');
    }

    const result = await firstDone;
    await first.close();
    const pages = expectedPages(site.url, SITE);
    assert.equal(result.status.stats!.done, pages.length);
    for (const p of pages)
      assert.equal(site.hits.get(new URL(p).pathname), 1, `${p} fetched once: the run was not replaced`);

    // The lease goes with its driver: the task can be run again at once.
    const again = session(task, redis.url, { workers: 1 });
    assert.equal((await again.run()).status.stats!.done, pages.length);
    await again.close();
  });

  it('a driver whose run another one takes with --force notices, stops its workers and fails saying who took it', async () => {
    // A crawl of several seconds, so the first driver is mid-crawl, not finalizing, when its lease goes.
    const big: SiteOptions = { listPages: 6, perPage: 10, filler: 1 };
    const slow = await serveSite(big, 0, undefined, 80);
    try {
      const task = await writeTask(
        bookTask(slow.url, 'taken', 'politeness: { perHost: { concurrency: 1, delay: 0ms } }'),
      );
      const first = session(task, redis.url, { workers: 1 });
      const firstDone = first.run().then(
        () => null,
        (e: Error) => e,
      );
      while (slow.hits.size < 4) await new Promise((r) => setTimeout(r, 20));
      const second = session(task, redis.url, { workers: 1, fresh: false, force: true, front: 'VS Code' });
      const secondDone = second.run();

      const err = await firstDone;
      assert.ok(err instanceof RunTakenOverError, `the first driver fails when its lease is taken; got ${err}`);
      assert.match(
        err.message,
        new RegExp(`task 'taken' was taken over: VS Code \\(pid ${process.pid} on .*stopped its workers`),
      );
      assert.equal(first.workers().length, 0, "the first driver's workers are stopped");
      await first.close();

      const result = await secondDone;
      await second.close();
      const pages = expectedPages(slow.url, big);
      assert.equal(result.status.stats!.done, pages.length, 'the new driver finishes the same run');
      for (const p of pages) assert.equal(slow.hits.get(new URL(p).pathname), 1, `${p} fetched once`);
    } finally {
      await slow.close();
    }
  });

  it("a refused launch opens no store: the store file is the running driver's", async () => {
    const task = await writeTask(
      bookTask(site.url, 'store-twice', 'politeness: { perHost: { concurrency: 1, delay: 0ms } }'),
    );
    const first = session(task, redis.url, { workers: 1 });
    const firstDone = first.run();
    while (site.hits.size < 3) await new Promise((r) => setTimeout(r, 20));
    const launch = launchCrawl({
      task,
      redisUrl: redis.url,
      workers: 1,
      concurrency: 2,
      workerScript: WORKER_SCRIPT,
      pollMs: 200,
    });
    await assert.rejects(launch.done, RunInProgressError);
    assert.equal(
      existsSync(join(dirname(task.file), '.crawl', 'store-twice.sqlite')),
      false,
      'no SQLite file created by the refused launch',
    );
    first.stop();
    await firstDone;
    await first.close();
  });

  it('takes over the lease of a driver that died on this machine, refuses one alive elsewhere, and --force takes it', async () => {
    const task = await writeTask(bookTask(site.url, 'orphan'));
    const conn = new Redis(redis.url);
    try {
      const dead = spawnSync(process.execPath, ['-e', '0']).pid;
      const lease = (host: string, pid: number) =>
        conn.set(
          taskKeys('orphan').lease,
          JSON.stringify({ owner: 'x', front: 'crawl-studio run', host, pid, since: Date.now() }),
          'PX',
          60_000,
        );

      await lease(hostname(), dead);
      const s1 = session(task, redis.url, { workers: 1 });
      assert.equal(
        (await s1.run()).status.stats!.done,
        expectedPages(site.url, SITE).length,
        "a dead local driver's lease is taken over",
      );
      await s1.close();

      await lease('another-machine', 4242);
      const s2 = session(task, redis.url, { workers: 1 });
      await assert.rejects(
        s2.run(),
        /task 'orphan' is already running: crawl-studio run \(pid 4242 on another-machine/,
      );
      await s2.close();

      const s3 = session(task, redis.url, { workers: 1, force: true });
      assert.equal(
        (await s3.run()).status.stats!.done,
        expectedPages(site.url, SITE).length,
        '--force drives it anyway',
      );
      await s3.close();
      assert.equal(await conn.exists(taskKeys('orphan').lease), 0, 'released when the run ended');
    } finally {
      conn.disconnect();
    }
  });
});
