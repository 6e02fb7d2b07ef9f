import type { UrlPattern } from '../task/model';

// URL patterns in task files, read the way they look:
//   - `/author/*`          a path glob, matched against the URL's path and query on any host the scope allows
//   - `https://a.com/**`   a full-URL glob, matched against the whole absolute URL
//   - `**/author/*`        a glob starting with `**`, the whole URL too
//   - `re:^https://a\.com/book-\d+$`   a regular expression, matched anywhere in the URL unless anchored
// In globs `**` crosses '/', `*` stays within a path segment and `?` is one character. `/regex/` once meant a
// regular expression, which made `/page/*/` the regex `page/*` and `/1/` match every URL on 127.0.0.1; a pattern
// starting with `/` is now always a path, and one that only makes sense as a regex is refused with the fix.

/** A pattern that cannot be compiled, with the message (and fix) to show at its place in the task file. */
export class UrlPatternError extends Error {}

/** Characters a path glob has no use for but an old `/regex/` usually has: such a pattern is refused, not guessed. */
const REGEX_SYNTAX = /[\\()|^$+{}[\]]/;

export function compileUrlPattern(source: string): UrlPattern {
  if (source.startsWith('re:')) return { source, regex: new RegExp(source.slice(3)) };
  if (source.startsWith('/')) {
    const old = /^\/(.+)\/([imsu]*)$/.exec(source);
    if (old && (old[2] || REGEX_SYNTAX.test(old[1]!))) {
      throw new UrlPatternError(
        `${cut(source)} starts with '/', so it is a path glob now, and it looks like a regular expression: write it as ${cut(`re:${old[1]}`)}` +
          (old[2] ? ` (flags are not supported; '${old[2]}' has to go, e.g. [Aa] for a case-insensitive letter)` : '') +
          ' — or, for a path, drop the regex syntax',
      );
    }
    return { source, regex: new RegExp(`^[a-zA-Z][a-zA-Z0-9+.-]*://[^/?#]*${globBody(source)}$`) };
  }
  return { source, regex: globToRegExp(source) };
}

/** A pattern quoted for a message, cut: a 40 KB pattern must not be repeated in full (twice). */
function cut(s: string): string {
  return s.length > 120 ? `'${s.slice(0, 119)}…' (${s.length} chars)` : `'${s}'`;
}

export function globToRegExp(glob: string): RegExp {
  return new RegExp(`^${globBody(glob)}$`);
}

function globBody(glob: string): string {
  let out = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*') {
      if (glob[i + 1] === '*') {
        out += '.*';
        i++;
      } else {
        out += '[^/]*';
      }
    } else if (c === '?') {
      out += '[^/]';
    } else {
      out += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
    }
  }
  return out;
}

export function matchesAny(url: string, patterns: readonly UrlPattern[]): UrlPattern | null {
  for (const p of patterns) if (p.regex.test(url)) return p;
  return null;
}
