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
  let u: URL;
  try {
    u = new URL(input.trim(), base);
  } catch {
    return { ok: false, reason: 'invalid' };
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return { ok: false, reason: 'scheme' };
  if (u.username || u.password) return { ok: false, reason: 'credentials' };
  u.hash = '';
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
