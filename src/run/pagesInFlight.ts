import type { Redis } from '../redis/connect';
import type { RunInfo } from '../frontier/types';
import { hostname } from 'node:os';
import { readWorkersTaking, type WorkerBeat } from '../frontier/fleet';
import { readTaskStatus } from '../observe/taskStatus';

// A stopped run is closed in the store (session.ts closeStopped) with the counts of what it saw change. Its local
// workers are waited for before that; workers of other processes (`crawl-studio worker` on other machines) may still
// be fetching a page of it. A page they finish after the close was stored later, by the task's next writer, with
// change rows the closed counts left out. So the close waits for them too, bounded: a worker that died holding a
// page never finishes it, and its job stays active until a live worker's stalled check moves it.

/** How long at most: BullMQ's default lock duration, what a fleet worker's lock lasts unless it was given another. */
export const IN_FLIGHT_BOUND_MS = 30_000;

/** What the wait needs: the task's pages in flight now, and a pause. */
export interface InFlightProbe {
  /** Pages active on any worker of the task (TaskStatus.counts.active). */
  readonly active: () => Promise<number>;
  readonly sleep: (ms: number) => Promise<void>;
  readonly now?: () => number;
}

/**
 * Resolves once no page of the task is active, or after `boundMs` (IN_FLIGHT_BOUND_MS by default; then with the pages still active). `onWaiting`
 * is told once, when there is something to wait for, so the user knows why the stop is not immediate.
 */
export async function waitForPagesInFlight(
  probe: InFlightProbe,
  opts: { readonly boundMs?: number; readonly pollMs: number; readonly onWaiting?: (pages: number) => void },
): Promise<number> {
  const now = probe.now ?? Date.now;
  const deadline = now() + (opts.boundMs ?? IN_FLIGHT_BOUND_MS);
  let told = false;
  for (;;) {
    const active = await probe.active();
    if (active === 0 || now() >= deadline) return active;
    if (!told) opts.onWaiting?.(active);
    told = true;
    await probe.sleep(Math.min(opts.pollMs, Math.max(0, deadline - now())));
  }
}

/**
 * waitForPagesInFlight on the task's queue, while `run` is the task's run and stopped (a Start since ends the wait),
 * and while a live worker of another process takes the task's pages. This process's own workers were waited for, or
 * killed (a cancelled Stop): a killed one's page stays active until its lock expires, and nobody will finish it.
 */
export function waitForStoppedRunPages(
  redis: Redis,
  task: string,
  run: RunInfo,
  opts: { readonly pollMs: number; readonly onWaiting?: (pages: number) => void },
): Promise<number> {
  const me = { pid: process.pid, host: hostname() };
  const mine = (w: WorkerBeat) => w.parent?.pid === me.pid && w.parent.host === me.host;
  const active = async () => {
    const s = await readTaskStatus(redis, task);
    if (s.run?.run !== run.run || s.run.state !== 'stopped' || s.counts.active === 0) return 0;
    return (await readWorkersTaking(redis, task)).some((w) => !mine(w)) ? s.counts.active : 0;
  };
  const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
  return waitForPagesInFlight({ active, sleep }, opts);
}
