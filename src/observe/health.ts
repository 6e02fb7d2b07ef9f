import type { Redis } from '../redis/connect';
import { isPermissionError } from '../redis/check';
import { compileRobots, type RobotsSource } from '../core/robots';
import type { CrawlTask } from '../core/task/model';
import type { TaskPartitions } from '../frontier/partitions';
import type { CrawlStats, JobCounts } from '../frontier/types';
import { sampleFailures, type FailureGroupSample } from './failures';
import { hostKeys, robotsKey } from '../frontier/keys';
import { readLiveWorkers, type WorkerBeat } from '../frontier/fleet';
import { readHistory, readHostTally, readSkippedUrls, type HostTally, type MetricSample } from './metrics';
import { readTaskStatus } from './taskStatus';
import type { RunPhase } from './runPhase';

// What the crawl dashboard shows, read from Redis in one place: the run, its counters, the metric history,
// failures by cause with sample URLs, hosts with their politeness, and the workers' heartbeats.

export interface HostHealth extends HostTally {
  /** Requests in flight now (live leases). */
  readonly inFlight: number;
  /** The delay between request starts the workers apply: the task's, or robots.txt's Crawl-delay if longer. */
  readonly delayMs: number;
  readonly crawlDelayMs: number | null;
  /** ms until the host's next request may start (0: now). */
  readonly nextInMs: number;
}

export interface RunHealth {
  readonly run: string;
  readonly state: string;
  readonly startedAt: number;
  readonly finishedAt: number | null;
  /** Paused or interrupted time, left out of its duration (figures.ts runElapsedMs). */
  readonly pausedMs?: number;
  readonly idleSince?: number | null;
}

export interface SkipGroup {
  readonly reason: string;
  readonly count: number;
  readonly urls: readonly string[];
}

export interface FailureGroup extends FailureGroupSample {
  /** Final failures of the group counted in the run's stats. */
  readonly count: number;
}

export interface HealthSnapshot {
  readonly task: string;
  readonly at: number;
  readonly run: RunHealth | null;
  readonly stats: CrawlStats | null;
  /** Jobs waiting, running and kept now (taskStatus.ts readJobCounts, as every view reads them). */
  readonly counts: JobCounts;
  readonly isPaused: boolean;
  /** Whether the run is alive (observe/runPhase.ts): what the dashboard's state says, as every view does. */
  readonly phase: RunPhase;
  readonly history: readonly MetricSample[];
  readonly failures: readonly FailureGroup[];
  readonly skipped: readonly SkipGroup[];
  readonly hosts: readonly HostHealth[];
  readonly workers: readonly WorkerBeat[];
}

export interface HealthOptions {
  /** Re-read failed jobs (costly with thousands); when false, `previous` failure samples are kept. */
  readonly readFailures: boolean;
  readonly previous?: HealthSnapshot | null;
  /** Only the newest samples of the metric history (readHistory's `last`); the whole history without. */
  readonly historyLast?: number;
  /** Failed jobs read for the samples, newest first (sampleFailures' `max`, default 2,000); the counts are the stats'. */
  readonly failureSample?: number;
}

/** The dashboard's snapshot of the task of `parts` (`task`: its politeness and user agent, when known). */
export async function readHealth(
  parts: TaskPartitions,
  task: CrawlTask | { name: string; politeness?: CrawlTask['politeness']; request?: CrawlTask['request'] },
  opts: HealthOptions,
): Promise<HealthSnapshot> {
  const redis = parts.redis;
  const status = await readTaskStatus(redis, task.name);
  const at = Date.now();
  const { counts, isPaused, phase } = status;
  if (!status.run)
    return {
      task: task.name,
      at,
      run: null,
      stats: null,
      counts,
      isPaused,
      phase,
      history: [],
      failures: [],
      skipped: [],
      hosts: [],
      workers: await readLiveWorkers(redis, at),
    };
  // finishedAt only once the run is over (runInfoOf): a reopened run's elapsed time keeps going.
  const run: RunHealth = {
    run: status.run.run,
    state: status.run.state,
    startedAt: status.run.startedAt,
    finishedAt: status.run.finishedAt,
    pausedMs: status.run.pausedMs,
    idleSince: status.run.idleSince,
  };
  const [history, tally, workers] = await Promise.all([
    readHistory(redis, task.name, run.run, opts.historyLast),
    readHostTally(redis, task.name, run.run),
    readLiveWorkers(redis, at),
  ]);
  const stats = status.stats!;
  const failures = await failureGroups(parts, stats, opts);
  const skipped = await skippedGroups(redis, task.name, run.run, stats);
  const hosts = await hostHealth(redis, task, tally);
  return {
    task: task.name,
    at,
    run,
    stats,
    counts,
    isPaused,
    phase,
    history,
    failures,
    skipped,
    hosts,
    workers: workers.filter((w) => w.tasks.includes(task.name)),
  };
}

/** The run's failures by group: the counts from its stats, the sample of failed jobs (read again only when asked). */
async function failureGroups(parts: TaskPartitions, stats: CrawlStats, opts: HealthOptions): Promise<FailureGroup[]> {
  const samples =
    opts.readFailures || !opts.previous
      ? await sampleFailures(parts, { max: opts.failureSample })
      : opts.previous.failures;
  const groups = new Set([...Object.keys(stats.failures), ...samples.map((s) => s.group)]);
  return [...groups]
    .map((group) => {
      const s = samples.find((x) => x.group === group);
      return {
        group,
        count: stats.failures[group] ?? 0,
        jobs: s?.jobs ?? 0,
        urls: s?.urls ?? [],
        pages: s?.pages ?? [],
      };
    })
    .filter((g) => g.count > 0 || g.jobs > 0)
    .sort((a, b) => Math.max(b.count, b.jobs) - Math.max(a.count, a.jobs));
}

/** The run's skipped pages by reason, each with the URLs kept for it. */
function skippedGroups(redis: Redis, task: string, run: string, stats: CrawlStats) {
  return Promise.all(
    Object.entries(stats.skipped)
      .filter(([, n]) => n > 0)
      .map(async ([reason, count]) => ({ reason, count, urls: await readSkippedUrls(redis, task, run, reason) })),
  );
}

async function hostHealth(
  redis: Redis,
  task: Parameters<typeof readHealth>[1],
  tally: readonly HostTally[],
): Promise<HostHealth[]> {
  const shown = tally.slice(0, 50);
  if (shown.length === 0) return [];
  const baseDelay = task.politeness?.perHost.delayMs ?? 0;
  const agent = task.request?.userAgent ?? 'CrawlStudio';
  const timeMs = await redisTimeMs(redis);
  // Not one pipeline: each host's keys (and each origin's robots.txt) have a hash slot of their own, on a Redis
  // Cluster a node of their own.
  const r = await Promise.all(
    shown.map((h) => {
      const k = hostKeys(h.host);
      return Promise.all([
        redis.zcount(k.active, `(${timeMs}`, '+inf'),
        redis.get(k.next),
        redis.get(robotsKey(`http://${h.host}`)),
        redis.get(robotsKey(`https://${h.host}`)),
      ]).catch(() => []);
    }),
  );
  return shown.map((h, i) => {
    const v = (j: number) => r[i]?.[j];
    const robots = (v(2) ?? v(3)) as string | null | undefined;
    let crawlDelayMs: number | null = null;
    if (robots) {
      try {
        crawlDelayMs = compileRobots(`http://${h.host}`, JSON.parse(robots) as RobotsSource, agent).crawlDelayMs;
      } catch {
        crawlDelayMs = null;
      }
    }
    const next = Number(v(1) ?? 0);
    return {
      ...h,
      inFlight: Number(v(0) ?? 0),
      delayMs: Math.max(baseDelay, crawlDelayMs ?? 0),
      crawlDelayMs,
      nextInMs: Math.max(0, next - timeMs),
    };
  });
}

/**
 * Redis's clock: politeness deadlines are written in it, and this machine's clock may differ. TIME is not in
 * `+@read`, so a user with reads only (the monitor's, README "Which Redis") is refused it: this machine's clock then,
 * for a figure shown ("next request in 300 ms"), not a decision.
 */
async function redisTimeMs(redis: Redis): Promise<number> {
  try {
    const [s, us] = await redis.time();
    return Number(s) * 1000 + Math.floor(Number(us) / 1000);
  } catch (err) {
    if (isPermissionError(err)) return Date.now();
    throw err;
  }
}
