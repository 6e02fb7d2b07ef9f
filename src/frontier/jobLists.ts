import type { Redis } from '../redis/connect';
import type { PageJob, PageQueue } from './partitions';

// A queue's jobs in one state, read with plain commands: the state's ZSET or LIST, then each job's hash. BullMQ's
// Queue.getJobs sends its `getJobs` Lua script, which an ACL user with reads only may not run (README, Which Redis):
// `failures` and the monitor's task page answered such a user with Redis's bare NOPERM. The order is getJobs':
// newest first, or oldest first with `asc`.

/** The states read here: the sorted sets of finished jobs (by finish time) and the list of active ones. */
export type ListedState = 'failed' | 'completed' | 'active';

/** The ids of a state's jobs from index `start` to `end` (inclusive, -1 the last), as BullMQ's getRanges orders them. */
export async function readJobIds(
  redis: Redis,
  queue: PageQueue,
  state: ListedState,
  start: number,
  end: number,
  asc: boolean,
): Promise<string[]> {
  const key = queue.toKey(state);
  if (state !== 'active') return asc ? redis.zrange(key, start, end) : redis.zrevrange(key, start, end);
  // BullMQ moves a job to active with an LMOVE onto the list's head: index 0 is the newest.
  if (!asc) return redis.lrange(key, start, end);
  const ids = await redis.lrange(key, end === -1 ? 0 : -(end + 1), -(start + 1));
  return ids.reverse();
}

/** The jobs of readJobIds, each read from its hash; a job removed in between is left out. */
export async function readJobs(
  redis: Redis,
  queue: PageQueue,
  state: ListedState,
  start: number,
  end: number,
  asc = false,
): Promise<PageJob[]> {
  const ids = await readJobIds(redis, queue, state, start, end, asc);
  const jobs = await Promise.all(ids.map((id) => queue.getJob(id)));
  return jobs.filter((j): j is PageJob => Boolean(j));
}
