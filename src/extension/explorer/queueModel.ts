import { Job, Queue } from 'bullmq';
import type { Redis } from '../../redis/connect';
import { scanKeys, unlinkKeys } from '../../redis/nodes';
import { parseStats, type CrawlStats, type PageJobData, type PageJobResult } from '../../frontier/crawl';
import { bullPrefix, taskKeys, TASKS_KEY } from '../../frontier/keys';

// What the explorer shows, read from Redis: the task queues, their counts, and pages of jobs. One BullMQ Queue
// object per task, all sharing the explorer's connection.

import { JOB_STATES, type JobStateName } from './jobStates';

export { JOB_STATES, type JobStateName };

export interface QueueSnapshot {
  readonly name: string;
  readonly counts: Readonly<Record<JobStateName, number>>;
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
    const q = this.queue(name);
    const keys = taskKeys(name);
    const [counts, paused, meta] = await Promise.all([
      q.getJobCounts('waiting', 'prioritized', 'active', 'delayed', 'completed', 'failed'),
      q.isPaused(),
      this.redis.hgetall(keys.meta),
    ]);
    const stats = meta.run ? parseStats(await this.redis.hgetall(keys.stats(meta.run))) : null;
    const c = Object.fromEntries(JOB_STATES.map((s) => [s, counts[s] ?? 0])) as Record<JobStateName, number>;
    return { name, counts: c, paused, run: meta.run ?? null, runState: meta.state ?? null, file: meta.file ?? null, stats };
  }

  async jobs(name: string, state: JobStateName, start: number, count: number): Promise<CrawlJob[]> {
    const jobs = await this.queue(name).getJobs([state === 'waiting' ? 'wait' : state], start, start + count - 1, state !== 'completed' && state !== 'failed');
    return jobs.filter((j): j is CrawlJob => Boolean(j));
  }

  async job(name: string, id: string): Promise<CrawlJob | null> {
    return ((await this.queue(name).getJob(id)) as CrawlJob | undefined) ?? null;
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
