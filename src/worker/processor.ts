import { DelayedError, type Job } from 'bullmq';
import { setTimeout as delay } from 'node:timers/promises';
import { ruleByName } from '../core/pipeline/page';
import type { RevisitRecord } from '../core/pipeline/revisit';
import type { CrawlTask, PageRule } from '../core/task/model';
import { expandProxyUrl } from '../core/task/secrets';
import type { CrawlQueue } from '../frontier/crawl';
import { countSkipped } from '../frontier/outcomes';
import type { HostGate } from '../frontier/politeness';
import type { RobotsCache } from '../frontier/robots';
import { SCHEDULED_RUN_JOB, type PageJobData, type PageJobResult } from '../frontier/types';
import type { Redis } from '../redis/connect';
import { isRedisFull, REDIS_FULL_MARK } from '../redis/memory';
import { createAccess, type Access, type PageLoad } from './access';
import { inlineAnalyser, type PageAnalyser } from './analysis';
import { HUNG_GRACE_MS, NavigationRefused, type PageRenderer } from './browser/render';
import {
  FetchFailure,
  fetchPage,
  fetchStream,
  type FetchedPage,
  type FetchOptions,
  type StreamedResponse,
} from './fetcher';
import type { FetchSlots, InSlot, PoliteWait } from './fetchSlots';
import type { HostThrottles } from './hostThrottle';
import { failure } from './pageFailure';
import { PageFinisher, runningInfo } from './pageFinish';
import { PageTurns } from './pageTurn';
import { cutBackoff, cutShort, MAX_CUT_SHORT, throughCuts } from '../redis/cuts';
import { CrawlRenderHooks } from './renderHooks';
import { expandHeaders, ruleOptions, sendOptions } from './requests';
import { createRevisits, type Revisits } from './revisits';
import { SentBack, SentBackCounter } from './sentBack';
import { whenSent } from './sendWatch';
import { processSitemap, type SitemapJobDeps } from './sitemapJob';

// One page job: robots.txt, per-host politeness, fetch, extract, discover, hand items to the store buffer,
// count. Every step that talks to Redis is shared state, so any number of workers on any number of machines
// can run this on the same queue. Here the job is routed and its request sent; its turn is pageTurn.ts's, what the
// page becomes pageFinish.ts's, what a failure means to BullMQ pageFailure.ts's.

export interface ProcessorDeps {
  readonly task: CrawlTask;
  readonly crawl: CrawlQueue;
  readonly redis: Redis;
  readonly robots: RobotsCache;
  readonly gate: HostGate;
  readonly log: (level: 'info' | 'warn' | 'error', message: string) => void;
  /** Waits shorter than this are slept in place; longer ones move the job to "delayed" and free the slot. */
  readonly maxInlineWaitMs?: number;
  /**
   * Longest wait for a host's promised start that a job waits out holding its place in the worker; a longer one
   * sets the job aside (BullMQ's delayed set) so the worker takes pages of other hosts meanwhile.
   */
  readonly maxInlineHostWaitMs?: number;
  /** Parses and extracts pages (in a thread in worker processes); default: in this thread. */
  readonly analyser?: PageAnalyser;
  /** The task's requests in flight in this process (see fetchSlots.ts); default: one per job. */
  readonly slots?: FetchSlots;
  /** Renders the pages of rules with `browser` (see browser/render.ts); required when the task has such rules. */
  readonly browser?: PageRenderer;
  /** The task's sessions and proxies (access.ts), when the caller made them (it shares them with robots.txt). */
  readonly access?: Access | null;
  /** The workspace scripts the task's `browser.actions` may run (absent: none may; see browser/actions.ts). */
  readonly scripts?: ReadonlyMap<string, string>;
  /** Per-host back-off of an autoscaled worker (hostThrottle.ts): a job takes its host's turn before the host gate. */
  readonly hostThrottle?: HostThrottles;
}

export function fetchOptions(task: CrawlTask): FetchOptions {
  return {
    timeoutMs: task.request.timeoutMs,
    maxBytes: task.request.maxBytes,
    maxRedirects: task.request.maxRedirects,
    // `${CRAWL_STUDIO_*}` filled in (an unset one is named when a page is sent: requests.ts).
    headers: expandHeaders(task.request.headers, process.env).headers,
    userAgent: task.request.userAgent,
    privateAllowed: task.scope.allowPrivate ? null : task.scope.startHosts,
    // robots.txt and sitemaps go through the first proxy too (pages rotate, in access.ts): a task behind a proxy
    // sends nothing to the site directly. A template that does not expand is reported by createAccess.
    ...(task.proxy ? { proxy: expandProxyUrl(task.proxy.urls[0]!, process.env).url || undefined } : {}),
    ...(task.request.conditional ? { validators: true } : {}),
  };
}

type PageJob = Job<PageJobData, PageJobResult>;
type Run = (job: PageJob, token?: string) => Promise<PageJobResult>;

/** The page job processor of BullMQ's Worker for the task of `deps`. */
export function createProcessor(deps: ProcessorDeps): Run {
  const processor = new PageProcessor(deps);
  return (job, token) => processor.process(job, token);
}

/** A rule's page ready to be sent: its options (variables filled in), robots.txt's Crawl-delay, its revisit record. */
interface PageRequest {
  readonly url: string;
  readonly host: string;
  readonly rule: PageRule;
  /** The rule's and the job's options. */
  readonly sendOpts: FetchOptions;
  /** The same, conditional when the page has a revisit record. */
  readonly opts: FetchOptions;
  readonly crawlDelayMs: number | null;
  readonly known: RevisitRecord | null;
}

/** The request of a job runs in one of the task's fetch slots when the worker has them (see fetchSlots.ts). */
const direct: InSlot = (fetch) => fetch();

class PageProcessor {
  private readonly task: CrawlTask;
  private readonly crawl: CrawlQueue;
  private readonly redis: Redis;
  /** Sessions, logins and proxies (access.ts); null for a task without them, which fetches as it always did. */
  private readonly access: Access | null;
  /** Each rule's headers over the task's (requests.ts); the task's own options for a rule without any. */
  private readonly optionsFor: (rule: PageRule) => FetchOptions | FetchFailure;
  /** Conditional re-crawl (revisits.ts); null unless the task asks for it. */
  private readonly revisits: Revisits | null;
  private readonly turns: PageTurns;
  private readonly finisher: PageFinisher;
  private readonly hooks: CrawlRenderHooks;
  private readonly sentBack = new SentBackCounter();
  private readonly sitemapDeps: SitemapJobDeps;
  private readonly run: Run;

  constructor(private readonly deps: ProcessorDeps) {
    const { task, crawl, redis } = deps;
    this.task = task;
    this.crawl = crawl;
    this.redis = redis;
    const fetchOpts = fetchOptions(task);
    const access = deps.access !== undefined ? deps.access : createAccess(task, redis, deps.log, fetchOpts);
    this.access = access;
    this.optionsFor = ruleOptions(task, fetchOpts);
    this.revisits = createRevisits(task, redis);
    this.turns = new PageTurns({
      task,
      crawl,
      redis,
      robots: deps.robots,
      gate: deps.gate,
      maxInlineWaitMs: deps.maxInlineWaitMs ?? 1_000,
      // Setting a job aside costs two Redis round trips; a wait shorter than that is cheaper to sit out.
      maxInlineHostWaitMs: deps.maxInlineHostWaitMs ?? 25,
      leaseMs: leaseMsOf(task),
    });
    const analyser = deps.analyser ?? inlineAnalyser();
    this.finisher = new PageFinisher({ task, crawl, redis, analyser, revisits: this.revisits, log: deps.log });
    this.hooks = new CrawlRenderHooks({ task, redis, robots: deps.robots, log: deps.log, scripts: deps.scripts });
    this.sitemapDeps = {
      task,
      crawl,
      redis,
      robots: deps.robots,
      log: deps.log,
      fetchOpts,
      // Sitemaps are requested as pages are: in a session, logged in, through the proxies.
      stream: (url, consume) => (access ? access.stream(url, consume) : fetchStream(url, fetchOpts, consume)),
    };
    this.run = this.runner();
  }

  process(job: PageJob, token?: string): Promise<PageJobResult> {
    return this.holdThroughRedisTrouble(job, () => this.run(job, token));
  }

  /** A job in a fetch slot of the task (and its host's turn, when the worker backs off per host), or directly. */
  private runner(): Run {
    const { slots, hostThrottle } = this.deps;
    if (slots && hostThrottle)
      return (job, token) =>
        slots.job((inSlot, politeWait) =>
          this.inHostTurn(job, inSlot, politeWait, (s) => this.processPage(job, token, s, politeWait)),
        );
    if (slots)
      return (job, token) => slots.job((inSlot, politeWait) => this.processPage(job, token, inSlot, politeWait));
    return (job, token) => this.processPage(job, token, direct, delay);
  }

  /**
   * A page whose writes Redis refused for lack of memory (its links' discovery, its finish, a count) is neither
   * completed nor failed: BullMQ would spend an attempt on it, or complete a page whose links were never queued
   * (issue 35, item 2). Its worker keeps it and tries it again as Redis has room (the writer frees memory as it
   * stores; an operator raises maxmemory); every write it makes is idempotent (a link seen is a duplicate, a page
   * finished is not finished twice). The driver stops the run meanwhile (run/session.ts); a worker stopped or killed
   * while it holds a page leaves its job active, and the job runs again on resume.
   */
  private async holdThroughRedisTrouble(job: PageJob, attempt: () => Promise<PageJobResult>): Promise<PageJobResult> {
    for (let tries = 1; ; tries++) {
      try {
        return await attempt();
      } catch (err) {
        // The same for a transaction cut short before the page was fetched (cutShort): not the page's failure, and
        // no attempt of it spent (its finish has its own, finishThroughDrops).
        if (cutShort(err) && tries <= MAX_CUT_SHORT) {
          this.deps.log(
            'warn',
            `Redis dropped the connection while ${job.data.url} started (${(err as Error).message}); tried again`,
          );
          await cutBackoff(tries);
          continue;
        }
        if (!isRedisFull(err)) throw err;
        if (tries === 1)
          this.deps.log(
            'error',
            `${REDIS_FULL_MARK}: it refused the writes of ${job.data.url} (${(err as Error).message}); the page is kept, not completed, and tried again when Redis has room`,
          );
        await delay(Math.min(5_000, 500 * tries));
        // Its finish may have gone through before a later write was refused (the window's fill): not fetched again.
        if (await this.crawl.isSettled(job).catch(() => false))
          return {
            outcome: 'done',
            status: null,
            items: 0,
            links: 0,
            reason: 'finished before Redis refused a later write',
          };
      }
    }
  }

  /** Runs a job in a turn of its host when the worker backs off per host (hostThrottle.ts), its request measured. */
  private async inHostTurn(
    job: PageJob,
    inSlot: InSlot,
    politeWait: PoliteWait,
    work: (inSlot: InSlot) => Promise<PageJobResult>,
  ): Promise<PageJobResult> {
    const throttle = this.deps.hostThrottle;
    const host =
      throttle && job.name !== SCHEDULED_RUN_JOB && URL.canParse(job.data.url) ? new URL(job.data.url).host : null;
    if (!throttle || !host) return work(inSlot);
    const release = await throttle.turn(host, politeWait);
    try {
      return await work(throttle.measured(host, inSlot));
    } finally {
      release();
    }
  }

  private async processPage(
    job: PageJob,
    token: string | undefined,
    inSlot: InSlot,
    politeWait: PoliteWait,
  ): Promise<PageJobResult> {
    if (job.name === SCHEDULED_RUN_JOB) return this.scheduledRun();
    // A job that starts again (a retry, a stall, a politeness delay, an add after a lease ran out) may find its page
    // finished already: its worker died after pageDone and before BullMQ heard. It must not be fetched twice.
    if (
      (job.attemptsStarted > 1 || job.attemptsMade > 0 || job.stalledCounter > 0 || job.data.recovered) &&
      (await this.crawl.isSettled(job))
    ) {
      return { outcome: 'done', status: null, items: 0, links: 0, reason: 'finished before its worker stopped' };
    }
    if (job.data.sitemap !== undefined) return this.sitemap(job, token, inSlot, politeWait);
    return this.rulePage(job, token, inSlot, politeWait);
  }

  /** The task's schedule came due: a new run starts, unless the previous one is still going. */
  private async scheduledRun(): Promise<PageJobResult> {
    const started = await this.crawl.startScheduledRun(this.task);
    this.deps.log(
      'info',
      started
        ? `scheduled run ${started.run.run} started: ${started.enqueued} start URL(s)`
        : 'scheduled run skipped: the previous run is still going',
    );
    return {
      outcome: started ? 'done' : 'skipped',
      status: null,
      items: 0,
      links: started?.enqueued ?? 0,
      reason: started ? `run ${started.run.run}` : 'previous run still going',
    };
  }

  /** A sitemap's job (sitemapJob.ts), admitted, slotted and failed as a page is. */
  private sitemap(job: PageJob, token: string | undefined, inSlot: InSlot, politeWait: PoliteWait) {
    const { access, task, crawl, redis } = this;
    // In the sessions of the job's run, as its pages are.
    const inRun = access
      ? {
          ...this.sitemapDeps,
          stream: <T>(u: string, consume: (res: StreamedResponse) => Promise<T>) =>
            access.stream(u, consume, undefined, job.data.run),
        }
      : this.sitemapDeps;
    return processSitemap(job, inRun, {
      admit: (url) => this.turns.admit(job, token, url, politeWait),
      release: (url) => this.turns.release(new URL(url).host, job, token),
      inSlot,
      failure: (err) => failure(err, job, redis, task.name),
      runInfo: (run) => runningInfo(crawl, run),
    });
  }

  /** A page of a rule: its request, robots.txt, its turn and its fetch (or render), then what it becomes. */
  private async rulePage(
    job: PageJob,
    token: string | undefined,
    inSlot: InSlot,
    politeWait: PoliteWait,
  ): Promise<PageJobResult> {
    const rule = ruleByName(this.task, job.data.rule);
    if (!rule) return this.ruleGone(job);
    const req = await this.request(job, rule);
    if ('skipped' in req) return req.skipped;
    let page: FetchedPage;
    try {
      // A rendered page holds a fetch slot too: the worker's concurrency bounds its pages in flight, however loaded.
      // The host's turn is taken in the fetch slot, so no wait for a slot lies between the grant and the request.
      page = await inSlot(() => this.send(job, token, req, politeWait));
    } catch (err) {
      return this.notFetched(job, token, req.host, err);
    }
    // Not awaited: nothing waits on the release, and a lost one expires with its lease.
    this.turns.release(req.host, job, token);
    const { known, host } = req;
    const fetchedAt = Date.now();
    return this.finishThroughDrops(job, () => this.finisher.finish({ job, rule, page, host, known, fetchedAt }));
  }

  /**
   * A page's finish (its links, record, counters and done mark) again, after a dropped connection cut it short: its
   * writes are idempotent (a link seen is a duplicate, a page finished is not finished twice), and the page is not
   * fetched again. Thrown out of the job instead, BullMQ retried the job and the page was fetched twice (seen in a
   * Sentinel failover: ioredis rejects a MULTI in flight when the client moves to the new master).
   */
  private finishThroughDrops(job: PageJob, finish: () => Promise<PageJobResult>): Promise<PageJobResult> {
    return throughCuts(finish, (err) =>
      this.deps.log(
        'warn',
        `Redis dropped the connection while ${job.data.url} was finishing (${err.message}); finishing it again`,
      ),
    );
  }

  /** The task file changed under a running crawl and the rule is gone: nothing sensible to do with the page. */
  private async ruleGone(job: PageJob): Promise<PageJobResult> {
    const { url, run } = job.data;
    const reason = `no rule '${job.data.rule}' in the task`;
    await countSkipped(this.redis, this.task.name, run, { id: String(job.id), url }, reason, job.data.rule);
    await this.crawl.settle(this.task, String(job.id));
    return { outcome: 'skipped', status: null, items: 0, links: 0, reason };
  }

  /**
   * The page's request: the rule's headers and the job's method and body, variables filled in (one that is not set
   * fails the page before anything is sent), robots.txt's word, and its revisit record.
   */
  private async request(job: PageJob, rule: PageRule): Promise<PageRequest | { skipped: PageJobResult }> {
    const { task, redis, revisits } = this;
    const { url } = job.data;
    const { host } = new URL(url);
    const ruleOpts = this.optionsFor(rule);
    const send = sendOptions(job.data.request);
    if (ruleOpts instanceof FetchFailure) throw await failure(ruleOpts, job, redis, task.name);
    if (send instanceof FetchFailure) throw await failure(send, job, redis, task.name);
    const sendOpts = job.data.request === undefined ? ruleOpts : { ...ruleOpts, ...send };
    // The page's revisit record is asked for with its admission, in the same write to Redis (lookup never rejects).
    // Only a GET is revisited: a request with a method or a body is sent again in full.
    const lookup = job.data.request === undefined ? revisits?.lookup(job.data, rule) : undefined;
    const allowed = await this.turns.robotsCheck(job, url);
    if (!allowed.ok) return { skipped: allowed.skipped };
    const known = lookup ? await lookup : null;
    const opts = known ? { ...sendOpts, conditional: revisits!.conditional(known) } : sendOpts;
    return { url, host, rule, sendOpts, opts, crawlDelayMs: allowed.crawlDelayMs, known };
  }

  /**
   * The request, in its host's turn; with a delay, the gate hears when the request is on the wire (sendWatch.ts) and
   * spaces the next from then.
   */
  private async send(
    job: PageJob,
    token: string | undefined,
    req: PageRequest,
    politeWait: PoliteWait,
  ): Promise<FetchedPage> {
    await this.turns.take(job, token, req.url, req.crawlDelayMs, politeWait);
    const { load, opts } = this.loader(job, req);
    const { access } = this;
    const fetch = () =>
      access ? access.fetch(req.url, opts, load, job.data.run) : load(req.url, { ...opts, cookies: undefined });
    const delayMs = this.turns.hostLimits(req.crawlDelayMs).delayMs;
    if (delayMs === 0) return fetch();
    let told = false;
    const tell = () => {
      if (told) return;
      told = true;
      this.turns.sent(req.host, job, token, delayMs);
    };
    // A browser sends its own requests, out of undici's sight: its page counts as sent when its render starts.
    if (load !== fetchPage) tell();
    const forget = whenSent(req.url, tell);
    try {
      return await fetch();
    } finally {
      forget();
      // Failed before its headers went out: the host is free from now.
      tell();
    }
  }

  /**
   * Rendered for a rule with `browser`, else fetched; in a session and through a proxy when the task has them
   * (access.ts), alike. A request with a method or a body is fetched (a browser navigates with a GET), and a rendered
   * page is never conditional (a browser sends its own headers).
   */
  private loader(job: PageJob, req: PageRequest): { load: PageLoad; opts: FetchOptions } {
    const browser = job.data.request === undefined ? req.rule.browser : null;
    const renderer = this.deps.browser;
    if (!browser || !renderer) return { load: fetchPage, opts: req.opts };
    const hooks = this.hooks;
    return {
      load: (u, o) => renderer.render(u, browser, o, hooks.for(req.url, job.data.run, req.rule)),
      opts: req.sendOpts,
    };
  }

  /** A page that was not fetched: set aside, sent back, skipped (a navigation out of bounds) or failed. */
  private async notFetched(
    job: PageJob,
    token: string | undefined,
    host: string,
    err: unknown,
  ): Promise<PageJobResult> {
    if (err instanceof DelayedError) throw err;
    this.turns.release(host, job, token);
    // Redis's trouble, not the page's: tried again by holdThroughRedisTrouble without spending an attempt.
    if (cutShort(err)) throw err;
    if (err instanceof SentBack) return this.sendBack(job, token, err);
    if (err instanceof NavigationRefused) {
      // Not the page that was asked for, and not a failure of it: skipped, like a link out of scope.
      const { url, run } = job.data;
      this.deps.log('info', `skipped ${url}: ${err.message}`);
      // After its fetch: written again in place through a cut, not by running the page again.
      await throughCuts(
        () => countSkipped(this.redis, this.task.name, run, { id: String(job.id), url }, err.group, job.data.rule),
        () => undefined,
      );
      return { outcome: 'skipped', status: null, items: 0, links: 0, reason: err.group };
    }
    throw await failure(err, job, this.redis, this.task.name);
  }

  /**
   * Sets the job aside for `err.afterMs` without spending an attempt (sentBack.ts), or, past MAX_SENT_BACK of them in
   * this process (or without a lock token to move the job with), fails it as a retryable failure would.
   */
  private async sendBack(job: PageJob, token: string | undefined, err: SentBack): Promise<never> {
    if (!token || !this.sentBack.allow(String(job.id)))
      throw await failure(err.failure, job, this.redis, this.task.name);
    this.deps.log('info', `sent back ${job.data.url} without spending an attempt: ${err.message}`);
    await job.moveToDelayed(Date.now() + Math.max(err.afterMs, 0), token);
    throw new DelayedError();
  }
}

/**
 * A host lease outlasts the longest request: a render may take longer than a fetch (its own timeout, and the grace
 * after which its browser counts as hung, see browser/render.ts).
 */
function leaseMsOf(task: CrawlTask): number {
  return (
    Math.max(task.request.timeoutMs, ...task.rules.map((r) => (r.browser ? r.browser.timeoutMs + HUNG_GRACE_MS : 0))) +
    5_000
  );
}
