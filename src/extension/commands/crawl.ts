import * as vscode from 'vscode';
import { stopUndriven } from '../crawls/interruptedRuns';
import { QueueNode } from '../explorer/nodes';
import { readTask, taskFileOf } from '../taskFiles';
import type { CommandDeps, CommandTable } from './deps';
import { taskDocument } from './pickTask';

// Crawl control: start a task file's crawl, stop one, check a task file.

async function startCrawl({ crawls, tree }: CommandDeps, target?: unknown) {
  const doc = await taskDocument(taskFileOf(target));
  if (!doc) return undefined;
  const rc = await vscode.window.withProgress(
    {
      location: vscode.ProgressLocation.Notification,
      title: vscode.l10n.t('Starting crawl {0}…', vscode.workspace.asRelativePath(doc.uri)),
    },
    () => crawls.start(doc),
  );
  void tree.refresh();
  return { task: rc.task.name };
}

async function stopCrawl({ connection, crawls, tree }: CommandDeps, target?: vscode.Uri | string | QueueNode) {
  const name = await crawlToStop(
    crawls.list().map((r) => r.task.name),
    target,
  );
  if (!name) return false;
  if (!crawls.get(name)) {
    // A run nobody drives (its window reloaded, its `run` was killed) is ended here; one another process drives
    // is that process's to stop (issue 32, item 2).
    const ended = await stopUndriven(await connection.get(), name);
    if (ended) {
      void vscode.window.showInformationMessage(ended);
      void tree.refresh();
      return 'stopped';
    }
    void vscode.window.showInformationMessage(
      vscode.l10n.t("Crawl '{0}' is not running in this window: nothing to stop.", name),
    );
    return false;
  }
  // Cancel: stop waiting for the pages in flight; the workers are killed and those pages go back to the queue.
  // The one message saying how it ended is the crawl manager's (onDidFinish: "stopped", never also "finished").
  const result = await vscode.window.withProgress(
    {
      location: vscode.ProgressLocation.Notification,
      title: vscode.l10n.t('Stopping crawl {0} (letting workers finish their pages; Cancel stops them now)…', name),
      cancellable: true,
    },
    (_p, token) => crawls.stop(name, token),
  );
  return result ? result.outcome : false;
}

/** The task named by `target`; else the one crawl running here, or the one picked among them. */
async function crawlToStop(
  running: readonly string[],
  target?: vscode.Uri | string | QueueNode,
): Promise<string | undefined> {
  let name: string | undefined =
    typeof target === 'string' ? target : target instanceof QueueNode ? target.name : undefined;
  if (target instanceof vscode.Uri) name = (await readTask(target))?.name;
  if (name) return name;
  return running.length === 1
    ? running[0]
    : await vscode.window.showQuickPick(running, { placeHolder: vscode.l10n.t('Crawl to stop') });
}

async function validateTask({ crawls }: CommandDeps, uri?: vscode.Uri) {
  const doc = await taskDocument(uri);
  if (!doc) return undefined;
  const task = await crawls.validate(doc);
  if (task)
    void vscode.window.showInformationMessage(
      vscode.l10n.t(
        '{0} is valid: {1} start URL(s), {2}{3} rule(s).',
        vscode.workspace.asRelativePath(doc.uri),
        task.start.length,
        task.sitemaps.length ? vscode.l10n.t('{0} sitemap(s), ', task.sitemaps.length) : '',
        task.rules.length,
      ),
    );
  else void vscode.commands.executeCommand('workbench.actions.view.problems');
  return task !== null;
}

export const CRAWL_COMMANDS: CommandTable = {
  'crawlStudio.startCrawl': startCrawl,
  'crawlStudio.stopCrawl': stopCrawl,
  'crawlStudio.validateTask': validateTask,
};
