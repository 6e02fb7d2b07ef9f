import type { WorkerBeat } from '../frontier/fleet';

// Each worker's rate, for the Workers view and the dashboard alike (they kept one calculation each). A worker
// counts the pages it finished as the task's counters do: fetched or skipped (BullMQ's "completed") and failed for
// good, so the workers' rates add up to the status bar's pages/s (see taskStatus.ts) instead of leaving out the
// failures (a worker whose pages all failed showed "0.0 jobs/s").

/** Pages a worker finished since it started, as its heartbeat says. */
export function pagesFinishedBy(beat: Pick<WorkerBeat, 'processed' | 'failed'>): number {
  return beat.processed + beat.failed;
}

export class WorkerRates {
  private readonly last = new Map<string, { total: number; at: number; rate: number | null }>();

  /** Pages/s between the two most recent distinct heartbeats of the worker; null until it beat twice. */
  rate(w: WorkerBeat): number | null {
    const total = pagesFinishedBy(w);
    const prev = this.last.get(w.id);
    if (!prev) {
      this.last.set(w.id, { total, at: w.lastSeen, rate: null });
      return null;
    }
    if (w.lastSeen > prev.at) {
      const rate = Math.max(0, total - prev.total) / ((w.lastSeen - prev.at) / 1000);
      this.last.set(w.id, { total, at: w.lastSeen, rate });
      return rate;
    }
    return prev.rate;
  }

  /** Forgets workers no longer listed. */
  keep(ids: Iterable<string>): void {
    const live = new Set(ids);
    for (const id of this.last.keys()) if (!live.has(id)) this.last.delete(id);
  }
}
