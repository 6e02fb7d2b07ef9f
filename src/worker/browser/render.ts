import type { Page } from 'playwright-core';
import type { FailureReason } from '../../core/task/failureReasons';
import type { BrowserSpec } from '../../core/task/model';
import { redactUrl } from '../../core/url/redact';
import { FetchFailure, proxyAuthFailure, retryAfter, type FetchedPage, type FetchOptions } from '../fetcher';
import type { SessionCookies } from '../sessions';
import { lendCookies } from './cookies';
import type { EgressLease } from './egress';
import { BrowserGoneError, isParked, type BrowserPool, type ContextKind } from './pool';
import { blockedType } from './guard';
import { SentBack } from '../sentBack';
import { runActions, type ActionStep } from './actions';
import { countMatches, watchForLate, type LateCheck } from './lateContent';

// A page rendered in the browser, handed on as a FetchedPage: from here it takes exactly the path of a fetched
// page (analysis thread, extraction, follow, discovery, store). Failures are FetchFailures with the fetcher's
// meanings, so retries and failure counts treat a render as they treat a request.
//
// What a fetch gets from its options, a render gets too: the session's cookies (lent to the page's context and
// written back with what the page changed, cookies.ts), the session's proxy and the private-address guard on
// every request and every hop (both through the worker's egress proxy, egress.ts).

const RETRYABLE_STATUS = new Set([408, 425, 429, 500, 502, 503, 504, 520, 521, 522, 523, 524]);

/** Time past a render's own timeout after which its browser is taken as hung. */
export const HUNG_GRACE_MS = 10_000;

/** A fetch's options, with a session's cookies in the form a browser context can take them. */
export type RenderOptions = FetchOptions & { readonly cookies?: SessionCookies };

export interface Screenshot {
  readonly url: string;
  readonly finalUrl: string;
  readonly why: string;
  readonly jpeg: Buffer;
}

export interface RenderHooks {
  /**
   * Whether the page may be at `url` after it left the requested URL (a script, a meta refresh or a redirect took
   * it there): null when it may, else why not ('offsite', 'robots.txt'…). The task's scope and robots.txt, as for a
   * link (processor.ts).
   */
  readonly navigation?: (url: string) => Promise<string | null>;
  /** Keeps a screenshot the rule asked for (`browser.screenshot`). */
  readonly screenshot?: (shot: Screenshot) => Promise<void>;
  /** The workspace scripts `evaluate` actions may run, by name (absent: none may, see actions.ts). */
  readonly scripts?: ReadonlyMap<string, string>;
  /** Where `fill` and `select` values' variables come from (default: this process's environment). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Told each `browser.actions` step as it ends (the designer's preview lists them). */
  readonly onStep?: (step: ActionStep) => void;
  /** Watch whether the rule's cards keep coming after the page was read at `load` (lateContent.ts). */
  readonly late?: LateCheck;
}

export interface PageRenderer {
  render(url: string, spec: BrowserSpec, opts: RenderOptions, hooks?: RenderHooks): Promise<FetchedPage>;
}

/**
 * The page went somewhere the task does not crawl: it is not extracted as the page that was asked for. Not a
 * failure of the page: the processor counts it as skipped, with the reason.
 */
export class NavigationRefused extends FetchFailure {
  constructor(
    readonly to: string,
    readonly reason: string,
  ) {
    super('blocked', `the page navigated to ${to}, which is not crawled (${reason})`, false);
  }

  override get group(): string {
    return `navigated-${this.reason.replace(/[^\w-]+/g, '-')}`;
  }
}

/** Numbers for resolvers (tests stand in their own DNS): contexts are shared only between pages with the same one. */
const resolverIds = new WeakMap<object, number>();
let resolvers = 0;

/**
 * A renderer on `pool`: one page a render, in a context kept for pages of the same kind (proxy, address guard, user
 * agent, headers; pool.ts says why), each page starting as in a new one: no cookies but its session's, no storage.
 */
export function poolRenderer(pool: BrowserPool): PageRenderer {
  return {
    async render(url, spec, opts, hooks = {}) {
      const kind = await contextKindFor(pool, opts);
      try {
        return await pool.withPage(kind, spec.timeoutMs + HUNG_GRACE_MS, async (page, lease, discard) => {
          try {
            return await renderOn(page, url, spec, opts, hooks, lease, discard);
          } catch (err) {
            // Read while the lease is this render's: once the context is back in the pool the next render resets it.
            // A browser gone is left to the pool, which replaces it.
            throw err instanceof BrowserGoneError ? err : asFailure(err, url, spec, lease);
          }
        });
      } catch (err) {
        throw asFailure(err, url, spec, null);
      }
    },
  };
}

/**
 * The kind of context a page with `opts` opens in (pool.ts): pages share one only with the same proxy, address
 * guard, user agent, headers and DNS. Renders and browser logins (login.ts) alike.
 */
export async function contextKindFor(pool: BrowserPool, opts: RenderOptions): Promise<ContextKind<EgressLease | null>> {
  // Direct only when there is nothing to guard and no proxy to go through.
  const egress = opts.privateAllowed !== null || opts.proxy ? await pool.egress() : null;
  if (opts.resolver && !resolverIds.has(opts.resolver)) resolverIds.set(opts.resolver, ++resolvers);
  // In memory only (the proxy URL holds its credentials): never in a message.
  const key = JSON.stringify([
    opts.proxy ?? null,
    opts.privateAllowed,
    opts.userAgent,
    opts.headers,
    opts.resolver ? resolverIds.get(opts.resolver) : null,
  ]);
  return {
    key,
    create: () => {
      const lease = egress
        ? egress.lease({ privateAllowed: opts.privateAllowed, proxy: opts.proxy, resolver: opts.resolver })
        : null;
      return {
        options: {
          userAgent: opts.userAgent,
          extraHTTPHeaders: { ...opts.headers },
          serviceWorkers: 'block',
          acceptDownloads: false,
          ...(lease ? { proxy: lease.proxy } : {}),
        },
        extra: lease,
        dispose: () => lease?.release(),
      };
    },
  };
}

/** One render on a kept page: what the page's route and listeners (set once per page, see watch) report to. */
interface Render {
  readonly block: BrowserSpec['block'];
  readonly navigation: RenderHooks['navigation'];
  /** The first main-frame navigation (the requested URL) is not checked; the ones after it are. */
  first: boolean;
  refused: NavigationRefused | null;
  onRefused(err: NavigationRefused): void;
  /** The main frame's last request: where a navigation that failed was going (redirects are not routed). */
  lastRequested: string;
  /** Origins the page's frames were at: their storage is cleared after the render. */
  readonly origins: Set<string>;
}

const watched = new WeakMap<Page, { current: Render | null }>();

/** The page's route and listeners, set once for as long as it is kept; each reports to the render in progress. */
async function watch(page: Page): Promise<{ current: Render | null }> {
  const known = watched.get(page);
  if (known) return known;
  const state: { current: Render | null } = { current: null };
  watched.set(page, state);
  // A navigation of the main frame after the first is checked before it leaves: a page is not read from, nor its
  // request sent to, a place the task does not crawl. The wait in progress ends at once.
  await page.route('**/*', async (route) => {
    const r = state.current;
    const req = route.request();
    // Between renders nothing leaves the page: what a parked page asks for (pool.ts), a late answer's follow-up or a
    // meta refresh, belongs to no render, its scope or its politeness.
    let abort = isParked(page) || (r !== null && blockedType(req.resourceType(), r.block));
    if (r && !abort && req.isNavigationRequest() && req.frame() === page.mainFrame()) {
      if (r.first) r.first = false;
      else if (r.navigation) {
        const reason = await r.navigation(req.url()).catch(() => null);
        if (reason) {
          abort = true;
          if (!r.refused) r.onRefused((r.refused = new NavigationRefused(req.url(), reason)));
        }
      }
    }
    await (abort ? route.abort('blockedbyclient') : route.continue()).catch(() => undefined);
  });
  page.on('request', (req) => {
    if (state.current && req.isNavigationRequest() && req.frame() === page.mainFrame())
      state.current.lastRequested = req.url();
  });
  page.on('framenavigated', (frame) => {
    const u = safeUrl(frame.url());
    if (state.current && u && (u.protocol === 'http:' || u.protocol === 'https:')) state.current.origins.add(u.origin);
  });
  return state;
}

async function renderOn(
  page: Page,
  url: string,
  spec: BrowserSpec,
  opts: RenderOptions,
  hooks: RenderHooks,
  lease: EgressLease | null,
  discard: () => void,
): Promise<FetchedPage> {
  const deadline = Date.now() + spec.timeoutMs;
  const left = () => Math.max(1, deadline - Date.now());
  // The context served other pages before: this one starts with none of their cookies, refusals or failures.
  lease?.reset();
  await page.context().clearCookies();
  const writeBack = opts.cookies ? await lendCookies(page.context(), opts.cookies, url) : null;
  let onRefused: (err: NavigationRefused) => void = () => undefined;
  const refusal = new Promise<never>((_, reject) => (onRefused = reject));
  refusal.catch(() => undefined);
  const unlessRefused = <T>(p: Promise<T>): Promise<T> => Promise.race([p, refusal]);
  const r: Render = {
    block: spec.block,
    navigation: hooks.navigation,
    first: true,
    refused: null,
    onRefused,
    lastRequested: url,
    origins: new Set([new URL(url).origin]),
  };
  const state = await watch(page);
  state.current = r;
  const refused = () => r.refused;
  const origins = r.origins;
  const where = (at: string) => checkWhere(at, url, hooks, lease, refused);
  try {
    return await loadAndRead(page, url, spec, opts, hooks, { left, unlessRefused, where });
  } catch (caught) {
    let err = caught;
    // A navigation that failed on its way somewhere (a redirect out of scope, to a refused address): that is the
    // reason, not the error page it ended on.
    if (!(err instanceof FetchFailure) && !(err instanceof BrowserGoneError)) {
      err =
        (await where(r.lastRequested).then(
          () => null,
          (e: unknown) => e,
        )) ?? err;
    }
    if (spec.screenshot !== 'never' && !(err instanceof BrowserGoneError)) {
      await capture(page, url, asFailure(err, url, spec, lease).message, hooks);
    }
    throw err;
  } finally {
    state.current = null;
    // What the page's responses and scripts did to the session's cookies goes back, whether or not it rendered.
    if (writeBack) await withTimeout(writeBack(), 5_000).catch(() => undefined);
    // And nothing it stored is left for the context's next page; a context that cannot be cleared is not kept.
    await withTimeout(clearStorage(page, origins), 5_000).catch(discard);
  }
}

/** What a render's steps share: the time left, a wait that ends when a navigation is refused, the place check. */
interface RenderSteps {
  readonly left: () => number;
  readonly unlessRefused: <T>(p: Promise<T>) => Promise<T>;
  readonly where: (at: string) => Promise<void>;
}

/** Navigates, waits as the rule says, runs its actions and reads the DOM: the page as a FetchedPage. */
async function loadAndRead(
  page: Page,
  url: string,
  spec: BrowserSpec,
  opts: RenderOptions,
  hooks: RenderHooks,
  { left, unlessRefused, where }: RenderSteps,
): Promise<FetchedPage> {
  const waitUntil =
    spec.waitFor.kind === 'domcontentloaded' || spec.waitFor.kind === 'networkidle' ? spec.waitFor.kind : 'load';
  const response = await unlessRefused(page.goto(url, { waitUntil, timeout: left() }));
  await where(page.url());
  const status = response?.status() ?? 200;
  const contentType = (await response?.headerValue('content-type').catch(() => null)) ?? null;
  if (status >= 400) {
    const wait = retryAfter((await response?.headerValue('retry-after').catch(() => null)) ?? null);
    throw new FetchFailure('http', `HTTP ${status}`, RETRYABLE_STATUS.has(status), status, wait);
  }
  const isHtml = contentType === null || /\b(text\/html|application\/xhtml\+xml)\b/i.test(contentType);
  if (!isHtml) {
    const bytes = Number((await response?.headerValue('content-length').catch(() => null)) ?? 0) || 0;
    return { url, finalUrl: page.url(), status, contentType, isHtml: false, body: '', bytes, redirects: 0 };
  }
  if (spec.waitFor.kind === 'selector')
    await unlessRefused(page.waitForSelector(spec.waitFor.selector, { state: 'attached', timeout: left() }));
  else if (spec.waitFor.kind === 'delay') await unlessRefused(page.waitForTimeout(Math.min(spec.waitFor.ms, left())));
  // Scrolls, clicks, forms, scripts: within the same deadline; one that fails fails the page, named.
  if (spec.actions.length)
    await unlessRefused(
      runActions(page, spec.actions, {
        left,
        env: hooks.env ?? process.env,
        scripts: hooks.scripts,
        onStep: hooks.onStep,
      }),
    );
  // Counted before the read: cards that come between the two are read, and still said to come late.
  const late = spec.waitFor.kind === 'load' && spec.actions.length === 0 ? hooks.late : undefined;
  const atLoad = late ? await unlessRefused(countMatches(page, late.selectors).catch(() => null)) : null;
  const body = await unlessRefused(contentOf(page, left));
  // A script may have navigated while the page was awaited: what was read is from wherever the page is now.
  const finalUrl = page.url();
  await where(finalUrl);
  const bytes = Buffer.byteLength(body);
  if (bytes > opts.maxBytes)
    throw new FetchFailure(
      'too-large',
      `the rendered page is ${bytes} bytes, over request.maxBytes (${opts.maxBytes})`,
      false,
    );
  const lateContent =
    late && atLoad !== null && late.settle(atLoad) ? await watchForLate(page, late.selectors, atLoad, left) : null;
  if (spec.screenshot === 'always') await capture(page, url, 'rendered', hooks);
  return {
    url,
    finalUrl,
    status,
    contentType,
    isHtml: true,
    body,
    bytes,
    redirects: response?.request().redirectedFrom() ? 1 : 0,
    ...(lateContent ? { lateContent } : {}),
  };
}

/** Local storage, IndexedDB, Cache Storage… of the origins the page's frames visited (cookies: clearCookies). */
export async function clearStorage(page: Page, origins: ReadonlySet<string>): Promise<void> {
  const cdp = await page.context().newCDPSession(page);
  try {
    for (const origin of origins) await cdp.send('Storage.clearDataForOrigin', { origin, storageTypes: 'all' });
  } finally {
    await cdp.detach().catch(() => undefined);
  }
}

/**
 * Where the page is (or was going), checked as a redirect of a fetch is: never at a private address (the egress
 * proxy refused it), never out of the task's scope or against robots.txt (hooks.navigation), never somewhere that is
 * not a web page.
 */
async function checkWhere(
  at: string,
  requested: string,
  hooks: RenderHooks,
  lease: EgressLease | null,
  refused: () => NavigationRefused | null,
): Promise<void> {
  const r = refused();
  if (r) throw r;
  // The session's proxy failed under the page: another proxy may do (access.ts tries the next).
  if (lease?.proxyFailure) throw proxyFailureOf(lease, lease.proxyFailure);
  const u = safeUrl(at);
  if (!u || (u.protocol !== 'http:' && u.protocol !== 'https:')) {
    if (lease?.refused.length) throw privateFailure(lease);
    throw new NavigationRefused(at, 'scheme');
  }
  // The egress proxy answered 403 for it: the page holds our refusal, not the site's answer.
  if (lease?.refused.includes(u.host)) throw privateFailure(lease, u.host);
  if (at === requested) return;
  const reason = hooks.navigation ? await hooks.navigation(at) : null;
  if (reason) throw new NavigationRefused(at, reason);
}

/** The session's proxy failed: unreachable (another proxy may do, or a retry), or it refused its credentials (final). */
function proxyFailureOf(lease: EgressLease, message: string): FetchFailure {
  return lease.proxyStatus === 407 ? proxyAuthFailure(message) : new FetchFailure('proxy', message, true);
}

function privateFailure(lease: EgressLease, host = lease.refused[0]!): FetchFailure {
  return new FetchFailure(
    'blocked',
    `${host} resolves to a private address; set scope.allowPrivate to crawl it`,
    false,
  );
}

function safeUrl(s: string): URL | null {
  try {
    return new URL(s);
  } catch {
    return null;
  }
}

/** A screenshot of the viewport, for the rule that asked; never a reason for the page to fail. */
async function capture(page: Page, url: string, why: string, hooks: RenderHooks): Promise<void> {
  if (!hooks.screenshot) return;
  try {
    const jpeg = await page.screenshot({ type: 'jpeg', quality: 50, timeout: 5_000 });
    await hooks.screenshot({ url, finalUrl: page.url(), why, jpeg });
  } catch {
    // A page that broke the browser has nothing to show.
  }
}

/**
 * The DOM as HTML. A page whose script navigates away as it loads destroys the document being read: then the page
 * it went to is read, once it has loaded, within the same deadline.
 */
async function contentOf(page: Page, left: () => number): Promise<string> {
  for (let i = 0; ; i++) {
    try {
      return await page.content();
    } catch (err) {
      if (i >= 3 || !/navigat|context was destroyed/i.test(String(err))) throw err;
      await page.waitForLoadState('load', { timeout: left() });
    }
  }
}

/** Retryable, counted apart from network errors when final: browser-crash, browser-hung, browser-closed. */
export class BrowserFailure extends FetchFailure {
  constructor(
    readonly kind: BrowserGoneError['kind'],
    message: string,
  ) {
    super('network', message, true);
  }

  override get group(): FailureReason {
    return `browser-${this.kind}`;
  }
}

function asFailure(err: unknown, url: string, spec: BrowserSpec, lease: EgressLease | null): Error {
  if (err instanceof FetchFailure || err instanceof SentBack) return err;
  if (err instanceof BrowserGoneError) {
    const failure = new BrowserFailure(err.kind, `${err.message} (rendering ${url})`);
    // Closed with its browser, which another page hung or crashed (that page is the one blamed), or which went away
    // by itself: the page goes back without spending an attempt (a bounded number of times, sentBack.ts).
    return err.kind === 'closed' ? new SentBack(failure.message, 0, failure) : failure;
  }
  const message = err instanceof Error ? err.message.split('\n')[0]! : String(err);
  if (err instanceof Error && err.name === 'TimeoutError') {
    const what =
      spec.waitFor.kind === 'selector' ? `waiting for '${spec.waitFor.selector}'` : `waiting for ${spec.waitFor.kind}`;
    return new FetchFailure('timeout', `render timed out after ${spec.timeoutMs} ms, ${what}`, true);
  }
  // The egress proxy knows why a connection failed: a private address, or the session's proxy.
  if (lease?.refused.length && lease.refused.includes(safeUrl(url)?.host ?? ''))
    return privateFailure(lease, safeUrl(url)!.host);
  if (lease?.proxyFailure) return proxyFailureOf(lease, lease.proxyFailure);
  if (
    /ERR_TUNNEL_CONNECTION_FAILED|ERR_PROXY_CONNECTION_FAILED|ERR_HTTP_RESPONSE_CODE_FAILURE/.test(message) &&
    lease?.refused.length
  )
    return privateFailure(lease);
  // Said as the fetcher says it (observe/failures.ts groups by these messages).
  const code = lease?.unreachable.get(safeUrl(url)?.host ?? '');
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN')
    return new FetchFailure('dns', `cannot resolve the host of ${url} (${code})`, code === 'EAI_AGAIN');
  if (code) return new FetchFailure('network', `network error fetching ${url}: ${code}`, true);
  if (/ERR_NAME_NOT_RESOLVED/.test(message)) return new FetchFailure('dns', message, true);
  return new FetchFailure('network', redactUrl(message), true);
}

export function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p,
    new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error('timed out')), ms))),
  ]).finally(() => clearTimeout(timer));
}
