import { isIP } from 'node:net';
import { fetch, type Response } from 'undici';
import { isPrivateAddress } from '../core/url/hosts';
import { poolsFor, PrivateAddressError, type Resolver } from './dispatcher';

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
  | 'invalid-url';

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

  /** Short label used for grouping failures: "http-503", "timeout", "dns"… */
  get group(): string {
    return this.cause_ === 'http' && this.status !== null ? `http-${this.status}` : this.cause_;
  }
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
}

const RETRYABLE_STATUS = new Set([408, 425, 429, 500, 502, 503, 504, 520, 521, 522, 523, 524]);

export async function fetchPage(url: string, opts: FetchOptions): Promise<FetchedPage> {
  const timeout = AbortSignal.timeout(opts.timeoutMs);
  const signal = opts.signal ? AbortSignal.any([timeout, opts.signal]) : timeout;
  let current = url;
  for (let hop = 0; ; hop++) {
    const dispatcher = dispatcherFor(current, opts);
    let res: Response;
    try {
      res = await fetch(current, {
        dispatcher,
        redirect: 'manual',
        signal,
        headers: { 'user-agent': opts.userAgent, accept: 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.5', ...opts.headers },
      });
    } catch (err) {
      throw networkFailure(err, current, timeout.aborted);
    }
    if (res.status >= 300 && res.status < 400 && res.headers.has('location')) {
      await res.body?.cancel().catch(() => undefined);
      if (hop >= opts.maxRedirects) {
        throw new FetchFailure('redirects', `more than ${opts.maxRedirects} redirects from ${url}`, false, res.status);
      }
      try {
        current = new URL(res.headers.get('location')!, current).href;
      } catch {
        throw new FetchFailure('invalid-url', `redirect to an invalid URL from ${current}`, false, res.status);
      }
      if (!/^https?:$/.test(new URL(current).protocol)) {
        throw new FetchFailure('blocked', `redirect to a non-http URL: ${current}`, false, res.status);
      }
      continue;
    }
    if (res.status >= 400) {
      await res.body?.cancel().catch(() => undefined);
      const retryable = RETRYABLE_STATUS.has(res.status);
      throw new FetchFailure('http', `HTTP ${res.status} for ${current}`, retryable, res.status, retryAfter(res.headers.get('retry-after')));
    }
    const contentType = res.headers.get('content-type');
    const isHtml = contentType === null || /\b(text\/html|application\/xhtml\+xml)\b/i.test(contentType);
    const { body, bytes } = await readCapped(res, opts.maxBytes, current, timeout);
    return { url, finalUrl: current, status: res.status, contentType, isHtml, body: isHtml || opts.keepNonHtml ? body : '', bytes, redirects: hop };
  }
}

async function readCapped(res: Response, maxBytes: number, url: string, timeout: AbortSignal): Promise<{ body: string; bytes: number }> {
  const declared = Number(res.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > maxBytes) {
    await res.body?.cancel().catch(() => undefined);
    throw new FetchFailure('too-large', `${url} is ${declared} bytes, over the ${maxBytes}-byte limit`, false, res.status);
  }
  if (!res.body) return { body: '', bytes: 0 };
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.byteLength;
      if (bytes > maxBytes) {
        await reader.cancel().catch(() => undefined);
        throw new FetchFailure('too-large', `${url} is over the ${maxBytes}-byte limit`, false, res.status);
      }
      chunks.push(value);
    }
  } catch (err) {
    if (err instanceof FetchFailure) throw err;
    throw networkFailure(err, url, timeout.aborted);
  }
  // TextDecoder replaces invalid UTF-8 instead of throwing: a broken page still parses.
  const charset = /charset=([^;]+)/i.exec(res.headers.get('content-type') ?? '')?.[1]?.trim().toLowerCase();
  let decoder: TextDecoder;
  try {
    decoder = new TextDecoder(charset ?? 'utf-8');
  } catch {
    decoder = new TextDecoder('utf-8');
  }
  return { body: decoder.decode(Buffer.concat(chunks)), bytes };
}

function networkFailure(err: unknown, url: string, timedOut: boolean): FetchFailure {
  if (timedOut) return new FetchFailure('timeout', `timed out fetching ${url}`, true);
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } | PrivateAddressError };
  if (e.name === 'AbortError') return new FetchFailure('network', `fetch of ${url} was aborted`, true);
  if (e.cause instanceof PrivateAddressError) return blocked(new URL(url).host);
  const code = e.cause?.code ?? '';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return new FetchFailure('dns', `cannot resolve the host of ${url} (${code})`, code === 'EAI_AGAIN');
  const detail = code || e.cause?.message || e.message || String(err);
  return new FetchFailure('network', `network error fetching ${url}: ${detail}`, true);
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

function blocked(host: string): FetchFailure {
  return new FetchFailure('blocked', `${host} resolves to a private address; set scope.allowPrivate to crawl it`, false);
}
