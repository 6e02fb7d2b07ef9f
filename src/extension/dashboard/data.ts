import type { CrawlTask } from '../../core/task/model';
import { describeGroup } from '../../observe/failures';
import { droppedReasons, droppedTotal } from '../../core/task/dropReasons';
import type { HealthSnapshot } from '../../observe/health';
import { WORKER_SILENT_AFTER_MS, type WorkerBeat } from '../../frontier/fleet';
import { runRates } from '../../observe/rates';
import { describeRunPhase, phaseWord } from '../../observe/runPhase';
import { estimateEta, rateSeries } from '../../observe/metrics';
import { describeQueue, queuedJobs, skippedJobs, waitingPages } from '../../observe/figures';
import type { WorkerRates } from '../../observe/workerRates';
import type { DashboardData, RunChanges, Series, WorkerRow } from './protocol';

export { WorkerRates } from '../../observe/workerRates';

// Shapes a health snapshot for the dashboard webview: counters, chart series (downsampled), groups, hosts and
// workers with rates. Pure, so it is tested without a webview.

/** Heartbeats come every 5 s: a worker silent for three of them is shown as gone (the monitor's rule too). */
export const STALE_MS = WORKER_SILENT_AFTER_MS;
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
  return { t: pick(series.t, false), pages: pick(series.pages, true), items: pick(series.items, true), depth: pick(series.depth, false), discovered: pick(series.discovered, true) };
}

/** `localHost`: this machine's name; workers with the same host name run here (started by this window or not). */
export function dashboardData(task: CrawlTask, h: HealthSnapshot, rates: WorkerRates, localHost: string, screenshots: readonly string[] = [], changes: RunChanges | null = null): DashboardData {
  const s = h.stats;
  const points = rateSeries(h.history);
  const series = downsample({
    t: points.map((p) => p.t / 1000),
    // Pages finished (fetched, skipped or failed), the pages/s of every view.
    pages: points.map((p) => p.finishedPerSec),
    items: points.map((p) => p.itemsPerSec),
    depth: points.map((p) => p.queueDepth),
    discovered: points.map((p) => p.discoveredPerSec),
  });
  const { pagesPerSec, itemsPerSec, elapsedMs, basis } = runRates(h);
  const eta = estimateEta(h.history, task.scope.maxPages);
  // A running run with pages to do and no worker taking them (a retry or an enqueue reopened a finished run, the
  // window that drove it closed) has no rate to estimate from: it says so, not "estimating" for ever (issue 32).
  const working = h.workers.some((w) => w.tasks.includes(task.name) && h.at - w.lastSeen <= STALE_MS);
  const idle = h.phase.kind === 'running' && !working && queuedJobs(h.counts) > 0;
  // Interrupted: nobody drives the run (its window reloaded, its `run` was killed): no time left to estimate, and
  // the banner says what resumes it (issue 32, item 2).
  const over = h.phase.kind === 'finished' || h.phase.kind === 'stopped' || h.phase.kind === 'paused' || h.phase.kind === 'interrupted' ? h.phase.kind : idle ? 'no-worker' : null;
  const skippedTotal = s ? skippedJobs(s) : 0;
  const reasons = (rec: Readonly<Record<string, number>>) =>
    Object.entries(rec)
      .filter(([, n]) => n > 0)
      .sort((a, b) => b[1] - a[1])
      .slice(0, 3)
      .map(([k, n]) => `${describeGroup(k)} ${n}`)
      .join(' · ');
  return {
    task: task.name,
    file: task.file,
    run: h.run ? { id: h.run.run, state: phaseWord(h.phase), phase: describeRunPhase(h.phase), startedAt: h.run.startedAt, finishedAt: h.run.finishedAt, elapsedMs } : null,
    now: h.at,
    counters: s
      ? [
          { label: 'Pages done', value: s.done, detail: [s.nonHtml ? `${s.nonHtml} not HTML` : '', s.unchanged ? `${s.unchanged} unchanged (304)` : ''].filter(Boolean).join(' · ') || undefined },
          { label: 'Items', value: s.items, detail: s.problems ? `${s.problems} item problems` : undefined },
          { label: 'Failed', value: s.failed, detail: reasons(s.failures) || undefined },
          { label: 'Skipped', value: skippedTotal + (s.skipped.limit ?? 0), detail: reasons(s.skipped) || undefined },
          { label: 'Discovered', value: s.enqueued, detail: s.duplicates ? `${s.duplicates} duplicate links` : undefined },
          // The run's dropped links by reason, which only the preview showed (issue 32, item 7), in the words of the
          // end message and the CLI (`offsite: 30, depth: 2`); `repeat` is no drop.
          { label: 'Links dropped', value: droppedTotal(s.dropped), detail: droppedReasons(s.dropped) || undefined },
          { label: 'Downloaded', value: s.bytes, detail: 'bytes' },
        ]
      : [],
    queue: { waiting: waitingPages(h.counts), active: h.counts.active, delayed: h.counts.delayed, total: queuedJobs(h.counts), text: describeQueue(h.counts) },
    // A run that is over, stopped or paused has no time left to estimate (issue 32: "running, ETA 49 s at 0.0
    // pages/s" after a Stop).
    eta: over ? { state: over, seconds: null, completionRate: 0, discoveryRate: 0 } : { state: eta.state, seconds: eta.seconds, completionRate: eta.completionRate, discoveryRate: eta.discoveryRate },
    pagesPerSec,
    itemsPerSec,
    rateBasis: basis,
    series,
    failures: h.failures.map((f) => ({ group: f.group, label: describeGroup(f.group), count: f.count, jobs: f.jobs, urls: f.urls })),
    skipped: h.skipped.map((g) => ({ group: g.reason, label: describeGroup(g.reason), count: g.count, jobs: 0, urls: g.urls })),
    screenshots,
    hosts: h.hosts.map((x) => ({ host: x.host, done: x.done, failed: x.failed, skipped: x.skipped, inFlight: x.inFlight, delayMs: x.delayMs, crawlDelayMs: x.crawlDelayMs, nextInMs: x.nextInMs })),
    workers: h.workers.map((w): WorkerRow => {
      const ago = Math.max(0, h.at - w.lastSeen);
      return { id: w.id, host: w.host, pid: w.pid, local: w.host === localHost, concurrency: w.concurrency, processed: w.processed, failed: w.failed, pagesPerSec: rates.rate(w), lastSeenAgoMs: ago, stale: ago > STALE_MS };
    }),
    changes: changes && h.run && changes.run === h.run.run ? changes : null,
  };
}
