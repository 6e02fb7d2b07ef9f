import type { Page } from 'playwright-core';
import type { BrowserSpec } from '../../core/task/model';
import { FetchFailure, type FetchedPage, type FetchOptions } from '../fetcher';
import { BrowserGoneError, type BrowserPool } from './pool';
import { refusal } from './guard';

// A page rendered in the browser, handed on as a FetchedPage: from here it takes exactly the path of a fetched
// page (analysis thread, extraction, follow, discovery, store). Failures are FetchFailures with the fetcher's
// meanings, so retries and failure counts treat a render as they treat a request.

const RETRYABLE_STATUS = new Set([408, 425, 429, 500, 502, 503, 504, 520, 521, 522, 523, 524]);

/** Time past a render's own timeout after which its browser is taken as hung. */
export const HUNG_GRACE_MS = 10_000;

export interface PageRenderer {
  render(url: string, spec: BrowserSpec, opts: FetchOptions): Promise<FetchedPage>;
}

/** A renderer on `pool`: one page a render, in a context of its own. */
export function poolRenderer(pool: BrowserPool): PageRenderer {
  return {
    async render(url, spec, opts) {
      try {
        return await pool.withPage(
          { userAgent: opts.userAgent, extraHTTPHeaders: { ...opts.headers }, serviceWorkers: 'block', acceptDownloads: false },
          spec.timeoutMs + HUNG_GRACE_MS,
          (page) => renderOn(page, url, spec, opts),
        );
      } catch (err) {
        throw asFailure(err, url, spec);
      }
    },
  };
}

async function renderOn(page: Page, url: string, spec: BrowserSpec, opts: FetchOptions): Promise<FetchedPage> {
  const guard = { block: spec.block, privateAllowed: opts.privateAllowed };
  const hosts = new Map<string, Promise<boolean>>();
  if ((await refusal(url, 'document', { ...guard, block: [] }, hosts)) === 'private-address') {
    throw new FetchFailure('blocked', `${new URL(url).host} resolves to a private address (set scope.allowPrivate to crawl it)`, false);
  }
  await page.route('**/*', async (route) => {
    const req = route.request();
    const why = await refusal(req.url(), req.resourceType(), guard, hosts);
    await (why ? route.abort(why === 'blocked' ? 'blockedbyclient' : 'addressunreachable') : route.continue()).catch(() => undefined);
  });
  const deadline = Date.now() + spec.timeoutMs;
  const left = () => Math.max(1, deadline - Date.now());
  const waitUntil = spec.waitFor.kind === 'domcontentloaded' || spec.waitFor.kind === 'networkidle' ? spec.waitFor.kind : 'load';
  const response = await page.goto(url, { waitUntil, timeout: left() });
  const status = response?.status() ?? 200;
  const contentType = (await response?.headerValue('content-type').catch(() => null)) ?? null;
  if (status >= 400) {
    throw new FetchFailure('http', `HTTP ${status}`, RETRYABLE_STATUS.has(status), status);
  }
  const isHtml = contentType === null || /\b(text\/html|application\/xhtml\+xml)\b/i.test(contentType);
  if (!isHtml) {
    const bytes = Number((await response?.headerValue('content-length').catch(() => null)) ?? 0) || 0;
    return { url, finalUrl: page.url(), status, contentType, isHtml: false, body: '', bytes, redirects: 0 };
  }
  if (spec.waitFor.kind === 'selector') await page.waitForSelector(spec.waitFor.selector, { state: 'attached', timeout: left() });
  else if (spec.waitFor.kind === 'delay') await page.waitForTimeout(Math.min(spec.waitFor.ms, left()));
  const body = await contentOf(page, left);
  const bytes = Buffer.byteLength(body);
  if (bytes > opts.maxBytes) throw new FetchFailure('too-large', `the rendered page is ${bytes} bytes, over request.maxBytes (${opts.maxBytes})`, false);
  return { url, finalUrl: page.url(), status, contentType, isHtml: true, body, bytes, redirects: response?.request().redirectedFrom() ? 1 : 0 };
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

  override get group(): string {
    return `browser-${this.kind}`;
  }
}

function asFailure(err: unknown, url: string, spec: BrowserSpec): Error {
  if (err instanceof FetchFailure) return err;
  if (err instanceof BrowserGoneError) {
    return new BrowserFailure(err.kind, `${err.message} (rendering ${url})`);
  }
  const message = err instanceof Error ? err.message.split('\n')[0]! : String(err);
  if (err instanceof Error && err.name === 'TimeoutError') {
    const what = spec.waitFor.kind === 'selector' ? `waiting for '${spec.waitFor.selector}'` : `waiting for ${spec.waitFor.kind}`;
    return new FetchFailure('timeout', `render timed out after ${spec.timeoutMs} ms, ${what}`, true);
  }
  if (/ERR_ADDRESS_UNREACHABLE/.test(message)) return new FetchFailure('blocked', `refused: ${message}`, false);
  if (/ERR_NAME_NOT_RESOLVED/.test(message)) return new FetchFailure('dns', message, true);
  return new FetchFailure('network', message, true);
}
