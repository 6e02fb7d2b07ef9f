import * as vscode from 'vscode';
import { isReadOnlyError, readOnlyText } from '../redis/readOnly';
import { RedisNotFoundError } from '../redis/server';
import { TaskInvalidError } from './crawls/crawlManager';
import { describeConnectionError } from './redisConnection';
import { UntrustedWorkspaceError } from './settings';

// How every command of the extension fails: a notification that says what to do next, and the command answers
// undefined (commands return their results, so a caller awaiting executeCommand gets undefined, not a throw).

/** A command handler whose failure is reported (reportError) and answered with undefined. */
export function reporting(fn: (...args: never[]) => unknown): (...args: unknown[]) => Promise<unknown> {
  return async (...args: unknown[]) => {
    try {
      // The handler declares what its arguments are; VS Code passes whatever the caller gave.
      return await fn(...(args as never[]));
    } catch (err) {
      reportError(err);
      return undefined;
    }
  };
}

/**
 * Shows an error with the actions that fix it. Not awaited: a command ends when it fails, not when the user
 * dismisses the notification (a caller awaiting executeCommand would otherwise wait for a click).
 */
export function reportError(err: unknown): void {
  const act = (message: string, actions: Record<string, () => unknown>) =>
    void vscode.window
      .showErrorMessage(message, ...Object.keys(actions))
      .then((choice) => (choice ? actions[choice]!() : undefined));
  if (err instanceof TaskInvalidError) {
    return act(err.message, {
      'Show Problems': () => vscode.commands.executeCommand('workbench.actions.view.problems'),
    });
  }
  // Enqueue URL, Pause or Retry on a replica (the Queue Explorer reads it well): the CLI's and the monitor's words.
  if (isReadOnlyError(err)) {
    return act(`Crawl Studio: ${readOnlyText()}`, {
      'Connect to Redis…': () => vscode.commands.executeCommand('crawlStudio.connectRedis'),
    });
  }
  const text = err instanceof Error ? err.message : String(err);
  if (err instanceof UntrustedWorkspaceError) {
    return act(`Crawl Studio: ${text}`, {
      'Manage Workspace Trust': () => vscode.commands.executeCommand('workbench.trust.manage'),
    });
  }
  if (err instanceof RedisNotFoundError || /redis|ECONNREFUSED/i.test(text)) {
    const { message, actions } = describeConnectionError(err);
    const run: Record<string, () => unknown> = {
      'Connect to Redis…': () => vscode.commands.executeCommand('crawlStudio.connectRedis'),
      'Set redis-server Path': () =>
        vscode.commands.executeCommand('workbench.action.openSettings', 'crawlStudio.redisServerPath'),
    };
    return act(message, Object.fromEntries(actions.map((a) => [a, run[a] ?? (() => undefined)])));
  }
  void vscode.window.showErrorMessage(`Crawl Studio: ${text}`);
}
