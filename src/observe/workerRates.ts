import { isWorkerGone, WORKER_SILENT_AFTER_MS, type WorkerBeat } from '../frontier/fleet';

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

/** A worker's rate's window in words, for every label of it (the task's rate is over figures.ts RATE_WINDOW_MS). */
export const WORKER_RATE_WINDOW = 'between its last two heartbeats';

/**
 * When a worker was last heard of, and what that makes it, the same in the Workers view, the dashboard and the
 * monitor (issue 32: "seen 11 s ago" in one view beside "1m0s" in another, a tree item never re-drawn).
 * live: beating; silent: no beat for WORKER_SILENT_AFTER_MS (shown as gone); gone: past WORKER_GONE_AFTER_MS.
 */
export function workerSeen(
  beat: Pick<WorkerBeat, 'lastSeen'>,
  now: number,
): { readonly lastSeenAgoMs: number; readonly state: 'live' | 'silent' | 'gone' } {
  const ago = Math.max(0, now - beat.lastSeen);
  return {
    lastSeenAgoMs: ago,
    state: isWorkerGone(beat, now) ? 'gone' : ago > WORKER_SILENT_AFTER_MS ? 'silent' : 'live',
  };
}
