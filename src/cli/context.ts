import { dirname } from 'node:path';
import { CrawlQueue } from '../frontier/crawl';
import { connectRedis, type Redis } from '../redis/connect';
import { checkRedis } from '../redis/check';
import { chooseRedis } from '../run/redisChoice';
import { storeUrlFor } from '../run/storeAttachment';
import { openStore } from '../store';
import { loadTaskFile } from '../workspace/taskFile';

// What the commands open and close around their work: a task's queue on Redis, a task's store.

export type LoadedTask = Awaited<ReturnType<typeof loadTaskFile>>;
export type Store = Awaited<ReturnType<typeof openStore>>;

export async function withQueue<T>(
  taskFile: string,
  redisFlag: string | undefined,
  fn: (q: CrawlQueue, task: LoadedTask, redis: Redis) => Promise<T>,
): Promise<T> {
  const task = await loadTaskFile(taskFile);
  const choice = await chooseRedis(redisFlag, task.file, { keepRunning: true });
  // Fails within seconds, naming the target and the cause, where the engine's connection would wait forever.
  await checkRedis(choice.url);
  const redis = connectRedis(choice.url);
  const q = new CrawlQueue(redis, task.name);
  try {
    await q.loadLayout();
    return await fn(q, task, redis);
  } finally {
    await q.close();
    redis.disconnect();
  }
}

/** A task's queue on a Redis given by URL (the run's own, already chosen), around `fn`. */
export async function withQueueAt<T>(
  url: string,
  taskName: string,
  fn: (q: CrawlQueue, redis: Redis) => Promise<T>,
): Promise<T> {
  const redis = connectRedis(url);
  const q = new CrawlQueue(redis, taskName);
  try {
    await q.loadLayout();
    return await fn(q, redis);
  } finally {
    await q.close();
    redis.disconnect();
  }
}

export async function withStore<T>(
  task: LoadedTask,
  storeFlag: string | undefined,
  fn: (store: Store) => Promise<T>,
): Promise<T> {
  const store = await openStore(storeFlag ?? storeUrlFor(task), { task: task.name, cwd: dirname(task.file) });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}
