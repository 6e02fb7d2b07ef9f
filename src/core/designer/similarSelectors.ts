import type { CheerioAPI } from 'cheerio/slim';
import { isTag, type Element } from 'domhandler';
import { checkSelector } from '../extract/selectors';
import { proposeFollows } from './followProposals';
import type { PreparedPage } from './page';
import type { SelectorSite } from './sites';

// Quick fixes for a selector that matches nothing on its rule's page (issue 23, item 10): selectors close to it
// that do match there. A class, id or tag the page does not have is most often a typo (`.prduct_pod`), so the
// nearest name the page does have comes first; then the selector with one part left out (`article.card h3 a`
// without `.card`); for a follow rule, the links the page shows (followProposals.ts). Each is checked on the page
// the way the rule reads it, with its count.

export interface SimilarSelector {
  readonly selector: string;
  /** Elements it matches (inside the item scope elements, for a field in a scope). */
  readonly count: number;
  /** Why it is offered, for the quick fix's title. */
  readonly why: string;
}

const MAX_CANDIDATES = 60;

/** Up to `max` selectors near `site`'s that match on `page`, best first. */
export function similarSelectors(page: PreparedPage, site: SelectorSite, max = 3): SimilarSelector[] {
  const selector = site.selector;
  if (selector === null || checkSelector(selector)) return [];
  const $ = page.$;
  const scopes = site.kind === 'field' && site.itemScope !== null ? safeSelect($, site.itemScope) : null;
  if (scopes && scopes.length === 0) return [];
  const count = (sel: string) => {
    if (checkSelector(sel)) return 0;
    try {
      return scopes ? scopes.reduce((n, s) => n + $(s).find(sel).length, 0) : $(sel).length;
    } catch {
      return 0;
    }
  };
  const out: SimilarSelector[] = [];
  const seen = new Set([selector]);
  const offer = (sel: string, why: string) => {
    if (seen.has(sel) || seen.size > MAX_CANDIDATES) return;
    seen.add(sel);
    const n = count(sel);
    if (n > 0) out.push({ selector: sel, count: n, why });
  };
  const names = namesOn($);
  for (const c of typoFixes(selector, names)) offer(c.selector, c.why);
  for (const c of relaxations(selector)) offer(c.selector, c.why);
  if (site.kind === 'follow') {
    const f = proposeFollows($, page.finalUrl);
    if (f.next) offer(f.next.selector, 'the next-page link this page shows');
    if (f.items) offer(f.items.selector, 'the links this page lists');
  }
  return out.slice(0, max);
}

interface Names {
  readonly classes: ReadonlySet<string>;
  readonly ids: ReadonlySet<string>;
  readonly tags: ReadonlySet<string>;
}

function namesOn($: CheerioAPI): Names {
  const classes = new Set<string>();
  const ids = new Set<string>();
  const tags = new Set<string>();
  for (const el of $('*').toArray().filter(isTag)) {
    tags.add(el.name);
    if (el.attribs.id) ids.add(el.attribs.id);
    for (const c of (el.attribs.class ?? '').split(/\s+/)) if (c) classes.add(c);
  }
  return { classes, ids, tags };
}

const NAME = /(^|[\s>+~(,])([a-zA-Z][\w-]*)|([.#])(-?[_a-zA-Z][\w-]*)/g;

/** Each class, id or tag of the selector that the page lacks, replaced by the nearest one it has. */
function typoFixes(selector: string, names: Names): { selector: string; why: string }[] {
  const out: { selector: string; why: string }[] = [];
  for (const m of scanNames(selector)) {
    const pool = m.kind === '.' ? names.classes : m.kind === '#' ? names.ids : names.tags;
    if (pool.has(m.name)) continue;
    const near = nearest(m.name, pool);
    if (!near) continue;
    out.push({
      selector: selector.slice(0, m.start) + near + selector.slice(m.end),
      why: `'${m.kind === 'tag' ? '' : m.kind}${near}' is on the page, '${m.kind === 'tag' ? '' : m.kind}${m.name}' is not`,
    });
  }
  return out;
}

/** Names in the selector outside brackets, quotes and pseudo-class arguments, with where each is. */
function scanNames(selector: string): { kind: '.' | '#' | 'tag'; name: string; start: number; end: number }[] {
  const masked = maskBrackets(selector);
  const out: { kind: '.' | '#' | 'tag'; name: string; start: number; end: number }[] = [];
  for (const m of masked.matchAll(NAME)) {
    if (m[2] !== undefined) {
      const start = m.index + m[1]!.length;
      // A pseudo-class name (`:not`) is not a tag.
      if (selector[start - 1] === ':') continue;
      out.push({ kind: 'tag', name: m[2], start, end: start + m[2].length });
    } else {
      const start = m.index + 1;
      out.push({ kind: m[3] as '.' | '#', name: m[4]!, start, end: start + m[4]!.length });
    }
  }
  return out;
}

/** The selector with one descendant step, or one class / attribute / pseudo-class of a step, left out. */
function relaxations(selector: string): { selector: string; why: string }[] {
  const steps = splitSteps(selector);
  if (!steps) return [];
  const out: { selector: string; why: string }[] = [];
  if (steps.length > 1) {
    for (let i = 0; i < steps.length; i++)
      out.push({ selector: [...steps.slice(0, i), ...steps.slice(i + 1)].join(' '), why: `without '${steps[i]}'` });
  }
  steps.forEach((step, i) => {
    const parts = maskBrackets(step).match(/^[a-zA-Z*][\w-]*|[.#][\w-]+|\[[^\]]*\]|:[\w-]+(\([^)]*\))?/g);
    if (!parts || parts.length < 2) return;
    let at = 0;
    for (const p of parts) {
      const start = maskBrackets(step).indexOf(p, at);
      at = start + p.length;
      const real = step.slice(start, start + p.length);
      const rest = step.slice(0, start) + step.slice(start + p.length);
      if (rest === '' || /^[>+~]/.test(rest)) continue;
      out.push({ selector: [...steps.slice(0, i), rest, ...steps.slice(i + 1)].join(' '), why: `without '${real}'` });
    }
  });
  return out;
}

/** Descendant steps of a selector without commas or other combinators; null when it has them (left alone). */
function splitSteps(selector: string): string[] | null {
  const masked = maskBrackets(selector);
  if (/[,>+~]/.test(masked)) return null;
  const steps: string[] = [];
  const re = /\S+/g;
  for (const m of masked.matchAll(re)) steps.push(selector.slice(m.index, m.index + m[0].length));
  return steps;
}

/** The selector with what is inside [...], (...) and quotes replaced by underscores, so scans see the structure. */
function maskBrackets(s: string): string {
  let depth = 0;
  let quote: string | null = null;
  let out = '';
  for (const ch of s) {
    if (quote) {
      out += '_';
      if (ch === quote) quote = null;
    } else if (ch === '"' || ch === "'") {
      quote = ch;
      out += '_';
    } else if (ch === '[' || ch === '(') {
      depth++;
      out += depth === 1 ? ch : '_';
    } else if (ch === ']' || ch === ')') {
      depth = Math.max(0, depth - 1);
      out += depth === 0 ? ch : '_';
    } else out += depth > 0 ? '_' : ch;
  }
  return out;
}

/** The name in `pool` closest to `name` (edit distance at most a quarter of its length, at least 1); null if none. */
function nearest(name: string, pool: ReadonlySet<string>): string | null {
  const limit = Math.max(1, Math.floor(name.length / 4));
  let best: { name: string; d: number } | null = null;
  for (const p of pool) {
    if (Math.abs(p.length - name.length) > limit) continue;
    const d = editDistance(name.toLowerCase(), p.toLowerCase(), limit);
    if (d <= limit && (!best || d < best.d)) best = { name: p, d };
  }
  return best?.name ?? null;
}

/** Levenshtein distance, giving up (returning limit + 1) once it is over `limit`. */
function editDistance(a: string, b: string, limit: number): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      rowMin = Math.min(rowMin, cur[j]!);
    }
    if (rowMin > limit) return limit + 1;
    prev = cur;
  }
  return prev[b.length]!;
}

function safeSelect($: CheerioAPI, sel: string): Element[] {
  try {
    return $(sel).toArray().filter(isTag);
  } catch {
    return [];
  }
}
