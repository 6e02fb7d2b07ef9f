// A waiting page as the compact frontier keeps it: one short string in a list of its host and priority band
// (lua/frontier.lua). The host and the band are in the list's key, so a record holds only what differs per page:
//
//   <meta> <rule> <path and query>
//
// `meta` is the scheme ('s' https, 'h' http) and the depth in base 36, then optional pieces, each '.', a letter and
// a value: `.l<lastmod, ms, base 36>`, `.m<sitemap entry index>`, `.f<force stamp, base 36>` (a forced fetch of a
// seen URL, with its own job id), `.u` (the last field is the whole URL: one whose text does not start with
// "<scheme>://<host>", which canonical URLs always do), and for a page that is more than a plain GET of its URL
// `.k<16 hex digits>` (the fingerprint of its request's deduplication key, core/request/build.ts requestKey: its
// page id) and `.x<base64url of JSON>` (its request and its series, as its job carries them). Neither meta nor a
// canonical URL holds a space, so the rule (any name, spaces included) is what lies between the first and the last
// space. The scripts rebuild the URL the same way (fUrlOf) to name the page's job by its fingerprint, or take `.k`:
// the two must agree.

import { fingerprintHex } from '../core/url/fingerprint';
import { requestKey, type JobRequest, type SeriesRef } from '../core/request/build';

export interface FrontierPage {
  /** Canonical URL. */
  readonly url: string;
  readonly rule: string;
  readonly depth: number;
  /** The index of the task's `sitemaps` entry, for a sitemap's page. */
  readonly sitemap?: number;
  /** <lastmod> of the sitemap that listed the page, ms since the epoch. */
  readonly lastmod?: number;
  /** Set on a forced fetch (`enqueue --force`): makes its job id differ from the URL's first fetch. */
  readonly force?: string;
  /** Its request when it is not a plain GET (method, body with its variables as holes: never a secret). */
  readonly request?: JobRequest;
  /** A page of a series (`{page}`). */
  readonly series?: SeriesRef;
}

/** The page's id in the frontier and the tail of its job id: its deduplication key's fingerprint, and force stamp. */
export function pageIdOf(page: Pick<FrontierPage, 'url' | 'request' | 'force'>): string {
  const fp = fingerprintHex(requestKey(page.url, page.request));
  return page.force !== undefined ? `${fp}.${page.force}` : fp;
}

export interface EncodedPage {
  readonly host: string;
  readonly record: string;
}

export function encodePage(page: FrontierPage, host: string): EncodedPage {
  const https = page.url.startsWith('https://');
  const origin = `${https ? 'https' : 'http'}://${host}`;
  const inline =
    page.url.startsWith(origin) &&
    (page.url.length === origin.length || page.url[origin.length] === '/' || page.url[origin.length] === '?');
  let meta = `${https ? 's' : 'h'}${page.depth.toString(36)}`;
  if (page.lastmod !== undefined) meta += `.l${Math.max(0, Math.round(page.lastmod)).toString(36)}`;
  if (page.sitemap !== undefined) meta += `.m${page.sitemap}`;
  if (page.force !== undefined) meta += `.f${page.force}`;
  if (page.request) meta += `.k${fingerprintHex(requestKey(page.url, page.request))}`;
  if (page.request || page.series) {
    const extra = { ...(page.request ? { q: page.request } : {}), ...(page.series ? { s: page.series } : {}) };
    meta += `.x${Buffer.from(JSON.stringify(extra)).toString('base64url')}`;
  }
  if (!inline) meta += '.u';
  return { host, record: `${meta} ${page.rule} ${inline ? page.url.slice(origin.length) : page.url}` };
}

export function decodePage(host: string, record: string): FrontierPage {
  const first = record.indexOf(' ');
  const last = record.lastIndexOf(' ');
  if (first < 1 || last < first) throw new Error(`not a frontier record: ${JSON.stringify(record.slice(0, 200))}`);
  const meta = record.slice(0, first);
  const rest = record.slice(last + 1);
  const pieces = meta.split('.');
  const head = pieces[0]!;
  let url = `${head[0] === 's' ? 'https' : 'http'}://${host}${rest}`;
  const page: { -readonly [K in keyof FrontierPage]: FrontierPage[K] } = {
    url,
    rule: record.slice(first + 1, last),
    depth: parseInt(head.slice(1), 36) || 0,
  };
  for (const p of pieces.slice(1)) {
    const v = p.slice(1);
    if (p[0] === 'l') page.lastmod = parseInt(v, 36);
    else if (p[0] === 'm') page.sitemap = Number(v);
    else if (p[0] === 'f') page.force = v;
    else if (p[0] === 'u') url = rest;
    else if (p[0] === 'x') {
      const extra = JSON.parse(Buffer.from(v, 'base64url').toString()) as { q?: JobRequest; s?: SeriesRef };
      if (extra.q) page.request = extra.q;
      if (extra.s) page.series = extra.s;
    }
  }
  page.url = url;
  return page;
}

/** A stamp that makes a forced fetch's job id differ from the URL's other fetches. */
export function forceStamp(now = Date.now(), seq = 0): string {
  return seq === 0 ? now.toString(36) : `${now.toString(36)}${seq.toString(36)}`;
}
