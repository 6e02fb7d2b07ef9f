import * as vscode from 'vscode';
import type { CrawlStudioApi } from './api';
import { TaskCodeLensProvider } from './codeLens';
import { registerCommands } from './commands';
import { registerJsonDocuments } from './jsonDocuments';
import { CrawlManager } from './crawls/crawlManager';
import { registerCrawlSecrets } from './crawlSecrets';
import { registerDesigner } from './designer';
import { registerResults } from './results';
import type { ExplorerNode } from './explorer/nodes';
import { QueueTreeProvider } from './explorer/queueTree';
import { RedisConnection } from './redisConnection';
import { announceManagedRedis } from './managedRedisNotice';
import { registerDemoShop } from './demoShop';
import { registerTaskProvider } from './taskProvider';
import { FixtureTests } from './fixtureTests';
import { onSettingsChange, settings } from './settings';
import { CrawlStatusBar } from './statusBar';
import { TASK_FILES } from './taskFiles';
import { WorkerManager } from './workers/workerManager';
import { WorkerTreeProvider } from './workers/workerTree';
import { InterruptedRuns } from './crawls/interruptedRuns';

// Activation wires the parts together and starts nothing expensive: Redis is connected when a view or a command
// first needs it, so opening a folder costs only the registrations.

export type { CrawlStudioApi } from './api';

export function activate(context: vscode.ExtensionContext): CrawlStudioApi {
  const connection = new RedisConnection(context);
  context.subscriptions.push(announceManagedRedis(context, connection));
  const workers = new WorkerManager(context);
  const secrets = registerCrawlSecrets(context);
  const designer = registerDesigner(context, secrets);
  const crawls = new CrawlManager(connection, workers, designer, secrets);
  context.subscriptions.push(syncRunningTaskFiles(crawls));
  const tree = new QueueTreeProvider(connection, settings.refreshIntervalMs);
  const view = vscode.window.createTreeView<ExplorerNode>('crawlStudio.queueExplorer', {
    treeDataProvider: tree,
    showCollapseAll: true,
  });
  tree.attach(view);
  const workerTree = new WorkerTreeProvider(workers, connection);
  const workerView = vscode.window.createTreeView('crawlStudio.workers', { treeDataProvider: workerTree });
  const statusBar = new CrawlStatusBar(crawls);
  const codeLens = new TaskCodeLensProvider(crawls);
  const fixtureTests = new FixtureTests();
  const interrupted = new InterruptedRuns(context, connection, crawls);

  context.subscriptions.push(
    connection,
    workers,
    crawls,
    tree,
    view,
    workerTree,
    workerView,
    statusBar,
    codeLens,
    fixtureTests,
    interrupted,
    vscode.languages.registerCodeLensProvider(TASK_FILES, codeLens),
    // Part of the API (api.ts): the extension's version, for other extensions and tests; not in the palette.
    vscode.commands.registerCommand(
      'crawlStudio.version',
      () => (context.extension.packageJSON as { version: string }).version,
    ),
    ...listeners(connection, tree, view, crawls),
  );
  if (view.visible)
    void connection.get().then(
      () => tree.refresh(),
      () => tree.refresh(),
    );
  registerJsonDocuments(context);
  registerDemoShop(context);
  registerTaskProvider(context, crawls);
  registerCommands({ context, connection, crawls, workers, tree, secrets });
  // After a reload: the crawls the last window drove, now driven by nobody, are offered Resume and Stop.
  const lastWindowChecked = interrupted.checkLastWindow().catch(() => []);
  void lastWindowChecked.then((offered) => {
    if (offered.length > 0) void tree.refresh();
  });
  const api: CrawlStudioApi = {
    connection,
    crawls,
    workers,
    tree,
    workerTree,
    statusBar,
    codeLens,
    fixtureTests,
    interrupted,
    lastWindowChecked,
  };
  registerResults(context, api);
  return api;
}

/**
 * The editor title shows Stop Crawl instead of Start Crawl on a task file whose crawl runs (issue 23, item 7), from
 * the same running task files, on the same event, as the CodeLens (codeLens.ts).
 */
function syncRunningTaskFiles(crawls: CrawlManager): vscode.Disposable {
  const syncRunning = () =>
    void vscode.commands.executeCommand('setContext', 'crawlStudio.runningTaskFiles', crawls.runningFiles());
  syncRunning();
  return crawls.onDidChangeRunning(syncRunning);
}

/** What follows the connection, the settings and the crawls: the explorer's reads, a context key, notifications. */
function listeners(
  connection: RedisConnection,
  tree: QueueTreeProvider,
  view: vscode.TreeView<ExplorerNode>,
  crawls: CrawlManager,
): vscode.Disposable[] {
  return [
    // The explorer connects on its own when it becomes visible, so a user who opens the view sees the queues.
    view.onDidChangeVisibility(
      (e) =>
        e.visible &&
        void connection.get().then(
          () => tree.refresh(),
          () => tree.refresh(),
        ),
    ),
    connection.onDidChangeState(
      (s) =>
        void vscode.commands.executeCommand(
          'setContext',
          'crawlStudio.connected',
          s.kind === 'ready' || s.kind === 'lost' || s.kind === 'connecting',
        ),
    ),
    onSettingsChange((e) => {
      if (e.affectsConfiguration('crawlStudio.redisUrl')) void connection.reset().then(() => tree.refresh());
    }),
    crawls.onDidFinish(({ message, result }) => {
      void vscode.window
        .showInformationMessage(message, vscode.l10n.t('Open Results'))
        .then(
          (a) =>
            a &&
            vscode.commands.executeCommand('crawlStudio.openResults', vscode.Uri.file(result.status.run?.file ?? '')),
        );
    }),
  ];
}

export function deactivate(): void {}
