import { createHash } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { preparePage, type PreparedPage } from '../../core/designer/page';
import {
  cacheKeyOf,
  listPages,
  loadPage,
  savePage,
  setPageRule,
  type CachedPage,
  type CachedPageMeta,
} from '../../workspace/pageCache';
import { isJsonContentType } from '../../core/extract/json';
import { TooDeepError } from '../../core/extract/dom';
import { requestKey, type JobRequest } from '../../core/request/build';
import { ruleOptions, sendOptions } from '../../worker/requests';
import { compileRobots, MAX_ROBOTS_BYTES, robotsUrl, type RobotsRules, type RobotsSource } from '../../core/robots';
import { DEFAULT_USER_AGENT, DEFAULTS, type CrawlTask } from '../../core/task/model';
import { formatBytes } from '../../core/units';
import {
  FetchFailure,
  fetchPage,
  fetchStream,
  type FetchedPage,
  type FetchOptions,
  type StreamedResponse,
} from '../../worker/fetcher';
import { warningLines } from '../../worker/pageWarnings';
import { LateContentPolicy } from '../../worker/browser/lateContent';
import { formatStep, type ActionStep } from '../../core/task/actions';
import { loadActionScripts } from '../../workspace/actionScripts';
import { fetchOptions } from '../../worker/processor';
import { previewSpec, renderForPreview } from './browserPreview';
import { PreviewAccess } from './previewAccess';
import { readSitemap } from '../../worker/sitemapReader';
import type { ReadSitemap } from '../../core/designer/sitemapPreview';
import type { SitemapEntry } from '../../core/sitemap/parser';
import type { Access } from '../../worker/access';

// Pages for the designer: fetched with the workers' fetcher and the workers' options (headers, user agent,
// timeout, redirect limit, private-network rule), cached on disk next to the task file, parsed once and kept
// in memory for the preview and the editor's selector checks. A fetch can always be cancelled, and every
// failure becomes one sentence the preview shows in place of the page.

/**
 * The preview reads at most this much of a page, whatever the task's `request.maxBytes`: the page is parsed in
 * the extension host and rendered in the webview, and a 20 MB document would stall both.
 */
const PREVIEW_MAX_BYTES = 5 * 1024 * 1024;

class PageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PageError';
  }
}

/** The URL answered with something else than HTML: a sitemap, perhaps (the panel then reads it as one). */
export class NotHtmlError extends PageError {
  constructor(
    readonly url: string,
    readonly contentType: string | null,
  ) {
    super(
      `${url} is neither HTML nor JSON (${contentType ?? 'no content type'}): the preview, like the workers, extracts from HTML and JSON only (a rule's 'format' reads a response whatever its type).`,
    );
    this.name = 'NotHtmlError';
  }
}

/** The options a worker of `task` would fetch with (no task yet: the defaults), capped for the preview. */
function previewFetchOptions(task: CrawlTask | null, url: string, signal?: AbortSignal): FetchOptions {
  const base: FetchOptions = task
    ? fetchOptions(task)
    : {
        timeoutMs: DEFAULTS.timeoutMs,
        maxBytes: DEFAULTS.maxBytes,
        maxRedirects: DEFAULTS.maxRedirects,
        headers: {},
        userAgent: DEFAULT_USER_AGENT,
        privateAllowed: [new URL(url).host],
      };
  return { ...base, maxBytes: Math.min(base.maxBytes, PREVIEW_MAX_BYTES), ...(signal ? { signal } : {}) };
}

function looksLikeJson(body: string): boolean {
  const t = body.trimStart();
  if (!t.startsWith('{') && !t.startsWith('[')) return false;
  try {
    JSON.parse(t);
    return true;
  } catch {
    return false;
  }
}

/** One sentence for the preview: what happened and, where it helps, what to do. */
export function describeFailure(err: unknown, url: string, opts: FetchOptions): string {
  if (err instanceof PageError) return err.message;
  if (err instanceof FetchFailure) {
    switch (err.cause_) {
      case 'timeout':
        return err.message.startsWith('render timed out')
          ? `${url}: ${err.message} (browser.timeout, browser.waitFor).`
          : `${url} did not answer within ${opts.timeoutMs / 1000} s (request.timeout). Try Refetch, or raise the timeout.`;
      case 'too-large':
        return `${url} is larger than ${formatBytes(opts.maxBytes)}: the preview reads at most ${formatBytes(PREVIEW_MAX_BYTES)} (and request.maxBytes).`;
      case 'redirects':
        return `${url} redirected more than ${opts.maxRedirects} times (a redirect loop?).`;
      case 'http':
        return `${url} answered HTTP ${err.status}${err.status !== null && err.status >= 500 ? ' (a server error; workers would retry)' : ''}.`;
      case 'dns':
        return `Cannot find the host of ${url}: ${err.message}.`;
      case 'blocked':
        return `${err.message}.`;
      case 'invalid-url':
        return `${err.message}.`;
      case 'request':
        return `${url} was not sent: ${err.message}.`;
      case 'login':
        return `Could not log in, so ${url} was not fetched: ${err.message} (login, and its variables: Crawl Studio: Set Crawl Secret).`;
      case 'proxy':
        return `The proxy failed, so ${url} was not fetched: ${err.message} (proxy.urls, and its variables: Crawl Studio: Set Crawl Secret).`;
      case 'session':
        return `${err.message} (session.retireOn).`;
      case 'sitemap':
        return `${err.message}.`;
      default:
        if ((err.message ?? '').includes('aborted')) return `Fetching ${url} was cancelled.`;
        return `Could not fetch ${url}: ${err.message}.`;
    }
  }
  return `Could not fetch ${url}: ${err instanceof Error ? err.message : String(err)}`;
}

/** Render with the browser, as a worker would for `rule` (see browserPreview.ts). */
export interface PreviewBrowser {
  readonly rule: string | null;
  /** crawlStudio.browserPath, or undefined to look for one. */
  readonly path: string | undefined;
  /** The rule's `evaluate` actions may run the workspace's scripts: the workspace is trusted. */
  readonly scripts?: boolean;
}

export interface LoadedPage {
  readonly meta: CachedPageMeta;
  readonly page: PreparedPage;
  readonly fromCache: boolean;
}

function robotsFile(dir: string, origin: string): string {
  return join(dir, `robots-${createHash('sha256').update(origin).digest('hex').slice(0, 16)}.json`);
}

/** The environment a task's `${CRAWL_STUDIO_*}` variables expand in: the editor's, with Secret Storage's values. */
export type EnvFor = (task: CrawlTask) => Promise<Readonly<Record<string, string | undefined>>>;

/** Entries of a sitemap the preview reads at most (a sitemap may list 50,000; routing a few thousand shows how). */
const PREVIEW_SITEMAP_ENTRIES = 5_000;

/** A sitemap as the preview read it, with what its response said. */
export interface LoadedSitemap {
  readonly read: ReadSitemap;
  readonly meta: CachedPageMeta;
}

/** Pages and robots.txt for one cache folder (`<task folder>/.crawl/pages`). */
export class PageSource {
  private readonly prepared = new Map<string, PreparedPage>();
  private readonly robots = new Map<string, RobotsRules | Promise<void>>();
  private readonly access = new PreviewAccess();

  constructor(
    readonly dir: string,
    private readonly envFor: EnvFor = () => Promise.resolve(process.env),
    private readonly log: (message: string) => void = () => undefined,
  ) {}

  /** The worker's way to reach the task's pages (session, login, proxies), or null: a plain fetch. */
  private async accessFor(task: CrawlTask | null, opts: FetchOptions): Promise<Access | null> {
    if (!task || (!task.session && !task.proxy)) return null;
    try {
      return this.access.for(task, await this.envFor(task), opts, this.log);
    } catch (err) {
      // A proxy URL whose variables are not set: the message names the field and the variable, never a value.
      throw new PageError(`${err instanceof Error ? err.message : String(err)} (Crawl Studio: Set Crawl Secret).`);
    }
  }

  /** The environment the preview's credentials expand in (names for the status line; values never leave here). */
  env(task: CrawlTask): Promise<Readonly<Record<string, string | undefined>>> {
    return this.envFor(task);
  }

  /** Forgets the preview's session: the next page logs in again. */
  forgetSession(): void {
    this.access.reset();
  }

  /**
   * Reads a sitemap (or a robots.txt's Sitemap: lines) as a worker would, through the task's session and proxies,
   * up to PREVIEW_SITEMAP_ENTRIES entries. Not cached: a sitemap changes, and its routing is what is previewed.
   */
  async loadSitemap(
    url: string,
    task: CrawlTask | null,
    robots: boolean,
    signal?: AbortSignal,
  ): Promise<LoadedSitemap> {
    const opts = previewFetchOptions(task, url, signal);
    try {
      const access = await this.accessFor(task, opts);
      const meta = (finalUrl: string, status: number, contentType: string | null, bytes: number): CachedPageMeta => ({
        url,
        finalUrl,
        status,
        contentType,
        bytes,
        redirects: 0,
        fetchedAt: new Date().toISOString(),
      });
      if (robots) {
        const robotsOpts = { ...opts, keepNonHtml: true, maxBytes: MAX_ROBOTS_BYTES * 2 };
        const res = access ? await access.fetchShared(url, robotsOpts) : await fetchPage(url, robotsOpts);
        const rules = compileRobots(
          new URL(res.finalUrl).origin,
          { state: 'ok', text: res.body },
          task?.request.userAgent ?? DEFAULT_USER_AGENT,
        );
        const entries: SitemapEntry[] = rules.sitemaps.map((loc) => ({ kind: 'sitemap', loc, lastmod: null }));
        return {
          read: { url, finalUrl: res.finalUrl, format: 'robots', entries, truncated: false },
          meta: meta(res.finalUrl, res.status, res.contentType, res.bytes),
        };
      }
      const spec = task?.sitemaps.find((s) => s.url === url);
      const entries: SitemapEntry[] = [];
      let truncated = false;
      const consume = async (res: StreamedResponse): Promise<LoadedSitemap> => {
        const read = await readSitemap(res, { alternates: spec?.alternates ?? false }, (batch) => {
          for (const e of batch) if (entries.length < PREVIEW_SITEMAP_ENTRIES) entries.push(e);
          truncated = entries.length >= PREVIEW_SITEMAP_ENTRIES;
          return Promise.resolve(!truncated);
        });
        if (read.format === null) {
          throw new FetchFailure(
            'sitemap',
            `${url} is not a sitemap: ${read.root ? `its root element is <${read.root}>, not <urlset> or <sitemapindex>` : 'it is empty'}`,
            false,
            res.status,
          );
        }
        return {
          read: { url, finalUrl: res.finalUrl, format: read.format, entries, truncated: truncated || read.stopped },
          meta: meta(res.finalUrl, res.status, res.contentType, read.bytes),
        };
      };
      return access ? await access.stream(url, consume, opts) : await fetchStream(url, opts, consume);
    } catch (err) {
      if (err instanceof PageError) throw err;
      throw new PageError(describeFailure(err, url, opts));
    }
  }

  /**
   * The cached copy, or a fresh fetch when there is none or `refetch` is set. A `request` (a POST, a body) is sent
   * as a worker sends it (the rule's headers, variables from `env`: the editor's environment and Secret Storage)
   * and cached under its own key.
   */
  async load(
    url: string,
    task: CrawlTask | null,
    opts: {
      refetch: boolean;
      signal?: AbortSignal;
      browser?: PreviewBrowser;
      request?: JobRequest | null;
      rule?: string | null;
      env?: Readonly<Record<string, string | undefined>>;
    },
  ): Promise<LoadedPage> {
    const key = requestKey(url, opts.request);
    if (!opts.refetch) {
      const cached = await loadPage(this.dir, key);
      // A rendered copy and a fetched one are different pages: the toggle never shows one for the other.
      if (cached && !!cached.meta.rendered === !!opts.browser)
        return { meta: cached.meta, page: this.prepare(cached), fromCache: true };
    }
    const fetched = await this.fetch(url, task, opts);
    await savePage(this.dir, fetched);
    this.prepared.delete(key);
    return { meta: fetched.meta, page: this.prepare(fetched), fromCache: false };
  }

  private async fetch(
    url: string,
    task: CrawlTask | null,
    o: {
      signal?: AbortSignal;
      browser?: PreviewBrowser;
      request?: JobRequest | null;
      rule?: string | null;
      env?: Readonly<Record<string, string | undefined>>;
    },
  ): Promise<CachedPage> {
    let opts = previewFetchOptions(task, url, o.signal);
    const request = o.request ?? null;
    const steps: ActionStep[] = [];
    try {
      const rule = task?.rules.find((r) => r.name === o.rule);
      if (task && rule) {
        const ruled = ruleOptions(task, opts, o.env)(rule);
        if (ruled instanceof FetchFailure) throw ruled;
        opts = ruled;
      }
      const send = sendOptions(request ?? undefined, o.env);
      if (send instanceof FetchFailure) throw send;
      opts = { ...opts, ...send, keepNonHtml: true };
      const browser = request ? undefined : o.browser;
      const access = browser ? null : await this.accessFor(task, opts);
      const res = browser
        ? await this.render(url, task, browser, opts, o.env, steps)
        : access
          ? await access.fetch(url, opts)
          : await fetchPage(url, opts);
      if (
        !res.isHtml &&
        !isJsonContentType(res.contentType) &&
        !(task?.rules.some((r) => r.format !== null) && looksLikeJson(res.body))
      ) {
        throw new NotHtmlError(url, res.contentType);
      }
      const key = request ? { request, key: requestKey(url, request) } : {};
      // Said as a worker logs them (worker/pageWarnings.ts), each page on its own.
      const warnings = warningLines(res, url, new URL(url).host, o.browser?.rule ?? '', new Set());
      return {
        html: res.body,
        meta: {
          url,
          ...key,
          finalUrl: res.finalUrl,
          status: res.status,
          contentType: res.contentType,
          bytes: res.bytes,
          redirects: res.redirects,
          fetchedAt: new Date().toISOString(),
          ...(browser ? { rendered: true } : {}),
          ...(steps.length ? { actions: steps.map(formatStep) } : {}),
          ...(warnings.length ? { warnings } : {}),
        },
      };
    } catch (err) {
      if (err instanceof PageError) throw err;
      // The steps that ran before the one that failed say how far the page got.
      const ran = steps.length ? ` Actions: ${steps.map(formatStep).join('; ')}.` : '';
      throw new PageError(describeFailure(err, url, opts) + ran);
    }
  }

  /** The page as a worker renders it for the rule, its `browser.actions` run and each step kept in `steps`. */
  private async render(
    url: string,
    task: CrawlTask | null,
    browser: PreviewBrowser,
    opts: FetchOptions,
    env: Readonly<Record<string, string | undefined>> | undefined,
    steps: ActionStep[],
  ): Promise<FetchedPage> {
    const spec = previewSpec(task, browser.rule);
    // Scripts are read only for a trusted workspace; elsewhere an `evaluate` step says it was refused.
    const scripts =
      task && browser.scripts && spec.actions.some((a) => a.kind === 'evaluate')
        ? await loadActionScripts(task)
        : undefined;
    // Watched for cards that come after load as a worker watches its first pages (its banner says so).
    const rule = task?.rules.find((r) => r.name === browser.rule);
    const late = rule ? new LateContentPolicy().checkFor(rule) : undefined;
    return renderForPreview(url, spec, opts, browser.path, {
      scripts,
      ...(env ? { env } : {}),
      onStep: (s) => steps.push(s),
      ...(late ? { late } : {}),
    });
  }

  /** Parsed and numbered once per page and kept (a few pages: previews and the editor's checks share them). */
  private prepare(page: CachedPage): PreparedPage {
    const key = cacheKeyOf(page.meta);
    const hit = this.prepared.get(key);
    if (hit && hit.html === page.html) return hit;
    // A JSON response is shown as JSON (and read as JSON by rules that read it): by its type, or a body that is JSON.
    const json =
      isJsonContentType(page.meta.contentType) ||
      (page.meta.contentType !== null && !/html|xml/i.test(page.meta.contentType) && looksLikeJson(page.html));
    let p: PreparedPage;
    try {
      p = preparePage(page.html, page.meta.url, page.meta.finalUrl, page.meta, {
        json,
        ...(page.meta.key ? { key: page.meta.key } : {}),
      });
    } catch (err) {
      if (err instanceof TooDeepError)
        throw new PageError(`${page.meta.url}: ${err.message}. A worker fails this page as 'parse'.`);
      throw new PageError(
        `${page.meta.url} says it is JSON (${page.meta.contentType}) but is not valid JSON: ${err instanceof Error ? err.message : String(err)}. A worker fails this page as 'parse'.`,
      );
    }
    this.prepared.set(key, p);
    while (this.prepared.size > 4) this.prepared.delete(this.prepared.keys().next().value!);
    return p;
  }

  /** prepare, or null for a cached page that cannot be shown (a JSON page whose body is not JSON). */
  private preparedOrNull(page: CachedPage): PreparedPage | null {
    try {
      return this.prepare(page);
    } catch {
      return null;
    }
  }

  list(): Promise<CachedPageMeta[]> {
    return listPages(this.dir);
  }

  async rememberRule(url: string, rule: string | null): Promise<void> {
    await setPageRule(this.dir, url, rule);
  }

  /**
   * robots.txt rules for an origin if known; otherwise starts fetching them (the workers' way: 4xx allows
   * everything, 5xx or no answer blocks everything) and calls `onReady` when they are in.
   */
  robotsFor(origin: string, task: CrawlTask, onReady: () => void): RobotsRules | undefined {
    const hit = this.robots.get(origin);
    if (hit && !(hit instanceof Promise)) return hit;
    if (!hit) {
      const p = this.loadRobots(origin, task).then((source) => {
        this.robots.set(origin, compileRobots(origin, source, task.request.userAgent));
        onReady();
      });
      this.robots.set(origin, p);
    }
    return undefined;
  }

  private async loadRobots(origin: string, task: CrawlTask): Promise<RobotsSource> {
    const file = robotsFile(this.dir, origin);
    try {
      const stored = JSON.parse(await readFile(file, 'utf8')) as RobotsSource & { fetchedAt?: string };
      // A day, like the workers' shared copy in Redis.
      if (stored.fetchedAt && Date.now() - Date.parse(stored.fetchedAt) < 24 * 3600_000) return stored;
    } catch {
      // Not cached yet.
    }
    let source: RobotsSource;
    try {
      const opts = { ...previewFetchOptions(task, origin), maxBytes: MAX_ROBOTS_BYTES * 2, keepNonHtml: true };
      // Through the task's proxies, as the workers read it.
      const access = await this.accessFor(task, opts);
      const res = access ? await access.fetchShared(robotsUrl(origin), opts) : await fetchPage(robotsUrl(origin), opts);
      source = { state: 'ok', text: res.body || '' };
    } catch (err) {
      if (
        err instanceof FetchFailure &&
        ((err.status !== null && err.status >= 400 && err.status < 500) || err.cause_ === 'too-large')
      )
        source = { state: 'missing', text: '' };
      else source = { state: 'unreachable', text: '' };
    }
    if (source.state !== 'unreachable') {
      await mkdir(this.dir, { recursive: true });
      await writeFile(file, JSON.stringify({ ...source, fetchedAt: new Date().toISOString() })).catch(() => undefined);
    }
    return source;
  }

  /** Forgets robots.txt rules (Refetch refreshes them too). */
  forgetRobots(): void {
    for (const [k, v] of this.robots) if (!(v instanceof Promise)) this.robots.delete(k);
  }
}
