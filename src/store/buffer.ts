import type { ChainableCommander } from 'ioredis';
import type { Redis } from '../redis/connect';
import { taskKeys } from '../frontier/keys';
import type { PageRecord } from './types';

// The worker side of the storage pipeline. A fetched page becomes one stream entry, appended with a single
// XADD: the page is durable in Redis the moment the worker moves on, and no database sits on the crawl's hot
// path. The entry is one field holding the JSON page — one parse per entry in the writer, nothing to reassemble.
// The stream is never trimmed here: writers delete entries only after their rows are committed.

/** The one field of an items-stream entry. */
export const PAGE_FIELD = 'p';

export function encodePage(page: PageRecord): string {
  return JSON.stringify(page);
}

/** A page's items-stream entry as field and value, for every way of appending it. */
export function pageEntry(page: PageRecord): [field: string, value: string] {
  return [PAGE_FIELD, encodePage(page)];
}

/** Appends one page (with its items and extraction problems) to the task's items stream. */
export async function bufferPage(redis: Redis, page: PageRecord): Promise<void> {
  await redis.xadd(taskKeys(page.task).items, '*', ...pageEntry(page));
}

/**
 * Queues the append on a pipeline or MULTI, for callers that send other commands with it. Workers append with
 * their page's counters in one script call instead (CrawlQueue.completePage, lua/pageDone.lua).
 */
export function bufferPageIn(pipeline: ChainableCommander, page: PageRecord): ChainableCommander {
  return pipeline.xadd(taskKeys(page.task).items, '*', ...pageEntry(page));
}
