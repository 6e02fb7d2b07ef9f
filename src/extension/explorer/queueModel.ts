import type { Redis } from '../../redis/connect';
import { scanKeys } from '../../redis/nodes';
import { isSchedulerJobId, SCHEDULED_RUN_JOB, type CrawlStats } from '../../frontier/types';
import { dropWaiting } from '../../frontier/dropWaiting';
import { pauseTask, resumeTask } from '../../frontier/control';
import { taskKeys, TASKS_KEY } from '../../frontier/keys';
import { pageJobId, PartitionsByTask, type PageJob, type PageQueue } from '../../frontier/partitions';
import { finishedPages, readTaskStatus } from '../../observe/taskStatus';
import { listFrontier } from '../../observe/frontier';
import type { RunPhase } from '../../observe/runPhase';

// What the explorer shows, read from Redis: the task queues, their counts, and pages of jobs. One BullMQ Queue
// object per partition of a task (frontier/partitions.ts), all sharing the explorer's connection.

import { JOB_STATES, type JobStateName } from './jobStates';

export { JOB_STATES, type JobStateName };

export interface QueueSnapshot {
  readonly name: string;
  /**
   * Per group: waiting to done. Jobs that can still make work as readJobCounts() counts them; pages the run got
   * through (completed, skipped, failed) as its counters do, the figures of the status bar, the dashboard and the
   * finish notification (observe/taskStatus.ts).
   */
  readonly counts: Readonly<Record<JobStateName, number>>;
  /** Finished jobs BullMQ still keeps (the rows a group can list): the newest KEEP_COMPLETED / KEEP_FAILED. */
  readonly kept: { readonly completed: number; readonly failed: number };
  readonly paused: boolean;
  readonly run: string | null;
  readonly runState: string | null;
  readonly file: string | null;
  readonly stats: CrawlStats | null;
  /** Whether its run is alive (observe/runPhase.ts): interrupted when nobody drives it, after a reload too. */
  readonly phase: RunPhase;
}

export type CrawlJob = PageJob;

export class QueueModel {
  private readonly parts: PartitionsByTask;

  constructor(private readonly redis: Redis) {
    this.parts = new PartitionsByTask(redis);
  }

  /** The task's first (on a single node, only) queue: its job scheduler's. */
  queue(name: string): PageQueue {
    return this.parts.of(name).first().queue;
  }

  /** Every queue of the task: one per partition of its run (frontier/layout.ts), one on a single node. */
  queuesOf(name: string): Promise<PageQueue[]> {
    return this.parts.of(name).queues();
  }

  /** The same pause the web monitor's and `crawl-studio pause` do (frontier/control.ts): what was done, in words. */
  pause(name: string): Promise<string> {
    return pauseTask(this.redis, name);
  }

  resume(name: string): Promise<string> {
    return resumeTask(this.redis, name);
  }

  async clean(name: string, state: 'completed' | 'failed'): Promise<void> {
    for (const q of await this.queuesOf(name)) await q.clean(0, 0, state);
  }

  async taskNames(): Promise<string[]> {
    return (await this.redis.smembers(TASKS_KEY)).sort();
  }

  async snapshot(name: string): Promise<QueueSnapshot> {
    const st = await readTaskStatus(this.redis, name);
    const c = st.counts;
    // Before a run (or on a Redis without its counters), the finished groups fall back to the jobs kept.
    const f = st.stats ? finishedPages(st.stats) : { done: c.completed, skipped: 0, failed: c.failed };
    const counts: Record<JobStateName, number> = {
      frontier: c.frontier,
      waiting: c.waiting,
      prioritized: c.prioritized,
      active: c.active,
      delayed: c.delayed,
      completed: f.done,
      skipped: f.skipped,
      failed: f.failed,
    };
    return {
      name,
      counts,
      kept: { completed: c.completed, failed: c.failed },
      paused: st.isPaused,
      run: st.run?.run ?? null,
      runState: st.run?.state ?? null,
      file: st.run?.file ?? null,
      stats: st.stats,
      phase: st.phase,
    };
  }

  async jobs(name: string, state: JobStateName, start: number, count: number): Promise<CrawlJob[]> {
    if (state === 'frontier') {
      // Not jobs yet: rows shaped like them for the tree (URL, rule, depth), with no job actions (page.frontier).
      const run = (await this.redis.hget(taskKeys(name).meta, 'run')) ?? '';
      return (await listFrontier(this.redis, name, start, count)).map(
        (r) =>
          ({
            id: pageJobId(run, r.id),
            name: r.rule,
            data: { url: r.url, rule: r.rule, depth: r.depth, run, ...(r.request ? { request: r.request } : {}) },
            opts: {},
            attemptsMade: 0,
            priority: Number(r.band),
          }) as unknown as CrawlJob,
      );
    }
    if (state === 'completed' || state === 'skipped') return this.finishedJobs(name, state, start, count);
    const qs = await this.queuesOf(name);
    const asc = state !== 'failed';
    const type = state === 'waiting' ? 'wait' : state;
    if (qs.length === 1) return pageJobs(qs[0]!, type, start, count, asc);
    // Several partitions: the first start + count of each, merged by time, then the page asked for.
    const lists = await Promise.all(qs.map((q) => pageJobs(q, type, 0, start + count, asc)));
    const merged = lists.flat();
    merged.sort((a, b) =>
      asc ? a.timestamp - b.timestamp : (b.finishedOn ?? b.timestamp) - (a.finishedOn ?? a.timestamp),
    );
    return merged.slice(start, start + count);
  }

  /**
   * BullMQ's completed jobs split into fetched and skipped by their result, newest first. At most KEEP_COMPLETED
   * are kept per partition, so this reads bounded lists; several partitions' are merged by finish time.
   */
  private async finishedJobs(
    name: string,
    state: 'completed' | 'skipped',
    start: number,
    count: number,
  ): Promise<CrawlJob[]> {
    const qs = await this.queuesOf(name);
    if (qs.length === 1) return finishedOf(qs[0]!, state, start, count);
    const merged = (await Promise.all(qs.map((q) => finishedOf(q, state, 0, start + count)))).flat();
    merged.sort((a, b) => (b.finishedOn ?? b.timestamp) - (a.finishedOn ?? a.timestamp));
    return merged.slice(start, start + count);
  }

  job(name: string, id: string): Promise<CrawlJob | null> {
    return this.parts.of(name).job(id);
  }

  /** Removes every waiting and delayed job of a task, and the pages waiting in its frontier; active jobs finish. */
  async drain(name: string): Promise<void> {
    const parts = await this.parts.of(name).all();
    for (const p of parts) {
      await p.queue.drain(true);
      // The frontier's run marker and window stay (a crawl going on keeps queueing the links its pages find).
      await dropWaiting(this.redis, p.keys.frontier, { counted: parts.length > 1 });
    }
  }

  /** Removes a task's queue and crawl state; its item stream is kept so nothing unstored is lost. */
  async deleteQueue(name: string): Promise<void> {
    const parts = this.parts.of(name);
    // Partition by partition: on a cluster each is a slot of its own, and one UNLINK may not span slots.
    for (const p of await parts.all()) {
      await p.queue.obliterate({ force: true });
      const items = p.keys.items;
      const doomed = new Set<string>();
      for await (const batch of scanKeys(this.redis, `${items.slice(0, -'items'.length)}*`))
        for (const k of batch) if (k !== items) doomed.add(k);
      if (p.index === 0)
        for (const k of [taskKeys(name).meta, taskKeys(name).events, taskKeys(name).rate]) doomed.add(k);
      if (doomed.size > 0) await this.redis.unlink(...doomed);
      await parts.closePartition(p.keys.tag);
    }
    await this.redis.srem(TASKS_KEY, name);
  }

  close(): Promise<void> {
    return this.parts.close();
  }
}

/** One queue's completed jobs that were fetched (`completed`) or skipped, newest first, from the `start`-th. */
async function finishedOf(
  queue: PageQueue,
  state: 'completed' | 'skipped',
  start: number,
  count: number,
): Promise<CrawlJob[]> {
  const out: CrawlJob[] = [];
  const page = 200;
  let matched = 0;
  for (let from = 0; out.length < count; from += page) {
    const jobs = (await queue.getJobs(['completed'], from, from + page - 1, false)).filter((j): j is CrawlJob =>
      Boolean(j),
    );
    for (const j of jobs) {
      if ((j.returnvalue?.outcome === 'skipped') !== (state === 'skipped')) continue;
      if (matched++ >= start && out.length < count) out.push(j);
    }
    if (jobs.length < page) break;
  }
  return out;
}

/**
 * Jobs `start` to `start + count` of one queue's list in a state, pages only. A scheduled task's next run waits there
 * as the job scheduler's job (delayed, or waiting while the queue is paused): not a page, and not counted as one
 * (observe/taskStatus.ts), so the page is cut from the ids without it, or each page held one job fewer and the next
 * began one early.
 */
async function pageJobs(
  q: PageQueue,
  type: 'wait' | 'delayed' | 'prioritized' | 'active' | 'failed',
  start: number,
  count: number,
  asc: boolean,
): Promise<CrawlJob[]> {
  const scheduled = (type === 'wait' || type === 'delayed') && (await q.getJobSchedulersCount()) > 0;
  if (!scheduled) return (await q.getJobs([type], start, start + count - 1, asc)).filter(Boolean);
  const ids = (await q.getRanges([type], 0, start + count, asc)).filter((id) => !isSchedulerJobId(id));
  const jobs = await Promise.all(ids.slice(start, start + count).map((id) => q.getJob(id)));
  return jobs.filter((j): j is CrawlJob => j !== undefined && j.name !== SCHEDULED_RUN_JOB);
}
