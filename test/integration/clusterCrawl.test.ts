import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { allBooks, expectedPages, serveSite, type SiteOptions } from '../../src/demo/site';
import { connectRedis, isCluster } from '../../src/redis/connect';
import { scanKeys } from '../../src/redis/nodes';
import { KEY_ROOT, partitionKeys, taskKeys } from '../../src/frontier/keys';
import { readLayout } from '../../src/frontier/partitions';
import { startRedisCluster, type RedisCluster } from '../support/services';
import { bookTask, exportedUpcs, writeTask } from '../support/crawl';
import { oneAtATimeTask, slowLinksSite } from '../support/cliSuite';
import { readTaskStatus } from '../../src/observe/taskStatus';
import { until } from '../support/until';

// Crawls on a real 3-primary Redis Cluster through `redis+cluster://` (issue 19, item 4): a task's per-page state is
// split into one partition per primary (frontier/layout.ts), each under a hash tag of its own, and each Lua call
// touches keys of one slot (a partition's, or one host's). The real CLI, its worker processes and its SQLite store. Several
// tasks, so their slots fall on different nodes than their hosts' politeness keys.

const exec = promisify(execFile);
const CLI = resolve('dist/cli.js');
const SITE: SiteOptions = { listPages: 3, perPage: 10, filler: 1 };

describe('crawls on a real Redis Cluster (redis+cluster://)', function () {
  this.timeout(300_000);
  let cluster: RedisCluster;
  before(async () => {
    cluster = await startRedisCluster();
  });
  after(async () => {
    await cluster?.stop();
  });

  it('fetch every page once and store every item once, from `crawl-studio run --redis redis+cluster://…`, no job retried', async () => {
    const redis = connectRedis(cluster.url);
    try {
      for (const name of ['clustered-a', 'clustered-b', 'clustered-c', 'clustered-d']) {
        const site = await serveSite(SITE);
        try {
          const task = await writeTask(bookTask(site.url, name));
          const run = await exec(process.execPath, [CLI, 'run', task.file, '--workers', '2', '--redis', cluster.url], {
            maxBuffer: 16 * 1024 * 1024,
          });
          assert.match(run.stdout, /^Redis: redis\+cluster:\/\/127\.0\.0\.1:\d+,/m, run.stdout);

          const pages = expectedPages(site.url, SITE);
          for (const url of pages)
            assert.equal(
              site.hits.get(url.slice(site.url.length)),
              1,
              `${name}: ${url} fetched ${site.hits.get(url.slice(site.url.length)) ?? 0} times\n${run.stdout}`,
            );
          assert.equal(
            [...site.hits.keys()].filter((p) => p !== '/robots.txt').length,
            pages.length,
            'no other page fetched',
          );

          const upcs = await exportedUpcs(task.file);
          assert.deepEqual(
            upcs,
            allBooks(SITE)
              .map((b) => b.upc)
              .sort(),
            `${name}: every item stored once`,
          );

          // No attempt failed: an error a cluster raises (CROSSSLOT, a pipeline across nodes) shows as a retry
          // before it shows as a page fetched twice.
          const meta = taskKeys(name).meta;
          assert.equal(await redis.hget(meta, 'state'), 'finished');
          // The task's per-page state is split into partitions, one per primary (frontier/layout.ts).
          const tags = (await readLayout(redis, name)).tags;
          assert.equal(tags.length, 3, `${name}: partitions ${tags.join(', ')}`);
          for (const tag of tags) {
            for await (const batch of scanKeys(redis, `${partitionKeys(name, tag).bullPrefix}:${name}:*`)) {
              for (const key of batch) {
                if ((await redis.type(key)) !== 'hash') continue;
                const [failed, attempts] = await redis.hmget(key, 'failedReason', 'atm');
                assert.ok(!failed && Number(attempts ?? 0) <= 1, `${key}: attempt failed: ${failed}`);
              }
            }
          }
          // Each partition's keys carry its tag, so they are on one node; the partitions are on three.
          assert.ok(isCluster(redis));
          const owners = new Set<number>();
          for (const tag of tags) {
            const holders: number[] = [];
            for (const node of redis.nodes('master')) {
              let found = 0;
              for await (const batch of node.scanStream({
                match: `${KEY_ROOT}:{${tag}}*`,
                count: 1000,
              }) as AsyncIterable<string[]>)
                found += batch.length;
              if (found > 0) holders.push(node.options.port!);
            }
            assert.equal(holders.length, 1, `${name}: keys of {${tag}} on ${holders.length} nodes`);
            owners.add(holders[0]!);
          }
          assert.equal(owners.size, 3, `${name}: its partitions on ${owners.size} nodes`);
        } finally {
          await site.close();
        }
      }
    } finally {
      redis.disconnect();
    }
  });

  it('`crawl-studio pause`, `resume` and `stop` hold every partition of a task on the Cluster', async () => {
    const web = await slowLinksSite(30);
    const redis = connectRedis(cluster.url);
    try {
      const task = await writeTask(oneAtATimeTask('held', web.url));
      const cli = (...args: string[]) => exec(process.execPath, [CLI, ...args, '--redis', cluster.url]);
      const driver = spawn(
        process.execPath,
        [CLI, 'run', task.file, '--workers', '1', '--concurrency', '1', '--redis', cluster.url],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let out = '';
      driver.stdout.on('data', (d: Buffer) => (out += d.toString()));
      driver.stderr.on('data', (d: Buffer) => (out += d.toString()));
      const exited = new Promise<number | null>((r) => driver.once('exit', (code) => r(code)));
      try {
        const status = () => readTaskStatus(redis, 'held');
        const done = async () => (await status()).stats?.done ?? 0;
        await until('two pages fetched', async () => (await done()) >= 2);
        const tags = (await readLayout(redis, 'held')).tags;
        assert.equal(tags.length, 3, `partitions ${tags.join(', ')}`);
        // Every partition's queue: a worker takes pages from each, so one left running goes on fetching.
        const pausedParts = async () =>
          Promise.all(tags.map(async (t) => (await redis.hexists(partitionKeys('held', t).bull.meta, 'paused')) === 1));

        await cli('pause', task.file);
        assert.deepEqual(await pausedParts(), [true, true, true]);
        assert.equal((await status()).phase.kind, 'paused');
        await until('the page in flight to finish', async () => (await status()).counts.active === 0);
        const settled = await done();
        await new Promise((r) => setTimeout(r, 1_500));
        assert.equal(await done(), settled, 'no page fetched while paused');

        await cli('resume', task.file);
        assert.deepEqual(await pausedParts(), [false, false, false]);
        await until('pages fetched again', async () => (await done()) > settled);

        await cli('stop', task.file);
        assert.equal(await exited, 0, out);
        assert.match(out, /^Run \S+ was stopped from elsewhere/m, out);
        assert.equal((await readLayout(redis, 'held')).tags.length, 3);
        assert.equal((await status()).run!.state, 'stopped');
        assert.deepEqual(await pausedParts(), [true, true, true], 'no worker takes a page of any partition');
        assert.ok((await done()) < 31, 'it ended before its pages did');
      } finally {
        driver.kill('SIGKILL');
      }
    } finally {
      redis.disconnect();
      await web.close();
    }
  });
});
