import { analysePage, PageFormatError, readsAsJson, routeRule } from '../pipeline/page';
import { requestKey, type JobRequest, type SeriesRef } from '../request/build';
import { bodyLabel } from '../request/body';
import type { RobotsRules } from '../robots';
import type { TaskDiagnostic } from '../task/diagnostics';
import { followLabel, type CrawlTask, type PageRule } from '../task/model';
import { parseTask } from '../task/parse';
import type { Env } from '../task/checker';
import { canonicalize } from '../url/canonical';
import type { FieldValue } from '../extract/extract';
import { highlightSite, originOf, type PreparedPage } from './page';
import type { AnalysisView, CellView, DiagnosticView, FollowView, ItemTableView, LinkReason } from './protocol';
import { selectorSites, siteAt, siteLabel } from './sites';

// One preview update, pure: the task file's text (unsaved edits included) and the prepared page in, what the
// webview shows out. It runs analysePage, the function the workers run on every page, so the preview shows
// what a crawl would store and enqueue.

export interface PreviewInput {
  readonly text: string;
  readonly file: string;
  /** The environment the task's `${VAR}`s are read from (the extension host's process.env). */
  readonly env?: Env;
  readonly page: PreparedPage | null;
  /** The rule chosen by the person; null picks it as a crawl would (start URL's rule, else `match`). */
  readonly rule: string | null;
  /** Cursor offset in `text`: the selector there is highlighted. */
  readonly cursor: number | null;
  /** The last task parsed without errors: shown (marked stale) while the file has errors. */
  readonly lastGood: CrawlTask | null;
  /** robots.txt rules per origin: undefined while unknown (the caller fetches it and updates again). */
  readonly robots?: (origin: string) => RobotsRules | undefined;
  /** The page is one of a series (opened from a start entry or a link that counts pages): its next page shows. */
  readonly series?: SeriesRef;
}

/** A request the preview lists (a kept link or a start entry that is not a plain GET, or a page of a series). */
export interface PreviewRequest {
  readonly url: string;
  readonly request: JobRequest | null;
  readonly series: SeriesRef | null;
}

export interface PreviewResult {
  /** The task parsed from `text`, null when it has errors. */
  readonly task: CrawlTask | null;
  readonly diagnostics: readonly TaskDiagnostic[];
  readonly view: AnalysisView;
  /** Origins whose robots.txt the analysis wanted and did not have. */
  readonly robotsWanted: readonly string[];
  /** The requests the links list by key (LinkView.key), for the panel to open one when it is clicked. */
  readonly requests: ReadonlyMap<string, PreviewRequest>;
}

/** Rows and links kept per table: the webview lists them all, and a 10 000-link page must stay responsive. */
const MAX_ROWS = 500;
export const MAX_LINKS = 500;

export function computePreview(input: PreviewInput): PreviewResult {
  const t0 = performance.now();
  const parsed = parseTask(input.text, input.file, { env: input.env ?? {} });
  const t1 = performance.now();
  const task = parsed.task;
  const used = task ?? input.lastGood;
  const diagnostics: DiagnosticView[] = parsed.diagnostics.map((d) => ({
    severity: d.severity,
    message: d.message,
    path: d.path,
    line: d.line,
    column: d.column,
  }));
  const names = used?.rules.map((r) => r.name) ?? [];
  const choice = used && input.page ? chooseRule(used, input.page.finalUrl, input.page.url, input.rule) : null;

  let items: ItemTableView[] = [];
  let problems: string[] = [];
  let links: FollowView[] = [];
  const robotsWanted = new Set<string>();
  let robotsPending = false;
  const requests = new Map<string, PreviewRequest>();
  if (used && input.page && choice?.rule) {
    const isJson = input.page.json !== undefined;
    const json = readsAsJson(choice.rule, isJson);
    let outcome: ReturnType<typeof analysePage>;
    try {
      outcome =
        isJson && !json && choice.rule.format === null
          ? { items: [], problems: [], kept: [], dropped: [] }
          : analysePage(used, {
              url: input.page.finalUrl,
              html: input.page.html,
              rule: choice.rule,
              depth: choice.depth,
              requestedUrl: input.page.url,
              status: input.page.status,
              fetchedAt: input.page.fetchedAt,
              ...(json ? { json } : {}),
              ...(input.series ? { series: input.series } : {}),
            });
    } catch (err) {
      if (!(err instanceof PageFormatError)) throw err;
      outcome = {
        items: [],
        problems: [{ type: choice.rule.name, index: -1, message: err.message }],
        kept: [],
        dropped: [],
      };
    }
    items = itemTables(choice.rule, outcome.items);
    problems = outcome.problems.map((p) => (p.index < 0 ? p.message : `${p.type} #${p.index + 1}: ${p.message}`));
    // What a worker does with a JSON response its rule does not read: records it, extracts nothing.
    if (isJson && !json && choice.rule.format === null)
      problems.unshift(
        `the response is JSON and rule '${choice.rule.name}' reads it with no JSONPath ($…): a crawl records the page and extracts nothing. Write its selectors as paths ($.items[*]) or set 'format: json'.`,
      );
    const method = (r: JobRequest | undefined) =>
      r ? { method: r.method, ...(r.body ? { body: bodyLabel(r.body) } : {}) } : {};
    const dropped = outcome.dropped.map(
      (d): { url: string; reason: LinkReason; follow: number; method?: string; detail?: string } => ({
        url: d.url,
        reason: d.reason,
        follow: d.follow,
        ...(d.method ? { method: d.method } : {}),
        ...(d.detail ? { detail: d.detail } : {}),
      }),
    );
    const kept: { url: string; rule: string; follow: number; method?: string; body?: string; key?: string }[] = [];
    for (const k of outcome.kept) {
      const key = k.request || k.series ? requestKey(k.url, k.request) : undefined;
      if (key) requests.set(key, { url: k.url, request: k.request ?? null, series: k.series ?? null });
      const origin = originOf(k.url);
      const rules = used.request.robots && origin ? input.robots?.(origin) : null;
      if (rules === undefined && origin) {
        robotsWanted.add(origin);
        robotsPending = true;
      }
      if (rules && !rules.isAllowed(k.url))
        dropped.push({
          url: k.url,
          reason: 'robots',
          follow: k.follow,
          ...(k.request ? { method: k.request.method } : {}),
        });
      else kept.push({ url: k.url, rule: k.rule, follow: k.follow, ...method(k.request), ...(key ? { key } : {}) });
    }
    const group = (index: number, selector: string, to: string | null): FollowView => {
      const k = kept.filter((l) => l.follow === index);
      const d = dropped.filter((l) => l.follow === index);
      return {
        index,
        selector,
        to,
        kept: k.slice(0, MAX_LINKS).map(({ follow: _, ...rest }) => rest),
        dropped: d.slice(0, MAX_LINKS).map(({ follow: _, ...rest }) => rest),
        keptTotal: k.length,
        droppedTotal: d.length,
      };
    };
    links = choice.rule.follow.map((f, i) => group(i, followLabel(f), f.to));
    // The next page of the series this page is one of: not a follow of its rule, shown as its own group.
    if (input.series)
      links.push(group(-1, `next page of the series (page ${input.series.page} now)`, choice.rule.name));
  }
  const t2 = performance.now();

  let highlight: AnalysisView['highlight'] = null;
  if (input.page && input.cursor !== null) {
    const site = siteAt(selectorSites(input.text), input.cursor);
    if (site) highlight = highlightSite(input.page, site, siteLabel(site));
  }
  const t3 = performance.now();

  return {
    task,
    diagnostics: parsed.diagnostics,
    robotsWanted: [...robotsWanted],
    requests,
    view: {
      stale: task === null && used !== null,
      diagnostics,
      rule: {
        name: choice?.rule?.name ?? null,
        auto: input.rule === null,
        reason: choice?.reason ?? (used ? 'no page' : 'the file has errors'),
        names,
        fallback: choice?.fallback ?? false,
      },
      items,
      problems,
      links,
      robotsPending,
      highlight,
      timings: { parseMs: t1 - t0, analyseMs: t2 - t1, highlightMs: t3 - t2, totalMs: t3 - t0 },
    },
  };
}

interface RuleChoice {
  readonly rule: PageRule | null;
  readonly reason: string;
  /** No rule applies to this page; the first rule stands in. */
  readonly fallback: boolean;
  /** Start URLs are depth 0; any other page is taken as one hop away. */
  readonly depth: number;
}

function sameUrl(a: string, b: string, task: CrawlTask): boolean {
  const ca = canonicalize(a, undefined, task.canonical);
  const cb = canonicalize(b, undefined, task.canonical);
  return ca.ok && cb.ok ? ca.url === cb.url : a === b;
}

/** The rule a crawl would apply to this page, unless the person chose one. */
export function chooseRule(task: CrawlTask, finalUrl: string, requestedUrl: string, chosen: string | null): RuleChoice {
  const start = task.start.find((s) => sameUrl(s.url, requestedUrl, task) || sameUrl(s.url, finalUrl, task));
  const depth = start ? 0 : 1;
  if (chosen !== null) {
    const rule = task.rules.find((r) => r.name === chosen) ?? null;
    return { rule, reason: rule ? 'chosen' : `no rule named '${chosen}'`, depth, fallback: false };
  }
  if (start) {
    const rule = task.rules.find((r) => r.name === start.rule) ?? null;
    return { rule, reason: 'start URL', depth, fallback: false };
  }
  const matched = routeRule(task, finalUrl, null);
  if (matched) return { rule: matched, reason: 'matched by its `match` patterns', depth, fallback: false };
  return {
    rule: task.rules[0] ?? null,
    reason: 'no rule matches this URL: showing the first rule',
    depth,
    fallback: true,
  };
}

function cell(v: FieldValue | undefined): CellView {
  if (v === null || v === undefined) return { value: null, state: 'missing' };
  if (v === '' || (Array.isArray(v) && v.length === 0)) return { value: v, state: 'empty' };
  return { value: v, state: 'ok' };
}

function itemTables(
  rule: PageRule,
  items: readonly { type: string; key: string; data: Readonly<Record<string, FieldValue>> }[],
): ItemTableView[] {
  // One table per item type (two item specs of one type share a table, as they share a store table).
  const byType = new Map<string, { scope: string | null; columns: string[] }>();
  for (const spec of rule.items) {
    const t = byType.get(spec.type) ?? { scope: spec.scope, columns: [] };
    for (const f of spec.fields) if (!t.columns.includes(f.name)) t.columns.push(f.name);
    byType.set(spec.type, t);
  }
  return [...byType].map(([type, t]) => {
    const mine = items.filter((i) => i.type === type);
    return {
      type,
      scope: t.scope,
      columns: t.columns,
      rows: mine.slice(0, MAX_ROWS).map((i) => ({ key: i.key, cells: t.columns.map((c) => cell(i.data[c])) })),
      total: mine.length,
    };
  });
}
