import type { Redis } from '../redis/connect';
import type { CrawlTask } from '../core/task/model';
import { requestKey } from '../core/request/build';
import { replicaWait, type ReplicaWait } from '../redis/replicas';
import {
  discoverCall,
  fillBatch,
  finishArgs,
  frontierArgs,
  jobOptions,
  parseFill,
  taskUsesPriority,
} from './scriptArgs';
import { failpoint } from './failpoint';
import { taskKeys } from './keys';
import { layoutFor, partitionOfUrl, singleLayout, type TaskLayout } from './layout';
import { pageIdOfJob, pageJobId, TaskPartitions, type PageQueue, type Partition } from './partitions';
import { decodePage } from './record';
import { withScripts, type CrawlScripts, type FillReply } from './scripts';
import {
  SITEMAP_JOB,
  type EnqueueOutcome,
  type FrontierLink,
  type PageFinish,
  type PageJobData,
  type RunInfo,
} from './types';
import { fleetWindow, WINDOW_LEASE_MS, type FillResult, type WindowTarget } from './window';

// The page side of a crawl's queue, shared by workers and front ends through CrawlQueue (crawl.ts): the task's
// partitions in the layout in use, links queued exactly once across all workers, a page finished with its links in
// one call per partition, the window filled and its pages added as BullMQ jobs. The runs themselves (start, pause,
// stop, drain) are CrawlQueue's.

/** How many times a page's finish is written before it is left as it is (a master failing over again and again). */
const DURABLE_ATTEMPTS = 3;
/** Links per discover-script call. */
const DISCOVER_CHUNK = 1000;

export interface CrawlQueueOptions {
  readonly windowTarget?: WindowTarget;
  readonly leaseMs?: number;
  readonly layout?: TaskLayout;
  /** Write BullMQ's meta hash as its Queue does when made (see TaskPartitions): the driver's and the workers' only. */
  readonly writeQueueMeta?: boolean;
}

export abstract class PageFlow {
  /** The queue of the task's first partition: its only one on a single node, and the job scheduler's. */
  readonly queue: PageQueue;
  readonly keys: ReturnType<typeof taskKeys>;
  /** The task's partitions (frontier/partitions.ts), their queues on `bullConnection`. */
  readonly parts: TaskPartitions;
  protected readonly redis: Redis & CrawlScripts;
  /** Through Sentinel: waits until a replica has a page's finish (redis/replicas.ts); null elsewhere. */
  private readonly replicas: ReplicaWait | null;
  /** How many pages the window should hold, over every partition (see frontier/window.ts). */
  readonly windowTarget: WindowTarget;
  protected readonly leaseMs: number;
  protected layout: TaskLayout;

  constructor(
    redis: Redis,
    readonly taskName: string,
    /** BullMQ's Queue connection; the same one by default (see worker/runtime.ts for why a worker splits them). */
    bullConnection: Redis = redis,
    opts: CrawlQueueOptions = {},
  ) {
    this.redis = withScripts(redis);
    this.replicas = replicaWait(redis);
    this.keys = taskKeys(taskName);
    this.windowTarget = opts.windowTarget ?? fleetWindow(redis, taskName);
    this.leaseMs = opts.leaseMs ?? WINDOW_LEASE_MS;
    this.layout = opts.layout ?? singleLayout(taskName);
    this.parts = new TaskPartitions(this.redis, taskName, bullConnection, opts.writeQueueMeta ?? false);
    this.queue = this.parts.first().queue;
  }

  /**
   * Reads how the task is spread over Redis (frontier/layout.ts): one partition on a single node, one per primary on
   * a cluster. Every process computes the same from the same topology; a process on a cluster calls this before
   * using the queue (the CLI, the session, workers and writers do).
   */
  async loadLayout(): Promise<TaskLayout> {
    this.useLayout(await layoutFor(this.redis, this.taskName));
    return this.layout;
  }

  useLayout(layout: TaskLayout): void {
    this.layout = layout;
  }

  currentLayout(): TaskLayout {
    return this.layout;
  }

  /** The task's partitions in the current layout. */
  partitions(): Partition[] {
    return this.parts.of(this.layout);
  }

  /** The partition a page's job belongs to, by its job id. */
  partitionOfJob(jobId: string): Partition {
    return this.parts.ofJob(this.layout, jobId);
  }

  async close(): Promise<void> {
    await this.parts.close();
  }

  /**
   * Queues links in the frontier, each at most once per run whichever worker finds it (marking a URL seen and
   * queueing it are one atomic call), and fills the window.
   */
  async enqueueLinks(
    task: CrawlTask,
    run: Pick<RunInfo, 'run' | 'bucketBits'>,
    links: readonly FrontierLink[],
  ): Promise<EnqueueOutcome[]> {
    return this.discover(task, run, links, null, null);
  }

  /**
   * A fetched page's links queued and the page finished (its record to the store's stream, its counters, its job
   * marked done and its page out of the window), atomically in one call, which also fills the window. A page with
   * more links than one call takes, or links in other partitions, is finished with its partition's last call; a
   * worker dying before that leaves the job to a retry, which finds the links of the earlier calls already seen (and
   * queued) and finishes the page once. Through Sentinel, it returns once a replica has it all (see durably).
   */
  async finishPage(
    task: CrawlTask,
    run: Pick<RunInfo, 'run' | 'bucketBits'>,
    jobId: string,
    links: readonly FrontierLink[],
    finish: PageFinish,
  ): Promise<EnqueueOutcome[]> {
    if (links.length === 0) {
      await this.completePage(task, run.run, jobId, finish);
      return [];
    }
    let first: EnqueueOutcome[] | null = null;
    const outcomes = await this.durably(() =>
      this.discover(task, run, links, { jobId, finish }, null).then((o) => (first ??= o)),
    );
    // Written again after a failover, the links queued the first time are 'duplicate' the second.
    return outcomes.map((o, i) => (first![i] === 'enqueued' ? 'enqueued' : o));
  }

  /**
   * Runs a page's finishing writes. On a connection through Sentinel (redis/replicas.ts) it returns only once a
   * replica has them, so that BullMQ, which completes the job next on a connection of its own, cannot complete it on a
   * new master that never got the page; when the connection moved to another master meanwhile, the writes may have
   * gone to the old one, and they are made again. They are idempotent: a link already seen is a duplicate, and a
   * page whose job is marked finished is not finished twice (lua/frontier.lua fFinished). Elsewhere: the writes.
   */
  private async durably<T>(write: () => Promise<T>): Promise<T> {
    if (!this.replicas) return write();
    for (let attempt = 1; ; attempt++) {
      const since = this.replicas.epoch();
      const result = await write();
      if ((await this.replicas.confirm(since)) || attempt >= DURABLE_ATTEMPTS) return result;
    }
  }

  /** The connection's generation (redis/replicas.ts), for writesKept; null where there is no replica to wait for. */
  writeEpoch(): number | null {
    return this.replicas?.epoch() ?? null;
  }

  /**
   * Whether every write this connection made since `since` (writeEpoch) is on a replica, through Sentinel; false when
   * the connection moved to another master meanwhile (some may be lost with the old one). Always true elsewhere.
   */
  async writesKept(since: number | null): Promise<boolean> {
    return !this.replicas || since === null || this.replicas.confirm(since);
  }

  protected async discover(
    task: CrawlTask,
    run: Pick<RunInfo, 'run' | 'bucketBits'>,
    links: readonly FrontierLink[],
    finish: { jobId: string; finish: PageFinish } | null,
    force: string | null,
  ): Promise<EnqueueOutcome[]> {
    const parts = this.partitions();
    const outcomes: EnqueueOutcome[] = new Array<EnqueueOutcome>(links.length);
    // Links by partition, in page order; the finishing page's own partition goes last so that the page is finished
    // only once every link is queued.
    const groups = parts.map(() => [] as number[]);
    for (let i = 0; i < links.length; i++)
      groups[partitionOfUrl(this.layout, requestKey(links[i]!.url, links[i]!.request))]!.push(i);
    const own = finish ? this.partitionOfJob(finish.jobId).index : -1;
    const order = parts.map((_, i) => i).filter((i) => i !== own && groups[i]!.length > 0);
    if (own >= 0) order.push(own);
    // With several partitions, a page limit is counted in one place (reserve.lua), not by each partition.
    const maxPages = task.scope.maxPages ?? 0;
    const reserve = parts.length > 1 && maxPages > 0 && force === null;
    const target = Math.ceil((await this.windowTarget()) / parts.length);
    for (const pi of order) {
      const p = parts[pi]!;
      const idx = groups[pi]!;
      // In chunks: a page with 100,000 links must not become one call with 400,000 arguments (past the JS stack)
      // nor one multi-megabyte Redis command. Dedup and the page limit are per URL, so chunks compose.
      for (let c = 0; c < idx.length || (c === 0 && pi === own); c += DISCOVER_CHUNK) {
        const part = idx.slice(c, c + DISCOVER_CHUNK);
        const chunk = part.map((i) => links[i]!);
        const last = c + DISCOVER_CHUNK >= idx.length;
        const granted =
          reserve && chunk.length > 0
            ? await this.redis.csReserve(this.keys.stats(run.run), maxPages, chunk.length)
            : 0;
        // The window a finishing page's writes must survive: a worker dying before the last of its calls.
        if (finish && last && pi === order[order.length - 1]) failpoint('before-last-call', finish.finish.entry[1]);
        const { keys, args } = discoverCall(task, run, chunk, target, last && pi === own ? finish : null, {
          force,
          leaseMs: this.leaseMs,
          keys: p.keys,
          counted: parts.length > 1,
          ...(reserve ? { limit: `budget:${granted}` } : {}),
        });
        const reply = await this.redis.csDiscover(keys.length, ...keys, ...args);
        let used = 0;
        for (let j = 0; j < chunk.length; j++) {
          const o: EnqueueOutcome = reply[j] === 1 ? 'enqueued' : reply[j] === 2 ? 'limit' : 'duplicate';
          if (o === 'enqueued') used++;
          outcomes[part[j]!] = o;
        }
        if (reserve && granted > used) await this.redis.hincrby(this.keys.stats(run.run), 'enqueued', used - granted);
        await this.addFill(task, p, reply, chunk.length);
      }
    }
    return outcomes;
  }

  /**
   * A fetched page's bookkeeping, atomically (lua/pageDone.lua): its entry appended to the items stream, its
   * counters added to the run's stats, its host counted, its job marked done and its page out of the window, which is
   * filled again. Through Sentinel, it returns once a replica has it (see durably).
   */
  async completePage(task: CrawlTask, run: string, jobId: string, finish: PageFinish): Promise<void> {
    await this.durably(async () => {
      const p = this.partitionOfJob(jobId);
      const reply = await this.redis.csPageDone(
        p.keys.stats(run),
        p.keys.items,
        p.keys.hosts(run),
        p.keys.frontier.meta,
        ...this.frontierArgs(task, p, await this.partTarget(), true),
        jobId,
        ...finishArgs(finish),
      );
      await this.addFill(task, p, reply, 0);
    });
  }

  /** A job's page ends without pageDone (skipped, failed for good): out of the window, which is filled again. */
  async settle(task: CrawlTask, jobId: string): Promise<void> {
    const p = this.partitionOfJob(jobId);
    const reply = await this.redis.csSettle(
      p.keys.frontier.meta,
      ...this.frontierArgs(task, p, await this.partTarget(), true),
      jobId,
    );
    await this.addFill(task, p, reply, 0);
  }

  /**
   * Fills a partition's window from its frontier (lua/fill.lua); with `reconcile`, settles what ended without
   * settling first.
   */
  async fill(task: CrawlTask, opts: { reconcile?: boolean; partition?: number } = {}): Promise<FillResult> {
    const p = this.partitions()[opts.partition ?? 0]!;
    const reply = await this.redis.csFill(
      p.keys.frontier.meta,
      ...this.frontierArgs(task, p, await this.partTarget()),
      opts.reconcile ? '1' : '0',
    );
    const added = await this.addFill(task, p, reply, 0);
    return { added, next: Number(reply[1] ?? -1) };
  }

  /**
   * Whether the page of a job that starts again has already finished: its worker died after pageDone and before
   * BullMQ heard (the job's hash is marked), or, for a job added again after its lease ran out, its page is no
   * longer in the window. Such a job must not fetch its page a second time.
   */
  async isSettled(job: { id?: string; data: PageJobData }): Promise<boolean> {
    const id = String(job.id);
    const p = this.partitionOfJob(id);
    const pageId = pageIdOfJob(job.data.run, id);
    const [[, done], [, inWindow]] = (await this.redis
      .multi()
      .hget(`${p.keys.bull.job}${id}`, 'csd')
      .hexists(p.keys.frontier.transit, pageId)
      .exec()) as [[null, string | null], [null, number]];
    return done === '1' || (job.data.recovered === true && inWindow === 0);
  }

  /** A partition's share of the window. */
  private async partTarget(): Promise<number> {
    return Math.ceil((await this.windowTarget()) / this.layout.tags.length);
  }

  private frontierArgs(task: CrawlTask, p: Partition, target: number, batched = false): (string | number)[] {
    return frontierArgs(task, target, this.leaseMs, p.keys, {
      batch: batched ? fillBatch(target) : 1,
      counted: this.layout.tags.length > 1,
    });
  }

  /** Adds the pages a script's reply hands to partition `p`'s window (its fill at `at`) as BullMQ jobs; how many. */
  private async addFill(task: CrawlTask, p: Partition, reply: FillReply, at: number): Promise<number> {
    const { run, pages } = parseFill(reply, at);
    if (pages.length === 0 || run === '') return 0;
    const usesPriority = taskUsesPriority(task);
    await p.queue.addBulk(
      pages.map((w) => {
        const page = decodePage(w.host, w.record);
        const data: PageJobData = {
          url: page.url,
          rule: page.rule,
          depth: page.depth,
          run,
          ...(page.sitemap !== undefined ? { sitemap: page.sitemap } : {}),
          ...(page.lastmod !== undefined ? { lastmod: page.lastmod } : {}),
          ...(page.request !== undefined ? { request: page.request } : {}),
          ...(page.series !== undefined ? { series: page.series } : {}),
          ...(w.kind === 'r' ? { recovered: true as const } : {}),
        };
        return {
          name: page.sitemap !== undefined ? SITEMAP_JOB : page.rule,
          data,
          opts: jobOptions(task, pageJobId(run, w.id), usesPriority ? Number(w.band) : null),
        };
      }),
    );
    return pages.length;
  }
}
