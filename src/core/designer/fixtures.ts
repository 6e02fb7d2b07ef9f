import type { ExtractedItem, FieldValue, PageFacts } from '../extract/extract';
import { analysePage, PageFormatError, readsAsJson, ruleByName, type PageOutcome } from '../pipeline/page';
import { isJsonContentType } from '../extract/json';
import type { CrawlTask, PageRule } from '../task/model';

// Fixtures make selectors regression-tested like code: a saved page plus what the task extracted from it then.
// Re-running the task on the saved page and comparing says which fields changed, whether the change came from
// editing the task file or from a fresh copy of the page. Pure: fixtureStore.ts reads and writes the files.

export const FIXTURE_VERSION = 1;

export interface ExpectedOutcome {
  readonly items: readonly ExtractedItem[];
  readonly problems: readonly string[];
  /** Links the page's follow rules would enqueue, with the rule each goes to. */
  readonly links: readonly { readonly url: string; readonly rule: string }[];
}

export interface Fixture {
  readonly version: number;
  /** File name stem shared by the .json and the .html. */
  readonly name: string;
  readonly url: string;
  readonly finalUrl: string;
  readonly rule: string;
  readonly depth: number;
  readonly savedAt: string;
  /** The page's HTTP status and fetch time (ISO), what `page:` fields read; absent in fixtures saved before they were kept. */
  readonly status?: number;
  readonly fetchedAt?: string;
  /** The page's Content-Type: a JSON response is read as JSON, as a worker reads it (absent: HTML). */
  readonly contentType?: string | null;
  /** The page is the DOM a browser rendered (a `browser:` rule's), not the HTML as fetched. */
  readonly rendered?: boolean;
  readonly expected: ExpectedOutcome;
}

/**
 * The page a fixture holds, as analysePage takes it: its facts, built here and only here for a fixture. An old
 * fixture's `fetchedAt` is its save time, its status unknown.
 */
export function fixtureInput(fixture: Fixture): { readonly facts: PageFacts } {
  return {
    facts: {
      url: fixture.url,
      finalUrl: fixture.finalUrl,
      status: fixture.status ?? null,
      fetchedAt: Date.parse(fixture.fetchedAt ?? fixture.savedAt),
    },
  };
}

export function expectedFrom(outcome: PageOutcome): ExpectedOutcome {
  return {
    items: outcome.items,
    problems: outcome.problems.map((p) => `${p.type} #${p.index + 1}: ${p.message}`),
    links: outcome.kept.map((k) => ({ url: k.url, rule: k.rule })),
  };
}

export interface FieldChange {
  /** `book UPC123` (type and key) or `book #2` for items without a stable match. */
  readonly item: string;
  readonly field: string;
  readonly expected: FieldValue | undefined;
  readonly actual: FieldValue | undefined;
}

export interface FixtureResult {
  readonly fixture: string;
  readonly url: string;
  readonly rule: string;
  /** Set when the fixture could not be run (its rule is gone, the file is unreadable…). */
  readonly error: string | null;
  readonly changed: readonly FieldChange[];
  readonly addedItems: readonly string[];
  readonly removedItems: readonly string[];
  readonly addedLinks: readonly string[];
  readonly removedLinks: readonly string[];
  readonly addedProblems: readonly string[];
  readonly removedProblems: readonly string[];
  /**
   * What fails the fixture whatever was saved: it extracts nothing where its rule expects items or links, or it
   * was saved the wrong way (a `browser:` rule's page as fetched, not rendered). A fixture that tests nothing is
   * not a pass.
   */
  readonly unmet: readonly string[];
  readonly ok: boolean;
}

function itemLabel(i: ExtractedItem, n: number): string {
  return i.key.startsWith('#') ? `${i.type} #${n + 1}` : `${i.type} ${i.key}`;
}

function sameValue(a: FieldValue | undefined, b: FieldValue | undefined): boolean {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

/**
 * Items are paired by type and key; items whose key is a content hash (no `key` fields) change key whenever a
 * field changes, so the leftovers of each type are paired by position.
 */
export function compareOutcome(
  fixture: Pick<Fixture, 'name' | 'url' | 'rule'>,
  expected: ExpectedOutcome,
  actual: ExpectedOutcome,
): FixtureResult {
  const changed: FieldChange[] = [];
  const addedItems: string[] = [];
  const removedItems: string[] = [];
  const types = [...new Set([...expected.items, ...actual.items].map((i) => i.type))];
  for (const type of types) {
    const exp = expected.items.filter((i) => i.type === type);
    const act = actual.items.filter((i) => i.type === type);
    const used = new Set<number>();
    const leftovers: Array<[ExtractedItem, number]> = [];
    exp.forEach((e, n) => {
      const j = act.findIndex((a, k) => !used.has(k) && a.key === e.key);
      if (j >= 0) {
        used.add(j);
        diffFields(itemLabel(e, n), e, act[j]!, changed);
      } else leftovers.push([e, n]);
    });
    const rest = act.map((a, k) => [a, k] as const).filter(([, k]) => !used.has(k));
    leftovers.forEach(([e, n], i) => {
      const pair = rest[i];
      if (pair) diffFields(itemLabel(e, n), e, pair[0], changed);
      else removedItems.push(itemLabel(e, n));
    });
    rest.slice(leftovers.length).forEach(([a, k]) => addedItems.push(itemLabel(a, k)));
  }
  const diff = (a: readonly string[], b: readonly string[]) => a.filter((x) => !b.includes(x));
  const expLinks = expected.links.map((l) => `${l.url} -> ${l.rule}`);
  const actLinks = actual.links.map((l) => `${l.url} -> ${l.rule}`);
  const result = {
    fixture: fixture.name,
    url: fixture.url,
    rule: fixture.rule,
    error: null,
    changed,
    addedItems,
    removedItems,
    addedLinks: diff(actLinks, expLinks),
    removedLinks: diff(expLinks, actLinks),
    addedProblems: diff(actual.problems, expected.problems),
    removedProblems: diff(expected.problems, actual.problems),
    unmet: [],
  };
  const ok = [
    result.changed,
    addedItems,
    removedItems,
    result.addedLinks,
    result.removedLinks,
    result.addedProblems,
    result.removedProblems,
  ].every((l) => l.length === 0);
  return { ...result, ok };
}

function diffFields(label: string, e: ExtractedItem, a: ExtractedItem, out: FieldChange[]): void {
  const fields = [...new Set([...Object.keys(e.data), ...Object.keys(a.data)])];
  for (const f of fields) {
    if (!sameValue(e.data[f], a.data[f])) out.push({ item: label, field: f, expected: e.data[f], actual: a.data[f] });
  }
}

/** Runs the task's rule on the fixture's page and compares with what was saved. */
export function runFixture(task: CrawlTask, fixture: Fixture, html: string): FixtureResult {
  const rule = ruleByName(task, fixture.rule);
  if (!rule) return failed(fixture, `the task has no rule '${fixture.rule}' any more`);
  const json = readsAsJson(rule, isJsonContentType(fixture.contentType ?? null));
  let outcome: PageOutcome;
  try {
    outcome = analysePage(task, {
      ...fixtureInput(fixture),
      html,
      rule,
      depth: fixture.depth,
      ...(json ? { json } : {}),
    });
  } catch (err) {
    if (err instanceof PageFormatError) return failed(fixture, err.message);
    throw err;
  }
  const actual = expectedFrom(outcome);
  const result = compareOutcome(fixture, fixture.expected, actual);
  const unmet = unmetExpectations(rule, fixture, actual);
  return unmet.length === 0 ? result : { ...result, unmet, ok: false };
}

/** What the fixture fails besides changes (FixtureResult.unmet). */
function unmetExpectations(rule: PageRule, fixture: Fixture, actual: ExpectedOutcome): string[] {
  const out: string[] = [];
  if (rule.browser !== null && !fixture.rendered) {
    out.push(
      `saved the wrong way: rule '${rule.name}' renders in a browser, but this fixture holds the page as fetched; save it again with \`crawl-studio fixture save\` (it renders) or from the preview with Browser on`,
    );
  }
  if (rule.items.length > 0 && actual.items.length === 0) {
    out.push(
      `extracts nothing: rule '${rule.name}' expects items (${rule.items.map((i) => i.type).join(', ')}) and the page gives none`,
    );
  }
  if (rule.follow.length > 0 && actual.links.length === 0) {
    out.push(`follows nothing: rule '${rule.name}' expects links and the page gives none`);
  }
  return out;
}

export function failed(fixture: Pick<Fixture, 'name' | 'url' | 'rule'>, error: string): FixtureResult {
  return {
    fixture: fixture.name,
    url: fixture.url,
    rule: fixture.rule,
    error,
    changed: [],
    addedItems: [],
    removedItems: [],
    addedLinks: [],
    removedLinks: [],
    addedProblems: [],
    removedProblems: [],
    unmet: [],
    ok: false,
  };
}

export interface TaskTestReport {
  readonly task: string;
  readonly file: string;
  /** Problems that stopped the run (the task file has errors, no fixtures…). */
  readonly errors: readonly string[];
  readonly results: readonly FixtureResult[];
  readonly ok: boolean;
}

function show(v: FieldValue | undefined): string {
  if (v === undefined) return '(no such field)';
  if (v === null) return '(missing)';
  const s = JSON.stringify(v);
  return s.length > 80 ? s.slice(0, 79) + '…' : s;
}

/** The report as the CLI prints it and the extension's output channel shows it. */
export function formatTestReport(r: TaskTestReport): string {
  const lines: string[] = [];
  for (const e of r.errors) lines.push(`error: ${e}`);
  for (const f of r.results) {
    if (f.ok) {
      lines.push(`ok    ${f.fixture} (${f.rule}, ${f.url})`);
      continue;
    }
    lines.push(`FAIL  ${f.fixture} (${f.rule}, ${f.url})`);
    if (f.error) lines.push(`      ${f.error}`);
    for (const c of f.changed)
      lines.push(`      ${c.item}: ${c.field} changed: ${show(c.expected)} -> ${show(c.actual)}`);
    for (const i of f.removedItems) lines.push(`      item gone: ${i}`);
    for (const i of f.addedItems) lines.push(`      new item: ${i}`);
    for (const l of f.removedLinks) lines.push(`      link no longer followed: ${l}`);
    for (const l of f.addedLinks) lines.push(`      new link followed: ${l}`);
    for (const p of f.removedProblems) lines.push(`      problem gone: ${p}`);
    for (const p of f.addedProblems) lines.push(`      new problem: ${p}`);
    for (const u of f.unmet) lines.push(`      ${u}`);
  }
  const failedCount = r.results.filter((f) => !f.ok).length;
  lines.push(
    r.errors.length > 0 && r.results.length === 0
      ? `${r.task}: not tested`
      : `${r.task}: ${r.results.length - failedCount} of ${r.results.length} fixture${r.results.length === 1 ? '' : 's'} unchanged${failedCount ? `, ${failedCount} changed` : ''}`,
  );
  return lines.join('\n');
}
