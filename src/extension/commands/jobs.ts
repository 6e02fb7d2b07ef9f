import * as vscode from 'vscode';
import { jobDocument, jobRecordOf } from '../../observe/jobs';
import { retryFailedJobs } from '../../observe/failures';
import type { JobNode } from '../explorer/nodes';
import type { QueueTreeProvider } from '../explorer/queueTree';
import { showJsonDocument } from '../jsonDocuments';
import { afterRetry } from '../retryNotice';
import { thenRefresh, type CommandDeps, type CommandTable } from './deps';

// A job row's actions in the Queue Explorer: retry, remove, promote, copy or open its URL, show its data.

/**
 * The row's job as Redis has it now. A row whose job is gone by the time its command runs (the tree refreshed
 * under the menu) comes as undefined: say so instead of failing with an internal error.
 */
async function fresh(tree: QueueTreeProvider, node: JobNode | undefined) {
  if (!node?.parent || !tree.getModel()) {
    // The row was rendered but VS Code no longer knows its element (a refresh crossed its rendering): the
    // whole tree is read again so the row picked again is a live one.
    tree.rebuild();
    throw new Error(
      vscode.l10n.t('that job is no longer in the Queue Explorer (the tree refreshed under the menu): pick it again'),
    );
  }
  return (await tree.getModel()!.job(node.parent.queue.name, node.job.id!)) ?? node.job;
}

/**
 * As the dashboard's "Retry all": the job leaves the run's failure count and a finished run reopens. What it did is
 * said as Retry all says it (retryNotice.ts): with no worker running, Start Crawl is offered.
 */
async function retry({ connection, crawls, tree }: CommandDeps, node: JobNode) {
  const job = await fresh(tree, node);
  const redis = await connection.get();
  const queue = node.parent.queue;
  const n = await thenRefresh(tree, retryFailedJobs(redis, queue.name, [job]));
  return afterRetry(redis, crawls, { name: queue.name, file: queue.snapshot.file }, n);
}

async function showData({ tree }: CommandDeps, node: JobNode) {
  const j = await fresh(tree, node);
  await showJsonDocument(`${node.parent.queue.name} job ${j.id}`, {
    ...jobDocument(await jobRecordOf(j, node.parent.queue.name)),
    opts: j.opts,
  });
  return j.data;
}

export const JOB_COMMANDS: CommandTable = {
  'crawlStudio.job.retry': retry,
  'crawlStudio.job.remove': async ({ tree }: CommandDeps, node: JobNode) =>
    thenRefresh(tree, (await fresh(tree, node)).remove()),
  'crawlStudio.job.promote': async ({ tree }: CommandDeps, node: JobNode) =>
    thenRefresh(tree, (await fresh(tree, node)).promote()),
  'crawlStudio.job.copyUrl': (_deps: CommandDeps, node: JobNode) => vscode.env.clipboard.writeText(node.job.data.url),
  'crawlStudio.job.openUrl': (_deps: CommandDeps, node: JobNode) =>
    vscode.env.openExternal(vscode.Uri.parse(node.job.data.url)),
  'crawlStudio.job.showData': showData,
};
