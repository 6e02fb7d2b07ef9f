import * as vscode from 'vscode';
import { WorkerSupervisor, type WorkerProcessInfo } from '../../run/supervisor';

// Local worker processes started from the editor: each is a child process running dist/worker.js (the same
// program as `crawl-studio worker`), with its log in its own output channel. A crash never reaches the
// extension host; an unexpected exit is reported with the worker's last lines.

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
  private readonly channels = new Map<number, vscode.LogOutputChannel>();
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
      this.channel(info.pid).info(`worker ${info.pid} started for ${label} (concurrency ${info.concurrency})`);
      this.changed.fire();
    });
    supervisor.on('log', (pid, line) => this.channel(pid).appendLine(line));
    supervisor.on('released', (pid, jobs) => this.channel(pid).info(`${jobs} unfinished page${jobs === 1 ? '' : 's'} of worker ${pid} went back to the queue`));
    supervisor.on('exit', (pid, code, signal, expected, lastLines) => {
      const ch = this.channel(pid);
      ch.info(`worker ${pid} exited (${signal ?? `code ${code}`})`);
      this.changed.fire();
      if (!expected) {
        void vscode.window
          .showErrorMessage(`Crawl Studio worker ${pid} (${label}) exited unexpectedly (${signal ?? `code ${code}`}): ${lastLines.slice(-3).join(' | ') || 'no output'}`, 'Show Log')
          .then((a) => a && ch.show());
      }
    });
    return pool;
  }

  /** Starts a pool of workers for task files, independent of any crawl session (e.g. to add capacity). */
  start(taskFiles: readonly string[], count: number, concurrency: number, redisUrl: string): WorkerPool {
    const supervisor = new WorkerSupervisor({
      workerScript: this.workerScript,
      taskFiles,
      redis: redisUrl,
      concurrency,
      restartOnCrash: true,
      execPath: process.execPath,
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

  channel(pid: number): vscode.LogOutputChannel {
    let ch = this.channels.get(pid);
    if (!ch) {
      ch = vscode.window.createOutputChannel(`Crawl Studio Worker ${pid}`, { log: true });
      this.channels.set(pid, ch);
      this.context.subscriptions.push(ch);
    }
    return ch;
  }

  async stop(pid: number): Promise<void> {
    for (const pool of this.pools) if (pool.supervisor.list().some((w) => w.pid === pid)) await pool.supervisor.stopOne(pid);
    this.changed.fire();
  }

  async restart(pid: number): Promise<void> {
    for (const pool of this.pools) if (pool.supervisor.list().some((w) => w.pid === pid)) await pool.supervisor.restart(pid);
    this.changed.fire();
  }

  /** Graceful: in-flight pages finish (or go back to the queue after the grace period). */
  async stopAll(): Promise<void> {
    await Promise.all([...this.pools].map((p) => p.supervisor.stopAll()));
    this.changed.fire();
  }

  dispose(): void {
    for (const pool of this.pools) void pool.supervisor.stopAll(5_000);
    this.changed.dispose();
  }
}
