import type { Redis } from '../redis/connect';
import { isOverLimit, readMemory, REDIS_FULL_MARK, RedisFullError } from '../redis/memory';

// Whether the run's Redis is full (issue 35, item 2), for its driver: a worker said it refused a write (its log line
// carries REDIS_FULL_MARK), the driver's own write was refused, or INFO memory shows it over its maxmemory with the
// policy noeviction. Going on would only pile up pages that cannot finish, so the driver ends the run with the error.

/** How often the driver reads Redis's INFO memory to see it full. */
const MEMORY_CHECK_MS = 500;

export class RedisRoom {
  /** Who saw it full first ('worker 4242', 'the driver'), or null while nobody has. */
  private seenBy: string | null = null;
  private readAt = 0;

  constructor(
    private readonly redis: Redis,
    private readonly task: string,
  ) {}

  get full(): boolean {
    return this.seenBy !== null;
  }

  /** A worker's log line: true when it says the worker's write was refused for lack of memory (the first one). */
  workerLine(pid: number, line: string): boolean {
    if (this.seenBy !== null || !line.includes(REDIS_FULL_MARK)) return false;
    this.seenBy = `worker ${pid}`;
    return true;
  }

  /** Throws the RedisFullError once full; reads INFO memory at most every MEMORY_CHECK_MS (a fast crawl polls every 25 ms). */
  async check(): Promise<void> {
    if (this.seenBy === null) {
      if (Date.now() - this.readAt < MEMORY_CHECK_MS) return;
      this.readAt = Date.now();
      const memory = await readMemory(this.redis).catch(() => null);
      if (!memory || !isOverLimit(memory)) return;
      this.seenBy = 'the driver (INFO memory)';
    }
    throw await this.error();
  }

  /** The error the run ends with, naming who saw it full and the memory figures as Redis gives them now. */
  async error(seenBy = 'the driver'): Promise<RedisFullError> {
    this.seenBy ??= seenBy;
    const memory = await readMemory(this.redis).catch(() => null);
    return new RedisFullError(memory, this.seenBy, this.task);
  }
}
