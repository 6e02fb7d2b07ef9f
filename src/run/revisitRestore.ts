import type { Redis } from '../redis/connect';
import { encodeRevisit, revisitShape } from '../core/pipeline/revisit';
import type { CrawlTask } from '../core/task/model';
import { fingerprintHex } from '../core/url/fingerprint';
import { REVISIT_RESTORED, taskKeys } from '../frontier/keys';
import type { ItemStore } from '../store';

// A conditional re-crawl's records come back from the store when Redis has none (a new or emptied Redis): before a
// run's first page is enqueued, so its first pages are asked for conditionally too. The workers never read the
// store (worker/revisits.ts). Records of another shape (the task was edited since) are left in the store: no
// worker would use them.

/** Rows per pipeline of HSETs. */
const BATCH = 1_000;

/**
 * Restores the task's records from the store unless Redis holds them already; `store` is only waited for then.
 * Returns how many were restored (0 when Redis had them).
 */
export async function restoreRevisits(redis: Redis, task: CrawlTask, store: () => Promise<ItemStore>): Promise<number> {
  const key = taskKeys(task.name).revisits;
  if ((await redis.exists(key)) === 1) return 0;
  const shapes = new Set(task.rules.map((r) => revisitShape(task, r)));
  let n = 0;
  let batch = redis.pipeline();
  let pending = 0;
  const flush = async () => {
    if (pending === 0) return;
    const res = await batch.exec();
    const failed = res?.find(([e]) => e);
    if (failed)
      throw new Error(
        `restoring the revisit records of '${task.name}' into Redis failed: ${(failed[0] as Error).message}`,
      );
    batch = redis.pipeline();
    pending = 0;
  };
  for await (const row of (await store()).iterateRevisits()) {
    if (!shapes.has(row.shape)) continue;
    batch.hset(key, fingerprintHex(row.url), encodeRevisit(row));
    n++;
    if (++pending >= BATCH) await flush();
  }
  // Marks the hash as restored (and makes it exist): the next run does not read the store again.
  batch.hset(key, REVISIT_RESTORED, String(Date.now()));
  pending++;
  await flush();
  return n;
}
