import type { JobRequest, SeriesRef } from '../core/request/build';

// The shapes every room shares about a crawl's pages and runs: a page's BullMQ job and its result, a run as the
// task's meta hash holds it, its counters and job counts, and the limits on what a queue keeps.

export interface PageJobData {
  readonly url: string;
  readonly rule: string;
  /** Hops from a start URL; for a sitemap, how deep in sitemap indexes it is (0: named by the task). */
  readonly depth: number;
  readonly run: string;
  /** Set on a sitemap's job: the index of the task's `sitemaps` entry it belongs to. */
  readonly sitemap?: number;
  /** The page's <lastmod> in the sitemap that listed it, ms since the epoch. */
  readonly lastmod?: number;
  /** Its request when it is not a plain GET: the method and the body, its variables as names (never values). */
  readonly request?: JobRequest;
  /** The page is one of a series (`{page}`): where its template is, its page number and values. */
  readonly series?: SeriesRef;
  /**
   * Set on a job added again after its lease ran out (lua/frontier.lua fRecover): its first adder may have added
   * it, and it may have finished and been removed since, so it checks that its page is still in the window first.
   */
  readonly recovered?: true;
  /**
   * How many times a person retried the page after it failed for good (Retry all, Retry Job, `crawl-studio retry`:
   * observe/failures.ts retryFailedJobs): its attempts start again each time, and the views say it was retried.
   */
  readonly retried?: number;
  /**
   * Set when the page failed for good (worker/pageFailure.ts): its failure group as the run's counters have it
   * (`failed:<group>`), the HTTP status when there was one, and the worker that gave up, for `crawl-studio failures`
   * and the dashboard (observe/failures.ts); the message is the job's failedReason.
   */
  readonly failure?: PageFailure;
}

export interface PageFailure {
  readonly group: string;
  readonly status: number | null;
  readonly worker: string;
}

/** The BullMQ job name of a sitemap's job (a page's job is named after its rule). */
export const SITEMAP_JOB = 'sitemap';

export interface PageJobResult {
  readonly outcome: 'done' | 'skipped' | 'non-html';
  readonly status: number | null;
  readonly items: number;
  readonly links: number;
  readonly reason?: string;
}

export interface RunInfo {
  readonly run: string;
  readonly state: 'starting' | 'running' | 'finished' | 'stopped';
  readonly startedAt: number;
  /** When it finished, or was stopped (state 'stopped': Stop Crawl ended it; the next start begins a new run). */
  readonly finishedAt: number | null;
  /**
   * Time it spent not crawling, already over: paused (Pause Queue) or interrupted (Ctrl-C) until resumed. Optional
   * (absent: none) because a worker builds a RunInfo of its job's run that knows only its id (worker/pageFinish.ts).
   */
  readonly pausedMs?: number;
  /** Since when it is paused or interrupted, while it is (figures.ts runElapsedMs counts that time out). */
  readonly idleSince?: number | null;
  /**
   * It had finished, and a retry or a URL enqueued after its end put pages back (`reopenedAt` in its meta, until a
   * driver resumes it): running again, waiting for workers, rather than interrupted (observe/runPhase.ts).
   */
  readonly reopened?: boolean;
  readonly bucketBits: number;
  readonly file: string | null;
  /**
   * The digest of the task its driver runs it with (core/task/fingerprint.ts), null for a run of an older version.
   * A worker whose own copy of the task differs says so (worker/activityLog.ts).
   */
  readonly taskFingerprint?: string | null;
}

export interface CrawlStats {
  readonly enqueued: number;
  readonly done: number;
  readonly failed: number;
  readonly items: number;
  readonly problems: number;
  readonly bytes: number;
  readonly duplicates: number;
  readonly nonHtml: number;
  /** Sitemaps read (counted in `done` too, as fetched pages). */
  readonly sitemaps: number;
  /** Pages the site answered 304 Not Modified (conditional re-crawl; counted in `done` too). */
  readonly unchanged: number;
  /** Items of those pages, kept in the store from their last full fetch (not in `items`). */
  readonly unchangedItems: number;
  /** "robots", "limit", "depth"… -> count */
  readonly skipped: Readonly<Record<string, number>>;
  /** Failure groups: "http-404", "timeout"… -> count */
  readonly failures: Readonly<Record<string, number>>;
  /** Links dropped on pages, by reason. */
  readonly dropped: Readonly<Record<string, number>>;
  /**
   * Per page rule: links found on its pages (kept and dropped, on-page repeats excepted) and the drops by reason,
   * so a summary can say which rule lost most of its links. Absent in runs counted before these counters existed.
   */
  readonly byRule?: Readonly<
    Record<string, { readonly links: number; readonly dropped: Readonly<Record<string, number>> }>
  >;
  /** Pages whose Content-Type charset garbled what their `<meta charset>` reads cleanly, per host and both charsets. */
  readonly charsetConflicts?: readonly CharsetWarning[];
  /** Per rendered rule: pages whose links and items kept coming after `load` (counts when read and a moment later). */
  readonly lateContent?: Readonly<
    Record<string, { readonly pages: number; readonly atLoad: number; readonly later: number }>
  >;
}

export interface CharsetWarning {
  readonly host: string;
  /** The Content-Type header's encoding, which the page was read with. */
  readonly header: string;
  /** The page's `<meta charset>`. */
  readonly meta: string;
  readonly pages: number;
}

export interface JobCounts {
  /** Pages waiting in the compact frontier, not BullMQ jobs yet (lua/frontier.lua). */
  readonly frontier: number;
  readonly waiting: number;
  readonly active: number;
  readonly delayed: number;
  readonly prioritized: number;
  readonly completed: number;
  readonly failed: number;
}

export interface CrawlStatus {
  readonly task: string;
  readonly run: RunInfo | null;
  readonly stats: CrawlStats | null;
  readonly counts: JobCounts;
  readonly isPaused: boolean;
}

/** The job scheduler of a recurring task, and the name of the jobs it creates. */
export const SCHEDULER_ID = 'schedule';
export const SCHEDULED_RUN_JOB = '__scheduled-run__';

/** The id BullMQ's job scheduler gives the job of the run due at `at` (ms): `repeat:<scheduler id>:<at>`. */
export function schedulerJobId(at: string | number): string {
  return `repeat:${SCHEDULER_ID}:${at}`;
}

export function isSchedulerJobId(id: string): boolean {
  return id.startsWith(`repeat:${SCHEDULER_ID}:`);
}

/** Links without a priority get this one when any rule of the task sets a priority (1 runs first). */
export const DEFAULT_PRIORITY = 1000;
/** Completed jobs kept for explorers; older ones are removed (their pages are already counted and stored). */
export const KEEP_COMPLETED = 1000;
export const KEEP_FAILED = 10_000;

/** What finishing a page writes (see CrawlQueue.completePage). */
export interface PageFinish {
  /** The store's stream field and value (store/buffer.ts pageEntry). */
  readonly entry: readonly [field: string, value: string];
  /** Added to the run's stats. */
  readonly counters: Readonly<Record<string, number>>;
  /** The host counted as done in the run's per-host tally; null for none. */
  readonly host: string | null;
}

/** A link as the frontier queues it. */
export interface FrontierLink {
  readonly url: string;
  readonly host: string;
  readonly rule: string;
  readonly depth: number;
  readonly priority: number | null;
  readonly sitemap?: number;
  readonly lastmod?: number;
  /** Its request when it is not a plain GET: deduplicated by method and body too (requestKey). */
  readonly request?: JobRequest;
  /** A page of a series (`{page}`). */
  readonly series?: SeriesRef;
}

export type EnqueueOutcome = 'enqueued' | 'duplicate' | 'limit';
