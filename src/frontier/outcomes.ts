import { hostOf } from '../core/url/hosts';
import type { Redis } from '../redis/connect';
import { workerIdOf } from './fleet';
import { withScripts } from './scripts';
import { hostTallyField, metricsKeys, taskKeys } from './keys';

// What a worker writes when a job ends without finishing its page (lua/pageDone.lua counts those): a page that failed
// for good or was skipped, in the run's counters, its host's tally, the reason's recent URLs and the run's log of
// skipped pages. The crawl's figures depend on them, so they are the frontier's; observe/metrics.ts and
// observe/failures.ts read them.

/** How long a run's metric history, tallies and skip logs live (renewed as they are written). */
export const METRICS_TTL_MS = 7 * 24 * 3600 * 1000;
/** Recent URLs kept per skip reason. */
export const SAMPLE_URLS = 5;

/**
 * A job that failed for good, counted once (lua/countFailed.lua): the run's "failed" and "failed:<group>" counters and
 * its host's tally. Safe to call again for the same job (a write cut short and sent again). Pages that are done are
 * counted by the scripts that finish them.
 */
export async function countFailed(
  redis: Redis,
  task: string,
  run: string,
  job: { readonly id: string; readonly url: string },
  group: string,
): Promise<void> {
  const mk = metricsKeys(task, run);
  const host = hostOf(job.url);
  await withScripts(redis).csCountFailed(
    taskKeys(task).stats(run),
    mk.hosts,
    mk.failedJobs,
    job.id,
    group,
    host ? hostTallyField(host, 'failed') : '',
    METRICS_TTL_MS,
  );
}

/**
 * A failed job of `run` retried by hand leaves its counts: the run's "failed" and "failed:<group>" and its host's
 * tally, in one MULTI (after retries the Hosts table said 4 failed beside the Failed card's 2: issue 32, item 3).
 * It is counted again by how it ends this time.
 */
export async function uncountFailed(
  redis: Redis,
  task: string,
  run: string,
  job: { readonly id: string; readonly url: string | undefined },
  group: string,
): Promise<void> {
  const stats = taskKeys(task).stats(run);
  const mk = metricsKeys(task, run);
  const m = redis
    .multi()
    .hincrby(stats, 'failed', -1)
    .hincrby(stats, `failed:${group}`, -1)
    .srem(mk.failedJobs, job.id);
  const host = job.url ? hostOf(job.url) : null;
  if (host) m.hincrby(mk.hosts, hostTallyField(host, 'failed'), -1);
  await m.exec();
}

/** Skipped pages a run keeps with their details (`crawl-studio failures`): the latest, newest first. */
const SKIPPED_LOG_KEEP = 1_000;

/**
 * A job skipped for `reason`, counted once (lua/countSkipped.lua): the run's "skipped:<reason>", its host's tally,
 * the reason's recent URLs and the run's log of skipped pages (with the rule and the worker: observe/failures.ts).
 * Safe to call again for the same job (a write cut short and sent again).
 */
export async function countSkipped(
  redis: Redis,
  task: string,
  run: string,
  job: { readonly id: string; readonly url: string },
  reason: string,
  rule: string | null = null,
): Promise<void> {
  const mk = metricsKeys(task, run);
  const why = skipReasonOf(reason);
  const entry = { url: job.url, reason: why, message: reason, rule, worker: workerIdOf(process.pid), at: Date.now() };
  const host = hostOf(job.url);
  await withScripts(redis).csCountSkipped(
    taskKeys(task).stats(run),
    mk.skippedLog,
    mk.hosts,
    mk.skippedUrls(why),
    mk.skippedJobs,
    job.id,
    `skipped:${why}`,
    JSON.stringify(entry),
    SKIPPED_LOG_KEEP,
    job.url,
    host ? hostTallyField(host, 'skipped') : '',
    SAMPLE_URLS,
    METRICS_TTL_MS,
  );
}

/** The stats field name of a skip reason from a job's return value ("robots.txt" -> "robots"). */
export function skipReasonOf(reason: string | undefined): string {
  if (!reason) return 'other';
  if (reason === 'robots.txt') return 'robots';
  if (reason.startsWith('no rule')) return 'no-rule';
  if (reason.startsWith('no sitemap entry')) return 'no-sitemap';
  return reason.replace(/[^\w-]+/g, '-').slice(0, 40);
}
