import {
  analysePage,
  PageFormatError,
  readsAsJson,
  routeRule,
  type DroppedLink,
  type PageInput,
  type PageOutcome,
} from '../pipeline/page';
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
import type { AnalysisView, CellView, DiagnosticView, FollowView, ItemTableView, LinkView } from './protocol';
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
  const choice = used && input.page ? chooseRule(used, input.page.finalUrl, input.page.url, input.rule) : null;
  const a =
    used && input.page && choice?.rule ? analyse(used, input.page, choice.rule, choice.depth, input) : nothingRead();
  const t2 = performance.now();
  const highlight = cursorHighlight(input);
  const t3 = performance.now();
  return {
    task,
    diagnostics: parsed.diagnostics,
    robotsWanted: [...a.robotsWanted],
    requests: a.requests,
    view: {
      stale: task === null && used !== null,
      diagnostics: parsed.diagnostics.map(diagnosticView),
      rule: {
        name: choice?.rule?.name ?? null,
        auto: input.rule === null,
        reason: choice?.reason ?? (used ? 'no page' : 'the file has errors'),
        names: used?.rules.map((r) => r.name) ?? [],
        fallback: choice?.fallback ?? false,
      },
      items: a.items,
      problems: a.problems,
      links: a.links,
      robotsPending: a.robotsWanted.size > 0,
      highlight,
      timings: { parseMs: t1 - t0, analyseMs: t2 - t1, highlightMs: t3 - t2, totalMs: t3 - t0 },
    },
  };
}

function diagnosticView(d: TaskDiagnostic): DiagnosticView {
  return { severity: d.severity, message: d.message, path: d.path, line: d.line, column: d.column };
}

/** The selector under the cursor, highlighted on the page. */
function cursorHighlight(input: PreviewInput): AnalysisView['highlight'] {
  if (!input.page || input.cursor === null) return null;
  const site = siteAt(selectorSites(input.text), input.cursor);
  return site ? highlightSite(input.page, site, siteLabel(site)) : null;
}

/** What the chosen rule makes of the page: its items, problems and links, and what they wait for. */
interface PageAnalysis {
  readonly items: ItemTableView[];
  readonly problems: string[];
  readonly links: FollowView[];
  /** Origins whose robots.txt is not known yet: some links' fate waits for it. */
  readonly robotsWanted: ReadonlySet<string>;
  readonly requests: Map<string, PreviewRequest>;
}

function nothingRead(): PageAnalysis {
  return { items: [], problems: [], links: [], robotsWanted: new Set(), requests: new Map() };
}

const NOTHING_EXTRACTED: PageOutcome = { items: [], problems: [], kept: [], dropped: [] };

function analyse(
  used: CrawlTask,
  page: PreparedPage,
  rule: PageRule,
  depth: number,
  input: PreviewInput,
): PageAnalysis {
  const isJson = page.json !== undefined;
  const json = readsAsJson(rule, isJson);
  // What a worker does with a JSON response its rule does not read: records it, extracts nothing.
  const unreadJson = isJson && !json && rule.format === null;
  const outcome = unreadJson
    ? NOTHING_EXTRACTED
    : analyseOrSayWhy(used, rule, {
        facts: page.facts,
        html: page.html,
        rule,
        depth,
        ...(json ? { json } : {}),
        ...(input.series ? { series: input.series } : {}),
      });
  const problems = outcome.problems.map((p) => (p.index < 0 ? p.message : `${p.type} #${p.index + 1}: ${p.message}`));
  if (unreadJson)
    problems.unshift(
      `the response is JSON and rule '${rule.name}' reads it with no JSONPath ($…): a crawl records the page and extracts nothing. Write its selectors as paths ($.items[*]) or set 'format: json'.`,
    );
  return { items: itemTables(rule, outcome.items), problems, ...previewLinks(used, rule, outcome, input) };
}

/** The page analysed as a worker would; a response that is not what the rule reads is its one problem. */
function analyseOrSayWhy(used: CrawlTask, rule: PageRule, page: PageInput): PageOutcome {
  try {
    return analysePage(used, page);
  } catch (err) {
    if (!(err instanceof PageFormatError)) throw err;
    return { items: [], problems: [{ type: rule.name, index: -1, message: err.message }], kept: [], dropped: [] };
  }
}

type DroppedView = FollowView['dropped'][number];

/** A follow's links, kept and dropped (those robots.txt disallows among them). */
interface FollowLinks {
  readonly kept: LinkView[];
  readonly dropped: DroppedView[];
}

/** The links grouped by the follow that found them, robots.txt applied, and the requests they open. */
function previewLinks(
  used: CrawlTask,
  rule: PageRule,
  outcome: PageOutcome,
  input: PreviewInput,
): Pick<PageAnalysis, 'links' | 'robotsWanted' | 'requests'> {
  const byFollow = new Map<number, FollowLinks>();
  const of = (follow: number): FollowLinks => {
    let g = byFollow.get(follow);
    if (!g) byFollow.set(follow, (g = { kept: [], dropped: [] }));
    return g;
  };
  for (const d of outcome.dropped) of(d.follow).dropped.push(droppedView(d));
  const requests = new Map<string, PreviewRequest>();
  const robotsWanted = new Set<string>();
  for (const k of outcome.kept) {
    const key = k.request || k.series ? requestKey(k.url, k.request) : undefined;
    if (key) requests.set(key, { url: k.url, request: k.request ?? null, series: k.series ?? null });
    const origin = originOf(k.url);
    const rules = used.request.robots && origin ? input.robots?.(origin) : null;
    if (rules === undefined && origin) robotsWanted.add(origin);
    if (rules && !rules.isAllowed(k.url))
      of(k.follow).dropped.push({ url: k.url, reason: 'robots', ...(k.request ? { method: k.request.method } : {}) });
    else of(k.follow).kept.push({ url: k.url, rule: k.rule, ...methodOf(k.request), ...(key ? { key } : {}) });
  }
  const group = (index: number, selector: string, to: string | null): FollowView => {
    const { kept, dropped } = byFollow.get(index) ?? { kept: [], dropped: [] };
    return {
      index,
      selector,
      to,
      kept: kept.slice(0, MAX_LINKS),
      dropped: dropped.slice(0, MAX_LINKS),
      keptTotal: kept.length,
      droppedTotal: dropped.length,
    };
  };
  const links = rule.follow.map((f, i) => group(i, followLabel(f), f.to));
  // The next page of the series this page is one of: not a follow of its rule, shown as its own group.
  if (input.series) links.push(group(-1, `next page of the series (page ${input.series.page} now)`, rule.name));
  return { links, robotsWanted, requests };
}

function droppedView(d: DroppedLink): DroppedView {
  return {
    url: d.url,
    reason: d.reason,
    ...(d.method ? { method: d.method } : {}),
    ...(d.detail ? { detail: d.detail } : {}),
  };
}

function methodOf(r: JobRequest | undefined): { method?: string; body?: string } {
  return r ? { method: r.method, ...(r.body ? { body: bodyLabel(r.body) } : {}) } : {};
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
