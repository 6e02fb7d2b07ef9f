import { DelayedError, type Job } from 'bullmq';
import type { CrawlTask } from '../core/task/model';
import type { CrawlQueue } from '../frontier/crawl';
import { countSkipped } from '../frontier/outcomes';
import type { HostGate } from '../frontier/politeness';
import type { RobotsCache } from '../frontier/robots';
import type { PageJobData, PageJobResult } from '../frontier/types';
import type { Redis } from '../redis/connect';
import type { PoliteWait } from './fetchSlots';

// A request's turn, for pages and sitemaps alike: robots.txt's word on its URL, then the task's rate limit and the
// host's politeness (a lease the caller releases when its request is done). A long wait sets the job aside.

type PageJob = Job<PageJobData, PageJobResult>;

/** robots.txt's word on a URL: its Crawl-delay when allowed; the job's result (skipped) when not. */
export type RobotsAnswer = { ok: true; crawlDelayMs: number | null } | { ok: false; skipped: PageJobResult };

export interface TurnDeps {
  readonly task: CrawlTask;
  readonly crawl: CrawlQueue;
  readonly redis: Redis;
  readonly robots: RobotsCache;
  readonly gate: HostGate;
  /** Waits of the rate limit shorter than this are slept in place; longer ones set the job aside. */
  readonly maxInlineWaitMs: number;
  /** The same for a host's promised start. */
  readonly maxInlineHostWaitMs: number;
  /** How long a host lease lasts: longer than the longest request. */
  readonly leaseMs: number;
}

/** The host lease of a job's request: one per attempt (BullMQ's token), so a retry never releases a stale one. */
export function leaseOf(job: Job, token: string | undefined): string {
  return `${token ?? job.id}`;
}

export class PageTurns {
  constructor(private readonly deps: TurnDeps) {}

  /** robots.txt, then the request's turn. The job's result when robots.txt forbids the URL, else null. */
  async admit(
    job: PageJob,
    token: string | undefined,
    url: string,
    politeWait: PoliteWait,
  ): Promise<PageJobResult | null> {
    const allowed = await this.robotsCheck(job, url);
    if (!allowed.ok) return allowed.skipped;
    await this.take(job, token, url, allowed.crawlDelayMs, politeWait);
    return null;
  }

  /** robots.txt's word on `url`; a forbidden page is counted skipped and leaves the window. */
  async robotsCheck(job: PageJob, url: string): Promise<RobotsAnswer> {
    const { task, redis, crawl } = this.deps;
    if (!task.request.robots) return { ok: true, crawlDelayMs: null };
    const rules = await this.deps.robots.rulesFor(new URL(url).origin, task.request.userAgent);
    if (rules.isAllowed(url)) return { ok: true, crawlDelayMs: rules.crawlDelayMs };
    await countSkipped(redis, task.name, job.data.run, { id: String(job.id), url }, 'robots.txt', job.data.rule);
    await crawl.settle(task, String(job.id));
    return { ok: false, skipped: { outcome: 'skipped', status: null, items: 0, links: 0, reason: 'robots.txt' } };
  }

  /** The host's delay for a page: the task's per-host delay, or robots.txt's Crawl-delay when longer. */
  hostLimits(crawlDelayMs: number | null) {
    const { perHost } = this.deps.task.politeness;
    return {
      concurrency: perHost.concurrency,
      delayMs: Math.max(perHost.delayMs, crawlDelayMs ?? 0),
      leaseMs: this.deps.leaseMs,
    };
  }

  /**
   * The request's turn: the task's rate limit, then the host's politeness (a lease the caller releases when its
   * request is done). Sets the job aside (DelayedError) when the wait is long.
   */
  async take(
    job: PageJob,
    token: string | undefined,
    url: string,
    crawlDelayMs: number | null,
    politeWait: PoliteWait,
  ): Promise<void> {
    const { host } = new URL(url);
    await this.rateLimit(job, token, politeWait);
    const { gate, task, maxInlineHostWaitMs } = this.deps;
    const limits = this.hostLimits(crawlDelayMs);
    const lease = leaseOf(job, token);
    for (;;) {
      const answer = await gate.acquire(host, limits, lease, token ? `${task.name}|${job.id}` : '');
      if (answer.ok) break;
      if (answer.waitMs > maxInlineHostWaitMs && token) await setAside(job, token, answer.waitMs);
      await politeWait(answer.waitMs);
    }
  }

  /** Gives the host's lease back. Not awaited: nothing waits on the release, and a lost one expires with its lease. */
  release(host: string, job: PageJob, token: string | undefined): void {
    void this.deps.gate.release(host, leaseOf(job, token)).catch(() => undefined);
  }

  /** Tells the host gate the request is on the wire (sendWatch.ts); a lost word expires with the lease. */
  sent(host: string, job: PageJob, token: string | undefined, delayMs: number): void {
    void this.deps.gate.sent(host, leaseOf(job, token), delayMs).catch(() => undefined);
  }

  /** The task's global rate limit, when it has one. */
  private async rateLimit(job: PageJob, token: string | undefined, politeWait: PoliteWait): Promise<void> {
    const { gate, task, crawl, maxInlineWaitMs } = this.deps;
    const rate = task.politeness.rateLimit;
    if (!rate) return;
    const lease = leaseOf(job, token);
    for (let i = 0; ; i++) {
      const wait = await gate.rateLimit(crawl.keys.rate, rate.max, rate.perMs, `${lease}:${i}:${Date.now()}`);
      if (wait === 0) break;
      if (wait > maxInlineWaitMs && token) await setAside(job, token, wait);
      await politeWait(wait);
    }
  }
}

/** Moves the job to BullMQ's delayed set for `waitMs` and frees its place in the worker (throws DelayedError). */
async function setAside(job: PageJob, token: string, waitMs: number): Promise<never> {
  await job.moveToDelayed(Date.now() + waitMs, token);
  throw new DelayedError();
}
