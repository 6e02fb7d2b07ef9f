import type { WorkerMetrics } from './metrics';
import type { Worker } from 'bullmq';
import type { CrawlTask } from '../core/task/model';
import type { CrawlQueue } from '../frontier/crawl';
import type { PageJobData, PageJobResult } from '../frontier/types';
import { taskKeys, WORKERS_KEY } from '../frontier/keys';
import { HostGate } from '../frontier/politeness';
import { connectRedis, redactUrl, type Redis } from '../redis/connect';
import { watchConnection } from '../redis/check';
import type { Log } from '../core/logLine';
import { readLiveWorkers, releaseDeadWorker, takeResize, workerIdOf } from '../frontier/fleet';
import { readDemand, usefulRequests } from '../frontier/demand';
import type { WindowFiller } from '../frontier/window';
import { ConcurrencyAutoscaler, memoryLimit } from './autoscale';
import type { HealthState } from './health';
import { descendantsMemory } from './browser/processes';
import { createAnalyser, type PageAnalyser } from './analysis';
import { SuspectIsolation } from './suspects';
import { needsBrowser } from '../core/task/model';
import { findBrowser } from './browser/executable';
import { BROWSER_ARGS_ENV, BrowserPool } from './browser/pool';
import { poolRenderer } from './browser/render';
import { Heartbeat } from './heartbeat';
import { ActivityLog } from './activityLog';
import { taskFingerprint } from '../core/task/fingerprint';
import { readRun } from '../frontier/partitions';
import { RepeatedLines } from './repeatedLines';
import { DEFAULT_LOCK_DURATION_MS, taskWorkers, type TaskWorkers } from './taskWorkers';

// A worker: one BullMQ Worker per task, all in this process, sharing one Redis connection for commands.
// The same function runs inside `crawl-studio worker`, inside the worker processes the CLI and the extension
// spawn, and on remote machines.

export interface WorkerOptions {
  readonly tasks: readonly CrawlTask[];
  readonly redisUrl: string;
  /** Requests in flight per task (see fetchSlots.ts); the worker takes more jobs than that. With autoscale, where it starts. */
  readonly concurrency: number;
  /** Size the concurrency between these (worker/autoscale.ts); absent, it stays `concurrency`. */
  readonly autoscale?: { readonly min: number; readonly max: number };
  /** A memory limit (bytes) the autoscaler keeps under, besides the container's (--max-memory). */
  readonly maxMemoryBytes?: number;
  /** Lock of an active job; a worker that dies loses its jobs to others after about this long. */
  readonly lockDurationMs?: number;
  readonly stalledIntervalMs?: number;
  /** The browser for `browser` rules; default: $CRAWL_STUDIO_BROWSER, then chromium & co. on PATH. */
  readonly browserPath?: string;
  /** Most pages open in the browser at once (never more than `concurrency`); default 4. */
  readonly browserPages?: number;
  /** Pages after which the browser is replaced; default 200. */
  readonly browserRetireAfter?: number;
  /** `browser.actions` may run the tasks' workspace scripts (--allow-scripts); they are read once, here. */
  readonly allowScripts?: boolean;
  /** Where log lines go; `fields` say what a line is about, for `--log-format json` (core/logLine.ts). */
  readonly log?: Log;
  /** `--metrics-port`: told of every job's end (metrics.ts). */
  readonly metrics?: Pick<WorkerMetrics, 'completed' | 'failed'>;
  /** `--log-stats`: how often the log says what the worker did (activityLog.ts); absent or 0, never (a task that differs from its run's is said anyway). */
  readonly activityEveryMs?: number;
  /**
   * Redis refused the user a command or a key the crawl needs (NOPERM): no page can be fetched, and retrying cannot
   * change that. The worker process ends on it (worker/main.ts); without it, the refusals are logged once a minute.
   */
  readonly onRefused?: (err: Error) => void;
}

export interface WorkerHandle {
  readonly id: string;
  /** What its health and readiness probes answer from (health.ts). */
  health(): HealthState;
  /**
   * For a process about to exit with pages still in flight (a drain past its bound): gives its jobs back to the queue
   * now, as its supervisor does for a dead worker (frontier/fleet.ts releaseDeadWorker), rather than when their locks
   * expire. The caller exits right after; a page that still finishes meanwhile is marked done and not fetched again.
   */
  abandon(): Promise<void>;
  /** Finishes in-flight jobs (or, with force, leaves them to be picked up again) and disconnects. */
  close(force?: boolean): Promise<void>;
  /**
   * Whether the jobs in flight are no longer this worker's: Redis has been out of reach for longer than their locks
   * last, so their locks have expired (renewals cannot reach Redis) and their pages are other workers' to take. A
   * drain then has nothing left to wait for.
   */
  locksLapsed(): boolean;
  processed(): number;
}

export async function runWorker(opts: WorkerOptions): Promise<WorkerHandle> {
  const log = opts.log ?? ((level, msg) => console.log(`[${level}] ${msg}`));
  // Auto-pipelining sends the commands that concurrent jobs issue in the same tick as one write.
  const redis = connectRedis(opts.redisUrl, { enableAutoPipelining: true, followPrimary: true });
  // The queues (addBulk of discovered links) get a plain connection of their own. BullMQ defines its ~45 scripts
  // on the connection a Queue is given, and ioredis copies every script of a connection onto each pipeline it
  // builds; auto-pipelining builds one per tick. On the shared connection that copying was a quarter of the
  // worker's allocations and ~10% of a crawl's CPU (bench, A/B).
  const bullRedis = connectRedis(opts.redisUrl, { followPrimary: true });
  // A Redis lost mid-run is said on every reconnect, with its cause, and when it is back (redis/check.ts).
  const connection = watchConnection(redis, opts.redisUrl, (level, line) =>
    log(level, line, { event: level === 'warn' ? 'redis-lost' : 'redis-back' }),
  );
  const id = workerIdOf(process.pid);
  const tally = { processed: 0, failed: 0 };
  const started = Date.now();
  // Pages are parsed and extracted in a thread: a hostile page cannot stall the locks of this process's jobs.
  const analyser = createAnalyser(opts.tasks);
  const pool = browserPool(opts, log);
  const activity = new ActivityLog({
    tasks: opts.tasks.map((t) => ({ name: t.name, file: t.file, fingerprint: taskFingerprint(t) })),
    log,
    everyMs: opts.activityEveryMs ?? 0,
    readRun: (task) => readRun(redis, task),
  });
  const deps = {
    ...opts,
    metrics: jobEnds(opts.metrics, activity),
    redis,
    bullRedis,
    gate: new HostGate(redis),
    log,
    analyser,
    pool,
    browser: pool ? poolRenderer(pool) : undefined,
    isolation: new SuspectIsolation(),
    repeats: new RepeatedLines(),
    tally,
    autoscaled: opts.autoscale !== undefined,
    allowScripts: opts.allowScripts ?? false,
  };
  const tasks: TaskWorkers[] = [];
  for (const task of opts.tasks) tasks.push(await taskWorkers(task, deps));
  log(
    'info',
    `worker ${id} on ${redactUrl(opts.redisUrl)}: tasks ${opts.tasks.map((t) => t.name).join(', ')}, concurrency ${opts.autoscale ? `${opts.concurrency} (autoscaled ${opts.autoscale.min}..${opts.autoscale.max})` : opts.concurrency}`,
    { event: 'worker-started', task: opts.tasks.map((t) => t.name).join(','), concurrency: opts.concurrency },
  );
  const heartbeat: Heartbeat = new Heartbeat({
    redis,
    id,
    tasks: opts.tasks.map((t) => t.name),
    started,
    tally,
    bull: Object.assign({}, ...tasks.map((t) => t.bull)) as Record<string, string>,
    concurrency: (): number => scaler?.concurrency ?? opts.concurrency,
    warnings: () => activity.warnings(),
    ...(opts.autoscale ? { autoscale: { ...opts.autoscale, start: opts.concurrency } } : {}),
  });
  const scaler: ConcurrencyAutoscaler | null = opts.autoscale
    ? autoscaler(opts, { redis, id, pool, tasks, tally, heartbeat, log })
    : null;
  const lockDurationMs = opts.lockDurationMs ?? DEFAULT_LOCK_DURATION_MS;
  const handle = new RunningWorker(id, opts.concurrency, {
    locksLapsed: () => connection.downForMs() > lockDurationMs,
    redisDownForMs: () => connection.downForMs(),
    redis,
    bullRedis,
    analyser,
    pool,
    tasks,
    tally,
    heartbeat,
    scaler,
    activity,
  });
  await heartbeat.beat();
  handle.start();
  return handle;
}

/** Who is told of each job's end: the activity log, and the metrics if served. */
function jobEnds(metrics: WorkerOptions['metrics'], activity: ActivityLog): WorkerOptions['metrics'] {
  if (!metrics) return activity;
  return {
    completed: (...a) => (metrics.completed(...a), activity.completed(...a)),
    failed: (...a) => (metrics.failed(...a), activity.failed(...a)),
  };
}

/**
 * The browser for `browser` rules: found now, launched on the first rendered page, so a worker that cannot render
 * refuses to start, once, with the reason, rather than failing each page. Tasks without browser rules need none.
 */
function browserPool(opts: WorkerOptions, log: Log): BrowserPool | null {
  if (!opts.tasks.some(needsBrowser)) return null;
  return new BrowserPool({
    executablePath: findBrowser(opts.browserPath),
    maxOpenPages: Math.min(opts.concurrency, opts.browserPages ?? 4),
    retireAfterPages: opts.browserRetireAfter,
    extraArgs: (process.env[BROWSER_ARGS_ENV] ?? '').split(' ').filter(Boolean),
    log,
  });
}

/** What the autoscaler reads of the worker besides its own measurements. */
interface ScalerContext {
  readonly redis: Redis;
  readonly id: string;
  readonly pool: BrowserPool | null;
  readonly tasks: readonly TaskWorkers[];
  readonly tally: { readonly processed: number };
  readonly heartbeat: Heartbeat;
  readonly log: Log;
}

/** The autoscaler of this worker's concurrency (worker/autoscale.ts): every task's slots move together. */
function autoscaler(opts: WorkerOptions, ctx: ScalerContext): ConcurrencyAutoscaler {
  const { redis, id, pool, log } = ctx;
  const memory = memoryLimit(
    opts.maxMemoryBytes,
    pool ? () => process.memoryUsage().rss + descendantsMemory() : () => process.memoryUsage().rss,
  );
  // Rendered pages under a memory limit start at the minimum and grow while memory allows: each open page costs tens
  // of MB, and at the usual start (16, a browser's 4 open pages) the limit could be past before the first window.
  const fromMin = pool !== null && memory.limit !== null;
  return new ConcurrencyAutoscaler({
    limits: opts.autoscale!,
    start: fromMin ? opts.autoscale!.min : opts.concurrency,
    ...(fromMin ? { startReason: 'rendered pages under a memory limit start at the minimum' } : {}),
    slots: ctx.tasks.map((t) => t.slots),
    pagesDone: () => ctx.tally.processed,
    useful: () =>
      usefulHere(
        opts.tasks,
        redis,
        id,
        ctx.tasks.map((t) => t.crawl),
      ),
    paused: async () => (await pausedTasks(redis, opts.tasks)).every(Boolean),
    ping: () => redis.ping(),
    manual: () => takeResize(redis, id),
    memoryUsed: memory.used,
    memoryLimit: memory.limit,
    onDecision: (d) => {
      log('info', d.reason);
      ctx.heartbeat.decided(d);
    },
    onJudged: (reason) => ctx.heartbeat.judged(reason),
    log,
  });
}

/** Whether each task's queue is paused (Pause, or a stopped run): no worker takes its pages. */
async function pausedTasks(redis: Redis, tasks: readonly CrawlTask[]): Promise<boolean[]> {
  return Promise.all(tasks.map(async (t) => (await redis.hexists(taskKeys(t.name).bull.meta, 'paused')) === 1));
}

/**
 * The most requests the waiting work keeps busy in this worker: the tasks' demand shared with their other workers.
 * A paused task's pages are not work: counted, they let a worker serving it beside another grow for nothing.
 */
async function usefulHere(
  tasks: readonly CrawlTask[],
  redis: Redis,
  id: string,
  queues: readonly CrawlQueue[],
): Promise<number | null> {
  const perHost = Math.max(...tasks.map((t) => t.politeness.perHost.concurrency));
  const paused = await pausedTasks(redis, tasks);
  const [demands, fleet] = await Promise.all([
    Promise.all(
      queues.map((q, i) =>
        paused[i]
          ? Promise.resolve({ pages: 0, hosts: 0 })
          : readDemand(
              redis,
              q.partitions().map((p) => p.keys.frontier),
            ),
      ),
    ),
    readLiveWorkers(redis),
  ]);
  const demand = {
    pages: demands.reduce((a, d) => a + d.pages, 0),
    hosts: demands.reduce((a, d) => a + d.hosts, 0),
  };
  const others = fleet.filter((w) => w.id !== id && w.tasks.some((t) => tasks.some((o) => o.name === t)));
  return usefulRequests(
    demand,
    perHost,
    others.reduce((n, w) => n + w.concurrency, 0),
    others.length + 1,
  );
}

/** What a running worker holds, to stop it. */
interface Running {
  readonly locksLapsed: () => boolean;
  readonly redisDownForMs: () => number;
  readonly redis: Redis;
  readonly bullRedis: Redis;
  readonly analyser: PageAnalyser;
  readonly pool: BrowserPool | null;
  readonly tasks: readonly TaskWorkers[];
  readonly tally: { readonly processed: number };
  readonly heartbeat: Heartbeat;
  readonly scaler: ConcurrencyAutoscaler | null;
  readonly activity: ActivityLog;
}

class RunningWorker implements WorkerHandle {
  private running = false;
  private draining = false;
  private readonly workers: readonly Worker<PageJobData, PageJobResult>[];
  private readonly fillers: readonly WindowFiller[];

  constructor(
    readonly id: string,
    private readonly concurrency: number,
    private readonly r: Running,
  ) {
    this.workers = r.tasks.flatMap((t) => t.workers);
    this.fillers = r.tasks.flatMap((t) => t.fillers);
  }

  /** Runs the Workers, once the heartbeat names them, and the fillers, the autoscaler and the heartbeat's timer. */
  start(): void {
    // As BullMQ's autorun does it.
    for (const w of this.workers) void w.run().catch((err: Error) => w.emit('error', err));
    for (const f of this.fillers) f.start();
    this.r.scaler?.start();
    this.r.activity.start();
    this.running = true;
    this.r.heartbeat.start();
  }

  processed(): number {
    return this.r.tally.processed;
  }

  async abandon(): Promise<void> {
    this.r.heartbeat.stop();
    this.r.scaler?.stop();
    await releaseDeadWorker(this.r.redis, this.id, Date.now()).catch(() => undefined);
  }

  locksLapsed(): boolean {
    return this.r.locksLapsed();
  }

  health(): HealthState {
    return {
      lastBeatAt: this.r.heartbeat.lastBeatAt,
      lastReplyAt: this.r.heartbeat.lastReplyAt,
      refusal: this.r.heartbeat.refusal,
      redisDownForMs: this.r.redisDownForMs(),
      running: this.running,
      draining: this.draining,
      concurrency: this.r.scaler?.concurrency ?? this.concurrency,
      processed: this.r.tally.processed,
    };
  }

  async close(force = false): Promise<void> {
    const { heartbeat, scaler, analyser, pool, tasks, redis, bullRedis, activity } = this.r;
    this.draining = true;
    heartbeat.stop();
    scaler?.stop();
    await Promise.all(this.fillers.map((f) => f.stop()));
    await Promise.all(this.workers.map((w) => w.close(force)));
    // After the pages in flight have ended: the last of them are in the last line.
    activity.stop();
    activity.writeActivity(Date.now());
    await analyser.close();
    await pool?.close();
    await Promise.all(tasks.map((t) => t.crawl.close()));
    await redis.hdel(WORKERS_KEY, this.id).catch(() => undefined);
    redis.disconnect();
    bullRedis.disconnect();
  }
}
