import * as vscode from 'vscode';
import { formatDiagnostic } from '../../core/task/diagnostics';
import type { CrawlTask } from '../../core/task/model';
import type { CrawlStatus } from '../../frontier/types';
import type { CrawlLaunch, LaunchResult } from '../../run/launcher';
import { engine } from '../lazy';
import type { RedisConnection } from '../redisConnection';
import { requireTrust, settings } from '../settings';
import type { WorkerManager, WorkerPool } from '../workers/workerManager';
import { crawlEndMessage } from '../../run/endMessage';

// Crawls started from the editor. Each is a CrawlLaunch, made by launchCrawl, the very function behind
// `crawl-studio run`: session, store and writer, local workers (shown in the Workers view) and cleanup order are
// the launcher's; this class only tracks what runs, feeds the status bar and reports how each run ended.

export interface RunningCrawl {
  readonly task: CrawlTask;
  /** The run as the launcher behind `crawl-studio run` put it together: session, store, workers. */
  readonly launch: CrawlLaunch;
  readonly pool: WorkerPool;
  readonly done: Promise<LaunchResult>;
  status: CrawlStatus | null;
  pagesPerSec: number;
  /** The window of pagesPerSec in words ("last 30 s"), as every view names it (observe/taskFigures.ts). */
  rateLabel: string;
  /** When the session last reported progress (Date.now()); the status bar marks older figures as stale. */
  statusAt: number;
}

export class CrawlManager implements vscode.Disposable {
  private readonly running = new Map<string, RunningCrawl>();
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChange = this.changed.event;
  private readonly runningChanged = new vscode.EventEmitter<void>();
  /**
   * Only when a task file's crawl starts or ends, never on a progress tick. The CodeLens and the editor title's
   * Start/Stop follow it: the workbench postpones a lens refresh on each event of its provider (a debounce that
   * grows with the provider's time), so ticks every second kept a stale "Stop Crawl" after the run ended (issue 32).
   */
  readonly onDidChangeRunning = this.runningChanged.event;
  private readonly finished = new vscode.EventEmitter<{ task: string; result: LaunchResult; message: string }>();
  /** A crawl that ended (finished, stopped or interrupted), with the one message the editor shows (crawlEndMessage). */
  readonly onDidFinish = this.finished.event;
  private readonly failed = new vscode.EventEmitter<{ task: string; message: string }>();
  /** A crawl that was refused or ended with an error, with the very message the editor showed. */
  readonly onDidFail = this.failed.event;

  constructor(
    private readonly connection: RedisConnection,
    private readonly workers: WorkerManager,
    /** The designer's task-file problems: Start Crawl and Validate publish through the same collection. */
    private readonly problems: { check(doc: vscode.TextDocument): Promise<vscode.Diagnostic[]> },
    /** Login and proxy credentials kept in Secret Storage, handed to the workers by environment. */
    private readonly secrets?: { envFor(task: CrawlTask): Promise<Record<string, string>> },
  ) {}

  get(task: string): RunningCrawl | undefined {
    return this.running.get(task);
  }

  list(): RunningCrawl[] {
    return [...this.running.values()];
  }

  /** The task files whose crawl runs here: what the CodeLens and the editor title's Start/Stop show. */
  runningFiles(): string[] {
    return this.list().map((r) => r.task.file);
  }

  /** Whether the crawl of the task file at `file` (a file system path) runs here. */
  isRunning(file: string): boolean {
    return this.list().some((r) => r.task.file === file);
  }

  /** Validates the document; errors go to the Problems panel and stop the start. */
  async validate(doc: vscode.TextDocument): Promise<CrawlTask | null> {
    await this.problems.check(doc);
    const { parseTask } = await engine();
    return parseTask(doc.getText(), doc.uri.fsPath).task;
  }

  async start(doc: vscode.TextDocument): Promise<RunningCrawl> {
    requireTrust(
      'Crawl Studio does not run crawls in an untrusted workspace: a task file runs programs and sends requests. Trust the workspace to crawl.',
    );
    if (doc.isDirty) await doc.save();
    const { parseTask, launchCrawl } = await engine();
    const task = await this.validate(doc);
    if (!task) {
      const n = parseTask(doc.getText(), doc.uri.fsPath).diagnostics.filter((d) => d.severity === 'error');
      throw new TaskInvalidError(
        vscode.l10n.t(
          '{0} has {1} error(s): {2}',
          vscode.workspace.asRelativePath(doc.uri),
          n.length,
          n.map(formatDiagnostic)[0] ?? '',
        ),
      );
    }
    await this.connection.get();
    const secretEnv = await this.secrets?.envFor(task);
    const existing = await this.takingPages(task.name);
    if (existing) return existing;
    const scaling = settings.scaling();
    const launch = launchCrawl({
      task,
      redisUrl: this.connection.workerUrl!,
      workers: scaling.workers,
      concurrency: scaling.concurrency,
      workerScript: this.workers.workerScript,
      execPath: process.execPath,
      browserPath: settings.browserPath() || undefined,
      // A trusted workspace (requireTrust above) is the editor's permission for `browser.actions` scripts.
      allowScripts: true,
      secretEnv,
      front: 'VS Code',
      pollMs: 1000,
      onRedisWarning: (message) => void vscode.window.showWarningMessage(`Crawl Studio: ${message}`),
      onProgress: (p) => {
        const rc = this.running.get(task.name);
        if (rc) {
          rc.status = p.status;
          rc.pagesPerSec = p.pagesPerSec;
          if (p.figures) rc.rateLabel = p.figures.rate.label;
          rc.statusAt = Date.now();
          this.changed.fire();
        }
      },
    });
    const pool = this.workers.track(task.name, launch.supervisor);
    const done = launch.done.finally(() => {
      this.running.delete(task.name);
      this.workers.untrack(pool);
      this.changed.fire();
      this.runningChanged.fire();
    });
    const rc: RunningCrawl = {
      task,
      launch,
      pool,
      done,
      status: null,
      pagesPerSec: 0,
      rateLabel: 'pages/s',
      statusAt: Date.now(),
    };
    this.running.set(task.name, rc);
    this.changed.fire();
    this.runningChanged.fire();
    void done.then(
      (result) => this.finished.fire({ task: task.name, result, message: crawlEndMessage(task, result) }),
      (err: Error) => {
        // Another process drives the task's run: nothing was started here, so nothing "stopped".
        const message =
          err.name === 'RunInProgressError'
            ? vscode.l10n.t("Crawl '{0}' not started: {1}", task.name, err.message)
            : vscode.l10n.t("Crawl '{0}' stopped with an error: {1}", task.name, err.message);
        void vscode.window.showErrorMessage(message);
        this.failed.fire({ task: task.name, message });
      },
    );
    return rc;
  }

  /**
   * The task's crawl here that takes pages. One winding down (its run drained or was stopped, its workers finishing)
   * takes no more: it is waited for, so that Start then begins the next session. Returning it started nothing, and
   * a Start clicked just after a Stop or a finish was lost.
   */
  private async takingPages(name: string): Promise<RunningCrawl | undefined> {
    for (let rc = this.running.get(name); rc; rc = this.running.get(name)) {
      if (rc.launch.takingPages) return rc;
      await rc.done.catch(() => undefined);
    }
    return undefined;
  }

  /**
   * Stop (README, "Stop, Start, Pause, Resume"): ends the run through the launcher (CrawlLaunch.end: no worker
   * anywhere takes another of its pages; the next Start begins a new run from the start URLs). Local workers
   * finish their pages; cancelled, they are killed at once instead. The one message about it is onDidFinish's
   * ("stopped", or "finished" when the run drained first). The result, or undefined when nothing ran here.
   */
  async stop(task: string, token?: vscode.CancellationToken): Promise<LaunchResult | undefined> {
    const rc = this.running.get(task);
    if (!rc) return undefined;
    rc.launch.end();
    const sub = token?.onCancellationRequested(() => void rc.launch.kill(10_000, { end: true }));
    try {
      return await rc.done.catch(() => undefined);
    } finally {
      sub?.dispose();
    }
  }

  /**
   * Interrupts the crawl as Ctrl-C does `crawl-studio run` (the `run` task's Ctrl+C): local workers finish their
   * pages and the run is kept; the next Start resumes it. The message says "interrupted".
   */
  async interrupt(task: string): Promise<LaunchResult | undefined> {
    const rc = this.running.get(task);
    if (!rc) return undefined;
    rc.launch.stop();
    return rc.done.catch(() => undefined);
  }

  dispose(): void {
    for (const rc of this.running.values()) rc.launch.stop();
    this.changed.dispose();
    this.runningChanged.dispose();
    this.finished.dispose();
    this.failed.dispose();
  }
}

export class TaskInvalidError extends Error {}
