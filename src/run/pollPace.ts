import type { JobCounts } from '../frontier/types';
import { queuedJobs } from '../observe/taskStatus';

// How often a session (run/session.ts) looks at its run: pure, so its pacing is tested without a crawl.

/**
 * How long to wait before looking again: half the time the jobs left should take at the current rate, within
 * [25 ms, pollMs]. A fast crawl is finalized within tens of ms of its last page instead of up to a whole poll
 * later (a quarter of a second on average: a noticeable share of a short crawl); a slow one is not polled faster.
 * Half, because the rate is an average that lags a crawl speeding up at its end: looking at the whole estimate
 * saw the drain up to ~170 ms late (bench site), and halving costs a few more looks, each a handful of reads.
 */
export function nextPollMs(
  counts: JobCounts,
  runState: string | undefined,
  pagesPerSec: number,
  pollMs: number,
): number {
  // Only a running run is about to drain: a recurring or joined session idles at the configured poll between
  // runs (its rate, an average, takes a while to decay to 0).
  if (runState !== 'running' || pagesPerSec <= 0) return pollMs;
  const left = queuedJobs(counts);
  return Math.max(MIN_POLL_MS, Math.min(pollMs, (left / pagesPerSec) * 500));
}
const MIN_POLL_MS = 25;
