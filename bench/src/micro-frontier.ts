import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { parseArgs } from 'node:util';
import { parseTask } from '../../src/core/task/parse';
import { fingerprintHex } from '../../src/core/url/fingerprint';
import { CrawlQueue } from '../../src/frontier/crawl';
import type { FrontierLink, PageJobData } from '../../src/frontier/types';
import { discoverCall, jobOptions } from '../../src/frontier/scriptArgs';
import { bucketBitsFor, seenSlot } from '../../src/frontier/dedup';
import { bullPrefix, taskKeys } from '../../src/frontier/keys';
import { withScripts, type CrawlScripts } from '../../src/frontier/scripts';

// Redis memory per waiting URL (issue 19): N URLs discovered and left waiting, through the engine's own discover path
// (lua/discover.lua: seen set + compact frontier, 1,000 links per call, no worker so no window), against the same URLs
// as BullMQ jobs with the engine's job options plus their seen-set members (how every waiting URL was kept before the
// frontier). Two spreads of the URLs: a few dozen hosts (a site-sized crawl) and ~10 URLs a host (a broad one), where
// the per-host structures show. Then the cost of moving pages into the window: pages taken per second by lua/fill.lua.
// Needs an empty Redis of its own. Prints { result: {...} }.

const { values } = parseArgs({
  options: { redis: { type: 'string' }, urls: { type: 'string' }, before: { type: 'string' } },
});
const N = Number(values.urls ?? 1_000_000);
const BEFORE = Number(values.before ?? N);
const BATCH = 1000;

const { task } = parseTask(
  'name: frontierbench\nstart: [http://shop-0.example.com/]\nrules:\n  - name: book\n',
  '/tmp/frontierbench.crawl.yaml',
);
if (!task) throw new Error('the bench task does not parse');

/** The i-th URL when the crawl spans `hosts` hosts (the dedup row's URLs with 37 hosts). */
function url(i: number, hosts: number): string {
  return `http://shop-${i % hosts}.example.com/catalogue/category/books/item-${i}.html?page=${i % 7}`;
}

async function used(redis: Redis): Promise<number> {
  const info = await redis.info('memory');
  return Number(/used_memory:(\d+)/.exec(info)![1]);
}

async function keysBytes(redis: Redis, pattern: string): Promise<{ keys: number; bytes: number }> {
  let cursor = '0';
  let keys = 0;
  let bytes = 0;
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 2000);
    cursor = next;
    if (batch.length === 0) continue;
    const p = redis.pipeline();
    for (const k of batch) p.memory('USAGE', k, 'SAMPLES', 0);
    for (const [, b] of (await p.exec())!) bytes += Number(b);
    keys += batch.length;
  } while (cursor !== '0');
  return { keys, bytes };
}

async function after(redis: Redis & CrawlScripts, hosts: number) {
  await redis.flushall();
  const k = taskKeys(task!.name);
  const run = { run: 'r1', bucketBits: bucketBitsFor(null) };
  await redis.hset(k.meta, 'run', run.run, 'state', 'running');
  await redis.hset(k.frontier.meta, 'run', run.run);
  const m0 = await used(redis);
  const t0 = performance.now();
  for (let i = 0; i < N; i += BATCH) {
    const links: FrontierLink[] = [];
    for (let j = i; j < Math.min(N, i + BATCH); j++) {
      const u = url(j, hosts);
      links.push({ url: u, host: new URL(u).host, rule: 'book', depth: 3, priority: null });
    }
    const { keys, args } = discoverCall(task!, run, links, 0, null);
    await redis.csDiscover(keys.length, ...keys, ...args);
  }
  const seconds = (performance.now() - t0) / 1000;
  const delta = (await used(redis)) - m0;
  const waiting = Number(await redis.hget(k.frontier.meta, 'n'));
  const frontier = await keysBytes(redis, k.frontier.pattern);
  const seen = await keysBytes(redis, k.seenPattern(run.run));
  // Pages into the window: what a fill costs per page (no BullMQ add here, the script alone).
  const crawl = new CrawlQueue(redis, task!.name, redis, { windowTarget: async () => 0 });
  const TAKE = Math.min(100_000, N);
  const t1 = performance.now();
  let taken = 0;
  while (taken < TAKE) {
    // No per-host delay nor cap here (lua/frontier.lua fConfig): the script's own cost per page, every host giving.
    const reply = await redis.csFill(
      k.frontier.meta,
      k.frontier.prefix,
      k.bull.job,
      0,
      1e9,
      30_000,
      taken + 1000,
      1,
      '0',
      '0',
    );
    const got = (reply.length - 2) / 5;
    if (got === 0) break;
    taken += got;
  }
  const takeSeconds = (performance.now() - t1) / 1000;
  await crawl.close();
  return {
    hosts,
    waiting,
    usedMemoryBytesPerUrl: delta / N,
    frontierKeysBytesPerUrl: frontier.bytes / N,
    frontierKeys: frontier.keys,
    seenKeysBytesPerUrl: seen.bytes / N,
    discoverUrlsPerSec: N / seconds,
    takenPerSec: taken / takeSeconds,
  };
}

async function before(redis: Redis) {
  await redis.flushall();
  const k = taskKeys(task!.name);
  const bits = bucketBitsFor(null);
  const queue = new Queue<PageJobData>(task!.name, { connection: redis, prefix: bullPrefix(task!.name) });
  const m0 = await used(redis);
  for (let i = 0; i < BEFORE; i += BATCH) {
    const jobs = [];
    const seen = redis.pipeline();
    for (let j = i; j < Math.min(BEFORE, i + BATCH); j++) {
      const u = url(j, 37);
      const data: PageJobData = { url: u, rule: 'book', depth: 3, run: 'r1' };
      jobs.push({ name: 'book', data, opts: jobOptions(task!, `r1.${fingerprintHex(u)}`, null) });
      const slot = seenSlot(u, bits);
      seen.sadd(k.seenBucket('r1', slot.bucket), slot.member);
    }
    await queue.addBulk(jobs);
    await seen.exec();
  }
  const delta = (await used(redis)) - m0;
  await queue.close();
  return { urls: BEFORE, usedMemoryBytesPerUrl: delta / BEFORE };
}

async function main() {
  // One node, as ioredis's Redis: INFO, SCAN and MEMORY USAGE read that node's memory (withScripts takes the
  // engine's Redis, a node or a Cluster).
  const redis = withScripts(new Redis(values.redis!, { maxRetriesPerRequest: null })) as Redis & CrawlScripts;
  let chars = 0;
  for (let i = 0; i < N; i += 97) chars += url(i, 37).length;
  const site = await after(redis, 37);
  const broad = await after(redis, Math.max(1, Math.round(N / 10)));
  const old = BEFORE > 0 ? await before(redis) : null;
  await redis.flushall();
  redis.disconnect();
  console.log(
    JSON.stringify({ result: { urls: N, avgUrlChars: chars / Math.ceil(N / 97), site, broad, before: old } }),
  );
}
main().catch((e) => {
  console.error(e);
  process.exit(1);
});
