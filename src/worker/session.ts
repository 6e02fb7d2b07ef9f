import type { Redis } from 'ioredis';
import type { CrawlTask } from '../core/task/model';
import { CrawlQueue, type CrawlStatus, type RunInfo } from '../queue/crawl';
import { connectRedis } from '../queue/redis';
import { WorkerSupervisor, type WorkerProcessInfo } from './supervisor';

// One crawl driven from this process: start or resume the run, start local workers, watch progress, and
// finalize the run when it drains. The CLI's `run` and the extension's "Start Crawl" are both this class, so
// the two cannot drift apart. Remote workers (`crawl-studio worker`) can join the same run at any time.

export interface Progress {
  readonly status: CrawlStatus;
  readonly pagesPerSec: number;
  readonly elapsedMs: number;
}

/** Hooks the storage pipeline into the session; finalize() must flush everything buffered. */
export interface SessionStoreHooks {
  finalize(run: RunInfo, status: CrawlStatus, durationMs: number): Promise<Record<string, unknown>>;
  backlog?(): Promise<number>;
}

export interface SessionOptions {
  readonly task: CrawlTask;
  readonly redisUrl: string;
  readonly workers: number;
  readonly concurrency: number;
  readonly workerScript: string;
  readonly fresh?: boolean;
  readonly lockDurationMs?: number;
  readonly stalledIntervalMs?: number;
  readonly restartOnCrash?: boolean;
  readonly execPath?: string;
  readonly store?: SessionStoreHooks;
  readonly pollMs?: number;
  readonly onProgress?: (p: Progress) => void;
  readonly onWorkerLog?: (pid: number, line: string) => void;
  readonly onWorkerExit?: (pid: number, code: number | null, signal: string | null, expected: boolean, lastLines: string[]) => void;
}

export interface SessionResult {
  readonly run: RunInfo;
  readonly resumed: boolean;
  readonly status: CrawlStatus;
  readonly durationMs: number;
  /** Null when another process finalized the run. */
  readonly summary: Record<string, unknown> | null;
}

export class CrawlSession {
  readonly redis: Redis;
  readonly crawl: CrawlQueue;
  readonly supervisor: WorkerSupervisor;
  private stopping = false;
  private wake: (() => void) | null = null;

  constructor(private readonly opts: SessionOptions) {
    this.redis = connectRedis(opts.redisUrl);
    this.crawl = new CrawlQueue(this.redis, opts.task.name);
    this.supervisor = new WorkerSupervisor({
      workerScript: opts.workerScript,
      taskFiles: [opts.task.file],
      redis: opts.redisUrl,
      concurrency: opts.concurrency,
      lockDurationMs: opts.lockDurationMs,
      stalledIntervalMs: opts.stalledIntervalMs,
      restartOnCrash: opts.restartOnCrash ?? true,
      execPath: opts.execPath,
    });
    if (opts.onWorkerLog) this.supervisor.on('log', opts.onWorkerLog);
    if (opts.onWorkerExit) this.supervisor.on('exit', opts.onWorkerExit);
  }

  workers(): WorkerProcessInfo[] {
    return this.supervisor.list();
  }

  /** Runs until the crawl drains (or stop() is called); resolves with the final status. */
  async run(): Promise<SessionResult> {
    const started = Date.now();
    const { run, resumed } = await this.crawl.startRun(this.opts.task, { fresh: this.opts.fresh });
    if (this.opts.workers > 0) this.supervisor.start(this.opts.workers);
    let lastDone = 0;
    let lastAt = Date.now();
    let rate = 0;
    let summary: Record<string, unknown> | null = null;
    let status: CrawlStatus;
    try {
      for (;;) {
        status = await this.crawl.status();
        const now = Date.now();
        const done = (status.stats?.done ?? 0) + (status.stats?.failed ?? 0);
        const inst = ((done - lastDone) * 1000) / Math.max(1, now - lastAt);
        rate = rate === 0 ? inst : rate * 0.6 + inst * 0.4;
        lastDone = done;
        lastAt = now;
        this.opts.onProgress?.({ status, pagesPerSec: rate, elapsedMs: now - started });
        if (this.stopping) break;
        const verdict = await this.crawl.tryFinalize(run.run);
        if (verdict === 'won') {
          const durationMs = Date.now() - run.startedAt;
          status = await this.crawl.status();
          summary = (await this.opts.store?.finalize(run, status, durationMs)) ?? {};
          summary = { ...summaryFromStatus(status, durationMs), ...summary };
          await this.crawl.markFinished(run.run, summary);
          status = await this.crawl.status();
          break;
        }
        if (verdict === 'done') {
          status = await this.crawl.status();
          break;
        }
        await new Promise<void>((r) => {
          this.wake = r;
          setTimeout(r, this.opts.pollMs ?? 500);
        });
      }
    } finally {
      await this.supervisor.stopAll();
    }
    return { run, resumed, status: status!, durationMs: Date.now() - started, summary };
  }

  /** Stops watching and stops the local workers gracefully; the run stays resumable. */
  stop(): void {
    this.stopping = true;
    this.wake?.();
  }

  async close(): Promise<void> {
    await this.crawl.close();
    this.redis.disconnect();
  }
}

export function summaryFromStatus(status: CrawlStatus, durationMs: number): Record<string, unknown> {
  const s = status.stats;
  return {
    pages: s?.done ?? 0,
    failed: s?.failed ?? 0,
    skipped: s?.skipped ?? {},
    failures: s?.failures ?? {},
    items: s?.items ?? 0,
    itemProblems: s?.problems ?? 0,
    duplicateLinks: s?.duplicates ?? 0,
    bytes: s?.bytes ?? 0,
    durationMs,
  };
}
