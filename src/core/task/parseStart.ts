import type { PageRule, SitemapStart, StartUrl, UrlPattern } from './model';
import { matchesAny } from '../url/patterns';
import { buildRequest } from '../request/build';
import { parseSince } from '../sitemap/lastmod';
import { REQUEST_KEYS, requestTemplate } from './requests';
import { checkStartUrl, type Checker } from './checker';
import type { Path } from './diagnosticSink';
import type { RuleRefCheck } from './parseRules';
import type { RawStart, RawTask } from './rawTask';
import { quote } from './wording';

// A task's `start`: pages (a URL, or a request that sends more than a GET or counts pages) and sitemaps, each
// routed to its rule.

/** Most start URLs a task file may list. */
export const MAX_START_URLS = 10_000;

export const BULK_URLS_HINT =
  'for bulk URLs, list a few start pages and let the crawl follow links, or add them to a run from a file with `crawl-studio enqueue <task.crawl.yaml> --file urls.txt` (one URL a line, `-` for stdin)';

/** The start pages and sitemaps of a task file, each routed to its rule (its own `rule:`, else by `match`). */
export function buildStart(
  raw: RawTask,
  rules: readonly PageRule[],
  checkRuleRef: RuleRefCheck,
  c: Checker,
): { start: StartUrl[]; sitemaps: SitemapStart[] } {
  const diags = c.diags;
  const start: StartUrl[] = [];
  const sitemaps: SitemapStart[] = [];
  if (raw.start.length > MAX_START_URLS) {
    diags.atPath(
      ['start'],
      `${raw.start.length} start URLs, more than the ${MAX_START_URLS} a task file may list; ${BULK_URLS_HINT}`,
    );
  }
  raw.start.slice(0, MAX_START_URLS).forEach((s, i) => {
    const entry: Exclude<RawStart, string> = typeof s === 'string' ? { url: s } : s;
    if (entry.rule !== undefined) checkRuleRef(['start', i, 'rule'], entry.rule);
    if (entry.sitemap !== undefined || entry.url === undefined) {
      const sm = sitemapStart(entry, ['start', i], c);
      if (sm) sitemaps.push(sm);
      if (sm && sm.rule === null && !rules.some((r) => r.match.length > 0)) {
        // Listed pages are routed as links are, by `match`: with none anywhere, the sitemap would crawl nothing.
        diags.atPath(
          ['start', i],
          `no rule has 'match', so every page this sitemap lists would be dropped (no-rule): add 'rule: ${rules[0]?.name ?? '<rule>'}' to the entry, or 'match' to a rule`,
          'warning',
          'sitemap',
        );
      }
      return;
    }
    // A start entry that sends more than a GET, or counts pages: its first request's URL is the one checked.
    const isRequest =
      typeof s !== 'string' && (REQUEST_KEYS.some((k) => entry[k] !== undefined) || /\{[A-Za-z_]/.test(entry.url));
    const request = isRequest ? requestTemplate(entry, ['start', i], 'start', [], c.report) : null;
    if (isRequest && !request) return;
    const first = request ? buildRequest(request, {}, undefined, { start: start.length }) : null;
    const url = checkStartUrl(
      typeof s === 'string' ? ['start', i] : ['start', i, 'url'],
      first?.ok ? first.built.url : entry.url,
      diags,
    );
    if (!url) return;
    for (const k of ['since', 'follow', 'alternates'] as const) {
      if (entry[k] !== undefined)
        diags.atPath(
          ['start', i],
          `'${k}' is for sitemaps: write 'sitemap: ${url.href}' instead of 'url:' if this is one`,
          'error',
          k,
        );
    }
    const byMatch = rules.find((r) => matchesAny(url.href, r.match));
    start.push({
      url: url.href,
      rule: entry.rule ?? byMatch?.name ?? rules[0]?.name ?? '',
      priority: entry.priority ?? null,
      request,
    });
  });
  return { start, sitemaps };
}

/** A `start` entry with `sitemap:` (see SitemapStart); null when it has a mistake, reported at its field. */
function sitemapStart(entry: Exclude<RawStart, string>, path: Path, c: Checker): SitemapStart | null {
  const diags = c.diags;
  if (entry.sitemap === undefined) {
    diags.atPath(path, `give the entry a 'url' (a page) or a 'sitemap' (a sitemap.xml or robots.txt)`);
    return null;
  }
  if (entry.url !== undefined) {
    diags.atPath(
      path,
      `give either 'url' (a page) or 'sitemap', not both: write a second entry for the other`,
      'error',
      'url',
    );
    return null;
  }
  for (const k of REQUEST_KEYS) {
    if (entry[k] !== undefined) diags.atPath(path, `'${k}' is for requests: a sitemap is read with a GET`, 'error', k);
  }
  const url = checkStartUrl([...path, 'sitemap'], entry.sitemap, diags);
  let ok = url !== null;
  let since = null;
  if (entry.since !== undefined) {
    since = parseSince(entry.since);
    if (!since) {
      diags.atPath(
        [...path, 'since'],
        `${quote(entry.since)} is neither a date (2026-01-01, 2026-01-01T08:00:00Z) nor an age (30d, 12h, 2w, 90m)`,
      );
      ok = false;
    }
  }
  const follow = (entry.follow ?? []).map((f, i) => c.pattern([...path, 'follow', i], f));
  if (!ok || !url || follow.includes(null)) return null;
  return {
    url: url.href,
    // Only the file itself: /robots.txt?x or /a/robots.txt are ordinary URLs a site may answer with a sitemap.
    robots: url.pathname === '/robots.txt' && url.search === '',
    rule: entry.rule ?? null,
    priority: entry.priority ?? null,
    since,
    follow: follow as UrlPattern[],
    alternates: entry.alternates ?? false,
  };
}
