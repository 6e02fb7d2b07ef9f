import type { CrawlTask, PageRule } from '../task/model';
import { extractPage, type ExtractedItem, type ItemProblem } from '../extract/extract';
import { decideLink, type DropReason } from '../url/scope';
import { matchesAny } from '../url/patterns';

// What one fetched page yields: items, problems, and the links it would enqueue, each kept or dropped with a
// reason. Pure, so the worker and the designer preview run exactly this.

export interface KeptLink {
  readonly url: string;
  readonly host: string;
  readonly rule: string;
  readonly depth: number;
  readonly priority: number | null;
  readonly follow: number;
  /** A sitemap to read, not a page: the index of the task's `sitemaps` entry whose settings apply to it. */
  readonly sitemap?: number;
  /** The sitemap's <lastmod> of the page (or sitemap), ms since the epoch. */
  readonly lastmod?: number;
}

export interface DroppedLink {
  readonly url: string;
  readonly reason: DropReason | 'no-rule' | 'repeat';
  readonly follow: number;
  readonly detail?: string;
}

export interface PageOutcome {
  readonly items: ExtractedItem[];
  readonly problems: ItemProblem[];
  readonly kept: KeptLink[];
  readonly dropped: DroppedLink[];
}

export interface PageInput {
  /** The page's URL after redirects: links resolve against it. */
  readonly url: string;
  readonly html: string;
  readonly rule: PageRule;
  readonly depth: number;
  /** The URL as queued, when redirects moved the page (default: `url`). This and the rest are what `page:` fields read. */
  readonly requestedUrl?: string;
  /** The HTTP status, where known. */
  readonly status?: number | null;
  /** When the page was fetched (ms since the epoch), where known. */
  readonly fetchedAt?: number | null;
}

export function analysePage(task: CrawlTask, page: PageInput): PageOutcome {
  const facts = { url: page.requestedUrl ?? page.url, finalUrl: page.url, status: page.status ?? null, fetchedAt: page.fetchedAt ?? null };
  const ex = extractPage(page.html, facts, page.rule);
  const kept: KeptLink[] = [];
  const dropped: DroppedLink[] = [];
  const seenOnPage = new Set<string>();
  const depth = page.depth + 1;
  for (const link of ex.links) {
    const d = decideLink(task, link.href, ex.baseUrl, depth);
    if (!d.ok) {
      dropped.push({ url: d.url, reason: d.reason, follow: link.follow, ...(d.detail ? { detail: d.detail } : {}) });
      continue;
    }
    if (seenOnPage.has(d.url)) {
      dropped.push({ url: d.url, reason: 'repeat', follow: link.follow });
      continue;
    }
    const rule = routeRule(task, d.url, link.to);
    if (!rule) {
      dropped.push({ url: d.url, reason: 'no-rule', follow: link.follow });
      continue;
    }
    seenOnPage.add(d.url);
    kept.push({ url: d.url, host: d.host, rule: rule.name, depth, priority: link.priority, follow: link.follow });
  }
  return { items: ex.items, problems: ex.problems, kept, dropped };
}

/** The rule that handles a URL: the one a link names, else the first whose `match` matches. */
export function routeRule(task: CrawlTask, url: string, to: string | null): PageRule | null {
  if (to !== null) return task.rules.find((r) => r.name === to) ?? null;
  return task.rules.find((r) => matchesAny(url, r.match)) ?? null;
}

export function ruleByName(task: CrawlTask, name: string): PageRule | null {
  return task.rules.find((r) => r.name === name) ?? null;
}
