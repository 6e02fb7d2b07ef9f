import type { Redis } from '../redis/connect';
import { readWorkersTaking } from '../frontier/fleet';

// What a message says when pages were put in a task's queue (a retry, URLs added) and no worker takes them: the
// editor's words (extension/retryNotice.ts, localized there), for the monitor and the CLI. Said only when it is so:
// pages waiting silently for a worker nobody started were issue 32's "Retry Job did nothing".

/** " No worker is running: …" when no live worker takes the task's pages (readWorkersTaking), else "". */
export async function noWorkerNote(redis: Redis, task: string, start: string): Promise<string> {
  if ((await readWorkersTaking(redis, task)).length > 0) return '';
  return ` No worker is running: start the crawl to fetch them (${start}).`;
}
