import type { Redis } from '../redis/connect';
import { readRunStats, sumHashes } from '../frontier/stats';
import { metricsKeys, partitionKeys } from '../frontier/keys';
import { METRICS_TTL_MS as TTL_MS, SAMPLE_URLS } from '../frontier/outcomes';
import { readLayout, readRunAndLayout } from '../frontier/partitions';
import { RATE_WINDOW_MS, rateOver, readJobCounts, skippedJobs, waitingPages } from './taskStatus';

export { metricsKeys } from '../frontier/keys';

// Crawl metrics over time, kept in Redis so a dashboard opened later (after a window reload, on another machine)
// shows the run so far. Whoever watches a run samples it: the crawl session on every poll, and an open
// dashboard when no session runs. A short NX lock makes all of them together take at most one sample a second.
//
// Bounded: two capped lists per run, one sample a second for the last 30 minutes and one every 15 seconds for
// the last 12 hours, so the start, the peak and the drain of a long run stay visible; every key expires a week
// after its last sample. Samples hold cumulative counters; rates are differences, so the coarse tier loses
// resolution, never totals.
//
// Per host, the workers count each job as they finish it (done, skipped or failed), in the same call as the
// run's counters when there is one (lua/pageDone.lua, lua/discover.lua), so the tally is exact however long
// nobody watches. (The sampler used to derive it from BullMQ's finished sets: a read of every finished job's
// data, a tenth of the CLI's work in a fast crawl, and jobs beyond KEEP_COMPLETED were lost to it.)

export interface MetricSample {
  /** ms since epoch. */
  readonly t: number;
  readonly done: number;
  readonly failed: number;
  /** Jobs skipped (robots, no rule…); links over maxPages never became jobs and are not counted here. */
  readonly skipped: number;
  readonly items: number;
  readonly enqueued: number;
  readonly bytes: number;
  readonly waiting: number;
  readonly active: number;
  readonly delayed: number;
}

export interface MetricTier {
  readonly name: string;
  readonly stepMs: number;
  readonly keep: number;
}

export const TIERS: readonly MetricTier[] = [
  { name: 'fine', stepMs: 1_000, keep: 1_800 },
  { name: 'coarse', stepMs: 15_000, keep: 2_880 },
];
const TICK_MS = 900;

export { skippedJobs } from './taskStatus';

/**
 * Takes a sample of the task's current run if no one else did in the last ~second. Returns the sample, or null
 * when skipped (another sampler was first, or the task has no run, or its run ended).
 *
 * `final`: the driver's sample as the run drains (run/session.ts), taken whoever sampled last: a crawl shorter than
 * the sampling step had no sample after its start, and the monitor, sampling later, spread its pages over the time
 * until someone looked (a 0.8 s demo crawl of 107 pages charted at 7.6 pages/s, beside its 108 pages/s average).
 * Once a run has ended nobody else samples it: samples after its end only stretched its history with zeros for as
 * long as a view stayed open.
 */
export async function recordSample(
  redis: Redis,
  task: string,
  now = Date.now(),
  opts: { readonly final?: boolean } = {},
): Promise<MetricSample | null> {
  const { run: info, layout } = await readRunAndLayout(redis, task);
  if (!info) return null;
  if (!opts.final && (info.state === 'finished' || info.state === 'stopped')) return null;
  const run = info.run;
  const mk = metricsKeys(task, run);
  if (!opts.final && (await redis.set(mk.tick, '1', 'PX', TICK_MS, 'NX')) !== 'OK') return null;
  // The job counts through the one read every view uses (taskStatus.ts), beside the run's counters, both summed over
  // the run's partitions (frontier/layout.ts).
  const tags = layout.tags;
  const [stats, counts] = await Promise.all([
    readRunStats(redis, task, run, layout),
    readJobCounts(redis, task, layout),
  ]);
  const sample: MetricSample = {
    t: now,
    done: stats.done,
    failed: stats.failed,
    skipped: skippedJobs(stats),
    items: stats.items,
    enqueued: stats.enqueued,
    bytes: stats.bytes,
    // Pages waiting in the compact frontier are waiting too, as BullMQ's own waiting jobs are (issue 19).
    waiting: waitingPages(counts),
    active: counts.active,
    delayed: counts.delayed,
  };
  await appendSample(redis, mk, sample, opts.final === true);
  // The workers' tally lives as long as the samples: the task's own (skips, failures, its partition's pages) expires
  // with them in appendSample, the other partitions' each in its own slot.
  await Promise.all(tags.slice(1).map((tag) => redis.pexpire(partitionKeys(task, tag).hosts(run), TTL_MS))).catch(
    () => undefined,
  );
  return sample;
}

function sameFigures(a: MetricSample | null, b: MetricSample): boolean {
  return a !== null && (Object.keys(b) as (keyof MetricSample)[]).every((k) => k === 't' || a[k] === b[k]);
}

async function appendSample(
  redis: Redis,
  mk: ReturnType<typeof metricsKeys>,
  sample: MetricSample,
  final: boolean,
): Promise<void> {
  const lasts = await Promise.all(TIERS.map((tier) => redis.lindex(mk.tier(tier.name), -1)));
  const m = redis.multi();
  TIERS.forEach((tier, i) => {
    const prev = lasts[i] ? (JSON.parse(lasts[i]) as MetricSample) : null;
    const last = prev?.t ?? 0;
    // A little slack: samples taken "every second" arrive a few ms early or late. The final one ends every tier,
    // unless the tier's last sample already says the same (the driver's poll read the drained run a moment ago): a
    // sample of nothing changed, ms later, would end the chart on a rate of 0.
    if (final ? sample.t <= last || sameFigures(prev, sample) : sample.t - last < tier.stepMs * 0.9) return;
    const key = mk.tier(tier.name);
    m.rpush(key, JSON.stringify(sample)).ltrim(key, -tier.keep, -1).pexpire(key, TTL_MS);
  });
  // The workers' tally lives as long as the samples.
  m.pexpire(mk.hosts, TTL_MS);
  await m.exec();
}

/**
 * The run's samples, oldest first: the coarse tier where the fine one no longer reaches, then the fine one. With
 * `last`, only the newest `last` fine samples when the fine tier holds that many (a view of the recent minutes: the
 * whole history of a long run is ~700 KB to read).
 */
export async function readHistory(redis: Redis, task: string, run: string, last?: number): Promise<MetricSample[]> {
  const mk = metricsKeys(task, run);
  if (last !== undefined && last > 0) {
    const tail = await redis.lrange(mk.tier(TIERS[0]!.name), -last, -1);
    if (tail.length >= last) return tail.map(parseSample);
  }
  const [fine, coarse] = await Promise.all(TIERS.map((t) => redis.lrange(mk.tier(t.name), 0, -1)));
  return mergeTiers((fine ?? []).map(parseSample), (coarse ?? []).map(parseSample));
}

function parseSample(s: string): MetricSample {
  return JSON.parse(s) as MetricSample;
}

export function mergeTiers(fine: readonly MetricSample[], coarse: readonly MetricSample[]): MetricSample[] {
  const from = fine[0]?.t ?? Infinity;
  return [...coarse.filter((s) => s.t < from), ...fine];
}

export interface HostTally {
  readonly host: string;
  readonly done: number;
  readonly skipped: number;
  readonly failed: number;
}

export async function readHostTally(redis: Redis, task: string, run: string): Promise<HostTally[]> {
  // Pages finished are counted in their partition (lua/pageDone.lua), skips and failures in the task's own slot.
  const tags = (await readLayout(redis, task)).tags;
  const h = sumHashes(await Promise.all(tags.map((tag) => redis.hgetall(partitionKeys(task, tag).hosts(run)))));
  const byHost = new Map<string, { done: number; skipped: number; failed: number }>();
  for (const [field, n] of Object.entries(h)) {
    const [host, what] = field.split('\t') as [string, string];
    const e = byHost.get(host) ?? { done: 0, skipped: 0, failed: 0 };
    if (what === 'done' || what === 'skipped' || what === 'failed') e[what] += Number(n);
    byHost.set(host, e);
  }
  return [...byHost]
    .map(([host, e]) => ({ host, ...e }))
    .sort((a, b) => b.done + b.failed + b.skipped - (a.done + a.failed + a.skipped));
}

export async function readSkippedUrls(redis: Redis, task: string, run: string, reason: string): Promise<string[]> {
  return redis.lrange(metricsKeys(task, run).skippedUrls(reason), 0, SAMPLE_URLS - 1);
}

// ---- Derived series (pure) -------------------------------------------------------------------------------------

export interface RatePoint {
  readonly t: number;
  readonly pagesPerSec: number;
  readonly itemsPerSec: number;
  /** Jobs finished (fetched, failed or skipped) per second. */
  readonly finishedPerSec: number;
  /** New URLs enqueued per second. */
  readonly discoveredPerSec: number;
  /** Jobs waiting, active or delayed. */
  readonly queueDepth: number;
}

export function finishedOf(s: MetricSample): number {
  return s.done + s.failed + s.skipped;
}

function pendingOf(s: MetricSample): number {
  return s.waiting + s.active + s.delayed;
}

/**
 * Rates between consecutive samples; counter resets (a new run on the same list) give zero, never negative. The
 * first interval's rates also stand at its start (with the start's queue depth): the charts begin where the history
 * does, and a run shorter than the sampling step, one interval from its first sample to its driver's last, is a
 * line rather than a single point that neither chart could draw ("Collecting samples…" for good).
 */
export function rateSeries(samples: readonly MetricSample[]): RatePoint[] {
  const out: RatePoint[] = [];
  for (let i = 1; i < samples.length; i++) {
    const a = samples[i - 1]!;
    const b = samples[i]!;
    const dt = (b.t - a.t) / 1000;
    if (dt <= 0) continue;
    const r = (x: number, y: number) => Math.max(0, y - x) / dt;
    const rates = {
      pagesPerSec: r(a.done, b.done),
      itemsPerSec: r(a.items, b.items),
      finishedPerSec: r(finishedOf(a), finishedOf(b)),
      discoveredPerSec: r(a.enqueued, b.enqueued),
    };
    if (out.length === 0) out.push({ t: a.t, ...rates, queueDepth: pendingOf(a) });
    out.push({ t: b.t, ...rates, queueDepth: pendingOf(b) });
  }
  return out;
}

export type EtaState = 'drained' | 'estimating' | 'stalled' | 'ok';

export interface Eta {
  readonly state: EtaState;
  /** Seconds to drain, when state is 'ok'. */
  readonly seconds: number | null;
  /** Pages finished per second over RATE_WINDOW_MS: the very pages/s the dashboard shows beside it. */
  readonly completionRate: number;
  readonly discoveryRate: number;
  readonly pending: number;
}

/**
 * Time to drain (issue 32, item 3): what is left (`left`, the queue now: pages waiting in the frontier or as jobs,
 * active or delayed; null: the last sample's) over the recent rate
 * (pages finished per second over RATE_WINDOW_MS, the pages/s every view shows), so ETA × pages/s = queue, which a
 * reader can check. None without a rate ('stalled') or before the window has two samples ('estimating'). The old
 * estimate divided by completion minus discovery, which early in a crawl (discovery close to completion) said
 * 4m19s for a crawl that took 75 s in all. The discovery rate is given, for the dashboard's detail line.
 */
export function estimateEta(samples: readonly MetricSample[], left: number | null, windowMs = RATE_WINDOW_MS): Eta {
  const last = samples[samples.length - 1];
  if (!last)
    return {
      state: left === 0 ? 'drained' : 'estimating',
      seconds: left === 0 ? 0 : null,
      completionRate: 0,
      discoveryRate: 0,
      pending: left ?? 0,
    };
  const pending = left ?? pendingOf(last);
  const c = rateOver(
    samples.map((x) => ({ t: x.t, n: finishedOf(x) })),
    windowMs,
  );
  const d = rateOver(
    samples.map((x) => ({ t: x.t, n: x.enqueued })),
    windowMs,
  );
  const base = { completionRate: c, discoveryRate: d, pending };
  if (pending === 0) return { ...base, state: 'drained', seconds: 0 };
  // No page finished yet: no rate to speak of (not a stall).
  if (
    samples.length < 2 ||
    last.t - samples[0]!.t < MIN_ETA_SPAN_MS ||
    finishedOf(last) === 0 ||
    windowMs < MIN_ETA_WINDOW_MS
  )
    return { ...base, state: 'estimating', seconds: null };
  if (c === 0) return { ...base, state: 'stalled', seconds: null };
  return { ...base, state: 'ok', seconds: pending / c };
}

/** The history an ETA needs first: a couple of samples a second or more apart (recordSample's pace). */
const MIN_ETA_SPAN_MS = 2_000;
/** And a rate over a few seconds of pages finishing (the window is short early in a run: figures.ts recentWindowMs). */
const MIN_ETA_WINDOW_MS = 2_000;
