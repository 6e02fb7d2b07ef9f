import type { CrawlTask } from '../../core/task/model';
import { describeGroup } from '../../observe/failures';
import { droppedReasons, droppedTotal } from '../../core/task/dropReasons';
import type { HealthSnapshot } from '../../observe/health';
import { taskFigures } from '../../observe/taskFigures';
import { describeRunPhase, phaseWord } from '../../observe/runPhase';
import { rateSeries } from '../../observe/metrics';
import { rateWindowText, skippedJobs } from '../../observe/figures';
import { workerSeen, type WorkerRates } from '../../observe/workerRates';
import type { Counter, DashboardData, RunChanges, Series, WorkerRow } from './protocol';

export { WorkerRates } from '../../observe/workerRates';

// Shapes a health snapshot for the dashboard webview: counters, chart series (downsampled), groups, hosts and
// workers with rates. Pure, so it is tested without a webview.

const MAX_POINTS = 900;

export function downsample(series: Series, max = MAX_POINTS): Series {
  const n = series.t.length;
  if (n <= max) return series;
  const step = n / max;
  const pick = <T>(a: readonly T[], avg: boolean) => {
    const out: T[] = [];
    for (let i = 0; i < max; i++) {
      const from = Math.floor(i * step);
      const to = Math.max(from + 1, Math.floor((i + 1) * step));
      if (!avg) out.push(a[to - 1]!);
      else {
        let s = 0;
        for (let j = from; j < to; j++) s += a[j] as number;
        out.push((s / (to - from)) as T);
      }
    }
    return out;
  };
  return {
    t: pick(series.t, false),
    pages: pick(series.pages, true),
    items: pick(series.items, true),
    depth: pick(series.depth, false),
    discovered: pick(series.discovered, true),
  };
}

/** `localHost`: this machine's name; workers with the same host name run here (started by this window or not). */
export function dashboardData(
  task: CrawlTask,
  h: HealthSnapshot,
  rates: WorkerRates,
  localHost: string,
  screenshots: readonly string[] = [],
  changes: RunChanges | null = null,
): DashboardData {
  // Every figure shown beside another view's comes from the one read-model (observe/taskFigures.ts, issue 32).
  const f = taskFigures(h);
  const { pagesPerSec, itemsPerSec, elapsedMs, basis } = f.rate;
  return {
    task: task.name,
    file: task.file,
    run: h.run
      ? {
          id: h.run.run,
          state: phaseWord(h.phase),
          phase: describeRunPhase(h.phase),
          startedAt: h.run.startedAt,
          finishedAt: h.run.finishedAt,
          elapsedMs,
        }
      : null,
    now: h.at,
    counters: counters(h),
    queue: {
      waiting: f.queue.waiting,
      active: f.queue.active,
      delayed: f.queue.delayed,
      total: f.queue.total,
      text: f.queue.text,
    },
    // A run that is over, stopped or paused has no time left to estimate (issue 32: "running, ETA 49 s at 0.0
    // pages/s" after a Stop): taskFigures says why instead.
    eta: {
      state: f.eta.state,
      seconds: f.eta.seconds,
      completionRate: f.rate.basis === 'recent' ? pagesPerSec : 0,
      discoveryRate: f.eta.discoveredPerSec,
    },
    pagesPerSec,
    itemsPerSec,
    rateBasis: basis,
    rateWindow: rateWindowText(basis, f.rate.windowMs),
    series: seriesOf(h),
    failures: h.failures.map((f) => ({
      group: f.group,
      label: describeGroup(f.group),
      count: f.count,
      jobs: f.jobs,
      urls: f.urls,
    })),
    skipped: h.skipped.map((g) => ({
      group: g.reason,
      label: describeGroup(g.reason),
      count: g.count,
      jobs: 0,
      urls: g.urls,
    })),
    screenshots,
    hosts: h.hosts.map((x) => ({
      host: x.host,
      done: x.done,
      failed: x.failed,
      skipped: x.skipped,
      inFlight: x.inFlight,
      delayMs: x.delayMs,
      crawlDelayMs: x.crawlDelayMs,
      nextInMs: x.nextInMs,
    })),
    workers: h.workers.map((w) => workerRow(w, h.at, rates, localHost)),
    changes: changes && h.run && changes.run === h.run.run ? changes : null,
  };
}

function seriesOf(h: HealthSnapshot): Series {
  const points = rateSeries(h.history);
  return downsample({
    t: points.map((p) => p.t / 1000),
    // Pages finished (fetched, skipped or failed), the pages/s of every view.
    pages: points.map((p) => p.finishedPerSec),
    items: points.map((p) => p.itemsPerSec),
    depth: points.map((p) => p.queueDepth),
    discovered: points.map((p) => p.discoveredPerSec),
  });
}

/** The run's counters, each with its detail: the top reasons of failures and skips. */
function counters(h: HealthSnapshot): Counter[] {
  const s = h.stats;
  if (!s) return [];
  const skippedTotal = skippedJobs(s);
  return [
    {
      label: 'Pages done',
      value: s.done,
      detail:
        [s.nonHtml ? `${s.nonHtml} not HTML` : '', s.unchanged ? `${s.unchanged} unchanged (304)` : '']
          .filter(Boolean)
          .join(' · ') || undefined,
    },
    { label: 'Items', value: s.items, detail: s.problems ? `${s.problems} item problems` : undefined },
    { label: 'Failed', value: s.failed, detail: reasons(s.failures) || undefined },
    { label: 'Skipped', value: skippedTotal + (s.skipped.limit ?? 0), detail: reasons(s.skipped) || undefined },
    {
      label: 'Discovered',
      value: s.enqueued,
      detail: s.duplicates ? `${s.duplicates} duplicate links` : undefined,
    },
    // The run's dropped links by reason, which only the preview showed (issue 32, item 7), in the words of the
    // end message and the CLI (`offsite: 30, depth: 2`); `repeat` is no drop.
    { label: 'Links dropped', value: droppedTotal(s.dropped), detail: droppedReasons(s.dropped) || undefined },
    { label: 'Downloaded', value: s.bytes, detail: 'bytes' },
  ];
}

/** A count per reason, the three largest first ("HTTP 404 3 · timeout 1"). */
function reasons(rec: Readonly<Record<string, number>>): string {
  return Object.entries(rec)
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 3)
    .map(([k, n]) => `${describeGroup(k)} ${n}`)
    .join(' · ');
}

function workerRow(w: HealthSnapshot['workers'][number], at: number, rates: WorkerRates, localHost: string): WorkerRow {
  // Last seen as the Workers view and the monitor say it (observe/workerRates.ts workerSeen).
  const seen = workerSeen(w, at);
  return {
    id: w.id,
    host: w.host,
    pid: w.pid,
    local: w.host === localHost,
    concurrency: w.concurrency,
    processed: w.processed,
    failed: w.failed,
    pagesPerSec: rates.rate(w),
    lastSeenAgoMs: seen.lastSeenAgoMs,
    stale: seen.state !== 'live',
  };
}
