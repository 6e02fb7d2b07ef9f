import { DEFAULTS, type BrowserSpec, type BrowserWait, type FollowSpec, type ItemSpec, type PageRule } from './model';
import { readsJsonPath } from './requests';
import type { Checker } from './checker';
import type { Path } from './diagnosticSink';
import { buildFollow, buildItem } from './parseItems';
import { headersOf } from './parseAccess';
import type { RawBrowser, RawRule, RawTask } from './rawTask';
import { closest, listNames, quote } from './wording';
import { parseActions } from './actions';

// A task's `rules`: each rule's name, `match`, `follow`, `items`, `browser`, `request.headers` and `format`,
// checked and normalised into a PageRule (model.ts). A new field of a rule is read in buildRule.

/** Reports a reference to a rule that does not exist, suggesting the nearest name. */
export type RuleRefCheck = (path: Path, name: string) => void;

/** The rules of a task file, and the check of references to them (follow `to:`, a start entry's `rule:`). */
export function buildRules(
  raw: RawTask,
  c: Checker,
  timeoutMs: number,
): { rules: PageRule[]; checkRuleRef: RuleRefCheck } {
  const ruleNames = new Map<string, number>();
  raw.rules.forEach((r, i) => {
    if (ruleNames.has(r.name))
      c.diags.atPath(
        ['rules', i, 'name'],
        `rule '${r.name}' is defined twice (first at rules[${ruleNames.get(r.name)}])`,
      );
    else ruleNames.set(r.name, i);
  });
  // Suggestions for the first broken references only: a generated file with thousands of them stays fast.
  let suggestions = 0;
  const checkRuleRef: RuleRefCheck = (path, name) => {
    if (!ruleNames.has(name)) {
      const guess = suggestions++ < 50 ? closest(name, [...ruleNames.keys()]) : null;
      c.diags.atPath(
        path,
        `no rule named ${quote(name)}${guess ? `; did you mean '${guess}'?` : ` (rules: ${listNames([...ruleNames.keys()])})`}`,
      );
    }
  };
  const rules = raw.rules.map((r, ri) => buildRule(r, ri, raw, c, timeoutMs, checkRuleRef));
  return { rules, checkRuleRef };
}

/** One rule: its follow entries and items, its browser (its own, else the task's), headers and format. */
function buildRule(
  r: RawRule,
  ri: number,
  raw: RawTask,
  c: Checker,
  timeoutMs: number,
  checkRuleRef: RuleRefCheck,
): PageRule {
  const follow: FollowSpec[] = (r.follow ?? []).flatMap((f, fi) => {
    if (f.to !== undefined) checkRuleRef(['rules', ri, 'follow', fi, 'to'], f.to);
    const spec = buildFollow(f, ['rules', ri, 'follow', fi], c);
    return spec ? [spec] : [];
  });
  const items: ItemSpec[] = (r.items ?? []).map((it, ii) => buildItem(it, ['rules', ri, 'items', ii], c));
  // A rule's own `browser` wins over the task's, `false` included.
  const browserAt: Path = r.browser !== undefined ? ['rules', ri, 'browser'] : ['browser'];
  const browserSpec = buildBrowser(r.browser ?? raw.browser, browserAt, timeoutMs, c);
  follow.forEach((f, fi) => {
    // A series goes on from its own pages: a follow that starts one on its own rule starts it again on each page.
    if (f.kind === 'request' && f.request.pages && f.to === r.name && r.follow?.[fi]?.pages?.from === undefined) {
      c.diags.atPath(
        ['rules', ri, 'follow', fi],
        `this follow starts its series (page ${f.request.pages.from}) on every page of '${r.name}', its own pages included, and each series goes on by itself: start the series from a start entry ('url: …{page}'), or set 'pages.from' to the first page this follow should fetch (2 when this page is page 1)`,
        'warning',
        'url',
      );
    }
  });
  const headers = headersOf(r.request?.headers, ['rules', ri, 'request', 'headers'], c);
  const format = r.format ?? null;
  const selectors: (string | null)[] = [
    ...items.flatMap((it) => [it.scope, ...it.fields.map((f) => f.selector)]),
    ...follow.flatMap((f) => (f.kind === 'links' ? [f.selector] : f.request.values.map((v) => v.selector))),
  ];
  const readsJson = format === 'json' || selectors.some((sel) => readsJsonPath({ selector: sel }));
  if (browserSpec && readsJson) {
    c.diags.atPath(
      r.browser !== undefined ? ['rules', ri, 'browser'] : ['rules', ri],
      `a rule that reads JSON is fetched, never rendered in a browser: remove 'browser' here${r.browser === undefined ? ` (it comes from the task's 'browser': set 'browser: false' on this rule)` : ''}`,
    );
  }
  return {
    name: r.name,
    match: c.patterns(['rules', ri, 'match'], r.match),
    follow,
    items,
    browser: browserSpec,
    headers,
    format,
    readsJson,
  };
}

/** A rule's (or the task's) `browser`: how a rendered page waits, what it blocks, its timeout; null: fetched. */
function buildBrowser(b: RawBrowser | undefined, path: Path, defaultTimeoutMs: number, c: Checker): BrowserSpec | null {
  if (b === undefined || b === false) return null;
  const spec = b === true ? {} : b;
  let waitFor: BrowserWait = { kind: 'load' };
  const w = spec.waitFor;
  if (typeof w === 'object') {
    c.selector([...path, 'waitFor', 'selector'], w.selector);
    waitFor = { kind: 'selector', selector: w.selector };
  } else if (w === 'load' || w === 'domcontentloaded' || w === 'networkidle') {
    waitFor = { kind: w };
  } else if (w !== undefined) {
    waitFor = { kind: 'delay', ms: c.duration([...path, 'waitFor'], w) };
  }
  const limit = spec.timeout !== undefined ? c.duration([...path, 'timeout'], spec.timeout) : defaultTimeoutMs;
  if (waitFor.kind === 'delay' && waitFor.ms >= limit) {
    c.diags.atPath(
      [...path, 'waitFor'],
      `a pause of ${waitFor.ms} ms never ends within the render's timeout (${limit} ms): shorten it or raise 'timeout'`,
    );
  }
  const actions = parseActions(spec.actions, [...path, 'actions'], {
    report: (p, m, sev) => c.diags.atPath(p, m, sev),
    selector: c.selector,
    duration: c.duration,
    renderTimeoutMs: limit,
    allowScripts: c.allowScripts,
  });
  return {
    waitFor,
    block: spec.block ?? DEFAULTS.browserBlock,
    timeoutMs: limit,
    screenshot: spec.screenshot ?? 'never',
    actions,
  };
}
