import * as vscode from 'vscode';
import { TaskInvalidError } from '../crawls/crawlManager';
import { resizeRefusal, resizeWorker } from '../../frontier/fleet';
import { requireTrust, settings } from '../settings';
import { readTask } from '../taskFiles';
import type { WorkerNode } from '../workers/workerTree';
import type { CommandDeps, CommandTable } from './deps';
import { pickTaskFile } from './pickTask';

// The Workers view's commands: start workers for a task file, stop them all, stop or restart one, show its log, and
// resize one that sizes itself (`crawl-studio resize`'s request, through the same frontier/fleet.ts resizeWorker).

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

/** Asks a worker that sizes itself (local or not) to run at a concurrency, which its autoscaler then holds. */
async function resizeOne({ connection }: CommandDeps, node: WorkerNode, concurrency?: number) {
  const beat = node?.beat;
  if (!beat?.autoscale) return undefined;
  const task = beat.tasks[0]!;
  const { min, max } = beat.autoscale;
  const value =
    concurrency !== undefined
      ? String(concurrency)
      : await vscode.window.showInputBox({
          prompt: vscode.l10n.t(
            'Concurrency for worker {0} ({1}..{2}, now {3}); its autoscaler holds it for 10 minutes',
            beat.id,
            min,
            max,
            beat.concurrency,
          ),
          value: String(beat.concurrency),
          validateInput: (v) => resizeRefusal(beat, beat.id, task, Number(v)),
        });
  if (!value) return undefined;
  const refusal = await resizeWorker(await connection.get(), beat.id, task, Number(value));
  if (refusal) throw new Error(refusal);
  void vscode.window.showInformationMessage(
    vscode.l10n.t('Asked worker {0} to run at concurrency {1}: it takes it at its next judged window.', beat.id, value),
  );
  return Number(value);
}

export const WORKER_COMMANDS: CommandTable = {
  'crawlStudio.resizeWorker': resizeOne,
  'crawlStudio.startWorkers': startWorkers,
  'crawlStudio.stopWorkers': stopWorkers,
  'crawlStudio.stopWorker': ({ workers }: CommandDeps, node: WorkerNode) =>
    node?.kind === 'local' ? workers.stop(node.worker.pid) : undefined,
  'crawlStudio.restartWorker': ({ workers }: CommandDeps, node: WorkerNode) =>
    node?.kind === 'local' ? workers.restart(node.worker.pid) : undefined,
  // One channel for all workers: its filter box narrows it to this worker's `[pid]` lines.
  'crawlStudio.showWorkerLog': ({ workers }: CommandDeps, node: WorkerNode) => {
    if (node?.kind !== 'local') return false;
    workers.channel().show(true);
    return true;
  },
};
