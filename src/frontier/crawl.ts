import { Queue, type JobsOptions } from 'bullmq';
import type { Redis } from '../redis/connect';
import { randomBytes } from 'node:crypto';
import type { CrawlTask } from '../core/task/model';
import { decideLink } from '../core/url/scope';
import { routeRule } from '../core/pipeline/page';
import { buildRequest, requestKey, type JobRequest, type SeriesRef } from '../core/request/build';
import { bucketBitsFor, seenSlot } from './dedup';
import { failpoint } from './failpoint';
import { hostTallyField, partitionKeys, taskKeys, TASKS_KEY, type FrontierKeys, type PartitionKeys } from './keys';
import { LAYOUT_FIELD, layoutFor, layoutFromMeta, layoutToMeta, partitionOfJob, partitionOfUrl, singleLayout, type TaskLayout } from './layout';
import { scanKeys } from '../redis/nodes';
import { replicaWait, type ReplicaWait } from '../redis/replicas';
import { decodePage, encodePage, forceStamp } from './record';
import { withScripts, type CrawlScripts, type FillReply } from './scripts';
import { fleetWindow, WINDOW_LEASE_MS, WINDOW_PER_REQUEST, type FillResult, type WindowTarget } from './window';

// The producer side of a crawl and its control plane: starting and resuming runs, enqueueing discovered URLs
// exactly once across all workers, and deciding when a run has drained. Workers and UIs share this class.

export interface PageJobData {
  readonly url: string;
  readonly rule: string;
  /** Hops from a start URL; for a sitemap, how deep in sitemap indexes it is (0: named by the task). */
  readonly depth: number;
  readonly run: string;
  /** Set on a sitemap's job: the index of the task's `sitemaps` entry it belongs to. */
  readonly sitemap?: number;
  /** The page's <lastmod> in the sitemap that listed it, ms since the epoch. */
  readonly lastmod?: number;
  /** Its request when it is not a plain GET: the method and the body, its variables as names (never values). */
  readonly request?: JobRequest;
  /** The page is one of a series (`{page}`): where its template is, its page number and values. */
  readonly series?: SeriesRef;
  /**
   * Set on a job added again after its lease ran out (lua/frontier.lua fRecover): its first adder may have added
   * it, and it may have finished and been removed since, so it checks that its page is still in the window first.
   */
  readonly recovered?: true;
  /**
   * Set when the page failed for good (worker/processor.ts): its failure group as the run's counters have it
   * (`failed:<group>`), the HTTP status when there was one, and the worker that gave up, for `crawl-studio failures`
   * and the dashboard (observe/failures.ts); the message is the job's failedReason.
   */
  readonly failure?: PageFailure;
}

export interface PageFailure {
  readonly group: string;
  readonly status: number | null;
  readonly worker: string;
}

/** The BullMQ job name of a sitemap's job (a page's job is named after its rule). */
export const SITEMAP_JOB = 'sitemap';

export interface PageJobResult {
  readonly outcome: 'done' | 'skipped' | 'non-html';
  readonly status: number | null;
  readonly items: number;
  readonly links: number;
  readonly reason?: string;
}

export interface RunInfo {
  readonly run: string;
  readonly state: 'starting' | 'running' | 'finished' | 'stopped';
  readonly startedAt: number;
  /** When it finished, or was stopped (state 'stopped': Stop Crawl ended it; the next start begins a new run). */
  readonly finishedAt: number | null;
  /**
   * Time it spent not crawling, already over: paused (Pause Queue) or interrupted (Ctrl-C) until resumed. Optional
   * (absent: none) because a worker builds a RunInfo of its job's run that knows only its id (worker/processor.ts).
   */
  readonly pausedMs?: number;
  /** Since when it is paused or interrupted, while it is (figures.ts runElapsedMs counts that time out). */
  readonly idleSince?: number | null;
  readonly bucketBits: number;
  readonly file: string | null;
}

export interface CrawlStats {
  readonly enqueued: number;
  readonly done: number;
  readonly failed: number;
  readonly items: number;
  readonly problems: number;
  readonly bytes: number;
  readonly duplicates: number;
  readonly nonHtml: number;
  /** Sitemaps read (counted in `done` too, as fetched pages). */
  readonly sitemaps: number;
  /** Pages the site answered 304 Not Modified (conditional re-crawl; counted in `done` too). */
  readonly unchanged: number;
  /** Items of those pages, kept in the store from their last full fetch (not in `items`). */
  readonly unchangedItems: number;
  /** "robots", "limit", "depth"… -> count */
  readonly skipped: Readonly<Record<string, number>>;
  /** Failure groups: "http-404", "timeout"… -> count */
  readonly failures: Readonly<Record<string, number>>;
  /** Links dropped on pages, by reason. */
  readonly dropped: Readonly<Record<string, number>>;
  /**
   * Per page rule: links found on its pages (kept and dropped, on-page repeats excepted) and the drops by reason,
   * so a summary can say which rule lost most of its links. Absent in runs counted before these counters existed.
   */
  readonly byRule?: Readonly<Record<string, { readonly links: number; readonly dropped: Readonly<Record<string, number>> }>>;
}

export interface JobCounts {
  /** Pages waiting in the compact frontier, not BullMQ jobs yet (lua/frontier.lua). */
  readonly frontier: number;
  readonly waiting: number;
  readonly active: number;
  readonly delayed: number;
  readonly prioritized: number;
  readonly completed: number;
  readonly failed: number;
}

export interface CrawlStatus {
  readonly task: string;
  readonly run: RunInfo | null;
  readonly stats: CrawlStats | null;
  readonly counts: JobCounts;
  readonly isPaused: boolean;
}

/** The job scheduler of a recurring task, and the name of the jobs it creates. */
export const SCHEDULER_ID = 'schedule';
export const SCHEDULED_RUN_JOB = '__scheduled-run__';

/** Links without a priority get this one when any rule of the task sets a priority (1 runs first). */
export const DEFAULT_PRIORITY = 1000;
/** Completed jobs kept for explorers; older ones are removed (their pages are already counted and stored). */
export const KEEP_COMPLETED = 1000;
export const KEEP_FAILED = 10_000;
/** How many times a page's finish is written before it is left as it is (a master failing over again and again). */
const DURABLE_ATTEMPTS = 3;
/** Links per discover-script call. */
const DISCOVER_CHUNK = 1000;

/** What finishing a page writes (see CrawlQueue.completePage). */
export interface PageFinish {
  /** The store's stream field and value (store/buffer.ts pageEntry). */
  readonly entry: readonly [field: string, value: string];
  /** Added to the run's stats. */
  readonly counters: Readonly<Record<string, number>>;
  /** The host counted as done in the run's per-host tally; null for none. */
  readonly host: string | null;
}

/** A finish as the scripts take it: entry field and value, host tally field ('' for none), counter pairs. */
function finishArgs(finish: PageFinish): (string | number)[] {
  const args: (string | number)[] = [finish.entry[0], finish.entry[1], finish.host === null ? '' : hostTallyField(finish.host, 'done')];
  for (const [field, n] of Object.entries(finish.counters)) if (n !== 0) args.push(field, n);
  return args;
}

/** A link as the frontier queues it. */
export interface FrontierLink {
  readonly url: string;
  readonly host: string;
  readonly rule: string;
  readonly depth: number;
  readonly priority: number | null;
  readonly sitemap?: number;
  readonly lastmod?: number;
  /** Its request when it is not a plain GET: deduplicated by method and body too (requestKey). */
  readonly request?: JobRequest;
  /** A page of a series (`{page}`). */
  readonly series?: SeriesRef;
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
  return [k.frontier.prefix, k.bull.job, task.politeness.perHost.delayMs, hostCap(task), leaseMs, target, opts.batch ?? 1, opts.counted ? '1' : '0'];
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
  const args: (string | number)[] = [...frontierArgs(task, target, opts.leaseMs, k, { batch: fillBatch(target), counted: opts.counted }), limit, run.run, links.length, force === null ? '' : 'force'];
  for (const l of links) {
    // A page's deduplication key: a GET's canonical URL, or a request's method, URL and body (requestKey).
    const slot = seenSlot(requestKey(l.url, l.request), run.bucketBits);
    keys.push(k.seenBucket(run.run, slot.bucket));
    const { host, record } = encodePage(
      { url: l.url, rule: l.rule, depth: l.depth, sitemap: l.sitemap, lastmod: l.lastmod, request: l.request, series: l.series, ...(force !== null ? { force } : {}) },
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
    pages.push({ kind: reply[i] === 'r' ? 'r' : 'n', id: String(reply[i + 1]), band: String(reply[i + 2]), host: String(reply[i + 3]), record: String(reply[i + 4]) });
  }
  return { run: String(reply[at] ?? ''), next: Number(reply[at + 1] ?? -1), pages };
}

export type EnqueueOutcome = 'enqueued' | 'duplicate' | 'limit';

/** One partition of a task (frontier/layout.ts): its keys and the BullMQ queue of its window's jobs. */
export interface Partition {
  readonly index: number;
  readonly keys: PartitionKeys;
  readonly queue: Queue<PageJobData, PageJobResult>;
}

export class CrawlQueue {
  /** The queue of the task's first partition: its only one on a single node, and the job scheduler's. */
  readonly queue: Queue<PageJobData, PageJobResult>;
  readonly keys: ReturnType<typeof taskKeys>;
  private readonly redis: Redis & CrawlScripts;
  /** Through Sentinel: waits until a replica has a page's finish (redis/replicas.ts); null elsewhere. */
  private readonly replicas: ReplicaWait | null;
  /** How many pages the window should hold, over every partition (see frontier/window.ts). */
  readonly windowTarget: WindowTarget;
  private readonly leaseMs: number;
  private layout: TaskLayout;
  private readonly byTag = new Map<string, Partition>();

  constructor(
    redis: Redis,
    readonly taskName: string,
    /** BullMQ's Queue connection; the same one by default (see worker/runtime.ts for why a worker splits them). */
    private readonly bullConnection: Redis = redis,
    opts: { windowTarget?: WindowTarget; leaseMs?: number; layout?: TaskLayout } = {},
  ) {
    this.redis = withScripts(redis);
    this.replicas = replicaWait(redis);
    this.keys = taskKeys(taskName);
    this.windowTarget = opts.windowTarget ?? fleetWindow(redis, taskName);
    this.leaseMs = opts.leaseMs ?? WINDOW_LEASE_MS;
    this.layout = opts.layout ?? singleLayout(taskName);
    this.queue = this.partitionOfTag(taskName, 0).queue;
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
    return this.layout.tags.map((tag, i) => this.partitionOfTag(tag, i));
  }

  /** The partition a page's job belongs to, by its job id. */
  partitionOfJob(jobId: string): Partition {
    return this.partitions()[partitionOfJob(this.layout, jobId)]!;
  }

  private partitionOfTag(tag: string, index: number): Partition {
    let p = this.byTag.get(tag);
    if (!p) {
      const queue = new Queue<PageJobData, PageJobResult>(this.taskName, { connection: this.bullConnection, prefix: partitionKeys(this.taskName, tag).bullPrefix });
      // Queue errors (e.g. a lost connection) are surfaced by the callers' own commands; don't crash on them.
      queue.on('error', () => undefined);
      p = { index, keys: partitionKeys(this.taskName, tag), queue };
      this.byTag.set(tag, p);
    }
    return p;
  }

  async close(): Promise<void> {
    await Promise.all([...this.byTag.values()].map((p) => p.queue.close()));
  }

  async currentRun(): Promise<RunInfo | null> {
    const m = await this.redis.hgetall(this.keys.meta);
    if (!m.run) return null;
    return {
      run: m.run,
      state: (m.state as RunInfo['state']) ?? 'running',
      startedAt: Number(m.startedAt ?? 0),
      finishedAt: m.finishedAt ? Number(m.finishedAt) : null,
      pausedMs: Number(m.pausedMs ?? 0),
      idleSince: m.idleSince ? Number(m.idleSince) : null,
      bucketBits: Number(m.bucketBits ?? 12),
      file: m.file ?? null,
    };
  }

  /**
   * Starts a run, or resumes the unfinished one (a crawl survives restarts of the CLI, the editor and Redis
   * with persistence). With `fresh`, any previous run's jobs and dedup state are dropped first. A run that
   * finished or was stopped (stopRun: the editor's Stop Crawl) is not resumed: a new run begins from the start URLs.
   */
  async startRun(task: CrawlTask, opts: { fresh?: boolean } = {}): Promise<{ run: RunInfo; resumed: boolean; enqueued: number }> {
    await this.loadLayout();
    const previous = await this.currentRun();
    if (previous && !opts.fresh && (previous.state === 'running' || previous.state === 'starting')) {
      // A run of a version before partitions has no frontier run marker: give it one, or discover refuses its links.
      for (const p of this.partitions()) await this.redis.hsetnx(p.keys.frontier.meta, 'run', previous.run);
      if (previous.state === 'starting') await this.enqueueStart(task, previous);
      await this.redis.hset(this.keys.meta, 'state', 'running');
      await this.resume();
      await this.syncSchedule(task);
      return { run: { ...(await this.currentRun())!, state: 'running' }, resumed: true, enqueued: 0 };
    }
    if (previous) await this.forgetRun(previous.run);
    for (const p of this.partitions()) await p.queue.obliterate({ force: true });
    // A stopped run left its queues paused (so remote workers stopped too): the new run's pages must flow.
    await this.setQueuesPaused(false);
    await this.clearFrontier();
    const started = await this.beginRun(task);
    await this.syncSchedule(task);
    return { ...started, resumed: false };
  }

  /**
   * The next occurrence of a recurring crawl (run by a worker when the job scheduler fires). The queue is kept,
   * scheduler included; the previous run's jobs and dedup sets go, so its pages are fetched again.
   */
  async startScheduledRun(task: CrawlTask): Promise<{ run: RunInfo; enqueued: number } | null> {
    const previous = await this.currentRun();
    if (previous && (previous.state === 'running' || previous.state === 'starting')) return null;
    if (previous) await this.forgetRun(previous.run);
    for (const p of this.partitions()) {
      await p.queue.clean(0, 0, 'completed');
      await p.queue.clean(0, 0, 'failed');
    }
    await this.clearFrontier();
    return this.beginRun(task);
  }

  private async beginRun(task: CrawlTask): Promise<{ run: RunInfo; enqueued: number }> {
    const run: RunInfo = {
      run: `${Date.now().toString(36)}${randomBytes(2).toString('hex')}`,
      state: 'starting',
      startedAt: Date.now(),
      finishedAt: null,
      pausedMs: 0,
      idleSince: null,
      bucketBits: bucketBitsFor(task.scope.maxPages),
      file: task.file,
    };
    await this.redis
      .multi()
      .del(this.keys.meta)
      .hset(this.keys.meta, { run: run.run, state: 'starting', startedAt: run.startedAt, bucketBits: run.bucketBits, file: task.file, [LAYOUT_FIELD]: layoutToMeta(this.layout) })
      .exec();
    // Each partition's frontier names the run it belongs to: discover refuses links of any other (lua/discover.lua).
    for (const p of this.partitions()) await this.redis.hset(p.keys.frontier.meta, 'run', run.run);
    // Not in the MULTI: the list of tasks is in another hash slot than the task's keys (CROSSSLOT on a cluster).
    await this.redis.sadd(TASKS_KEY, task.name);
    const enqueued = await this.enqueueStart(task, run);
    await this.redis.hset(this.keys.meta, 'state', 'running');
    await this.event({ type: 'run-started', run: run.run });
    return { run: { ...run, state: 'running' }, enqueued };
  }

  /** Creates, updates or removes the task's job scheduler to match its `schedule`. */
  async syncSchedule(task: CrawlTask): Promise<void> {
    if (!task.schedule) {
      await this.queue.removeJobScheduler(SCHEDULER_ID);
      return;
    }
    const { cron, everyMs, timezone } = task.schedule;
    await this.queue.upsertJobScheduler(
      SCHEDULER_ID,
      cron ? { pattern: cron, tz: timezone } : { every: everyMs! },
      { name: SCHEDULED_RUN_JOB, data: { url: '', rule: '', depth: 0, run: '' }, opts: { removeOnComplete: true, removeOnFail: 100 } },
    );
  }

  /** When the next scheduled run starts (ms since epoch), or null. */
  async nextScheduledRun(): Promise<number | null> {
    const s = await this.queue.getJobScheduler(SCHEDULER_ID);
    return s?.next ?? null;
  }

  private async enqueueStart(task: CrawlTask, run: RunInfo): Promise<number> {
    const links: FrontierLink[] = task.start.map((s) => ({ url: s.url, host: new URL(s.url).host, rule: s.rule, depth: 0, priority: s.priority }));
    // A sitemap is a job of its own: fetched under robots.txt and politeness like a page, retried like one, and
    // deduplicated with the pages (a sitemap named twice, by the task and by robots.txt, is read once).
    task.start.forEach((s, i) => {
      if (!s.request) return;
      // A start entry that sends a body or counts pages: its first request, built as a follow's would be.
      const built = buildRequest(s.request, {}, undefined, { start: i });
      if (!built.ok) return;
      const { request, series } = built.built;
      links[i] = { ...links[i]!, ...(request ? { request } : {}), ...(series ? { series } : {}) };
    });
    task.sitemaps.forEach((s, i) => links.push({ url: s.url, host: new URL(s.url).host, rule: s.rule ?? '', depth: 0, priority: s.priority, sitemap: i }));
    const res = await this.enqueueLinks(task, run, links);
    return res.filter((r) => r === 'enqueued').length;
  }

  /**
   * Queues links in the frontier, each at most once per run whichever worker finds it (marking a URL seen and
   * queueing it are one atomic call), and fills the window.
   */
  async enqueueLinks(task: CrawlTask, run: Pick<RunInfo, 'run' | 'bucketBits'>, links: readonly FrontierLink[]): Promise<EnqueueOutcome[]> {
    return this.discover(task, run, links, null, null);
  }

  /**
   * A fetched page's links queued and the page finished (its record to the store's stream, its counters, its job
   * marked done and its page out of the window), atomically in one call, which also fills the window. A page with
   * more links than one call takes, or links in other partitions, is finished with its partition's last call; a
   * worker dying before that leaves the job to a retry, which finds the links of the earlier calls already seen (and
   * queued) and finishes the page once. Through Sentinel, it returns once a replica has it all (see durably).
   */
  async finishPage(task: CrawlTask, run: Pick<RunInfo, 'run' | 'bucketBits'>, jobId: string, links: readonly FrontierLink[], finish: PageFinish): Promise<EnqueueOutcome[]> {
    if (links.length === 0) {
      await this.completePage(task, run.run, jobId, finish);
      return [];
    }
    let first: EnqueueOutcome[] | null = null;
    const outcomes = await this.durably(() => this.discover(task, run, links, { jobId, finish }, null).then((o) => (first ??= o)));
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

  private async discover(
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
    for (let i = 0; i < links.length; i++) groups[partitionOfUrl(this.layout, requestKey(links[i]!.url, links[i]!.request))]!.push(i);
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
        const granted = reserve && chunk.length > 0 ? await this.redis.csReserve(this.keys.stats(run.run), maxPages, chunk.length) : 0;
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
    const reply = await this.redis.csSettle(p.keys.frontier.meta, ...this.frontierArgs(task, p, await this.partTarget(), true), jobId);
    await this.addFill(task, p, reply, 0);
  }

  /**
   * Fills a partition's window from its frontier (lua/fill.lua); with `reconcile`, settles what ended without
   * settling first.
   */
  async fill(task: CrawlTask, opts: { reconcile?: boolean; partition?: number } = {}): Promise<FillResult> {
    const p = this.partitions()[opts.partition ?? 0]!;
    const reply = await this.redis.csFill(p.keys.frontier.meta, ...this.frontierArgs(task, p, await this.partTarget()), opts.reconcile ? '1' : '0');
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
    const pageId = id.startsWith(`${job.data.run}.`) ? id.slice(job.data.run.length + 1) : '';
    const [[, done], [, inWindow]] = (await this.redis.multi().hget(`${p.keys.bull.job}${id}`, 'csd').hexists(p.keys.frontier.transit, pageId).exec()) as [[null, string | null], [null, number]];
    return done === '1' || (job.data.recovered === true && inWindow === 0);
  }

  /** A partition's share of the window. */
  private async partTarget(): Promise<number> {
    return Math.ceil((await this.windowTarget()) / this.layout.tags.length);
  }

  private frontierArgs(task: CrawlTask, p: Partition, target: number, batched = false): (string | number)[] {
    return frontierArgs(task, target, this.leaseMs, p.keys, { batch: batched ? fillBatch(target) : 1, counted: this.layout.tags.length > 1 });
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
        return { name: page.sitemap !== undefined ? SITEMAP_JOB : page.rule, data, opts: this.jobOptions(task, `${run}.${w.id}`, usesPriority ? Number(w.band) : null) };
      }),
    );
    return pages.length;
  }

  /** Empties the frontier and the window's records (a run replaced: its BullMQ jobs go with obliterate or clean). */
  async clearFrontier(): Promise<void> {
    for (const p of this.partitions()) {
      for await (const batch of scanKeys(this.redis, p.keys.frontier.pattern)) await this.redis.unlink(...batch);
    }
  }

  /** Pages waiting in the frontier. */
  async frontierCount(): Promise<number> {
    const ns = await Promise.all(this.partitions().map((p) => this.redis.hget(p.keys.frontier.meta, 'n')));
    return ns.reduce((a, n) => a + Number(n ?? 0), 0);
  }

  jobOptions(task: CrawlTask, jobId: string, priority: number | null): JobsOptions {
    return {
      // Not an integer and no ':' (BullMQ rules); one id per URL per run ("<run>.<fingerprint>").
      jobId,
      attempts: task.request.retries.attempts,
      backoff: { type: 'crawl', delay: task.request.retries.delayMs },
      removeOnComplete: { count: KEEP_COMPLETED },
      removeOnFail: { count: KEEP_FAILED },
      ...(priority !== null ? { priority } : {}),
    };
  }

  /**
   * Enqueues URLs a person asked for (CLI, "Enqueue URL"). They are canonicalised and routed like links; with
   * `force` an already-seen URL is fetched again.
   */
  async enqueueUrls(
    task: CrawlTask,
    urls: readonly string[],
    opts: { force?: boolean; rule?: string; scoped?: boolean } = {},
  ): Promise<{ url: string; outcome: EnqueueOutcome | 'invalid' | 'dropped'; reason?: string }[]> {
    await this.loadLayout();
    const run = await this.currentRun();
    if (!run) throw new Error(`task '${task.name}' has never run on this Redis; start it first (crawl-studio run ${task.file})`);
    // A URL enqueued after the crawl drained reopens the run: workers fetch it, the next session finalizes it.
    const reopen = async () => {
      if (run.state === 'finished' || run.state === 'stopped') {
        await this.redis.multi().hset(this.keys.meta, 'state', 'running').unlink(this.keys.finalized(run.run)).exec();
      }
    };
    const out: { url: string; outcome: EnqueueOutcome | 'invalid' | 'dropped'; reason?: string }[] = [];
    const links: FrontierLink[] = [];
    const inCall = new Set<string>();
    for (const raw of urls) {
      const d = decideLink(task, raw, raw, 0);
      // A person may enqueue any http(s) URL; only malformed ones are refused.
      if (!d.ok && (d.reason === 'invalid' || d.reason === 'scheme' || d.reason === 'credentials' || d.reason === 'too-long')) {
        out.push({ url: raw, outcome: 'invalid', reason: d.reason });
        continue;
      }
      // Bulk lists (`enqueue --file`) are checked like links found on a page: a million-line file is not read
      // line by line by a person, so what scope or the rules would never crawl is counted as dropped, not queued.
      if (opts.scoped && !d.ok) {
        out.push({ url: raw, outcome: 'dropped', reason: d.reason });
        continue;
      }
      const url = d.url;
      // One discover call marks a URL seen once (a page's links come deduplicated): a repeat within the call is
      // already seen, not a second enqueue.
      if (inCall.has(url)) {
        out.push({ url, outcome: 'duplicate' });
        continue;
      }
      inCall.add(url);
      const routed = opts.rule ?? routeRule(task, url, null)?.name;
      if (opts.scoped && routed === undefined) {
        out.push({ url, outcome: 'dropped', reason: 'no-rule' });
        continue;
      }
      const rule = routed ?? task.rules[0]!.name;
      links.push({ url, host: new URL(url).host, rule, depth: 0, priority: null });
    }
    if (opts.force) {
      // Queued whether seen or not, each with a job id of its own (its first fetch's job may still be kept).
      if (links.length > 0) await reopen();
      await this.discover(task, run, links, null, forceStamp());
      for (const l of links) out.push({ url: l.url, outcome: 'enqueued' });
      return out;
    }
    const codes = await this.enqueueLinks(task, run, links);
    if (codes.includes('enqueued')) await reopen();
    links.forEach((l, i) => out.push({ url: l.url, outcome: codes[i]! }));
    return out;
  }

  async stats(run: string): Promise<CrawlStats> {
    const hashes = await Promise.all(this.partitions().map((p) => this.redis.hgetall(p.keys.stats(run))));
    return parseStats(sumHashes(hashes));
  }

  // A task's job counts and status are read by observe/taskStatus.ts (readJobCounts, readTaskStatus), the one place
  // every view and the session read them.

  /**
   * 'won': this caller must finalize the run; 'pending': work remains; 'done': someone already finalized it. One
   * atomic script for a task in one partition (lua/drain.lua). Spread over several, each partition is checked in its
   * own slot between two readings of every partition's change counter (lua/drainPart.lua): unchanged counters mean
   * no page was queued into a partition after it was found empty, so all were empty at once.
   */
  async tryFinalize(task: CrawlTask, run: string, holdMs = 15_000): Promise<'won' | 'pending' | 'done'> {
    const parts = this.partitions();
    if (parts.length === 1) {
      const b = this.keys.bull;
      const r = await this.redis.csDrain(this.keys.meta, this.keys.finalized(run), b.wait, b.active, b.paused, b.delayed, b.prioritized, b.waitingChildren, run, holdMs, ...frontierArgs(task, 0));
      return r === 1 ? 'won' : r === -1 ? 'done' : 'pending';
    }
    const [meta, flagTtl] = await Promise.all([this.redis.hmget(this.keys.meta, 'run', 'state'), this.redis.pttl(this.keys.finalized(run))]);
    if (meta[0] !== run || meta[1] !== 'running') return 'pending';
    if (flagTtl > 0) return 'done';
    const versions = () => Promise.all(parts.map((p) => this.redis.hget(p.keys.frontier.meta, 'v')));
    const before = await versions();
    for (const p of parts) {
      const b = p.keys.bull;
      const [pending] = await this.redis.csDrainPart(b.wait, b.active, b.paused, b.delayed, b.prioritized, b.waitingChildren, run, ...frontierArgs(task, 0, this.leaseMs, p.keys, { counted: true }));
      if (pending > 0) return 'pending';
    }
    const after = await versions();
    if (after.some((v, i) => v !== before[i])) return 'pending';
    const r = await this.redis.csDrainFinal(this.keys.meta, this.keys.finalized(run), run, holdMs);
    return r === 1 ? 'won' : r === -1 ? 'done' : 'pending';
  }

  async markFinished(run: string, summary: Record<string, unknown>): Promise<void> {
    await this.redis.hset(this.keys.meta, { state: 'finished', finishedAt: Date.now() });
    await this.event({ type: 'run-finished', run, ...summary });
  }

  /**
   * Pauses the run (Pause Queue, the monitor's pause): no worker anywhere takes its pages; its state is kept for
   * resume(). The time until then is not counted in the run's duration (figures.ts runActiveMs).
   */
  async pause(): Promise<void> {
    await this.setQueuesPaused(true);
    await this.markIdle();
  }

  /** Resumes a paused or interrupted run: its pages flow again and its idle time is added to `pausedMs`. */
  async resume(): Promise<void> {
    await this.setQueuesPaused(false);
    const since = await this.redis.hget(this.keys.meta, 'idleSince');
    if (since) await this.redis.multi().hincrby(this.keys.meta, 'pausedMs', Math.max(0, Date.now() - Number(since))).hdel(this.keys.meta, 'idleSince').exec();
  }

  /**
   * Marks the run idle from now (paused, or its driver interrupted: Ctrl-C, `crawl.stop()`), unless it already is:
   * the time until it resumes is left out of its duration.
   */
  async markIdle(): Promise<void> {
    const state = await this.redis.hget(this.keys.meta, 'state');
    if (state === 'running' || state === 'starting') await this.redis.hsetnx(this.keys.meta, 'idleSince', Date.now());
  }

  /**
   * Stop: ends the run `run` for good (the editor's Stop Crawl). Its queues are paused, so no worker anywhere takes
   * another of its pages; it is never finalized as finished (drain.lua only drains a running run), and the next
   * startRun begins a new run from the start URLs. False when the run is not the current one or is already over
   * (it finished first: then it is reported as finished, not stopped).
   */
  async stopRun(run: string): Promise<boolean> {
    const [current, state] = await this.redis.hmget(this.keys.meta, 'run', 'state');
    if (current !== run || (state !== 'running' && state !== 'starting')) return false;
    await this.setQueuesPaused(true);
    await this.redis.hset(this.keys.meta, { state: 'stopped', finishedAt: Date.now() });
    await this.event({ type: 'run-stopped', run });
    return true;
  }

  private async setQueuesPaused(paused: boolean): Promise<void> {
    for (const p of this.partitions()) await (paused ? p.queue.pause() : p.queue.resume());
  }

  async event(e: Record<string, unknown>): Promise<void> {
    await this.redis.xadd(this.keys.events, 'MAXLEN', '~', '1000', '*', 'e', JSON.stringify({ at: Date.now(), ...e }));
  }

  /** Drops a previous run's dedup sets (they are the bulk of a finished crawl's Redis memory). */
  private async forgetRun(run: string): Promise<void> {
    for (const p of this.partitions()) {
      for await (const batch of scanKeys(this.redis, p.keys.seenPattern(run))) await this.redis.unlink(...batch);
    }
    await this.redis.unlink(this.keys.finalized(run));
  }
}

/** Hosts whose waiting pages one lua/dropWaiting.lua call drops. */
const DROP_HOSTS = 500;

/**
 * Drops the pages waiting in one partition's frontier `f` (the Queue Explorer's Drain), a few hundred hosts per atomic
 * call, so a crawl going on meanwhile keeps its counters true. Its run marker and its window stay: the window's pages
 * settle as their jobs end, and the pages those jobs discover are queued as usual. How many pages were dropped.
 */
export async function dropWaiting(redis: Redis, f: FrontierKeys, opts: { counted: boolean }): Promise<number> {
  const scripts = withScripts(redis);
  let dropped = 0;
  for (const band of await redis.zrange(f.bands, 0, -1)) {
    for (;;) {
      const [n, left] = await scripts.csDropWaiting(f.meta, f.prefix, band, DROP_HOSTS, opts.counted ? '1' : '0');
      dropped += n;
      if (left === 0) break;
    }
  }
  return dropped;
}

/** A run's counters over every partition of its task (the layout its meta records), for readers without a queue. */
export async function readRunStats(redis: Redis, task: string, run: string, layout?: TaskLayout): Promise<CrawlStats> {
  const tags = (layout ?? layoutFromMeta(task, await redis.hget(taskKeys(task).meta, LAYOUT_FIELD))).tags;
  return parseStats(sumHashes(await Promise.all(tags.map((tag) => redis.hgetall(partitionKeys(task, tag).stats(run))))));
}

/** Counter hashes added up field by field (a run's stats over its partitions). */
export function sumHashes(hashes: readonly Record<string, string>[]): Record<string, string> {
  if (hashes.length === 1) return hashes[0]!;
  const out: Record<string, number> = {};
  for (const h of hashes) for (const [k, v] of Object.entries(h)) out[k] = (out[k] ?? 0) + Number(v);
  return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, String(v)]));
}

function taskUsesPriority(task: CrawlTask): boolean {
  return task.start.some((s) => s.priority !== null) || task.sitemaps.some((s) => s.priority !== null) || task.rules.some((r) => r.follow.some((f) => f.priority !== null));
}

export function parseStats(h: Record<string, string>): CrawlStats {
  const n = (k: string) => Number(h[k] ?? 0);
  const group = (prefix: string) =>
    Object.fromEntries(
      Object.entries(h)
        .filter(([k]) => k.startsWith(prefix))
        .map(([k, v]) => [k.slice(prefix.length), Number(v)]),
    );
  return {
    enqueued: n('enqueued'),
    done: n('done'),
    failed: n('failed'),
    items: n('items'),
    problems: n('problems'),
    bytes: n('bytes'),
    duplicates: n('duplicates'),
    nonHtml: n('nonhtml'),
    sitemaps: n('sitemaps'),
    unchanged: n('unchanged'),
    unchangedItems: n('unchanged-items'),
    skipped: group('skipped:'),
    failures: group('failed:'),
    dropped: group('dropped:'),
    byRule: byRule(h),
  };
}

function byRule(h: Record<string, string>): Record<string, { links: number; dropped: Record<string, number> }> {
  const out: Record<string, { links: number; dropped: Record<string, number> }> = {};
  const of = (rule: string) => (out[rule] ??= { links: 0, dropped: {} });
  for (const [k, v] of Object.entries(h)) {
    if (k.startsWith('rule-links:')) of(k.slice('rule-links:'.length)).links = Number(v);
    else if (k.startsWith('rule-dropped:')) {
      // The reason is last: rule names may hold ':', reasons never do.
      const rest = k.slice('rule-dropped:'.length);
      const at = rest.lastIndexOf(':');
      of(rest.slice(0, at)).dropped[rest.slice(at + 1)] = Number(v);
    }
  }
  return out;
}
