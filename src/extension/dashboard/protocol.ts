// Messages between the dashboard webview (media/dashboard/main.ts) and its panel. Pure types.

export const DASHBOARD_VIEW_TYPE = 'crawlStudio.dashboard';

export interface Series {
  /** Seconds since epoch (uPlot's x unit). */
  readonly t: readonly number[];
  readonly pages: readonly number[];
  readonly items: readonly number[];
  readonly depth: readonly number[];
  readonly discovered: readonly number[];
}

export interface Counter {
  readonly label: string;
  readonly value: number;
  readonly detail?: string;
}

export interface GroupRow {
  readonly group: string;
  readonly label: string;
  readonly count: number;
  /** Failed jobs still kept by the queue (what "Retry all" retries). */
  readonly jobs: number;
  readonly urls: readonly string[];
}

export interface HostRow {
  readonly host: string;
  readonly done: number;
  readonly failed: number;
  readonly skipped: number;
  readonly inFlight: number;
  readonly delayMs: number;
  readonly crawlDelayMs: number | null;
  readonly nextInMs: number;
}

export interface WorkerRow {
  readonly id: string;
  readonly host: string;
  readonly pid: number;
  readonly local: boolean;
  readonly concurrency: number;
  readonly processed: number;
  readonly failed: number;
  /** Pages finished a second between its last two heartbeats (observe/workerRates.ts WORKER_RATE_WINDOW). */
  readonly pagesPerSec: number | null;
  readonly lastSeenAgoMs: number;
  readonly stale: boolean;
}

export interface DashboardData {
  readonly task: string;
  readonly file: string;
  /** `finishedAt` only once the run is over; `elapsedMs` to it, or to `now` while it runs. */
  /** `state`: the run's phase in one word (observe/runPhase.ts phaseWord), `phase` in a sentence. */
  readonly run: {
    readonly id: string;
    readonly state: string;
    readonly phase: string;
    readonly startedAt: number;
    readonly finishedAt: number | null;
    readonly elapsedMs: number;
  } | null;
  readonly now: number;
  readonly counters: readonly Counter[];
  /** As every view counts it (observe/taskStatus.ts): `total` is the status bar's "queue N", `text` the explorer's words. */
  readonly queue: {
    readonly waiting: number;
    readonly active: number;
    readonly delayed: number;
    readonly total: number;
    readonly text: string;
  };
  readonly eta: {
    readonly state: string;
    readonly seconds: number | null;
    readonly completionRate: number;
    readonly discoveryRate: number;
  };
  /** Pages finished (fetched, skipped or failed) per second, as the status bar and the Workers view count them. */
  readonly pagesPerSec: number;
  readonly itemsPerSec: number;
  /** 'recent': over the last seconds, while the run goes; 'run': the average of the whole run, once it is over. */
  readonly rateBasis: 'recent' | 'run';
  /** The rates' window in words, as every view labels it: "last 30 s", "average over the run". */
  readonly rateWindow: string;
  readonly series: Series;
  readonly failures: readonly GroupRow[];
  readonly skipped: readonly GroupRow[];
  /** URLs of the run with a kept screenshot of their rendered page (`browser.screenshot`), newest first. */
  readonly screenshots: readonly string[];
  readonly hosts: readonly HostRow[];
  readonly workers: readonly WorkerRow[];
  /** A finished run's item changes, as its history closed them (null: running, or no history for it yet). */
  readonly changes: RunChanges | null;
}

/** What a finished run added, changed and removed (store/history/query.ts runChangeCounts: the CLI summary's figures). */
export interface RunChanges {
  readonly run: string;
  readonly added: number;
  readonly changed: number;
  readonly removed: number;
  /** False when the run could mark nothing removed (a failed page, the page limit cut it short). */
  readonly complete: boolean;
  /** The run's notification (notify:), as recorded when it was sent: its reason when it failed. */
  readonly notify: {
    readonly status: 'delivered' | 'failed' | 'skipped';
    readonly attempts: number;
    readonly reason?: string;
  } | null;
}

export type ToDashboard =
  | { readonly type: 'data'; readonly data: DashboardData }
  | { readonly type: 'retried'; readonly group: string; readonly count: number }
  | { readonly type: 'error'; readonly message: string };

export type FromDashboard =
  | { readonly type: 'ready' }
  | { readonly type: 'retryGroup'; readonly group: string }
  | { readonly type: 'openUrl'; readonly url: string }
  | { readonly type: 'findUrl'; readonly url: string }
  | { readonly type: 'showScreenshot'; readonly url: string }
  | { readonly type: 'openResults' }
  /** The Results view filtered to the finished run's changes. */
  | { readonly type: 'openChanges' };

export interface DashboardPersisted {
  readonly file: string;
}
