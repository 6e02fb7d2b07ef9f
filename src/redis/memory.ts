import type { Redis } from './connect';

// Redis out of memory (issue 35, item 2). With `maxmemory` set and the policy `noeviction`, Redis refuses writes
// once it is full: a command answers `-OOM command not allowed when used memory > 'maxmemory'`, a script fails at
// its first write, and a MULTI whose queued commands were refused answers `EXECABORT`. Those replies used to be
// treated as passing errors: pages failed with EXECABORT, links were lost, the writer spun and the run stayed
// "running". They are one condition with one message, wherever it is seen (a worker, the writer, the driver).

/** The mark a worker prints when Redis refuses its writes: the driver reads its workers' lines for it. */
export const REDIS_FULL_MARK = 'Redis is full (maxmemory)';

const OOM = /\bOOM command not allowed\b|^OOM\b/;

/** Whether an error is Redis refusing a write for lack of memory (an OOM reply, or a transaction discarded for one). */
export function isRedisFull(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (OOM.test(err.message)) return true;
  if (!err.message.startsWith('EXECABORT')) return false;
  // ioredis attaches the replies of the refused commands; without them an EXECABORT is taken for what it is here.
  const previous = (err as { previousErrors?: unknown[] }).previousErrors;
  return !previous || previous.length === 0 || previous.some((e) => e instanceof Error && OOM.test(e.message));
}

/** Redis's memory as INFO memory says it: what is used, the limit (0: none) and the policy at the limit. */
export interface RedisMemory {
  readonly used: number;
  readonly max: number;
  readonly policy: string;
}

export async function readMemory(redis: Pick<Redis, 'info'>): Promise<RedisMemory> {
  const info = await redis.info('memory');
  const field = (name: string) => new RegExp(`^${name}:(\\S+)`, 'm').exec(info)?.[1] ?? '';
  return {
    used: Number(field('used_memory')) || 0,
    max: Number(field('maxmemory')) || 0,
    policy: field('maxmemory_policy') || 'noeviction',
  };
}

/**
 * What a crawl is told about a Redis whose policy deletes keys at its limit, or null. A crawl's queue, seen links,
 * counters and locks are keys, so an evicting Redis loses pages (or fetches them twice) without a word where a
 * `noeviction` one refuses writes and the run stops saying so (RedisFullError). Without a limit nothing is evicted.
 * BullMQ's own "IMPORTANT! Eviction policy is …" said less, and twice (quietBullmqEviction).
 */
export function evictionRisk(target: string, m: RedisMemory): string | null {
  if (m.policy === 'noeviction' || m.max === 0) return null;
  const which = m.policy.startsWith('volatile')
    ? "keys that expire (a page's lock, a run's lease: the page then runs twice, the run looks abandoned)"
    : "any key (a crawl's queue, its seen links, its counters: pages are lost or fetched twice)";
  return (
    `${target} has maxmemory-policy ${m.policy}: once it holds maxmemory (${formatBytes(m.max)}, ${formatBytes(m.used)} ` +
    `used now) it deletes ${which}, without a word. Set maxmemory-policy noeviction (redis-cli CONFIG SET ` +
    `maxmemory-policy noeviction, or a managed Redis's parameter group): a full Redis then refuses writes and the ` +
    `run stops saying so, resumable.`
  );
}

/** Over its limit, Redis refuses every write that may grow its memory. */
export function isOverLimit(m: RedisMemory): boolean {
  return m.max > 0 && m.used > m.max && m.policy === 'noeviction';
}

export function formatBytes(n: number): string {
  if (n >= 1024 * 1024) return `${(n / (1024 * 1024)).toFixed(1)} MB`;
  if (n >= 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${n} B`;
}

/** Redis refused the crawl's writes for lack of memory: the run stopped, resumable once Redis has room. */
export class RedisFullError extends Error {
  constructor(
    readonly memory: RedisMemory | null,
    readonly where: string,
    readonly task: string,
  ) {
    const figures =
      memory && memory.max > 0
        ? `used_memory ${formatBytes(memory.used)} of maxmemory ${formatBytes(memory.max)}, policy ${memory.policy}`
        : 'its maxmemory limit';
    super(
      `Redis is full: it refused the crawl's writes (OOM, ${figures}; first seen by ${where}). The run of task '${task}' stopped ` +
        `and stays resumable: pages being finished were not completed, and links whose discovery Redis refused are found ` +
        `again when their page is fetched again on resume. Give Redis more memory (redis-cli CONFIG SET maxmemory <bytes>, or ` +
        `maxmemory in redis.conf; 0 means no limit), then run the same command again.`,
    );
    this.name = 'RedisFullError';
  }
}
