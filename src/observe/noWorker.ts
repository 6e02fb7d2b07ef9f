import type { Redis } from '../redis/connect';
import { readWorkersTaking } from '../frontier/fleet';
import { taskKeys } from '../frontier/keys';

// What a message says when pages were put in a task's queue (a retry, URLs added) and nobody fetches them yet: the
// editor's words (extension/retryNotice.ts, localized there), for the monitor and the CLI. Said only when it is so:
// pages waiting silently for a worker nobody started were issue 32's "Retry Job did nothing", and with the queue
// paused "the task's workers fetch them" was not so either.

/** The words for a paused task's new pages, the same in every view. */
export function pausedNote(task: string): string {
  return ` '${task}' is paused: its pages are fetched once it is resumed (Resume in the Queue Explorer or the monitor, \`crawl-studio resume\`).`;
}

/**
 * " '<task>' is paused: …" when its queue is paused (Pause, or a finished scheduled run held), " No worker is
 * running: …" when no live worker takes its pages (readWorkersTaking), else "".
 */
export async function waitingNote(redis: Redis, task: string, start: string): Promise<string> {
  if ((await redis.hexists(taskKeys(task).bull.meta, 'paused')) === 1) return pausedNote(task);
  if ((await readWorkersTaking(redis, task)).length > 0) return '';
  return ` No worker is running: start the crawl to fetch them (${start}).`;
}
