import { Queue, type Job } from 'bullmq';
import type { Redis } from '../redis/connect';
import { requestKey, type JobRequest } from '../core/request/build';
import { fingerprintHex } from '../core/url/fingerprint';
import { partitionKeys, taskKeys, type PartitionKeys } from './keys';
import { LAYOUT_FIELD, layoutFromMeta, partitionOfJob, type TaskLayout } from './layout';
import type { PageJobData, PageJobResult, RunInfo } from './types';

// The one way to reach a task's partitions (frontier/layout.ts): the layout and the run its meta hash records, the
// job id of a page, and the BullMQ queue of each partition, made once per connection and task with one error
// handler. CrawlQueue, the read-models, the CLI, the monitor and the editor's views all go through it, so a reader
// never looks at the first partition alone (on a Redis Cluster a task has one per primary).

export type PageQueue = Queue<PageJobData, PageJobResult>;
export type PageJob = Job<PageJobData, PageJobResult>;

/** One partition of a task (frontier/layout.ts): its keys and the BullMQ queue of its window's jobs. */
export interface Partition {
  readonly index: number;
  readonly keys: PartitionKeys;
  readonly queue: PageQueue;
}

/** How the task's run is spread over Redis, as its meta hash records it (one partition when it says nothing). */
export async function readLayout(redis: Redis, task: string): Promise<TaskLayout> {
  return layoutFromMeta(task, await redis.hget(taskKeys(task).meta, LAYOUT_FIELD));
}

/**
 * A run as its meta hash holds it. `finishedAt` only while the run is over: a run reopened by a retry or a URL
 * enqueued after it ended is running again, and its old finish time froze the dashboard's elapsed time.
 */
export function runInfoOf(meta: Readonly<Record<string, string>>): RunInfo | null {
  if (!meta.run) return null;
  const state = (meta.state as RunInfo['state'] | undefined) ?? 'running';
  const over = state === 'finished' || state === 'stopped';
  return {
    run: meta.run,
    state,
    startedAt: Number(meta.startedAt ?? 0),
    finishedAt: over && meta.finishedAt ? Number(meta.finishedAt) : null,
    pausedMs: Number(meta.pausedMs ?? 0),
    idleSince: meta.idleSince ? Number(meta.idleSince) : null,
    reopened: !over && Boolean(meta.reopenedAt),
    bucketBits: Number(meta.bucketBits ?? 12),
    file: meta.file ?? null,
    taskFingerprint: meta.taskFingerprint ?? null,
  };
}

/** The task's current run, or null before its first. */
export async function readRun(redis: Redis, task: string): Promise<RunInfo | null> {
  return runInfoOf(await redis.hgetall(taskKeys(task).meta));
}

/** The task's current run and its layout, in one read of its meta hash. */
export async function readRunAndLayout(
  redis: Redis,
  task: string,
): Promise<{ run: RunInfo | null; layout: TaskLayout }> {
  const meta = await redis.hgetall(taskKeys(task).meta);
  return { run: runInfoOf(meta), layout: layoutFromMeta(task, meta[LAYOUT_FIELD]) };
}

/**
 * A page's job id: its run and its page id (record.ts pageIdOf: its deduplication key's fingerprint, and a forced
 * fetch's stamp). Not an integer and no ':' (BullMQ's rules); one per page per run, so a second add is a no-op.
 */
export function pageJobId(run: string, pageId: string): string {
  return `${run}.${pageId}`;
}

/** The job id of the page at canonical `url` in `run` (a GET's, or a request's when it has one). */
export function jobIdOf(run: string, url: string, request?: JobRequest | null): string {
  return pageJobId(run, fingerprintHex(requestKey(url, request)));
}

/** The page id a job id of `run` ends with; '' for a job that is not one of its pages. */
export function pageIdOfJob(run: string, jobId: string): string {
  return jobId.startsWith(`${run}.`) ? jobId.slice(run.length + 1) : '';
}

/** A task's partitions on one connection: its layout and run read from Redis, its queues made once each. */
export class TaskPartitions {
  private readonly byTag = new Map<string, Partition>();

  constructor(
    /** For reads (the meta hash); CrawlQueue's has its scripts defined. */
    readonly redis: Redis,
    readonly task: string,
    /** BullMQ's Queue connection; the same one by default (see worker/runtime.ts for why a worker splits them). */
    private readonly bullConnection: Redis = redis,
    /**
     * BullMQ's Queue writes its meta hash (its version, its events' length) as soon as it is made. Only the processes
     * that run the crawl do here: `status`, the monitor and the Queue Explorer only read, and pointed at a Redis the
     * task never ran on (a wrong --redis) they left that hash behind in it.
     */
    private readonly writeMeta = false,
  ) {}

  layout(): Promise<TaskLayout> {
    return readLayout(this.redis, this.task);
  }

  run(): Promise<RunInfo | null> {
    return readRun(this.redis, this.task);
  }

  /** The first partition: the task's own tag, its only one on a single node, and its job scheduler's. */
  first(): Partition {
    return this.partition(this.task, 0);
  }

  /** The partitions of `layout`, in its order. */
  of(layout: TaskLayout): Partition[] {
    return layout.tags.map((tag, i) => this.partition(tag, i));
  }

  /** The partitions of the run's layout, as its meta records it. */
  async all(): Promise<Partition[]> {
    return this.of(await this.layout());
  }

  /** Every queue of the task: one per partition of its run. */
  async queues(): Promise<PageQueue[]> {
    return (await this.all()).map((p) => p.queue);
  }

  /** The partition a job belongs to, by its id (the first for a job not of a page: the scheduler's). */
  ofJob(layout: TaskLayout, jobId: string): Partition {
    return this.of(layout)[partitionOfJob(layout, jobId)]!;
  }

  /** A job of the task, in whichever partition holds it; null when no queue keeps it. */
  async job(jobId: string): Promise<PageJob | null> {
    const q = this.ofJob(await this.layout(), jobId).queue;
    return (await q.getJob(jobId)) ?? null;
  }

  private partition(tag: string, index: number): Partition {
    let p = this.byTag.get(tag);
    if (!p) {
      const keys = partitionKeys(this.task, tag);
      const queue: PageQueue = new Queue<PageJobData, PageJobResult>(this.task, {
        connection: this.bullConnection,
        prefix: keys.bullPrefix,
        skipMetasUpdate: !this.writeMeta,
      });
      // Queue errors (e.g. a lost connection) are surfaced by the callers' own commands; don't crash on them.
      queue.on('error', () => undefined);
      p = { index, keys, queue };
      this.byTag.set(tag, p);
    }
    return p;
  }

  /** Closes the queue of one partition (its keys were deleted); the next use makes it again. */
  async closePartition(tag: string): Promise<void> {
    const p = this.byTag.get(tag);
    this.byTag.delete(tag);
    await p?.queue.close();
  }

  async close(): Promise<void> {
    const parts = [...this.byTag.values()];
    this.byTag.clear();
    await Promise.all(parts.map((p) => p.queue.close()));
  }
}

/** The partitions of many tasks on one connection (the Queue Explorer's, the web monitor's), each made once. */
export class PartitionsByTask {
  private readonly tasks = new Map<string, TaskPartitions>();

  constructor(private readonly redis: Redis) {}

  of(task: string): TaskPartitions {
    let t = this.tasks.get(task);
    if (!t) this.tasks.set(task, (t = new TaskPartitions(this.redis, task)));
    return t;
  }

  async close(): Promise<void> {
    const all = [...this.tasks.values()];
    this.tasks.clear();
    await Promise.all(all.map((t) => t.close().catch(() => undefined)));
  }
}
