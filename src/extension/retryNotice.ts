import * as vscode from 'vscode';
import { hostname } from 'node:os';
import { readWorkersTaking, type WorkerBeat } from '../frontier/fleet';
import type { Redis } from '../redis/connect';
import { taskKeys } from '../frontier/keys';
import type { CrawlManager } from './crawls/crawlManager';

// What the editor says after failed jobs went back to the queue, the same for the dashboard's "Retry all" and the
// Queue Explorer's Retry Job (issue 32, item 4: Retry Job on a finished crawl showed nothing, and its job waited
// for a worker nobody ran). A retry reopens a finished run (observe/failures.ts retryFailedJobs); with no worker
// taking the task's pages, the message says so and offers Start Crawl, which resumes that reopened run.

const START_CRAWL_AFTER_RETRY = vscode.l10n.t('Start Crawl');

export interface RetryOutcome {
  readonly retried: number;
  /** Whether a worker (local or remote, from the fleet's heartbeats) was taking the task's pages. */
  readonly workerRunning: boolean;
  /** The message shown, or null when nothing was retried. */
  readonly message: string | null;
}

export async function afterRetry(
  redis: Redis,
  crawls: CrawlManager,
  task: { readonly name: string; readonly file: string | null },
  retried: number,
): Promise<RetryOutcome> {
  if (retried === 0) return { retried, workerRunning: false, message: null };
  // This window's own workers count only while its crawl takes pages: winding down after the run's finish (a Retry
  // all clicked as the dashboard turned "finished"), they still beat but take nothing, and the pages waited for
  // a worker nobody would start under "Retrying".
  const workerRunning =
    crawls.get(task.name)?.launch.takingPages === true ||
    (await readWorkersTaking(redis, task.name)).some((w) => !startedHere(w));
  const jobs = vscode.l10n.t("{0} failed job(s) of '{1}'", retried, task.name);
  // Paused (here, elsewhere, or a held schedule): "Retrying" and "start the crawl" both said what would not happen.
  if (await isQueuePaused(redis, task.name)) {
    const message = `${vscode.l10n.t('{0} are back in the queue.', jobs)}${pausedText(task.name)}`;
    void vscode.window.showInformationMessage(message);
    return { retried, workerRunning, message };
  }
  if (workerRunning) {
    const message = vscode.l10n.t('Retrying {0}.', jobs);
    void vscode.window.showInformationMessage(message);
    return { retried, workerRunning, message };
  }
  const message = vscode.l10n.t(
    '{0} are back in the queue. No worker is running: start the crawl to fetch them.',
    jobs,
  );
  const file = task.file;
  if (!file) {
    void vscode.window.showInformationMessage(message);
    return { retried, workerRunning, message };
  }
  void vscode.window
    .showInformationMessage(message, START_CRAWL_AFTER_RETRY)
    .then((a) => a && vscode.commands.executeCommand('crawlStudio.startCrawl', vscode.Uri.file(file)));
  return { retried, workerRunning, message };
}

/** Whether the task's queue is paused (observe/taskStatus.ts reads it the same way). */
export async function isQueuePaused(redis: Redis, task: string): Promise<boolean> {
  return (await redis.hexists(taskKeys(task).bull.meta, 'paused')) === 1;
}

/** observe/noWorker.ts pausedNote's words, localized. */
export function pausedText(task: string): string {
  return vscode.l10n.t(
    " '{0}' is paused: its pages are fetched once it is resumed (Resume in the Queue Explorer or the monitor, `crawl-studio resume`).",
    task,
  );
}

/** A worker this extension host started (its heartbeat names the process that watches it). */
function startedHere(w: WorkerBeat): boolean {
  return w.parent?.pid === process.pid && w.parent.host === hostname();
}
