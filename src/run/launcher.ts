import type { CrawlTask } from '../core/task/model';
import type { CrawlStatus, RunInfo } from '../frontier/types';
import { connectRedis, type Redis } from '../redis/connect';
import { watchConnection, type ConnectionWatch } from '../redis/check';
import { isRedisFull, readMemory, RedisFullError } from '../redis/memory';
import { CrawlSession, type Progress, type SessionResult } from './session';
import { restoreRevisits } from './revisitRestore';
import { attachStore, checkStore, type AttachedStore } from './storeAttachment';
import type { ItemRow } from '../store';
import { rowsWrittenByRun } from '../store/runRows';
import { runChangeCounts } from '../store/history/query';
import type { RunChangeCounts } from '../core/history/diff';
import type { WorkerSupervisor } from './supervisor';
import type { Scaled } from '../core/autoscale/range';

// The one way a crawl run is put together, called by both front ends: `crawl-studio run` / `writer` and the
// editor's Start Crawl. It owns the run's parts and their order: the session (the run in Redis, the local
// worker processes), the store and its writer on their own Redis connection, and their cleanup. A front end
// only chooses Redis, renders progress and the summary, and decides when to stop. A fix to how a run starts,
// stores or ends lands here once, for both.
//
// Order, and why: the run's lease first (a task another live process drives is refused, see
// frontier/runLease.ts), then the workers are spawned and the run is seeded at once, once a PostgreSQL store has
// been checked (checkStore: a wrong password or database stops the launch with nothing queued); the store (an
// SQLite file, a distant database) opens once the workers have booted, so it does not compete with their boot.
// Entries wait in the items stream until the writer runs, and finalizing waits for the store, so nothing is
// finalized before it is open. A store that cannot open stops the run; what the workers fetched meanwhile stays
// in the stream for the next run, which resumes this one.

export interface LaunchOptions {
  readonly task: CrawlTask;
  readonly redisUrl: string;
  /** Local worker processes: a number, or a range they are scaled in (`--workers auto|MIN..MAX`). */
  readonly workers: number | Scaled;
  /** Requests in flight per worker: a number, or a range each worker sizes itself in (`--concurrency auto|MIN..MAX`). */
  readonly concurrency: number | Scaled;
  /** A memory limit the workers' autoscaling keeps under (--max-memory). */
  readonly maxMemoryBytes?: number;
  /** The local worker processes' scaling decisions, with their reasons. */
  readonly onScale?: (reason: string) => void;
  /** Absolute path of dist/worker.js. */
  readonly workerScript: string;
  /** Node binary for the workers (the extension host's, run as Node). */
  readonly execPath?: string;
  /** The browser for `browser` rules (see worker/browser/executable.ts); default: found by the workers. */
  readonly browserPath?: string;
  /** The workers may run the task's `browser.actions` scripts (--allow-scripts; the editor: a trusted workspace). */
  readonly allowScripts?: boolean;
  /** Credentials for the workers' environment (see SessionOptions.secretEnv). */
  readonly secretEnv?: Readonly<Record<string, string>>;
  readonly fresh?: boolean;
  /** Drive the task even though another live process drives its run (RunInProgressError otherwise). */
  readonly force?: boolean;
  /** Who drives the run, for a second driver's message: 'crawl-studio run', 'VS Code'. */
  readonly front?: string;
  /** 'join': finalize whatever run is current and never start one (the `writer` command). */
  readonly mode?: 'start' | 'join';
  readonly lockDurationMs?: number;
  readonly stalledIntervalMs?: number;
  readonly pollMs?: number;
  readonly onProgress?: (p: Progress) => void;
  /** Each run finalized by this launch (a recurring task finalizes many). */
  readonly onRunFinished?: (run: RunInfo, status: CrawlStatus, store: AttachedStore) => void;
  /** A joining launch's run stopped from elsewhere, what it left stored (session.ts onRunStopped). */
  readonly onRunStopped?: (run: RunInfo) => void;
  /** A stopped run's close waits for pages other processes' workers still fetch (session.ts onStopWaiting). */
  readonly onStopWaiting?: (run: RunInfo, pages: number, boundMs: number) => void;
  readonly onStoreOpen?: (store: AttachedStore) => void;
  /** The store writer's own messages (a database down, retrying). */
  readonly onStoreMessage?: (message: string) => void;
  /** Redis lost and back (each reconnect with its cause and attempt: redis/check.ts watchConnection). */
  readonly onRedisMessage?: (message: string) => void;
  /** Said once at the start: a Redis that works but may lose the crawl's keys (its eviction policy). */
  readonly onRedisWarning?: (message: string) => void;
  /** The items of each batch this launch's writer committed to the store (see WriterOptions.onStored). */
  readonly onItemsStored?: (items: readonly ItemRow[]) => void;
  readonly onWorkerExit?: (
    pid: number,
    code: number | null,
    signal: string | null,
    expected: boolean,
    lastLines: string[],
  ) => void;
}

/** What the store holds after the run, for the summary: rows per item type, merged duplicates, errors. */
export interface StoredSummary {
  readonly location: string;
  /** Rows per item type in the store: every run's. */
  readonly rows: ReadonlyArray<{ readonly type: string; readonly count: number }>;
  /** Rows per item type whose last write was this run's (inserted or updated by it), by any writer. */
  readonly runRows: ReadonlyArray<{ readonly type: string; readonly count: number }>;
  /** Items whose key was already stored or received (an earlier batch or run), merged into that row: on a re-crawl, every item. */
  readonly duplicatesMerged: number;
  readonly errors: number;
  /** The run's counts in item history once it is closed there (finished, or stopped), else null. */
  readonly changes: RunChangeCounts | null;
}

export interface LaunchResult extends SessionResult {
  readonly stored: StoredSummary;
  /** stop() ended the launch before the run drained; the run stays resumable. */
  readonly stopped: boolean;
  /** How long this launch's connection to Redis was lost during the run, in total (0: never). */
  readonly redisGoneMs: number;
}

/** The longest the launch waits for its store to close once the run has ended. */
const STORE_CLOSE_MAX_MS = 10_000;

/** The longest the store waits for the workers' boot before it opens anyway (a worker that never prints). */
const STORE_AFTER_BOOT_MAX_MS = 2_000;

export class CrawlLaunch {
  readonly session: CrawlSession;
  /** Settles once the run has ended and every part is closed: resolves with the summary, or rejects with why. */
  readonly done: Promise<LaunchResult>;
  private attached: AttachedStore | undefined;
  private readonly storeRedis: Redis;
  private stopped = false;

  private readonly redisWatch: ConnectionWatch;

  constructor(private readonly opts: LaunchOptions) {
    const storeRedis = connectRedis(opts.redisUrl, { followPrimary: true });
    this.redisWatch = watchConnection(storeRedis, opts.redisUrl, (_level, line) => opts.onRedisMessage?.(line));
    this.storeRedis = storeRedis;
    let attaching!: Promise<AttachedStore>;
    const session = new CrawlSession({
      task: opts.task,
      redisUrl: opts.redisUrl,
      workers: opts.workers,
      concurrency: opts.concurrency,
      maxMemoryBytes: opts.maxMemoryBytes,
      onScale: opts.onScale,
      workerScript: opts.workerScript,
      execPath: opts.execPath,
      browserPath: opts.browserPath,
      allowScripts: opts.allowScripts,
      secretEnv: opts.secretEnv,
      fresh: opts.fresh,
      force: opts.force,
      front: opts.front,
      lockDurationMs: opts.lockDurationMs,
      stalledIntervalMs: opts.stalledIntervalMs,
      pollMs: opts.pollMs,
      mode: opts.mode,
      store: {
        finalize: async (run, status, durationMs) => (await attaching).hooks.finalize(run, status, durationMs),
        // Until the store is open its backlog is not known: 0, so progress only says what it knows.
        backlog: async () => (this.attached ? ((await this.attached.hooks.backlog?.()) ?? 0) : 0),
        check: async () => this.attached?.check(),
        drain: async () => (await attaching).writer.flush(),
        closeStopped: async (run, status, durationMs) =>
          (await attaching).hooks.closeStopped?.(run, status, durationMs),
        // Before the run is seeded: a store that cannot open stops the launch with nothing queued. Conditional
        // re-crawls: the records a new Redis lacks, from the store (the store is waited for only then).
        prepare: async () => {
          await checkStore(opts.task);
          if (!opts.task.request.conditional) return;
          const n = await restoreRevisits(storeRedis, opts.task, async () => (await attaching).store);
          if (n > 0)
            opts.onStoreMessage?.(`${n} page validators restored from the store into Redis (conditional re-crawl)`);
        },
      },
      onProgress: opts.onProgress,
      onRunFinished: (run, status) => this.attached && opts.onRunFinished?.(run, status, this.attached),
      onRunStopped: opts.onRunStopped,
      onStopWaiting: opts.onStopWaiting,
      onRedisWarning: opts.onRedisWarning,
      onWorkerExit: opts.onWorkerExit,
    });
    this.session = session;
    attaching = (async () => {
      // A run refused before its workers start (another process drives the task) opens no store: that file is
      // the other driver's to write.
      if (!(await session.whenWorkersStart())) throw new Error('the run did not start');
      await session.supervisor.booted(STORE_AFTER_BOOT_MAX_MS);
      const a = await attachStore(storeRedis, opts.task, opts.onStoreMessage, opts.onItemsStored);
      this.attached = a;
      opts.onStoreOpen?.(a);
      return a;
    })();
    // A store that cannot open stops the session; `await attaching` in finish() then throws its error.
    attaching.catch(() => session.stop());
    this.done = this.finish(attaching).finally(async () => {
      // One cleanup order for every front end: the session's workers are stopped by run(); then its Redis, then
      // the store (a store still opening is closed once open), then the store's Redis.
      await session.close();
      // A store call that never returns (a database that stopped answering, a lock held elsewhere) would hold the
      // writer's stop, and with it the end of the launch, for ever: the editor's Stop Crawl never came back and
      // the crawl stayed "running". Past the bound the store is left to finish or fail by itself; its writer
      // acknowledged nothing it did not store, so what it holds goes to the next writer.
      const closing = attaching.then(
        (a) => a.close(),
        () => undefined,
      );
      const closed = await Promise.race([
        closing.then(() => true),
        new Promise<false>((r) => setTimeout(r, STORE_CLOSE_MAX_MS, false).unref()),
      ]);
      if (!closed) {
        opts.onStoreMessage?.(
          `the store did not close within ${STORE_CLOSE_MAX_MS / 1000} s (a call to it is still waiting); left to finish by itself, items not stored stay in Redis`,
        );
        void closing.then(() => storeRedis.disconnect());
        return;
      }
      storeRedis.disconnect();
    });
  }

  get task(): CrawlTask {
    return this.opts.task;
  }

  get supervisor(): WorkerSupervisor {
    return this.session.supervisor;
  }

  /** Whether its workers still take the task's pages (CrawlSession.takingPages): false while the launch winds down. */
  get takingPages(): boolean {
    return this.session.takingPages;
  }

  /** The store, once open. */
  get store(): AttachedStore | undefined {
    return this.attached;
  }

  /**
   * Interrupts the launch gracefully (Ctrl-C, the library's `crawl.stop()`): local workers finish their pages; the
   * run stays resumable, and the time until it resumes is not in its duration. The result's outcome: 'interrupted'.
   */
  stop(): void {
    this.stopped = true;
    this.session.stop();
  }

  /**
   * Stop: ends the run (the editor's Stop Crawl). No worker anywhere takes another of its pages, local workers
   * finish theirs, and the next start of the task begins a new run from the start URLs. The result's outcome:
   * 'stopped' (or 'finished' when the run drained first).
   */
  end(): void {
    this.stopped = true;
    this.session.stop({ end: true });
  }

  /**
   * Ends the launch now: local workers are killed (their pages go back to the queue as each death is seen);
   * resolves when that is done or after `waitMs`, whichever is first. `end`: the run is ended, as by end().
   */
  async kill(waitMs: number, opts: { end?: boolean } = {}): Promise<void> {
    this.stopped = true;
    this.session.stop(opts);
    await Promise.race([this.session.supervisor.killAll('SIGKILL'), new Promise((r) => setTimeout(r, waitMs))]);
  }

  private async finish(attaching: Promise<AttachedStore>): Promise<LaunchResult> {
    const result = await this.session.run();
    const store = await attaching.catch(async (err: unknown) => {
      // The writer's consumer group or first reads refused for lack of memory: the same message as anywhere else.
      if (!isRedisFull(err)) throw err;
      throw new RedisFullError(
        await readMemory(this.storeRedis).catch(() => null),
        'the store writer',
        this.opts.task.name,
      );
    });
    const c = store.writer.counters();
    const types = await store.store.itemTypes();
    const rows = await Promise.all(types.map(async (type) => ({ type, count: await store.store.count(type) })));
    const runRows = await rowsWrittenByRun(store.store, result.run.run, types);
    // A stopped run has no finish summary, but it is closed in item history (session.ts closeStopped).
    const changes =
      result.outcome === 'interrupted'
        ? null
        : await runChangeCounts(store.store, this.opts.task.name, result.run.run).catch(() => null);
    return {
      ...result,
      stopped: this.stopped,
      redisGoneMs: this.redisWatch.outageMs(),
      stored: {
        location: store.store.location,
        rows,
        runRows,
        duplicatesMerged: c.duplicates + c.conflicts,
        errors: c.errors,
        changes,
      },
    };
  }
}

/** Starts a crawl run: see CrawlLaunch. */
export function launchCrawl(opts: LaunchOptions): CrawlLaunch {
  return new CrawlLaunch(opts);
}
