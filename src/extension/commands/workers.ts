import * as vscode from 'vscode';
import { TaskInvalidError } from '../crawls/crawlManager';
import { requireTrust, settings } from '../settings';
import { readTask } from '../taskFiles';
import type { WorkerNode } from '../workers/workerTree';
import type { CommandDeps, CommandTable } from './deps';
import { pickTaskFile } from './pickTask';

// The Workers view's commands: start workers for a task file, stop them all, stop or restart one, show its log.

async function startWorkers({ connection, workers, secrets }: CommandDeps, uri?: vscode.Uri, count?: number) {
  requireTrust(
    'Workers are not started in an untrusted workspace: they run the task files. Trust the workspace first.',
  );
  const file = uri ?? (await pickTaskFile(vscode.l10n.t('Task file for the workers')));
  if (!file) return undefined;
  const task = await readTask(file);
  if (!task)
    throw new TaskInvalidError(
      vscode.l10n.t('{0} has errors: see the Problems panel.', vscode.workspace.asRelativePath(file)),
    );
  count ??= Number(
    await vscode.window.showInputBox({
      prompt: vscode.l10n.t('How many worker processes?'),
      value: String(settings.workers()),
      validateInput: (v) => (/^[1-9]\d?$/.test(v) ? null : vscode.l10n.t('1 to 99')),
    }),
  );
  if (!count) return undefined;
  await connection.get();
  const pool = workers.start(
    [file.fsPath],
    count,
    settings.scaling().concurrency,
    connection.workerUrl!,
    await secrets.envFor(task),
  );
  return pool.supervisor.list().map((w) => w.pid);
}

async function stopWorkers({ workers }: CommandDeps) {
  await vscode.window.withProgress(
    {
      location: vscode.ProgressLocation.Notification,
      title: vscode.l10n.t('Stopping workers (in-flight pages finish first; Cancel stops them now)…'),
      cancellable: true,
    },
    (_p, token) => workers.stopAll(token),
  );
  return true;
}

export const WORKER_COMMANDS: CommandTable = {
  'crawlStudio.startWorkers': startWorkers,
  'crawlStudio.stopWorkers': stopWorkers,
  'crawlStudio.stopWorker': ({ workers }: CommandDeps, node: WorkerNode) =>
    node?.kind === 'local' ? workers.stop(node.worker.pid) : undefined,
  'crawlStudio.restartWorker': ({ workers }: CommandDeps, node: WorkerNode) =>
    node?.kind === 'local' ? workers.restart(node.worker.pid) : undefined,
  // One channel for all workers: its filter box narrows it to this worker's `[pid]` lines.
  'crawlStudio.showWorkerLog': ({ workers }: CommandDeps, node: WorkerNode) =>
    node?.kind === 'local' && workers.channel().show(true),
};
