import * as vscode from 'vscode';
import type { MoreNode, QueueNode } from '../explorer/nodes';
import { thenRefresh, type CommandDeps, type CommandTable } from './deps';

// The Queue Explorer's own commands and a task queue's actions: pause, resume, clean, drain, delete. Through the
// model: a task on a Redis Cluster has a queue per partition (frontier/partitions.ts).

// Labels the code compares answers with, localized once (vscode.l10n: English is the only bundle so far).
const DRAIN = vscode.l10n.t('Drain');
const DELETE = vscode.l10n.t('Delete');

interface Confirmation {
  readonly skipConfirmation?: boolean;
}

async function refresh({ connection, tree }: CommandDeps) {
  await connection.get();
  await tree.refresh();
  return tree.queueNodes().map((q) => ({ name: q.name, counts: q.snapshot.counts, paused: q.snapshot.paused }));
}

async function drain({ tree }: CommandDeps, node: QueueNode, opts?: Confirmation) {
  if (!opts?.skipConfirmation) {
    const ok = await vscode.window.showWarningMessage(
      vscode.l10n.t(
        "Remove every waiting and delayed job of '{0}', and the pages waiting in its frontier? Active jobs finish; stored items stay.",
        node.name,
      ),
      { modal: true },
      DRAIN,
    );
    if (ok !== DRAIN) return false;
  }
  await thenRefresh(tree, tree.getModel()!.drain(node.name));
  return true;
}

async function deleteQueue({ tree }: CommandDeps, node: QueueNode, opts?: Confirmation) {
  if (!opts?.skipConfirmation) {
    const ok = await vscode.window.showWarningMessage(
      vscode.l10n.t(
        "Delete the queue '{0}' with all its jobs and crawl state? Items already stored are kept.",
        node.name,
      ),
      { modal: true },
      DELETE,
    );
    if (ok !== DELETE) return false;
  }
  await thenRefresh(tree, tree.getModel()!.deleteQueue(node.name));
  return true;
}

export const QUEUE_COMMANDS: CommandTable = {
  'crawlStudio.refresh': refresh,
  'crawlStudio.loadMore': ({ tree }: CommandDeps, node: MoreNode) => tree.loadMore(node.parent),
  'crawlStudio.queue.pause': ({ tree }: CommandDeps, node: QueueNode) =>
    thenRefresh(tree, tree.getModel()!.pause(node.name)),
  'crawlStudio.queue.resume': ({ tree }: CommandDeps, node: QueueNode) =>
    thenRefresh(tree, tree.getModel()!.resume(node.name)),
  'crawlStudio.queue.cleanCompleted': ({ tree }: CommandDeps, node: QueueNode) =>
    thenRefresh(tree, tree.getModel()!.clean(node.name, 'completed')),
  'crawlStudio.queue.cleanFailed': ({ tree }: CommandDeps, node: QueueNode) =>
    thenRefresh(tree, tree.getModel()!.clean(node.name, 'failed')),
  'crawlStudio.queue.drain': drain,
  'crawlStudio.queue.delete': deleteQueue,
};
