import type { Redis } from '../redis/connect';
import { readLiveWorkers } from './fleet';
import { isRedisFull, REDIS_FULL_MARK } from '../redis/memory';

// The window: the pages of the frontier that are BullMQ jobs at a time. It is sized to the fleet, so BullMQ holds
// what the workers are about to work on and the frontier holds the rest compactly. A worker holds up to two jobs per
// request slot (worker/fetchSlots.ts); one more per slot waits in BullMQ so a worker that finishes a job finds the
// next without waiting for a fill.

/** Pages the window holds per request slot of the live workers (delayed jobs aside: lua/frontier.lua fInWindow). */
export const WINDOW_PER_REQUEST = 3;

/**
 * How long a process that took pages from the frontier may take to add their jobs before a fill hands them out again
 * (lua/frontier.lua fRecover). Short: a worker killed in between holds its pages back that long (and a crawl's end
 * with them). Handing out a page whose adder was only slow costs nothing: both add the same job id, the second add is
 * a no-op, and a lease that runs out on a job that exists is simply dropped.
 */
export const WINDOW_LEASE_MS = 5_000;

/** How many pages the window should hold now; 0 when no worker would take them. */
export type WindowTarget = () => Promise<number>;

/**
 * The window the live workers of `task` call for (their heartbeats, frontier/fleet.ts), read at most every `ttlMs`.
 * Without a live worker it is 0: pages stay in the frontier until one comes, and its own fills move them.
 */
export function fleetWindow(redis: Redis, task: string, ttlMs = 2_000): WindowTarget {
  let value = 0;
  let at = -Infinity;
  let reading: Promise<number> | null = null;
  return () => {
    if (Date.now() - at < ttlMs) return Promise.resolve(value);
    reading ??= readLiveWorkers(redis)
      .then((workers) => {
        value =
          WINDOW_PER_REQUEST * workers.filter((w) => w.tasks.includes(task)).reduce((n, w) => n + w.concurrency, 0);
        at = Date.now();
        return value;
      })
      .finally(() => (reading = null));
    return reading;
  };
}

/** What one fill did: pages added as jobs, and when to look again (see lua/fill.lua's `next`). */
export interface FillResult {
  readonly added: number;
  /** -3: the window is full; -1: no host waits to give a page; else ms until one may. */
  readonly next: number;
}

/** Most time between two fills of an idle worker: how soon it notices pages queued by another process. */
const IDLE_MS = 1_000;
/** Least time between two fills: hosts that become ready within this are taken together. */
const MIN_MS = 5;
/** A full window is looked at again after this; pages finishing fill it meanwhile (pageDone). */
const FULL_MS = 200;
/** Transit records of jobs that ended without settling are looked for this often (lua/frontier.lua fReconcile). */
const RECONCILE_MS = 10_000;

/**
 * A worker's fill loop for one task. Most fills happen where a page ends (pageDone, settle, discover fill the window
 * in the same call); this loop covers the rest: hosts whose delay has passed while no page ended, pages queued by
 * another process (`enqueue`), a window that grew with the fleet, pages whose taker died before adding their jobs.
 */
export class WindowFiller {
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private reconcileAt = Date.now() + RECONCILE_MS;
  private running: Promise<void> | null = null;

  constructor(
    private readonly fill: (reconcile: boolean) => Promise<FillResult>,
    private readonly log: (level: 'info' | 'warn' | 'error', message: string) => void,
  ) {}

  start(): void {
    this.schedule(0);
  }

  /** Fills now (the worker has room for jobs), unless a fill is under way. */
  poke(): void {
    if (!this.running && !this.stopped) this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.running = this.tick().finally(() => (this.running = null));
    }, ms);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    let wait = IDLE_MS;
    try {
      const reconcile = Date.now() >= this.reconcileAt;
      if (reconcile) this.reconcileAt = Date.now() + RECONCILE_MS;
      const r = await this.fill(reconcile);
      wait = r.next === -3 ? FULL_MS : r.next < 0 ? IDLE_MS : Math.min(IDLE_MS, Math.max(MIN_MS, r.next));
    } catch (err) {
      this.log(
        isRedisFull(err) ? 'error' : 'warn',
        `${isRedisFull(err) ? `${REDIS_FULL_MARK}: ` : ''}filling the window from the frontier: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
    this.schedule(wait);
  }
}
