import type { Redis } from '../redis/connect';
import type { CrawlStats, JobCounts, RunInfo } from '../frontier/types';
import { readLiveWorkers, WORKER_SILENT_AFTER_MS, type WorkerBeat } from '../frontier/fleet';
import {
  describeQueue,
  finishedPages,
  queuedJobs,
  RATE_WINDOW_MS,
  rateWindowText,
  runElapsedMs,
  waitingPages,
  type FinishedPages,
} from './figures';
import { estimateEta, readHistory, type EtaState, type MetricSample } from './metrics';
import { runRates, type RunRates } from './rates';
import { phaseWord, type RunPhase } from './runPhase';
import { readTaskStatus, type TaskStatus } from './taskStatus';

// The one read-model of a task's figures (issue 32, item 3: an ETA of 4m19s for a crawl of 75 s, pages/s 0.4, 1.0
// and 0.7 at once, Hosts' 4 failed beside the Failed card's 2). Every view that shows a figure of a task takes it
// from taskFigures(): the status bar and the CLI's progress line (through the session's Progress), the dashboard,
// `crawl-studio status` (and its --json), the web monitor's API. The views format; none computes. Pure but for
// readTaskFigures(), which reads what it needs in one place.

/** What taskFigures() is computed from: a task's status (taskStatus.ts), its metric history and the fleet's beats. */
export interface FiguresInput {
  readonly at: number;
  readonly run: (Pick<RunInfo, 'startedAt' | 'finishedAt'> & Partial<Pick<RunInfo, 'pausedMs' | 'idleSince'>>) | null;
  readonly stats: CrawlStats | null;
  readonly counts: JobCounts;
  readonly phase: RunPhase;
  /** The run's metric samples, oldest first (at least the last RATE_WINDOW_MS of them). */
  readonly history: readonly MetricSample[];
  /** The heartbeats of the task's workers; omitted, whether a worker takes its pages is not asked. */
  readonly workers?: readonly Pick<WorkerBeat, 'lastSeen'>[];
}

/** Why a task has no ETA, or 'ok' with one: the ETA's own states (metrics.ts), and the run's when it is not going. */
export type EtaFigureState = EtaState | 'paused' | 'stopped' | 'finished' | 'interrupted' | 'no-worker' | 'none';

export interface TaskFigures {
  /** The run's phase in one word (runPhase.ts phaseWord). */
  readonly phase: string;
  /** Crawling time: paused, interrupted and stopped time left out (figures.ts runElapsedMs). */
  readonly elapsedMs: number;
  /** Pages that can still make work: waiting (the frontier's and BullMQ's), active, delayed; total is "queue N". */
  readonly queue: {
    readonly waiting: number;
    readonly active: number;
    readonly delayed: number;
    readonly total: number;
    readonly text: string;
  };
  /** Pages the run got through, by how they ended (the run's counters). */
  readonly pages: FinishedPages;
  readonly items: number;
  /** Pages finished a second, over the window its label names ("last 30 s" while running, else the run's average). */
  readonly rate: RunRates & { readonly label: string };
  /**
   * Seconds left: the queue's total over the recent pages/s (so seconds × pagesPerSec = queue.total), only when the
   * run is going and a rate exists; else null, and `state` says why.
   */
  readonly eta: { readonly state: EtaFigureState; readonly seconds: number | null; readonly discoveredPerSec: number };
}

/** A task's figures from what was read of it: the same input gives the same figures in every view. */
export function taskFigures(i: FiguresInput): TaskFigures {
  const total = queuedJobs(i.counts);
  const queue = {
    waiting: waitingPages(i.counts),
    active: i.counts.active,
    delayed: i.counts.delayed,
    total,
    text: describeQueue(i.counts),
  };
  // Going: running, and driven or worked on. A run reopened by a retry or an enqueue that nobody drives nor works on
  // has a rate as a paused one does: its average, not the last seconds of history that nothing adds to.
  const idle = i.phase.kind === 'running' && i.phase.driver === null && i.phase.workers === 0;
  const going = i.phase.kind === 'running' && !idle;
  const rates = runRates({ run: i.run, stats: i.stats, history: i.history, at: i.at, going });
  const rate = { ...rates, label: `pages/s (${rateWindowText(rates.basis, rates.windowMs)})` };
  // Over the very window of the pages/s shown beside it: ETA × pages/s = the queue.
  const e = estimateEta(i.history, total, rates.windowMs ?? RATE_WINDOW_MS);
  // A running run whose pages no worker takes (a retry or an enqueue reopened it, its driver is gone) has no rate to
  // estimate from: it says so rather than "estimating" for ever (issue 32, item 4).
  const working =
    !idle && (i.workers === undefined || i.workers.some((w) => i.at - w.lastSeen <= WORKER_SILENT_AFTER_MS));
  const state: EtaFigureState =
    i.phase.kind !== 'running'
      ? i.phase.kind === 'none'
        ? 'none'
        : i.phase.kind
      : !working && total > 0
        ? 'no-worker'
        : e.state;
  return {
    phase: phaseWord(i.phase),
    elapsedMs: i.run ? runElapsedMs(i.run, i.at) : 0,
    queue,
    pages: finishedPages(i.stats),
    items: i.stats?.items ?? 0,
    rate,
    eta: { state, seconds: state === 'ok' ? e.seconds : null, discoveredPerSec: going ? e.discoveryRate : 0 },
  };
}

/**
 * The metric samples the recent rate needs: samples are at least 0.9 s apart (metrics.ts), and its window depends on
 * the last 2 × RATE_WINDOW_MS (figures.ts recentWindowMs): with fewer, two readers of one history would see two rates.
 */
const HISTORY_FOR_RATE = Math.ceil((2 * RATE_WINDOW_MS) / 900) + 2;

/** Reads a task's figures now: its status, the last samples of its history and the fleet's beats. */
export async function readTaskFigures(redis: Redis, task: string, now = Date.now()): Promise<TaskFigures> {
  return figuresOf(redis, await readTaskStatus(redis, task), now);
}

/** The figures of a status just read (readTaskStatus), with the history and the beats they need besides. */
export async function figuresOf(redis: Redis, status: TaskStatus, now = Date.now()): Promise<TaskFigures> {
  const [history, workers] = await Promise.all([
    status.run ? readHistory(redis, status.task, status.run.run, HISTORY_FOR_RATE) : [],
    readLiveWorkers(redis, now),
  ]);
  return taskFigures({ ...status, at: now, history, workers: workers.filter((w) => w.tasks.includes(status.task)) });
}
