import { Queue, type Job } from 'bullmq';
import type { Redis } from '../redis/connect';
import type { PageJobData, PageJobResult } from '../frontier/crawl';
import { partitionKeys, taskKeys } from '../frontier/keys';
import { LAYOUT_FIELD, layoutFromMeta } from '../frontier/layout';

// Failed jobs grouped by cause, and "retry all of this group". The stats hash counts failures per group
// (failed:<group>, from FetchFailure.group); a failed job only keeps its message (failedReason), so the group
// is recovered from the message. The patterns follow the messages src/worker/fetcher.ts writes; a message
// nobody recognises is 'error', like the worker's own fallback.

const PATTERNS: readonly [RegExp, (m: RegExpMatchArray) => string][] = [
  [/^HTTP (\d{3}) /, (m) => `http-${m[1]}`],
  [/^timed out fetching /, () => 'timeout'],
  [/^cannot resolve /, () => 'dns'],
  [/^(network error fetching |fetch of .* was aborted)/, () => 'network'],
  [/(over the \d+-byte limit| is \d+ bytes, over |^sitemap \S+ (is|decompresses to) more than \d+ MB)/, () => 'too-large'],
  [/^sitemap \S+ (is not a sitemap|could not be read)/, () => 'sitemap'],
  [/^more than \d+ redirects /, () => 'redirects'],
  [/^redirect to an invalid URL /, () => 'invalid-url'],
  [/(^redirect to a non-http URL|resolves to a private address)/, () => 'blocked'],
  // worker/sitemapJob.ts: Redis failed over while a sitemap's entries were queued (redis/replicas.ts).
  [/^Redis failed over /, () => 'failover'],
];

export function failureGroupOf(reason: string | undefined | null): string {
  if (!reason) return 'error';
  for (const [re, group] of PATTERNS) {
    const m = reason.match(re);
    if (m) return group(m);
  }
  return 'error';
}

/** A person-readable name of a failure or skip group. */
export function describeGroup(group: string): string {
  const http = /^http-(\d{3})$/.exec(group);
  if (http) return `HTTP ${http[1]}`;
  const names: Record<string, string> = {
    timeout: 'Timeout',
    dns: 'DNS',
    network: 'Network error',
    'too-large': 'Too large',
    redirects: 'Too many redirects',
    'invalid-url': 'Invalid redirect',
    sitemap: 'Broken sitemap',
    blocked: 'Blocked (private or non-http)',
    failover: 'Redis failover',
    error: 'Other error',
    robots: 'robots.txt',
    limit: 'Over maxPages',
    'no-rule': 'No rule',
    depth: 'Too deep',
  };
  return names[group] ?? group;
}

export interface FailureGroupSample {
  readonly group: string;
  /** Failed jobs of the group still kept by the queue. */
  readonly jobs: number;
  readonly urls: readonly string[];
  /** The same newest pages with why they failed (the job's last error, as the worker wrote it: no secrets). */
  readonly pages: readonly FailedPage[];
}

/** A failed page as its kept job says: the last error message, the attempts spent, when it failed for good. */
export interface FailedPage {
  readonly url: string;
  readonly message: string;
  readonly attempts: number;
  readonly at: number | null;
}

type CrawlJob = Job<PageJobData, PageJobResult>;

type CrawlQueueHandle = Queue<PageJobData, PageJobResult>;
const partitionQueues = new WeakMap<CrawlQueueHandle, Map<string, CrawlQueueHandle>>();

/**
 * The queues of every partition of the task's run (frontier/layout.ts), given the task's first one: on a Redis
 * Cluster a run has one per primary, made here once per first queue, on its connection.
 */
export async function taskQueues(redis: Redis, queue: CrawlQueueHandle, task: string): Promise<CrawlQueueHandle[]> {
  const layout = layoutFromMeta(task, await redis.hget(taskKeys(task).meta, LAYOUT_FIELD));
  if (layout.tags.length === 1) return [queue];
  let made = partitionQueues.get(queue);
  if (!made) partitionQueues.set(queue, (made = new Map()));
  return layout.tags.map((tag) => {
    if (tag === task) return queue;
    let q = made.get(tag);
    if (!q) {
      q = new Queue<PageJobData, PageJobResult>(task, { connection: redis, prefix: partitionKeys(task, tag).bullPrefix });
      q.on('error', () => undefined);
      made.set(tag, q);
    }
    return q;
  });
}

/** Reads the kept failed jobs page by page (at most `max`), queue after queue. */
async function* failedJobs(queues: readonly CrawlQueueHandle[], max: number): AsyncIterable<CrawlJob> {
  const page = 500;
  let left = max;
  for (const queue of queues) {
    for (let start = 0; left > 0; start += page) {
      const jobs = (await queue.getJobs(['failed'], start, start + Math.min(page, left) - 1, false)).filter((j): j is CrawlJob => Boolean(j));
      left -= jobs.length;
      yield* jobs;
      if (jobs.length < Math.min(page, left + jobs.length)) break;
    }
  }
}

/** Failed jobs grouped by cause, with a few URLs each (newest first); `queue` may be a task's every queue. */
export async function sampleFailures(queue: CrawlQueueHandle | readonly CrawlQueueHandle[], opts: { max?: number; urlsPerGroup?: number } = {}): Promise<FailureGroupSample[]> {
  const per = opts.urlsPerGroup ?? 5;
  const groups = new Map<string, { jobs: number; urls: string[]; pages: FailedPage[] }>();
  for await (const job of failedJobs(Array.isArray(queue) ? queue : [queue as CrawlQueueHandle], opts.max ?? 2000)) {
    const g = failureGroupOf(job.failedReason);
    const e = groups.get(g) ?? { jobs: 0, urls: [], pages: [] };
    e.jobs++;
    if (e.urls.length < per && job.data?.url) {
      e.urls.push(job.data.url);
      e.pages.push({ url: job.data.url, message: job.failedReason ?? '', attempts: job.attemptsMade, at: job.finishedOn ?? null });
    }
    groups.set(g, e);
  }
  return [...groups].map(([group, e]) => ({ group, ...e })).sort((a, b) => b.jobs - a.jobs);
}

/**
 * Retries every kept failed job of a group. Each retried job leaves the run's failure counts (it is counted
 * again when it finishes), and a finished run is reopened so the next session or worker finishes it properly.
 */
export async function retryFailureGroup(redis: Redis, queue: Queue<PageJobData, PageJobResult>, task: string, group: string): Promise<number> {
  const matching: CrawlJob[] = [];
  for await (const job of failedJobs(await taskQueues(redis, queue, task), 100_000)) if (failureGroupOf(job.failedReason) === group) matching.push(job);
  return retryFailedJobs(redis, task, matching);
}

/**
 * Retries failed jobs, the one way every view does it (the dashboard's "Retry all", the explorer's Retry Job). A
 * job retried left the run's counters uncounted before (issue 23, item 4): failing again it was counted twice, and
 * the finish notification said "3 failed" where the explorer listed 2. The counters live in the jobs' partitions;
 * readers sum them, so the task's own stats hash takes every decrement.
 */
export async function retryFailedJobs(redis: Redis, task: string, jobs: readonly CrawlJob[]): Promise<number> {
  const keys = taskKeys(task);
  const run = await redis.hget(keys.meta, 'run');
  let retried = 0;
  for (const job of jobs) {
    // Before the retry, which clears the job's failedReason.
    const group = failureGroupOf(job.failedReason);
    try {
      // A job re-added after its lease ran out is marked `recovered`, and such a job whose page is no longer in the
      // window is taken for one that finished before its worker died (CrawlQueue.isSettled): retried by hand, it
      // would end without fetching. The person asked for the page again, so it is a plain job again.
      if (job.data?.recovered) {
        const { recovered: _recovered, ...data } = job.data;
        await job.updateData(data);
      }
      // Its attempts start again: the page was asked for anew, and counting on showed "attempt 4/3" (issue 32).
      await job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
    } catch {
      continue; // Retried or removed by someone else meanwhile.
    }
    retried++;
    // Only jobs of the current run were counted in its stats.
    if (run && job.data?.run === run) {
      await redis.multi().hincrby(keys.stats(run), 'failed', -1).hincrby(keys.stats(run), `failed:${group}`, -1).exec();
    }
  }
  if (retried > 0 && run) {
    const state = await redis.hget(keys.meta, 'state');
    // Running again: its old finish time goes too (the dashboard's elapsed time stopped at it).
    if (state === 'finished' || state === 'stopped') await redis.multi().hset(keys.meta, 'state', 'running').hdel(keys.meta, 'finishedAt').unlink(keys.finalized(run)).exec();
  }
  return retried;
}
