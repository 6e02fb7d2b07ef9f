// A worker's concurrency is the number of requests it has in flight, as Scrapy's CONCURRENT_REQUESTS is: the load a
// crawl puts on the sites. A page job does more than its request: the host gate and the robots check before it,
// parsing and extraction, discovery, the store's buffer and BullMQ's completion after it, each a Redis round trip
// or a hop to the analysis thread. With one active job per request, every slot stood idle through all of that,
// and a busy worker's requests in flight fell well below its concurrency. So a worker takes more jobs than it has
// requests (jobsInFlight), and a job holds one of these slots only for its request.

/** Active jobs for a concurrency of `requests`: enough that the requests stay busy while other jobs finish. */
export function jobsInFlight(requests: number): number {
  // Measured (bench, 49,942 pages, interleaved A/B): 2× gained 5-8% over 1×, 3× no more than 2×. A job spends
  // about as long outside its request as in it when the site answers at once; a slower site only needs fewer.
  return 2 * requests;
}

/** A counting semaphore for one task's requests in a worker process: first come, first served. */
export class FetchSlots {
  private free: number;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`fetch slots: size must be a whole number ≥ 1, not ${size}`);
    this.free = size;
  }

  /** Runs `fetch` in a slot: it starts when one is free and gives the slot back when it settles. */
  async run<T>(fetch: () => Promise<T>): Promise<T> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      return await fetch();
    } finally {
      // Handed straight to the next waiter: a slot freed here is never taken by a newcomer ahead of the queue.
      const next = this.waiting.shift();
      if (next) next();
      else this.free++;
    }
  }

  /** Requests in flight now. */
  inUse(): number {
    return this.size - this.free;
  }

  /** Jobs waiting for a slot. */
  queued(): number {
    return this.waiting.length;
  }
}
