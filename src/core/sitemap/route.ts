import type { KeptLink } from '../pipeline/page';
import { routeRule } from '../pipeline/page';
import type { CrawlTask, SitemapStart } from '../task/model';
import { canonicalize } from '../url/canonical';
import { isLocalHostname } from '../url/hosts';
import { matchesAny } from '../url/patterns';
import { decideLink } from '../url/scope';
import { parseLastmod, sinceCutoff } from './lastmod';
import type { SitemapEntry } from './parser';

// What a sitemap's entries become: pages to crawl, routed and checked exactly as links are (scope, rules), and
// sitemaps of an index to read next, each kept or counted as dropped with a reason. Pure, so it is tested without
// a server; the worker feeds it the parser's entries batch by batch.

/** Entries read from one sitemap at most, as the protocol limits a sitemap; the rest are counted, not crawled. */
export const MAX_SITEMAP_ENTRIES = 50_000;
/** Bytes of one sitemap read at most, after decompressing (the protocol's 50 MB): a gzip bomb stops here. */
export const MAX_SITEMAP_BYTES = 50 * 1024 * 1024;
/** Sitemap indexes nest this deep at most (the protocol says not at all; sites do, and loops must end). */
export const MAX_SITEMAP_NESTING = 5;

export interface RoutedEntries {
  /** Pages and sitemaps to enqueue (a sitemap's has `sitemap` set). */
  readonly links: KeptLink[];
  /** Entries not enqueued, by reason: a scope reason, 'no-rule', 'repeat', 'since', 'follow', 'nesting', 'sitemap-limit'. */
  readonly dropped: Record<string, number>;
}

export interface SitemapContext {
  readonly task: CrawlTask;
  /** The index of the task's `sitemaps` entry. */
  readonly entry: number;
  /** The sitemap's URL, the base of relative <loc>s. */
  readonly url: string;
  /** How deep in sitemap indexes this sitemap is (0: named by the task or its robots.txt). */
  readonly level: number;
  /** When the sitemap is read, for an age in `since`. */
  readonly nowMs: number;
}

/** Routes one sitemap's entries, batch after batch, counting them against MAX_SITEMAP_ENTRIES. */
export class SitemapRouter {
  private seen = 0;
  private readonly spec: SitemapStart;
  private readonly cutoff: number | null;

  constructor(private readonly ctx: SitemapContext) {
    this.spec = ctx.task.sitemaps[ctx.entry]!;
    this.cutoff = this.spec.since ? sinceCutoff(this.spec.since, ctx.nowMs) : null;
  }

  /** Entries read so far, the dropped ones included. */
  get entries(): number {
    return this.seen;
  }

  route(entries: readonly SitemapEntry[]): RoutedEntries {
    const links: KeptLink[] = [];
    const dropped: Record<string, number> = {};
    const drop = (reason: string) => (dropped[reason] = (dropped[reason] ?? 0) + 1);
    // Repeats within a batch, as on a page: one discover call marks a URL seen once. Across batches Redis counts them.
    const inBatch = new Set<string>();
    const keep = (link: KeptLink) => {
      if (inBatch.has(link.url)) return drop('repeat');
      inBatch.add(link.url);
      links.push(link);
    };
    for (const e of entries) {
      if (++this.seen > MAX_SITEMAP_ENTRIES) {
        drop('sitemap-limit');
        continue;
      }
      const lastmod = parseLastmod(e.lastmod);
      if (this.cutoff !== null && lastmod !== null && lastmod < this.cutoff) {
        drop('since');
        continue;
      }
      if (e.kind === 'sitemap') {
        const child = this.childSitemap(e.loc, lastmod);
        if (typeof child === 'string') drop(child);
        else keep(child);
        continue;
      }
      for (const loc of [e.loc, ...e.alternates]) {
        const page = this.page(loc, lastmod);
        if (typeof page === 'string') drop(page);
        else keep(page);
      }
    }
    return { links, dropped };
  }

  /** A page the sitemap lists: a start page (depth 0) as far as `scope.maxDepth` goes. */
  private page(loc: string, lastmod: number | null): KeptLink | string {
    const d = decideLink(this.ctx.task, loc, this.ctx.url, 0);
    if (!d.ok) return d.reason;
    const rule = routeRule(this.ctx.task, d.url, this.spec.rule);
    if (!rule) return 'no-rule';
    return {
      url: d.url,
      host: d.host,
      rule: rule.name,
      depth: 0,
      priority: this.spec.priority,
      follow: -1,
      ...(lastmod !== null ? { lastmod } : {}),
    };
  }

  private childSitemap(loc: string, lastmod: number | null): KeptLink | string {
    if (this.ctx.level + 1 > MAX_SITEMAP_NESTING) return 'nesting';
    const d = decideSitemap(this.ctx.task, loc, this.ctx.url);
    if (!d.ok) return d.reason;
    if (this.spec.follow.length > 0 && !matchesAny(d.url, this.spec.follow)) return 'follow';
    return {
      url: d.url,
      host: d.host,
      rule: this.spec.rule ?? '',
      depth: this.ctx.level + 1,
      priority: this.spec.priority,
      follow: -1,
      sitemap: this.ctx.entry,
      ...(lastmod !== null ? { lastmod } : {}),
    };
  }
}

export type SitemapDecision =
  { readonly ok: true; readonly url: string; readonly host: string } | { readonly ok: false; readonly reason: string };

/**
 * Whether a sitemap named by an index or a robots.txt may be read. Not `decideLink`: `scope.allow` lists the pages
 * a crawl wants (`**\/products/**`), and a sitemap rarely matches those, so a sitemap is read when it is on a start
 * host or `allow` matches it, and not denied. Private hosts are refused as for links.
 */
export function decideSitemap(task: CrawlTask, href: string, base: string): SitemapDecision {
  const c = canonicalize(href, base, task.canonical);
  if (!c.ok) return { ok: false, reason: c.reason };
  const { scope } = task;
  const startHost = scope.startHosts.includes(c.host);
  if (!startHost && !scope.allowPrivate && isLocalHostname(new URL(c.url).hostname))
    return { ok: false, reason: 'private' };
  if (!startHost && !matchesAny(c.url, scope.allow)) return { ok: false, reason: 'offsite' };
  if (matchesAny(c.url, scope.deny)) return { ok: false, reason: 'denied' };
  return { ok: true, url: c.url, host: c.host };
}
