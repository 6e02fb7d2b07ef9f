import type { CrawlStats, JobCounts, RunInfo } from '../frontier/types';

// One source for each figure the views show of a task (issue 23, item 4): the status bar, the Queue Explorer, the
// Workers view, the dashboard, the finish notification and the CLI's progress line name a task's figures with
// these functions, and read them with taskStatus.ts, so two views never count one thing two ways ("queue 2" in the
// status bar beside "delayed 11" in the explorer; a toast's "3 failed" beside the explorer's 2; a worker at
// "0.0 jobs/s" beside a status bar at 3.2 p/s). Pure: the views load it at activation, without the engine.
//
// - Pages a run got through (done, skipped, failed) are the run's counters: exact, per run, and never capped
//   (BullMQ keeps only the newest finished jobs, and a skipped job is a "completed" one to it).
// - Pages that can still make work (waiting in the compact frontier, or jobs waiting, prioritized, active, delayed)
//   are read by taskStatus.ts's readJobCounts() only; a page in the frontier counts as waiting (issue 19).
// - Rates are pages finished (fetched, skipped or failed) per second over the last RATE_WINDOW_MS of the run's
//   metric history, named with their window (rateWindowText); taskFigures.ts gives them to every view.

/** What the queue is counted from: the jobs, and the pages waiting in the compact frontier (not jobs yet). */
export type QueueCounts = Pick<JobCounts, 'frontier' | 'waiting' | 'prioritized' | 'active' | 'delayed'>;

/** Pages that can still make work: what every view calls the queue ("queue N"). */
export function queuedJobs(c: QueueCounts): number {
  return c.frontier + c.waiting + c.prioritized + c.active + c.delayed;
}

/** Pages waiting for a worker: in the frontier, or as jobs in BullMQ's waiting lists. */
export function waitingPages(c: Pick<JobCounts, 'frontier' | 'waiting' | 'prioritized'>): number {
  return c.frontier + c.waiting + c.prioritized;
}

/**
 * The groups a queue's waiting pages are in, as the Queue Explorer lists them under the queue, whose counts add up
 * to waitingPages(): the row's "28 waiting" was beside a `waiting` group of 0 (issue 32, item 3), because 28 were
 * in the frontier. BullMQ's own `waiting` list is named "ready" (jobs ready to run), so "waiting" is one figure.
 */
export const WAITING_GROUPS = ['frontier', 'waiting', 'prioritized'] as const;

/** The label of a job group in the views: BullMQ's `waiting` is "ready"; the others are their state's name. */
export function groupLabel(state: string): string {
  return state === 'waiting' ? 'ready' : state;
}

/**
 * A job's attempts in words: the attempts made (at least the one under way or to come) of those its task allows,
 * and whether a person retried it. A page retried by hand starts its attempts again (retryFailedJobs resets them and
 * counts the retry in `retried`): "attempt 1/3 (retried by you)", never "attempt 4/3" (issue 32). A job that was
 * stalled or sent back can count more starts than allowed: "4 attempts (3 allowed)".
 */
export function describeAttempts(made: number, allowed: number | undefined, retried = 0): string {
  const n = Math.max(1, made);
  const by = retried > 0 ? ` (retried by you${retried > 1 ? ` ${retried}×` : ''})` : '';
  if (!allowed) return `attempt ${n}${by}`;
  return (n <= allowed ? `attempt ${n}/${allowed}` : `${n} attempts (${allowed} allowed)`) + by;
}

/** The queue in words, the same in the explorer's rows and the status bar's tooltip: "2 waiting · 0 active · 11 delayed". */
export function describeQueue(c: QueueCounts): string {
  const parts = [`${waitingPages(c)} waiting`, `${c.active} active`];
  if (c.delayed) parts.push(`${c.delayed} delayed`);
  return parts.join(' · ');
}

/** Pages a run got through, each counted once, by how it ended. */
export interface FinishedPages {
  /** Fetched (HTML or not, sitemaps included). */
  readonly done: number;
  /** Never fetched, on purpose: robots.txt, a rule gone from the task... (links over maxPages never became jobs). */
  readonly skipped: number;
  /** Failed for good (retries spent, or not worth retrying). */
  readonly failed: number;
  readonly total: number;
}

export function finishedPages(stats: CrawlStats | null): FinishedPages {
  if (!stats) return { done: 0, skipped: 0, failed: 0, total: 0 };
  const skipped = skippedJobs(stats);
  return { done: stats.done, skipped, failed: stats.failed, total: stats.done + skipped + stats.failed };
}

/** Jobs that finished without being fetched or failing: the skip reasons counted per job ('limit' never was a job). */
export function skippedJobs(stats: CrawlStats): number {
  let n = 0;
  for (const [reason, count] of Object.entries(stats.skipped)) if (reason !== 'limit') n += count;
  return n;
}

/**
 * How long a run has crawled: from its start to its finish (or stop), or to `now` while it goes, less the time it
 * was paused or interrupted (issue 32: a Stop's idle time was counted in the run's duration). Every duration a view
 * shows (dashboard, CLI, finish message, the run summary) is this one.
 */
export function runElapsedMs(
  run: Pick<RunInfo, 'startedAt' | 'finishedAt'> & Partial<Pick<RunInfo, 'pausedMs' | 'idleSince'>>,
  now: number,
): number {
  const end = run.finishedAt ?? now;
  const idleNow = run.idleSince != null ? Math.max(0, end - run.idleSince) : 0;
  return Math.max(0, end - run.startedAt - (run.pausedMs ?? 0) - idleNow);
}

/**
 * How many pages a second, over a window: every rate a view shows of a running task (status bar, CLI, dashboard,
 * monitor, and the ETA they give) is over this one, and says so (rateLabel). 30 s, not 5: a 5 s rate swung from 0.4
 * to 1.0 from one view to the next on a loaded machine, and an ETA divided by it swung with it (issue 32, item 3).
 */
export const RATE_WINDOW_MS = 30_000;

/** A rate's window in words, for every label: "last 30 s", or "average over the run" once it is over. */
export function rateWindowText(basis: 'recent' | 'run', windowMs: number | null = RATE_WINDOW_MS): string {
  return basis === 'run' || windowMs === null
    ? 'average over the run'
    : `last ${Math.max(1, Math.round(windowMs / 1000))} s`;
}

/**
 * The window a task's recent rates are over: the last RATE_WINDOW_MS, or, early in a run, the last half of the time
 * since its first page finished. Points before that are its ramp (workers starting, the first pages in flight, the
 * window filling), not its pace: a rate over them made the first ETAs over-shoot by half (issue 32, item 3). Needs
 * the run's points from its start, or 2 × RATE_WINDOW_MS of them: then every reader finds the same window.
 */
export function recentWindowMs(
  finished: readonly { readonly t: number; readonly n: number }[],
  windowMs = RATE_WINDOW_MS,
): number {
  const last = finished[finished.length - 1];
  if (!last || finished[0]!.n !== 0) return windowMs;
  let from = 0;
  while (from + 1 < finished.length && finished[from + 1]!.n === 0) from++;
  return Math.min(windowMs, (last.t - finished[from]!.t) / 2);
}

/** The rate of a running total over the last `windowMs` of its points (oldest first), 0 with fewer than two. */
export function rateOver(
  points: readonly { readonly t: number; readonly n: number }[],
  windowMs = RATE_WINDOW_MS,
): number {
  const last = points[points.length - 1];
  if (!last) return 0;
  let first = last;
  for (let i = points.length - 2; i >= 0; i--) {
    first = points[i]!;
    if (first.t <= last.t - windowMs) break;
  }
  const dt = (last.t - first.t) / 1000;
  return dt > 0 ? Math.max(0, last.n - first.n) / dt : 0;
}
