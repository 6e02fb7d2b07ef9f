import type { Redis } from '../redis/connect';
import type { PageQueue } from '../frontier/partitions';
import { readJobs } from '../frontier/jobLists';
import type { WorkerBeat } from '../frontier/fleet';

// The pages being fetched now: a task's active BullMQ jobs (every partition's queue, observe/failures.ts
// taskQueues), each with the worker that holds it. A job's lock holds the token of the BullMQ Worker that took it
// (`<worker id>:<n>`), and each heartbeat names its BullMQ Workers (frontier/fleet.ts WorkerBeat.bull): that is how a
// page is tied to a machine and a process, as a supervisor finds a dead process's jobs. At most `limit` pages: a
// task has as many active as its workers' concurrency, bounded whatever waits behind them.

export interface ActivePage {
  readonly url: string;
  readonly rule: string;
  readonly depth: number;
  /** When the worker took it (ms), or null. */
  readonly startedAt: number | null;
  readonly attempt: number;
  /** The worker process holding it (`host:pid`), or null when its lock is gone or its beat unknown. */
  readonly worker: string | null;
}

export async function readActivePages(
  redis: Redis,
  queues: readonly PageQueue[],
  beats: readonly WorkerBeat[],
  limit: number,
): Promise<ActivePage[]> {
  const owner = new Map<string, string>();
  for (const b of beats) for (const bullId of Object.values(b.bull ?? {})) owner.set(bullId, b.id);
  const out: ActivePage[] = [];
  for (const q of queues) {
    if (out.length >= limit) break;
    const jobs = (await readJobs(redis, q, 'active', 0, limit - out.length - 1)).filter((j) => Boolean(j.data));
    const locks = jobs.length
      ? await Promise.all(jobs.map((j) => redis.get(`${q.toKey(String(j.id))}:lock`).catch(() => null)))
      : [];
    jobs.forEach((j, i) => {
      const token = locks[i];
      const bullId = token ? token.slice(0, token.lastIndexOf(':')) : null;
      out.push({
        url: j.data.url,
        rule: j.data.rule,
        depth: j.data.depth,
        startedAt: j.processedOn ?? null,
        attempt: j.attemptsMade + 1,
        worker: (bullId && owner.get(bullId)) ?? null,
      });
    });
  }
  return out.sort((a, b) => (a.startedAt ?? 0) - (b.startedAt ?? 0));
}
