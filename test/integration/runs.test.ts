import assert from 'node:assert/strict';
import { runElapsedMs } from '../../src/observe/figures';
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { resolve } from 'node:path';
import { allBooks, expectedPages, serveSite, type SiteOptions, type SiteServer } from '../../src/demo/site';
import { hostKeys, taskKeys, WORKERS_KEY } from '../../src/frontier/keys';
import { connectRedis } from '../../src/redis/connect';
import { openStore } from '../../src/store';
import { attachStore, storeUrlFor } from '../../src/run/storeAttachment';
import type { CrawlTask } from '../../src/core/task/model';
import { startRedis, type RedisServer } from '../support/services';
import { startPostgres, type PostgresServer } from '../support/postgres';
import { bookTask, session, writeTask } from '../support/crawl';
import { readJobCounts, readTaskStatus } from '../../src/observe/taskStatus';
import { describeRunPhase } from '../../src/observe/runPhase';
import { until } from '../support/until';

// Runs: finalize exactly once however many processes race for it, recurring runs, workers stopped with Ctrl-C,
// a standalone writer. Real redis-server, PostgreSQL, HTTP and worker processes.

const SITE: SiteOptions = { listPages: 3, perPage: 10, filler: 1 };

async function events(redisUrl: string, task: string): Promise<{ type: string; run: string; items?: number }[]> {
  const r = new Redis(redisUrl);
  try {
    return (await r.xrange(taskKeys(task).events, '-', '+')).map(([, f]) => JSON.parse(f[1]!));
  } finally {
    r.disconnect();
  }
}

async function storedKeys(task: CrawlTask): Promise<string[]> {
  const store = await openStore(storeUrlFor(task), { task: task.name });
  try {
    return (await store.readItems('book', { offset: 0, limit: 10_000 })).map((i) => i.key).sort();
  } finally {
    await store.close();
  }
}

describe('runs (finalize, schedules, stopping workers)', function () {
  this.timeout(180_000);
  let redis: RedisServer;
  let site: SiteServer;

  beforeEach(async () => {
    redis = await startRedis();
    site = await serveSite(SITE, 0, undefined, 10);
  });
  afterEach(async () => {
    await site?.close();
    await redis?.stop();
  });

  describe('with PostgreSQL', () => {
    let pg: PostgresServer;
    before(async function () {
      this.timeout(120_000);
      pg = await startPostgres();
    });
    after(async () => {
      await pg?.destroy();
    });

    it('finalizes exactly once when 4 workers in two sessions drain a crawl together; the summary matches the table', async () => {
      const db = await pg.createDatabase('finalize_once');
      const task = await writeTask(bookTask(site.url, 'race', `store: { url: "${db}" }`));
      const stores = await Promise.all(
        [0, 1].map(async () => {
          const r = connectRedis(redis.url);
          return { r, attached: await attachStore(r, task) };
        }),
      );
      const s1 = session(task, redis.url, { workers: 2, store: stores[0]!.attached.hooks, pollMs: 50 });
      // A second driver of a run is refused, and one forced in takes the run over (runLease.test.ts); a
      // `crawl-studio writer` (a joining session, here with workers of its own) races the driver to finalize,
      // which is what exactly-once must survive. It serves runs until stopped: stopped once the run finished.
      const s2 = session(task, redis.url, {
        workers: 2,
        store: stores[1]!.attached.hooks,
        pollMs: 50,
        fresh: false,
        mode: 'join',
      });
      const p1 = s1.run();
      await until('the run to start', async () => (await s1.crawl.currentRun())?.state === 'running');
      const p2 = s2.run();
      const r1 = await p1;
      s2.stop();
      const r2 = await p2;
      await Promise.all([s1.close(), s2.close()]);
      for (const s of stores) {
        await s.attached.close();
        s.r.disconnect();
      }
      assert.equal(r1.run.run, r2.run.run, 'both sessions worked on one run');
      assert.equal([r1.summary, r2.summary].filter(Boolean).length, 1, 'exactly one session finalized');
      const finished = (await events(redis.url, 'race')).filter((e) => e.type === 'run-finished');
      assert.equal(finished.length, 1);

      const store = await openStore(db, { task: 'race' });
      try {
        const runs = await store.readRuns();
        assert.equal(runs.length, 1, 'one run summary in the store');
        assert.equal(await store.count('book'), allBooks(SITE).length);
        assert.equal(runs[0]!.items, await store.count('book'), 'summary items match the table');
        assert.equal(runs[0]!.pages, expectedPages(site.url, SITE).length);
      } finally {
        await store.close();
      }
    });

    it('finishes a crawl with every item stored once after PostgreSQL was down for 10 s', async () => {
      const db = await pg.createDatabase('pg_down');
      const task = await writeTask(
        bookTask(
          site.url,
          'pgdown',
          `store: { url: "${db}" }\npoliteness: { perHost: { concurrency: 2, delay: 40ms } }`,
        ),
      );
      const r = connectRedis(redis.url);
      const attached = await attachStore(r, task);
      let maxBacklog = 0;
      const s = session(task, redis.url, {
        workers: 2,
        store: attached.hooks,
        onProgress: (p) => (maxBacklog = Math.max(maxBacklog, p.backlog)),
      });
      const running = s.run();
      await until('some pages', () => [...site.hits.keys()].length > 5);
      await pg.stop();
      // Not a wait for something: the outage is the scenario (10 s, longer than the writer's first retries).
      await new Promise((res) => setTimeout(res, 10_000));
      await pg.start();
      const result = await running;
      await s.close();
      await attached.close();
      r.disconnect();
      assert.ok(maxBacklog > 0, 'pages waited in the buffer while the database was down');
      assert.ok(result.summary, 'the run was finalized after the database came back');
      const store = await openStore(db, { task: 'pgdown' });
      try {
        const keys = (await store.readItems('book', { offset: 0, limit: 1000 })).map((i) => i.key).sort();
        assert.deepEqual(
          keys,
          allBooks(SITE)
            .map((b) => b.upc)
            .sort(),
        );
      } finally {
        await store.close();
      }
    });
  });

  it('re-runs a scheduled crawl: pages fetched again, items stored once, one summary per run', async () => {
    const task = await writeTask(bookTask(site.url, 'recurring', 'schedule: { every: 3s }'));
    const r = connectRedis(redis.url);
    const attached = await attachStore(r, task);
    const finishedRuns: string[] = [];
    const durations = new Map<string, number>();
    // The next run waits as a delayed job of the queue (BullMQ's job scheduler): there, and no page of the counts.
    const delayedAtEnd: number[] = [];
    const rawDelayed: Promise<number>[] = [];
    const progress: { run: string; elapsedMs: number }[] = [];
    const s = session(task, redis.url, {
      workers: 2,
      store: attached.hooks,
      onRunFinished: (run, status) => {
        finishedRuns.push(run.run);
        durations.set(run.run, runElapsedMs(status.run!, Date.now()));
        delayedAtEnd.push(status.counts.delayed);
        rawDelayed.push(r.zcard(taskKeys(task.name).bull.delayed));
      },
      onProgress: (p) => p.status.run && progress.push({ run: p.status.run.run, elapsedMs: p.elapsedMs }),
    });
    const running = s.run();
    await until('two finished runs', () => finishedRuns.length >= 2, 90_000);
    s.stop();
    await running;
    // How often the session looks between runs is nextPollMs's (test/unit/session-poll.test.ts), not timed here:
    // a wall-clock gap fails on a busy machine.
    await s.close();
    await attached.close();
    r.disconnect();
    assert.notEqual(finishedRuns[0], finishedRuns[1]);
    assert.deepEqual(
      delayedAtEnd,
      delayedAtEnd.map(() => 0),
      'a finished run has no page delayed',
    );
    assert.ok(Math.max(...(await Promise.all(rawDelayed))) >= 1, 'the next run waited among the delayed jobs');
    // The progress of each run says that run's crawling time, as `status` and its summary do, not the session's.
    const second = progress.filter((p) => p.run === finishedRuns[1]);
    assert.ok(second.length > 0);
    for (const p of second) assert.ok(p.elapsedMs <= durations.get(finishedRuns[1]!)!, JSON.stringify(p));
    assert.ok((site.hits.get('/catalogue/book-7.html') ?? 0) >= 2, 'pages fetched again in the second run');
    assert.deepEqual(
      await storedKeys(task),
      allBooks(SITE)
        .map((b) => b.upc)
        .sort(),
      'each item stored once',
    );
    const store = await openStore(storeUrlFor(task), { task: task.name });
    try {
      assert.ok((await store.readRuns()).length >= 2);
    } finally {
      await store.close();
    }
  });

  it("says when a scheduled task's next run starts once its run finished, in `status` as in every view", async () => {
    const task = await writeTask(bookTask(site.url, 'hourly', 'schedule: { every: 1h }'));
    const r = connectRedis(redis.url);
    let finished = false;
    const s = session(task, redis.url, { workers: 1, onRunFinished: () => (finished = true) });
    const running = s.run();
    await until('the first run finished', () => finished, 90_000);
    s.stop();
    await running;
    await s.close();
    try {
      const status = await readTaskStatus(r, task.name);
      assert.equal(status.phase.kind, 'finished');
      const next = status.phase.kind === 'finished' ? status.phase.next : null;
      // The job scheduler's next run: within the hour (BullMQ aligns `every` to its multiples).
      assert.ok(
        next !== null &&
          !next.held &&
          next.at > status.run!.finishedAt! &&
          next.at <= status.run!.finishedAt! + 3_600_000,
        JSON.stringify(next),
      );
      const at = new Date(next.at).toISOString().replace(/\.\d{3}Z$/, 'Z');
      const said = `Finished. Its schedule starts the next run at ${at}.`;
      assert.equal(describeRunPhase(status.phase), said);
      const cli = (...args: string[]) =>
        promisify(execFile)(process.execPath, [resolve('dist/cli.js'), ...args, task.file, '--redis', redis.url]);
      const shown = await cli('status');
      assert.equal(shown.stdout.split('\n')[1], said, shown.stdout);
      // Paused between runs (`crawl-studio pause`, the explorer's and the monitor's pause): nothing starts the next
      // run at its time, and every view says it waits for the resume.
      const paused = await cli('pause');
      assert.match(paused.stdout, /^'hourly' paused: no worker takes its pages until it is resumed/);
      const held = `Finished. Its schedule's next run, due at ${at}, waits until the queue is resumed.`;
      assert.equal(describeRunPhase((await readTaskStatus(r, task.name)).phase), held);
      assert.equal((await cli('status')).stdout.split('\n')[1], held);
      assert.equal((await cli('resume')).stdout.trim(), "'hourly' resumed");
      assert.equal((await cli('status')).stdout.split('\n')[1], said);
      // Its run is over: `stop` refuses, with the words the monitor answers 409 with, and exit 1.
      await assert.rejects(cli('stop'), (err: { code: number; stderr: string }) => {
        assert.equal(err.code, 1);
        assert.match(err.stderr, /^crawl-studio stop: run \S+ of 'hourly' is already finished$/m);
        return true;
      });
    } finally {
      r.disconnect();
    }
  });

  it('stores each item once when three workers extract the same items from different pages', async () => {
    // List pages and book pages both yield 'book' items keyed by title: every book arrives at least twice.
    const task = await writeTask(`name: overlap
start: [${site.url}/]
canonical: { dropParams: [ref, src] }
rules:
  - name: list
    match: ["${site.url}/", "**/catalogue/page-*.html"]
    follow:
      - { selector: "ul.nav a, li.next a", to: list }
      - { selector: "article.product_pod h3 a", to: book }
    items:
      - type: book
        scope: article.product_pod
        key: [title]
        fields: { title: h3 a, price: { selector: p.price_color, regex: "[0-9.]+" } }
  - name: book
    follow:
      - selector: "ul.related a"
    items:
      - type: book
        scope: article.product_page
        key: [title]
        fields: { title: h1, price: { selector: p.price_color, regex: "[0-9.]+" }, upc: td.upc }
`);
    const r = connectRedis(redis.url);
    const attached = await attachStore(r, task);
    const s = session(task, redis.url, { workers: 3, store: attached.hooks });
    const result = await s.run();
    await s.close();
    const c = attached.writer.counters();
    await attached.close();
    r.disconnect();
    assert.equal(result.status.stats!.items, allBooks(SITE).length * 2, 'each book extracted twice');
    const store = await openStore(storeUrlFor(task), { task: task.name });
    try {
      const rows = await store.readItems('book', { offset: 0, limit: 1000 });
      assert.deepEqual(
        rows.map((i) => i.key).sort(),
        allBooks(SITE)
          .map((b) => b.title)
          .sort(),
        'the table holds each key once',
      );
      assert.equal(c.duplicates + c.conflicts, allBooks(SITE).length, 'every second copy was merged');
    } finally {
      await store.close();
    }
  });

  it("`run` quit with a second Ctrl-C leaves no page locked: its killed workers' pages and host slots are released", async () => {
    await site.close();
    // Slow pages: the workers hold pages in flight when the CLI quits.
    site = await serveSite(SITE, 0, undefined, 300);
    const host = new URL(site.url).host;
    const task = await writeTask(
      bookTask(site.url, 'quitnow', 'politeness: { perHost: { concurrency: 8, delay: 0ms } }'),
    );
    const cli = spawn(
      process.execPath,
      [resolve('dist/cli.js'), 'run', task.file, '--redis', redis.url, '--workers', '2', '--concurrency', '4'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    cli.stdout.on('data', (b) => (out += b));
    cli.stderr.on('data', (b) => (out += b));
    const r = new Redis(redis.url);
    try {
      const q = taskKeys('quitnow').bull;
      await until('pages in flight', async () => site.hits.size > 6 && (await r.llen(q.active)) > 0);
      cli.kill('SIGINT');
      // The second Ctrl-C counts as one only once the first was taken: the CLI says it is stopping.
      await until('the first Ctrl-C taken', () => /Stopping: letting workers finish/.test(out));
      cli.kill('SIGINT');
      const code = await new Promise<number | null>((res) => cli.on('exit', (c) => res(c)));
      assert.equal(code, 130, out);
      // Locks of 30 s and leases of 10 s (the task's 5 s timeout + 5 s): without the release they would be here.
      const active = await r.lrange(q.active, 0, -1);
      assert.ok(
        active.length > 0,
        'the killed workers left pages active (back in the queue at the next stalled check)',
      );
      const locked = [];
      for (const id of active) if (await r.exists(`${q.job}${id}:lock`)) locked.push(id);
      assert.deepEqual(locked, [], 'no active page is still locked');
      assert.deepEqual(
        await r.smembers(q.stalled).then((m) => m.sort()),
        [...active].sort(),
        'each is marked for the stalled check',
      );
      assert.deepEqual(await r.zrange(hostKeys(host).active, 0, -1), [], 'no request slot of the host is held');
      assert.deepEqual(await r.hkeys(WORKERS_KEY), [], 'no heartbeat of a dead worker is left');
      assert.match(out, /unfinished pages? went back to the queue/);
    } finally {
      r.disconnect();
      cli.kill('SIGKILL');
    }
  });

  it('a CLI worker stopped with Ctrl-C finishes its pages and loses none; a standalone writer stores and finalizes', async () => {
    const task = await writeTask(
      bookTask(site.url, 'ctrlc', 'politeness: { perHost: { concurrency: 4, delay: 30ms } }'),
    );
    // The run is started by a session without local workers; the CLI worker and writer join it.
    const s = session(task, redis.url, { workers: 0 });
    const running = s.run();
    await until('the run to start', async () => (await s.crawl.currentRun())?.state === 'running');
    const cli = resolve('dist/cli.js');
    const writer = spawn(process.execPath, [cli, 'writer', task.file, '--redis', redis.url], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let writerOut = '';
    writer.stdout.on('data', (b) => (writerOut += b));
    const worker = spawn(process.execPath, [cli, 'worker', task.file, '--redis', redis.url, '--concurrency', '4'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    worker.stdout.on('data', (b) => (out += b));
    await until('some pages', () => [...site.hits.keys()].length > 8);
    worker.kill('SIGINT');
    const code = await new Promise<number | null>((r) => worker.on('exit', (c) => r(c)));
    assert.equal(code, 0, out);
    assert.match(out, /SIGINT: finishing in-flight jobs/);
    const active = (await readJobCounts(s.redis, task.name)).active;
    assert.equal(active, 0, 'no job left active by the stopped worker');
    // A second worker finishes the crawl.
    const worker2 = spawn(process.execPath, [cli, 'worker', task.file, '--redis', redis.url], { stdio: 'ignore' });
    const result = await running;
    worker2.kill('SIGTERM');
    await new Promise((r) => worker2.on('exit', r));
    await until(
      'the writer to store every item',
      async () => (await storedKeys(task)).length === allBooks(SITE).length,
    );
    writer.kill('SIGINT');
    await new Promise((r) => writer.on('exit', r));
    // A writer has no workers to wait for, and says what its stop keeps.
    assert.match(writerOut, /Stopping the writer \(Ctrl-C again to quit now; items not stored yet stay in Redis/);
    assert.doesNotMatch(writerOut, /letting workers finish/);
    await s.close();
    for (const url of expectedPages(site.url, SITE))
      assert.equal(site.hits.get(url.slice(site.url.length)), 1, `${url} fetched once`);
    assert.equal(result.status.stats!.failed, 0);
    assert.deepEqual(
      await storedKeys(task),
      allBooks(SITE)
        .map((b) => b.upc)
        .sort(),
    );
    const finished = (await events(redis.url, 'ctrlc')).filter((e) => e.type === 'run-finished');
    assert.equal(finished.length, 1, 'finalized once, by the session or the writer');
  });
});
