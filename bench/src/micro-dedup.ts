import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { parseArgs } from 'node:util';
import { parseTask } from '../../src/core/task/parse';
import type { FrontierLink } from '../../src/frontier/types';
import { bandOf, discoverCall } from '../../src/frontier/scriptArgs';
import { bucketBitsFor } from '../../src/frontier/dedup';
import { taskKeys } from '../../src/frontier/keys';
import { withScripts, type CrawlScripts } from '../../src/frontier/scripts';

// Redis memory per URL of the dedup ("seen") state at N URLs, driven through the engine's own discover path:
// the same keys, members and Lua script (lua/discover.lua) that CrawlQueue.enqueueLinks sends, 1,000 links per
// call. The script also queues each new URL in the compact frontier; those keys are dropped after each call so
// the figure is the seen set's alone (micro-frontier.ts measures the two together). Compared with a plain Redis
// set of the full URLs and with a set of 40-hex SHA-1 fingerprints (scrapy-redis's dupefilter).
// Needs an empty Redis of its own. Prints { result: {...} }.

const { values } = parseArgs({ options: { redis: { type: 'string' }, urls: { type: 'string' } } });
const N = Number(values.urls ?? 1_000_000);
const BATCH = 1000;
const HOSTS = 37;

const { task } = parseTask(
  'name: dedupbench\nstart: [http://shop-0.example.com/]\nrules:\n  - name: book\n',
  '/tmp/dedupbench.crawl.yaml',
);
if (!task) throw new Error('the bench task does not parse');

function links(urls: string[]): FrontierLink[] {
  return urls.map((u) => ({ url: u, host: new URL(u).host, rule: 'book', depth: 1, priority: null }));
}

/** The URLs of the batch starting at i, as one discover call takes them (the engine builds that call the same way). */
function batchUrls(i: number): string[] {
  return Array.from({ length: Math.min(N, i + BATCH) - i }, (_, j) => url(i + j));
}

function url(i: number): string {
  return `http://shop-${i % HOSTS}.example.com/catalogue/category/books/item-${i}.html?page=${i % 7}`;
}

async function used(redis: Redis): Promise<number> {
  const info = await redis.info('memory');
  return Number(/used_memory:(\d+)/.exec(info)![1]);
}

async function keysMemory(
  redis: Redis,
  pattern: string,
): Promise<{ keys: number; bytes: number; encodings: Record<string, number>; maxCard: number }> {
  let cursor = '0';
  let keys = 0;
  let bytes = 0;
  let maxCard = 0;
  const encodings: Record<string, number> = {};
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    if (batch.length === 0) continue;
    const p = redis.pipeline();
    for (const k of batch) p.memory('USAGE', k, 'SAMPLES', 0).object('ENCODING', k).scard(k);
    const res = (await p.exec())!;
    for (let i = 0; i < batch.length; i++) {
      bytes += Number(res[i * 3]![1]);
      const enc = String(res[i * 3 + 1]![1]);
      encodings[enc] = (encodings[enc] ?? 0) + 1;
      maxCard = Math.max(maxCard, Number(res[i * 3 + 2]![1]));
      keys++;
    }
  } while (cursor !== '0');
  return { keys, bytes, encodings, maxCard };
}

async function main() {
  // One node, as ioredis's Redis: INFO, SCAN and MEMORY USAGE below read that node's memory (withScripts takes the
  // engine's Redis, a node or a Cluster).
  const redis = withScripts(new Redis(values.redis!, { maxRetriesPerRequest: null })) as Redis & CrawlScripts;
  // CONFIG GET replies [name, value] (ioredis types the reply unknown).
  const intsetMax = Number(((await redis.config('GET', 'set-max-intset-entries')) as string[])[1]);
  await redis.flushall();
  const k = taskKeys(task!.name);
  const run = 'r1';
  const bits = bucketBitsFor(null);
  // discover.lua refuses links of a run that is not the task's current one (see src/frontier/lua/discover.lua).
  await redis.hset(k.meta, 'run', run);
  await redis.hset(k.frontier.meta, 'run', run);
  let m0 = await used(redis);
  let t0 = performance.now();
  let fresh = 0;
  const frontierKeys = [
    k.frontier.bands,
    k.frontier.ready(bandOf(null)),
    ...Array.from({ length: HOSTS }, (_, h) => k.frontier.queue(bandOf(null), `shop-${h}.example.com`)),
  ];
  for (let i = 0; i < N; i += BATCH) {
    const batch = batchUrls(i);
    const { keys, args } = discoverCall(task!, { run, bucketBits: bits }, links(batch), 0, null);
    const codes = await redis.csDiscover(keys.length, ...keys, ...args);
    fresh += codes.slice(0, batch.length).filter((c) => c === 1).length;
    await redis.unlink(...frontierKeys);
  }
  const discoverS = (performance.now() - t0) / 1000;
  const engine = (await used(redis)) - m0;
  const seen = await keysMemory(redis, k.seenPattern(run));
  // A second pass: every URL again, all must come back "already seen" (exactness on this data).
  let again = 0;
  for (let i = 0; i < Math.min(N, 100_000); i += BATCH) {
    const batch = batchUrls(i);
    const { keys, args } = discoverCall(task!, { run, bucketBits: bits }, links(batch), 0, null);
    again += (await redis.csDiscover(keys.length, ...keys, ...args))
      .slice(0, batch.length)
      .filter((c) => c !== 0).length;
  }

  await redis.flushall();
  m0 = await used(redis);
  t0 = performance.now();
  for (let i = 0; i < N; i += BATCH) {
    const batch: string[] = [];
    for (let j = i; j < Math.min(N, i + BATCH); j++) batch.push(url(j));
    await redis.sadd('plain:urls', ...batch);
  }
  const plainS = (performance.now() - t0) / 1000;
  const plain = (await used(redis)) - m0;
  const plainKey = Number(await redis.memory('USAGE', 'plain:urls', 'SAMPLES', 0));

  await redis.flushall();
  m0 = await used(redis);
  for (let i = 0; i < N; i += BATCH) {
    const batch: string[] = [];
    for (let j = i; j < Math.min(N, i + BATCH); j++) batch.push(createHash('sha1').update(url(j)).digest('hex'));
    await redis.sadd('fp:sha1', ...batch);
  }
  const sha = (await used(redis)) - m0;
  await redis.flushall();
  redis.disconnect();

  let urlBytes = 0;
  for (let i = 0; i < N; i += 97) urlBytes += url(i).length;
  console.log(
    JSON.stringify({
      result: {
        urls: N,
        avgUrlChars: urlBytes / Math.ceil(N / 97),
        bucketBits: bits,
        intsetMax,
        fresh,
        falseSeenOnFirstPass: N - fresh,
        notSeenOnSecondPass: again,
        discoverUrlsPerSec: N / discoverS,
        engineUsedMemoryBytesPerUrl: engine / N,
        engineSeenKeysBytesPerUrl: seen.bytes / N,
        seenKeys: seen.keys,
        seenEncodings: seen.encodings,
        maxBucketCard: seen.maxCard,
        plainSetBytesPerUrl: plain / N,
        plainSetKeyBytesPerUrl: plainKey / N,
        plainSaddUrlsPerSec: N / plainS,
        sha1HexSetBytesPerUrl: sha / N,
      },
    }),
  );
}
main().catch((e) => {
  console.error(e);
  process.exit(1);
});
