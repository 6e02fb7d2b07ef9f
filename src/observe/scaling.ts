import type { Redis } from '../redis/connect';
import { readLiveWorkers, readProcessScale, type AutoscaleBeat, type ProcessScaleRecord } from '../frontier/fleet';
import { workerSeen } from './workerRates';

// What the views show of autoscaling (issue 36): each live worker's concurrency now and, for one that sizes itself,
// its range, its peak and its last decision with the reason; and the local worker processes' last scaling decision.
// One read-model for `status`, the monitor and the dashboard, so they say the same words.

export interface WorkerScaling {
  readonly id: string;
  readonly concurrency: number;
  readonly loopBusy: number | null;
  readonly autoscale: AutoscaleBeat | null;
  /** Its last heartbeat (ms since the epoch): a worker silent for three beats is shown as gone, as in the monitor. */
  readonly lastSeen: number;
  /** What it warns of (a task file that differs from its run's), as its heartbeat says. */
  readonly warnings: readonly string[];
}

export interface TaskScaling {
  readonly workers: readonly WorkerScaling[];
  readonly processes: ProcessScaleRecord | null;
}

export async function readTaskScaling(redis: Redis, task: string): Promise<TaskScaling> {
  const [beats, processes] = await Promise.all([readLiveWorkers(redis), readProcessScale(redis, task)]);
  const workers = beats
    .filter((b) => b.tasks.includes(task))
    .map((b) => ({
      id: b.id,
      concurrency: b.concurrency,
      loopBusy: typeof b.loopBusy === 'number' ? b.loopBusy : null,
      autoscale: b.autoscale ?? null,
      lastSeen: b.lastSeen,
      warnings: b.warnings ?? [],
    }));
  return { workers, processes };
}

/**
 * The lines `status` prints: one per worker, its last decision under it, and the processes' decision. A worker silent
 * for three heartbeats (killed, or its machine gone) is "gone (silent)", as the monitor and the Workers view say; it
 * is not counted live, nor its requests in flight.
 */
export function scalingLines(s: TaskScaling, now: number): string[] {
  const lines: string[] = [];
  const seen = new Map(s.workers.map((w) => [w.id, workerSeen(w, now)]));
  const live = s.workers.filter((w) => seen.get(w.id)?.state === 'live');
  const silent = s.workers.length - live.length;
  if (s.workers.length > 0)
    lines.push(
      `workers: ${live.length} live, ${live.reduce((n, w) => n + w.concurrency, 0)} request(s) in flight at most${silent > 0 ? `; ${silent} gone (silent)` : ''}`,
    );
  for (const w of s.workers) {
    const seenNow = seen.get(w.id);
    if (seenNow && seenNow.state !== 'live') {
      lines.push(`  ${w.id}: gone (silent), last seen ${ago(seenNow.lastSeenAgoMs)}; concurrency was ${w.concurrency}`);
      continue;
    }
    const range = w.autoscale ? ` (autoscaled ${w.autoscale.min}..${w.autoscale.max}, peak ${w.autoscale.peak})` : '';
    const busy = w.loopBusy !== null ? `, event loop ${Math.round(w.loopBusy * 100)}% busy` : '';
    lines.push(`  ${w.id}: concurrency ${w.concurrency}${range}${busy}`);
    for (const warning of w.warnings) lines.push(`    warning: ${warning}`);
    if (w.autoscale?.last) lines.push(`    last change ${ago(now - w.autoscale.last.at)}: ${w.autoscale.last.reason}`);
    if (w.autoscale?.now && w.autoscale.now !== w.autoscale.last?.reason) lines.push(`    now: ${w.autoscale.now}`);
  }
  if (s.processes)
    lines.push(
      `local worker processes ${s.processes.min}..${s.processes.max}, last change ${ago(now - s.processes.at)}: ${s.processes.reason}`,
    );
  return lines;
}

function ago(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  return s < 120 ? `${s} s ago` : `${Math.round(s / 60)} min ago`;
}
