import * as vscode from 'vscode';
import { parseRedisTarget, splitPasswords } from '../../core/url/redisTarget';
import { settings } from '../settings';
import type { CommandDeps, CommandTable } from './deps';

// Which Redis the extension uses: one given (with its passwords kept in Secret Storage), or a managed
// redis-server for the workspace.

// Labels the code compares answers with, localized once (vscode.l10n: English is the only bundle so far).
const NO_PASSWORD = vscode.l10n.t('No password');
const ENTER_PASSWORD = vscode.l10n.t('Enter a password…');

async function connectRedis({ connection, tree }: CommandDeps, url?: string) {
  url ??= await askRedisUrl();
  if (url === undefined) return undefined;
  if (url === '') {
    await vscode.workspace
      .getConfiguration('crawlStudio')
      .update('redisUrl', undefined, vscode.ConfigurationTarget.Workspace);
    await connection.reset();
    await connection.get();
  } else {
    await connection.configure(url, await askPasswords(url), vscode.ConfigurationTarget.Workspace);
  }
  void tree.refresh();
  return connection.state;
}

function askRedisUrl(): Thenable<string | undefined> {
  return vscode.window.showInputBox({
    prompt: vscode.l10n.t(
      'Redis: a URL, sentinels and a master name, or cluster nodes (leave empty to use a managed redis-server for this workspace)',
    ),
    placeHolder:
      'redis://host:6379/0 · redis+sentinel://host:26379,host2:26379/mymaster · redis+cluster://host:7000,host2:7001',
    value: settings.redisUrl(),
    ignoreFocusOut: true, // copied from elsewhere: a cloud console, a password manager
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
}

/** The passwords `url` does not carry, asked for (the sentinels' too, for a Sentinel target). */
async function askPasswords(url: string): Promise<{ password?: string; sentinelPassword?: string }> {
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
        ignoreFocusOut: true,
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
        ignoreFocusOut: true,
      });
  }
  return given;
}

async function startManagedRedis({ connection, tree }: CommandDeps) {
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
}

export const REDIS_COMMANDS: CommandTable = {
  'crawlStudio.connectRedis': connectRedis,
  'crawlStudio.startManagedRedis': startManagedRedis,
};
