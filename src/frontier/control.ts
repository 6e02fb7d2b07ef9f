import type { Redis } from '../redis/connect';
import { CrawlQueue } from './crawl';
import { taskKeys } from './keys';
import { readLayout } from './partitions';

// Pausing and resuming a task from anywhere, for every front end that does it outside a run it drives: the Queue
// Explorer's Pause and Resume, the web monitor's. Every queue of the run's layout (one per partition on a Redis
// Cluster, as its meta records them): no worker anywhere takes the task's pages while it is paused.

async function withTaskQueue(redis: Redis, task: string, fn: (q: CrawlQueue) => Promise<void>): Promise<void> {
  const q = new CrawlQueue(redis, task, redis, { layout: await readLayout(redis, task) });
  try {
    await fn(q);
  } finally {
    await q.close();
  }
}

export function pauseTask(redis: Redis, task: string): Promise<void> {
  return withTaskQueue(redis, task, (q) => q.pause());
}

/** A stopped run (Stop Crawl) is over: resuming its queue would let workers crawl a run nothing finalizes. */
export async function resumeTask(redis: Redis, task: string): Promise<void> {
  if ((await redis.hget(taskKeys(task).meta, 'state')) === 'stopped') {
    throw new Error(
      `task '${task}' was stopped (Stop Crawl ended its run): start it again to begin a new run from its start URLs`,
    );
  }
  return withTaskQueue(redis, task, (q) => q.resume());
}
