import type { CrawlTask, PageRule } from '../task/model';
import { extractPage, type ExtractedItem, type Extraction, type ItemProblem, type PageFacts } from '../extract/extract';
import { JsonPage } from '../extract/json';
import { nextInSeries, requestKey, type JobRequest, type SeriesRef } from '../request/build';
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
  /** Its request when it is not a plain GET: deduplicated by method and body too (requestKey). */
  readonly request?: JobRequest;
  /** A page of a series (`{page}`): its next page follows when it yields something. */
  readonly series?: SeriesRef;
  /** The next page of the analysed page's own series, not a link a follow found (follow is -1). */
  readonly next?: true;
}

export interface DroppedLink {
  readonly url: string;
  /** The request's method when it is not a plain GET. */
  readonly method?: string;
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
  /** What `page:` fields read (built where the page comes from); links resolve against its `finalUrl`. */
  readonly facts: PageFacts;
  /** The body: HTML, or the JSON text of a JSON response (`json`). */
  readonly html: string;
  readonly rule: PageRule;
  readonly depth: number;
  /** Read the body as JSON (its Content-Type, or the rule's `format`: see readsAsJson). */
  readonly json?: boolean;
  /** The page is one of a series: its next page follows when this one yields something. */
  readonly series?: SeriesRef;
}

/** The response is not what its rule reads: not JSON where JSON is read. The page fails, it is not retried. */
export class PageFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PageFormatError';
  }
}

export function analysePage(task: CrawlTask, page: PageInput): PageOutcome {
  const doc = pageDocument(page);
  const ex = extractPage(doc, page.facts, page.rule);
  const { kept, dropped } = sortLinks(task, ex, page.depth + 1);
  // A series goes on while its pages yield something: items, problems or links.
  const next =
    page.series && ex.items.length + ex.problems.length + ex.links.length > 0
      ? nextOfSeries(task, page, page.series)
      : null;
  if (next && 'kept' in next) kept.push(next.kept);
  else if (next) dropped.push(next.dropped);
  return { items: ex.items, problems: ex.problems, kept, dropped };
}

/** What the page is read as: its HTML, or its body parsed as JSON (not JSON: a PageFormatError). */
function pageDocument(page: PageInput): string | JsonPage {
  if (!page.json) return page.html;
  try {
    return JsonPage.parse(page.html);
  } catch (err) {
    throw new PageFormatError(`the response is not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** The links the rule's follows found, each kept (with the rule that will read it) or dropped with its reason. */
function sortLinks(task: CrawlTask, ex: Extraction, depth: number): Pick<PageOutcome, 'kept' | 'dropped'> {
  const kept: KeptLink[] = [];
  const dropped: DroppedLink[] = [];
  const seenOnPage = new Set<string>();
  for (const link of ex.links) {
    // Links (most of what a page has) take the plain path: no request, no series, objects built as literals.
    const request = link.request;
    if (link.problem !== undefined) {
      dropped.push(
        withMethod({ url: link.href, reason: 'invalid', follow: link.follow, detail: link.problem }, request),
      );
      continue;
    }
    const d = decideLink(task, link.href, ex.baseUrl, depth);
    if (!d.ok) {
      dropped.push(
        withMethod(
          d.detail
            ? { url: d.url, reason: d.reason, follow: link.follow, detail: d.detail }
            : { url: d.url, reason: d.reason, follow: link.follow },
          request,
        ),
      );
      continue;
    }
    const key = request ? requestKey(d.url, request) : d.url;
    if (seenOnPage.has(key)) {
      dropped.push(withMethod({ url: d.url, reason: 'repeat', follow: link.follow }, request));
      continue;
    }
    const rule = routeRule(task, d.url, link.to);
    if (!rule) {
      dropped.push(withMethod({ url: d.url, reason: 'no-rule', follow: link.follow }, request));
      continue;
    }
    seenOnPage.add(key);
    const k: KeptLink = {
      url: d.url,
      host: d.host,
      rule: rule.name,
      depth,
      priority: link.priority,
      follow: link.follow,
    };
    kept.push(
      request || link.series
        ? { ...k, ...(request ? { request } : {}), ...(link.series ? { series: link.series } : {}) }
        : k,
    );
  }
  return { kept, dropped };
}

/**
 * The next page of the page's series, kept or dropped. It is as deep as this page (the pages of one listing are one
 * hop from where it was found) and goes to the same rule.
 */
function nextOfSeries(
  task: CrawlTask,
  page: PageInput,
  ref: SeriesRef,
): { readonly kept: KeptLink } | { readonly dropped: DroppedLink } | null {
  const next = nextInSeries(task, ref);
  if (!next) return null;
  if (!next.ok) return { dropped: { url: page.facts.finalUrl, reason: 'invalid', follow: -1, detail: next.problem } };
  const { url, request, series } = next.built;
  const d = decideLink(task, url, url, page.depth);
  if (!d.ok)
    return { dropped: { url: d.url, reason: d.reason, follow: -1, ...(d.detail ? { detail: d.detail } : {}) } };
  return {
    kept: {
      url: d.url,
      host: d.host,
      rule: page.rule.name,
      depth: page.depth,
      priority: seriesPriority(task, ref),
      follow: -1,
      next: true,
      ...(request ? { request } : {}),
      ...(series ? { series } : {}),
    },
  };
}

function withMethod(d: DroppedLink, request: JobRequest | undefined): DroppedLink {
  return request ? { ...d, method: request.method } : d;
}

function seriesPriority(task: CrawlTask, ref: SeriesRef): number | null {
  const of = ref.of;
  if ('start' in of) return task.start[of.start]?.priority ?? null;
  return task.rules.find((r) => r.name === of.rule)?.follow[of.follow]?.priority ?? null;
}

/**
 * Whether a response is read as JSON: a rule's `format` decides; else its Content-Type, for rules that read JSON
 * (a rule of CSS selectors alone leaves a JSON response unread, as it always did: a non-HTML page).
 */
export function readsAsJson(rule: PageRule, contentTypeIsJson: boolean): boolean {
  return rule.format !== null ? rule.format === 'json' : rule.readsJson && contentTypeIsJson;
}

/** The rule that handles a URL: the one a link names, else the first whose `match` matches. */
export function routeRule(task: CrawlTask, url: string, to: string | null): PageRule | null {
  if (to !== null) return task.rules.find((r) => r.name === to) ?? null;
  return task.rules.find((r) => matchesAny(url, r.match)) ?? null;
}

export function ruleByName(task: CrawlTask, name: string): PageRule | null {
  return task.rules.find((r) => r.name === name) ?? null;
}
