import type { UrlPattern } from '../task/model';

// URL patterns in task files: `/regex/` or a glob where `**` crosses '/', `*` stays within a path segment
// and `?` is one character. Globs match the whole URL; regexes match anywhere unless anchored.

export function compileUrlPattern(source: string): UrlPattern {
  const re = /^\/(.+)\/([imsu]*)$/.exec(source);
  if (re) return { source, regex: new RegExp(re[1]!, re[2]) };
  return { source, regex: globToRegExp(source) };
}

export function globToRegExp(glob: string): RegExp {
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
  return new RegExp(`^${out}$`);
}

export function matchesAny(url: string, patterns: readonly UrlPattern[]): UrlPattern | null {
  for (const p of patterns) if (p.regex.test(url)) return p;
  return null;
}
