import type { FetchFailure } from './fetcher';

// A page that goes back to the queue without spending an attempt, because nothing it did failed: its session was
// retired under it before its request was sent, or its answer was the block of a session another page had retired
// already, or every session of the pool is waiting out a Retry-After from its host, or its browser was killed for
// another page that hung or crashed it. The processor sets the job aside (BullMQ's moveToDelayed, which leaves its
// attempts as they were) for `afterMs`.
//
// Free retries must not loop forever (a browser that keeps dying with no page to blame): a job sent back more than
// MAX_SENT_BACK times by this process spends an attempt like any retryable failure (`failure`) from then on.

export class SentBack extends Error {
  constructor(
    message: string,
    /** How long the page waits before it is taken again. */
    readonly afterMs: number,
    /** What the page fails with when it may not be sent back again (or where nothing can set it aside). */
    readonly failure: FetchFailure,
  ) {
    super(message);
    this.name = 'SentBack';
  }
}

/** Free sends back of one job in one process before it spends an attempt. */
export const MAX_SENT_BACK = 20;

/** Counts the sends back of each job in this process (a bounded map: the oldest jobs are forgotten first). */
export class SentBackCounter {
  private readonly counts = new Map<string, number>();
  constructor(private readonly capacity = 10_000) {}

  /** Whether the job may be sent back once more, counting this time. */
  allow(jobId: string): boolean {
    const n = (this.counts.get(jobId) ?? 0) + 1;
    this.counts.delete(jobId);
    this.counts.set(jobId, n);
    while (this.counts.size > this.capacity) this.counts.delete(this.counts.keys().next().value!);
    return n <= MAX_SENT_BACK;
  }
}
