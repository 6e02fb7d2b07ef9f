import type { SitemapEntry, SitemapFormat } from '../sitemap/parser';
import { SitemapRouter } from '../sitemap/route';
import type { CrawlTask, SitemapStart } from '../task/model';
import { canonicalize } from '../url/canonical';
import type { SitemapView } from './protocol';

// The designer's preview of a sitemap, pure: the entries a sitemap (or a robots.txt's Sitemap: lines) lists, each
// routed as a worker routes it (core/sitemap/route.ts: the page's rule, or the child sitemap read next, or why it is
// dropped). Routing follows the task's text as it is typed; the entries are fetched once.

/** What the extension read of a sitemap, before routing. */
export interface ReadSitemap {
  readonly url: string;
  readonly finalUrl: string;
  /** 'robots': a robots.txt, whose Sitemap: lines are the entries. */
  readonly format: SitemapFormat | 'robots';
  readonly entries: readonly SitemapEntry[];
  /** Entries past the preview's limit were not read. */
  readonly truncated: boolean;
}

/** Rows shown at most (every entry is routed and counted). */
const MAX_SITEMAP_ROWS = 1000;

/** The `start` entry whose settings apply to `url`, as its index in task.sitemaps; null when none names it. */
export function sitemapEntryOf(task: CrawlTask, url: string): number | null {
  const canon = (u: string) => {
    const c = canonicalize(u, undefined, task.canonical);
    return c.ok ? c.url : u;
  };
  const i = task.sitemaps.findIndex((s) => canon(s.url) === canon(url));
  return i < 0 ? null : i;
}

export function previewSitemap(task: CrawlTask, read: ReadSitemap, nowMs: number): SitemapView {
  const named = sitemapEntryOf(task, read.url);
  // A sitemap the task does not name (a child of an index, or one typed in): routed with no `rule`, `since` or
  // `follow` of its own, as a link would be.
  const plain: SitemapStart = {
    url: read.url,
    robots: read.format === 'robots',
    rule: null,
    priority: null,
    since: null,
    follow: [],
    alternates: false,
  };
  const sitemaps = named === null ? [...task.sitemaps, plain] : task.sitemaps;
  const entry = named ?? sitemaps.length - 1;
  const router = new SitemapRouter({
    task: { ...task, sitemaps },
    entry,
    url: read.finalUrl,
    level: read.format === 'robots' ? -1 : 0,
    nowMs,
  });
  const rows: SitemapView['entries'][number][] = [];
  const dropped: Record<string, number> = {};
  let kept = 0;
  for (const e of read.entries) {
    const routed = router.route([e]);
    for (const [reason, n] of Object.entries(routed.dropped)) dropped[reason] = (dropped[reason] ?? 0) + n;
    kept += routed.links.length;
    if (rows.length >= MAX_SITEMAP_ROWS) continue;
    const link = routed.links.find((l) => l.url === e.loc) ?? routed.links[0];
    const reason = Object.keys(routed.dropped)[0] ?? null;
    rows.push({
      url: link?.url ?? e.loc,
      kind: e.kind,
      lastmod: e.lastmod,
      rule: link && e.kind === 'page' ? link.rule : null,
      dropped: link ? null : reason,
      alternates: e.kind === 'page' ? e.alternates.length : 0,
    });
  }
  return {
    url: read.url,
    format: read.format,
    settings:
      named === null
        ? 'not a sitemap the task starts from: its pages are routed by match'
        : describeSpec(task.sitemaps[named]!),
    entries: rows,
    total: read.entries.length,
    kept,
    dropped,
    truncated: read.truncated,
  };
}

/** "the task's sitemap entry: rule product, since, 2 follow patterns". */
function describeSpec(spec: SitemapStart): string {
  const parts = [
    spec.rule ? `every page to rule ${spec.rule}` : 'pages routed by match',
    spec.since ? 'older <lastmod>s skipped (since)' : '',
    spec.follow.length ? `${spec.follow.length} follow pattern(s) for its sitemaps` : '',
    spec.alternates ? 'alternates too' : '',
  ];
  return `the task's sitemap entry: ${parts.filter(Boolean).join(', ')}`;
}
