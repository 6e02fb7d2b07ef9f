import * as vscode from 'vscode';
import type { RedisConnection } from './redisConnection';

// Opening the sidebar (or starting a crawl) with no Redis configured starts a private redis-server for the
// workspace: a program the user did not ask for by name. It is said once per workspace, with how to use one's own
// Redis instead (issue 23, item 7: the sidebar "silently starts a redis-server").

const SHOWN_KEY = 'crawlStudio.managedRedisAnnounced';

function managedRedisMessage(url: string): string {
  return vscode.l10n.t(
    'Crawl Studio started its own redis-server for this workspace ({0}), with its data kept in the workspace\'s storage, so crawls and their queues survive a restart. To use your own Redis instead, run "Crawl Studio: Connect to Redis…" or set crawlStudio.redisUrl.',
    url,
  );
}

export function announceManagedRedis(context: vscode.ExtensionContext, connection: RedisConnection): vscode.Disposable {
  return connection.onDidChangeState((s) => {
    if (s.kind !== 'ready' || !s.managed || context.workspaceState.get<boolean>(SHOWN_KEY)) return;
    void context.workspaceState.update(SHOWN_KEY, true);
    void vscode.window
      .showInformationMessage(managedRedisMessage(s.url), vscode.l10n.t('Use My Own Redis…'))
      .then((a) => a && vscode.commands.executeCommand('crawlStudio.connectRedis'));
  });
}
