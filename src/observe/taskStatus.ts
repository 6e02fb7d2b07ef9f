import type { Redis } from '../redis/connect';
import { parseStats, type CrawlStatus, type JobCounts } from '../frontier/crawl';
import { taskKeys } from '../frontier/keys';
import { runInfoOf } from './figures';

// Reading a task's figures from Redis, for every view and the session (figures.ts names them). Where waiting URLs
// live is the frontier's business (the compact frontier, then BullMQ's lists once in the window): readJobCounts()
// is the one function that reads both, and no view reads BullMQ's lists itself.

export * from './figures';

/** The one read of how many pages wait (in the frontier or as jobs), run and are kept, for every view. */
export async function readJobCounts(redis: Redis, task: string): Promise<JobCounts> {
  const k = taskKeys(task);
  const b = k.bull;
  const r = (await redis.pipeline().llen(b.wait).llen(b.paused).zcard(b.prioritized).llen(b.active).zcard(b.delayed).zcard(b.completed).zcard(b.failed).hget(k.frontier.meta, 'n').exec()) ?? [];
  const n = (i: number) => {
    const [err, v] = r[i] ?? [null, 0];
    if (err) throw err;
    return Number(v ?? 0);
  };
  // BullMQ 6 keeps paused jobs in `wait`; older queues may still hold a `paused` list.
  // Pages waiting in the compact frontier are not jobs yet (issue 19): its meta counts them.
  return { frontier: n(7), waiting: n(0) + n(1), prioritized: n(2), active: n(3), delayed: n(4), completed: n(5), failed: n(6) };
}

/** A task's run, counters, job counts and pause state, read together: what the session reports and the views show. */
export async function readTaskStatus(redis: Redis, task: string): Promise<CrawlStatus> {
  const keys = taskKeys(task);
  const [meta, counts, paused] = await Promise.all([redis.hgetall(keys.meta), readJobCounts(redis, task), redis.hexists(keys.bull.meta, 'paused')]);
  const run = runInfoOf(meta);
  const stats = run ? parseStats(await redis.hgetall(keys.stats(run.run))) : null;
  return { task, run, stats, counts, isPaused: paused === 1 };
}

