import type { Job } from 'bullmq';
import type { Redis } from '../redis/connect';
import type { SitemapEntry } from '../core/sitemap/parser';
import { SitemapRouter } from '../core/sitemap/route';
import type { CrawlTask, SitemapStart } from '../core/task/model';
import type { CrawlQueue } from '../frontier/crawl';
import type { PageJobData, PageJobResult, RunInfo } from '../frontier/types';
import type { RobotsCache } from '../frontier/robots';
import { countSkipped } from '../frontier/outcomes';
import { pageEntry } from '../store/buffer';
import type { PageRecord } from '../store/types';
import { FetchFailure, type FetchOptions, type StreamedResponse } from './fetcher';
import type { InSlot } from './fetchSlots';
import { readSitemap, type SitemapRead } from './sitemapReader';

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
  const { url, run } = job.data;
  const entry = job.data.sitemap!;
  const spec = task.sitemaps[entry];
  if (!spec) {
    // The task file changed under a running crawl: its sitemaps are numbered by their place in `start`.
    const reason = `no sitemap entry ${entry} in the task`;
    await countSkipped(redis, task.name, run, { id: String(job.id), url }, reason);
    await crawl.settle(task, String(job.id));
    return { outcome: 'skipped', status: null, items: 0, links: 0, reason };
  }
  // Through Sentinel, the entries queued batch by batch must be on a replica before the sitemap is finished: after a
  // failover in between, some may have gone to the old master, and the sitemap is read again (redis/replicas.ts).
  const since = crawl.writeEpoch();
  const sitemap = new SitemapJob(job, deps, hooks, { entry, spec, since, runInfo: await hooks.runInfo(run) });
  return spec.robots && url === spec.url ? sitemap.fromRobots() : sitemap.download();
}

/** What a sitemap's job knows before it reads: its entry in the task, and where its run and writes stand. */
interface SitemapStartState {
  readonly entry: number;
  readonly spec: SitemapStart;
  readonly since: number | null;
  readonly runInfo: RunInfo;
}

type Response = { status: number; contentType: string | null };

/** One sitemap's job as it goes: its entries routed and enqueued, the counts of those dropped, its finish. */
class SitemapJob {
  private readonly dropped: Record<string, number> = {};
  private enqueued = 0;
  private readonly url: string;

  constructor(
    private readonly job: Job<PageJobData, PageJobResult>,
    private readonly deps: SitemapJobDeps,
    private readonly hooks: SitemapJobHooks,
    private readonly state: SitemapStartState,
  ) {
    this.url = job.data.url;
  }

  /** A robots.txt entry: the sitemaps its `Sitemap:` lines name, from the fleet's cached copy. */
  async fromRobots(): Promise<PageJobResult> {
    const { task } = this.deps;
    const { url } = this;
    // Level -1: the sitemaps robots.txt names are the task's own (level 0), as if the task file listed them.
    const router = new SitemapRouter({ task, entry: this.state.entry, url, level: -1, nowMs: Date.now() });
    const rules = await this.deps.robots.rulesFor(new URL(url).origin, task.request.userAgent);
    await this.enqueue(
      router,
      rules.sitemaps.map((loc) => ({ kind: 'sitemap', loc, lastmod: null })),
    );
    await this.finish(null, 'text/plain', 0);
    if (rules.sitemaps.length === 0) this.deps.log('warn', `${url} names no sitemap (no Sitemap: line)`);
    return {
      outcome: 'done',
      status: null,
      items: 0,
      links: this.enqueued,
      reason: `robots.txt: ${rules.sitemaps.length} sitemap(s)`,
    };
  }

  /** A sitemap admitted like a page, read as it downloads, its entries enqueued batch by batch. */
  async download(): Promise<PageJobResult> {
    const { url, hooks } = this;
    const skipped = await hooks.admit(url);
    if (skipped) return skipped;
    let router: SitemapRouter | null = null;
    let read: SitemapRead;
    let response: Response | null = null;
    try {
      read = await hooks.inSlot(() =>
        this.deps.stream(url, (res) => {
          response = res;
          // Relative <loc>s (the protocol forbids them; sites write them) resolve against where the sitemap was served.
          const { task } = this.deps;
          const level = this.job.data.depth;
          const routing = (router = new SitemapRouter({
            task,
            entry: this.state.entry,
            url: res.finalUrl,
            level,
            nowMs: Date.now(),
          }));
          return readSitemap(res, { alternates: this.state.spec.alternates }, (entries) =>
            this.enqueue(routing, entries),
          );
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
    return this.downloaded(read, response, (router as SitemapRouter | null)?.entries ?? 0);
  }

  /** A sitemap read to its end (or to the page limit): finished, and said. */
  private async downloaded(read: SitemapRead, res: Response | null, entries: number): Promise<PageJobResult> {
    const { url, enqueued } = this;
    await this.finish(res?.status ?? null, res?.contentType ?? null, read.bytes);
    const drops = Object.entries(this.dropped)
      .map(([r, n]) => `${n} ${r}`)
      .join(', ');
    this.deps.log(
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

  /** A batch of entries routed and enqueued; false once the page limit is reached (nothing more need be read). */
  private async enqueue(router: SitemapRouter, entries: SitemapEntry[]): Promise<boolean> {
    const routed = router.route(entries);
    for (const [reason, n] of Object.entries(routed.dropped)) this.dropped[reason] = (this.dropped[reason] ?? 0) + n;
    if (routed.links.length === 0) return true;
    const outcomes = await this.deps.crawl.enqueueLinks(this.deps.task, this.state.runInfo, routed.links);
    this.enqueued += outcomes.filter((o) => o === 'enqueued').length;
    // Past scope.maxPages nothing more can be enqueued: the rest of the sitemap need not be downloaded.
    return !outcomes.every((o) => o === 'limit');
  }

  /** The sitemap's record and counters, once its entries are kept (on a replica, through Sentinel). */
  private async finish(status: number | null, contentType: string | null, bytes: number): Promise<void> {
    const { task, crawl } = this.deps;
    const { url, job } = this;
    if (!(await crawl.writesKept(this.state.since)))
      throw await this.hooks.failure(
        new FetchFailure(
          'failover',
          `Redis failed over while the entries of ${url} were queued: it is read again`,
          true,
        ),
      );
    const rec: PageRecord = {
      task: task.name,
      run: job.data.run,
      url,
      rule: job.data.rule,
      depth: job.data.depth,
      status,
      fetchedAt: Date.now(),
      contentType,
      bytes,
      items: [],
      problems: [],
    };
    const counters: Record<string, number> = { done: 1, sitemaps: 1, bytes };
    for (const [reason, n] of Object.entries(this.dropped)) counters[`dropped:${reason}`] = n;
    await crawl.completePage(task, job.data.run, String(job.id), {
      entry: pageEntry(rec),
      counters,
      host: new URL(url).host,
    });
  }
}
