import { DelayedError, type Job } from 'bullmq';

// A job that was active in worker processes that died three times (BullMQ counted three stalls for it) is a
// suspect: it may be the page that kills its worker (a page that exhausts memory, a render that takes the process
// down), or it may only have shared the process with that page each time. Before, every page in the process at each
// of a poison page's kills stalled again with it, and a page that was there at its kills too often failed for good
// though nothing was wrong with it: how many did depended on how the jobs happened to spread over the workers, more
// on a loaded machine. So a suspect runs alone in its process: it waits until the process's other jobs are done, and
// jobs that arrive meanwhile step aside (back to the queue, delayed a moment, no attempt spent). BullMQ fails a job
// at its fourth stall (taskWorkers.ts maxStalledCount 3): a page that shared three of a poison page's kills has three
// stalls, then runs alone, where only its own fault can stall it again. By construction, no page fails for another's
// kills. Fewer stalls are not enough to suspect a page: a worker killed from outside (an OOM killer, a deploy) or a
// Redis restarted twice stalls every job in flight, and isolating them all ran the fleet one page at a time for a
// while after each such event.

/** Stalls after which a job runs alone: BullMQ's maxStalledCount (3), the most a job survives, so an innocent one never fails. */
const SUSPECT_STALLS = 3;

/** How long a job that stepped aside for a suspect waits before any worker may take it again. */
const STEP_ASIDE_MS = 500;

/** The jobs running in one worker process: ordinary ones beside each other, or one suspect alone. */
export class SuspectIsolation {
  private ordinary = 0;
  private suspect = false;
  private emptied: (() => void) | null = null;

  /** A processor whose suspect jobs run alone in this process (one instance for every task and partition in it). */
  wrap<D, R>(
    processor: (job: Job<D, R>, token?: string) => Promise<R>,
  ): (job: Job<D, R>, token?: string) => Promise<R> {
    return async (job, token) => {
      // Without a token the job cannot be set aside (a direct call, as in tests): it runs as it comes.
      if (!token) return processor(job, token);
      const isSuspect = job.stalledCounter >= SUSPECT_STALLS;
      if (!(isSuspect ? await this.enterSuspect() : this.enterOrdinary())) {
        await job.moveToDelayed(Date.now() + STEP_ASIDE_MS, token);
        throw new DelayedError();
      }
      try {
        return await processor(job, token);
      } finally {
        if (isSuspect) this.suspect = false;
        else if (--this.ordinary === 0) this.emptied?.();
      }
    };
  }

  /** Whether a suspect is running or waiting to (for the worker's status). */
  isolating(): boolean {
    return this.suspect;
  }

  private enterOrdinary(): boolean {
    if (this.suspect) return false;
    this.ordinary++;
    return true;
  }

  /** Waits until the process's ordinary jobs are done; false when another suspect has the process. */
  private async enterSuspect(): Promise<boolean> {
    if (this.suspect) return false;
    this.suspect = true;
    while (this.ordinary > 0) await new Promise<void>((resolve) => (this.emptied = resolve));
    this.emptied = null;
    return true;
  }
}
