import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import { whenSent } from './sendWatch';
import type { Redis } from '../redis/connect';
import { setTimeout as delay } from 'node:timers/promises';
import { readsAsJson, ruleByName } from '../core/pipeline/page';
import { isJsonContentType } from '../core/extract/json';
import { bodyLabel } from '../core/request/body';
import { expandHeaders, mayRetry, ruleOptions, sendOptions } from './requests';
import type { CrawlTask, PageRule } from '../core/task/model';
import type { FailureReason } from '../core/task/failureReasons';
import type { CrawlQueue } from '../frontier/crawl';
import { SCHEDULED_RUN_JOB, type PageJobData, type PageJobResult } from '../frontier/types';
import { countFailed, countSkipped } from '../frontier/outcomes';
import type { HostGate } from '../frontier/politeness';
import type { RobotsCache } from '../frontier/robots';
import { pageEntry } from '../store/buffer';
import { workerIdOf } from '../frontier/fleet';
import type { PageRecord } from '../store/types';
import { AnalysisError, inlineAnalyser, type AnalysedPage, type PageAnalyser } from './analysis';
import { FetchFailure, fetchPage, fetchStream, type FetchOptions, type StreamedResponse } from './fetcher';
import type { FetchSlots, InSlot, PoliteWait } from './fetchSlots';
import type { HostThrottles } from './hostThrottle';
import { processSitemap, type SitemapJobDeps } from './sitemapJob';
import { createAccess, type Access, type PageLoad } from './access';
import { createRevisits } from './revisits';
import { SentBack, SentBackCounter } from './sentBack';
import { warningCounters, warningLines } from './pageWarnings';
import { expandProxyUrl } from '../core/task/secrets';
import { canonicalize } from '../core/url/canonical';
import { decideLink } from '../core/url/scope';
import { keepScreenshot } from '../frontier/screenshots';
import { isRedisFull, REDIS_FULL_MARK } from '../redis/memory';
import { HUNG_GRACE_MS, NavigationRefused, type PageRenderer, type RenderHooks } from './browser/render';
import { LateContentPolicy } from './browser/lateContent';

// One page job: robots.txt, per-host politeness, fetch, extract, discover, hand items to the store buffer,
// count. Every step that talks to Redis is shared state, so any number of workers on any number of machines
// can run this on the same queue.

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

/** Attached to retryable errors so the backoff strategy can honour Retry-After. */
export class RetryableFetchError extends Error {
  constructor(
    message: string,
    readonly retryAfterMs: number | null,
  ) {
    super(message);
    this.name = 'RetryableFetchError';
  }
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

export function createProcessor(deps: ProcessorDeps) {
  const { task, crawl, redis, gate } = deps;
  const fetchOpts = fetchOptions(task);
  // Sessions, logins and proxies (access.ts); null for a task without them, which fetches as it always did.
  const access = deps.access !== undefined ? deps.access : createAccess(task, redis, deps.log, fetchOpts);
  // Each rule's headers over the task's (requests.ts); the task's own options for a rule without any.
  const optionsFor = ruleOptions(task, fetchOpts);
  // Conditional re-crawl (revisits.ts); null unless the task asks for it.
  const revisits = createRevisits(task, redis);
  const maxInlineWait = deps.maxInlineWaitMs ?? 1_000;
  // Setting a job aside costs two Redis round trips; a wait shorter than that is cheaper to sit out.
  const maxInlineHostWait = deps.maxInlineHostWaitMs ?? 25;
  // A host lease outlasts the longest request: a render may take longer than a fetch (its own timeout, and the
  // grace after which its browser counts as hung, see browser/render.ts).
  const leaseMs =
    Math.max(task.request.timeoutMs, ...task.rules.map((r) => (r.browser ? r.browser.timeoutMs + HUNG_GRACE_MS : 0))) +
    5_000;
  const analyser = deps.analyser ?? inlineAnalyser();
  const sentBack = new SentBackCounter();
  // Hosts and rules whose page warnings this process has logged (pageWarnings.ts): each is said once.
  const warned = new Set<string>();
  // Which rendered pages are watched for cards that come after load (browser/lateContent.ts).
  const lateContent = new LateContentPolicy();
  const sitemapDeps: SitemapJobDeps = {
    task,
    crawl,
    redis,
    robots: deps.robots,
    log: deps.log,
    fetchOpts,
    // Sitemaps are requested as pages are: in a session, logged in, through the proxies.
    stream: (url, consume) => (access ? access.stream(url, consume) : fetchStream(url, fetchOpts, consume)),
  };

  // The request of a job runs in one of the task's fetch slots when the worker has them (see fetchSlots.ts).
  const direct: InSlot = (fetch) => fetch();
  const slots = deps.slots;
  type Run = (job: Job<PageJobData, PageJobResult>, token?: string) => Promise<PageJobResult>;
  const inSlots: Run =
    slots && deps.hostThrottle
      ? (job, token) =>
          slots.job((inSlot, politeWait) =>
            inHostTurn(job, inSlot, politeWait, (s) => processPage(job, token, s, politeWait)),
          )
      : slots
        ? (job, token) => slots.job((inSlot, politeWait) => processPage(job, token, inSlot, politeWait))
        : (job, token) => processPage(job, token, direct, delay);
  return (job: Job<PageJobData, PageJobResult>, token?: string) => holdWhileRedisFull(job, () => inSlots(job, token));

  /**
   * A page whose writes Redis refused for lack of memory (its links' discovery, its finish, a count) is neither
   * completed nor failed: BullMQ would spend an attempt on it, or complete a page whose links were never queued
   * (issue 35, item 2). Its worker keeps it and tries it again as Redis has room (the writer frees memory as it
   * stores; an operator raises maxmemory); every write it makes is idempotent (a link seen is a duplicate, a page
   * finished is not finished twice). The driver stops the run meanwhile (run/session.ts); a worker stopped or killed
   * while it holds a page leaves its job active, and the job runs again on resume.
   */
  async function holdWhileRedisFull(
    job: Job<PageJobData, PageJobResult>,
    attempt: () => Promise<PageJobResult>,
  ): Promise<PageJobResult> {
    for (let tries = 1; ; tries++) {
      try {
        return await attempt();
      } catch (err) {
        if (!isRedisFull(err)) throw err;
        if (tries === 1)
          deps.log(
            'error',
            `${REDIS_FULL_MARK}: it refused the writes of ${job.data.url} (${(err as Error).message}); the page is kept, not completed, and tried again when Redis has room`,
          );
        await delay(Math.min(5_000, 500 * tries));
        // Its finish may have gone through before a later write was refused (the window's fill): not fetched again.
        if (await crawl.isSettled(job).catch(() => false))
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
  async function inHostTurn(
    job: Job<PageJobData, PageJobResult>,
    inSlot: InSlot,
    politeWait: PoliteWait,
    work: (inSlot: InSlot) => Promise<PageJobResult>,
  ): Promise<PageJobResult> {
    const throttle = deps.hostThrottle;
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

  /**
   * A request's turn, for pages and sitemaps alike: robots.txt, then the task's rate limit and the host's politeness
   * (a lease the caller releases when its request is done). The job's result when robots.txt forbids the URL, else null.
   */
  async function admit(
    job: Job<PageJobData, PageJobResult>,
    token: string | undefined,
    url: string,
    politeWait: PoliteWait,
  ): Promise<PageJobResult | null> {
    const allowed = await robotsCheck(job, url);
    if (!allowed.ok) return allowed.skipped;
    await takeTurn(job, token, url, allowed.crawlDelayMs, politeWait);
    return null;
  }

  /** robots.txt's word on `url`: its Crawl-delay when allowed; the job's result (skipped) when not. */
  async function robotsCheck(
    job: Job<PageJobData, PageJobResult>,
    url: string,
  ): Promise<{ ok: true; crawlDelayMs: number | null } | { ok: false; skipped: PageJobResult }> {
    if (!task.request.robots) return { ok: true, crawlDelayMs: null };
    const rules = await deps.robots.rulesFor(new URL(url).origin, task.request.userAgent);
    if (rules.isAllowed(url)) return { ok: true, crawlDelayMs: rules.crawlDelayMs };
    await countSkipped(redis, task.name, job.data.run, url, 'robots.txt', job.data.rule);
    await crawl.settle(task, String(job.id));
    return { ok: false, skipped: { outcome: 'skipped', status: null, items: 0, links: 0, reason: 'robots.txt' } };
  }

  /** The host's delay for a page: the task's per-host delay, or robots.txt's Crawl-delay when longer. */
  function hostLimits(crawlDelayMs: number | null) {
    return {
      concurrency: task.politeness.perHost.concurrency,
      delayMs: Math.max(task.politeness.perHost.delayMs, crawlDelayMs ?? 0),
      leaseMs,
    };
  }

  /**
   * The request's turn: the task's rate limit, then the host's politeness (a lease the caller releases when its
   * request is done). Sets the job aside (DelayedError) when the wait is long.
   */
  async function takeTurn(
    job: Job<PageJobData, PageJobResult>,
    token: string | undefined,
    url: string,
    crawlDelayMs: number | null,
    politeWait: PoliteWait,
  ): Promise<void> {
    const { host } = new URL(url);
    const limits = hostLimits(crawlDelayMs);
    const lease = leaseOf(job, token);
    const rate = task.politeness.rateLimit;
    if (rate) {
      for (let i = 0; ; i++) {
        const wait = await gate.rateLimit(crawl.keys.rate, rate.max, rate.perMs, `${lease}:${i}:${Date.now()}`);
        if (wait === 0) break;
        if (wait > maxInlineWait && token) {
          await job.moveToDelayed(Date.now() + wait, token);
          throw new DelayedError();
        }
        await politeWait(wait);
      }
    }
    for (;;) {
      const answer = await gate.acquire(host, limits, lease, token ? `${task.name}|${job.id}` : '');
      if (answer.ok) break;
      if (answer.waitMs > maxInlineHostWait && token) {
        await job.moveToDelayed(Date.now() + answer.waitMs, token);
        throw new DelayedError();
      }
      await politeWait(answer.waitMs);
    }
  }

  async function processPage(
    job: Job<PageJobData, PageJobResult>,
    token: string | undefined,
    inSlot: InSlot,
    politeWait: PoliteWait,
  ): Promise<PageJobResult> {
    if (job.name === SCHEDULED_RUN_JOB) {
      const started = await crawl.startScheduledRun(task);
      deps.log(
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
    // A job that starts again (a retry, a stall, a politeness delay, an add after a lease ran out) may find its page
    // finished already: its worker died after pageDone and before BullMQ heard. It must not be fetched twice.
    if (
      (job.attemptsStarted > 1 || job.attemptsMade > 0 || job.stalledCounter > 0 || job.data.recovered) &&
      (await crawl.isSettled(job))
    ) {
      return { outcome: 'done', status: null, items: 0, links: 0, reason: 'finished before its worker stopped' };
    }
    if (job.data.sitemap !== undefined) {
      // In the sessions of the job's run, as its pages are.
      const inRun = access
        ? {
            ...sitemapDeps,
            stream: <T>(u: string, consume: (res: StreamedResponse) => Promise<T>) =>
              access.stream(u, consume, undefined, job.data.run),
          }
        : sitemapDeps;
      return processSitemap(job, inRun, {
        admit: (url) => admit(job, token, url, politeWait),
        release: (url) => void gate.release(new URL(url).host, leaseOf(job, token)).catch(() => undefined),
        inSlot,
        failure: (err) => failure(err, job, redis, task.name),
        runInfo: async (run) => ({
          run,
          bucketBits: await bucketBits(crawl, run),
          state: 'running' as const,
          startedAt: 0,
          finishedAt: null,
          file: null,
        }),
      });
    }
    const { url, depth, run } = job.data;
    const rule = ruleByName(task, job.data.rule);
    if (!rule) {
      // The task file changed under a running crawl and the rule is gone: nothing sensible to do with the page.
      const reason = `no rule '${job.data.rule}' in the task`;
      await countSkipped(redis, task.name, run, url, reason, job.data.rule);
      await crawl.settle(task, String(job.id));
      return { outcome: 'skipped', status: null, items: 0, links: 0, reason };
    }
    const { host } = new URL(url);
    // The rule's headers and the job's method and body, variables filled in: one that is not set fails the page
    // before anything is sent.
    const ruleOpts = optionsFor(rule);
    const send = sendOptions(job.data.request);
    if (ruleOpts instanceof FetchFailure) throw await failure(ruleOpts, job, redis, task.name);
    if (send instanceof FetchFailure) throw await failure(send, job, redis, task.name);
    const sendOpts = job.data.request === undefined ? ruleOpts : { ...ruleOpts, ...send };
    // The page's revisit record is asked for with its admission, in the same write to Redis (lookup never rejects).
    // Only a GET is revisited: a request with a method or a body is sent again in full.
    const lookup = job.data.request === undefined ? revisits?.lookup(job.data, rule) : undefined;
    const allowed = await robotsCheck(job, url);
    if (!allowed.ok) return allowed.skipped;
    const known = lookup ? await lookup : null;
    const opts = known ? { ...sendOpts, conditional: revisits!.conditional(known) } : sendOpts;

    const releaseQuietly = () => void gate.release(host, leaseOf(job, token)).catch(() => undefined);
    let page;
    try {
      // A rendered page holds a fetch slot too: the worker's concurrency bounds its pages in flight, however loaded.
      // A request with a method or a body is fetched: a browser navigates with a GET.
      const browser = job.data.request === undefined ? rule.browser : null;
      const renderer = deps.browser;
      // In a session and through a proxy when the task has them (access.ts), rendered or fetched alike; a rendered page
      // is never conditional (a browser sends its own headers).
      const load: PageLoad =
        browser && renderer ? (u, o) => renderer.render(u, browser, o, renderHooks(url, run, rule)) : fetchPage;
      const pageOpts = browser && renderer ? sendOpts : opts;
      // The host's turn is taken in the fetch slot, so no wait for a slot lies between the grant and the request;
      // with a delay, the gate hears when the request is on the wire (sendWatch.ts) and spaces the next from then.
      page = await inSlot(async () => {
        await takeTurn(job, token, url, allowed.crawlDelayMs, politeWait);
        const delayMs = hostLimits(allowed.crawlDelayMs).delayMs;
        if (delayMs === 0)
          return access ? access.fetch(url, pageOpts, load, run) : load(url, { ...pageOpts, cookies: undefined });
        let told = false;
        const tell = () => {
          if (!told) ((told = true), void gate.sent(host, leaseOf(job, token), delayMs).catch(() => undefined));
        };
        // A browser sends its own requests, out of undici's sight: its page counts as sent when its render starts.
        if (load !== fetchPage) tell();
        const forget = whenSent(url, tell);
        try {
          return await (access
            ? access.fetch(url, pageOpts, load, run)
            : load(url, { ...pageOpts, cookies: undefined }));
        } finally {
          forget();
          // Failed before its headers went out: the host is free from now.
          tell();
        }
      });
    } catch (err) {
      if (err instanceof DelayedError) throw err;
      releaseQuietly();
      if (err instanceof SentBack) return sendBack(job, token, err);
      if (err instanceof NavigationRefused) {
        // Not the page that was asked for, and not a failure of it: skipped, like a link out of scope.
        deps.log('info', `skipped ${url}: ${err.message}`);
        await countSkipped(redis, task.name, run, url, err.group, job.data.rule);
        return { outcome: 'skipped', status: null, items: 0, links: 0, reason: err.group };
      }
      throw await failure(err, job, redis, task.name);
    }
    // Not awaited: nothing waits on the release, and a lost one expires with its lease.
    releaseQuietly();

    const fetchedAt = Date.now();
    const jobId = String(job.id);
    if (known && page.status === 304) {
      // Unchanged since the last full fetch: nothing to extract; its items stay stored, its links are followed again.
      const same = await revisits!.unchanged(job.data, rule, known, page);
      const runInfo = {
        run,
        bucketBits: await bucketBits(crawl, run),
        state: 'running' as const,
        startedAt: 0,
        finishedAt: null,
        file: null,
      };
      const rec: PageRecord = {
        ...record(task.name, job.data, 304, fetchedAt, page.contentType, page.bytes, [], []),
        revisit: same.record,
      };
      const counters: Record<string, number> = {
        done: 1,
        unchanged: 1,
        'unchanged-items': known.items,
        bytes: page.bytes,
      };
      for (const [reason, n] of Object.entries(same.dropped)) counters[`dropped:${reason}`] = n;
      await crawl.finishPage(task, runInfo, jobId, same.kept, { entry: pageEntry(rec), counters, host });
      return { outcome: 'done', status: 304, items: 0, links: same.kept.length, reason: 'unchanged' };
    }
    // A JSON response is read as JSON by a rule that reads JSON (or says `format: json`); `format: html` reads any
    // response as HTML; anything else that is not HTML is recorded and not extracted, as always.
    const json = readsAsJson(rule, isJsonContentType(page.contentType));
    if (!json && !page.isHtml && rule.format !== 'html') {
      // The page record goes to the store with the counters, in one call: durable together (see store/buffer.ts).
      const rec = record(task.name, job.data, page.status, fetchedAt, page.contentType, page.bytes, [], []);
      await crawl.completePage(task, run, jobId, {
        entry: pageEntry(rec),
        counters: { done: 1, nonhtml: 1, bytes: page.bytes },
        host,
      });
      return { outcome: 'non-html', status: page.status, items: 0, links: 0, reason: page.contentType ?? undefined };
    }

    let outcome: AnalysedPage;
    try {
      outcome = await analyser.analyse({
        task,
        url: page.finalUrl,
        html: page.body,
        rule: rule.name,
        depth,
        requestedUrl: url,
        status: page.status,
        fetchedAt,
        ...(json ? { json } : {}),
        ...(job.data.series ? { series: job.data.series } : {}),
      });
    } catch (err) {
      // The page itself is the problem (too deep, too slow, too big to extract): counted, failed, not retried.
      const kind = err instanceof AnalysisError ? err.kind : 'error';
      const group: FailureReason = kind === 'error' ? 'parse' : `parse-${kind}`;
      await countFailed(redis, task.name, run, url, group);
      await markFailure(job, group, page.status);
      throw new UnrecoverableError(err instanceof Error ? err.message : String(err));
    }
    const runInfo = {
      run,
      bucketBits: await bucketBits(crawl, run),
      state: 'running' as const,
      startedAt: 0,
      finishedAt: null,
      file: null,
    };
    // The links are queued and the page finished (its record for the store, its counters, its job marked done and its
    // page out of the window) in one script call, which also fills the window (frontier/pageFlow.ts finishPage).
    const kept =
      revisits && job.data.request === undefined
        ? await revisits.remember(job.data, rule, page, outcome.kept, outcome.items.length)
        : undefined;
    const rec = record(
      task.name,
      job.data,
      page.status,
      fetchedAt,
      page.contentType,
      page.bytes,
      outcome.items,
      outcome.problems,
      kept,
    );
    const counters: Record<string, number> = {
      done: 1,
      bytes: page.bytes,
      items: outcome.items.length,
      problems: outcome.problems.length,
    };
    let links = outcome.kept.length;
    for (const [reason, n] of Object.entries(outcome.droppedByReason)) {
      counters[`dropped:${reason}`] = n;
      if (reason === 'repeat') continue;
      counters[`rule-dropped:${rule.name}:${reason}`] = n;
      links += n;
    }
    // Per rule, so the run summary can say "rule list: 11 of 11 links dropped (pattern …)" (issue 21, item 1).
    if (links > 0) counters[`rule-links:${rule.name}`] = links;
    Object.assign(counters, warningCounters(page, host, rule.name));
    for (const line of warningLines(page, url, host, rule.name, warned)) deps.log('warn', line);
    await crawl.finishPage(task, runInfo, jobId, outcome.kept, { entry: pageEntry(rec), counters, host });

    if (outcome.problems.length > 0) {
      deps.log(
        'warn',
        `${url}: ${outcome.problems.length} item problem(s), first: ${outcome.problems[0]!.type}[${outcome.problems[0]!.index}] ${outcome.problems[0]!.message}`,
      );
    }
    return { outcome: 'done', status: page.status, items: outcome.items.length, links: outcome.kept.length };
  }

  /**
   * Sets the job aside for `err.afterMs` without spending an attempt (sentBack.ts), or, past MAX_SENT_BACK of them in
   * this process (or without a lock token to move the job with), fails it as a retryable failure would.
   */
  async function sendBack(
    job: Job<PageJobData, PageJobResult>,
    token: string | undefined,
    err: SentBack,
  ): Promise<never> {
    if (!token || !sentBack.allow(String(job.id))) throw await failure(err.failure, job, redis, task.name);
    deps.log('info', `sent back ${job.data.url} without spending an attempt: ${err.message}`);
    await job.moveToDelayed(Date.now() + Math.max(err.afterMs, 0), token);
    throw new DelayedError();
  }

  /** What a rendered page checks as it goes (browser/render.ts): where it may navigate, where its screenshots go. */
  function renderHooks(requested: string, run: string, rule: PageRule): RenderHooks {
    const canonical = (u: string) => {
      const c = canonicalize(u, undefined, task.canonical);
      return c.ok ? c.url : u;
    };
    const late = lateContent.checkFor(rule);
    return {
      ...(late ? { late } : {}),
      scripts: deps.scripts,
      // A place the page went to by itself is checked as a link would be: scope (offsite, allow and deny patterns,
      // private host names) and robots.txt. Depth does not apply: it is the same page, wherever it ended up.
      navigation: async (to) => {
        if (canonical(to) === canonical(requested)) return null;
        const d = decideLink(task, to, to, 0);
        if (!d.ok) return d.reason === 'depth' ? null : d.reason;
        if (task.request.robots) {
          // Usually cached (an in-scope origin is a start origin's). One not seen yet is fetched in a slot of its own
          // while this page holds one: were every slot held by such pages, a render's timeout would free one.
          const rules = await deps.robots.rulesFor(new URL(d.url).origin, task.request.userAgent);
          if (!rules.isAllowed(d.url)) return 'robots.txt';
        }
        return null;
      },
      screenshot: async (shot) => {
        await keepScreenshot(
          redis,
          task.name,
          run,
          { url: shot.url, finalUrl: shot.finalUrl, at: Date.now(), why: shot.why },
          shot.jpeg,
        ).catch((err: Error) => deps.log('warn', `screenshot of ${shot.url} not kept: ${err.message}`));
      },
    };
  }
}

/** The host lease of a job's request: one per attempt (BullMQ's token), so a retry never releases a stale one. */
function leaseOf(job: Job, token: string | undefined): string {
  return `${token ?? job.id}`;
}

const bucketBitsCache = new Map<string, number>();
async function bucketBits(crawl: CrawlQueue, run: string): Promise<number> {
  let bits = bucketBitsCache.get(run);
  if (bits === undefined) {
    const info = await crawl.currentRun();
    bits = info && info.run === run ? info.bucketBits : 12;
    bucketBitsCache.set(run, bits);
  }
  return bits;
}

function record(
  task: string,
  data: PageJobData,
  status: number | null,
  fetchedAt: number,
  contentType: string | null,
  bytes: number,
  items: PageRecord['items'],
  problems: PageRecord['problems'],
  revisit?: PageRecord['revisit'],
): PageRecord {
  const request = data.request
    ? { method: data.request.method, ...(data.request.body ? { body: bodyLabel(data.request.body) } : {}) }
    : {};
  const rec: PageRecord = {
    task,
    run: data.run,
    url: data.url,
    ...request,
    rule: data.rule,
    depth: data.depth,
    status,
    fetchedAt,
    contentType,
    bytes,
    items,
    problems,
  };
  return revisit ? { ...rec, revisit } : rec;
}

/**
 * Maps a fetch failure to BullMQ's retry semantics, and counts it when it is final: unrecoverable (4xx, too
 * large, blocked) or out of attempts.
 */
async function failure(err: unknown, job: Job<PageJobData>, redis: Redis, task: string): Promise<Error> {
  // Where a page cannot be set aside (a sitemap's stream), a page sent back is retried as its failure says.
  const f = err instanceof SentBack ? err.failure : err instanceof FetchFailure ? err : null;
  const attempts = job.opts.attempts ?? 1;
  // A POST that may have reached the server is not sent again (requests.ts): its failure is final.
  const retry = f !== null && mayRetry(job.data.request, f);
  const final = !retry || job.attemptsMade + 1 >= attempts;
  if (final) {
    await countFailed(redis, task, job.data.run, job.data.url, f?.group ?? 'error');
    await markFailure(job, f?.group ?? 'error', f?.status ?? null);
  }
  const message = f ? f.message : err instanceof Error ? err.message : String(err);
  if (!retry)
    return new UnrecoverableError(
      f?.retryable
        ? `${message} (not sent again: a ${job.data.request?.method} may have reached the server; 'idempotent: true' retries it)`
        : message,
    );
  return new RetryableFetchError(message, f.retryAfterMs);
}

/**
 * The failure group and status on the failed job itself (PageJobData.failure), so `crawl-studio failures` and the
 * dashboard group its page as the run's counters do, not by guessing from its message. Not on the counters' MULTI:
 * on a cluster the job's hash is in its partition's slot. Lost only if Redis is, and then the message still says.
 */
async function markFailure(job: Job<PageJobData>, group: string, status: number | null): Promise<void> {
  await job
    .updateData({ ...job.data, failure: { group, status, worker: workerIdOf(process.pid) } })
    .catch(() => undefined);
}

/** Exponential or fixed backoff with jitter; a longer Retry-After from the server wins. */
export function backoffDelay(attemptsMade: number, task: CrawlTask, err?: Error): number {
  const base = task.request.retries.delayMs;
  const raw = task.request.retries.backoff === 'fixed' ? base : base * 2 ** Math.max(0, attemptsMade - 1);
  const jittered = raw * (0.8 + Math.random() * 0.4);
  const retryAfter = err instanceof RetryableFetchError ? (err.retryAfterMs ?? 0) : 0;
  return Math.round(Math.max(jittered, retryAfter));
}
