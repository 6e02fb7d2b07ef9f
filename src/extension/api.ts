import type { TaskCodeLensProvider } from './codeLens';
import type { CrawlManager } from './crawls/crawlManager';
import type { QueueTreeProvider } from './explorer/queueTree';
import type { RedisConnection } from './redisConnection';
import type { CrawlStatusBar } from './statusBar';
import type { WorkerManager } from './workers/workerManager';
import type { WorkerTreeProvider } from './workers/workerTree';
import type { FixtureTests } from './fixtureTests';
import type { InterruptedRuns } from './crawls/interruptedRuns';

// The extension's API: what activate() returns, i.e. what `vscode.extensions.getExtension(id).exports` (and
// `await ext.activate()`) gives another extension or a test. A deliberate API, kept in its own file so the
// modules that need the parts (results, dashboard) import this type, not extension.ts, which imports them.
//
// Also part of it: the command `crawlStudio.version`, which answers the extension's version (package.json
// "version") and is not contributed to the palette. Every contributed command returns its result as well (see
// commands.ts). Test-only commands are registered only when the extension host runs tests (testHooks.ts).

/** The object activate() returns: the extension's live parts, one of each for the window. */
export interface CrawlStudioApi {
  /** The Redis connection (connects on first get(); a managed redis-server when crawlStudio.redisUrl is empty). */
  readonly connection: RedisConnection;
  /** The crawls this window started. */
  readonly crawls: CrawlManager;
  /** The worker processes this window started. */
  readonly workers: WorkerManager;
  /** The Queue Explorer view's data. */
  readonly tree: QueueTreeProvider;
  /** The Workers view's data. */
  readonly workerTree: WorkerTreeProvider;
  readonly statusBar: CrawlStatusBar;
  /** The Start/Stop lenses on task files. */
  readonly codeLens: TaskCodeLensProvider;
  /** Fixtures in the Testing view. */
  readonly fixtureTests: FixtureTests;
  /** The crawls the last window drove, looked at again after a reload; `lastWindowChecked` is that look. */
  readonly interrupted: InterruptedRuns;
  readonly lastWindowChecked: Promise<string[]>;
}
