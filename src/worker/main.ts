import { PRIVATE_REDIS_DIR_ENV, registerWorkerUser } from '../redis/serverOwners';
import { quietBullmqEviction } from '../redis/bullmqWarnings';
import { parseArgs } from 'node:util';
import { loadTaskFile } from '../workspace/taskFile';
import {
  concurrencyFlag,
  logStatsFlag,
  maxMemoryFlag,
  optionalPositiveInt,
  redisTargetFrom,
  REDIS_URL_ENV,
  WORKER_FLAG_SPEC,
} from './args';
import { AUTO_CONCURRENCY_START, initial } from '../core/autoscale/range';
import { watchParent } from './parentWatch';
import { runWorker, type WorkerHandle } from './runtime';
import { permissionDenied, waitForRedis } from '../redis/check';
import {
  formatLogLine,
  LOG_FORMAT_ENV,
  LOG_LEVEL_ENV,
  logsAt,
  parseLogFormat,
  parseLogLevel,
  type Log,
} from '../core/logLine';
import { workerIdOf } from '../frontier/fleet';
import type { WorkerMetrics } from './metrics';
import type { HealthState } from './health';
import { parseDuration } from '../core/units';
import { FlagValueError } from '../core/flagError';

// Entry point of a worker process (dist/worker.js): `node dist/worker.js TASK... [--redis URL] [--concurrency N]`,
// the Redis target from --redis (or --sentinel, --cluster) or else $CRAWL_STUDIO_REDIS (how the CLI and the
// extension pass it: see workerEnv).
// SIGTERM/SIGINT finish in-flight jobs, a second signal leaves them to be picked up by other workers; nothing
// is lost either way.

/** The stop that the parent's exit asks for (worker/parentWatch.ts). */
const PARENT_GONE = 'parent process gone';

export async function workerMain(argv: string[]): Promise<void> {
  quietBullmqEviction();
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: WORKER_FLAG_SPEC });
  const redisUrl = redisTargetFrom(values);
  if (positionals.length === 0 || !redisUrl) {
    throw new Error(
      `usage: worker <task.crawl.yaml>... --redis redis://host:port | --sentinel host:port,... --sentinel-master NAME | --cluster host:port,... [--concurrency N|auto|MIN..MAX | --autoscale MAX,MIN] [--max-memory SIZE] [--health [HOST:]PORT] [--metrics-port N [--metrics-bind ADDRESS]] [--drain-timeout 25s] [--log-stats 60s] [--log-level warn] [--allow-scripts] (or the target in $${REDIS_URL_ENV})`,
    );
  }
  const concurrency = concurrencyFlag(values);
  const drainMs = values['drain-timeout'] !== undefined ? drainTimeout(values['drain-timeout']) : null;
  const endpoints = await endpointsOf(values);
  const maxMemoryBytes = maxMemoryFlag(values['max-memory']);
  const activityEveryMs = logStatsFlag(values['log-stats']);
  // Every flag is read before Redis is waited for: a wrong one is said at once, not once Redis answers.
  const lockDurationMs = optionalPositiveInt(values['lock-duration'], 'lock-duration');
  const stalledIntervalMs = optionalPositiveInt(values['stalled-interval'], 'stalled-interval');
  // --allow-scripts: `browser.actions` may run the workspace's scripts (`evaluate`); without it a task with one is refused.
  const allowScripts = values['allow-scripts'] === true;
  const tasks = await Promise.all(positionals.map((p) => loadTaskFile(p, { allowScripts })));
  // --log-format json (or $CRAWL_STUDIO_LOG_FORMAT, how `run` passes it to the workers it starts): one JSON object a line.
  const format = parseLogFormat(values['log-format'] ?? process.env[LOG_FORMAT_ENV]);
  const least = parseLogLevel(values['log-level'] ?? process.env[LOG_LEVEL_ENV]);
  const worker = workerIdOf(process.pid);
  const log: Log = (level, msg, fields = {}) => {
    if (logsAt(level, least))
      process.stdout.write(`${formatLogLine(format, Date.now(), level, msg, { worker, ...fields })}\n`);
  };
  // Signals are handled from the start: while waiting for Redis (nothing in flight) one ends the worker at once; one
  // that comes while the worker starts stops it as soon as it has (a SIGTERM right after the banner killed it), or
  // within START_GRACE_MS if the start cannot complete.
  const stopping = new Stopping(log, drainMs);
  const stop = (signal: string) => stopping.stop(signal);
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  // The probes answer from the start: a pod waiting for its Redis is live (a restart would not bring Redis) and not
  // ready, and says why; a probe that found no server would have it restarted over and over.
  let notYet = 'waiting for Redis';
  await serveHealth(endpoints, () => stopping.handle?.health() ?? notStarted(notYet), log);
  // A worker may wait for Redis (it may be starting too), saying so on every attempt.
  const notes = await waitForRedis(redisUrl, (line) => {
    notYet = line;
    log('warn', line, { event: 'redis-wait' });
  });
  if (notes.eviction) log('warn', notes.eviction, { event: 'redis-eviction' });
  notYet = 'connected to Redis; starting';
  stopping.phase = 'starting';
  const metrics = endpoints.metrics?.module.workerMetrics(() => stopping.handle?.health().concurrency ?? 0) ?? null;
  // Before the worker takes a page: a port in use ends the process with nothing in flight.
  await serveMetrics(endpoints, metrics, log);
  const handle = await runWorker({
    tasks,
    redisUrl,
    concurrency: initial(concurrency, AUTO_CONCURRENCY_START),
    ...(concurrency.kind === 'auto' ? { autoscale: { min: concurrency.min, max: concurrency.max } } : {}),
    maxMemoryBytes,
    lockDurationMs,
    stalledIntervalMs,
    browserPath: values.browser,
    allowScripts,
    log,
    activityEveryMs,
    ...(metrics ? { metrics } : {}),
    onRefused: (err) => {
      // Exit code 6, as the CLI's for a refused user: an orchestrator's restarts show it, a restart does not mend it.
      log('error', permissionDenied(redisUrl, err), { event: 'redis-refused' });
      process.exit(6);
    },
  });
  stopping.handle = handle;
  stopping.started();
  // On its parent's private server: a user of it until this process exits (redis/serverOwners.ts).
  const privateDir = process.env[PRIVATE_REDIS_DIR_ENV];
  if (privateDir) registerWorkerUser(privateDir);
  watchParent(() => {
    // Nobody reads our output any more: a write to the closed pipe must not crash the orderly stop.
    process.stdout.on('error', () => undefined);
    process.stderr.on('error', () => undefined);
    stop(PARENT_GONE);
  });
}

/**
 * How long a signal that came while the worker started waits for the start to complete. The start only reads the
 * task's layout from Redis and writes a first heartbeat (a second or less); with Redis gone between the connection
 * check and those commands (stopped, partitioned) it would never complete, and the signal would never be acted on:
 * an orchestrator then waits out its grace period and kills the pod, a person at a terminal has no way out but kill -9.
 * No page is taken before the start completes, so stopping without it loses nothing.
 */
const START_GRACE_MS = 10_000;

/** How a signal, or the parent's exit, stops the worker in whichever phase it is. */
class Stopping {
  phase: 'waiting' | 'starting' | 'running' = 'waiting';
  handle: WorkerHandle | null = null;
  /** A signal that came while the worker started: acted on once it has (or after START_GRACE_MS). */
  private pending: string | null = null;
  /**
   * Why the worker is stopping, once it is. Only a second signal from a person (Ctrl-C, SIGTERM) gives up the pages
   * in flight: the parent's exit and a signal that comes with it (a reloaded window's process tree) are one stop,
   * or a reload re-fetched the pages that were on the wire (issue 32).
   */
  private closingBy: string | null = null;

  constructor(
    private readonly log: Log,
    private readonly drainMs: number | null,
  ) {}

  /** The worker runs: a signal that came meanwhile stops it now. */
  started(): void {
    this.phase = 'running';
    if (this.pending) this.stop(this.pending);
  }

  stop(signal: string): void {
    const { log, drainMs } = this;
    if (this.phase === 'waiting') {
      log('info', `${signal}: stopped while waiting for Redis`, { event: 'worker-stopped' });
      process.exit(0);
    }
    if (this.phase === 'starting' || !this.handle) {
      if (this.pending === null) {
        this.pending = signal;
        log('info', `${signal}: stopping once the start completes (at most ${START_GRACE_MS / 1000} s)`);
        this.stopIfStartHangs(signal);
      } else {
        // A second signal: no waiting for the start (nothing is in flight yet). The parent's exit is watched only
        // once the worker runs, so this is a person's.
        log('warn', `${signal} again: stopped while starting, before taking any page`, { event: 'worker-stopped' });
        process.exit(130);
      }
      return;
    }
    const running = this.handle;
    if (this.closingBy !== null) {
      if (signal === PARENT_GONE || this.closingBy === PARENT_GONE) return;
      log('warn', `${signal} again: leaving in-flight jobs to other workers`);
      void running.close(true).finally(() => process.exit(130));
      return;
    }
    this.closingBy = signal;
    log('info', `${signal}: finishing in-flight jobs${drainMs !== null ? ` (at most ${drainMs / 1000} s)` : ''}`, {
      event: 'worker-stopping',
    });
    if (drainMs !== null) this.boundDrain(running, drainMs);
    this.endIfLocksLapse(running);
    void running.close(false).then(
      () => process.exit(0),
      () => process.exit(1),
    );
  }

  private stopIfStartHangs(signal: string): void {
    setTimeout(() => {
      if (this.phase !== 'starting') return;
      this.log(
        'warn',
        `${signal}: stopped while starting, before taking any page (the start, which waits on Redis, had not completed in ${START_GRACE_MS / 1000} s)`,
        { event: 'worker-stopped' },
      );
      process.exit(0);
    }, START_GRACE_MS).unref();
  }

  /**
   * A drain waits for its pages to finish, and finishing one needs Redis. With Redis out of reach (a stopped server, the
   * parent's private one gone with it, a partition) that wait had no end. Once Redis has been gone longer than a job's
   * lock lasts, the pages are no longer this worker's to finish: other workers take them when Redis is back, as after
   * a kill. So the drain ends then, with or without --drain-timeout.
   */
  private endIfLocksLapse(running: WorkerHandle): void {
    const check = setInterval(() => {
      if (!running.locksLapsed()) return;
      clearInterval(check);
      this.log(
        'warn',
        "Redis out of reach while draining, past the jobs' locks: leaving in-flight jobs to other workers",
        {
          event: 'worker-drain-redis-lost',
        },
      );
      process.exit(0);
    }, 1_000);
    check.unref();
  }

  /**
   * Within an orchestrator's grace period (Kubernetes: 30 s, then SIGKILL): past --drain-timeout the pages still in
   * flight are left to other workers, as on a second signal, and the process exits on its own terms.
   */
  private boundDrain(running: WorkerHandle, drainMs: number): void {
    setTimeout(() => {
      this.log('warn', `drain timeout (${drainMs / 1000} s): leaving in-flight jobs to other workers`, {
        event: 'worker-drain-timeout',
      });
      // Not close(): it would wait for the requests in flight, up to their timeout. Their jobs are given back and the
      // process exits, a few seconds at most if Redis does not answer (their locks then expire as after a kill).
      void Promise.race([running.abandon(), new Promise((r) => setTimeout(r, 3_000))]).finally(() => process.exit(0));
    }, drainMs).unref();
  }
}

function drainTimeout(value: string): number {
  try {
    const ms = parseDuration(value);
    if (ms > 0) return ms;
  } catch {
    // Said below.
  }
  throw new FlagValueError('drain-timeout', value, 'expected a duration such as 25s or 20000ms');
}

/** What `--health` and `--metrics-port` ask the worker to serve; their modules are loaded only then (node:http, prom-client). */
interface Endpoints {
  readonly health: { readonly module: typeof import('./health'); readonly at: { host: string; port: number } } | null;
  readonly metrics: { readonly module: typeof import('./metrics'); readonly at: { host: string; port: number } } | null;
}

async function endpointsOf(values: {
  health?: string;
  'metrics-port'?: string;
  'metrics-bind'?: string;
}): Promise<Endpoints> {
  if (values['metrics-bind'] !== undefined && values['metrics-port'] === undefined)
    throw new FlagValueError('metrics-bind', values['metrics-bind'], 'goes with --metrics-port N');
  const health = values.health !== undefined ? await import('./health') : null;
  const metrics = values['metrics-port'] !== undefined ? await import('./metrics') : null;
  return {
    health:
      health && values.health !== undefined ? { module: health, at: health.parseHealthAddress(values.health) } : null,
    metrics:
      metrics && values['metrics-port'] !== undefined
        ? { module: metrics, at: metrics.metricsAddress(values['metrics-port'], values['metrics-bind']) }
        : null,
  };
}

/** Starts /metrics if asked for, closed when the process exits. */
async function serveMetrics(e: Endpoints, metrics: WorkerMetrics | null, log: Log): Promise<void> {
  if (!e.metrics || !metrics) return;
  const server = await e.metrics.module.serveMetrics(e.metrics.at, metrics.registry);
  log('info', `metrics on ${server.url}`, { event: 'metrics' });
  process.once('exit', () => server.close());
}

/** Starts the probes if asked for, closed when the process exits. */
async function serveHealth(e: Endpoints, state: () => HealthState, log: Log): Promise<void> {
  if (!e.health) return;
  const at = e.health.at;
  const server = await e.health.module.serveHealth(at, state);
  log('info', `health on http://${at.host}:${at.port}/healthz and /readyz`, { event: 'health' });
  process.once('exit', () => server.close());
}

/** What the probes answer before the worker runs, saying what it is doing (`notYet`). */
function notStarted(notYet: string): HealthState {
  return {
    lastBeatAt: null,
    lastReplyAt: null,
    refusal: null,
    redisDownForMs: 0,
    running: false,
    draining: false,
    concurrency: 0,
    processed: 0,
    notYet,
  };
}
