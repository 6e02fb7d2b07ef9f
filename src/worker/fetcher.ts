import { isIP } from 'node:net';
import type { Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { Dispatcher } from 'undici';
import type { PageFacts } from '../core/extract/extract';
import type { FailureReason } from '../core/task/failureReasons';
import { decodeChecked, type CharsetConflict } from './charset';
import { isPrivateAddress } from '../core/url/hosts';
import { redactUrl } from '../core/url/redact';
import { poolsFor, PrivateAddressError, proxyPools, requestVia, systemResolver, type Resolver } from './dispatcher';

// One HTTP fetch with the limits a crawler needs: bounded redirects (each hop re-checked), a timeout covering
// headers and body, a body size cap enforced while streaming (so a gzip bomb or an endless response stops at
// the cap), and a content-type check. Errors say whether a retry can help.

export type FetchFailureCause =
  | 'timeout'
  | 'network'
  | 'dns'
  | 'http'
  | 'too-large'
  | 'redirects'
  | 'blocked'
  | 'invalid-url'
  /** A sitemap that is not one, or whose gzip is broken. */
  | 'sitemap'
  /** The proxy refused the connection or the credentials (407). */
  | 'proxy'
  /** The session's login failed (worker/access.ts). */
  | 'login'
  /** The request cannot be sent as the task writes it: a variable its headers or body name is not set. */
  | 'request'
  /** The page answered like a block (session.retireOn.selector): the session was retired. */
  | 'session'
  /** Redis failed over while a sitemap's entries were queued (Sentinel, redis/replicas.ts): it is read again. */
  | 'failover'
  /** A rendered page's `browser.actions` step failed (browser/actions.ts): its element never came, its script threw. */
  | 'action';

/** Each cause is recorded as a reason docs/failures.md explains (core/task/failureReasons.ts; 'http' as http-NNN). */
type Documented<T extends FailureReason> = T;
export type RecordedCause = Documented<Exclude<FetchFailureCause, 'http'>>;

export class FetchFailure extends Error {
  constructor(
    readonly cause_: FetchFailureCause,
    message: string,
    readonly retryable: boolean,
    readonly status: number | null = null,
    readonly retryAfterMs: number | null = null,
  ) {
    super(message);
    this.name = 'FetchFailure';
  }

  /** Short label used for grouping failures: "http-503", "timeout", "dns", "proxy-auth"… */
  get group(): string {
    if (this.cause_ === 'proxy' && this.status === 407) return 'proxy-auth';
    return this.cause_ === 'http' && this.status !== null ? `http-${this.status}` : this.cause_;
  }
}

/**
 * A proxy that answered 407: its credentials (proxy.urls and the variables they name) are wrong. A mistake in the
 * task's setup, which a retry does not mend: the page fails at once (access.ts still tries the task's other proxies).
 * `message` names the proxy without its credentials.
 */
export function proxyAuthFailure(message: string): FetchFailure {
  return new FetchFailure('proxy', `${message}: check proxy.urls and the variables it names`, false, 407);
}

export interface FetchOptions {
  readonly timeoutMs: number;
  readonly maxBytes: number;
  readonly maxRedirects: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly userAgent: string;
  /** Hosts (host:port) that may resolve to private addresses: the task's start hosts, or all when null. */
  readonly privateAllowed: readonly string[] | null;
  /** DNS for the fetch's connections; the system's by default (tests stand in their own). */
  readonly resolver?: Resolver;
  readonly signal?: AbortSignal;
  /** Keep the body of non-HTML responses too (robots.txt is text/plain). */
  readonly keepNonHtml?: boolean;
  /** A session's cookie jar: its cookies go with every hop and every hop's Set-Cookie is kept (logins set them on a 302). */
  readonly cookies?: CookieAccess;
  /** A proxy's URL, credentials expanded: never in a message (redactUrl). */
  readonly proxy?: string;
  /** POST with a body (logins, requests); a 301/302/303 answer is followed with a GET, as browsers do. */
  readonly post?: { readonly contentType: string; readonly body: string };
  /**
   * The one origin `post`'s body may go to (a login's credentials: its `login.url`'s origin): a 307 or 308 redirect
   * that would repeat it to another origin is refused (BodyOriginRefused), not followed.
   */
  readonly bodyOrigin?: string;
  /** The method when it is not GET, or POST with `post` (a PUT, a PATCH, a POST without a body). */
  readonly method?: 'GET' | 'POST' | 'PUT' | 'PATCH';
  /** Report the response's ETag and Last-Modified (FetchedPage.validators): a task that re-crawls conditionally. */
  readonly validators?: boolean;
  /** A conditional request (worker/revisits.ts): `headers` go to the hop whose URL is `url` only; a 304 is returned as it is. */
  readonly conditional?: { readonly url: string; readonly headers: Readonly<Record<string, string>> };
}

/** A redirect would have carried the request's body (a login's credentials) to another origin: not followed. */
export class BodyOriginRefused extends FetchFailure {
  constructor(
    readonly to: string,
    readonly allowed: string,
    status: number,
  ) {
    super(
      'blocked',
      `an HTTP ${status} redirect would send the request's body on to ${to}, another origin than ${allowed}; it was not followed`,
      false,
      status,
    );
  }
}

export interface CookieAccess {
  header(url: string): Promise<string | null>;
  store(url: string, setCookie: readonly string[]): Promise<void>;
}

export interface FetchedPage {
  readonly url: string;
  readonly finalUrl: string;
  readonly status: number;
  readonly contentType: string | null;
  readonly isHtml: boolean;
  readonly body: string;
  readonly bytes: number;
  readonly redirects: number;
  /** The response's ETag and Last-Modified, when it had either (a conditional re-crawl keeps them). */
  readonly validators?: { readonly etag: string | null; readonly lastModified: string | null };
  /** The Content-Type's charset garbled a page its `<meta charset>` would have read cleanly (charset.ts). */
  readonly charsetConflict?: CharsetConflict;
  /**
   * A rendered page read at `load` whose rule's links and items matched more elements a moment later than when it
   * was read (browser/lateContent.ts): its cards come after load, and some were missed.
   */
  readonly lateContent?: { readonly atLoad: number; readonly later: number };
}

/** The page's facts for its `page:` fields: `queued` is the job's URL (the page's identity in the crawl). */
export function factsOfFetch(queued: string, page: FetchedPage, fetchedAt: number): PageFacts {
  return { url: queued, finalUrl: page.finalUrl, status: page.status, fetchedAt };
}

const RETRYABLE_STATUS = new Set([408, 425, 429, 500, 502, 503, 504, 520, 521, 522, 523, 524]);

// undici's request() rather than fetch(): the same connection pools without WHATWG streams and Headers on every
// response (fetch was 8% of a worker's main thread in the bench profile). What fetch did besides, done here:
// content decoding (gzip, deflate, br) and manual redirects.
type Response = Dispatcher.ResponseData;

export async function fetchPage(url: string, opts: FetchOptions): Promise<FetchedPage> {
  // A timer of our own, cleared when the fetch ends. AbortSignal.timeout's stays armed for the whole timeout after
  // the fetch is done, until a GC collects its signal (a WeakRef and a finalization record each). Measured alone:
  // 12.5 µs a signal against 5.5 for this, and 200,000 of them left a 350 MB heap against 20 MB.
  const deadline = new AbortController();
  const timer = setTimeout(
    () => deadline.abort(new DOMException('The operation timed out.', 'TimeoutError')),
    opts.timeoutMs,
  );
  timer.unref();
  try {
    return await fetchWithin(url, opts, deadline.signal);
  } finally {
    clearTimeout(timer);
  }
}

async function fetchWithin(url: string, opts: FetchOptions, timeout: AbortSignal): Promise<FetchedPage> {
  const { res, finalUrl, status, contentType, redirects } = await openWithin(url, opts, timeout);
  const isHtml = contentType === null || /\b(text\/html|application\/xhtml\+xml)\b/i.test(contentType);
  const { body, bytes, conflict } = await readCapped(res, contentType, opts.maxBytes, finalUrl, timeout);
  const page: FetchedPage = {
    url,
    finalUrl,
    status,
    contentType,
    isHtml,
    body: isHtml || opts.keepNonHtml ? body : '',
    bytes,
    redirects,
    ...(conflict && isHtml ? { charsetConflict: conflict } : {}),
  };
  if (!opts.validators) return page;
  const etag = header(res, 'etag');
  const lastModified = header(res, 'last-modified');
  return etag === null && lastModified === null ? page : { ...page, validators: { etag, lastModified } };
}

/** A response whose body is read as it arrives (see fetchStream). */
export interface StreamedResponse {
  readonly finalUrl: string;
  readonly status: number;
  readonly contentType: string | null;
  /** The body with its content coding undone, chunk by chunk; each wait for a chunk is bounded by the timeout. */
  readonly chunks: AsyncIterable<Buffer>;
}

/**
 * A GET whose body `consume` reads as it arrives, for bodies too large to hold (sitemaps): the same redirects,
 * address guard and failures as fetchPage. The timeout bounds the wait for the response and then each wait for the
 * next chunk, not the whole body: `consume` may pause between chunks (to enqueue what it read) for as long as that
 * takes. No size cap here: `consume` counts what it reads. Failures while reading are FetchFailures too.
 */
export async function fetchStream<T>(
  url: string,
  opts: FetchOptions,
  consume: (res: StreamedResponse) => Promise<T>,
): Promise<T> {
  const deadline = new AbortController();
  const arm = () =>
    setTimeout(
      () => deadline.abort(new DOMException('The operation timed out.', 'TimeoutError')),
      opts.timeoutMs,
    ).unref();
  let timer = arm();
  let opened: Awaited<ReturnType<typeof openWithin>>;
  try {
    opened = await openWithin(url, opts, deadline.signal);
  } finally {
    clearTimeout(timer);
  }
  const { res, finalUrl, status, contentType } = opened;
  const body = decoded(res);
  async function* chunks(): AsyncGenerator<Buffer> {
    const it = (body as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
    for (;;) {
      timer = arm();
      let next: IteratorResult<Buffer>;
      try {
        next = await it.next();
      } catch (err) {
        throw networkFailure(err, finalUrl, deadline.signal.aborted);
      } finally {
        clearTimeout(timer);
      }
      if (next.done) return;
      yield next.value;
    }
  }
  try {
    return await consume({ finalUrl, status, contentType, chunks: chunks() });
  } finally {
    // Read to the end, or given up on: either way nothing more is downloaded.
    body.destroy();
    discard(res);
  }
}

async function openWithin(
  url: string,
  opts: FetchOptions,
  timeout: AbortSignal,
): Promise<{ res: Response; finalUrl: string; status: number; contentType: string | null; redirects: number }> {
  const signal = opts.signal ? AbortSignal.any([timeout, opts.signal]) : timeout;
  let current = url;
  let post = opts.post;
  let method: NonNullable<FetchOptions['method']> = opts.method ?? (post ? 'POST' : 'GET');
  for (let hop = 0; ; hop++) {
    const res = await sendHop(current, opts, method, post, signal, timeout);
    const status = res.statusCode;
    if (opts.cookies) {
      const set = res.headers['set-cookie'];
      if (set !== undefined) await opts.cookies.store(current, Array.isArray(set) ? set : [set]);
    }
    if (status === 407 && opts.proxy) {
      discard(res);
      throw proxyAuthFailure(`proxy ${proxyName(opts.proxy)} refused its credentials (HTTP 407)`);
    }
    const location = header(res, 'location');
    if (status >= 300 && status < 400 && location !== null) {
      discard(res);
      // 307 and 308 repeat the request as it was; the others are followed with a GET, as browsers do.
      if (status !== 307 && status !== 308 && method !== 'GET') {
        post = undefined;
        method = 'GET';
      }
      if (hop >= opts.maxRedirects) {
        throw new FetchFailure('redirects', `more than ${opts.maxRedirects} redirects from ${url}`, false, status);
      }
      try {
        current = new URL(location, current).href;
      } catch {
        throw new FetchFailure('invalid-url', `redirect to an invalid URL from ${current}`, false, status);
      }
      if (!/^https?:$/.test(new URL(current).protocol)) {
        throw new FetchFailure('blocked', `redirect to a non-http URL: ${current}`, false, status);
      }
      // A body repeated by a 307/308 goes where the redirect says: credentials only to the origin they are for.
      if (post && opts.bodyOrigin !== undefined && new URL(current).origin !== opts.bodyOrigin) {
        throw new BodyOriginRefused(new URL(current).origin, opts.bodyOrigin, status);
      }
      continue;
    }
    if (status >= 400) {
      discard(res);
      const retryable = RETRYABLE_STATUS.has(status);
      throw new FetchFailure(
        'http',
        `HTTP ${status} for ${current}`,
        retryable,
        status,
        retryAfter(header(res, 'retry-after')),
      );
    }
    return { res, finalUrl: current, status, contentType: header(res, 'content-type'), redirects: hop };
  }
}

/** One request of a fetch (its first, or a redirect's), its failure to connect named. */
async function sendHop(
  current: string,
  opts: FetchOptions,
  method: NonNullable<FetchOptions['method']>,
  post: FetchOptions['post'],
  signal: AbortSignal,
  timeout: AbortSignal,
): Promise<Response> {
  try {
    const dispatcher = opts.proxy ? await proxiedDispatcher(current, opts, opts.proxy) : dispatcherFor(current, opts);
    const cookie = opts.cookies ? await opts.cookies.header(current) : null;
    return await requestVia(dispatcher, current, {
      signal,
      method,
      body: post?.body,
      headers: {
        'user-agent': opts.userAgent,
        accept: 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.5',
        'accept-encoding': 'gzip, deflate, br',
        ...opts.headers,
        ...(cookie ? { cookie } : {}),
        ...(post ? { 'content-type': post.contentType } : {}),
        ...(opts.conditional?.url === current ? opts.conditional.headers : {}),
      },
    });
  } catch (err) {
    if (err instanceof FetchFailure) throw err;
    if (opts.proxy && refusedCredentials(err))
      throw proxyAuthFailure(`proxy ${proxyName(opts.proxy)} refused its credentials (HTTP 407)`);
    const f = networkFailure(err, current, timeout.aborted);
    // Through a proxy, a connection that fails is the proxy's: the caller tries another. Named without credentials.
    if (opts.proxy && f.cause_ === 'network')
      throw new FetchFailure(
        'proxy',
        `proxy ${proxyName(opts.proxy)}: ${f.message.split(opts.proxy).join(redactUrl(opts.proxy))}`,
        true,
      );
    throw f;
  }
}

function header(res: Response, name: string): string | null {
  const v = res.headers[name];
  if (v === undefined) return null;
  return Array.isArray(v) ? v.join(', ') : v;
}

/** A body nobody reads: destroyed, so a large or endless one is not downloaded. */
function discard(res: Response): void {
  res.body.on('error', () => undefined);
  res.body.destroy();
}

/** The body as the server meant it: content codings undone, as fetch does; unknown ones left as they are. */
function decoded(res: Response): Readable {
  const coding = (header(res, 'content-encoding') ?? '').trim().toLowerCase();
  const raw = res.body as unknown as Readable;
  const decoder =
    coding === 'gzip' || coding === 'x-gzip'
      ? createGunzip()
      : coding === 'deflate'
        ? createInflate()
        : coding === 'br'
          ? createBrotliDecompress()
          : null;
  if (!decoder) return raw;
  raw.on('error', (err) => decoder.destroy(err));
  return raw.pipe(decoder);
}

async function readCapped(
  res: Response,
  contentType: string | null,
  maxBytes: number,
  url: string,
  timeout: AbortSignal,
): Promise<{ body: string; bytes: number; conflict: CharsetConflict | null }> {
  const declared = Number(header(res, 'content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > maxBytes) {
    discard(res);
    throw new FetchFailure(
      'too-large',
      `${url} is ${declared} bytes, over the ${maxBytes}-byte limit`,
      false,
      res.statusCode,
    );
  }
  const stream = decoded(res);
  const chunks: Buffer[] = [];
  let bytes = 0;
  try {
    // Counted after decoding: a gzip bomb stops at the cap, however small it is on the wire.
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      bytes += chunk.byteLength;
      if (bytes > maxBytes) {
        stream.destroy();
        discard(res);
        throw new FetchFailure('too-large', `${url} is over the ${maxBytes}-byte limit`, false, res.statusCode);
      }
      chunks.push(chunk);
    }
  } catch (err) {
    if (err instanceof FetchFailure) throw err;
    discard(res);
    throw networkFailure(err, url, timeout.aborted);
  }
  const { text, conflict } = decodeChecked(Buffer.concat(chunks), contentType);
  return { body: text, bytes, conflict };
}

function networkFailure(err: unknown, url: string, timedOut: boolean): FetchFailure {
  if (timedOut) return new FetchFailure('timeout', `timed out fetching ${url}`, true);
  type Cause = { name?: string; code?: string; message?: string; cause?: Cause };
  const e = err as Cause;
  if (e.name === 'AbortError') return new FetchFailure('network', `fetch of ${url} was aborted`, true);
  // request() rejects with the socket's or the lookup's own error; some undici errors wrap it as their cause.
  const root: Cause = e.cause && !e.code ? e.cause : e;
  if (err instanceof PrivateAddressError || root instanceof PrivateAddressError) return blocked(new URL(url).host);
  const code = root.code ?? '';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN')
    return new FetchFailure('dns', `cannot resolve the host of ${url} (${code})`, code === 'EAI_AGAIN');
  const detail = [code, root.message ?? e.message].filter(Boolean).join(' ') || String(err);
  return new FetchFailure('network', `network error fetching ${url}: ${detail}`, true);
}

/**
 * Whether undici's ProxyAgent failed because the proxy answered 407: it says so in a message (a plain request: "Proxy
 * Authentication Required (407)"; a CONNECT tunnel: "Proxy response (407) !== 200"), not with a status.
 */
function refusedCredentials(err: unknown): boolean {
  for (
    let e = err as { message?: unknown; cause?: unknown } | undefined, depth = 0;
    e && depth < 4;
    e = e.cause as typeof e, depth++
  ) {
    if (typeof e.message === 'string' && /Proxy Authentication Required \(407\)|Proxy response \(407\)/.test(e.message))
      return true;
  }
  return false;
}

/** Retry-After: seconds or an HTTP date; capped at 10 minutes so a hostile server cannot park a job forever. */
export function retryAfter(value: string | null): number | null {
  if (!value) return null;
  const secs = Number(value);
  const ms = Number.isFinite(secs) ? secs * 1000 : Date.parse(value) - Date.now();
  if (!Number.isFinite(ms) || ms < 0) return null;
  return Math.min(ms, 600_000);
}

/**
 * The pool for one hop. A host that may not be private goes through the guarded pool, which checks the addresses
 * inside the connection's own DNS lookup; an IP literal is never looked up, so it is checked here.
 */
function dispatcherFor(url: string, opts: FetchOptions) {
  const pools = poolsFor(opts.resolver);
  if (opts.privateAllowed === null) return pools.open;
  const u = new URL(url);
  if (opts.privateAllowed.includes(u.host)) return pools.open;
  const literal = u.hostname.replace(/^\[|\]$/g, '');
  if (isIP(literal) && isPrivateAddress(literal)) throw blocked(u.host);
  return pools.guarded;
}

/**
 * The proxy's pool for one hop. The proxy resolves the target's name, so the guard checks the target's addresses
 * here first: the answer of a lookup made a moment earlier, which a hostile DNS server could change before the
 * proxy's own lookup (a proxy that allows private targets is the user's to lock down).
 */
async function proxiedDispatcher(url: string, opts: FetchOptions, proxy: string) {
  const u = new URL(url);
  if (opts.privateAllowed !== null && !opts.privateAllowed.includes(u.host)) {
    const literal = u.hostname.replace(/^\[|\]$/g, '');
    const addresses = isIP(literal)
      ? [literal]
      : (await (opts.resolver ?? systemResolver)(literal).catch(() => [])).map((a) => a.address);
    if (addresses.some((a) => isPrivateAddress(a))) throw blocked(u.host);
  }
  const pools = await proxyPools(proxy);
  return u.protocol === 'https:' ? pools.tunnel : pools.plain;
}

/** A proxy as messages name it: scheme, host and port, never its credentials (a socks5: URL has no WHATWG origin). */
export function proxyName(proxyUrl: string): string {
  const u = new URL(proxyUrl);
  return `${u.protocol}//${u.host}`;
}

function blocked(host: string): FetchFailure {
  return new FetchFailure(
    'blocked',
    `${host} resolves to a private address; set scope.allowPrivate to crawl it`,
    false,
  );
}
