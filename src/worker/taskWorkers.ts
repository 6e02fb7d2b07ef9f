import { UnrecoverableError, Worker, type Job } from 'bullmq';
import type { RobotsSource } from '../core/robots';
import { MAX_ROBOTS_BYTES, robotsUrl } from '../core/robots';
import type { Log } from '../core/logLine';
import type { CrawlTask } from '../core/task/model';
import { CrawlQueue } from '../frontier/crawl';
import { countFailed } from '../frontier/outcomes';
import type { HostGate } from '../frontier/politeness';
import { RobotsCache } from '../frontier/robots';
import type { PageJobData, PageJobResult } from '../frontier/types';
import { WindowFiller } from '../frontier/window';
import { jobFailureGroup } from '../observe/failures';
import { connectRedis, type Redis } from '../redis/connect';
import { isPermissionError, isReadOnlyError, isUnreachableError } from '../redis/check';
import { isRedisFull, REDIS_FULL_MARK } from '../redis/memory';
import { loadActionScripts } from '../workspace/actionScripts';
import { createAccess, type Access } from './access';
import type { PageAnalyser } from './analysis';
import { poolLogin } from './browser/login';
import type { BrowserPool } from './browser/pool';
import type { PageRenderer } from './browser/render';
import { FetchFailure, fetchPage } from './fetcher';
import { FetchSlots } from './fetchSlots';
import { HostThrottles } from './hostThrottle';
import type { WorkerMetrics } from './metrics';
import { LostJobs } from './lostJobs';
import type { RepeatedLines } from './repeatedLines';
import { backoffDelay } from './pageFailure';
import { createProcessor, fetchOptions } from './processor';
import type { SuspectIsolation } from './suspects';

// One task in a worker process: its request slots, its access and robots.txt, its page processor, and a BullMQ
// Worker per partition of its queue with the window filler that feeds it.

type PageWorker = Worker<PageJobData, PageJobResult>;

/** An active job's lock (BullMQ's default too): a worker that dies loses its jobs to others after about this long. */
export const DEFAULT_LOCK_DURATION_MS = 30_000;
type Processor = (job: Job<PageJobData, PageJobResult>, token?: string) => Promise<PageJobResult>;

/** What the worker process shares between its tasks. */
export interface TaskWorkerDeps {
  readonly redisUrl: string;
  readonly redis: Redis;
  readonly bullRedis: Redis;
  readonly gate: HostGate;
  readonly log: Log;
  readonly analyser: PageAnalyser;
  readonly pool: BrowserPool | null;
  readonly browser: PageRenderer | undefined;
  /** A job whose worker died with it runs alone in this process, whatever its task (suspects.ts). */
  readonly isolation: SuspectIsolation;
  /** BullMQ's errors of an unreachable Redis, said once a minute rather than on every reconnect attempt. */
  readonly repeats: RepeatedLines;
  /** The process's pages done and failed for good, counted as BullMQ tells them. */
  readonly tally: { processed: number; failed: number };
  readonly concurrency: number;
  readonly autoscaled: boolean;
  readonly allowScripts: boolean;
  readonly lockDurationMs?: number;
  readonly stalledIntervalMs?: number;
  readonly metrics?: Pick<WorkerMetrics, 'completed' | 'failed'>;
  /** Redis refused the user a command or key the crawl needs (NOPERM, an ACL changed mid-run): see WorkerOptions. */
  readonly onRefused?: (err: Error) => void;
}

/** A task's part of the worker: its queue, its request slots, its Workers (not running yet) and their fillers. */
export interface TaskWorkers {
  readonly crawl: CrawlQueue;
  readonly slots: FetchSlots;
  readonly workers: readonly PageWorker[];
  readonly fillers: readonly WindowFiller[];
  /** BullMQ Worker id by the partition tag it consumes (frontier/layout.ts), for the heartbeat. */
  readonly bull: Readonly<Record<string, string>>;
}

export async function taskWorkers(task: CrawlTask, deps: TaskWorkerDeps): Promise<TaskWorkers> {
  const { redis, log, pool } = deps;
  const crawl = new CrawlQueue(redis, task.name, deps.bullRedis, { writeQueueMeta: true });
  // One partition on a single node; one per primary on a cluster, each with its own queue and Worker.
  await crawl.loadLayout();
  const parts = crawl.partitions();
  const slots = new FetchSlots(deps.concurrency);
  // Sessions and proxies: robots.txt goes through the same proxies as pages, the next one when one fails.
  const access = createAccess(task, redis, log, fetchOptions(task), process.env, pool ? poolLogin(pool) : undefined);
  const robots = new RobotsCache(redis, (origin) => slots.run(() => fetchRobots(origin, task, access)));
  if (task.request.robots) prefetchRobots(robots, task);
  // An autoscaled worker also backs off per host (AutoThrottle-like), never above the task's per-host concurrency.
  const hostThrottle = deps.autoscaled ? new HostThrottles(task.politeness.perHost.concurrency, log) : undefined;
  const scripts = deps.allowScripts ? await loadActionScripts(task) : undefined;
  const processor = deps.isolation.wrap(
    createProcessor({
      task,
      crawl,
      redis,
      robots,
      gate: deps.gate,
      log,
      analyser: deps.analyser,
      slots,
      browser: deps.browser,
      access,
      hostThrottle,
      scripts,
    }),
  );
  // The task's job slots are shared by its partitions' Workers (a page's partition is its URL's, at random).
  const share = (jobs: number) => Math.max(1, Math.ceil(jobs / parts.length));
  const workers: PageWorker[] = [];
  const fillers: WindowFiller[] = [];
  const bull: Record<string, string> = {};
  for (const part of parts) {
    const worker = pageWorker(task, crawl, processor, part.keys.bullPrefix, share(slots.jobsWanted()), deps);
    workers.push(worker);
    bull[part.keys.tag] = worker.id;
    // Pages move from the frontier into BullMQ as the window has room (frontier/window.ts).
    fillers.push(new WindowFiller((reconcile) => crawl.fill(task, { reconcile, partition: part.index }), log));
  }
  // BullMQ reads its concurrency each time it decides whether to take another job.
  slots.onJobsWanted((jobs) => {
    for (const w of workers) w.concurrency = share(jobs);
  });
  return { crawl, slots, workers, fillers, bull };
}

/** The BullMQ Worker of one partition of the task's queue, its jobs' ends counted and logged. */
function pageWorker(
  task: CrawlTask,
  crawl: CrawlQueue,
  processor: Processor,
  prefix: string,
  concurrency: number,
  deps: TaskWorkerDeps,
): PageWorker {
  // The jobs the processor started, to tell them from jobs Redis handed over in an answer lost with the connection.
  const lost = new LostJobs(deps.redis, deps.log, task.name);
  const tracked: Processor = (job, token) => {
    lost.started(String(job.id));
    return processor(job, token);
  };
  const connection = connectRedis(deps.redisUrl, { followPrimary: true });
  const worker = new Worker<PageJobData, PageJobResult>(task.name, tracked, {
    // Run once the heartbeat names this Worker: a supervisor that sees this process die finds its jobs by that name.
    autorun: false,
    connection,
    prefix,
    // As many jobs as keep the requests busy (slots.onJobsWanted).
    concurrency,
    lockDuration: deps.lockDurationMs ?? DEFAULT_LOCK_DURATION_MS,
    // How soon a dead worker's jobs, once its supervisor released them (frontier/fleet.ts), go back to the queue.
    // BullMQ's default is 30 s; a check is one short script, and one worker of the fleet makes it per interval.
    stalledInterval: deps.stalledIntervalMs ?? 5_000,
    // A job whose worker keeps dying is failed after a few stalls rather than retried forever.
    maxStalledCount: 3,
    settings: { backoffStrategy: (attemptsMade, _type, err) => backoffDelay(attemptsMade, task, err) },
  });
  lost.watch(worker, connection);
  worker.on('completed', (job, result) => {
    lost.ended(String(job.id));
    deps.tally.processed++;
    deps.metrics?.completed(task.name, job, result);
  });
  worker.on('failed', (job, err) => {
    if (job) lost.ended(String(job.id));
    if (job) onFailed(task, crawl, job, err, deps);
  });
  worker.on('error', (err) => {
    const line = `${isRedisFull(err) ? `${REDIS_FULL_MARK}: ` : ''}worker error on '${task.name}': ${err.message}`;
    if (isPermissionError(err)) deps.onRefused?.(err);
    // They come back on every attempt (BullMQ retries a refused fetch at once: thousands of lines a second). READONLY:
    // the primary was demoted mid-run (the check refuses a replica at the start).
    const repeating = isUnreachableError(err) || isPermissionError(err) || isReadOnlyError(err);
    const said = repeating ? deps.repeats.next(line, Date.now()) : line;
    if (said !== null) deps.log('error', said, { event: 'worker-error', task: task.name });
  });
  return worker;
}

/** A job that failed: counted when BullMQ failed it without the processor, settled when final, told and logged. */
function onFailed(
  task: CrawlTask,
  crawl: CrawlQueue,
  job: Job<PageJobData, PageJobResult>,
  err: Error,
  deps: TaskWorkerDeps,
): void {
  // A job that stalled too often (its workers kept dying on it) is failed by BullMQ without running the
  // processor, so nothing counted it: count it here, or the run's summary would not know the page is lost.
  if (job.deferredFailure && job.data.run)
    void countFailed(deps.redis, task.name, job.data.run, { id: String(job.id), url: job.data.url }, 'stalled').catch(
      () => undefined,
    );
  // instanceof: bundling renames BullMQ's class, so its name is not always 'UnrecoverableError'.
  const final =
    err instanceof UnrecoverableError ||
    err.name === 'UnrecoverableError' ||
    job.attemptsMade >= (job.opts.attempts ?? 1);
  if (final) {
    deps.tally.failed++;
    // Its page leaves the window (a page that ended is never fetched again). Killed before this, the page stays
    // in the window until a fill's reconcile finds its job failed (lua/frontier.lua fReconcile).
    void crawl.settle(task, String(job.id)).catch(() => undefined);
  }
  const reason = jobFailureGroup({ data: job.data, failedReason: err.message });
  deps.metrics?.failed(task.name, job, reason, final);
  deps.log(
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
