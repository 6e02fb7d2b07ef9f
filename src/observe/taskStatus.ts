import type { Redis } from '../redis/connect';
import type { CrawlStatus, JobCounts } from '../frontier/types';
import { readRunStats } from '../frontier/stats';
import { partitionKeys, taskKeys } from '../frontier/keys';
import { SCHEDULER_ID, schedulerJobId } from '../frontier/types';
import type { TaskLayout } from '../frontier/layout';
import { readLayout, readRunAndLayout } from '../frontier/partitions';
import { isHolderGone, readLeaseHolder } from '../frontier/runLease';
import { needsWorkerCount, runPhase, type RunDriver, type RunPhase } from './runPhase';
import { readWorkersTaking } from '../frontier/fleet';
import { readLiveWriters } from '../frontier/storeWriters';

// Reading a task's figures from Redis, for every view and the session (figures.ts names them). Where waiting URLs
// live is the frontier's business (the compact frontier, then BullMQ's lists once in the window, in every partition
// of the task on a Redis Cluster): readJobCounts() is the one function that reads them, and no view reads BullMQ's
// lists itself.

export * from './figures';

/**
 * The one read of how many pages wait (in the frontier or as jobs), run and are kept, for every view: summed over
 * the task's partitions (frontier/layout.ts; `layout` when the caller read it already, else the run's meta's).
 */
export async function readJobCounts(redis: Redis, task: string, layout?: TaskLayout): Promise<JobCounts> {
  const tags = (layout ?? (await readLayout(redis, task))).tags;
  const parts = await Promise.all(tags.map((tag) => readPartitionCounts(redis, task, tag)));
  const sum = (k: keyof JobCounts) => parts.reduce((a, c) => a + c[k], 0);
  return {
    frontier: sum('frontier'),
    waiting: sum('waiting'),
    prioritized: sum('prioritized'),
    active: sum('active'),
    delayed: sum('delayed'),
    completed: sum('completed'),
    failed: sum('failed'),
  };
}

/**
 * Where the job scheduler's job for the run due at `next` is: delayed until its time, then waiting (in `wait`, taken
 * at once unless the queue is paused), then gone from both once a worker took it (the next one is then delayed).
 */
async function schedulerJobPlace(
  redis: Redis,
  b: ReturnType<typeof partitionKeys>['bull'],
  next: string,
): Promise<'delayed' | 'waiting' | null> {
  const id = schedulerJobId(next);
  const r =
    (await redis.pipeline().zscore(b.delayed, id).exists(`${b.job}${id}:lock`).exists(`${b.job}${id}`).exec()) ?? [];
  for (const [err] of r) if (err) throw err;
  const [delayed, lock, exists] = r.map(([, v]) => v);
  if (delayed !== null && delayed !== undefined) return 'delayed';
  // Its hash with no lock and not delayed: in `wait` (a worker taking it locks it first, then it is active).
  return exists === 1 && lock === 0 ? 'waiting' : null;
}

/** One partition's counts, in one round trip to its node (its keys share a slot). */
async function readPartitionCounts(redis: Redis, task: string, tag: string): Promise<JobCounts> {
  const k = partitionKeys(task, tag);
  const b = k.bull;
  const r =
    (await redis
      .pipeline()
      .llen(b.wait)
      .llen(b.paused)
      .zcard(b.prioritized)
      .llen(b.active)
      .zcard(b.delayed)
      .zcard(b.completed)
      .zcard(b.failed)
      .hget(k.frontier.meta, 'n')
      .zscore(b.repeat, SCHEDULER_ID)
      .exec()) ?? [];
  const n = (i: number) => {
    const [err, v] = r[i] ?? [null, 0];
    if (err) throw err;
    return Number(v ?? 0);
  };
  // A scheduled task's next run waits as a delayed job of its queue (BullMQ's job scheduler): not a page. A finished
  // run said "queue 1 (1 delayed)" until its next run, and the dashboard's ETA and the monitor's counts with it.
  // Come due while the queue is paused (Pause, or Stop, which holds the schedule), it waits in `wait` instead.
  const next = r[8]?.[1];
  const scheduled = typeof next === 'string' ? await schedulerJobPlace(redis, b, next) : null;
  // BullMQ 6 keeps paused jobs in `wait`; older queues may still hold a `paused` list.
  // Pages waiting in the compact frontier are not jobs yet (issue 19): its meta counts them.
  return {
    frontier: n(7),
    waiting: n(0) + n(1) - (scheduled === 'waiting' ? 1 : 0),
    prioritized: n(2),
    active: n(3),
    delayed: n(4) - (scheduled === 'delayed' ? 1 : 0),
    completed: n(5),
    failed: n(6),
  };
}

/** What every view shows of a task: its status, and whether its run is alive (runPhase.ts). */
export interface TaskStatus extends CrawlStatus {
  readonly phase: RunPhase;
  /**
   * When the task's schedule starts its next run (ms since epoch), whatever the phase; null without a schedule. A
   * paused queue holds it past that time (the phase says so), and a run still going then skips it.
   */
  readonly nextRunAt: number | null;
}

/**
 * A task's run, counters, job counts, pause state and driver, read together: what the session reports and the
 * views show.
 */
export async function readTaskStatus(redis: Redis, task: string): Promise<TaskStatus> {
  const keys = taskKeys(task);
  const [{ run, layout }, paused, holder, next] = await Promise.all([
    readRunAndLayout(redis, task),
    redis.hexists(keys.bull.meta, 'paused'),
    readLeaseHolder(redis, task),
    // A scheduled task's next run: its job scheduler's score (frontier/crawl.ts syncSchedule).
    redis.zscore(keys.bull.repeat, SCHEDULER_ID),
  ]);
  const [counts, stats] = await Promise.all([
    readJobCounts(redis, task, layout),
    run ? readRunStats(redis, task, run.run, layout) : null,
  ]);
  const isPaused = paused === 1;
  const driver: RunDriver | null = holder ? { holder, gone: isHolderGone(holder) } : null;
  // Only a run nobody drives needs its workers counted, and a writer that will finish it looked for.
  const [working, writers] = needsWorkerCount(run, isPaused, driver)
    ? await Promise.all([readWorkersTaking(redis, task).then((w) => w.length), readLiveWriters(redis, task)])
    : [0, []];
  // A dead driver's own writer beats a few seconds more: it finishes nothing.
  const writer = writers.find((w) => !(driver?.gone && w.pid === driver.holder.pid && w.host === driver.holder.host));
  const nextRunAt = next === null ? null : Number(next);
  return {
    task,
    run,
    stats,
    counts,
    isPaused,
    phase: runPhase(run, isPaused, driver, working, writer ?? null, nextRunAt),
    nextRunAt,
  };
}
