import { Job, Queue } from 'bullmq';
import type { Redis } from '../../redis/connect';
import { scanKeys, unlinkKeys } from '../../redis/nodes';
import type { CrawlStats, PageJobData, PageJobResult } from '../../frontier/crawl';
import { bullPrefix, taskKeys, TASKS_KEY } from '../../frontier/keys';
import { finishedPages, readTaskStatus } from '../../observe/taskStatus';
import { listFrontier } from '../../observe/frontier';

// What the explorer shows, read from Redis: the task queues, their counts, and pages of jobs. One BullMQ Queue
// object per task, all sharing the explorer's connection.

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
}

export type CrawlJob = Job<PageJobData, PageJobResult>;

export class QueueModel {
  private readonly queues = new Map<string, Queue<PageJobData, PageJobResult>>();

  constructor(private readonly redis: Redis) {}

  queue(name: string): Queue<PageJobData, PageJobResult> {
    let q = this.queues.get(name);
    if (!q) {
      q = new Queue<PageJobData, PageJobResult>(name, { connection: this.redis, prefix: bullPrefix(name) });
      q.on('error', () => undefined);
      this.queues.set(name, q);
    }
    return q;
  }

  async taskNames(): Promise<string[]> {
    return (await this.redis.smembers(TASKS_KEY)).sort();
  }

  async snapshot(name: string): Promise<QueueSnapshot> {
    const st = await readTaskStatus(this.redis, name);
    const c = st.counts;
    // Before a run (or on a Redis without its counters), the finished groups fall back to the jobs kept.
    const f = st.stats ? finishedPages(st.stats) : { done: c.completed, skipped: 0, failed: c.failed };
    const counts: Record<JobStateName, number> = { frontier: c.frontier, waiting: c.waiting, prioritized: c.prioritized, active: c.active, delayed: c.delayed, completed: f.done, skipped: f.skipped, failed: f.failed };
    return { name, counts, kept: { completed: c.completed, failed: c.failed }, paused: st.isPaused, run: st.run?.run ?? null, runState: st.run?.state ?? null, file: st.run?.file ?? null, stats: st.stats };
  }

  async jobs(name: string, state: JobStateName, start: number, count: number): Promise<CrawlJob[]> {
    if (state === 'frontier') {
      // Not jobs yet: rows shaped like them for the tree (URL, rule, depth), with no job actions (page.frontier).
      const run = (await this.redis.hget(taskKeys(name).meta, 'run')) ?? '';
      return (await listFrontier(this.redis, name, start, count)).map(
        (r) => ({ id: `${run}.${r.id}`, name: r.rule, data: { url: r.url, rule: r.rule, depth: r.depth, run }, opts: {}, attemptsMade: 0, priority: Number(r.band) }) as unknown as CrawlJob,
      );
    }
    if (state === 'completed' || state === 'skipped') return this.finishedJobs(name, state, start, count);
    const jobs = await this.queue(name).getJobs([state === 'waiting' ? 'wait' : state], start, start + count - 1, state !== 'failed');
    return jobs.filter((j): j is CrawlJob => Boolean(j));
  }

  /**
   * BullMQ's completed jobs split into fetched and skipped by their result, newest first. At most KEEP_COMPLETED
   * are kept, so this reads a bounded list.
   */
  private async finishedJobs(name: string, state: 'completed' | 'skipped', start: number, count: number): Promise<CrawlJob[]> {
    const out: CrawlJob[] = [];
    const page = 200;
    let matched = 0;
    for (let from = 0; out.length < count; from += page) {
      const jobs = (await this.queue(name).getJobs(['completed'], from, from + page - 1, false)).filter((j): j is CrawlJob => Boolean(j));
      for (const j of jobs) {
        if ((j.returnvalue?.outcome === 'skipped') !== (state === 'skipped')) continue;
        if (matched++ >= start && out.length < count) out.push(j);
      }
      if (jobs.length < page) break;
    }
    return out;
  }

  async job(name: string, id: string): Promise<CrawlJob | null> {
    return ((await this.queue(name).getJob(id)) as CrawlJob | undefined) ?? null;
  }

  /** Removes every waiting and delayed job of a task, and the pages waiting in its frontier; active jobs finish. */
  async drain(name: string): Promise<void> {
    await this.queue(name).drain(true);
    const transit = taskKeys(name).frontier.transit;
    for await (const batch of scanKeys(this.redis, taskKeys(name).frontier.pattern)) {
      // The window's records stay: they settle as their jobs end (or are found gone), freeing their hosts.
      const doomed = batch.filter((k) => k !== transit && k !== taskKeys(name).frontier.lease && k !== taskKeys(name).frontier.win && k !== taskKeys(name).frontier.next);
      if (doomed.length > 0) await unlinkKeys(this.redis, doomed);
    }
  }

  /** Removes a task's queue and crawl state; its item stream is kept so nothing unstored is lost. */
  async deleteQueue(name: string): Promise<void> {
    const q = this.queue(name);
    await q.obliterate({ force: true });
    const keys = taskKeys(name);
    const doomed: string[] = [keys.meta, keys.events, keys.rate];
    for await (const batch of scanKeys(this.redis, `${keys.meta.slice(0, -'meta'.length)}*`)) {
      for (const k of batch) if (k !== keys.items) doomed.push(k);
    }
    await unlinkKeys(this.redis, [...new Set(doomed)]);
    await this.redis.srem(TASKS_KEY, name);
    await q.close();
    this.queues.delete(name);
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.close()));
    this.queues.clear();
  }
}
