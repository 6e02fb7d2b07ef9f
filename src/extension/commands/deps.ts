import type * as vscode from 'vscode';
import type { CrawlTask } from '../../core/task/model';
import type { CrawlManager } from '../crawls/crawlManager';
import type { QueueTreeProvider } from '../explorer/queueTree';
import type { RedisConnection } from '../redisConnection';
import type { WorkerManager } from '../workers/workerManager';

// What every command of the extension is given, and the shape of an area's table of commands.

export interface CommandDeps {
  readonly context: vscode.ExtensionContext;
  readonly connection: RedisConnection;
  readonly crawls: CrawlManager;
  readonly workers: WorkerManager;
  readonly tree: QueueTreeProvider;
  /** Login and proxy credentials from Secret Storage, for the workers Start Workers… starts (as Start Crawl's). */
  readonly secrets: { envFor(task: CrawlTask): Promise<Record<string, string>> };
}

/** A command's handler: the extension's parts, then the arguments VS Code (or a test, or a menu) passes. */
export type Command = (deps: CommandDeps, ...args: never[]) => unknown;

/** An area's commands by id. */
export type CommandTable = Readonly<Record<string, Command>>;

/** What `action` answers, once the Queue Explorer shows what it did. */
export async function thenRefresh<T>(tree: QueueTreeProvider, action: Promise<T>): Promise<T> {
  const r = await action;
  await tree.refresh();
  return r;
}
