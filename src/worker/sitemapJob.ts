import type { Job } from 'bullmq';
import type { Redis } from '../redis/connect';
import type { SitemapEntry } from '../core/sitemap/parser';
import { SitemapRouter } from '../core/sitemap/route';
import type { CrawlTask } from '../core/task/model';
import type { CrawlQueue } from '../frontier/crawl';
import type { PageJobData, PageJobResult, RunInfo } from '../frontier/types';
import type { RobotsCache } from '../frontier/robots';
import { countSkipped } from '../frontier/outcomes';
import { pageEntry } from '../store/buffer';
import type { PageRecord } from '../store/types';
import { FetchFailure, type FetchOptions, type StreamedResponse } from './fetcher';
import type { InSlot } from './fetchSlots';
import { readSitemap } from './sitemapReader';

// One sitemap's job: its request admitted like a page's (robots.txt, rate limit, host politeness), its body read as it
// downloads, its entries routed (core/sitemap/route.ts) and enqueued batch by batch through the frontier's discovery,
// so deduplication and the page limit hold as for a page's links, and a retry loses nothing (what an attempt
// queued stays queued, the rest is queued by the next). A
// robots.txt entry reads the fleet's cached copy and enqueues the sitemaps its `Sitemap:` lines name.

export interface SitemapJobDeps {
  readonly task: CrawlTask;
  readonly crawl: CrawlQueue;
  readonly redis: Redis;
  readonly robots: RobotsCache;
  readonly log: (level: 'info' | 'warn' | 'error', message: string) => void;
  readonly fetchOpts: FetchOptions;
  /** How the sitemap's body is requested: as a page is (its session's cookies, its proxy: worker/access.ts). */
  readonly stream: <T>(url: string, consume: (res: StreamedResponse) => Promise<T>) => Promise<T>;
}

/** What the page processor lends a sitemap's job: its admission, its fetch slot, its failure accounting. */
export interface SitemapJobHooks {
  admit(url: string): Promise<PageJobResult | null>;
  release(url: string): void;
  readonly inSlot: InSlot;
  failure(err: unknown): Promise<Error>;
  runInfo(run: string): Promise<RunInfo>;
}

export async function processSitemap(
  job: Job<PageJobData, PageJobResult>,
  deps: SitemapJobDeps,
  hooks: SitemapJobHooks,
): Promise<PageJobResult> {
  const { task, crawl, redis } = deps;
  const { url, run, depth: level } = job.data;
  const entry = job.data.sitemap!;
  const spec = task.sitemaps[entry];
  if (!spec) {
    // The task file changed under a running crawl: its sitemaps are numbered by their place in `start`.
    const reason = `no sitemap entry ${entry} in the task`;
    await countSkipped(redis, task.name, run, url, reason);
    await crawl.settle(task, String(job.id));
    return { outcome: 'skipped', status: null, items: 0, links: 0, reason };
  }
  const jobId = String(job.id);
  // Through Sentinel, the entries queued batch by batch must be on a replica before the sitemap is finished: after a
  // failover in between, some may have gone to the old master, and the sitemap is read again (redis/replicas.ts).
  const since = crawl.writeEpoch();
  const runInfo = await hooks.runInfo(run);
  const host = new URL(url).host;
  const dropped: Record<string, number> = {};
  let enqueued = 0;
  const enqueue = async (router: SitemapRouter, entries: SitemapEntry[]): Promise<boolean> => {
    const routed = router.route(entries);
    for (const [reason, n] of Object.entries(routed.dropped)) dropped[reason] = (dropped[reason] ?? 0) + n;
    if (routed.links.length === 0) return true;
    const outcomes = await crawl.enqueueLinks(task, runInfo, routed.links);
    enqueued += outcomes.filter((o) => o === 'enqueued').length;
    // Past scope.maxPages nothing more can be enqueued: the rest of the sitemap need not be downloaded.
    return !outcomes.every((o) => o === 'limit');
  };
  const finish = async (status: number | null, contentType: string | null, bytes: number): Promise<void> => {
    if (!(await crawl.writesKept(since)))
      throw await hooks.failure(
        new FetchFailure(
          'failover',
          `Redis failed over while the entries of ${url} were queued: it is read again`,
          true,
        ),
      );
    const rec: PageRecord = {
      task: task.name,
      run,
      url,
      rule: job.data.rule,
      depth: level,
      status,
      fetchedAt: Date.now(),
      contentType,
      bytes,
      items: [],
      problems: [],
    };
    const counters: Record<string, number> = { done: 1, sitemaps: 1, bytes };
    for (const [reason, n] of Object.entries(dropped)) counters[`dropped:${reason}`] = n;
    await crawl.completePage(task, run, jobId, { entry: pageEntry(rec), counters, host });
  };

  if (spec.robots && url === spec.url) {
    // Level -1: the sitemaps robots.txt names are the task's own (level 0), as if the task file listed them.
    const router = new SitemapRouter({ task, entry, url, level: -1, nowMs: Date.now() });
    const rules = await deps.robots.rulesFor(new URL(url).origin, task.request.userAgent);
    await enqueue(
      router,
      rules.sitemaps.map((loc) => ({ kind: 'sitemap', loc, lastmod: null })),
    );
    await finish(null, 'text/plain', 0);
    if (rules.sitemaps.length === 0) deps.log('warn', `${url} names no sitemap (no Sitemap: line)`);
    return {
      outcome: 'done',
      status: null,
      items: 0,
      links: enqueued,
      reason: `robots.txt: ${rules.sitemaps.length} sitemap(s)`,
    };
  }

  const skipped = await hooks.admit(url);
  if (skipped) return skipped;
  let router: SitemapRouter | null = null;
  let read;
  let response: { status: number; contentType: string | null } | null = null;
  try {
    read = await hooks.inSlot(() =>
      deps.stream(url, (res) => {
        response = res;
        // Relative <loc>s (the protocol forbids them; sites write them) resolve against where the sitemap was served.
        const routing = (router = new SitemapRouter({ task, entry, url: res.finalUrl, level, nowMs: Date.now() }));
        return readSitemap(res, { alternates: spec.alternates }, (entries) => enqueue(routing, entries));
      }),
    );
    if (read.format === null) {
      throw new FetchFailure(
        'sitemap',
        `sitemap ${url} is not a sitemap: ${read.root ? `its root element is <${read.root}>, not <urlset> or <sitemapindex>` : 'it is empty'}`,
        false,
        response!.status,
      );
    }
  } catch (err) {
    hooks.release(url);
    throw await hooks.failure(err);
  }
  hooks.release(url);
  const res = response as { status: number; contentType: string | null } | null;
  await finish(res?.status ?? null, res?.contentType ?? null, read.bytes);
  const drops = Object.entries(dropped)
    .map(([r, n]) => `${n} ${r}`)
    .join(', ');
  const entries = (router as SitemapRouter | null)?.entries ?? 0;
  deps.log(
    'info',
    `sitemap ${url} (${read.format}${read.gzipped ? ', gzip' : ''}): ${entries} entries, ${enqueued} enqueued${drops ? `, dropped ${drops}` : ''}${read.stopped ? ', stopped at scope.maxPages' : ''}`,
  );
  return {
    outcome: 'done',
    status: res?.status ?? null,
    items: 0,
    links: enqueued,
    reason: `sitemap: ${entries} entries`,
  };
}
