// `browser.actions`: what a rendered page does after it loaded and before it is extracted (scroll an infinite feed,
// click "load more", fill a search form, run a workspace script). Pure: the shapes from the file in, the model and
// located problems out; worker/browser/actions.ts runs them.
//
// Every action is bounded: a timeout of its own (never past the render's `timeout`, which covers the whole page) and,
// for the ones that repeat, at most `max` times (the schema caps `max` at 1000). A script (`evaluate`) is code from the workspace run in the page:
// the parse refuses it where its caller says scripts are not allowed (the CLI without --allow-scripts).

import { templateProblems } from './secrets';
import { escapesFolder, isAbsolutePath } from './storeUrl';
import { parseDuration } from '../units';
import type { ActionKind, PageAction, WaitTarget } from './model';

/** Longest an action waits when its `timeout` is not given (never past the render's own deadline). */
const DEFAULT_ACTION_TIMEOUT_MS = 10_000;
/** How long a scroll or a repeated click waits for the page to grow before taking it as done. */
const DEFAULT_IDLE_MS = 1_000;
/** Scrolls when `max` is not given. */
const DEFAULT_MAX_SCROLLS = 20;
/** Clicks of an `untilGone` click when `max` is not given. */
const DEFAULT_MAX_CLICKS = 50;

type RawTimed = { timeout?: string | number };
/** One entry of `actions:` as the schema lets it through: one key, the action's name. */
export interface RawAction {
  scroll?: RawTimed & { selector?: string; count?: number; max?: number; idle?: string | number };
  click?:
    | string
    | (RawTimed & { selector: string; untilGone?: boolean; max?: number; idle?: string | number; optional?: boolean });
  wait?: string | number | (RawTimed & { selector: string; state?: 'attached' | 'visible' | 'hidden' | 'detached' });
  fill?: RawTimed & { selector: string; value: string };
  select?: RawTimed & { selector: string; value: string };
  press?: string | (RawTimed & { key: string; selector?: string });
  evaluate?: string | (RawTimed & { file: string });
}

type Path = (string | number)[];

/** What the task parser lends: where problems go, and its checks of selectors and durations (parse.ts). */
export interface ActionChecks {
  readonly report: (path: Path, message: string, severity?: 'error' | 'warning') => void;
  readonly selector: (path: Path, selector: string) => void;
  readonly duration: (path: Path, value: string | number) => number;
  /** The render's timeout: no action (nor pause) may need longer. */
  readonly renderTimeoutMs: number;
  /** false: `evaluate` is refused (the CLI without --allow-scripts); undefined: not decided here (the editor). */
  readonly allowScripts?: boolean;
}

const ACTION_NAMES: readonly ActionKind[] = ['scroll', 'click', 'wait', 'fill', 'select', 'press', 'evaluate'];

/**
 * Said after a script's name where it is refused: why it is not allowed by default, and what allows it (`how`: the
 * CLI's flag unless the caller says otherwise, e.g. the library's option).
 */
export function scriptsRefused(
  how = "give --allow-scripts to 'crawl-studio run' (or 'worker', 'fixture save'); in the editor, trust the workspace",
): string {
  return `runs a script of the workspace in the page, which is allowed only in a trusted workspace and when asked for: ${how}`;
}

/** `browser.actions` of a rule (or of the task's `browser`), checked; entries with problems are left out. */
export function parseActions(raw: readonly RawAction[] | undefined, path: Path, c: ActionChecks): PageAction[] {
  return (raw ?? []).flatMap((entry, i) => {
    const at = [...path, i];
    const names = ACTION_NAMES.filter((n) => entry[n] !== undefined);
    if (names.length !== 1) {
      // None: the schema said so (an unknown or missing key).
      if (names.length > 1)
        c.report(
          at,
          `one action an entry, not ${names.map((n) => `'${n}'`).join(' and ')}: write each as its own '- ${names[0]}: …' entry, in the order they should run`,
        );
      return [];
    }
    const action = parseOne(names[0]!, entry, [...at, names[0]!], c);
    return action ? [action] : [];
  });
}

function parseOne(kind: ActionKind, entry: RawAction, at: Path, c: ActionChecks): PageAction | null {
  const timeoutOf = (spec: unknown): number => {
    const t = spec !== null && typeof spec === 'object' ? (spec as RawTimed).timeout : undefined;
    if (t === undefined) return Math.min(DEFAULT_ACTION_TIMEOUT_MS, c.renderTimeoutMs);
    const ms = c.duration([...at, 'timeout'], t);
    if (ms > c.renderTimeoutMs)
      c.report(
        [...at, 'timeout'],
        `${ms} ms is longer than the render's timeout (${c.renderTimeoutMs} ms), which bounds the page with its actions: shorten it or raise the browser's 'timeout'`,
      );
    return ms;
  };
  const sel = (path: Path, s: string): string => (c.selector(path, s), s);
  switch (kind) {
    case 'scroll': {
      const s = entry.scroll!;
      if (s.count !== undefined && s.selector === undefined)
        c.report(
          [...at, 'count'],
          `'count' counts the elements of 'selector': give the selector of the entries that load (e.g. selector: .entry)`,
        );
      return {
        kind,
        selector: s.selector !== undefined ? sel([...at, 'selector'], s.selector) : null,
        count: s.count ?? null,
        max: s.max ?? DEFAULT_MAX_SCROLLS,
        idleMs: idleOf(s.idle, at, c),
        timeoutMs: timeoutOf(s),
      };
    }
    case 'click': {
      const s = typeof entry.click === 'string' ? { selector: entry.click } : entry.click!;
      if (s.max !== undefined && !s.untilGone)
        c.report([...at, 'max'], `'max' bounds the clicks of 'untilGone: true'; a click without it clicks once`);
      return {
        kind,
        selector: sel(typeof entry.click === 'string' ? at : [...at, 'selector'], s.selector),
        untilGone: s.untilGone ?? false,
        max: s.untilGone ? (s.max ?? DEFAULT_MAX_CLICKS) : 1,
        idleMs: idleOf(s.idle, at, c),
        optional: s.optional ?? false,
        timeoutMs: timeoutOf(s),
      };
    }
    case 'wait':
      return { kind, for: waitTarget(entry.wait!, at, c), timeoutMs: timeoutOf(entry.wait) };
    case 'fill':
    case 'select': {
      const s = entry[kind]!;
      for (const p of templateProblems(s.value, 'request')) c.report([...at, 'value'], p);
      return { kind, selector: sel([...at, 'selector'], s.selector), value: s.value, timeoutMs: timeoutOf(s) };
    }
    case 'press': {
      const s = typeof entry.press === 'string' ? { key: entry.press } : entry.press!;
      return {
        kind,
        key: s.key,
        selector: s.selector !== undefined ? sel([...at, 'selector'], s.selector) : null,
        timeoutMs: timeoutOf(s),
      };
    }
    case 'evaluate': {
      const s = typeof entry.evaluate === 'string' ? { file: entry.evaluate } : entry.evaluate!;
      const filePath = typeof entry.evaluate === 'string' ? at : [...at, 'file'];
      if (c.allowScripts === false) c.report(filePath, `'${s.file}' ${scriptsRefused()}`);
      else if (isAbsolutePath(s.file) || escapesFolder(s.file))
        c.report(
          filePath,
          `'${s.file}' is outside the task file's folder: a script comes from the workspace, written relative to the task file (e.g. scripts/expand.js)`,
        );
      else if (!/\.(m?js)$/i.test(s.file))
        c.report(filePath, `'${s.file}' is not a JavaScript file: name a .js file of the workspace`);
      return { kind, file: s.file, timeoutMs: timeoutOf(s) };
    }
  }
}

function idleOf(idle: string | number | undefined, at: Path, c: ActionChecks): number {
  if (idle === undefined) return DEFAULT_IDLE_MS;
  const ms = c.duration([...at, 'idle'], idle);
  if (ms >= c.renderTimeoutMs)
    c.report(
      [...at, 'idle'],
      `waiting ${ms} ms for the page to grow never ends within the render's timeout (${c.renderTimeoutMs} ms): shorten it or raise 'timeout'`,
    );
  return ms;
}

function waitTarget(w: NonNullable<RawAction['wait']>, at: Path, c: ActionChecks): WaitTarget {
  if (typeof w === 'object') {
    c.selector([...at, 'selector'], w.selector);
    return { kind: 'selector', selector: w.selector, state: w.state ?? 'attached' };
  }
  if (w === 'networkidle') return { kind: 'networkidle' };
  const ms = typeof w === 'number' ? w : parseDuration(w);
  if (ms >= c.renderTimeoutMs)
    c.report(
      at,
      `a pause of ${ms} ms never ends within the render's timeout (${c.renderTimeoutMs} ms): shorten it or raise 'timeout'`,
    );
  return { kind: 'delay', ms };
}

/** An action as a step report names it: its kind and what it acts on (never a value it types, which may be secret). */
export function describeAction(a: PageAction): string {
  switch (a.kind) {
    case 'scroll':
      return a.selector ? `scroll (${a.selector}${a.count !== null ? ` until ${a.count}` : ''})` : 'scroll';
    case 'click':
      return `click ${a.selector}${a.untilGone ? ' until gone' : ''}`;
    case 'wait':
      return a.for.kind === 'selector'
        ? `wait for ${a.for.selector}${a.for.state !== 'attached' ? ` (${a.for.state})` : ''}`
        : a.for.kind === 'delay'
          ? `wait ${a.for.ms} ms`
          : 'wait for network idle';
    case 'fill':
    case 'select':
      return `${a.kind} ${a.selector}`;
    case 'press':
      return `press ${a.key}${a.selector ? ` in ${a.selector}` : ''}`;
    case 'evaluate':
      return `evaluate ${a.file}`;
  }
}

/** What one action did on a page: the worker's renders report it to the designer's preview (and `fixture save`). */
export interface ActionStep {
  /** Its place in `browser.actions`. */
  readonly index: number;
  readonly kind: ActionKind;
  /** What it acted on, as describeAction says it (never a value it typed). */
  readonly action: string;
  /** Elements matched after it (scroll with a selector, wait, fill…), or scrolls and clicks done. */
  readonly count: number | null;
  /** What `count` counts: 'elements', 'scrolls', 'clicks'. */
  readonly unit: string | null;
  readonly ms: number;
  /** Why it failed (the page fails with it); null: it did its part. */
  readonly error: string | null;
}

/** A step as a line: "scroll (.entry until 60): 60 elements in 1.2 s", "click button.more: failed after 0.4 s: …". */
export function formatStep(s: ActionStep): string {
  const took = s.ms < 1000 ? `${s.ms} ms` : `${(s.ms / 1000).toFixed(1)} s`;
  if (s.error !== null) return `${s.action}: failed after ${took}: ${s.error}`;
  return `${s.action}: ${s.count !== null ? `${s.count} ${s.unit ?? ''} in ` : ''}${took}`.replace(/ +in/, ' in');
}

/** The scripts a task's actions run (relative to its file's folder): what a worker reads before it starts. */
export function actionScripts(
  rules: readonly { readonly browser: { readonly actions: readonly PageAction[] } | null }[],
): string[] {
  const files = rules.flatMap((r) =>
    (r.browser?.actions ?? []).flatMap((a) => (a.kind === 'evaluate' ? [a.file] : [])),
  );
  return [...new Set(files)];
}
