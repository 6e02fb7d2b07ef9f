import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { expectedPages, serveSite, type SiteOptions, type SiteServer } from '../../src/demo/site';
import { taskKeys } from '../../src/frontier/keys';
import { pauseTask, resumeTask } from '../../src/frontier/control';
import { launchCrawl, type CrawlLaunch } from '../../src/run/launcher';
import { readTaskStatus } from '../../src/observe/taskStatus';
import { startRedis, type RedisServer } from '../support/services';
import { bookTask, WORKER_SCRIPT, writeTask } from '../support/crawl';
import type { CrawlTask } from '../../src/core/task/model';
import { until } from '../support/until';

// Stop, Start, Pause, Resume in the launcher both front ends drive (issue 32, item 1): Stop ends the run (the next
// start is a new run that fetches the pages again, checked in the site's access log), is reported once as
// "stopped" and never finalized as "finished"; an interruption (Ctrl-C) is resumed; paused time is not in the
// run's duration. Real redis-server, worker processes and HTTP site.

const SITE: SiteOptions = { listPages: 2, perPage: 6 };

describe('Stop, Start, Pause, Resume (issue 32, item 1)', function () {
  this.timeout(180_000);
  let redis: RedisServer;
  let site: SiteServer;
  let client: Redis;
  before(async () => {
    redis = await startRedis();
    // 50 ms a page, one at a time: the crawl is still going when the test stops it.
    site = await serveSite(SITE, 0, undefined, 50);
    client = new Redis(redis.url);
  });
  after(async () => {
    client?.disconnect();
    await site?.close();
    await redis?.stop();
  });

  const launch = (task: CrawlTask): CrawlLaunch =>
    launchCrawl({
      task,
      redisUrl: redis.url,
      workers: 1,
      concurrency: 1,
      workerScript: WORKER_SCRIPT,
      pollMs: 100,
      lockDurationMs: 2_000,
      stalledIntervalMs: 1_000,
    });
  const done = async (task: CrawlTask) => (await readTaskStatus(client, task.name)).stats?.done ?? 0;
  const events = async (task: CrawlTask) =>
    (await client.xrange(taskKeys(task.name).events, '-', '+')).map(
      ([, f]) => JSON.parse(f[1]!) as { type: string; run: string },
    );

  it('Stop ends the run once as "stopped"; Start then begins a new run that fetches every page again; paused time is not in its duration', async () => {
    const task = await writeTask(
      bookTask(site.url, 'stopstart', 'politeness: { perHost: { concurrency: 1, delay: 100ms } }'),
    );
    const first = launch(task);
    await until('a few pages', async () => (await done(task)) >= 3);
    // Paused for at least 1.5 s: that time must not count in the run's duration.
    await pauseTask(client, task.name);
    const pausedAt = Date.now();
    await until('1.5 s of pause', async () => Date.now() - pausedAt >= 1_500);
    await resumeTask(client, task.name);
    first.end();
    const stopped = await first.done;
    assert.equal(stopped.outcome, 'stopped');
    assert.equal(stopped.stopped, true);
    assert.equal(stopped.summary, null, 'a stopped run has no finish summary');
    const run = stopped.status.run!;
    assert.equal(run.state, 'stopped');
    assert.ok(run.finishedAt, 'the stop time is kept');
    assert.ok((run.pausedMs ?? 0) >= 1_500, `paused ${run.pausedMs} ms`);
    assert.equal(
      stopped.durationMs,
      run.finishedAt - run.startedAt - run.pausedMs!,
      'the duration is the time crawled: stop minus start minus paused',
    );
    const firstRunEvents = (await events(task)).filter((e) => e.run === stopped.run.run).map((e) => e.type);
    assert.deepEqual(
      firstRunEvents.filter((t) => t === 'run-stopped' || t === 'run-finished'),
      ['run-stopped'],
      'stopped once, never finished',
    );
    const fetchedBefore = stopped.status.stats!.done;
    assert.ok(fetchedBefore < expectedPages(site.url, SITE).length, `stopped before the end (${fetchedBefore} pages)`);
    assert.equal(site.hits.get('/'), 1);

    // Nothing takes the stopped run's pages, and it is never finalized: a second look still says stopped.
    assert.equal(await client.hget(taskKeys(task.name).meta, 'state'), 'stopped');
    // Resume Queue (explorer, monitor) does not bring a stopped run back: Start does, as a new run.
    await assert.rejects(resumeTask(client, task.name), /was stopped \(Stop Crawl ended its run\): start it again/);

    const second = launch(task);
    const result = await second.done;
    assert.equal(result.resumed, false, 'a stopped run is not resumed');
    assert.notEqual(result.run.run, stopped.run.run, 'a new run');
    assert.equal(result.outcome, 'finished');
    assert.equal(result.status.stats!.done, expectedPages(site.url, SITE).length, 'the new run fetched every page');
    assert.equal(site.hits.get('/'), 2, 'the start page was fetched again (access log)');
    assert.equal(site.hits.get('/catalogue/page-1.html'), 2);
  });

  it('an interruption (Ctrl-C, crawl.stop()) is resumed, without the interrupted time in the duration', async () => {
    const task = await writeTask(
      bookTask(site.url, 'interrupt', 'politeness: { perHost: { concurrency: 1, delay: 100ms } }'),
    );
    const first = launch(task);
    await until('a few pages', async () => (await done(task)) >= 3);
    first.stop();
    const interrupted = await first.done;
    assert.equal(interrupted.outcome, 'interrupted');
    assert.equal(interrupted.status.run!.state, 'running', 'left to resume');
    const idleSince = interrupted.status.run!.idleSince!;
    assert.ok(idleSince > 0, 'marked idle from the interruption');
    await until('1 s of interruption', async () => Date.now() - idleSince >= 1_000);
    const second = launch(task);
    const result = await second.done;
    assert.equal(result.resumed, true);
    assert.equal(result.run.run, interrupted.run.run);
    assert.equal(result.outcome, 'finished');
    const meta = await client.hgetall(taskKeys(task.name).meta);
    assert.ok(Number(meta.pausedMs) >= 1_000, `interrupted time counted out: ${meta.pausedMs} ms`);
    assert.equal(meta.idleSince, undefined);
    // Computed when the finalize began, a moment before finishedAt was written: at most that, never the idle time more.
    const duration = (result.summary as { durationMs: number }).durationMs;
    assert.ok(
      duration > 0 && duration <= Number(meta.finishedAt) - Number(meta.startedAt) - Number(meta.pausedMs),
      `duration ${duration} ms`,
    );
  });
});
