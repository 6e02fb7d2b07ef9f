import type { Redis } from '../redis/connect';
import { CrawlQueue } from '../frontier/crawl';
import { pauseTask, resumeTask, stopTask } from '../frontier/control';
import { ControlRefused } from '../frontier/refused';
import { retryFailureGroup } from '../observe/failures';
import { readRun } from '../frontier/partitions';
import { loadTaskFile } from '../workspace/taskFile';
import { waitingNote } from '../observe/noWorker';

// What the monitor's actions do, through the functions the editor and the CLI call for the same thing: pausing,
// resuming and stopping a task (frontier/control.ts, the Queue Explorer's Pause and Resume, `crawl-studio pause|resume|stop`;
// stopping is CrawlQueue.stopRun, the editor's Stop Crawl and `run`'s stop), retrying a reason's failed pages (retryFailureGroup, the dashboard's Retry
// all), adding URLs (CrawlQueue.enqueueUrls, `crawl-studio enqueue` and Enqueue URL). No second implementation.

/** How a crawl is started, as the monitor says it (it has no button for it: a run needs its task file). */
const START_HOW = 'Start Crawl in the editor, or `crawl-studio run` with its task file';

/** A request the monitor refuses, with the HTTP status and the words it answers with. */
export class ActionError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export type ActionResult = {
  readonly ok: true;
  readonly message: string;
  readonly count?: number;
  readonly results?: readonly { url: string; outcome: string; reason?: string }[];
};

/** Most URLs one "add URLs" request may carry (larger lists: `crawl-studio enqueue --file`). */
const MAX_ENQUEUE = 1_000;

async function withQueue<T>(redis: Redis, task: string, fn: (q: CrawlQueue) => Promise<T>): Promise<T> {
  const q = new CrawlQueue(redis, task);
  try {
    await q.loadLayout();
    return await fn(q);
  } finally {
    await q.close();
  }
}

/** What the run's state refuses (frontier/refused.ts) is a 409 with the engine's own words. */
async function refusedAs409<T>(done: Promise<T>): Promise<T> {
  try {
    return await done;
  } catch (err) {
    if (err instanceof ControlRefused) throw new ActionError(409, err.message);
    throw err;
  }
}

/** The control's own words, or its refusal as a 409 with the same words. */
async function control(done: Promise<string>): Promise<ActionResult> {
  return { ok: true, message: await refusedAs409(done) };
}

export function pause(redis: Redis, task: string): Promise<ActionResult> {
  return control(pauseTask(redis, task));
}

export function resume(redis: Redis, task: string): Promise<ActionResult> {
  return control(resumeTask(redis, task));
}

export async function retryReason(redis: Redis, task: string, reason: string): Promise<ActionResult> {
  if (!/^[\w.-]{1,64}$/.test(reason))
    throw new ActionError(
      400,
      `'reason' must name a failure reason (e.g. http-404, timeout), not '${reason.slice(0, 80)}'`,
    );
  const n = await refusedAs409(withQueue(redis, task, (q) => retryFailureGroup(q.parts, reason)));
  return {
    ok: true,
    count: n,
    message:
      n === 0
        ? `no kept failed page of '${task}' has the reason ${reason}`
        : `${n} failed page(s) of '${task}' (${reason}) are back in the queue.${await waitingNote(redis, task, START_HOW)}`,
  };
}

/** Ends the task's current run for good (frontier/control.ts stopTask); `run`, when given, must be the current one. */
export function stop(redis: Redis, task: string, run: string | undefined): Promise<ActionResult> {
  return control(stopTask(redis, task, run));
}

/**
 * URLs into the task's current run, routed by the task's rules: the task file is the one its run was started
 * with (the run's meta names it), read on this machine.
 */
export async function enqueue(redis: Redis, task: string, urls: readonly string[]): Promise<ActionResult> {
  if (urls.length === 0 || urls.length > MAX_ENQUEUE || urls.some((u) => typeof u !== 'string' || u.length > 8192))
    throw new ActionError(400, `'urls' must be 1 to ${MAX_ENQUEUE} URLs`);
  const run = await readRun(redis, task);
  if (!run) throw new ActionError(409, `'${task}' has never run on this Redis: start it first`);
  if (!run.file)
    throw new ActionError(409, `the run of '${task}' does not name its task file: enqueue with crawl-studio enqueue`);
  let file;
  try {
    file = await loadTaskFile(run.file);
  } catch (err) {
    throw new ActionError(
      409,
      `cannot read the task file of '${task}' on this machine (${run.file}): ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`,
    );
  }
  if (file.name !== task) throw new ActionError(409, `${run.file} now names the task '${file.name}', not '${task}'`);
  const results = await refusedAs409(withQueue(redis, task, (q) => q.enqueueUrls(file, urls)));
  const n = results.filter((r) => r.outcome === 'enqueued').length;
  const note =
    n > 0 ? await waitingNote(redis, task, `Start Crawl in the editor, or \`crawl-studio run ${run.file}\``) : '';
  return { ok: true, count: n, results, message: `${n} of ${urls.length} URL(s) enqueued in '${task}'.${note}` };
}
