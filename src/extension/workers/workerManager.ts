import type { Scaled } from '../../core/autoscale/range';
import * as vscode from 'vscode';
import { WorkerSupervisor, type WorkerProcessInfo } from '../../run/supervisor';
import { workerExitMessage } from '../../run/workerExit';

// Local worker processes started from the editor: each is a child process running dist/worker.js (the same
// program as `crawl-studio worker`). Their logs share one log channel, "Crawl Studio Workers", each line tagged with
// its worker's pid and at its own level (a channel per pid piled up one Output entry per worker ever started).
// A crash never reaches the extension host; an unexpected exit is reported with the worker's last lines.

export interface TrackedWorker extends WorkerProcessInfo {
  readonly pool: WorkerPool;
}

export class WorkerPool {
  constructor(
    readonly label: string,
    readonly supervisor: WorkerSupervisor,
  ) {}
}

export class WorkerManager implements vscode.Disposable {
  private readonly pools = new Set<WorkerPool>();
  private log: vscode.LogOutputChannel | null = null;
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChange = this.changed.event;

  constructor(private readonly context: vscode.ExtensionContext) {}

  get workerScript(): string {
    return this.context.asAbsolutePath('dist/worker.js');
  }

  /** Watches a supervisor's processes: logs, exits, the Workers view. */
  track(label: string, supervisor: WorkerSupervisor): WorkerPool {
    const pool = new WorkerPool(label, supervisor);
    this.pools.add(pool);
    supervisor.on('spawn', (info) => {
      this.channel().info(`[${info.pid}] worker started for ${label} (concurrency ${info.concurrency})`);
      this.changed.fire();
    });
    supervisor.on('log', (pid, line) => logLine(this.channel(), pid, line));
    supervisor.on('released', (pid, jobs) =>
      this.channel().info(`[${pid}] ${jobs} unfinished page${jobs === 1 ? '' : 's'} went back to the queue`),
    );
    supervisor.on('exit', (pid, code, signal, expected, lastLines) => {
      const ch = this.channel();
      const exited = `[${pid}] worker exited (${signal ?? `code ${code}`})`;
      if (expected) ch.info(exited);
      else ch.error(exited);
      this.changed.fire();
      if (!expected) {
        void vscode.window
          .showErrorMessage(`Crawl Studio (${label}): ${workerExitMessage(pid, code, signal, lastLines)}`, 'Show Log')
          .then((a) => a && ch.show());
      }
    });
    return pool;
  }

  /**
   * Starts a pool of workers for task files, independent of any crawl session (e.g. to add capacity). `secretEnv`:
   * the tasks' credentials from Secret Storage, handed over by environment as Start Crawl does (never arguments).
   */
  start(
    taskFiles: readonly string[],
    count: number,
    concurrency: number | Scaled,
    redisUrl: string,
    secretEnv?: Readonly<Record<string, string>>,
  ): WorkerPool {
    const supervisor = new WorkerSupervisor({
      workerScript: this.workerScript,
      taskFiles,
      redis: redisUrl,
      concurrency,
      restartOnCrash: true,
      execPath: process.execPath,
      // Started only in a trusted workspace (commands.ts): the editor's permission for `browser.actions` scripts.
      allowScripts: true,
      ...(secretEnv && Object.keys(secretEnv).length ? { env: { ...secretEnv } } : {}),
    });
    const pool = this.track(taskFiles.map((f) => vscode.workspace.asRelativePath(f)).join(', '), supervisor);
    supervisor.start(count);
    return pool;
  }

  untrack(pool: WorkerPool): void {
    this.pools.delete(pool);
    this.changed.fire();
  }

  list(): TrackedWorker[] {
    return [...this.pools].flatMap((pool) => pool.supervisor.list().map((w) => ({ ...w, pool })));
  }

  /** The workers' log channel (one for all of them; lines carry their worker's pid). */
  channel(): vscode.LogOutputChannel {
    if (!this.log) {
      this.log = vscode.window.createOutputChannel('Crawl Studio Workers', { log: true });
      this.context.subscriptions.push(this.log);
    }
    return this.log;
  }

  async stop(pid: number): Promise<void> {
    for (const pool of this.pools)
      if (pool.supervisor.list().some((w) => w.pid === pid)) await pool.supervisor.stopOne(pid);
    this.changed.fire();
  }

  async restart(pid: number): Promise<void> {
    for (const pool of this.pools)
      if (pool.supervisor.list().some((w) => w.pid === pid)) await pool.supervisor.restart(pid);
    this.changed.fire();
  }

  /**
   * Graceful: in-flight pages finish (or go back to the queue after the grace period). Cancelled (the progress
   * notification's Cancel), the workers are killed at once and their pages go back to the queue.
   */
  async stopAll(token?: vscode.CancellationToken): Promise<void> {
    const pools = [...this.pools];
    const sub = token?.onCancellationRequested(
      () => void Promise.all(pools.map((p) => p.supervisor.killAll('SIGKILL'))),
    );
    if (token?.isCancellationRequested) await Promise.all(pools.map((p) => p.supervisor.killAll('SIGKILL')));
    try {
      await Promise.all(pools.map((p) => p.supervisor.stopAll()));
    } finally {
      sub?.dispose();
    }
    this.changed.fire();
  }

  dispose(): void {
    for (const pool of this.pools) void pool.supervisor.stopAll(5_000);
    this.changed.dispose();
  }
}

/**
 * A worker's output line at its own level: workers print `[level] message` (src/worker/runtime.ts), and the log
 * channel adds the time itself. Other lines (a crash's stack trace) are errors when they look like one, else info.
 */
function logLine(ch: vscode.LogOutputChannel, pid: number, line: string): void {
  const m = /^\[(info|warn|error|debug)\]\s?(.*)$/.exec(line);
  const text = `[${pid}] ${m ? m[2] : line}`;
  const level = m?.[1] ?? (/\b(Error|ERR_|at .+:\d+:\d+\))/.test(line) ? 'error' : 'info');
  if (level === 'error') ch.error(text);
  else if (level === 'warn') ch.warn(text);
  else if (level === 'debug') ch.debug(text);
  else ch.info(text);
}
