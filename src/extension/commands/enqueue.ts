import * as vscode from 'vscode';
import type { CrawlTask } from '../../core/task/model';
import { credentialsMessage } from '../../core/url/credentials';
import { redactUrl } from '../../core/url/redact';
import { readWorkersTaking } from '../../frontier/fleet';
import type { CrawlQueue } from '../../frontier/crawl';
import { QueueNode } from '../explorer/nodes';
import { engine } from '../lazy';
import { activeTaskDocument, readTask, taskFileOf } from '../taskFiles';
import type { CommandDeps, CommandTable } from './deps';
import { pickTaskFile } from './pickTask';
import { isQueuePaused, pausedText } from '../retryNotice';

// Enqueue URL: one URL into a task's crawl, from the explorer, a task file or the editor's selection; what became
// of it said, with what to do next (fetch it again, start a worker).

type Enqueued = Awaited<ReturnType<CrawlQueue['enqueueUrls']>>[number];

// Labels the code compares answers with, localized once (vscode.l10n: English is the only bundle so far).
const START_WORKERS = vscode.l10n.t('Start Workers');
const START_CRAWL = vscode.l10n.t('Start Crawl');

async function enqueueUrl(deps: CommandDeps, target?: vscode.Uri | QueueNode | string, given?: string) {
  const { connection, tree } = deps;
  const { task, selected } = await enqueueTarget(target);
  if (!task) throw new Error(vscode.l10n.t('Choose a valid task file (*.crawl.yaml) to enqueue into.'));
  const url =
    given ??
    selected ??
    (await vscode.window.showInputBox({
      prompt: vscode.l10n.t("URL to enqueue in '{0}'", task.name),
      placeHolder: 'https://…',
      // Open while the person fetches the URL from a browser, and while the Queue Explorer refreshes beside it (the
      // context menu's focus coming back to the tree closed it: seen in the UI test).
      ignoreFocusOut: true,
      validateInput: (v) => (/^https?:\/\/\S+$/.test(v.trim()) ? null : vscode.l10n.t('An http(s) URL')),
    }));
  if (!url) return undefined;
  const redis = await connection.get();
  const { CrawlQueue } = await engine();
  const q = new CrawlQueue(redis, task.name);
  try {
    const res = await q.enqueueUrls(task, [url]);
    const r = res[0]!;
    let msg = enqueuedMessage(r, task.name);
    let noWorker = false;
    if (r.outcome === 'duplicate') offerFetchAgain(deps, msg, task, url);
    else if (r.outcome === 'enqueued' && (await isQueuePaused(redis, task.name)))
      void vscode.window.showInformationMessage((msg = `${msg}${pausedText(task.name)}`));
    else if (r.outcome === 'enqueued' && (await readWorkersTaking(redis, task.name)).length === 0) {
      msg = offerWorkers(msg, task);
      noWorker = true;
    } else void vscode.window.showInformationMessage(msg);
    await tree.refresh();
    // What the notification said, for the command's callers (and its tests: a notification cannot be read back).
    return { ...r, message: msg, ...(noWorker ? { noWorker } : {}) };
  } finally {
    await q.close();
  }
}

/**
 * The task to enqueue into: the explorer row's or the file's; from the editor, the active task file or one picked,
 * and the URL the selection (or the string given).
 */
async function enqueueTarget(
  target?: vscode.Uri | QueueNode | string,
): Promise<{ task: CrawlTask | null; selected?: string }> {
  if (target instanceof QueueNode || target instanceof vscode.Uri) {
    const file = taskFileOf(target);
    return { task: file ? await readTask(file) : null };
  }
  const editor = vscode.window.activeTextEditor;
  const selection = editor && !editor.selection.isEmpty ? editor.document.getText(editor.selection).trim() : undefined;
  const selected = typeof target === 'string' ? target : selection;
  const uri = activeTaskDocument()?.uri ?? (await pickTaskFile(vscode.l10n.t('Task to enqueue into')));
  return { task: uri ? await readTask(uri) : null, selected };
}

function enqueuedMessage(r: Enqueued, task: string): string {
  if (r.outcome === 'enqueued') return vscode.l10n.t("Enqueued {0} in '{1}'.", r.url, task);
  if (r.outcome === 'duplicate') return vscode.l10n.t('{0} was already crawled in this run.', r.url);
  if (r.outcome === 'limit') return vscode.l10n.t("Not enqueued: '{0}' reached its maxPages.", task);
  return vscode.l10n.t(
    'Not a crawlable URL: {0}',
    r.reason === 'credentials' ? credentialsMessage(r.url) : redactUrl(r.url),
  );
}

/** Not awaited: the command answers now; the offer stays in the notification. */
function offerFetchAgain({ connection, tree }: CommandDeps, msg: string, task: CrawlTask, url: string): void {
  void vscode.window.showInformationMessage(msg, vscode.l10n.t('Fetch Again')).then(async (again) => {
    if (!again) return;
    const q2 = new (await engine()).CrawlQueue(await connection.get(), task.name);
    await q2.enqueueUrls(task, [url], { force: true }).finally(() => q2.close());
    await tree.refresh();
  });
}

/** Issue 23, item 7: a URL enqueued after the crawl ended sat in the queue with no worker and no hint. */
function offerWorkers(msg: string, task: CrawlTask): string {
  const text = vscode.l10n.t(
    "{0} No worker is taking '{1}' jobs now: it waits in the queue until one runs.",
    msg,
    task.name,
  );
  void vscode.window
    .showInformationMessage(text, START_WORKERS, START_CRAWL)
    .then(
      (a) =>
        a &&
        vscode.commands.executeCommand(
          a === START_WORKERS ? 'crawlStudio.startWorkers' : 'crawlStudio.startCrawl',
          vscode.Uri.file(task.file),
        ),
    );
  return text;
}

export const ENQUEUE_COMMANDS: CommandTable = {
  'crawlStudio.enqueueUrl': enqueueUrl,
};
