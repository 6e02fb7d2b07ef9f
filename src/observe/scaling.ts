import type { Redis } from '../redis/connect';
import { readLiveWorkers, readProcessScale, type AutoscaleBeat, type ProcessScaleRecord } from '../frontier/fleet';

// What the views show of autoscaling (issue 36): each live worker's concurrency now and, for one that sizes itself,
// its range, its peak and its last decision with the reason; and the local worker processes' last scaling decision.
// One read-model for `status`, the monitor and the dashboard, so they say the same words.

export interface WorkerScaling {
  readonly id: string;
  readonly concurrency: number;
  readonly loopBusy: number | null;
  readonly autoscale: AutoscaleBeat | null;
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
    }));
  return { workers, processes };
}

/** The lines `status` prints: one per live worker, its last decision under it, and the processes' decision. */
export function scalingLines(s: TaskScaling, now: number): string[] {
  const lines: string[] = [];
  if (s.workers.length > 0)
    lines.push(
      `workers: ${s.workers.length} live, ${s.workers.reduce((n, w) => n + w.concurrency, 0)} request(s) in flight at most`,
    );
  for (const w of s.workers) {
    const range = w.autoscale ? ` (autoscaled ${w.autoscale.min}..${w.autoscale.max}, peak ${w.autoscale.peak})` : '';
    const busy = w.loopBusy !== null ? `, event loop ${Math.round(w.loopBusy * 100)}% busy` : '';
    lines.push(`  ${w.id}: concurrency ${w.concurrency}${range}${busy}`);
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
