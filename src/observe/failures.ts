import type { Redis } from '../redis/connect';
import { readRunStats } from '../frontier/stats';
import { metricsKeys, taskKeys } from '../frontier/keys';
import { uncountFailed } from '../frontier/outcomes';
import type { PageJob, PageQueue, TaskPartitions } from '../frontier/partitions';
import { readJobs } from '../frontier/jobLists';
import { isReplyError } from '../redis/check';
import { stoppedRunRefusal } from '../frontier/refused';

// Failed jobs grouped by cause, and "retry all of this group". The stats hash counts failures per group
// (failed:<group>, from FetchFailure.group); a failed job only keeps its message (failedReason), so the group
// is recovered from the message. The patterns follow the messages src/worker/fetcher.ts writes; a message
// nobody recognises is 'error', like the worker's own fallback.

const PATTERNS: readonly [RegExp, (m: RegExpMatchArray) => string][] = [
  [/^HTTP (\d{3}) /, (m) => `http-${m[1]}`],
  [/^timed out fetching /, () => 'timeout'],
  [/^cannot resolve /, () => 'dns'],
  [/^(network error fetching |fetch of .* was aborted)/, () => 'network'],
  [
    /(over the \d+-byte limit| is \d+ bytes, over |^sitemap \S+ (is|decompresses to) more than \d+ MB)/,
    () => 'too-large',
  ],
  [/^sitemap \S+ (is not a sitemap|could not be read)/, () => 'sitemap'],
  [/^more than \d+ redirects /, () => 'redirects'],
  [/^redirect to an invalid URL /, () => 'invalid-url'],
  [/(^redirect to a non-http URL|resolves to a private address)/, () => 'blocked'],
  // worker/sitemapJob.ts: Redis failed over while a sitemap's entries were queued (redis/replicas.ts).
  [/^Redis failed over /, () => 'failover'],
  // worker/browser/actions.ts: a step of a rendered rule's `browser.actions` failed.
  [/^browser\.actions\[\d+\] /, () => 'action'],
  // Jobs failed before PageJobData.failure existed, or by BullMQ itself (a stall), carry only their message.
  [/^(login to |gave up waiting for the login)/, () => 'login'],
  [/stalled more than allowable limit/, () => 'stalled'],
];

/** A failed job's group: the one its worker recorded with the run's counters, else read from its message. */
export function jobFailureGroup(job: Pick<CrawlJob, 'data' | 'failedReason'>): string {
  return job.data?.failure?.group ?? failureGroupOf(job.failedReason);
}

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
    action: 'Page action failed',
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
  readonly pages: readonly FailedJobSample[];
}

/** A failed page as its kept job says: the last error message, the attempts spent, when it failed for good. */
export interface FailedJobSample {
  readonly url: string;
  readonly message: string;
  readonly attempts: number;
  readonly at: number | null;
}

type CrawlJob = PageJob;

/** Reads the kept failed jobs page by page (at most `max`), queue after queue. */
async function* failedJobs(redis: Redis, queues: readonly PageQueue[], max: number): AsyncIterable<CrawlJob> {
  const page = 500;
  let left = max;
  for (const queue of queues) {
    for (let start = 0; left > 0; start += page) {
      const jobs = await readJobs(redis, queue, 'failed', start, start + Math.min(page, left) - 1);
      left -= jobs.length;
      yield* jobs;
      if (jobs.length < Math.min(page, left + jobs.length)) break;
    }
  }
}

/** Failed jobs grouped by cause across a task's every queue, with a few URLs each (newest first). */
export async function sampleFailures(
  parts: TaskPartitions,
  opts: { max?: number; urlsPerGroup?: number } = {},
): Promise<FailureGroupSample[]> {
  const per = opts.urlsPerGroup ?? 5;
  const groups = new Map<string, { jobs: number; urls: string[]; pages: FailedJobSample[] }>();
  for await (const job of failedJobs(parts.redis, await parts.queues(), opts.max ?? 2000)) {
    const g = jobFailureGroup(job);
    const e = groups.get(g) ?? { jobs: 0, urls: [], pages: [] };
    e.jobs++;
    if (e.urls.length < per && job.data?.url) {
      e.urls.push(job.data.url);
      e.pages.push({
        url: job.data.url,
        message: redactMessage(job.failedReason ?? ''),
        attempts: job.attemptsMade,
        at: job.finishedOn ?? null,
      });
    }
    groups.set(g, e);
  }
  return [...groups].map(([group, e]) => ({ group, ...e })).sort((a, b) => b.jobs - a.jobs);
}

/**
 * Retries every kept failed job of a group. Each retried job leaves the run's failure counts (it is counted
 * again when it finishes), and a finished run is reopened so the next session or worker finishes it properly. A
 * stopped run refuses (ControlRefused).
 */
export async function retryFailureGroup(parts: TaskPartitions, group: string): Promise<number> {
  const matching: CrawlJob[] = [];
  for await (const job of failedJobs(parts.redis, await parts.queues(), 100_000))
    if (jobFailureGroup(job) === group) matching.push(job);
  return retryFailedJobs(parts.redis, parts.task, matching);
}

/**
 * Retries failed jobs, the one way every view does it (the dashboard's "Retry all", the explorer's Retry Job). A
 * job retried left the run's counters uncounted before (issue 23, item 4): failing again it was counted twice, and
 * the finish notification said "3 failed" where the explorer listed 2. The counters live in the jobs' partitions;
 * readers sum them, so the task's own stats hash takes every decrement. A stopped run's pages are refused
 * (frontier/refused.ts): Stop ends a run for good.
 */
export async function retryFailedJobs(redis: Redis, task: string, jobs: readonly CrawlJob[]): Promise<number> {
  const keys = taskKeys(task);
  const [run, state] = await redis.hmget(keys.meta, 'run', 'state');
  if (run && state === 'stopped') throw stoppedRunRefusal(task, run, 'retry');
  let retried = 0;
  // Redis refusing a command (NOPERM for a user with reads only, OOM when full) is not "retried by someone else":
  // swallowed, `retry` said "no failed pages to retry" and exited 0. The run is still reopened for the pages retried
  // before it, then it is thrown.
  let refused: Error | null = null;
  for (const job of jobs) {
    // Before the retry, which clears the job's failedReason.
    const group = jobFailureGroup(job);
    try {
      // A job re-added after its lease ran out is marked `recovered`, and such a job whose page is no longer in the
      // window is taken for one that finished before its worker died (CrawlQueue.isSettled): retried by hand, it
      // would end without fetching. The person asked for the page again, so it is a plain job again.
      // Its failure record goes too: the page is no longer failed.
      // It is counted as retried by hand, as its attempts start again (figures.ts describeAttempts).
      if (job.data) {
        const { recovered: _recovered, failure: _failure, ...data } = job.data;
        await job.updateData({ ...data, retried: (job.data.retried ?? 0) + 1 });
      }
      // Its attempts start again: the page was asked for anew, and counting on showed "attempt 4/3" (issue 32).
      await job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
    } catch (err) {
      if (isReplyError(err)) {
        refused = err as Error;
        break;
      }
      continue; // Retried or removed by someone else meanwhile.
    }
    retried++;
    // Only jobs of the current run were counted in its stats.
    if (run && job.data?.run === run)
      await uncountFailed(redis, task, run, { id: String(job.id), url: job.data.url }, group);
  }
  if (retried > 0 && run) {
    // Running again: its old finish time goes too (the dashboard's elapsed time stopped at it). The time since it
    // ended is idle time until a driver resumes it (CrawlQueue.resume adds it to pausedMs), not crawling time: its
    // duration jumped by however long it had been over (issue 32).
    if (state === 'finished') {
      const finishedAt = await redis.hget(keys.meta, 'finishedAt');
      await redis
        .multi()
        .hset(
          keys.meta,
          'state',
          'running',
          'reopenedAt',
          String(Date.now()),
          'idleSince',
          finishedAt ?? String(Date.now()),
        )
        .hdel(keys.meta, 'finishedAt')
        .unlink(keys.finalized(run))
        .exec();
    }
  }
  if (refused !== null) throw refused;
  return retried;
}

// ---- A run's failed and skipped pages, by reason (`crawl-studio failures`, the run summary, `status`) -----------

export interface FailedPage {
  readonly url: string;
  readonly rule: string | null;
  readonly reason: string;
  /** The HTTP status the page failed with, when it got one. */
  readonly status: number | null;
  /** Attempts made (a skipped page: null). */
  readonly attempts: number | null;
  /** The last error message (URLs in it with credentials shown as `***`). */
  readonly message: string;
  readonly worker: string | null;
  /** When it failed or was skipped, ms since the epoch. */
  readonly at: number | null;
}

export interface ReasonGroup {
  readonly kind: 'failed' | 'skipped';
  readonly reason: string;
  /** The run's counter (what the summary, the dashboard and `status --json` count). */
  readonly count: number;
  /** Its pages still known (failed jobs the queue keeps; the latest skipped pages), newest first, at most `limit`. */
  readonly pages: readonly FailedPage[];
}

export interface RunFailures {
  readonly task: string;
  readonly run: string | null;
  readonly failed: number;
  readonly skipped: number;
  /** Failures first, then skips; each by count, largest first. */
  readonly groups: readonly ReasonGroup[];
}

/**
 * True when `reason` is what the user asked for the group: its exact name (`http-404`, `proxy-auth`, `timeout`), or
 * one of the HTTP families: `http` (every `http-NNN` status, and nothing else: not `proxy-auth`, `login`, `timeout`)
 * or a status class (`http-4xx`, `http-5xx`). No other prefix matches: `proxy` is not `proxy-auth`, `too` not
 * `too-large` (issue 31: `retry --reason http` refetches the 404, not the 407 of a proxy nor the failed login).
 */
export function matchesReason(group: string, reason: string | undefined): boolean {
  if (reason === undefined || group === reason) return true;
  const status = /^http-(\d)\d\d$/.exec(group);
  if (!status) return false;
  return reason === 'http' || reason === `http-${status[1]}xx`;
}

/** A message as shown: a URL's credentials (a proxy's `user:pass@`) never. */
function redactMessage(message: string): string {
  return message.replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@]+@/gi, '$1***@');
}

/**
 * The failed and skipped pages of a run (the current one by default), grouped by reason with the run's counts: one
 * read for the CLI's `failures`, its run summary and `status`, so they count as the dashboard does.
 */
export async function readRunFailures(
  parts: TaskPartitions,
  opts: { readonly run?: string; readonly reason?: string; readonly limit?: number } = {},
): Promise<RunFailures> {
  const { redis, task } = parts;
  const run = opts.run ?? (await redis.hget(taskKeys(task).meta, 'run'));
  if (!run) return { task, run: null, failed: 0, skipped: 0, groups: [] };
  const limit = opts.limit ?? 20;
  const stats = await readRunStats(redis, task, run);
  const failedPages = new Map<string, FailedPage[]>();
  for await (const job of failedJobs(parts.redis, await parts.queues(), 100_000)) {
    if (job.data?.run !== run) continue;
    const reason = jobFailureGroup(job);
    if (!matchesReason(reason, opts.reason)) continue;
    const list = failedPages.get(reason) ?? [];
    list.push({
      url: job.data.url,
      rule: job.data.rule ?? null,
      reason,
      status: job.data.failure?.status ?? httpStatusOf(job.failedReason),
      attempts: job.attemptsMade,
      message: redactMessage(job.failedReason ?? ''),
      worker: job.data.failure?.worker ?? null,
      at: job.finishedOn ?? null,
    });
    failedPages.set(reason, list);
  }
  const skippedPages = new Map<string, FailedPage[]>();
  for (const raw of await redis.lrange(metricsKeys(task, run).skippedLog, 0, -1)) {
    const e = parseSkipped(raw);
    if (!e || !matchesReason(e.reason, opts.reason)) continue;
    const list = skippedPages.get(e.reason) ?? [];
    list.push(e);
    skippedPages.set(e.reason, list);
  }
  const groups: ReasonGroup[] = [];
  const add = (
    kind: ReasonGroup['kind'],
    counts: Readonly<Record<string, number>>,
    pages: Map<string, FailedPage[]>,
  ) => {
    const reasons = new Set([
      ...Object.keys(counts).filter((r) => (counts[r] ?? 0) > 0 && matchesReason(r, opts.reason)),
      ...pages.keys(),
    ]);
    const mine = [...reasons].map((reason) => {
      const list = (pages.get(reason) ?? []).sort((a, b) => (b.at ?? 0) - (a.at ?? 0));
      return {
        kind,
        reason,
        count: Math.max(counts[reason] ?? 0, kind === 'failed' ? list.length : 0),
        pages: list.slice(0, limit),
      };
    });
    groups.push(...mine.sort((a, b) => b.count - a.count));
  };
  add('failed', stats.failures, failedPages);
  add('skipped', stats.skipped, skippedPages);
  return { task, run, failed: stats.failed, skipped: Object.values(stats.skipped).reduce((a, b) => a + b, 0), groups };
}

function httpStatusOf(message: string | undefined): number | null {
  const m = /^HTTP (\d{3}) /.exec(message ?? '');
  return m ? Number(m[1]) : null;
}

function parseSkipped(raw: string): FailedPage | null {
  try {
    const e = JSON.parse(raw) as {
      url: string;
      reason: string;
      message?: string;
      rule?: string | null;
      worker?: string | null;
      at?: number;
    };
    return {
      url: e.url,
      rule: e.rule ?? null,
      reason: e.reason,
      status: null,
      attempts: null,
      message: redactMessage(e.message ?? e.reason),
      worker: e.worker ?? null,
      at: e.at ?? null,
    };
  } catch {
    return null;
  }
}
