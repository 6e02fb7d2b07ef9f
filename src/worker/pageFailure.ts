import { UnrecoverableError, type Job } from 'bullmq';
import type { CrawlTask } from '../core/task/model';
import { workerIdOf } from '../frontier/fleet';
import { countFailed } from '../frontier/outcomes';
import type { PageJobData } from '../frontier/types';
import type { Redis } from '../redis/connect';
import { FetchFailure } from './fetcher';
import { throughCuts } from '../redis/cuts';
import { mayRetry } from './requests';
import { SentBack } from './sentBack';

// What a page's failure means to BullMQ: retried (after how long) or final, and how a final one is counted.

/** Attached to retryable errors so the backoff strategy can honour Retry-After. */
class RetryableFetchError extends Error {
  constructor(
    message: string,
    readonly retryAfterMs: number | null,
  ) {
    super(message);
    this.name = 'RetryableFetchError';
  }
}

/**
 * Maps a fetch failure to BullMQ's retry semantics, and counts it when it is final: unrecoverable (4xx, too
 * large, blocked) or out of attempts.
 */
export async function failure(err: unknown, job: Job<PageJobData>, redis: Redis, task: string): Promise<Error> {
  // Where a page cannot be set aside (a sitemap's stream), a page sent back is retried as its failure says.
  const f = err instanceof SentBack ? err.failure : err instanceof FetchFailure ? err : null;
  const attempts = job.opts.attempts ?? 1;
  // A POST that may have reached the server is not sent again (requests.ts): its failure is final.
  const retry = f !== null && mayRetry(job.data.request, f);
  const final = !retry || job.attemptsMade + 1 >= attempts;
  if (final) {
    // Counted here through a cut connection: thrown out, the cut made the processor fetch the page again (and a
    // count Redis had run was counted twice). countFailed counts a job once, however often it is sent.
    const counted = { id: String(job.id), url: job.data.url };
    await throughCuts(
      () => countFailed(redis, task, job.data.run, counted, f?.group ?? 'error'),
      () => undefined,
    );
    await markFailure(job, f?.group ?? 'error', f?.status ?? null);
  }
  const message = f ? f.message : err instanceof Error ? err.message : String(err);
  if (!retry)
    return new UnrecoverableError(
      f?.retryable
        ? `${message} (not sent again: a ${job.data.request?.method} may have reached the server; 'idempotent: true' retries it)`
        : message,
    );
  return new RetryableFetchError(message, f.retryAfterMs);
}

/**
 * The failure group and status on the failed job itself (PageJobData.failure), so `crawl-studio failures` and the
 * dashboard group its page as the run's counters do, not by guessing from its message. Not on the counters' MULTI:
 * on a cluster the job's hash is in its partition's slot. Lost only if Redis is, and then the message still says.
 */
export async function markFailure(job: Job<PageJobData>, group: string, status: number | null): Promise<void> {
  await job
    .updateData({ ...job.data, failure: { group, status, worker: workerIdOf(process.pid) } })
    .catch(() => undefined);
}

/** Exponential or fixed backoff with jitter; a longer Retry-After from the server wins. */
export function backoffDelay(attemptsMade: number, task: CrawlTask, err?: Error): number {
  const base = task.request.retries.delayMs;
  const raw = task.request.retries.backoff === 'fixed' ? base : base * 2 ** Math.max(0, attemptsMade - 1);
  const jittered = raw * (0.8 + Math.random() * 0.4);
  const retryAfter = err instanceof RetryableFetchError ? (err.retryAfterMs ?? 0) : 0;
  return Math.round(Math.max(jittered, retryAfter));
}
