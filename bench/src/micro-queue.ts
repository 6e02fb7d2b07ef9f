import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { parseArgs } from 'node:util';
import { CrawlQueue } from '../../src/frontier/crawl';
import { jobOptions } from '../../src/frontier/scriptArgs';
import type { PageJobData } from '../../src/frontier/types';
import { fingerprintHex } from '../../src/core/url/fingerprint';
import { connectRedis } from '../../src/redis/connect';
import { parseTask } from '../../src/core/task/parse';
import type { CrawlTask } from '../../src/core/task/model';

// The queue's own cost per page: BullMQ jobs with the engine's job options (ids, attempts, backoff, kept
// completed and failed jobs, priorities as the bench task has them), added through the engine's addBulk and
// run by a BullMQ Worker at the bench's concurrency whose processor does nothing. What a crawl costs on top of
// this is the engine's own work (fetch, politeness, dedup, the page record), not the queue. CPU of this process
// (the client side) and of Redis (INFO cpu), per job. Needs an empty Redis of its own. Prints { result: {...} }.

const { values } = parseArgs({
  options: { redis: { type: 'string' }, jobs: { type: 'string' }, concurrency: { type: 'string' } },
});
const N = Number(values.jobs ?? 20_000);
const C = Number(values.concurrency ?? 16);
const url = values.redis!;

const { task: parsed } = parseTask(
  [
    'name: queue-floor',
    'start: [http://127.0.0.1:9/]',
    'request: { retries: { attempts: 3, backoff: exponential, delay: 500ms } }',
    'rules:',
    '  - name: list',
    '    follow: [{ selector: a, to: book, priority: 1 }]',
    '  - name: book',
    '',
  ].join('\n'),
  '/tmp/queue-floor.crawl.yaml',
);
if (!parsed) throw new Error('the queue-floor task does not parse');
// Non-null in main() too (a module-level narrowing does not reach into functions).
const task: CrawlTask = parsed;

async function redisCpu(redis: Redis): Promise<number> {
  const info = await redis.info('cpu');
  const n = (k: string) => Number(new RegExp(`${k}:([\\d.]+)`).exec(info)![1]);
  return n('used_cpu_user') + n('used_cpu_sys');
}

async function main() {
  const admin = new Redis(url);
  await admin.flushall();
  const crawl = new CrawlQueue(connectRedis(url), task.name);
  await crawl.loadLayout();
  // One node: one partition, whose queue the engine's window filler adds its pages to.
  const part = crawl.partitions()[0]!;
  const queue = part.queue;
  const run = 'floor';
  const jobs = Array.from({ length: N }, (_, i) => {
    const data: PageJobData = { url: `http://127.0.0.1:9/catalogue/book-${i}.html`, rule: 'book', depth: 2, run };
    return { name: 'book', data, opts: jobOptions(task, `${run}.${fingerprintHex(data.url)}`, 1000) };
  });

  const cpu0 = process.cpuUsage();
  const r0 = await redisCpu(admin);
  const t0 = performance.now();
  for (let i = 0; i < N; i += 500) await queue.addBulk(jobs.slice(i, i + 500));
  const added = performance.now();
  const addCpu = process.cpuUsage(cpu0);
  const rAdd = await redisCpu(admin);

  let done = 0;
  const worker = new Worker<PageJobData>(
    task.name,
    async () => ({ outcome: 'done', status: 200, items: 0, links: 0 }),
    {
      connection: connectRedis(url),
      prefix: part.keys.bullPrefix,
      concurrency: C,
    },
  );
  await new Promise<void>((resolve) => worker.on('completed', () => ++done === N && resolve()));
  const ran = performance.now();
  const allCpu = process.cpuUsage(cpu0);
  const r1 = await redisCpu(admin);
  await worker.close();
  await crawl.close();

  const ms = (us: number) => us / 1000 / N;
  const result = {
    jobs: N,
    concurrency: C,
    addPerSec: N / ((added - t0) / 1000),
    runPerSec: N / ((ran - added) / 1000),
    addClientMsPerJob: ms(addCpu.user + addCpu.system),
    addRedisMsPerJob: ((rAdd - r0) * 1000) / N,
    runClientMsPerJob: ms(allCpu.user + allCpu.system - addCpu.user - addCpu.system),
    runRedisMsPerJob: ((r1 - rAdd) * 1000) / N,
  };
  console.log(JSON.stringify({ result }));
  admin.disconnect();
}

main().then(
  () => process.exit(0),
  (e: Error) => {
    console.error(e.stack ?? String(e));
    process.exit(1);
  },
);
