import { EventEmitter } from 'node:events';
import { workerExitReport } from '../run/workerExit';
import { join } from 'node:path';
import type { TaskDefinition } from '../core/task/parse';
import type { CrawlStats, JobCounts, RunInfo } from '../frontier/types';
import type { ItemRow } from '../store';
import { launchCrawl, type CrawlLaunch, type LaunchResult, type StoredSummary } from '../run/launcher';
import { chooseRedis } from '../run/redisChoice';
import type { Progress } from '../run/session';
import { DEFAULT_CONCURRENCY, defaultWorkers } from '../worker/args';
import { isLoadedTask, loadTask, writeDefinedTask, type Task } from './task';
import { actionScripts, scriptsRefused } from '../core/task/actions';

// `runCrawl()`: a crawl run from a program, through launchCrawl, the launcher `crawl-studio run` and the editor's
// Start Crawl use (the run in Redis, local worker processes, the store and its writer, cleanup in order). This
// file only turns the launch's callbacks into events and its result into a summary.

export interface RunOptions {
  /**
   * Redis target, e.g. `redis://127.0.0.1:6379/0`, a master behind sentinels
   * `redis+sentinel://s1:26379,s2:26379/mymaster`, or a cluster `redis+cluster://n1:7000,n2:7001`. Default:
   * `$CRAWL_STUDIO_REDIS`, else a private redis-server for the task's folder (data in `.crawl/redis`), stopped
   * after the run if this run started it: as `crawl-studio run`.
   */
  readonly redis?: string;
  /** Local worker processes. Default: one per two CPU cores. 0: none (workers elsewhere, `crawl-studio worker`). */
  readonly workers?: number;
  /** Requests each worker has in flight. Default 16. */
  readonly concurrency?: number;
  /** Start a new run even when the task's last run did not finish (default: that run is resumed). */
  readonly fresh?: boolean;
  /** Take the run over from another live process that drives it (default: refused with an error). */
  readonly force?: boolean;
  /** The Chromium for `browser` rules. Default: `$CRAWL_STUDIO_BROWSER`, else chromium on PATH. */
  readonly browserPath?: string;
  /** Extra environment for the worker processes, e.g. login credentials: never on a command line. */
  readonly env?: Readonly<Record<string, string>>;
  /** `browser.actions` may run the workspace's scripts (`evaluate: file.js`), as `--allow-scripts`. Default: refused. */
  readonly allowScripts?: boolean;
  /** Stops the crawl as `stop()` does: workers finish their pages, the summary says `stopped`, the run stays resumable. */
  readonly signal?: AbortSignal;
  /** For a task given as an object: the folder of its task file, store and private Redis (see LoadTaskOptions). */
  readonly dir?: string;
}

export interface CrawlProgress {
  readonly task: string;
  readonly run: string | null;
  /** The run's counters so far; null before the run has any. */
  readonly stats: CrawlStats | null;
  /** The task's queue: waiting, active, delayed, prioritized, completed and failed jobs. */
  readonly queue: JobCounts;
  readonly pagesPerSec: number;
  /** The run's crawling time so far (observe/figures.ts runElapsedMs: paused and interrupted time left out). */
  readonly elapsedMs: number;
  /** Pages fetched and not stored yet (grows while a database is down). */
  readonly storeBacklog: number;
}

/** An item the crawl extracted, emitted once the batch holding it is committed to the store. */
export interface CrawledItem {
  readonly type: string;
  /** The item's identity in the store (its `key` fields, or a content hash). */
  readonly key: string;
  readonly data: Readonly<Record<string, string | string[] | null>>;
  /** The page it came from, as queued. */
  readonly url: string;
  readonly rule: string;
  readonly run: string;
  /** When its page was fetched, ms since the epoch. */
  readonly fetchedAt: number;
}

export interface CrawlSummary {
  readonly task: string;
  readonly run: RunInfo;
  /** The run was unfinished and this crawl resumed it (else it is a new run that fetched every page again). */
  readonly resumed: boolean;
  /** stop() or the signal ended the crawl before the run drained: the run stays resumable. */
  readonly stopped: boolean;
  readonly durationMs: number;
  /** The run's counters: pages done and failed, skipped and failures by cause, items, links dropped by reason. */
  readonly stats: CrawlStats;
  /**
   * What the store holds after the run: where it is, rows per item type, items merged into a row of the same key
   * (`duplicatesMerged`), errors recorded, and the run's changes once it is closed in item history (`changes`).
   */
  readonly stored: StoredSummary;
}

/** Each run a recurring task (`schedule`) finished while the crawl was running. */
export interface RunFinished {
  readonly run: RunInfo;
  readonly stats: CrawlStats;
}

export interface CrawlEvents {
  progress: [progress: CrawlProgress];
  item: [item: CrawledItem];
  run: [finished: RunFinished];
  /** What the store writer and the workers report on the way (a database down and retrying, a worker that died). */
  message: [message: string];
}

const EMPTY_STATS: CrawlStats = {
  enqueued: 0,
  done: 0,
  failed: 0,
  items: 0,
  problems: 0,
  bytes: 0,
  duplicates: 0,
  nonHtml: 0,
  sitemaps: 0,
  unchanged: 0,
  unchangedItems: 0,
  skipped: {},
  failures: {},
  dropped: {},
};

/**
 * A crawl started by runCrawl(): events as it goes, `done` (or `await crawl`) for its summary. `done` rejects when
 * the task is invalid (TaskFileError), Redis or the store cannot be used, another process drives the task's run,
 * or a listener throws (the crawl is stopped first).
 */
export class Crawl extends EventEmitter<CrawlEvents> implements PromiseLike<CrawlSummary> {
  readonly done: Promise<CrawlSummary>;
  private launch: CrawlLaunch | null = null;
  private stopRequested = false;
  private listenerError: { readonly thrown: unknown } | null = null;

  constructor(
    source: string | TaskDefinition | Task,
    private readonly options: RunOptions,
  ) {
    super();
    this.done = this.start(source);
  }

  /** Ends the crawl gracefully: workers finish their pages, the run stays resumable; `done` resolves with `stopped`. */
  stop(): void {
    this.stopRequested = true;
    this.launch?.stop();
  }

  then<A = CrawlSummary, B = never>(
    onfulfilled?: ((value: CrawlSummary) => A | PromiseLike<A>) | null,
    onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    return this.done.then(onfulfilled, onrejected);
  }

  private async start(source: string | TaskDefinition | Task): Promise<CrawlSummary> {
    const o = this.options;
    const task = isLoadedTask(source) ? source : await loadTask(source, { dir: o.dir });
    const script = actionScripts(task.rules)[0];
    // Said here, once: the workers would each refuse the task.
    if (script !== undefined && !o.allowScripts)
      throw new Error(`${task.file}: '${script}' ${scriptsRefused('pass allowScripts: true to runCrawl')}`);
    this.throwIfStopped();
    await writeDefinedTask(task);
    // Set from the watch's callback: typed so, the check below is not narrowed to `null`.
    let redisLost = null as Error | null;
    // A private redis-server that dies is started again, as for the CLI; one that cannot be stops the crawl.
    const redis = await chooseRedis(o.redis, task.file, {
      watch: {
        say: (m) => this.say(`Redis: ${m}`),
        lost: (err) => {
          redisLost = err;
          this.say(`Redis: ${err.message}; stopping the crawl`);
          this.launch?.stop();
        },
      },
    });
    try {
      this.throwIfStopped();
      const launch = launchCrawl({
        task,
        redisUrl: redis.url,
        workers: o.workers ?? defaultWorkers(),
        concurrency: o.concurrency ?? DEFAULT_CONCURRENCY,
        // The package's dist/: the library bundle sits beside the worker's.
        workerScript: join(__dirname, 'worker.js'),
        browserPath: o.browserPath,
        allowScripts: o.allowScripts,
        secretEnv: o.env,
        fresh: o.fresh,
        force: o.force,
        front: 'runCrawl()',
        onProgress: (p) => this.deliver('progress', progressOf(task.name, p)),
        onItemsStored: (rows) => {
          if (this.listenerCount('item') === 0) return;
          for (const row of rows) this.deliver('item', itemOf(row));
        },
        onRunFinished: (run, status) => this.deliver('run', { run, stats: status.stats ?? EMPTY_STATS }),
        onStoreMessage: (m) => this.say(`store: ${m}`),
        onWorkerExit: (pid, code, signal, expected, lines) => {
          if (!expected) this.say(workerExitReport(pid, code, signal, lines));
        },
      });
      this.launch = launch;
      const abort = () => launch.stop();
      o.signal?.addEventListener('abort', abort, { once: true });
      if (this.stopRequested || o.signal?.aborted) launch.stop();
      try {
        const result = await launch.done;
        if (redisLost) throw redisLost;
        if (this.listenerError !== null) throw this.listenerError.thrown;
        return summaryOf(task.name, result);
      } finally {
        o.signal?.removeEventListener('abort', abort);
      }
    } finally {
      await redis.release();
    }
  }

  /** Before anything runs, a stop or an aborted signal ends the crawl with the abort's reason: there is no run to sum up. */
  private throwIfStopped(): void {
    this.options.signal?.throwIfAborted();
    if (this.stopRequested) throw new DOMException('the crawl was stopped before its run started', 'AbortError');
  }

  /** A listener that throws stops the crawl, and `done` rejects with its error once the crawl has ended. */
  private deliver<K extends keyof CrawlEvents>(event: K, ...args: CrawlEvents[K]): void {
    try {
      (this.emit as (event: K, ...args: CrawlEvents[K]) => boolean)(event, ...args);
    } catch (err) {
      this.listenerError ??= { thrown: err };
      this.stop();
    }
  }

  private say(message: string): void {
    if (this.listenerCount('message') > 0) this.deliver('message', message);
    else console.warn(`crawl-studio: ${message}`);
  }
}

function progressOf(task: string, p: Progress): CrawlProgress {
  return {
    task,
    run: p.status.run?.run ?? null,
    stats: p.status.stats,
    queue: p.status.counts,
    pagesPerSec: p.pagesPerSec,
    elapsedMs: p.elapsedMs,
    storeBacklog: p.backlog,
  };
}

function itemOf(row: ItemRow): CrawledItem {
  return {
    type: row.type,
    key: row.key,
    data: JSON.parse(row.json) as CrawledItem['data'],
    url: row.url,
    rule: row.rule,
    run: row.run,
    fetchedAt: row.fetchedAt,
  };
}

function summaryOf(task: string, r: LaunchResult): CrawlSummary {
  return {
    task,
    run: r.run,
    resumed: r.resumed,
    stopped: r.stopped,
    durationMs: r.durationMs,
    stats: r.status.stats ?? EMPTY_STATS,
    stored: r.stored,
  };
}

/**
 * Runs a task: a `*.crawl.yaml` path, a task from loadTask(), or a task definition (the file's content as an
 * object, written to `<dir>/<name>.crawl.yaml` for the workers). Returns at once; `await` the result (or its
 * `done`) for the summary, and listen for `progress`, `item`, `run` and `message` events meanwhile.
 */
export function runCrawl(task: string | TaskDefinition | Task, options: RunOptions = {}): Crawl {
  return new Crawl(task, options);
}
