import { summaryFromStatus } from './runSummary';
import type { Redis } from '../redis/connect';
import type { CrawlTask } from '../core/task/model';
import { CrawlQueue } from '../frontier/crawl';
import type { CrawlStatus, RunInfo } from '../frontier/types';
import { recordSample } from '../observe/metrics';
import { finishedPages, readTaskStatus, runElapsedMs, type TaskStatus } from '../observe/taskStatus';
import { figuresOf, type TaskFigures } from '../observe/taskFigures';
import { connectRedis, isConnectionDrop } from '../redis/connect';
import { checkCrawlAccess } from '../redis/check';
import { taskKeys } from '../frontier/keys';
import { isHolderGone, RunLease } from '../frontier/runLease';
import { hostname } from 'node:os';
import { WorkerSupervisor, type WorkerProcessInfo } from './supervisor';
import { ProcessScaler } from './processScaler';
import { asScaled, hasWorkers, type Scaled } from '../core/autoscale/range';
import { needsBrowser } from '../core/task/model';
import { BROWSER_PATH_ENV, findBrowser } from '../worker/browser/executable';
import { RunInProgressError, RunLostError, RunTakenOverError } from './runErrors';
import { nextPollMs } from './pollPace';
import { isRedisFull } from '../redis/memory';
import { RedisRoom } from './redisRoom';
import { IN_FLIGHT_BOUND_MS, waitForStoppedRunPages } from './pagesInFlight';

// One crawl driven from this process: start or resume the run, start local workers, watch progress, and
// finalize the run when it drains. The CLI's `run` and the extension's "Start Crawl" are both this class, so
// the two cannot drift apart. Remote workers (`crawl-studio worker`) can join the same run at any time.

export interface Progress {
  readonly status: CrawlStatus;
  /** Pages buffered for the store and not written yet (grows while the database is down). */
  readonly backlog: number;
  /** The task's figures as every view shows them (observe/taskFigures.ts); null when they could not be read. */
  readonly figures: TaskFigures | null;
  /** figures.rate.pagesPerSec: pages finished (fetched, skipped or failed) a second over RATE_WINDOW_MS. */
  readonly pagesPerSec: number;
  /** The run's crawling time so far (observe/figures.ts runElapsedMs: paused and interrupted time left out). */
  readonly elapsedMs: number;
}

/** Hooks the storage pipeline into the session; finalize() must flush everything buffered. */
export interface SessionStoreHooks {
  finalize(run: RunInfo, status: CrawlStatus, durationMs: number): Promise<Record<string, unknown>>;
  backlog?(): Promise<number>;
  /** Throws when the store can no longer hold what it is given (its file was deleted): the run then ends with that error. */
  check?(): Promise<void>;
  /** Stores every entry in the items stream (a run another process finalized may have left some). */
  drain?(): Promise<void>;
  /** Before the run's start URLs are enqueued (a run this session starts or resumes, not one it joins). */
  prepare?(): Promise<void>;
  /**
   * A run ended by Stop, once its pages in flight are done and stored: its summary row, and its item history closed
   * as incomplete, so what it added and changed is listed and sent (`changes`, the feed, `notify`) and nothing is
   * marked removed. Idempotent (the driver and a writer may both close it). Says its own failures (the store's log).
   */
  closeStopped?(run: RunInfo, status: CrawlStatus, durationMs: number): Promise<void>;
}

export interface SessionOptions {
  readonly task: CrawlTask;
  readonly redisUrl: string;
  /** Local worker processes: a number (0: none), or a range they are scaled in (run/processScaler.ts). */
  readonly workers: number | Scaled;
  /** Requests in flight per worker: a number, or a range each worker sizes itself in (worker/autoscale.ts). */
  readonly concurrency: number | Scaled;
  /** A memory limit the workers' autoscaling keeps under (--max-memory), besides the container's. */
  readonly maxMemoryBytes?: number;
  /** The local worker processes' scaling decisions, with their reasons (`--workers auto`). */
  readonly onScale?: (reason: string) => void;
  readonly workerScript: string;
  readonly fresh?: boolean;
  /** Drive the task even though another live process drives its run (see RunInProgressError). */
  readonly force?: boolean;
  /** Who this is, for the message a second driver of the task gets: 'crawl-studio run', 'VS Code'. */
  readonly front?: string;
  readonly lockDurationMs?: number;
  readonly stalledIntervalMs?: number;
  readonly restartOnCrash?: boolean;
  readonly execPath?: string;
  /** The browser for `browser` rules; the workers get it as $CRAWL_STUDIO_BROWSER. Default: what they find. */
  readonly browserPath?: string;
  /** The workers may run the task's `browser.actions` scripts (--allow-scripts; the editor: a trusted workspace). */
  readonly allowScripts?: boolean;
  readonly store?: SessionStoreHooks;
  readonly pollMs?: number;
  /**
   * 'start' (default) starts or resumes a run; 'join' watches whatever run is current and never starts one
   * (a standalone writer), and keeps serving runs until stop().
   */
  readonly mode?: 'start' | 'join';
  readonly onProgress?: (p: Progress) => void;
  /** Each run this session finalized (recurring tasks finalize many). */
  readonly onRunFinished?: (run: RunInfo, status: CrawlStatus, summary: Record<string, unknown>) => void;
  /** A joining session's run stopped from elsewhere, once what it left in Redis is stored (it then waits for the next). */
  readonly onRunStopped?: (run: RunInfo) => void;
  /** Said once: a Redis that works but may lose the crawl's keys (redis/check.ts RedisNotes). */
  readonly onRedisWarning?: (message: string) => void;
  /** A stopped run's close waits for pages other processes' workers still fetch (at most boundMs). */
  readonly onStopWaiting?: (run: RunInfo, pages: number, boundMs: number) => void;
  readonly onWorkerLog?: (pid: number, line: string) => void;
  /** Credentials for the workers' environment (the editor's Secret Storage): never on a command line. */
  readonly secretEnv?: Readonly<Record<string, string>>;
  readonly onWorkerExit?: (
    pid: number,
    code: number | null,
    signal: string | null,
    expected: boolean,
    lastLines: string[],
  ) => void;
}

/** What the driver's watch of a run carries from one poll to the next. */
interface RunWatch {
  current: RunInfo;
  /** The run was there already (resumed), not started by this session. */
  readonly resumed: boolean;
  readonly replaced: string | null;
  /** The last status read (set by the first poll). */
  status: TaskStatus | undefined;
  outcome: RunOutcome;
  summary: Record<string, unknown> | null;
  /** The run's data went from Redis: the workers are not waited for. */
  lost: boolean;
  lastDone: number;
  lastAt: number;
  rate: number;
  readonly started: number;
  readonly joining: boolean;
  readonly recurring: boolean;
}

function newWatch(
  begun: { run: RunInfo; resumed: boolean; replaced: string | null },
  started: number,
  joining: boolean,
  recurring: boolean,
): RunWatch {
  return {
    current: begun.run,
    resumed: begun.resumed,
    replaced: begun.replaced,
    status: undefined,
    outcome: 'interrupted',
    summary: null,
    lost: false,
    lastDone: 0,
    lastAt: Date.now(),
    rate: 0,
    started,
    joining,
    recurring,
  };
}

/**
 * How a session's run ended, the one word every front end reports it with (one message per transition):
 * 'finished': it drained (here or in another process); 'stopped': Stop ended it (stop({ end: true }): the next
 * start begins a new run); 'interrupted': the session stopped and left the run to resume (Ctrl-C, `crawl.stop()`).
 */
export type RunOutcome = 'finished' | 'stopped' | 'interrupted';

export interface SessionResult {
  readonly run: RunInfo;
  readonly resumed: boolean;
  /** The finished or stopped run of the task that this new one replaced; null when resumed or the task's first. */
  readonly replaced: string | null;
  readonly status: CrawlStatus;
  readonly outcome: RunOutcome;
  /** How long the run has crawled (figures.ts runElapsedMs: paused and interrupted time left out). */
  readonly durationMs: number;
  /** Null when another process finalized the run. */
  readonly summary: Record<string, unknown> | null;
}

export class CrawlSession {
  readonly redis: Redis;
  readonly crawl: CrawlQueue;
  readonly supervisor: WorkerSupervisor;
  private stopping = false;
  /** stop({ end: true }): the run is ended (CrawlQueue.stopRun), not left to resume. */
  private ending = false;
  /** run() stopped watching: its run drained, was ended elsewhere, or failed; its workers are being stopped. */
  private watchEnded = false;
  private wake: (() => void) | null = null;
  private readonly stopped: Promise<typeof STOPPED>;
  private markStopped!: () => void;
  private readonly lease: RunLease;
  private readonly workersStarting: Promise<boolean>;
  private scaler: ProcessScaler | null = null;
  private markWorkersStarting!: (started: boolean) => void;
  /** Who first saw Redis refuse a write for lack of memory (a local worker's line), if any did. */
  private readonly room: RedisRoom;

  constructor(private readonly opts: SessionOptions) {
    this.redis = connectRedis(opts.redisUrl, { followPrimary: true });
    this.crawl = new CrawlQueue(this.redis, opts.task.name, undefined, { writeQueueMeta: true });
    this.supervisor = new WorkerSupervisor({
      workerScript: opts.workerScript,
      taskFiles: [opts.task.file],
      redis: opts.redisUrl,
      concurrency: opts.concurrency,
      maxMemoryBytes: opts.maxMemoryBytes,
      lockDurationMs: opts.lockDurationMs,
      stalledIntervalMs: opts.stalledIntervalMs,
      allowScripts: opts.allowScripts,
      // The session prints the run's progress: its workers' activity lines would repeat it.
      logStatsMs: 0,
      restartOnCrash: opts.restartOnCrash ?? true,
      execPath: opts.execPath,
      env:
        opts.browserPath || opts.secretEnv
          ? { ...opts.secretEnv, ...(opts.browserPath ? { [BROWSER_PATH_ENV]: opts.browserPath } : {}) }
          : undefined,
    });
    if (opts.onWorkerLog) this.supervisor.on('log', opts.onWorkerLog);
    this.room = new RedisRoom(this.redis, opts.task.name);
    this.supervisor.on('log', (pid: number, line: string) => {
      if (this.room.workerLine(pid, line)) this.wake?.();
    });
    if (opts.onWorkerExit) this.supervisor.on('exit', opts.onWorkerExit);
    this.lease = new RunLease(this.redis, opts.task.name, {
      front: opts.front ?? 'crawl-studio run',
      host: hostname(),
      pid: process.pid,
    });
    this.workersStarting = new Promise((r) => (this.markWorkersStarting = r));
    this.stopped = new Promise((r) => (this.markStopped = () => r(STOPPED)));
  }

  /** True once run() has started the local workers; false when it will not (it failed or was refused first). */
  whenWorkersStart(): Promise<boolean> {
    return this.workersStarting;
  }

  workers(): WorkerProcessInfo[] {
    return this.supervisor.list();
  }

  /** Called by run() once the lease is held; callers wait for it with whenWorkersStart(). */
  private startWorkers(): void {
    this.markWorkersStarting(true);
    const workers = asScaled(this.opts.workers);
    if (workers.kind === 'auto') {
      this.scaler = new ProcessScaler(this.supervisor, this.redis, this.crawl, workers, (reason) =>
        this.opts.onScale?.(reason),
      );
      this.scaler.start();
    } else if (workers.n > 0) this.supervisor.start(workers.n);
  }

  /**
   * Runs until the crawl drains (or stop() is called); resolves with the final status. A recurring task keeps
   * running: each scheduled run is watched and finalized in turn until stop().
   */
  async run(): Promise<SessionResult> {
    const started = Date.now();
    const joining = this.opts.mode === 'join';
    await this.preflight(joining);
    // Workers boot (half a second: a Node process, its bundle, its task file, Redis) while the run is set up. One
    // that is ready first (it rarely is) meets nothing a remote worker joining at any moment could not: at worst a
    // leftover job of a run being replaced, whose links its run check refuses (discover.lua).
    this.startWorkers();
    let watch: RunWatch | null = null;
    try {
      if (!joining) await this.opts.store?.prepare?.();
      const begun = joining
        ? { run: await this.crawl.joinRun(this.opts.task), resumed: true, replaced: null }
        : await this.crawl.startRun(this.opts.task, { fresh: this.opts.fresh });
      watch = newWatch(begun, started, joining, this.opts.task.schedule !== null || joining);
      while ((await this.pollOnce(watch)) === 'again');
      watch.outcome = await this.settleStop(watch.current, watch.outcome);
    } catch (err) {
      // Redis refused one of this driver's own writes (the lease, the finalize flag, a sample) for lack of memory.
      if (!isRedisFull(err)) throw err;
      throw await this.room.error();
    } finally {
      this.watchEnded = true;
      // Workers that hold pages Redis refused (worker/processor.ts) do not finish them: not waited for long.
      // A lost run has nothing to finish: its workers' jobs are gone from Redis, and waiting for them to wind
      // down (they cannot complete or fail a job the server no longer has) only delays the error by the grace.
      const lost = watch?.lost === true || this.room.full;
      this.scaler?.stop();
      await this.supervisor.stopAll(lost ? 2_000 : undefined);
      if (!joining) await this.lease.release().catch(() => undefined);
    }
    // After the local workers finished their pages: the stopped run's last items are in the stream by now.
    if (watch.outcome === 'stopped' && !joining) await this.closeStopped(watch.current, true);
    return this.resultOf(watch, started);
  }

  /** Before anything starts: the browser a rendered task needs, and the run's lease (a second driver is told). */
  private async preflight(joining: boolean): Promise<void> {
    // Before the first write: a database Redis refuses to SELECT would otherwise leave this run in database 0, and a
    // user denied the crawl's scripts would fail on the first of them with Redis's bare NOPERM.
    const notes = await checkCrawlAccess(this.opts.redisUrl).catch((err: unknown) => {
      this.markWorkersStarting(false);
      throw err;
    });
    if (notes.eviction) this.opts.onRedisWarning?.(notes.eviction);
    // A writer joins without a lease: any number of writers is the design (see frontier/runLease.ts).
    if (joining) return;
    if (hasWorkers(this.opts.workers) && needsBrowser(this.opts.task)) {
      // One clear message before anything starts, rather than workers that each refuse to boot (they inherit
      // this process's environment, so what is found here is what they find).
      try {
        findBrowser(this.opts.browserPath);
      } catch (err) {
        this.markWorkersStarting(false);
        throw err;
      }
    }
    const lease = await this.lease.acquire(this.opts.force ?? false, isHolderGone).catch((err) => {
      this.markWorkersStarting(false);
      throw err;
    });
    if (!lease.held) {
      this.markWorkersStarting(false);
      throw new RunInProgressError(this.opts.task, lease.holder, this.opts.fresh ?? false);
    }
  }

  /** One look at the run, then the wait until the next: 'done' when the watch ends. */
  private async pollOnce(w: RunWatch): Promise<'again' | 'done'> {
    try {
      if ((await this.observe(w)) === 'done' || (await this.conclude(w)) === 'done') return 'done';
      await this.sleep(nextPollMs(w.status!.counts, w.status!.run?.state, w.rate, this.opts.pollMs ?? 500));
    } catch (err) {
      // Redis restarting: on a cluster a command in flight is rejected rather than sent again, and the reconnect
      // fails until every node serves. The run is still there, and its workers wait for Redis as this driver
      // does: ending here stopped them, and the crawl with them (issue 35). Looked at again after a poll.
      if (!isConnectionDrop(err) || this.stopping) throw err;
      await this.sleep(this.opts.pollMs ?? 500);
    }
    return 'again';
  }

  private sleep(ms: number): Promise<void> {
    return new Promise<void>((r) => {
      this.wake = r;
      setTimeout(r, ms);
    });
  }

  /** Reads the run, says its progress, checks the store and the lease: 'done' once a stop was asked for. */
  private async observe(w: RunWatch): Promise<'again' | 'done'> {
    const status = await readTaskStatus(this.redis, this.opts.task.name);
    w.status = status;
    // The run's meta hash only goes away with Redis's data (no persistence, a flush, eviction) or the task:
    // waiting would never end, and finishing would pass a partial crawl off as a whole one.
    if (!status.run) {
      w.lost = true;
      throw new RunLostError(this.opts.task, w.current, w.lastDone);
    }
    await this.room.check();
    if (status.run.run !== w.current.run) {
      // The job scheduler started the next occurrence: watch that run now.
      w.current = status.run;
      w.lastDone = 0;
      w.outcome = 'interrupted';
    }
    const now = Date.now();
    const done = finishedPages(status.stats).total;
    // `rate` paces the polling (a quick average that follows a crawl speeding up at its end); the rate shown is the meter's.
    const inst = ((done - w.lastDone) * 1000) / Math.max(1, now - w.lastAt);
    w.rate = w.rate === 0 ? inst : w.rate * 0.6 + inst * 0.4;
    w.lastDone = done;
    w.lastAt = now;
    // The dashboard's history (bounded, in Redis): at most one sample a second across every watcher of the run.
    await recordSample(this.redis, this.opts.task.name).catch(() => undefined);
    // The figures shown (the status bar's, the progress line's) from the one read-model every view uses: the
    // same pages/s as the dashboard and the monitor, over the same window of the same history (issue 32).
    const figures = await figuresOf(this.redis, status, now).catch(() => null);
    const backlog = (await this.opts.store?.backlog?.()) ?? 0;
    this.opts.onProgress?.({
      status,
      figures,
      backlog,
      pagesPerSec: figures?.rate.pagesPerSec ?? 0,
      // The run's crawling time, as `status` gives it: a scheduled task's second run said the session's 16.8 s
      // beside a summary's 755 ms, and a writer the time since it joined.
      elapsedMs: figures?.elapsedMs ?? now - w.started,
    });
    await this.opts.store?.check?.();
    if (!w.joining) {
      // A driver whose lease was taken (`run --force` elsewhere) must not go on beside the new one: two drivers
      // of one run is what the lease exists to prevent. run()'s finally stops the workers.
      const lease = await this.lease.renew();
      if (!lease.held) throw new RunTakenOverError(this.opts.task, lease.holder);
    }
    return this.stopping ? 'done' : 'again';
  }

  /** Finalizes the run when its pages are done, or ends the watch when another process finished or stopped it. */
  private async conclude(w: RunWatch): Promise<'again' | 'done'> {
    const verdict = await this.crawl.tryFinalize(this.opts.task, w.current.run);
    const state = w.status!.run?.run === w.current.run ? w.status!.run.state : null;
    if (verdict === 'won') return this.finalizeWon(w);
    if (state === 'stopped') {
      // Stopped from elsewhere (the web monitor's Stop run, `crawl-studio stop`, another editor's Stop Crawl:
      // CrawlQueue.stopRun): this driver ends as its own stop would, its workers finishing their pages. A scheduled
      // task's too: Stop holds the schedule until the next start, which its lease would refuse.
      if (!w.joining || w.outcome === 'stopped') {
        w.outcome = 'stopped';
        return w.joining ? 'again' : 'done';
      }
      // A writer stores what the run left in the stream, closes it in the store, says so once, and stays for the
      // task's next run. It said nothing, and its Ctrl-C said "Resumed run … (it had not finished)" and "run the
      // same command again to resume run …" of a run that never resumes. Its pages in flight finish first.
      if (w.status!.counts.active > 0) return 'again';
      w.outcome = 'stopped';
      if ((await this.guarded(this.closeStopped(w.current))) === STOPPED) return 'done';
      this.opts.onRunStopped?.(w.current);
      return 'again';
    }
    if (w.recurring) {
      // Finalized elsewhere (the `run` that drove it, for a writer): this session waits for the task's next run.
      if (state === 'finished') w.outcome = 'finished';
      return 'again';
    }
    if (state === 'finished') {
      // Another process (a second editor, `crawl-studio writer`) finalized this run. Entries still in the
      // stream (left by a writer that died) are stored before the result is reported, so its row count is
      // what the store holds and nothing waits in Redis for a writer nobody runs. A 'done' verdict of a run
      // still 'running' is a finalize in progress elsewhere: watched until it ends, or its flag expires
      // because its finalizer died and this session wins it.
      w.outcome = 'finished';
      if ((await this.guarded(this.opts.store?.drain?.() ?? Promise.resolve())) === STOPPED) return 'done';
      w.status = await readTaskStatus(this.redis, this.opts.task.name);
      return 'done';
    }
    return 'again';
  }

  /**
   * A stopped run's last items stored, then its close in the store (SessionStoreHooks.closeStopped). A driver first
   * waits for other processes' workers to finish the pages they hold (pagesInFlight.ts); a writer has waited already.
   */
  private async closeStopped(run: RunInfo, waitInFlight = false): Promise<void> {
    const task = this.opts.task.name;
    if (waitInFlight) {
      const onWaiting = (n: number) => this.opts.onStopWaiting?.(run, n, IN_FLIGHT_BOUND_MS);
      await waitForStoppedRunPages(this.redis, task, run, { pollMs: this.opts.pollMs ?? 500, onWaiting });
    }
    const status = await readTaskStatus(this.redis, task);
    // Only the run that was stopped: one begun since (a Start elsewhere) is not this session's to close.
    if (status.run?.run !== run.run || status.run.state !== 'stopped') return;
    await this.opts.store?.drain?.();
    await this.opts.store?.closeStopped?.(status.run, status, runElapsedMs(status.run, Date.now()));
  }

  /** This driver won the run's finalize: the store's last rows, the summary, the run marked finished. */
  private async finalizeWon(w: RunWatch): Promise<'again' | 'done'> {
    // The lease may have been taken since the last renewal (at most a few per TTL): a driver that lost it
    // leaves the finalize to the one that has it.
    const lease = w.joining ? null : await this.lease.renew(true);
    if (lease && !lease.held) {
      await this.redis.del(taskKeys(this.opts.task.name).finalized(w.current.run)).catch(() => undefined);
      throw new RunTakenOverError(this.opts.task, lease.holder);
    }
    let status = await readTaskStatus(this.redis, this.opts.task.name);
    // The history's last sample as the run drained (before the store's flush), whoever sampled last.
    await recordSample(this.redis, this.opts.task.name, Date.now(), { final: true }).catch(() => undefined);
    // Paused and interrupted time left out (issue 32): the duration every view shows.
    const durationMs = runElapsedMs(status.run ?? w.current, Date.now());
    const finalized = await this.finalizeHeld(w.current, status, durationMs);
    if (finalized === STOPPED) return 'done';
    w.summary = { ...summaryFromStatus(status, durationMs), ...finalized };
    await this.crawl.markFinished(w.current.run, w.summary);
    status = await readTaskStatus(this.redis, this.opts.task.name);
    w.status = status;
    w.outcome = 'finished';
    this.opts.onRunFinished?.(w.current, status, w.summary);
    return w.recurring ? 'again' : 'done';
  }

  private async resultOf(w: RunWatch | null, started: number): Promise<SessionResult> {
    // The try in run() either threw or set the watch.
    const watch = w!;
    let status = watch.status!;
    if (watch.outcome !== 'finished') {
      // What the run holds once the local workers finished their pages: the figures the stop message gives.
      status = await readTaskStatus(this.redis, this.opts.task.name).catch(() => status);
    }
    // The run's own duration, paused and interrupted time left out (the CLI's "finished in", the library's summary).
    const durationMs = status.run ? runElapsedMs(status.run, Date.now()) : Date.now() - started;
    return {
      run: watch.current,
      resumed: watch.resumed,
      replaced: watch.replaced,
      status,
      outcome: watch.outcome,
      durationMs,
      summary: watch.summary,
    };
  }

  /**
   * After the watch loop: a stop({ end: true }) ends the run (unless it finished first, which is then what is
   * reported); a plain stop() leaves it to resume and marks it idle, so the time until then is not in its duration.
   */
  private async settleStop(current: RunInfo, outcome: RunOutcome): Promise<RunOutcome> {
    if (!this.stopping || outcome === 'finished' || this.opts.mode === 'join') return outcome;
    if (this.ending) {
      const stopped = await this.crawl.stopRun(current.run);
      return stopped || (await this.crawl.currentRun())?.state !== 'finished' ? 'stopped' : 'finished';
    }
    await this.crawl.markIdle();
    return 'interrupted';
  }

  /**
   * Finalizes a run this session won: keeps its finalize flag alive meanwhile (drain.lua lets it expire, so a
   * finalizer that dies leaves the run to the next session), and gives it back when the finalize fails or stop()
   * cuts it short, so the run stays resumable and the next session finalizes it and stores what it left.
   */
  private async finalizeHeld(
    run: RunInfo,
    status: CrawlStatus,
    durationMs: number,
  ): Promise<Record<string, unknown> | typeof STOPPED> {
    const flag = taskKeys(this.opts.task.name).finalized(run.run);
    // The lease too: a finalize that outlasts its TTL (a long backlog to store) must not let a second driver in.
    const keep = setInterval(() => {
      void this.redis.pexpire(flag, FINALIZE_HOLD_MS).catch(() => undefined);
      if (this.opts.mode !== 'join') void this.lease.renew().catch(() => undefined);
    }, FINALIZE_HOLD_MS / 3);
    try {
      const out = await this.guarded(this.opts.store?.finalize(run, status, durationMs) ?? Promise.resolve({}));
      if (out === STOPPED) await this.redis.del(flag).catch(() => undefined);
      return out;
    } catch (err) {
      await this.redis.del(flag).catch(() => undefined);
      throw err;
    } finally {
      clearInterval(keep);
    }
  }

  /**
   * `work` (a store's flush, which waits as long as the store refuses rows), or STOPPED as soon as stop() is
   * called, or the store's check() error: a stop during a finalize used to wait for a store that never came
   * back, and SIGTERM did not end the CLI for minutes. What `work` still does after is the launcher's to end
   * (it stops the writer).
   */
  private async guarded<T>(work: Promise<T>): Promise<T | typeof STOPPED> {
    work.catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    let settled = false;
    const checked = new Promise<never>((_, reject) => {
      const look = () => {
        if (settled) return;
        timer = setTimeout(() => {
          (this.opts.store?.check?.() ?? Promise.resolve()).then(look, reject);
        }, STORE_CHECK_MS);
      };
      look();
    });
    checked.catch(() => undefined);
    try {
      return await Promise.race([work, this.stopped, checked]);
    } finally {
      settled = true;
      clearTimeout(timer);
    }
  }

  /**
   * Stops watching and stops the local workers gracefully. By default the run stays resumable (Ctrl-C); with
   * `end` it is ended (the editor's Stop Crawl: the next start begins a new run from the start URLs).
   */
  stop(opts: { end?: boolean } = {}): void {
    if (opts.end) this.ending = true;
    this.stopping = true;
    this.markStopped();
    this.wake?.();
  }

  /** False once it stopped watching (drained, or asked to stop): its workers wind down and take no new pages. */
  get takingPages(): boolean {
    return !this.watchEnded && !this.stopping;
  }

  async close(): Promise<void> {
    await this.crawl.close();
    this.redis.disconnect();
  }
}

const STOPPED = Symbol('stopped');

/** How long a won finalize flag holds without a refresh (drain.lua's default, which tryFinalize leaves it at). */
const FINALIZE_HOLD_MS = 15_000;

/** How often the store is checked while the session waits on it (a finalize's flush). */
const STORE_CHECK_MS = 1_000;
