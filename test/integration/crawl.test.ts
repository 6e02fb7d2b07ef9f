import assert from 'node:assert/strict';
import { allBooks, expectedPages, serveSite, type SiteServer, type SiteOptions } from '../../src/demo/site';
import { Redis } from 'ioredis';
import { hostKeys, taskKeys, WORKERS_KEY } from '../../src/frontier/keys';
import {
  readLiveWorkers,
  readWorkers,
  releaseDeadWorker,
  WORKER_GONE_AFTER_MS,
  workerIdOf,
  type WorkerBeat,
} from '../../src/frontier/fleet';
import { CrawlQueue } from '../../src/frontier/crawl';
import type { CrawlStats } from '../../src/frontier/types';
import { readHostTally } from '../../src/observe/metrics';
import { startRedis, type RedisServer } from '../support/services';
import { bookTask, bufferedPages, session, writeTask } from '../support/crawl';
import { grantGaps, watchHostGrants } from '../support/hostGrants';

const SITE: SiteOptions = { listPages: 4, perPage: 10, filler: 1 };

function pageHits(site: SiteServer): Map<string, number> {
  // Requests by path, query kept: a page fetched under two spellings would show up twice.
  const out = new Map<string, number>();
  for (const [path, n] of site.hits) if (path !== '/robots.txt') out.set(site.url + path, n);
  return out;
}

/** The most jobs active at once in a task's queue while `crawl` runs: sampled every 5 ms, while `counting()`. */
async function maxActiveJobs(
  redisUrl: string,
  taskName: string,
  crawl: () => Promise<void>,
  counting = () => true,
): Promise<number> {
  const conn = new Redis(redisUrl);
  let max = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      if (counting()) max = Math.max(max, await conn.llen(taskKeys(taskName).bull.active));
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  try {
    await crawl();
  } finally {
    sampling = false;
    await sampler;
    conn.disconnect();
  }
  return max;
}

describe('crawl engine (real Redis, real HTTP, worker processes)', function () {
  this.timeout(120_000);
  let redis: RedisServer;
  let site: SiteServer;

  beforeEach(async () => {
    redis = await startRedis();
  });
  afterEach(async () => {
    await site?.close();
    await redis?.stop();
  });

  it('finds every reachable allowed page exactly once and every item, across 3 worker processes', async () => {
    site = await serveSite(SITE);
    const task = await writeTask(bookTask(site.url, 'full'));
    const s = session(task, redis.url, { workers: 3 });
    const result = await s.run();
    await s.close();

    const hits = pageHits(site);
    const expected = expectedPages(site.url, SITE).sort();
    assert.deepEqual([...hits.keys()].sort(), expected, 'fetched exactly the reachable allowed pages');
    for (const [url, n] of hits) assert.equal(n, 1, `${url} fetched ${n} times`);
    assert.equal(site.hits.get('/robots.txt'), 1, 'robots.txt fetched once for the whole fleet');
    assert.equal(site.hits.get('/private/admin.html'), undefined, 'robots-disallowed page never fetched');
    assert.equal(result.status.stats!.skipped.robots, 1);
    assert.equal(result.status.stats!.done, expected.length);
    assert.ok(result.summary, 'this session finalized the run');

    // The dashboard's per-host tally, counted by the workers as they finished each job: exact.
    const conn = new Redis(redis.url);
    const tally = await readHostTally(conn, 'full', result.run.run).finally(() => conn.disconnect());
    assert.deepEqual(tally, [{ host: new URL(site.url).host, done: expected.length, skipped: 1, failed: 0 }]);

    const pages = await bufferedPages(redis.url, 'full');
    assert.equal(pages.length, expected.length);
    const keys = pages.flatMap((p) => p.items.map((i) => i.key)).sort();
    assert.deepEqual(
      keys,
      allBooks(SITE)
        .map((b) => b.upc)
        .sort(),
    );
  });

  it("keeps a worker's requests in flight at its concurrency while it works on more pages than that", async () => {
    // Responses take 5 ms, about what the rest of a job takes (the host gate, the analysis thread, Redis): a worker
    // needs more jobs than requests to keep its requests busy, and takes them (FetchSlots.jobsWanted). The host
    // gate allows 16, so only the worker's own concurrency (3) limits the requests.
    let inFlight = 0;
    let maxInFlight = 0;
    site = await serveSite(
      SITE,
      0,
      (req, res) => {
        if (req.url === '/robots.txt') return false;
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        res.once('close', () => inFlight--);
        return false;
      },
      5,
    );
    const task = await writeTask(
      bookTask(site.url, 'slots', 'politeness: { perHost: { concurrency: 16, delay: 0ms } }'),
    );
    const maxActive = await maxActiveJobs(redis.url, 'slots', async () => {
      const s = session(task, redis.url, { workers: 1, concurrency: 3 });
      const result = await s.run();
      await s.close();
      assert.equal(result.status.stats!.done, expectedPages(site.url, SITE).length);
    });
    console.log(`      requests in flight at most ${maxInFlight}, active jobs at most ${maxActive} (concurrency 3)`);
    assert.equal(maxInFlight, 3, 'requests in flight reach the concurrency and never pass it');
    assert.ok(
      maxActive > 3 && maxActive <= 6,
      `active jobs: more than the concurrency, at most twice it; seen ${maxActive}`,
    );
  });

  it('keeps a one-request host at one request while jobs wait at its gate, and every page is fetched once', async () => {
    // The host allows one request at a time and the worker makes up to 4: jobs wait at the host gate. Whether
    // that wait counts as work when the worker decides how many jobs to hold (it must not) is a property of
    // FetchSlots, tested exactly in test/unit/fetchSlots.test.ts. How many jobs it holds here depends on how
    // fast this machine runs the rest of a job (on a loaded one, legitimately up to twice its slots), so this
    // test asserts what the site and the run see: one request at a time, each page once, nothing failed.
    const big: SiteOptions = { listPages: 8, perPage: 10, filler: 1 };
    let inFlight = 0;
    let peakInFlight = 0;
    site = await serveSite(
      big,
      0,
      (_req, res) => {
        peakInFlight = Math.max(peakInFlight, ++inFlight);
        res.once('close', () => inFlight--);
        return false;
      },
      40,
    );
    const task = await writeTask(
      bookTask(site.url, 'polite', 'politeness: { perHost: { concurrency: 1, delay: 0ms } }'),
    );
    let stats: CrawlStats | null = null;
    const peakActive = await maxActiveJobs(redis.url, 'polite', async () => {
      const s = session(task, redis.url, { workers: 1, concurrency: 4 });
      stats = (await s.run()).status.stats;
      await s.close();
    });
    const pages = expectedPages(site.url, big);
    assert.equal(stats!.done, pages.length);
    assert.equal(stats!.failed, 0);
    for (const p of pages) assert.equal(site.hits.get(new URL(p).pathname), 1, `${p} fetched once`);
    assert.equal(peakInFlight, 1, 'the host saw one request at a time');
    // Jobs did queue at the gate (the case this test is about), and never past twice the slots.
    assert.ok(peakActive >= 2 && peakActive <= 8, `active jobs: between 2 and twice the 4 slots; seen ${peakActive}`);
  });

  it('retries 5xx with backoff (fetched 3 times) and does not retry a 404', async () => {
    const failing = new Map([['/catalogue/book-3.html', 2]]);
    site = await serveSite(SITE, 0, (req, res) => {
      const path = req.url!.split('?')[0]!;
      const left = failing.get(path) ?? 0;
      if (left > 0) {
        failing.set(path, left - 1);
        res.writeHead(503, { 'retry-after': '0' }).end('busy');
        return true;
      }
      if (path === '/catalogue/book-5.html') {
        res.writeHead(404).end('gone');
        return true;
      }
      return false;
    });
    const task = await writeTask(bookTask(site.url, 'retries'));
    const s = session(task, redis.url);
    const result = await s.run();
    await s.close();
    assert.equal(site.hits.get('/catalogue/book-3.html'), 3);
    assert.equal(site.hits.get('/catalogue/book-5.html'), 1);
    assert.equal(result.status.stats!.failed, 1);
    assert.equal(result.status.stats!.failures['http-404'], 1);
    assert.equal(result.status.counts.failed, 1, 'the 404 job is kept in the failed state');
    const conn = new Redis(redis.url);
    const [tally] = await readHostTally(conn, 'retries', result.run.run).finally(() => conn.disconnect());
    assert.equal(tally!.failed, 1, 'the 404 counted once for its host; the retried 503s not at all');
    assert.equal(tally!.done, result.status.stats!.done);
  });

  it('honours maxPages and maxDepth', async () => {
    site = await serveSite(SITE);
    const limited = await writeTask(bookTask(site.url, 'limited', 'scope: { maxPages: 10 }'));
    let s = session(limited, redis.url);
    const result = await s.run();
    await s.close();
    // Ten URLs enqueued: nine fetched, one (private/) skipped by robots.txt.
    assert.equal(result.status.stats!.enqueued, 10);
    assert.equal(pageHits(site).size + result.status.stats!.skipped.robots!, 10);
    assert.ok((result.status.stats!.skipped.limit ?? 0) > 0);

    site.hits.clear();
    const shallow = await writeTask(bookTask(site.url, 'shallow', 'scope: { maxDepth: 1 }'));
    s = session(shallow, redis.url);
    await s.run();
    await s.close();
    // Depth 0: home; depth 1: what home links to (page-1, about; private is robots-blocked).
    assert.deepEqual([...pageHits(site).keys()].sort(), [
      `${site.url}/`,
      `${site.url}/about.html`,
      `${site.url}/catalogue/page-1.html`,
    ]);
  });

  it('holds a global rate limit across worker processes', async () => {
    let requests = 0;
    site = await serveSite({ listPages: 1, perPage: 12 }, 0, (req) => {
      if (req.url !== '/robots.txt') requests++;
      return false;
    });
    const task = await writeTask(bookTask(site.url, 'rated', 'politeness: { rateLimit: { max: 4, per: 1s } }'));
    // Each start the limiter admits, by Redis's own clock: the score its script gives the start (lua/ratelimit.lua).
    // Arrival times at the site lag the starts by however long a loaded machine keeps the test's event loop from
    // reading them (342 ms once, against an allowance of 300), so the limit is checked where it is kept.
    const rateKey = taskKeys('rated').rate;
    const admitted: number[] = [];
    const base = new Redis(redis.url, { lazyConnect: true });
    const monitor = await base.monitor();
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (args[0]?.toLowerCase() === 'zadd' && args[1] === rateKey) admitted.push(Number(args[2]));
    });
    try {
      const s = session(task, redis.url, { workers: 2, concurrency: 8 });
      await s.run();
      await s.close();
    } finally {
      monitor.disconnect();
      base.disconnect();
    }
    assert.ok(requests >= 14, `${requests} requests`);
    // Every request the site saw was admitted (robots.txt's too, which the site's count leaves out).
    assert.ok(admitted.length >= requests, `${admitted.length} starts admitted for ${requests} requests`);
    admitted.sort((a, b) => a - b);
    // At most 4 starts in any second: start i+4 is admitted a full second after start i, or later.
    const gaps4 = admitted.slice(4).map((t, i) => t - admitted[i]!);
    assert.ok(Math.min(...gaps4) >= 1000, `gaps between start i and i+4: ${gaps4.join(', ')} ms`);
  });

  it('spaces requests to one host by the per-host delay', async () => {
    let requests = 0;
    site = await serveSite({ listPages: 1, perPage: 6 }, 0, (req) => {
      if (req.url !== '/robots.txt') requests++;
      return false;
    });
    const task = await writeTask(
      bookTask(site.url, 'polite', 'politeness: { perHost: { concurrency: 4, delay: 150ms } }'),
    );
    // Checked where the delay is kept: each start the host gate granted, by Redis's clock. Arrival times at the site
    // lag the starts by however long a loaded machine holds the event loops, and needed tolerances.
    const watch = await watchHostGrants(redis.url, 150);
    try {
      const s = session(task, redis.url, { workers: 2, concurrency: 4 });
      await s.run();
      await s.close();
    } finally {
      await watch.stop();
    }
    const grants = watch.byHost.get(new URL(site.url).host) ?? [];
    // Every request the site saw was granted (robots.txt's too, which the count leaves out).
    assert.ok(requests >= 7 && grants.length >= requests, `${grants.length} grants for ${requests} requests`);
    // Two workers of four requests each, and never two starts within 150 ms of each other: without the delay the
    // gaps are ~0 ms.
    const gaps = grantGaps(grants);
    assert.ok(Math.min(...gaps) >= 150, `gaps between grants: ${gaps.join(', ')} ms`);
  });

  it('loses no URL when a worker is killed with SIGKILL mid-crawl', async () => {
    // Slow pages keep jobs in flight when the kill lands.
    site = await serveSite(SITE, 0, undefined, 40);
    const slowSite = site;
    const task = await writeTask(
      bookTask(site.url, 'killed', 'politeness: { perHost: { concurrency: 8, delay: 20ms } }'),
    );
    const s = session(task, redis.url, { workers: 2, concurrency: 4, restartOnCrash: true });
    let killed = 0;
    const exits: string[] = [];
    s.supervisor.on('exit', (_pid, _code, signal, expected) => {
      if (!expected) exits.push(String(signal));
    });
    const killer = setInterval(() => {
      const done = [...slowSite.hits.keys()].length;
      const w = s.workers()[0];
      if (killed === 0 && done > 8 && w) {
        s.supervisor.kill(w.pid, 'SIGKILL');
        killed++;
      }
    }, 50);
    const result = await s.run();
    clearInterval(killer);
    await s.close();
    assert.equal(killed, 1);
    assert.deepEqual(exits, ['SIGKILL']);
    const hits = pageHits(site);
    const expected = expectedPages(site.url, SITE).sort();
    assert.deepEqual([...hits.keys()].sort(), expected, 'every page fetched after the kill');
    assert.equal(result.status.stats!.failed, 0);
    const pages = await bufferedPages(redis.url, 'killed');
    const keys = new Set(pages.flatMap((p) => p.items.map((i) => i.key)));
    assert.equal(keys.size, allBooks(SITE).length, 'every item extracted at least once (the store dedups replays)');
  });

  it("gives a killed worker's jobs and host slots back within a stalled-jobs check, not when locks and leases expire", async () => {
    // Locks of 30 s and host leases of 35 s (timeout + 5 s), the defaults: had the supervisor not released them,
    // the dead worker's pages could not run again, nor its host's slots be used, for at least 30 s. Released, they
    // are back at the next stalled-jobs check (every 5 s, the default). The host allows 4 requests, fewer than the
    // two workers' 8: leaked leases would stall it.
    site = await serveSite(SITE, 0, undefined, 150);
    const slowSite = site;
    const host = new URL(site.url).host;
    const task = await writeTask(
      bookTask(site.url, 'released', 'politeness: { perHost: { concurrency: 4, delay: 0ms } }', {
        request: '{ timeout: 30s, retries: { attempts: 3, backoff: fixed, delay: 100ms } }',
      }),
    );
    const s = session(task, redis.url, {
      workers: 2,
      concurrency: 4,
      restartOnCrash: true,
      lockDurationMs: 30_000,
      stalledIntervalMs: 5_000,
    });
    const conn = new Redis(redis.url);
    type Victim = { pid: number; owner: string; leasesAtKill: number };
    // Set by the killer below, which TypeScript does not see running.
    let victim = null as Victim | null;
    let killedAt = 0;
    const released: { pid: number; jobs: number; afterKillMs: number; beatLeft: string | null; leasesLeft: number }[] =
      [];
    s.supervisor.on('released', (pid, jobs) => {
      const afterKillMs = Date.now() - killedAt;
      void (async () => {
        const leases = await conn.zrange(hostKeys(host).active, 0, -1);
        released.push({
          pid,
          jobs,
          afterKillMs,
          beatLeft: await conn.hget(WORKERS_KEY, workerIdOf(pid)),
          leasesLeft: leases.filter((l) => l.startsWith(victim!.owner)).length,
        });
      })();
    });
    let killing = false;
    const killer = setInterval(() => {
      const w = s.workers()[0];
      if (killing || victim || !w || slowSite.hits.size < 10) return;
      killing = true;
      void (async () => {
        const raw = await conn.hget(WORKERS_KEY, workerIdOf(w.pid));
        const owner = `${(JSON.parse(raw!) as WorkerBeat).bull!.released}:`;
        const leases = (await conn.zrange(hostKeys(host).active, 0, -1)).filter((l) => l.startsWith(owner)).length;
        if (leases === 0) return void (killing = false);
        s.supervisor.kill(w.pid, 'SIGKILL');
        killedAt = Date.now();
        victim = { pid: w.pid, owner, leasesAtKill: leases };
      })();
    }, 20);
    try {
      const result = await s.run();
      await s.close();
      assert.ok(victim, 'a worker was killed with requests in flight');
      assert.deepEqual(
        released.map((r) => [r.pid, r.beatLeft, r.leasesLeft]),
        [[victim.pid, null, 0]],
        'its jobs released once, its heartbeat and its host leases gone',
      );
      // Released by the supervisor while the dead worker's locks still held its jobs (only a lock still its own is
      // released: frontier/fleet.ts releaseDeadWorker), so without it they would have come back only when the locks
      // (30 s) and host leases (35 s) ran out. That, not how soon on a given machine, is the check.
      assert.ok(
        released[0]!.jobs >= victim.leasesAtKill,
        `${released[0]!.jobs} jobs released ${released[0]!.afterKillMs} ms after the kill, ${victim.leasesAtKill} of them fetching`,
      );
      const expected = expectedPages(site.url, SITE).sort();
      assert.deepEqual([...pageHits(site).keys()].sort(), expected, 'every page fetched');
      assert.equal(result.status.stats!.failed, 0);
      // Released, not forgotten: BullMQ counted each as a stall (a page that keeps killing workers still fails).
      const q = new CrawlQueue(conn, 'released');
      const stalls = (await q.queue.getCompleted(0, -1)).reduce((n, j) => n + (j.stalledCounter ?? 0), 0);
      await q.close();
      assert.equal(stalls, released[0]!.jobs);
    } finally {
      clearInterval(killer);
      conn.disconnect();
    }
  });

  it('leaves a heartbeat written after the death alone: the pid was recycled by a new worker', async () => {
    const conn = new Redis(redis.url);
    try {
      const id = workerIdOf(424242);
      const diedAt = Date.now();
      const beat: WorkerBeat = {
        id,
        pid: 424242,
        host: 'h',
        tasks: ['t'],
        concurrency: 1,
        started: diedAt + 5,
        lastSeen: diedAt + 5,
        processed: 0,
        failed: 0,
        bull: { t: 'b' },
      };
      await conn.hset(WORKERS_KEY, id, JSON.stringify(beat));
      assert.deepEqual(await releaseDeadWorker(conn, id, diedAt), {});
      assert.ok(await conn.hget(WORKERS_KEY, id), "the new worker's heartbeat is kept");
      await conn.hset(WORKERS_KEY, id, JSON.stringify({ ...beat, started: diedAt - 1000 }));
      assert.deepEqual(await releaseDeadWorker(conn, id, diedAt), { t: 0 });
      assert.equal(await conn.hget(WORKERS_KEY, id), null, "the dead worker's heartbeat is removed");
    } finally {
      conn.disconnect();
    }
  });

  it('reads the fleet past heartbeats it cannot read, and never releases on one', async () => {
    const conn = new Redis(redis.url);
    try {
      await conn.del(WORKERS_KEY);
      const beat: WorkerBeat = {
        id: 'm:2',
        pid: 2,
        host: 'm',
        tasks: ['t'],
        concurrency: 4,
        started: 1,
        lastSeen: Date.now(),
        processed: 3,
        failed: 0,
      };
      await conn.hset(
        WORKERS_KEY,
        'm:1',
        '{not json',
        'm:2',
        JSON.stringify(beat),
        'm:3',
        'null',
        'm:4',
        JSON.stringify({ id: 'm:4', pid: '4' }),
      );
      assert.deepEqual(await readWorkers(conn), [beat]);
      assert.deepEqual(await releaseDeadWorker(conn, 'm:3', Date.now()), {});
      assert.equal(await conn.hget(WORKERS_KEY, 'm:3'), 'null', 'an entry it cannot read is left as it is');
    } finally {
      await conn.del(WORKERS_KEY);
      conn.disconnect();
    }
  });

  // Issue 23, item 4: the dashboard listed workers dead for 9 minutes while the Workers view had dropped them.
  it('counts a worker silent for longer than WORKER_GONE_AFTER_MS as gone, for every view that lists workers', async () => {
    const conn = new Redis(redis.url);
    try {
      await conn.del(WORKERS_KEY);
      const now = Date.now();
      const beat = (id: string, lastSeen: number): WorkerBeat => ({
        id,
        pid: 1,
        host: 'm',
        tasks: ['t'],
        concurrency: 4,
        started: 1,
        lastSeen,
        processed: 0,
        failed: 0,
      });
      const live = beat('m:live', now - 5_000);
      const dead = beat('m:dead', now - WORKER_GONE_AFTER_MS - 1_000);
      await conn.hset(WORKERS_KEY, live.id, JSON.stringify(live), dead.id, JSON.stringify(dead));
      assert.deepEqual(
        (await readWorkers(conn)).map((b) => b.id),
        ['m:dead', 'm:live'],
      );
      assert.deepEqual(await readLiveWorkers(conn, now), [live]);
    } finally {
      await conn.del(WORKERS_KEY);
      conn.disconnect();
    }
  });
});
