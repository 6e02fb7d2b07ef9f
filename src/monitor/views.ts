import type { Redis } from '../redis/connect';
import type { CrawlStatus } from '../frontier/types';
import { TASKS_KEY } from '../frontier/keys';
import { PartitionsByTask } from '../frontier/partitions';
import { readWorkers, type WorkerBeat } from '../frontier/fleet';
import { describeGroup } from '../observe/failures';
import { screenshotFacts } from '../observe/screenshots';
import type { ScreenshotFacts } from '../frontier/screenshots';
import { readActivePages, type ActivePage } from './activePages';
import { StoredReads, type StoredView } from './stored';
import { readFrontierByHost, type FrontierByHost } from '../observe/frontier';
import { readHealth, type HealthSnapshot } from '../observe/health';
import { rateSeries, recordSample } from '../observe/metrics';
import type { RunRates } from '../observe/rates';
import {
  describeQueue,
  finishedPages,
  queuedJobs,
  readTaskStatus,
  waitingPages,
  type FinishedPages,
  type TaskStatus,
} from '../observe/taskStatus';
import { describeRunPhase, phaseWord } from '../observe/runPhase';
import { pagesFinishedBy, workerSeen } from '../observe/workerRates';
import { taskFigures, type TaskFigures } from '../observe/taskFigures';

// What the monitor's JSON API returns, read from Redis at each request through the read-models every other view
// uses (status --json's readTaskStatus, the dashboard's readHealth and runRates, the frontier's, the fleet's
// heartbeats): no figure is computed here a second way. Every list is bounded. The only things kept between
// requests are a BullMQ Queue handle per task and, for FAILURES_EVERY_MS, the sample of failed jobs (as the
// dashboard keeps it; read again behind the answers, not in their way), of the newest LIMITS.failureSample failed jobs: the page shows 5 per reason, its counts are the
// run's counters, and reading the dashboard's 2,000 jobs took 2 s with 10,000 kept (bench/monitorScale.mjs).

/** Bounds of every list the API returns. */
export const LIMITS = {
  tasks: 200,
  workers: 500,
  hosts: 50,
  frontierHosts: 50,
  groups: 50,
  pagesPerGroup: 5,
  points: 300,
  active: 50,
  screenshots: 12,
  failureSample: 300,
} as const;
const FAILURES_EVERY_MS = 10_000;

/** A task's figures, each from its one read-model: `status` is exactly what `crawl-studio status --json` prints. */
export interface TaskSummary {
  readonly status: CrawlStatus;
  /**
   * Whether the run is alive (observe/runPhase.ts), in the words `status` and the dashboard use: `word` for the
   * list ("interrupted" for a run whose meta still says running but that no process drives), `text` its sentence.
   */
  readonly phase: { readonly word: string; readonly text: string };
  readonly finished: FinishedPages;
  /** Pages that can still make work ("queue N"), and those waiting for a worker, as every view counts them. */
  readonly queued: number;
  readonly waiting: number;
  readonly queueText: string;
}

export interface WorkerView {
  readonly id: string;
  readonly host: string;
  readonly pid: number;
  readonly tasks: readonly string[];
  readonly concurrency: number;
  readonly pagesDone: number;
  readonly failed: number;
  readonly started: number;
  readonly lastSeen: number;
  readonly lastSeenAgoMs: number;
  /** live: beating; silent: no beat for WORKER_SILENT_AFTER_MS (shown as gone); gone: past WORKER_GONE_AFTER_MS. */
  readonly state: 'live' | 'silent' | 'gone';
  /** What it warns of (WorkerBeat.warnings: a task file that differs from its run's). */
  readonly warnings: readonly string[];
}

export interface TaskDetail extends TaskSummary {
  readonly at: number;
  /**
   * The task's figures as every view shows them (observe/taskFigures.ts): what `crawl-studio status --json` prints
   * under `figures`, computed by the same function from the same reads.
   */
  readonly figures: TaskFigures;
  readonly rates: RunRates;
  /** Pages finished per second and queue depth, per sample of the run's metric history (the newest LIMITS.points). */
  readonly series: {
    readonly t: readonly number[];
    readonly pagesPerSec: readonly number[];
    readonly queueDepth: readonly number[];
  };
  readonly failures: readonly {
    group: string;
    label: string;
    count: number;
    jobs: number;
    pages: HealthSnapshot['failures'][number]['pages'];
  }[];
  readonly skipped: readonly { reason: string; label: string; count: number; urls: readonly string[] }[];
  readonly dropped: readonly { reason: string; count: number }[];
  readonly hosts: HealthSnapshot['hosts'];
  readonly frontier: FrontierByHost;
  readonly workers: readonly WorkerView[];
  /** The pages being fetched now, oldest first (the first LIMITS.active). */
  readonly active: readonly ActivePage[];
  /** The current run's newest screenshots of rendered pages (failures, or every page with `screenshot: always`). */
  readonly screenshots: readonly ScreenshotFacts[];
  /** Rows this run stored and the store's newest items (read at most every 10 s: stored.ts). */
  readonly stored: StoredView;
}

export class MonitorViews {
  private readonly parts: PartitionsByTask;
  /** Per task: the last health read, reused for its failure samples until FAILURES_EVERY_MS passed or the count moved. */
  private readonly previous = new Map<string, { at: number; health: HealthSnapshot }>();
  /** Tasks whose failure sample is being read again (resample). */
  private readonly resampling = new Set<string>();
  /** Each task's store, read at most every 10 s (a database, not Redis). */
  readonly stored: StoredReads;

  constructor(
    private readonly redis: Redis,
    /** Workers silent for longer than this are left out of the default view (they stay in Redis, and in `?all=1`). */
    private readonly hideWorkersAfterMs: number,
  ) {
    this.parts = new PartitionsByTask(redis);
    this.stored = new StoredReads(redis);
  }

  /** The task names this Redis knows, sorted, at most LIMITS.tasks of them; `total` says how many there are. */
  async taskNames(): Promise<{ names: string[]; total: number }> {
    const all = (await this.redis.smembers(TASKS_KEY)).sort();
    return { names: all.slice(0, LIMITS.tasks), total: all.length };
  }

  async isTask(name: string): Promise<boolean> {
    return (await this.redis.sismember(TASKS_KEY, name)) === 1;
  }

  async tasks(): Promise<{ tasks: TaskSummary[]; total: number; limit: number }> {
    const { names, total } = await this.taskNames();
    this.stored.keepOnly(names);
    const tasks = await Promise.all(names.map(async (name) => summaryOf(await readTaskStatus(this.redis, name))));
    return { tasks, total, limit: LIMITS.tasks };
  }

  async task(name: string, now = Date.now()): Promise<TaskDetail> {
    // The monitor samples a running run's history as an open dashboard does (recordSample lets one sampler a
    // second through), so the charts have no gap when no editor watches.
    await recordSample(this.redis, name, now).catch(() => null);
    const prev = this.previous.get(name);
    let health: HealthSnapshot;
    if (!prev) {
      health = await this.readHealth(name, true, null);
      this.previous.set(name, { at: now, health });
    } else {
      // The counts are read now; the failed pages shown are the last sample's while a new one is read behind this
      // answer (every FAILURES_EVERY_MS, or when the failure count moved): no request waits for a sample.
      health = await this.readHealth(name, false, prev.health);
      if (now - prev.at > FAILURES_EVERY_MS || health.stats?.failed !== prev.health.stats?.failed) this.resample(name);
    }
    const beats = await readWorkers(this.redis);
    const run = health.run?.run;
    const [status, frontier, workers, active, screenshots, stored] = await Promise.all([
      readTaskStatus(this.redis, name),
      readFrontierByHost(this.redis, name, LIMITS.frontierHosts),
      this.workers({ all: false, task: name, now, beats }),
      this.parts
        .of(name)
        .queues()
        .then((qs) => readActivePages(this.redis, qs, beats, LIMITS.active)),
      run ? screenshotFacts(this.redis, name, run, LIMITS.screenshots) : [],
      this.stored.read(name, now),
    ]);
    const points = rateSeries(health.history).slice(-LIMITS.points);
    const stats = status.stats;
    const figures = taskFigures(health);
    return {
      ...summaryOf(status),
      at: health.at,
      figures,
      rates: figures.rate,
      series: {
        t: points.map((p) => p.t),
        pagesPerSec: points.map((p) => p.finishedPerSec),
        queueDepth: points.map((p) => p.queueDepth),
      },
      failures: health.failures.slice(0, LIMITS.groups).map((f) => ({
        group: f.group,
        label: describeGroup(f.group),
        count: f.count,
        jobs: f.jobs,
        pages: f.pages.slice(0, LIMITS.pagesPerGroup),
      })),
      skipped: health.skipped.slice(0, LIMITS.groups).map((s) => ({
        reason: s.reason,
        label: describeGroup(s.reason),
        count: s.count,
        urls: s.urls.slice(0, LIMITS.pagesPerGroup),
      })),
      dropped: Object.entries(stats?.dropped ?? {})
        .map(([reason, count]) => ({ reason, count }))
        .sort((a, b) => b.count - a.count)
        .slice(0, LIMITS.groups),
      hosts: health.hosts.slice(0, LIMITS.hosts),
      frontier,
      workers: workers.workers,
      active,
      screenshots,
      stored,
    };
  }

  /** The fleet's workers (of one task, or all), newest beat state first; silent ones past the hiding time left out unless `all`. */
  async workers(o: {
    all: boolean;
    task?: string;
    now?: number;
    beats?: readonly WorkerBeat[];
  }): Promise<{ workers: WorkerView[]; hidden: number; limit: number }> {
    const now = o.now ?? Date.now();
    const beats = (o.beats ?? (await readWorkers(this.redis))).filter((b) => !o.task || b.tasks.includes(o.task));
    const shown = beats.filter((b) => o.all || now - b.lastSeen <= this.hideWorkersAfterMs);
    return {
      workers: shown.slice(0, LIMITS.workers).map((b) => workerView(b, now)),
      hidden: beats.length - shown.length,
      limit: LIMITS.workers,
    };
  }

  private readHealth(name: string, readFailures: boolean, previous: HealthSnapshot | null): Promise<HealthSnapshot> {
    // The charts show the newest LIMITS.points rates: one more sample than that is all the history read needs.
    return readHealth(
      this.parts.of(name),
      { name },
      { readFailures, previous, historyLast: LIMITS.points + 1, failureSample: LIMITS.failureSample },
    );
  }

  /** Reads a task's failure sample again, one read at a time per task, for the next answers. */
  private resample(name: string): void {
    if (this.resampling.has(name)) return;
    this.resampling.add(name);
    void this.readHealth(name, true, null)
      .then((health) => this.previous.set(name, { at: Date.now(), health }))
      .catch(() => undefined)
      .finally(() => this.resampling.delete(name));
  }

  /** Forgets the cached failure samples of a task (after a retry, so the next read shows what is left). */
  forget(task: string): void {
    this.previous.delete(task);
    this.stored.forget(task);
  }

  async close(): Promise<void> {
    await this.parts.close();
  }
}

export function summaryOf(status: TaskStatus): TaskSummary {
  return {
    status,
    phase: { word: phaseWord(status.phase), text: describeRunPhase(status.phase) },
    finished: finishedPages(status.stats),
    queued: queuedJobs(status.counts),
    waiting: waitingPages(status.counts),
    queueText: describeQueue(status.counts),
  };
}

export function workerView(b: WorkerBeat, now: number): WorkerView {
  const { lastSeenAgoMs, state } = workerSeen(b, now);
  return {
    id: b.id,
    host: b.host,
    pid: b.pid,
    tasks: b.tasks,
    concurrency: b.concurrency,
    pagesDone: pagesFinishedBy(b),
    failed: b.failed,
    started: b.started,
    lastSeen: b.lastSeen,
    lastSeenAgoMs,
    state,
    warnings: b.warnings ?? [],
  };
}
