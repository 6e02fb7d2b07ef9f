import type { CrawlTask } from '../task/model';
import type { PageFacts } from '../extract/extract';
import { analysePage, ruleByName } from '../pipeline/page';
import { chooseRule } from './preview';

// Which page the Preview lens of a rule opens (issue 32, item 6): the lens on `detail` used to force `detail` on
// whatever page the preview showed (a list page), and its "matches 0 elements" warnings were about that page. A
// rule is previewed on a page a crawl would give it, found in this order: the page on show, if it is one; a page
// of the rule from the last run (the store's pages); a fixture saved for the rule; a start URL the rule handles;
// a link on a start page that routes to the rule (its follow's `to`, or its `match`); and a page the preview
// showed for the rule before. Each answer says where it came from, for the preview's status line.

export type PageSourceKind = 'shown' | 'run' | 'fixture' | 'start' | 'link' | 'cached';

export interface PageForRule {
  readonly url: string;
  readonly source: PageSourceKind;
  /** e.g. "a page of rule detail from the start page's links (follow 2)". */
  readonly why: string;
}

/** A page known with the rule it was (or would be) handled by. */
export interface RulePage {
  readonly url: string;
  readonly rule: string;
}

/** A start page as fetched (a designer's page: its facts from preparePage): its links are routed as a crawl routes them. */
export interface FetchedStart {
  readonly facts: PageFacts;
  readonly html: string;
}

export interface PageCandidates {
  /** The page the preview shows now, and the rule it shows it with (null: none yet). */
  readonly shown?: RulePage | null;
  /** Pages a run stored items from, with the rule that handled each (the last run's first, newest first). */
  readonly runPages?: readonly RulePage[];
  readonly fixtures?: readonly RulePage[];
  /** Start pages read (cached or fetched), for their links. */
  readonly startPages?: readonly FetchedStart[];
  /** Pages the preview showed before, with the rule it showed each with. */
  readonly cached?: readonly RulePage[];
}

/** The page to preview `rule` on, or null when none is known: the preview then keeps its page and says so. */
export function choosePreviewPage(task: CrawlTask, rule: string, c: PageCandidates): PageForRule | null {
  if (!ruleByName(task, rule)) return null;
  if (c.shown && c.shown.rule === rule)
    return { url: c.shown.url, source: 'shown', why: `the page on show, a page of rule ${rule}` };
  const run = c.runPages?.find((p) => p.rule === rule);
  if (run) return { url: run.url, source: 'run', why: `a page of rule ${rule} from a run (the task's store)` };
  const fixture = c.fixtures?.find((p) => p.rule === rule);
  if (fixture) return { url: fixture.url, source: 'fixture', why: `a page of rule ${rule} from its fixture` };
  const start = task.start.find((s) => !s.request && chooseRule(task, s.url, s.url, null).rule?.name === rule);
  if (start) return { url: start.url, source: 'start', why: `a start URL of the task, handled by rule ${rule}` };
  for (const page of c.startPages ?? []) {
    const link = linkToRule(task, page, rule);
    if (link) return { url: link, source: 'link', why: `a page of rule ${rule} from the start page's links` };
  }
  const cached = c.cached?.find((p) => p.rule === rule);
  if (cached) return { url: cached.url, source: 'cached', why: `a page previewed before with rule ${rule}` };
  return null;
}

/** The first link of a start page that a crawl would queue for `rule`. */
function linkToRule(task: CrawlTask, page: FetchedStart, rule: string): string | null {
  const startRule = chooseRule(task, page.facts.finalUrl, page.facts.url, null).rule;
  if (!startRule) return null;
  try {
    const out = analysePage(task, {
      facts: page.facts,
      html: page.html,
      rule: startRule,
      depth: 0,
    });
    return out.kept.find((l) => l.rule === rule && !l.request && l.sitemap === undefined)?.url ?? null;
  } catch {
    return null;
  }
}
