import { setTimeout as delay } from 'node:timers/promises';

// A worker's concurrency is the number of requests it has in flight, as Scrapy's CONCURRENT_REQUESTS is: the load a
// crawl puts on the sites. A page job does more than its request: the host gate and the robots check before it,
// parsing and extraction, discovery, the store's buffer and BullMQ's completion after it, each a Redis round trip
// or a hop to the analysis thread. With one active job per request, every slot stood idle through all of that,
// and a busy worker's requests in flight fell well below its concurrency. So a worker takes more jobs than it has
// requests, as many as keep the requests busy (jobsWanted), and a job holds one of these slots only for its request.

/** Runs a job's request in a slot (FetchSlots.job hands one to each job). */
export type InSlot = <T>(fetch: () => Promise<T>) => Promise<T>;

/** Sleeps for a politeness limit (a host's delay or concurrency, the task's rate): see FetchSlots.job. */
export type PoliteWait = (ms: number) => Promise<void>;

/** Most jobs a worker takes per request slot. Bench, 49,942 pages: 2× gained 5-8% over 1×, 3× no more than 2×. */
const MAX_JOBS_PER_SLOT = 2;

/** Weight of the newest job in the running averages: about the last 20 jobs count. */
const ALPHA = 0.1;

/**
 * A counting semaphore for one task's requests in a worker process (first come, first served), which also says how
 * many jobs the worker should hold to keep its requests busy.
 *
 * By Little's law a worker needs `size × (time a job spends holding a slot + time it spends outside one) / time in a
 * slot` jobs for `size` requests to stay in flight. The time a job waits for a slot is left out: counted, it would
 * make waiting look like work and take ever more jobs. So is the time it waits for politeness: where a host allows
 * fewer requests than the worker makes (4 against 16 by default), jobs queue at the host gate, and more jobs would
 * only queue there too. Where the site is slow, a job is nearly all request, and the
 * worker takes about one job per slot: an extra job there would only wait, hoarded from other workers of the
 * fleet and lost with this one if it died (BullMQ fails a job that stalled too often).
 */
/** One request's answer, for the autoscaler (worker/autoscale.ts): how long it took, and whether it was a 429/503. */
export interface SlotAnswer {
  /** The resize generation the request started in: answers to requests sent at an older size say nothing of this one. */
  readonly generation: number;
  readonly ms: number;
  readonly throttled: boolean;
  /** False for a request that failed without an answer (a timeout, a refused connection). */
  readonly answered: boolean;
}

/** Where FetchSlots reads the time and sleeps for politeness: the real clock, or a test's virtual one. */
export interface SlotClock {
  now(): number;
  delay(ms: number): Promise<void>;
}

const REAL_CLOCK: SlotClock = { now: () => performance.now(), delay: (ms) => delay(ms) };

export class FetchSlots {
  private free: number;
  private current: number;
  private generation = 0;
  /** Slot-milliseconds in use so far, and when that was last brought up to date (the autoscaler's "busy"). */
  private usedMs = 0;
  private usedAt: number;
  private answerListener: ((a: SlotAnswer) => void) | null = null;
  private readonly waiting: (() => void)[] = [];
  private heldMs: number | null = null;
  private outsideMs: number | null = null;
  private wanted: number;
  private listener: ((jobs: number) => void) | null = null;

  constructor(
    size: number,
    private readonly clock: SlotClock = REAL_CLOCK,
  ) {
    if (!Number.isInteger(size) || size < 1)
      throw new RangeError(`fetch slots: size must be a whole number ≥ 1, not ${size}`);
    this.usedAt = clock.now();
    this.current = size;
    this.free = size;
    // The most until jobs have been measured: a site that answers at once needs them from its first pages (a short
    // crawl is over before a slow ramp would end), and where a site is slow the first jobs bring it down to about
    // one per slot within a request's time.
    this.wanted = MAX_JOBS_PER_SLOT * size;
  }

  /** Runs `fetch` in a slot: it starts when one is free and gives the slot back when it settles. */
  /** Requests in flight at most: the worker's concurrency for this task, which the autoscaler may change. */
  get size(): number {
    return this.current;
  }

  async run<T>(fetch: () => Promise<T>): Promise<T> {
    if (this.free > 0) {
      this.touch();
      this.free--;
    } else await new Promise<void>((resolve) => this.waiting.push(resolve));
    const start = this.clock.now();
    const generation = this.generation;
    let throttled = false;
    let answered = true;
    try {
      return await fetch();
    } catch (err) {
      // A FetchFailure carries the HTTP status of an answer, null when there was none (fetcher.ts).
      const status = (err as { status?: unknown } | null)?.status;
      throttled = status === 429 || status === 503;
      answered = typeof status === 'number';
      throw err;
    } finally {
      const ms = this.clock.now() - start;
      this.heldMs = average(this.heldMs, ms);
      this.touch();
      // Handed straight to the next waiter: a slot freed here is never taken by a newcomer ahead of the queue. After a
      // shrink (free below 0) a slot given back is one fewer to give back, not one to hand over.
      const next = this.free >= 0 ? this.waiting.shift() : undefined;
      if (next) next();
      else this.free++;
      this.answerListener?.({ generation, ms, throttled, answered });
    }
  }

  /**
   * Changes how many requests may be in flight (the autoscaler's decision). Growing hands the new slots to waiting
   * jobs at once; shrinking takes slots back as requests in flight end, so none is cut short.
   */
  resize(size: number): void {
    if (!Number.isInteger(size) || size < 1)
      throw new RangeError(`fetch slots: size must be a whole number ≥ 1, not ${size}`);
    if (size === this.current) return;
    this.touch();
    this.free += size - this.current;
    this.current = size;
    this.generation++;
    while (this.free > 0 && this.waiting.length > 0) {
      this.free--;
      this.waiting.shift()!();
    }
    if (this.heldMs === null || this.outsideMs === null) this.setWanted(MAX_JOBS_PER_SLOT * size);
    else this.update();
  }

  /** The resize generation requests start in now (see SlotAnswer). */
  currentGeneration(): number {
    return this.generation;
  }

  /** Slot-milliseconds in use since the slots were made: its growth over a window ÷ (window × size) is how busy they were. */
  usedSlotMs(): number {
    this.touch();
    return this.usedMs;
  }

  /** Called with every request's answer (see SlotAnswer). */
  onAnswer(listener: (a: SlotAnswer) => void): void {
    this.answerListener = listener;
  }

  private touch(): void {
    const now = this.clock.now();
    this.usedMs += Math.max(0, this.current - this.free) * (now - this.usedAt);
    this.usedAt = now;
  }

  /**
   * Runs a whole job, of which `run` is the request: what it spends outside the slot (neither waiting for one nor
   * holding it, nor in a politeness wait) feeds jobsWanted().
   */
  async job<T>(work: (inSlot: InSlot, politeWait: PoliteWait) => Promise<T>): Promise<T> {
    const start = this.clock.now();
    let inSlotCall = 0;
    let waited = 0;
    const inSlot: InSlot = async (fetch) => {
      const t = this.clock.now();
      try {
        return await this.run(fetch);
      } finally {
        inSlotCall += this.clock.now() - t;
      }
    };
    const politeWait: PoliteWait = async (ms) => {
      const t = this.clock.now();
      await this.clock.delay(ms);
      waited += this.clock.now() - t;
    };
    try {
      return await work(inSlot, politeWait);
    } finally {
      // Only jobs that made a request say anything about the ratio (a robots skip, a failed gate do not).
      if (inSlotCall > 0) {
        this.outsideMs = average(this.outsideMs, Math.max(0, this.clock.now() - start - inSlotCall - waited));
        this.update();
      }
    }
  }

  /** Jobs to hold for the requests to stay busy: between `size` and MAX_JOBS_PER_SLOT × `size`. */
  jobsWanted(): number {
    return this.wanted;
  }

  /** Called with jobsWanted() whenever it changes. */
  onJobsWanted(listener: (jobs: number) => void): void {
    this.listener = listener;
  }

  /** Requests in flight now. */
  inUse(): number {
    return Math.max(0, this.current - this.free);
  }

  /** Jobs waiting for a slot. */
  queued(): number {
    return this.waiting.length;
  }

  private update(): void {
    if (this.heldMs === null || this.outsideMs === null) return;
    const perSlot = (this.heldMs + this.outsideMs) / Math.max(this.heldMs, 0.001);
    this.setWanted(
      Math.min(MAX_JOBS_PER_SLOT * this.current, Math.max(this.current, Math.round(this.current * perSlot))),
    );
  }

  private setWanted(jobs: number): void {
    if (jobs === this.wanted) return;
    this.wanted = jobs;
    this.listener?.(jobs);
  }
}

function average(prev: number | null, sample: number): number {
  return prev === null ? sample : prev + ALPHA * (sample - prev);
}
