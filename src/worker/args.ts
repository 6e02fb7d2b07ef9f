import { availableParallelism } from 'node:os';
import { RedisTargetError, targetFromFlags, targetHasPassword } from '../core/url/redisTarget';
import {
  AUTO_CONCURRENCY,
  fixed,
  formatScaled,
  parseCeleryAutoscale,
  parseScaled,
  ScaleSpecError,
  type Scaled,
} from '../core/autoscale/range';
import { parseDuration, parseSize } from '../core/units';
import { FlagValueError } from '../core/flagError';

// Flags shared by `crawl-studio worker` and the worker processes the CLI and the extension spawn, so both
// accept exactly the same options, and the defaults both use.

/** Requests a worker has in flight at once when not told (as Scrapy's CONCURRENT_REQUESTS). */
export const DEFAULT_CONCURRENCY = 16;

/**
 * Local worker processes when not told: one per two CPU cores, at least one. A worker keeps two threads busy, its
 * main thread and its page-analysis thread, so more workers than that only compete for the cores. Bench, 2 cores,
 * 16 requests in flight either way: 1 worker 852 pages/s, 2 workers 734; `crawl-studio demo` 0.55-0.64 s against
 * 0.74-0.97 s.
 */
export function defaultWorkers(cores = availableParallelism()): number {
  return Math.max(1, Math.floor(cores / 2));
}

export interface WorkerFlags {
  readonly redis: string;
  /** A fixed number of requests in flight, or a range the worker sizes itself in (worker/autoscale.ts). */
  readonly concurrency: number | Scaled;
  /** A memory limit the autoscaler keeps under (--max-memory), besides the container's. */
  readonly maxMemoryBytes?: number;
  readonly lockDurationMs?: number;
  readonly stalledIntervalMs?: number;
  /** `browser.actions` may run the workspace's scripts (`evaluate`): --allow-scripts. */
  readonly allowScripts?: boolean;
  /** How often the worker's log says what it did (--log-stats; 0: never, as under a `run` that prints progress). */
  readonly logStatsMs?: number;
}

/**
 * Where a worker reads its Redis URL when `--redis` is not given: the variable `crawl-studio worker` and the other
 * commands read too. The processes the CLI and the extension spawn get the URL only there, never as `--redis`: a
 * command line is public to every user of the machine (`ps aux`, /proc/PID/cmdline), a process's environment only
 * to its owner, and the URL may hold a password.
 */
export const REDIS_URL_ENV = 'CRAWL_STUDIO_REDIS';

/** The data nodes' password for --sentinel and --cluster, which have no place for one (a flag would be public). */
const REDIS_PASSWORD_ENV = 'CRAWL_STUDIO_REDIS_PASSWORD';
/** The sentinels' own password for --sentinel. */
const SENTINEL_PASSWORD_ENV = 'CRAWL_STUDIO_SENTINEL_PASSWORD';

/** The flags that name a Redis, wherever a command talks to one (run, worker, writer, enqueue, status). */
export const REDIS_FLAG_SPEC = {
  redis: { type: 'string' },
  sentinel: { type: 'string' },
  'sentinel-master': { type: 'string' },
  cluster: { type: 'string' },
} as const;

export interface RedisFlagValues {
  readonly redis?: string;
  readonly sentinel?: string;
  readonly 'sentinel-master'?: string;
  readonly cluster?: string;
}

/**
 * The Redis target the flags name, as one string (core/url/redisTarget.ts), else $CRAWL_STUDIO_REDIS, else
 * undefined (the caller's default: a private redis-server). `--sentinel h:26379,h2:26379 --sentinel-master m` is
 * `redis+sentinel://h:26379,h2:26379/m` and `--cluster h:7000,h:7001` is `redis+cluster://h:7000,h:7001`, with
 * passwords from $CRAWL_STUDIO_REDIS_PASSWORD and $CRAWL_STUDIO_SENTINEL_PASSWORD.
 */
export function redisTargetFrom(values: RedisFlagValues, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const fromFlags = targetFromFlags({
    sentinel: values.sentinel,
    sentinelMaster: values['sentinel-master'],
    cluster: values.cluster,
    password: env[REDIS_PASSWORD_ENV],
    sentinelPassword: env[SENTINEL_PASSWORD_ENV],
  });
  if (fromFlags !== null && values.redis !== undefined)
    throw new RedisTargetError(
      '',
      `--redis and --${values.sentinel !== undefined ? 'sentinel' : 'cluster'} name two targets: give one`,
    );
  if (fromFlags !== null) return fromFlags;
  const source = values.redis ? '--redis' : `$${REDIS_URL_ENV}`;
  const target = values.redis || env[REDIS_URL_ENV] || undefined;
  if (target === undefined) return undefined;
  let password: boolean;
  try {
    password = targetHasPassword(target);
  } catch (err) {
    // Which setting holds the bad target: the message already says which part, the target redacted.
    if (err instanceof RedisTargetError) throw new RedisTargetError('', `${source}: ${err.message}`);
    throw err;
  }
  if (password && values.redis) warn(PASSWORD_IN_ARGUMENTS);
  return target;
}

/** Said when `--redis` holds a password: a command line is public (see REDIS_URL_ENV). */
const PASSWORD_IN_ARGUMENTS =
  `warning: the --redis URL holds a password, which every user of this machine can read in the process list (ps, /proc/PID/cmdline): ` +
  `put the URL in $${REDIS_URL_ENV} instead (or, with --sentinel/--cluster, the password in $${REDIS_PASSWORD_ENV})`;

function warn(message: string): void {
  process.stderr.write(`${message}\n`);
}

/** The command line of a spawned worker: no secret in it (the Redis URL goes in workerEnv). */
export function workerArgs(taskFiles: readonly string[], flags: Omit<WorkerFlags, 'redis'>): string[] {
  const args = [...taskFiles, '--concurrency', formatScaled(flags.concurrency)];
  if (flags.maxMemoryBytes !== undefined) args.push('--max-memory', String(flags.maxMemoryBytes));
  if (flags.lockDurationMs !== undefined) args.push('--lock-duration', String(flags.lockDurationMs));
  if (flags.stalledIntervalMs !== undefined) args.push('--stalled-interval', String(flags.stalledIntervalMs));
  if (flags.allowScripts) args.push('--allow-scripts');
  if (flags.logStatsMs !== undefined) args.push('--log-stats', `${flags.logStatsMs}ms`);
  return args;
}

/** The environment a spawned worker needs besides its parent's: the Redis URL (see REDIS_URL_ENV). */
export function workerEnv(flags: Pick<WorkerFlags, 'redis'>): Record<string, string> {
  return { [REDIS_URL_ENV]: flags.redis };
}

/** Autoscaling's flags besides --concurrency and --workers: Celery's `--autoscale MAX,MIN`, and a memory limit. */
export const SCALE_FLAG_SPEC = {
  autoscale: { type: 'string' },
  'max-memory': { type: 'string' },
} as const;

export const WORKER_FLAG_SPEC = {
  ...REDIS_FLAG_SPEC,
  concurrency: { type: 'string', short: 'c' },
  ...SCALE_FLAG_SPEC,
  'lock-duration': { type: 'string' },
  'stalled-interval': { type: 'string' },
  // Health and readiness probes (health.ts): --health [HOST:]PORT; and how long a SIGTERM waits for in-flight pages.
  health: { type: 'string' },
  'drain-timeout': { type: 'string' },
  // The worker's own Prometheus /metrics (metrics.ts): --metrics-port N, on 127.0.0.1 unless --metrics-bind.
  'metrics-port': { type: 'string' },
  'metrics-bind': { type: 'string' },
  // The browser for `browser` rules; spawned workers get it as $CRAWL_STUDIO_BROWSER instead (see browser/executable.ts).
  browser: { type: 'string' },
  // `browser.actions` may run the workspace's scripts (`evaluate: file.js`); refused without it.
  'allow-scripts': { type: 'boolean' },
  // Log lines as text (default) or one JSON object a line (cli/log.ts), for a log shipper.
  'log-format': { type: 'string' },
  // How often the log says what the worker did (activityLog.ts): 60s by default, 0 never.
  'log-stats': { type: 'string' },
  // The least severe line written: info (default), warn or error (core/logLine.ts parseLogLevel).
  'log-level': { type: 'string' },
} as const;

/** A worker's activity line every minute unless --log-stats says otherwise (as Scrapy's LOGSTATS_INTERVAL). */
export const DEFAULT_LOG_STATS_MS = 60_000;

/** --log-stats DURATION: 0 turns the lines off. */
export function logStatsFlag(value: string | undefined): number {
  if (value === undefined) return DEFAULT_LOG_STATS_MS;
  try {
    const ms = parseDuration(value);
    if (ms === 0 || ms >= 1000) return ms;
  } catch {
    // Said below.
  }
  throw new FlagValueError('log-stats', value, 'expected a duration of at least 1s (e.g. 60s, 5m), or 0 for none');
}

export function positiveInt(value: string | undefined, name: string, fallback: number): number {
  return optionalPositiveInt(value, name) ?? fallback;
}

/** A flag whose absence leaves the choice to the layer below (e.g. the runtime's default). */
export function optionalPositiveInt(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new FlagValueError(name, value, 'expected a whole number of at least 1');
  return n;
}

/** Local worker processes with `--workers auto`: one to one per core (more than that only compete for the cores). */
function autoWorkers(cores = availableParallelism()): { min: number; max: number } {
  return { min: 1, max: Math.max(1, cores) };
}

/**
 * `--concurrency N|auto|MIN..MAX` and Celery's `--autoscale MAX,MIN` (one of the two): requests in flight per worker.
 */
export function concurrencyFlag(values: { readonly concurrency?: string; readonly autoscale?: string }): Scaled {
  if (values.autoscale !== undefined && values.concurrency !== undefined) {
    throw new ScaleSpecError('autoscale', values.autoscale, 'give --autoscale MAX,MIN or --concurrency, not both');
  }
  if (values.autoscale !== undefined) return parseCeleryAutoscale(values.autoscale);
  return values.concurrency === undefined
    ? fixed(DEFAULT_CONCURRENCY)
    : parseScaled(values.concurrency, 'concurrency', AUTO_CONCURRENCY);
}

/**
 * `--workers N|auto|MIN..MAX`: local worker processes. `0`: none, the run's driver only (it seeds the run, stores what
 * the fleet's workers find and finishes it), as docs/deploy.md starts a crawl whose workers are pods.
 */
export function workersFlag(value: string | undefined, cores = availableParallelism()): Scaled {
  if (value === undefined) return fixed(defaultWorkers(cores));
  const v = value.trim();
  if (v === '0') return fixed(0);
  if (v !== 'auto' && !/^\d+(\s*\.\.\s*\d+)?$/.test(v))
    throw new ScaleSpecError('workers', value, "expected a whole number (0: no local worker), 'auto', or MIN..MAX");
  return parseScaled(value, 'workers', autoWorkers(cores));
}

/** `--max-memory 2GB` (bytes, or a size as a task file writes one). */
export function maxMemoryFlag(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  try {
    const n = parseSize(value);
    if (n > 0) return n;
  } catch {
    // Said below.
  }
  throw new ScaleSpecError('max-memory', value, 'expected a size such as 2GB, 512MB or a number of bytes');
}

/**
 * The editor's workers with `crawlStudio.autoscale` on: Start Crawl's local processes scaled from one up to
 * the `crawlStudio.workers` setting (unset: one per core), each worker's concurrency `auto`; off, the two settings
 * as fixed numbers. Here, beside the CLI's flags, so the editor passes an option and never decides one itself.
 */
export function editorScaling(
  autoscale: boolean,
  workers: number,
  concurrency: number,
  workersSetting: number | null,
  cores = availableParallelism(),
): { workers: Scaled; concurrency: Scaled } {
  if (!autoscale) return { workers: fixed(workers), concurrency: fixed(concurrency) };
  const max = Math.max(1, workersSetting ?? autoWorkers(cores).max);
  return {
    workers: max > 1 ? { kind: 'auto', min: 1, max } : fixed(1),
    concurrency: { kind: 'auto', ...AUTO_CONCURRENCY },
  };
}
