import type { JobsOptions } from 'bullmq';
import type { CrawlTask } from '../core/task/model';
import { requestKey } from '../core/request/build';
import { seenSlot } from './dedup';
import { hostTallyField, taskKeys, type PartitionKeys } from './keys';
import { encodePage } from './record';
import type { FillReply } from './scripts';
import {
  DEFAULT_PRIORITY,
  KEEP_COMPLETED,
  KEEP_FAILED,
  type FrontierLink,
  type PageFinish,
  type RunInfo,
} from './types';
import { WINDOW_LEASE_MS, WINDOW_PER_REQUEST } from './window';

// The arguments the frontier's Lua scripts take and the replies they give (each script documents its layout), and
// the options of a page's BullMQ job: built here once, for CrawlQueue and for the benches and tests that call the
// scripts directly.

/** A finish as the scripts take it: entry field and value, host tally field ('' for none), counter pairs. */
export function finishArgs(finish: PageFinish): (string | number)[] {
  const args: (string | number)[] = [
    finish.entry[0],
    finish.entry[1],
    finish.host === null ? '' : hostTallyField(finish.host, 'done'),
  ];
  for (const [field, n] of Object.entries(finish.counters)) if (n !== 0) args.push(field, n);
  return args;
}

/** The priority band a link waits in: its priority, or the default one (bands are ordered by it, 1 first). */
export function bandOf(priority: number | null): string {
  return String(priority ?? DEFAULT_PRIORITY);
}

/**
 * Most pages of one host in the window: the share of the window a request slot gets (window.ts), per request the
 * host may have in flight. A worker holds two jobs per request (fetchSlots.ts); the third waits in BullMQ, so a
 * worker that finishes a job finds the next there. At two, a crawl of one host held its whole window in the workers:
 * each finished job found none waiting and blocked for the next fill, and each finished page added one job of its
 * own (bench: 1.70 Redis round trips a page against 1.33 before the frontier). A host with a delay gives a page per
 * delay whatever its cap (lua/frontier.lua).
 */
export function hostCap(task: CrawlTask): number {
  return WINDOW_PER_REQUEST * task.politeness.perHost.concurrency;
}

/** The frontier's parameters, as lua/frontier.lua's fConfig takes them, for the partition with keys `k`. */
export function frontierArgs(
  task: CrawlTask,
  target: number,
  leaseMs = WINDOW_LEASE_MS,
  k: PartitionKeys = taskKeys(task.name),
  opts: { batch?: number; counted?: boolean } = {},
): (string | number)[] {
  return [
    k.frontier.prefix,
    k.bull.job,
    task.politeness.perHost.delayMs,
    hostCap(task),
    leaseMs,
    target,
    opts.batch ?? 1,
    opts.counted ? '1' : '0',
  ];
}

/**
 * The fewest pages a fill that comes with a finished page takes (lua/frontier.lua fFill): the window is topped up a
 * few pages at a time, so a page's job is added with others' rather than in a BullMQ call of its own, and a host that
 * became ready waits at most that many pages (a few ms at a fast crawl's rate). Bench: one job add per page cost ~14%
 * of a page's CPU against the batched adds of new links before the frontier.
 */
export function fillBatch(target: number): number {
  return Math.max(1, Math.floor(target / 12));
}

/**
 * The keys and arguments of one lua/discover.lua call (the script documents their layout): `links` (canonical
 * URLs, all of partition `k`) marked seen in `run` and the new ones queued in the frontier; with `finish` the page of
 * job `jobId` finished in the same call; the window filled up to `target`. `limit` is the page limit as the script
 * takes it: by default the task's maxPages counted in the partition, right for a task in one partition.
 */
export function discoverCall(
  task: CrawlTask,
  run: Pick<RunInfo, 'run' | 'bucketBits'>,
  links: readonly FrontierLink[],
  target: number,
  finish: { jobId: string; finish: PageFinish } | null,
  opts: { force?: string | null; leaseMs?: number; keys?: PartitionKeys; limit?: string; counted?: boolean } = {},
): { keys: string[]; args: (string | number)[] } {
  const k = opts.keys ?? taskKeys(task.name);
  const force = opts.force ?? null;
  const keys: string[] = [k.stats(run.run), k.frontier.meta];
  const limit = opts.limit ?? (task.scope.maxPages ? `max:${task.scope.maxPages}` : '0');
  const args: (string | number)[] = [
    ...frontierArgs(task, target, opts.leaseMs, k, { batch: fillBatch(target), counted: opts.counted }),
    limit,
    run.run,
    links.length,
    force === null ? '' : 'force',
  ];
  for (const l of links) {
    // A page's deduplication key: a GET's canonical URL, or a request's method, URL and body (requestKey).
    const slot = seenSlot(requestKey(l.url, l.request), run.bucketBits);
    keys.push(k.seenBucket(run.run, slot.bucket));
    const { host, record } = encodePage(
      {
        url: l.url,
        rule: l.rule,
        depth: l.depth,
        sitemap: l.sitemap,
        lastmod: l.lastmod,
        request: l.request,
        series: l.series,
        ...(force !== null ? { force } : {}),
      },
      l.host,
    );
    args.push(slot.member, host, bandOf(l.priority), record);
  }
  if (finish) {
    keys.push(k.items, k.hosts(run.run));
    args.push(finish.jobId, ...finishArgs(finish.finish));
  }
  return { keys, args };
}

/** A page taken from the frontier, to add as a BullMQ job (lua/fill.lua's tail). */
export interface WindowPage {
  readonly kind: 'n' | 'r';
  readonly id: string;
  readonly band: string;
  readonly host: string;
  readonly record: string;
}

/** The window's fill at `at` in a script's reply. */
export function parseFill(reply: FillReply, at: number): { run: string; next: number; pages: WindowPage[] } {
  const pages: WindowPage[] = [];
  for (let i = at + 2; i + 4 < reply.length; i += 5) {
    pages.push({
      kind: reply[i] === 'r' ? 'r' : 'n',
      id: String(reply[i + 1]),
      band: String(reply[i + 2]),
      host: String(reply[i + 3]),
      record: String(reply[i + 4]),
    });
  }
  return { run: String(reply[at] ?? ''), next: Number(reply[at + 1] ?? -1), pages };
}

/** Whether any rule of the task sets a priority: its jobs then carry their band as BullMQ priority. */
export function taskUsesPriority(task: CrawlTask): boolean {
  return (
    task.start.some((s) => s.priority !== null) ||
    task.sitemaps.some((s) => s.priority !== null) ||
    task.rules.some((r) => r.follow.some((f) => f.priority !== null))
  );
}

/** A page's BullMQ job options: its deterministic id, its retries with the crawl's backoff, what is kept after. */
export function jobOptions(task: CrawlTask, jobId: string, priority: number | null): JobsOptions {
  return {
    // Not an integer and no ':' (BullMQ rules); one id per URL per run (partitions.ts pageJobId).
    jobId,
    attempts: task.request.retries.attempts,
    backoff: { type: 'crawl', delay: task.request.retries.delayMs },
    removeOnComplete: { count: KEEP_COMPLETED },
    removeOnFail: { count: KEEP_FAILED },
    ...(priority !== null ? { priority } : {}),
  };
}
