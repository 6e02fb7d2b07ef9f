import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, linkSync, unlinkSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { allBooks, expectedPages, serveSite, type SiteOptions, type SiteServer } from '../../src/demo/site';
import { taskKeys } from '../../src/frontier/keys';
import { launchCrawl } from '../../src/run/launcher';
import { StoreLostError } from '../../src/run/storeAttachment';
import { openStore, schemaForTask } from '../../src/store';
import type { CrawlTask } from '../../src/core/task/model';
import { startRedis, type RedisServer } from '../support/services';
import { startPostgres, type PostgresServer } from '../support/postgres';
import { bookTask, session, WORKER_SCRIPT, writeTask } from '../support/crawl';
import { until } from '../support/until';

// A broken or missing store must not leave a run stuck or its items stranded (issue 22, item 4): a finalize
// that died left its flag, and every later run said "another process finalized this run" while the items sat
// in the stream; SIGTERM did not end a CLI whose finalize waited on a store that never answered; a store file
// deleted mid-crawl went unnoticed and the summary claimed rows in a file that no longer existed. Real Redis,
// PostgreSQL, HTTP, worker processes and the built CLI.

const SITE: SiteOptions = { listPages: 3, perPage: 10, filler: 1 };
const CLI = resolve('dist/cli.js');

async function keysIn(url: string, task: CrawlTask): Promise<string[]> {
  const store = await openStore(url, { task: task.name, cwd: dirname(task.file) });
  try {
    return (await store.readItems('book', { offset: 0, limit: 10_000 })).map((i) => i.key);
  } finally {
    await store.close();
  }
}

function cli(
  args: string[],
  env: Record<string, string> = {},
): { exited: Promise<number | null>; output: () => string; kill: (sig: NodeJS.Signals) => void } {
  const child = spawn(process.execPath, [CLI, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, CRAWL_STUDIO_REDIS: '', ...env },
  });
  let out = '';
  child.stdout.on('data', (b) => (out += b));
  child.stderr.on('data', (b) => (out += b));
  return {
    exited: new Promise((r) => child.on('exit', (code) => r(code))),
    output: () => out,
    kill: (sig) => child.kill(sig),
  };
}

describe('a run whose store goes wrong (issue 22, item 4)', function () {
  this.timeout(360_000);
  let redis: RedisServer;
  let site: SiteServer;
  let conn: Redis;

  beforeEach(async () => {
    redis = await startRedis();
    conn = new Redis(redis.url);
  });
  afterEach(async () => {
    conn?.disconnect();
    await site?.close();
    await redis?.stop();
  });

  for (const left of ['with its TTL (a finalizer killed mid-finalize)', 'without a TTL (left by an older version)']) {
    it(`a run whose finalize flag was left ${left} is finalized by the next run, which stores the stream first`, async () => {
      site = await serveSite(SITE, 0);
      const task = await writeTask(bookTask(site.url, 'orphaned'));
      // A driver without a store: every page's entry stays in the items stream, as when the finalizer died
      // before its writer stored them. Then the state that finalizer left: run 'running', flag set.
      const first = session(task, redis.url, { workers: 1 });
      const firstRun = (await first.run()).run.run;
      await first.close();
      const k = taskKeys('orphaned');
      assert.equal(await conn.xlen(k.items), expectedPages(site.url, SITE).length, 'every page waits in the stream');
      await conn.hset(k.meta, 'state', 'running');
      if (left.startsWith('with')) await conn.set(k.finalized(firstRun), '1', 'PX', 2_000);
      else await conn.set(k.finalized(firstRun), '1');

      const launch = launchCrawl({
        task,
        redisUrl: redis.url,
        workers: 1,
        concurrency: 2,
        workerScript: WORKER_SCRIPT,
        pollMs: 100,
      });
      const result = await launch.done;
      assert.equal(result.resumed, true);
      assert.equal(result.run.run, firstRun);
      assert.ok(result.summary, 'this run finalized it (not "another process finalized this run")');
      assert.equal(await conn.xlen(k.items), 0, 'nothing left in the stream');
      const books = allBooks(SITE).length;
      assert.deepEqual(result.stored.rows, [{ type: 'book', count: books }], 'the summary counts every item, stored');
      assert.equal(new Set(await keysIn(result.stored.location, task)).size, books);
      assert.equal(await conn.hget(k.meta, 'state'), 'finished');
    });
  }

  describe('with PostgreSQL', function () {
    let pgs: PostgresServer;
    before(async function () {
      pgs = await startPostgres();
    });
    after(async () => {
      await pgs?.destroy();
    });

    it('a store that cannot open (no such database) stops `run` before its run is seeded: nothing queued or fetched', async () => {
      site = await serveSite(SITE, 0);
      const wrong = new URL(pgs.url);
      wrong.pathname = '/no_such_db';
      const task = await writeTask(bookTask(site.url, 'nodb', `store: { url: "${wrong.href}" }`));
      const run = cli(['run', task.file, '--redis', redis.url, '--workers', '1']);
      assert.equal(await run.exited, 1, run.output());
      assert.match(
        run.output(),
        /database "no_such_db" does not exist — create the database \(createdb\) or fix the URL/,
      );
      // Before: the run was seeded and a worker took pages while the store opened, and the run was left interrupted.
      assert.equal(await conn.exists(taskKeys('nodb').meta), 0, 'no run of the task in Redis');
      assert.deepEqual([...site.hits.keys()], [], 'no page requested');
    });

    it('SIGTERM ends a CLI whose finalize waits on a store that does not answer within 30 s; the next run stores every item', async () => {
      site = await serveSite(SITE, 0);
      const db = await pgs.createDatabase('hung_store');
      const task = await writeTask(bookTask(site.url, 'hung', `store: { url: "${db}" }`));
      // The store's tables exist; then another session holds a lock on them, so every write waits (no error, no
      // timeout): a database that stopped answering.
      const made = await openStore(db, { task: 'hung' });
      await made.countPages();
      await made.close();
      const locker = new pg.Client({ connectionString: db });
      await locker.connect();
      let locked = true;
      try {
        await locker.query('BEGIN');
        await locker.query(`LOCK TABLE "${schemaForTask('hung')}".pages IN ACCESS EXCLUSIVE MODE`);
        const args = ['run', task.file, '--redis', redis.url, '--workers', '1', '--concurrency', '4'];
        // The CLI's last-resort quit (20 s by default) is moved out of the way: what is tested is that the launch
        // itself ends, its store's close bounded, however long a loaded machine takes to get there.
        const run1 = cli(args, { CRAWL_STUDIO_STOP_DEADLINE: '120' });
        const pages = expectedPages(site.url, SITE).length;
        // Every page fetched: the run has drained and its finalize waits for the store.
        await until(
          'the crawl to drain',
          async () =>
            Number(
              (await conn.hget(taskKeys('hung').stats((await conn.hget(taskKeys('hung').meta, 'run'))!), 'done')) ?? 0,
            ) >= pages,
          60_000,
        );
        // The driver has won the run's finalize (its flag is set), so its finalize is what waits for the store.
        const run = (await conn.hget(taskKeys('hung').meta, 'run'))!;
        await until(
          'the driver to start finalizing',
          async () => (await conn.exists(taskKeys('hung').finalized(run))) === 1,
          60_000,
        );
        const t0 = Date.now();
        run1.kill('SIGTERM');
        const code = await Promise.race([
          run1.exited,
          new Promise<'hung'>((r) => setTimeout(() => r('hung'), 150_000)),
        ]);
        if (code === 'hung') run1.kill('SIGKILL');
        assert.notEqual(
          code,
          'hung',
          `the CLI still ran ${Math.round((Date.now() - t0) / 1000)} s after SIGTERM:\n${run1.output().slice(-2000)}`,
        );
        assert.equal(code, 130, run1.output().slice(-2000));
        assert.doesNotMatch(
          run1.output(),
          /Still stopping after/,
          'the launch ended by itself, not by the last-resort quit',
        );
        // The launch itself ends (its store's close is bounded), not only the CLI's last-resort quit.
        assert.match(run1.output(), /Stopped\. Run the same command again to resume/);
        assert.match(run1.output(), /the store did not close within 10 s/);

        await locker.query('ROLLBACK');
        locked = false;
        const run2 = cli(args);
        assert.equal(await run2.exited, 0, run2.output().slice(-2000));
        assert.match(run2.output(), /Resumed run/);
        assert.doesNotMatch(run2.output(), /another process finalized/);
        const books = allBooks(SITE).length;
        assert.match(run2.output(), new RegExp(`items stored\\s+book: ${books} rows`));
        assert.equal(new Set(await keysIn(db, task)).size, books);
        assert.equal(await conn.xlen(taskKeys('hung').items), 0);
      } finally {
        if (locked) await locker.query('ROLLBACK').catch(() => undefined);
        await locker.end();
      }
    });
  });

  it('a store file deleted mid-run is detected: the run fails saying so, and the next run stores what the lost file took', async () => {
    // Slow enough that the file is deleted with most of the crawl still to come.
    site = await serveSite(SITE, 0, undefined, 60);
    const task = await writeTask(
      bookTask(site.url, 'deleted', 'politeness: { perHost: { concurrency: 2, delay: 0ms } }'),
    );
    const launch = launchCrawl({
      task,
      redisUrl: redis.url,
      workers: 1,
      concurrency: 2,
      workerScript: WORKER_SCRIPT,
      pollMs: 100,
    });
    await until('some rows stored', () => (launch.store?.writer.counters().written ?? 0) >= 3);
    const path = join(dirname(task.file), '.crawl', 'deleted.sqlite');
    // As `rm .crawl/deleted.sqlite*` would, but hard links keep the deleted file readable for the test: what the
    // run wrote to it before and after the deletion (its open handle still writes there).
    const backup = join(dirname(task.file), 'lost.sqlite');
    for (const suffix of ['', '-wal', '-shm', '-journal']) {
      if (!existsSync(path + suffix)) continue;
      linkSync(path + suffix, backup + suffix);
      unlinkSync(path + suffix);
    }
    const err = await launch.done.then(
      () => null,
      (e: Error) => e,
    );
    assert.ok(err instanceof StoreLostError, `the run fails for the lost store; got ${err}`);
    assert.match(
      err.message,
      new RegExp(`the store file ${path.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} was deleted during the run`),
    );
    assert.ok(!existsSync(path), 'no store file was made up at the path by the failed run');

    const again = launchCrawl({
      task,
      redisUrl: redis.url,
      workers: 1,
      concurrency: 2,
      workerScript: WORKER_SCRIPT,
      pollMs: 100,
    });
    const result = await again.done;
    assert.equal(result.resumed, true);
    const now = await keysIn(`sqlite:${path}`, task);
    assert.deepEqual(
      result.stored.rows,
      [{ type: 'book', count: now.length }],
      'the summary counts the rows of the file that is there',
    );
    // Every item is in one of the two files: the lost one holds what was acknowledged into it, the new one the rest.
    const lost = await keysIn(`sqlite:${backup}`, task);
    const all = new Set([...lost, ...now]);
    const books = allBooks(SITE).map((b) => b.upc);
    assert.deepEqual([...all].sort(), [...books].sort(), 'no item lost between the deleted file and the new one');
    assert.ok(
      now.length > 0 && now.length < books.length,
      `the new file holds the items the deleted one took after it was deleted and the rest (${now.length})`,
    );
  });
});
