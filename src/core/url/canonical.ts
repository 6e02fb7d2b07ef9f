import type { CanonicalOptions } from '../task/model';

// Canonical form of a URL, so that one resource has one spelling before deduplication. The rules, in order:
// 1. Parsed by WHATWG URL: scheme and host lower-cased, IDNs to punycode, default ports (80/443) removed,
//    dot segments resolved, an empty path becomes "/".
// 2. The fragment is dropped (it never reaches the server).
// 3. Percent-encoding is normalised: escapes of unreserved characters (A-Z a-z 0-9 - . _ ~) are decoded,
//    all other escapes upper-cased, in the path and in the query.
// 4. Query parameters matching `dropParams` are removed; with `sortQuery` the rest are sorted by name
//    (stable, so repeated names keep their order); an empty query loses its "?".
// 5. With `stripTrailingSlash`, "/a/" becomes "/a" (never the root "/").

export type CanonicalResult =
  | { readonly ok: true; readonly url: string; readonly host: string }
  | { readonly ok: false; readonly reason: 'invalid' | 'scheme' | 'credentials' | 'too-long' };

/** Longer URLs are refused: they are almost always traps, and they bound what page content puts in Redis. */
export const MAX_URL_LENGTH = 2048;

export function canonicalize(input: string, base: string | undefined, opts: CanonicalOptions): CanonicalResult {
  const href = input.trim();
  const key = memoKey(href, base);
  if (key === null) return compute(href, base, opts);
  let memo = memos.get(opts);
  if (!memo) memos.set(opts, (memo = new Map<string, CanonicalResult>()));
  let r = memo.get(key);
  if (r === undefined) {
    if (memo.size >= MEMO_ENTRIES) memo.clear();
    memo.set(key, (r = compute(href, base, opts)));
  }
  return r;
}

// A site's links repeat from page to page (navigation, pagination, related items), so most links a crawl
// canonicalises it has seen before: the result is remembered, per task's options, under a key holding everything
// it depends on. An absolute http(s) URL, or one of another scheme (refused), depends only on itself; a
// path-absolute reference ("/a/b") on the base's scheme and authority; a relative path ("b.html", "../c") on the
// base's directory. A query or fragment alone ("?q", "#f", "http:?q") depends on the whole base, and "//host",
// backslashes and control characters on parsing details: those, and bases that are not plain http(s) URLs, are
// computed every time. Bounded: the memo starts over when full.
const memos = new WeakMap<CanonicalOptions, Map<string, CanonicalResult>>();
const MEMO_ENTRIES = 20_000;
const ABSOLUTE = /^https?:\/\//i;
const OTHER_SCHEME = /^(?!https?:)[a-z][a-z0-9+.-]*:/i;
const HTTP_SCHEME = /^https?:/i;
const PATH_ABSOLUTE = /^\/(?![/\\])/;
// The C0 controls and DEL (what is not printable ASCII or beyond ASCII).
const CONTROL = /[^\x20-\x7e\x80-\uffff]/;
/** A plain http(s) base: scheme, authority, then the path up to its last '/', if any. */
const BASE = /^(https?:\/\/[^\s\\/?#]*)((?:\/[^\s\\?#]*)?)(?:[?#]|$)/i;

function memoKey(href: string, base: string | undefined): string | null {
  if (href.length > MAX_URL_LENGTH || CONTROL.test(href)) return null;
  const b = base === undefined ? null : BASE.exec(base);
  if (base !== undefined && !b) return null;
  if (ABSOLUTE.test(href) || OTHER_SCHEME.test(href)) return href;
  // "http:x" is relative to an http base, like what follows the colon ("http:" alone is the whole base).
  if (!b || HTTP_SCHEME.test(href)) return null;
  const first = href.charAt(0);
  if (first === '' || first === '?' || first === '#') return null;
  if (first === '/' || first === '\\') return PATH_ABSOLUTE.test(href) ? `${b[1]}\n${href}` : null;
  const path = b[2]!;
  return `${b[1]}${path.slice(0, path.lastIndexOf('/') + 1)}\n${href}`;
}

function compute(href: string, base: string | undefined, opts: CanonicalOptions): CanonicalResult {
  let u: URL;
  try {
    u = new URL(href, base);
  } catch {
    return { ok: false, reason: 'invalid' };
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return { ok: false, reason: 'scheme' };
  if (u.username || u.password) return { ok: false, reason: 'credentials' };
  // The fragment is left out by building the URL from its parts (setting u.hash would re-parse it).
  let path = normaliseEscapes(u.pathname);
  if (opts.stripTrailingSlash && path.length > 1 && path.endsWith('/')) path = path.replace(/\/+$/, '') || '/';
  const query = canonicalQuery(u.search, opts);
  const url = `${u.protocol}//${u.host}${path}${query}`;
  if (url.length > MAX_URL_LENGTH) return { ok: false, reason: 'too-long' };
  return { ok: true, url, host: u.host };
}

function canonicalQuery(search: string, opts: CanonicalOptions): string {
  if (search.length <= 1) return '';
  let pairs = search
    .slice(1)
    .split('&')
    .filter((p) => p.length > 0)
    .map((p) => {
      const eq = p.indexOf('=');
      const name = normaliseEscapes(eq < 0 ? p : p.slice(0, eq));
      const value = eq < 0 ? null : normaliseEscapes(p.slice(eq + 1));
      return { name, value };
    });
  if (opts.dropParams.length > 0) {
    pairs = pairs.filter((p) => !opts.dropParams.some((re) => re.test(safeDecode(p.name))));
  }
  if (opts.sortQuery) pairs.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  if (pairs.length === 0) return '';
  return '?' + pairs.map((p) => (p.value === null ? p.name : `${p.name}=${p.value}`)).join('&');
}

const UNRESERVED = /[A-Za-z0-9\-._~]/;

function normaliseEscapes(s: string): string {
  if (!s.includes('%')) return s;
  return s.replace(/%([0-9a-fA-F]{2})/g, (_, hex: string) => {
    const ch = String.fromCharCode(parseInt(hex, 16));
    return UNRESERVED.test(ch) ? ch : `%${hex.toUpperCase()}`;
  });
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
