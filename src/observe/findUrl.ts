import { Job } from 'bullmq';
import type { CrawlTask } from '../core/task/model';
import { decideLink } from '../core/url/scope';
import { KEEP_COMPLETED } from '../frontier/types';
import { seenSlot } from '../frontier/dedup';
import { describeGroup, failureGroupOf } from './failures';
import { describeAttempts } from './figures';
import { partitionOfUrl } from '../frontier/layout';
import { jobIdOf, readRunAndLayout, type PageJob, type TaskPartitions } from '../frontier/partitions';
import type { PageJobData, PageJobResult } from '../frontier/types';
import { findInFrontier } from './frontier';
import { readRunStats } from '../frontier/stats';
import type { TaskLayout } from '../frontier/layout';

// "Where is this URL and why": one search across the task's scope rules, the run's seen set, its job (in any
// state, failed included) and the stored items. Each place answers with a finding a person can read.

export type FindingPlace = 'scope' | 'run' | 'seen' | 'queue' | 'failed' | 'store';

export interface UrlFinding {
  readonly place: FindingPlace;
  /** One line: "failed 3x: HTTP 503", "skipped: robots.txt", "stored as book 123"… */
  readonly text: string;
  readonly jobId?: string;
  readonly state?: string;
  readonly itemType?: string;
  readonly itemKey?: string;
}

export interface UrlSearchResult {
  readonly input: string;
  /** The canonical form the crawl uses for deduplication (null when the input is not a URL). */
  readonly url: string | null;
  readonly findings: readonly UrlFinding[];
}

/** Stored items whose source URL is `url`. */
export type ItemLookup = (url: string) => Promise<{ type: string; key: string }[]>;

/** Where `input` stands in the task of `parts` (Find URL); `items` looks it up in the store too. */
export async function findUrl(
  parts: TaskPartitions,
  task: CrawlTask,
  input: string,
  items?: ItemLookup,
): Promise<UrlSearchResult> {
  const redis = parts.redis;
  const raw = input.trim();
  const d = decideLink(task, raw, raw, 0);
  const findings: UrlFinding[] = [];
  const invalid = !d.ok && ['invalid', 'scheme', 'credentials', 'too-long'].includes(d.reason);
  if (invalid)
    return { input, url: null, findings: [{ place: 'scope', text: `not a crawlable URL (${d.ok ? '' : d.reason})` }] };
  const url = d.url;
  if (!d.ok)
    findings.push({
      place: 'scope',
      text: `out of scope: ${d.reason}${'detail' in d && d.detail ? ` (${d.detail})` : ''} — links to it are dropped`,
    });

  const { run, layout } = await readRunAndLayout(redis, task.name);
  if (!run) {
    findings.push({ place: 'run', text: `'${task.name}' has never run on this Redis` });
  } else {
    // The URL's partition (frontier/layout.ts) holds its seen entry and its job: the task's own on a single node.
    const p = parts.of(layout)[partitionOfUrl(layout, url)]!;
    const slot = seenSlot(url, run.bucketBits);
    const seen = (await redis.sismember(p.keys.seenBucket(run.run, slot.bucket), slot.member)) === 1;
    const job = await Job.fromId<PageJobData, PageJobResult>(p.queue, jobIdOf(run.run, url));
    if (job) findings.push(await jobFinding(job));
    // A page waiting in the compact frontier has no job yet (the window holds a few pages per worker).
    const waiting = job ? null : await findInFrontier(redis, task.name, url);
    if (waiting?.place === 'frontier') {
      const ahead = waiting.ahead === 0 ? 'next of its host' : `${waiting.ahead} page(s) of its host before it`;
      findings.push({
        place: 'queue',
        state: 'frontier',
        text: `waiting in the frontier (not a job yet): priority band ${waiting.band}, ${ahead}`,
      });
    } else if (waiting?.place === 'window') {
      findings.push({ place: 'queue', state: 'frontier', text: 'taken from the frontier: its job is being added' });
    }
    if (seen && !job && !waiting)
      findings.push({
        place: 'seen',
        text: `seen in run ${run.run}; its job is no longer kept (finished jobs past the newest ${KEEP_COMPLETED} are removed) or it was over maxPages`,
      });
    if (!seen && !job && !waiting)
      findings.push({
        place: 'seen',
        text: await notSeenText(redis, task.name, run.run, layout, d.ok ? null : d.reason),
      });
  }

  if (items) {
    const stored = await items(url);
    if (raw !== url)
      for (const s of await items(raw)) if (!stored.some((x) => x.type === s.type && x.key === s.key)) stored.push(s);
    for (const s of stored.slice(0, 20))
      findings.push({ place: 'store', text: `stored as ${s.type} ${s.key}`, itemType: s.type, itemKey: s.key });
    if (stored.length === 0) findings.push({ place: 'store', text: 'no stored item has this source URL' });
  }
  return { input, url, findings };
}

/**
 * Why a URL the run never queued: pages may well link to it (an off-site URL four pages link to read "no page
 * linked to it", issue 32), but the run keeps drops as counts by reason, not by URL, so that is what it can say.
 */
async function notSeenText(
  redis: TaskPartitions['redis'],
  task: string,
  run: string,
  layout: TaskLayout,
  dropReason: string | null,
): Promise<string> {
  if (dropReason === null)
    return `not seen in run ${run}: no page has linked to it yet, or its links were dropped (e.g. past maxDepth); the run's dropped links are counted by reason in its summary`;
  const n = (await readRunStats(redis, task, run, layout)).dropped[dropReason] ?? 0;
  return `not queued in run ${run}: links to it are dropped as ${dropReason} (the run dropped ${n.toLocaleString('en-US')} ${dropReason} link${n === 1 ? '' : 's'} so far), so pages may link to it without it being fetched`;
}

async function jobFinding(job: PageJob): Promise<UrlFinding> {
  const state = await job.getState();
  const id = String(job.id);
  // Attempts in the explorer's words (figures.ts describeAttempts): made of allowed, and whether retried by hand.
  const attempts = describeAttempts(job.attemptsMade, job.opts.attempts, job.data?.retried);
  if (state === 'failed') {
    return {
      place: 'failed',
      jobId: id,
      state,
      text: `failed (${attempts}): ${describeGroup(failureGroupOf(job.failedReason))} — ${job.failedReason ?? ''}`.trim(),
    };
  }
  if (state === 'completed') {
    const r = job.returnvalue;
    if (r?.outcome === 'skipped')
      return { place: 'queue', jobId: id, state, text: `skipped: ${r.reason ?? 'unknown reason'}` };
    if (r?.outcome === 'non-html')
      return {
        place: 'queue',
        jobId: id,
        state,
        text: `fetched (HTTP ${r.status ?? '?'}), not HTML: ${r.reason ?? ''}`.trim(),
      };
    return {
      place: 'queue',
      jobId: id,
      state,
      text: `fetched: HTTP ${r?.status ?? '?'}, ${r?.items ?? 0} item(s), ${r?.links ?? 0} new link(s)`,
    };
  }
  const retrying =
    job.attemptsMade > 0
      ? ` (${attempts}, last error: ${job.failedReason ?? '?'})`
      : job.data?.retried
        ? ` (${attempts})`
        : '';
  const what: Record<string, string> = {
    waiting: 'waiting in the queue',
    prioritized: 'waiting in the queue (prioritized)',
    active: 'being fetched now',
    delayed: 'delayed (politeness or retry backoff)',
    'waiting-children': 'waiting',
  };
  return { place: 'queue', jobId: id, state, text: `${what[state] ?? state}${retrying}` };
}
