import type { Job } from 'bullmq';
import type { Log } from '../core/logLine';
import { groupDigits } from '../core/units';
import type { PageJobData, PageJobResult, RunInfo } from '../frontier/types';

// What a worker is doing, in its own log (`crawl-studio worker`, the editor's Workers): a fleet operator with no
// editor read only failures there, and a worker waiting for a run, or idle after one, said nothing at all. As
// Scrapy's LogStats does every minute, a line per task with what this worker did since the last one; and a line
// when a task's run starts, ends, or is not there to work on. Off in the workers a `run` or Start Crawl spawns: their
// driver prints the run's progress itself (`--log-stats 0`). Always on: a warning when this worker's copy of a task
// is not the one its run runs with (core/task/fingerprint.ts), as an old file on another machine of a fleet is.

/** How often the runs' states are read (one HGETALL a task): a run's start is said within this. */
const RUN_POLL_MS = 5_000;

type PageJob = Job<PageJobData, PageJobResult>;

/** What a worker did for a task over some time. */
export interface ActivityCounts {
  /** Pages that ended here: fetched, skipped or failed for good (a retried attempt is not an end). */
  pages: number;
  failed: Record<string, number>;
  skipped: number;
  items: number;
}

function emptyCounts(): ActivityCounts {
  return { pages: 0, failed: {}, skipped: 0, items: 0 };
}

/** A run as the log tells it: none, or its id and state (and, read from Redis, its task's digest). */
export type SeenRun = (Pick<RunInfo, 'run' | 'state'> & Pick<Partial<RunInfo>, 'taskFingerprint'>) | null;

/**
 * "books: 1,234 pages in the last 60 s (20.6/s), 3 failed (http-404: 2, timeout: 1), 4 skipped, 5,432 items; 45,678
 * pages since this worker started". Null when the task had no page end in the window: an idle worker stays quiet.
 */
export function activityLine(task: string, window: ActivityCounts, total: ActivityCounts, ms: number): string | null {
  if (window.pages === 0) return null;
  const seconds = ms / 1000;
  const rate = window.pages / seconds;
  const failed = Object.values(window.failed).reduce((a, b) => a + b, 0);
  const parts = [
    `${task}: ${groupDigits(window.pages)} page${window.pages === 1 ? '' : 's'} in the last ${Math.round(seconds)} s (${rateText(rate)})`,
  ];
  if (failed > 0) {
    const reasons = Object.entries(window.failed)
      .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
      .map(([reason, n]) => `${reason}: ${groupDigits(n)}`);
    parts.push(`${groupDigits(failed)} failed (${reasons.join(', ')})`);
  }
  if (window.skipped > 0) parts.push(`${groupDigits(window.skipped)} skipped`);
  parts.push(`${groupDigits(window.items)} item${window.items === 1 ? '' : 's'}`);
  return `${parts.join(', ')}; ${groupDigits(total.pages)} page${total.pages === 1 ? '' : 's'} since this worker started`;
}

/** 21/s, 2.5/s, or for a slow crawl 12/min rather than 0.2/s. */
function rateText(perSecond: number): string {
  if (perSecond >= 10) return `${Math.round(perSecond)}/s`;
  if (perSecond >= 1) return `${perSecond.toFixed(1)}/s`;
  return `${Math.round(perSecond * 60)}/min`;
}

/**
 * What changed in a task's run between two reads, said once: a run to work on, its end, or none (`first`: the
 * worker's first read, which says "waiting" when there is nothing to take). Null when nothing worth a line changed.
 */
export function runChange(task: string, file: string, before: SeenRun, now: SeenRun, first: boolean): string | null {
  const active = (r: SeenRun) => r !== null && (r.state === 'running' || r.state === 'starting');
  if (active(now) && (!active(before) || before!.run !== now!.run || first))
    return `${task}: run ${now!.run} is running: taking its pages`;
  if (active(now)) return null;
  const waiting = `waiting for a run (\`crawl-studio run ${file}\` or Start Crawl starts one)`;
  if (first) return `${task}: no run in progress on this Redis; ${waiting}`;
  if (active(before))
    return `${task}: run ${before!.run} ${now?.run === before!.run && now.state === 'stopped' ? 'was stopped' : 'ended'}; ${waiting}`;
  return null;
}

/**
 * A worker's copy of a task that is not the one its run runs with (another version of the file on this machine): its
 * pages are fetched and extracted by the copy, so its items may differ from the other workers'. Null when they agree,
 * when the run is not running, or when the run records no digest (a run started by an older version).
 */
export function taskDiffers(task: string, file: string, fingerprint: string, run: SeenRun): string | null {
  if (!run?.taskFingerprint || run.taskFingerprint === fingerprint) return null;
  if (run.state !== 'running' && run.state !== 'starting') return null;
  return `${task}: this worker's task file (${file}) differs from the one run ${run.run} runs with (its rules, selectors or settings are not the same): the pages it takes are fetched and extracted by its copy. Give every worker the same file, then restart this one.`;
}

interface TaskActivity {
  readonly name: string;
  readonly file: string;
  readonly fingerprint: string;
  /** The run and digest a difference was said for: once each. */
  differs: string | null;
  /** The difference as of the last read of the run (the heartbeat carries it), or null. */
  differsNow: string | null;
  window: ActivityCounts;
  readonly total: ActivityCounts;
  seen: SeenRun;
  read: boolean;
}

export interface ActivityLogOptions {
  readonly tasks: readonly { readonly name: string; readonly file: string; readonly fingerprint: string }[];
  readonly log: Log;
  /**
   * How often the activity lines are written; 0: never, nor the runs' starts and ends (a `run`'s own workers). A
   * task that differs from its run's is said either way.
   */
  readonly everyMs: number;
  /** The task's current run (frontier/partitions.ts readRun). */
  readonly readRun: (task: string) => Promise<SeenRun>;
}

/** Told of every job's end (as metrics.ts is); writes the lines above on its timers. */
export class ActivityLog {
  private readonly tasks = new Map<string, TaskActivity>();
  private windowStart = Date.now();
  private timers: NodeJS.Timeout[] = [];
  private reading = false;

  constructor(private readonly o: ActivityLogOptions) {
    for (const t of o.tasks)
      this.tasks.set(t.name, {
        name: t.name,
        file: t.file,
        fingerprint: t.fingerprint,
        differs: null,
        differsNow: null,
        window: emptyCounts(),
        total: emptyCounts(),
        seen: null,
        read: false,
      });
  }

  completed(task: string, job: PageJob, result: PageJobResult | undefined): void {
    this.count(task, job, (c) => {
      c.pages++;
      if (result?.outcome === 'skipped') c.skipped++;
      c.items += result?.items ?? 0;
    });
  }

  failed(task: string, job: PageJob, reason: string, final: boolean): void {
    if (!final) return;
    this.count(task, job, (c) => {
      c.pages++;
      c.failed[reason] = (c.failed[reason] ?? 0) + 1;
    });
  }

  /** What the heartbeat says this worker warns of now. */
  warnings(): string[] {
    return [...this.tasks.values()].flatMap((t) => (t.differsNow ? [t.differsNow] : []));
  }

  start(): void {
    void this.readRuns();
    this.timers = [setInterval(() => void this.readRuns(), RUN_POLL_MS)];
    if (this.o.everyMs > 0) this.timers.push(setInterval(() => this.writeActivity(Date.now()), this.o.everyMs));
    for (const t of this.timers) t.unref();
  }

  stop(): void {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
  }

  /** The window's lines, then a new window. */
  writeActivity(now: number): void {
    if (this.o.everyMs <= 0) return;
    const ms = Math.max(1, now - this.windowStart);
    this.windowStart = now;
    for (const t of this.tasks.values()) {
      const line = activityLine(t.name, t.window, t.total, ms);
      if (line)
        this.o.log('info', line, {
          event: 'worker-activity',
          task: t.name,
          pages: t.window.pages,
          failed: Object.values(t.window.failed).reduce((a, b) => a + b, 0),
          skipped: t.window.skipped,
          items: t.window.items,
        });
      t.window = emptyCounts();
    }
  }

  private count(task: string, job: PageJob, add: (c: ActivityCounts) => void): void {
    const t = this.tasks.get(task);
    if (!t) return;
    // A page of a run this log has not said yet: said now, not at the next read of the runs, after its pages.
    const run = job.data?.run;
    if (run && t.read && t.seen?.run !== run) this.seeRun(t, { run, state: 'running' });
    add(t.window);
    add(t.total);
  }

  private seeRun(t: TaskActivity, now: SeenRun): void {
    const line = runChange(t.name, t.file, t.seen, now, !t.read);
    t.seen = now;
    t.read = true;
    if (line && this.o.everyMs > 0)
      this.o.log('info', line, { event: 'worker-run', task: t.name, ...(now ? { run: now.run } : {}) });
    const differs = taskDiffers(t.name, t.file, t.fingerprint, now);
    // A page of a run not read yet (no digest) leaves the last read's word standing.
    if (now?.taskFingerprint !== undefined || now === null) t.differsNow = differs;
    if (differs && t.differs !== `${now!.run}:${now!.taskFingerprint}`) {
      t.differs = `${now!.run}:${now!.taskFingerprint}`;
      this.o.log('warn', differs, { event: 'task-differs', task: t.name, run: now!.run });
    }
  }

  private async readRuns(): Promise<void> {
    // One read at a time: while Redis is away a read waits for the reconnect, and a read every 5 s would queue up.
    if (this.reading) return;
    this.reading = true;
    try {
      for (const t of this.tasks.values()) {
        // A read that fails is left for the next: the connection's own lines say why.
        const now = await this.o.readRun(t.name).catch(() => undefined);
        if (now !== undefined) this.seeRun(t, now);
      }
    } finally {
      this.reading = false;
    }
  }
}
