import type { WorkerMetrics } from './metrics';
import { UnrecoverableError, Worker } from 'bullmq';
import { hostname } from 'node:os';
import type { RobotsSource } from '../core/robots';
import { MAX_ROBOTS_BYTES, robotsUrl } from '../core/robots';
import type { CrawlTask } from '../core/task/model';
import { CrawlQueue } from '../frontier/crawl';
import type { PageJobData, PageJobResult } from '../frontier/types';
import { WORKERS_KEY } from '../frontier/keys';
import { PARENT_PIPE_ENV } from './parentWatch';
import { countFailed } from '../frontier/outcomes';
import { HostGate } from '../frontier/politeness';
import { connectRedis, redactUrl } from '../redis/connect';
import { watchConnection } from '../redis/check';
import type { Log } from '../core/logLine';
import { jobFailureGroup } from '../observe/failures';
import { isRedisFull, REDIS_FULL_MARK } from '../redis/memory';
import { RobotsCache } from '../frontier/robots';
import {
  readLiveWorkers,
  releaseDeadWorker,
  takeResize,
  workerIdOf,
  type AutoscaleBeat,
  type WorkerBeat,
} from '../frontier/fleet';
import { readDemand, usefulRequests } from '../frontier/demand';
import { ConcurrencyAutoscaler, memoryLimit } from './autoscale';
import { HostThrottles } from './hostThrottle';
import type { HealthState } from './health';
import { descendantsMemory } from './browser/processes';
import { performance } from 'node:perf_hooks';
import { WindowFiller } from '../frontier/window';
import { FetchFailure, fetchPage } from './fetcher';
import { createAnalyser } from './analysis';
import { FetchSlots } from './fetchSlots';
import { SuspectIsolation } from './suspects';
import { createAccess, type Access } from './access';
import { createProcessor, fetchOptions } from './processor';
import { backoffDelay } from './pageFailure';
import { needsBrowser } from '../core/task/model';
import { findBrowser } from './browser/executable';
import { BROWSER_ARGS_ENV, BrowserPool } from './browser/pool';
import { poolRenderer } from './browser/render';
import { poolLogin } from './browser/login';
import { loadActionScripts } from '../workspace/actionScripts';

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
  processed(): number;
}

export async function runWorker(opts: WorkerOptions): Promise<WorkerHandle> {
  const log = opts.log ?? ((level, msg) => console.log(`[${level}] ${msg}`));
  // Auto-pipelining sends the commands that concurrent jobs issue in the same tick as one write.
  const redis = connectRedis(opts.redisUrl, { enableAutoPipelining: true });
  // The queues (addBulk of discovered links) get a plain connection of their own. BullMQ defines its ~45 scripts
  // on the connection a Queue is given, and ioredis copies every script of a connection onto each pipeline it
  // builds; auto-pipelining builds one per tick. On the shared connection that copying was a quarter of the
  // worker's allocations and ~10% of a crawl's CPU (bench, A/B).
  const bullRedis = connectRedis(opts.redisUrl);
  // A Redis lost mid-run is said on every reconnect, with its cause, and when it is back (redis/check.ts).
  watchConnection(redis, opts.redisUrl, (level, line) =>
    log(level, line, { event: level === 'warn' ? 'redis-lost' : 'redis-back' }),
  );
  const gate = new HostGate(redis);
  const id = workerIdOf(process.pid);
  let processed = 0;
  let failed = 0;
  const started = Date.now();

  // Pages are parsed and extracted in a thread: a hostile page cannot stall the locks of this process's jobs.
  const analyser = createAnalyser(opts.tasks);
  // Found now, launched on the first rendered page: a worker that cannot render refuses to start, once, with the
  // reason, rather than failing each page. Tasks without browser rules never get here.
  const pool = opts.tasks.some(needsBrowser)
    ? new BrowserPool({
        executablePath: findBrowser(opts.browserPath),
        maxOpenPages: Math.min(opts.concurrency, opts.browserPages ?? 4),
        retireAfterPages: opts.browserRetireAfter,
        extraArgs: (process.env[BROWSER_ARGS_ENV] ?? '').split(' ').filter(Boolean),
        log,
      })
    : null;
  const browser = pool ? poolRenderer(pool) : undefined;
  const workers: Worker<PageJobData, PageJobResult>[] = [];
  const queues: CrawlQueue[] = [];
  const fillers: WindowFiller[] = [];
  const allSlots: FetchSlots[] = [];
  // BullMQ Worker id -> the partition tag it consumes (frontier/layout.ts): the heartbeat names each, so a supervisor
  // that sees this process die finds its jobs.
  const bull: Record<string, string> = {};
  // A job whose worker died with it runs alone in this process, whatever its task (suspects.ts).
  const isolation = new SuspectIsolation();
  for (const task of opts.tasks) {
    const crawl = new CrawlQueue(redis, task.name, bullRedis);
    // One partition on a single node; one per primary on a cluster, each with its own queue and Worker.
    const parts = (await crawl.loadLayout(), crawl.partitions());
    queues.push(crawl);
    const slots = new FetchSlots(opts.concurrency);
    allSlots.push(slots);
    // Sessions and proxies: robots.txt goes through the same proxies as pages, the next one when one fails.
    const access = createAccess(task, redis, log, fetchOptions(task), process.env, pool ? poolLogin(pool) : undefined);
    const robots = new RobotsCache(redis, (origin) => slots.run(() => fetchRobots(origin, task, access)));
    if (task.request.robots) prefetchRobots(robots, task);
    // An autoscaled worker also backs off per host (AutoThrottle-like), never above the task's per-host concurrency.
    const hostThrottle = opts.autoscale ? new HostThrottles(task.politeness.perHost.concurrency, log) : undefined;
    const scripts = opts.allowScripts ? await loadActionScripts(task) : undefined;
    const processor = isolation.wrap(
      createProcessor({
        task,
        crawl,
        redis,
        robots,
        gate,
        log,
        analyser,
        slots,
        browser,
        access,
        hostThrottle,
        scripts,
      }),
    );
    // The task's job slots are shared by its partitions' Workers (a page's partition is its URL's, at random).
    const share = (jobs: number) => Math.max(1, Math.ceil(jobs / parts.length));
    const taskWorkers: Worker<PageJobData, PageJobResult>[] = [];
    for (const part of parts) {
      const worker = new Worker<PageJobData, PageJobResult>(task.name, processor, {
        // Run once the heartbeat names this Worker (below): a supervisor that sees this process die finds its jobs
        // by that name.
        autorun: false,
        connection: connectRedis(opts.redisUrl),
        prefix: part.keys.bullPrefix,
        // As many jobs as keep the requests busy (slots.onJobsWanted below).
        concurrency: share(slots.jobsWanted()),
        lockDuration: opts.lockDurationMs ?? 30_000,
        // How soon a dead worker's jobs, once its supervisor released them (frontier/fleet.ts), go back to the queue.
        // BullMQ's default is 30 s; a check is one short script, and one worker of the fleet makes it per interval.
        stalledInterval: opts.stalledIntervalMs ?? 5_000,
        // A job whose worker keeps dying is failed after a few stalls rather than retried forever.
        maxStalledCount: 3,
        settings: { backoffStrategy: (attemptsMade, _type, err) => backoffDelay(attemptsMade, task, err) },
      });
      worker.on('completed', (job, result) => {
        processed++;
        opts.metrics?.completed(task.name, job, result);
      });
      worker.on('failed', (job, err) => {
        if (!job) return;
        // A job that stalled too often (its workers kept dying on it) is failed by BullMQ without running the
        // processor, so nothing counted it: count it here, or the run's summary would not know the page is lost.
        if (job.deferredFailure && job.data.run)
          void countFailed(redis, task.name, job.data.run, job.data.url, 'stalled').catch(() => undefined);
        // instanceof: bundling renames BullMQ's class, so its name is not always 'UnrecoverableError'.
        const final =
          err instanceof UnrecoverableError ||
          err.name === 'UnrecoverableError' ||
          job.attemptsMade >= (job.opts.attempts ?? 1);
        if (final) {
          failed++;
          // Its page leaves the window (a page that ended is never fetched again). Killed before this, the page stays
          // in the window until a fill's reconcile finds its job failed (lua/frontier.lua fReconcile).
          void crawl.settle(task, String(job.id)).catch(() => undefined);
        }
        const reason = jobFailureGroup({ data: job.data, failedReason: err.message });
        opts.metrics?.failed(task.name, job, reason, final);
        log(
          final ? 'warn' : 'info',
          `${final ? 'failed' : 'will retry'} ${job.data.url} (attempt ${job.attemptsMade}): ${err.message}`,
          {
            event: final ? 'page-failed' : 'page-retry',
            task: task.name,
            run: job.data.run,
            url: job.data.url,
            reason,
            attempt: job.attemptsMade,
          },
        );
      });
      worker.on('error', (err) =>
        log(
          'error',
          `${isRedisFull(err) ? `${REDIS_FULL_MARK}: ` : ''}worker error on '${task.name}': ${err.message}`,
          { event: 'worker-error', task: task.name },
        ),
      );
      workers.push(worker);
      taskWorkers.push(worker);
      bull[part.keys.tag] = worker.id;
      // Pages move from the frontier into BullMQ as the window has room (frontier/window.ts).
      fillers.push(new WindowFiller((reconcile) => crawl.fill(task, { reconcile, partition: part.index }), log));
    }
    // BullMQ reads its concurrency each time it decides whether to take another job.
    slots.onJobsWanted((jobs) => {
      for (const w of taskWorkers) w.concurrency = share(jobs);
    });
  }
  log(
    'info',
    `worker ${id} on ${redactUrl(opts.redisUrl)}: tasks ${opts.tasks.map((t) => t.name).join(', ')}, concurrency ${opts.autoscale ? `${opts.concurrency} (autoscaled ${opts.autoscale.min}..${opts.autoscale.max})` : opts.concurrency}`,
    { event: 'worker-started', task: opts.tasks.map((t) => t.name).join(','), concurrency: opts.concurrency },
  );

  let lastBeatAt: number | null = null;
  let running = false;
  let draining = false;
  let elu = performance.eventLoopUtilization();
  let eluAt = performance.now();
  let loopBusy = 0;
  const scaler = opts.autoscale ? autoscaler(opts.autoscale) : null;
  let scaleBeat: AutoscaleBeat | undefined = opts.autoscale
    ? { min: opts.autoscale.min, max: opts.autoscale.max, peak: opts.concurrency, last: null, now: null }
    : undefined;
  const supervised = process.env[PARENT_PIPE_ENV] === '1';
  const beat = async () => {
    // Over a few seconds at least: a beat sent at once after a decision must not report a blip.
    if (performance.now() - eluAt >= 2_000) {
      loopBusy = Math.round(performance.eventLoopUtilization(elu).utilization * 100) / 100;
      elu = performance.eventLoopUtilization();
      eluAt = performance.now();
    }
    const concurrency = scaler?.concurrency ?? opts.concurrency;
    const info: WorkerBeat = {
      id,
      pid: process.pid,
      host: hostname(),
      tasks: opts.tasks.map((t) => t.name),
      concurrency,
      started,
      lastSeen: Date.now(),
      processed,
      failed,
      bull,
      loopBusy,
      ...(scaleBeat ? { autoscale: scaleBeat } : {}),
      ...(supervised ? { parent: { pid: process.ppid, host: hostname() } } : {}),
    };
    await redis.hset(WORKERS_KEY, id, JSON.stringify(info)).then(
      () => (lastBeatAt = Date.now()),
      () => undefined,
    );
  };

  /** The autoscaler of this worker's concurrency (worker/autoscale.ts): every task's slots move together. */
  function autoscaler(range: { readonly min: number; readonly max: number }): ConcurrencyAutoscaler {
    const perHost = Math.max(...opts.tasks.map((t) => t.politeness.perHost.concurrency));
    const memory = memoryLimit(
      opts.maxMemoryBytes,
      pool ? () => process.memoryUsage().rss + descendantsMemory() : () => process.memoryUsage().rss,
    );
    return new ConcurrencyAutoscaler({
      limits: range,
      start: opts.concurrency,
      slots: allSlots,
      pagesDone: () => processed,
      useful: async () => {
        const [demands, fleet] = await Promise.all([
          Promise.all(
            queues.map((q) =>
              readDemand(
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
        const others = fleet.filter((w) => w.id !== id && w.tasks.some((t) => opts.tasks.some((o) => o.name === t)));
        return usefulRequests(
          demand,
          perHost,
          others.reduce((n, w) => n + w.concurrency, 0),
          others.length + 1,
        );
      },
      ping: () => redis.ping(),
      manual: () => takeResize(redis, id),
      memoryUsed: memory.used,
      memoryLimit: memory.limit,
      onDecision: (d) => {
        log('info', d.reason);
        scaleBeat = { ...scaleBeat!, peak: Math.max(scaleBeat!.peak, d.to), last: d };
        // At once, not at the next beat: the window (frontier/window.ts) follows the heartbeats' concurrency.
        void beat();
      },
      onJudged: (reason) => (scaleBeat = { ...scaleBeat!, now: reason }),
      log,
    });
  }
  await beat();
  // As BullMQ's autorun does it.
  for (const w of workers) void w.run().catch((err: Error) => w.emit('error', err));
  for (const f of fillers) f.start();
  scaler?.start();
  running = true;
  const heartbeat = setInterval(beat, 5_000);
  heartbeat.unref();

  return {
    id,
    processed: () => processed,
    async abandon() {
      clearInterval(heartbeat);
      scaler?.stop();
      await releaseDeadWorker(redis, id, Date.now()).catch(() => undefined);
    },
    health: () => ({ lastBeatAt, running, draining, concurrency: scaler?.concurrency ?? opts.concurrency, processed }),
    async close(force = false) {
      draining = true;
      clearInterval(heartbeat);
      scaler?.stop();
      await Promise.all(fillers.map((f) => f.stop()));
      await Promise.all(workers.map((w) => w.close(force)));
      await analyser.close();
      await pool?.close();
      await Promise.all(queues.map((q) => q.close()));
      await redis.hdel(WORKERS_KEY, id).catch(() => undefined);
      redis.disconnect();
      bullRedis.disconnect();
    },
  };
}

/** Start origins whose robots.txt a worker looks up as it boots. More would hold its first requests. */
const PREFETCH_ROBOTS = 8;

/**
 * Looks up the robots.txt of the task's first start origins while the worker boots: a crawl's first page waits for
 * its origin's robots.txt, a request to the site before the first page. In Redis already, or fetched by another
 * worker of the fleet, it costs a GET.
 */
function prefetchRobots(robots: RobotsCache, task: CrawlTask): void {
  const origins = new Set<string>();
  for (const s of [...task.start, ...task.sitemaps]) {
    if (origins.size >= PREFETCH_ROBOTS) break;
    origins.add(new URL(s.url).origin);
  }
  for (const origin of origins) void robots.rulesFor(origin, task.request.userAgent).catch(() => undefined);
}

async function fetchRobots(origin: string, task: CrawlTask, access: Access | null): Promise<RobotsSource> {
  try {
    const opts = { ...fetchOptions(task), maxBytes: MAX_ROBOTS_BYTES * 2, keepNonHtml: true };
    const res = await (access ? access.fetchShared(robotsUrl(origin), opts) : fetchPage(robotsUrl(origin), opts));
    return { state: 'ok', text: res.body || '' };
  } catch (err) {
    if (err instanceof FetchFailure && err.status !== null && err.status >= 400 && err.status < 500)
      return { state: 'missing', text: '' };
    if (err instanceof FetchFailure && err.cause_ === 'too-large') return { state: 'missing', text: '' };
    return { state: 'unreachable', text: '' };
  }
}
