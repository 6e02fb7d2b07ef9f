import { Job, type Worker } from 'bullmq';
import type { Log } from '../core/logLine';
import type { Redis } from '../redis/connect';
import { throughCuts } from '../redis/cuts';

// Jobs Redis handed to this worker in answers lost with its connection, given back to the queue.
//
// BullMQ takes a job for a worker in a script that locks it with one of the worker's tokens ("<worker id>:<n>") and
// answers with the job: moveToActive, or moveToFinished, which finishes one job and takes the next. When the
// connection drops after Redis ran such a script and before its answer arrived (a Sentinel failover, a cut
// connection), ioredis sends the script again once it has reconnected, and the first job taken is never heard of:
// it stays in the active list, locked by this worker, until the lock expires (lockDuration, 30 s) and a stalled
// check gives it back with a stall counted against the page (three fail it). test/integration/connectionCut.test.ts
// saw crawls of 5-10 s wait ~30 s for such jobs.
//
// After each reconnect, this looks at the active jobs twice, a moment apart, while the worker's connection stays up:
// a job locked by this worker that its processor never started, under the same token both times, was lost on the
// way (over a connection that is up, a job reaches the processor within a few round trips). BullMQ's own moveToWait
// gives it back only while that token still holds its lock, so a job whose lock has moved on since is left alone.

/** What of a BullMQ Worker this needs: its id, its keys, and its queue to read a job from. */
type QueueOfJobs = Pick<Worker, 'id' | 'toKey'> & Parameters<typeof Job.fromId>[0];

/** The events of a Worker's connection this follows (an ioredis Redis or Cluster). */
interface Connection {
  on(event: 'close' | 'ready', listener: () => void): unknown;
}

/** Jobs started and not ended that are remembered: far more than a worker's concurrency. */
const MAX_STARTED = 100_000;

/** Between the two looks at the active jobs. */
const SETTLE_MS = 2_000;

export class LostJobs {
  /** Jobs this worker's processor started and BullMQ has not ended (completed or failed) yet. */
  private readonly started_ = new Set<string>();
  private looking: Promise<string[]> | undefined;
  /** Times the worker's connection closed: a look across a close proves nothing (the next 'ready' looks again). */
  private closes = 0;

  constructor(
    private readonly redis: Redis,
    private readonly log: Log,
    private readonly task: string,
    private readonly settleMs = SETTLE_MS,
  ) {}

  started(jobId: string): void {
    this.started_.add(jobId);
    // A job whose end BullMQ never told (its finish failed) stays: the oldest go first, long ended by then.
    if (this.started_.size > MAX_STARTED) this.started_.delete(this.started_.values().next().value!);
  }

  /** BullMQ ended the job (its 'completed' or 'failed' event). */
  ended(jobId: string): void {
    this.started_.delete(jobId);
  }

  /** Gives back, after each time `connection` came back, the jobs `worker` was handed and never heard of. */
  watch(worker: QueueOfJobs, connection: Connection): void {
    connection.on('close', () => this.closes++);
    connection.on('ready', () => {
      if (this.closes > 0) void this.afterReconnect(worker).catch(() => undefined);
    });
  }

  /** Gives back the jobs `worker` was handed and never heard of; returns their ids. */
  afterReconnect(worker: QueueOfJobs): Promise<string[]> {
    // One look at a time: reconnects in a burst are one loss.
    this.looking ??= this.giveBackLost(worker).finally(() => (this.looking = undefined));
    return this.looking;
  }

  /** Looks until a pair of looks was not crossed by a close of the connection: a close may have lost more. */
  private async giveBackLost(worker: QueueOfJobs): Promise<string[]> {
    const given: string[] = [];
    for (;;) {
      const closes = this.closes;
      const first = await this.unstarted(worker);
      if (first.size > 0) {
        await new Promise((r) => setTimeout(r, this.settleMs));
        const second = await this.unstarted(worker);
        if (this.closes === closes) given.push(...(await this.giveBack(worker, first, second)));
      }
      if (this.closes === closes) break;
    }
    if (given.length)
      this.log(
        'warn',
        `gave back ${given.length === 1 ? `job ${given[0]}` : `${given.length} jobs (${given.join(', ')})`} to the queue: Redis handed ${given.length === 1 ? 'it' : 'them'} to this worker in an answer lost with its connection`,
        { event: 'jobs-given-back', task: this.task, jobs: given.join(' ') },
      );
    return given;
  }

  /** Gives back the jobs unstarted at both looks under the same token; returns those given back. */
  private async giveBack(
    worker: QueueOfJobs,
    first: ReadonlyMap<string, string>,
    second: ReadonlyMap<string, string>,
  ): Promise<string[]> {
    const given: string[] = [];
    for (const [id, token] of second) {
      if (first.get(id) !== token || this.started_.has(id)) continue;
      try {
        const job = await throughCuts(() => Job.fromId(worker, id), ignore);
        // Sent again when cut short: run twice, the second finds the lock gone and throws, the job given back.
        if (job) await throughCuts(() => job.moveToWait(token), ignore);
        given.push(id);
      } catch {
        // Its lock expired or moved on since: not this worker's to give back any more.
      }
    }
    return given;
  }

  /** Active jobs locked by one of `worker`'s tokens that its processor has not started, with their tokens. */
  private async unstarted(worker: QueueOfJobs): Promise<Map<string, string>> {
    // Read again when cut short: the connections come back in the same storm this is looking at.
    const active = (await throughCuts(() => this.redis.lrange(worker.toKey('active'), 0, -1), ignore)).filter(
      (id) => !this.started_.has(id),
    );
    const locks = await throughCuts(
      () => Promise.all(active.map((id) => this.redis.get(`${worker.toKey(id)}:lock`))),
      ignore,
    );
    const mine = new Map<string, string>();
    active.forEach((id, i) => {
      const lock = locks[i];
      if (lock?.startsWith(`${worker.id}:`) && !this.started_.has(id)) mine.set(id, lock);
    });
    return mine;
  }
}

function ignore(): void {}
