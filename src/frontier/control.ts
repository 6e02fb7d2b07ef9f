import type { Redis } from '../redis/connect';
import { CrawlQueue } from './crawl';
import { taskKeys } from './keys';
import { readLayout } from './partitions';
import { ControlRefused } from './refused';

// Pausing, resuming and stopping a task from anywhere, for every front end that does it outside a run it drives:
// the Queue Explorer's Pause and Resume, the web monitor's buttons, `crawl-studio pause|resume|stop`. Every queue of
// the run's layout (one per partition on a Redis Cluster, as its meta records them): no worker anywhere takes the
// task's pages while it is paused. One implementation, so each says the same words wherever it is done.

async function withTaskQueue<T>(redis: Redis, task: string, fn: (q: CrawlQueue) => Promise<T>): Promise<T> {
  const q = new CrawlQueue(redis, task, redis, { layout: await readLayout(redis, task) });
  try {
    return await fn(q);
  } finally {
    await q.close();
  }
}

/** A task with no run on this Redis is most often a wrong `--redis` or db: pausing it would say "paused" of nothing. */
async function ensureRan(redis: Redis, task: string, what: string): Promise<void> {
  if (!(await redis.exists(taskKeys(task).meta)))
    throw new ControlRefused(`'${task}' has never run on this Redis: nothing to ${what}`);
}

export async function pauseTask(redis: Redis, task: string): Promise<string> {
  await ensureRan(redis, task, 'pause');
  await withTaskQueue(redis, task, (q) => q.pause());
  return `'${task}' paused: no worker takes its pages until it is resumed (pages in flight finish)`;
}

/** A stopped run (Stop Crawl) is over: resuming its queue would let workers crawl a run nothing finalizes. */
export async function resumeTask(redis: Redis, task: string): Promise<string> {
  await ensureRan(redis, task, 'resume');
  if ((await redis.hget(taskKeys(task).meta, 'state')) === 'stopped') {
    throw new ControlRefused(
      `task '${task}' was stopped (Stop Crawl ended its run): start it again to begin a new run from its start URLs`,
    );
  }
  await withTaskQueue(redis, task, (q) => q.resume());
  return `'${task}' resumed`;
}

/**
 * Ends the task's current run for good, through CrawlQueue.stopRun (the editor's Stop Crawl, `run`'s stop): its
 * queues are paused, it is never finalized as finished, and the next start begins a new run. The process driving it
 * (`crawl-studio run`, an editor window) sees it stopped and ends. `run`, when given, must be the current one: a page
 * that shows run A does not stop a run B started since.
 */
export async function stopTask(redis: Redis, task: string, run?: string): Promise<string> {
  const stopped = await withTaskQueue(redis, task, async (q) => {
    const info = await q.currentRun();
    if (!info) throw new ControlRefused(`'${task}' has never run on this Redis: nothing to stop`);
    if (run !== undefined && run !== info.run)
      throw new ControlRefused(
        `run ${run.slice(0, 80)} of '${task}' is not its current run (${info.run}): nothing stopped`,
      );
    if (info.state === 'finished' || info.state === 'stopped')
      throw new ControlRefused(`run ${info.run} of '${task}' is already ${info.state}`);
    if (!(await q.stopRun(info.run)))
      throw new ControlRefused(`run ${info.run} of '${task}' ended before it could be stopped`);
    return info.run;
  });
  return `run ${stopped} of '${task}' stopped: no worker takes its pages (pages in flight finish); the next start begins a new run`;
}
