import * as vscode from 'vscode';
import type { CrawlTask } from '../core/task/model';
import { engine } from './lazy';
import { TaskInvalidError, type CrawlManager } from './crawls/crawlManager';
import { reporting } from './errors';
import { JobNode, MoreNode, QueueNode, type QueueTreeProvider } from './explorer/queueTree';
import type { RedisConnection } from './redisConnection';
import { requireTrust, settings } from './settings';
import { activeTaskDocument, pickTaskFile as pick, readTask, taskFileOf } from './taskFiles';
import type { WorkerManager } from './workers/workerManager';
import type { WorkerNode } from './workers/workerTree';
import { showJsonDocument } from './jsonDocuments';
import { readLiveWorkers } from '../frontier/fleet';
import { parseRedisTarget, splitPasswords } from '../core/url/redisTarget';
import { retryFailedJobs } from '../observe/failures';
import { jobDocument, jobRecordOf } from '../observe/jobs';
import { credentialsMessage } from '../core/url/credentials';
import { redactUrl } from '../core/url/redact';
import { afterRetry } from './retryNotice';
import { stopUndriven } from './crawls/interruptedRuns';

// Every command of the extension. Commands return their result so tests (and other extensions) can drive them
// without clicking; every failure becomes a notification that says what to do next.

export interface CommandDeps {
  readonly context: vscode.ExtensionContext;
  readonly connection: RedisConnection;
  readonly crawls: CrawlManager;
  readonly workers: WorkerManager;
  readonly tree: QueueTreeProvider;
  /** Login and proxy credentials from Secret Storage, for the workers Start Workers… starts (as Start Crawl's). */
  readonly secrets: { envFor(task: CrawlTask): Promise<Record<string, string>> };
}

// Labels the code compares answers with, localized once (vscode.l10n: English is the only bundle so far).
const START_WORKERS = vscode.l10n.t('Start Workers');
const START_CRAWL = vscode.l10n.t('Start Crawl');
const NO_PASSWORD = vscode.l10n.t('No password');
const ENTER_PASSWORD = vscode.l10n.t('Enter a password…');
const DRAIN = vscode.l10n.t('Drain');
const DELETE = vscode.l10n.t('Delete');

export function registerCommands(deps: CommandDeps): void {
  const { context, connection, crawls, workers, tree, secrets } = deps;
  const reg = (id: string, fn: (...args: any[]) => unknown) =>
    context.subscriptions.push(vscode.commands.registerCommand(id, reporting(fn)));

  reg('crawlStudio.startCrawl', async (target?: unknown) => {
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
  });

  reg('crawlStudio.stopCrawl', async (target?: vscode.Uri | string | QueueNode) => {
    let name: string | undefined =
      typeof target === 'string' ? target : target instanceof QueueNode ? target.name : undefined;
    if (target instanceof vscode.Uri) name = (await readTask(target))?.name;
    if (!name) {
      const running = crawls.list().map((r) => r.task.name);
      name =
        running.length === 1
          ? running[0]
          : await vscode.window.showQuickPick(running, { placeHolder: vscode.l10n.t('Crawl to stop') });
    }
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
  });

  reg('crawlStudio.validateTask', async (uri?: vscode.Uri) => {
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
  });

  reg('crawlStudio.enqueueUrl', async (target?: vscode.Uri | QueueNode | string, url?: string) => {
    let task: CrawlTask | null = null;
    if (target instanceof QueueNode || target instanceof vscode.Uri) {
      const file = taskFileOf(target);
      task = file ? await readTask(file) : null;
    } else {
      // From the editor: the selection is the URL; the task is the active task file or one picked.
      const editor = vscode.window.activeTextEditor;
      const selected =
        editor && !editor.selection.isEmpty ? editor.document.getText(editor.selection).trim() : undefined;
      url ??= typeof target === 'string' ? target : selected;
      const uri = activeTaskDocument()?.uri ?? (await pickTaskFile(vscode.l10n.t('Task to enqueue into')));
      task = uri ? await readTask(uri) : null;
    }
    if (!task) throw new Error(vscode.l10n.t('Choose a valid task file (*.crawl.yaml) to enqueue into.'));
    url ??= await vscode.window.showInputBox({
      prompt: vscode.l10n.t("URL to enqueue in '{0}'", task.name),
      placeHolder: 'https://…',
      validateInput: (v) => (/^https?:\/\/\S+$/.test(v.trim()) ? null : vscode.l10n.t('An http(s) URL')),
    });
    if (!url) return undefined;
    const redis = await connection.get();
    const { CrawlQueue } = await engine();
    const q = new CrawlQueue(redis, task.name);
    try {
      const res = await q.enqueueUrls(task, [url]);
      const r = res[0]!;
      const msg =
        r.outcome === 'enqueued'
          ? vscode.l10n.t("Enqueued {0} in '{1}'.", r.url, task.name)
          : r.outcome === 'duplicate'
            ? vscode.l10n.t('{0} was already crawled in this run.', r.url)
            : r.outcome === 'limit'
              ? vscode.l10n.t("Not enqueued: '{0}' reached its maxPages.", task.name)
              : vscode.l10n.t(
                  'Not a crawlable URL: {0}',
                  r.reason === 'credentials' ? credentialsMessage(r.url) : redactUrl(r.url),
                );
      if (r.outcome === 'duplicate') {
        // Not awaited: the command answers now; the offer stays in the notification.
        const t = task;
        void vscode.window.showInformationMessage(msg, vscode.l10n.t('Fetch Again')).then(async (again) => {
          if (!again) return;
          const q2 = new (await engine()).CrawlQueue(await connection.get(), t.name);
          await q2.enqueueUrls(t, [url], { force: true }).finally(() => q2.close());
          await tree.refresh();
        });
      } else if (r.outcome === 'enqueued' && !(await readLiveWorkers(redis)).some((w) => w.tasks.includes(task.name))) {
        // Issue 23, item 7: a URL enqueued after the crawl ended sat in the queue with no worker and no hint.
        const t = task;
        void vscode.window
          .showInformationMessage(
            vscode.l10n.t("{0} No worker is taking '{1}' jobs now: it waits in the queue until one runs.", msg, t.name),
            START_WORKERS,
            START_CRAWL,
          )
          .then(
            (a) =>
              a &&
              vscode.commands.executeCommand(
                a === START_WORKERS ? 'crawlStudio.startWorkers' : 'crawlStudio.startCrawl',
                vscode.Uri.file(t.file),
              ),
          );
        await tree.refresh();
        return { ...r, noWorker: true };
      } else void vscode.window.showInformationMessage(msg);
      await tree.refresh();
      return r;
    } finally {
      await q.close();
    }
  });

  reg('crawlStudio.startWorkers', async (uri?: vscode.Uri, count?: number) => {
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
  });

  reg('crawlStudio.stopWorkers', async () => {
    await vscode.window.withProgress(
      {
        location: vscode.ProgressLocation.Notification,
        title: vscode.l10n.t('Stopping workers (in-flight pages finish first; Cancel stops them now)…'),
        cancellable: true,
      },
      (_p, token) => workers.stopAll(token),
    );
    return true;
  });
  reg('crawlStudio.stopWorker', (node: WorkerNode) =>
    node?.kind === 'local' ? workers.stop(node.worker.pid) : undefined,
  );
  reg('crawlStudio.restartWorker', (node: WorkerNode) =>
    node?.kind === 'local' ? workers.restart(node.worker.pid) : undefined,
  );
  // One channel for all workers: its filter box narrows it to this worker's `[pid]` lines.
  reg('crawlStudio.showWorkerLog', (node: WorkerNode) => node?.kind === 'local' && workers.channel().show(true));

  reg('crawlStudio.connectRedis', async (url?: string) => {
    url ??= await vscode.window.showInputBox({
      prompt: vscode.l10n.t(
        'Redis: a URL, sentinels and a master name, or cluster nodes (leave empty to use a managed redis-server for this workspace)',
      ),
      placeHolder:
        'redis://host:6379/0 · redis+sentinel://host:26379,host2:26379/mymaster · redis+cluster://host:7000,host2:7001',
      value: settings.redisUrl(),
      validateInput: (v) => {
        if (v === '') return null;
        try {
          parseRedisTarget(v);
          return null;
        } catch (err) {
          return (err as Error).message;
        }
      },
    });
    if (url === undefined) return undefined;
    if (url === '') {
      await vscode.workspace
        .getConfiguration('crawlStudio')
        .update('redisUrl', undefined, vscode.ConfigurationTarget.Workspace);
      await connection.reset();
      await connection.get();
    } else {
      const { passwords } = splitPasswords(url);
      const kind = parseRedisTarget(url).kind;
      const given: { password?: string; sentinelPassword?: string } = {};
      if (!passwords.password) {
        const needs =
          (await vscode.window.showQuickPick([NO_PASSWORD, ENTER_PASSWORD], {
            placeHolder:
              kind === 'sentinel'
                ? vscode.l10n.t('Do the master and its replicas need a password?')
                : vscode.l10n.t('Does this Redis need a password?'),
          })) === ENTER_PASSWORD;
        if (needs)
          given.password = await vscode.window.showInputBox({
            prompt: vscode.l10n.t('Redis password (kept in VS Code Secret Storage)'),
            password: true,
          });
      }
      if (kind === 'sentinel' && !passwords.sentinelPassword) {
        const needs =
          (await vscode.window.showQuickPick([NO_PASSWORD, ENTER_PASSWORD], {
            placeHolder: vscode.l10n.t('Do the sentinels themselves need a password (their requirepass)?'),
          })) === ENTER_PASSWORD;
        if (needs)
          given.sentinelPassword = await vscode.window.showInputBox({
            prompt: vscode.l10n.t('Sentinel password (kept in VS Code Secret Storage)'),
            password: true,
          });
      }
      await connection.configure(url, given, vscode.ConfigurationTarget.Workspace);
    }
    void tree.refresh();
    return connection.state;
  });

  reg('crawlStudio.startManagedRedis', async () => {
    const cfg = vscode.workspace.getConfiguration('crawlStudio');
    await cfg.update('redisUrl', undefined, vscode.ConfigurationTarget.Workspace);
    if (settings.redisUrl()) {
      void vscode.window
        .showWarningMessage(
          vscode.l10n.t(
            'crawlStudio.redisUrl is set in your user settings ({0}); clear it there to use a managed Redis.',
            settings.redisUrl(),
          ),
          vscode.l10n.t('Open Settings'),
        )
        .then((a) => a && vscode.commands.executeCommand('workbench.action.openSettings', 'crawlStudio.redisUrl'));
    }
    await connection.reset();
    await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: vscode.l10n.t('Starting a managed redis-server…') },
      () => connection.get(),
    );
    await tree.refresh();
    return connection.state;
  });

  reg('crawlStudio.refresh', async () => {
    await connection.get();
    await tree.refresh();
    return tree.queueNodes().map((q) => ({ name: q.name, counts: q.snapshot.counts, paused: q.snapshot.paused }));
  });
  reg('crawlStudio.loadMore', (node: MoreNode) => tree.loadMore(node.parent));

  // Queue actions
  const after = async <T>(p: Promise<T>) => {
    const r = await p;
    await tree.refresh();
    return r;
  };
  // Through the model: a task on a Redis Cluster has a queue per partition (frontier/layout.ts).
  reg('crawlStudio.queue.pause', (node: QueueNode) => after(tree.getModel()!.pause(node.name)));
  reg('crawlStudio.queue.resume', (node: QueueNode) => after(tree.getModel()!.resume(node.name)));
  reg('crawlStudio.queue.cleanCompleted', (node: QueueNode) => after(tree.getModel()!.clean(node.name, 'completed')));
  reg('crawlStudio.queue.cleanFailed', (node: QueueNode) => after(tree.getModel()!.clean(node.name, 'failed')));
  reg('crawlStudio.queue.drain', async (node: QueueNode, opts?: { skipConfirmation?: boolean }) => {
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
    await after(tree.getModel()!.drain(node.name));
    return true;
  });
  reg('crawlStudio.queue.delete', async (node: QueueNode, opts?: { skipConfirmation?: boolean }) => {
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
    await after(tree.getModel()!.deleteQueue(node.name));
    return true;
  });

  // Job actions
  // A row whose job is gone by the time its command runs (the tree refreshed under the menu) comes as undefined:
  // say so instead of failing with an internal error.
  const fresh = async (node: JobNode | undefined) => {
    if (!node?.parent || !tree.getModel()) {
      // The row was rendered but VS Code no longer knows its element (a refresh crossed its rendering): the
      // whole tree is read again so the row picked again is a live one.
      tree.rebuild();
      throw new Error(
        vscode.l10n.t('that job is no longer in the Queue Explorer (the tree refreshed under the menu): pick it again'),
      );
    }
    return (await tree.getModel()!.job(node.parent.queue.name, node.job.id!)) ?? node.job;
  };
  // As the dashboard's "Retry all": the job leaves the run's failure count and a finished run reopens.
  // What it did is said as Retry all says it (retryNotice.ts): with no worker running, Start Crawl is offered.
  reg('crawlStudio.job.retry', async (node: JobNode) => {
    const job = await fresh(node);
    const redis = await connection.get();
    const queue = node.parent.queue;
    const n = await after(retryFailedJobs(redis, queue.name, [job]));
    return afterRetry(redis, crawls, { name: queue.name, file: queue.snapshot.file }, n);
  });
  reg('crawlStudio.job.remove', async (node: JobNode) => after((await fresh(node)).remove()));
  reg('crawlStudio.job.promote', async (node: JobNode) => after((await fresh(node)).promote()));
  reg('crawlStudio.job.copyUrl', (node: JobNode) => vscode.env.clipboard.writeText(node.job.data.url));
  reg('crawlStudio.job.openUrl', (node: JobNode) => vscode.env.openExternal(vscode.Uri.parse(node.job.data.url)));
  reg('crawlStudio.job.showData', async (node: JobNode) => {
    const j = await fresh(node);
    await showJsonDocument(`${node.parent.queue.name} job ${j.id}`, {
      ...jobDocument(await jobRecordOf(j, node.parent.queue.name)),
      opts: j.opts,
    });
    return j.data;
  });
}

/** The task file to act on: the one given, the active task editor's, or the workspace's only or picked one. */
async function taskDocument(uri?: vscode.Uri): Promise<vscode.TextDocument | undefined> {
  if (uri) return vscode.workspace.openTextDocument(uri);
  const active = activeTaskDocument();
  if (active) return active;
  const picked = await pickTaskFile(vscode.l10n.t('Task file to crawl'));
  return picked ? vscode.workspace.openTextDocument(picked) : undefined;
}

function pickTaskFile(placeHolder: string): Promise<vscode.Uri | undefined> {
  return pick(placeHolder, {
    whenNone: vscode.l10n.t(
      'No *.crawl.yaml task file in this workspace. Create one with "Crawl Studio: New Task File".',
    ),
  });
}
