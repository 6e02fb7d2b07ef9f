import type { CheerioAPI } from 'cheerio/slim';
import { isTag, isText, type AnyNode, type Element } from 'domhandler';
import { classKind, looksGenerated, SEMANTIC_TAGS, STABLE_ATTRS } from './selectorNames';

// Selector suggestion for the designer's picker: given the element a person clicked, propose a selector that
// is short and survives the next deploy of the site. Stable hooks first (ids, meaningful classes, semantic
// attributes), then tags, positions last; classes and ids that look machine-made (CSS modules, CSS-in-JS
// hashes, counters) are never used because they change with every build.
//
// Candidates are sequences of simple selectors joined by descendant combinators. Instead of running every
// candidate through the selector engine, each simple selector ("step") is run once and candidates are
// evaluated by walking ancestors against those match sets: the same semantics as css-select's descendant
// combinator, thousands of candidates for the price of a few dozen queries. The winner is re-run through
// cheerio at the end, so the reported count is what extraction will see.

export interface SelectorCandidate {
  readonly selector: string;
  /** Matches in the document (or inside the scope element, for a scoped candidate). */
  readonly count: number;
}

export interface ListCandidate extends SelectorCandidate {
  /** Selects each repeating element (a natural item `scope`). */
  readonly itemScope: string;
  /** The clicked element relative to its repeating element; null when the clicked element is the repeating one. */
  readonly relative: string | null;
}

export interface ScopedCandidate extends SelectorCandidate {
  /** How many scope elements the selector finds something in, of how many (at most 50, evenly sampled). */
  readonly coverage: { readonly matched: number; readonly scopes: number };
}

export interface SelectorSuggestion {
  /**
   * The one to insert: the list selector when the element is one of a list (relative to the scope element when
   * a scope was given), else the scoped one when a scope was given, else the unique one.
   */
  readonly selector: string;
  /** Matches in the document, or inside the scope element for `scoped` and a list found inside a scope. */
  readonly count: number;
  readonly kind: 'scoped' | 'list' | 'unique';
  /** Matches the clicked element only. */
  readonly unique: SelectorCandidate;
  readonly list: ListCandidate | null;
  readonly scoped: ScopedCandidate | null;
  /** e.g. `a.title "The river of glass"`, for showing what was clicked. */
  readonly element: string;
  /** The suggested selector picks many elements on purpose (a field would want `all: true`). */
  readonly multiple: boolean;
}

export interface SuggestScope {
  /** The scope element the clicked element is in. */
  readonly element: Element;
  /** Every element the item scope selector matches, to prefer selectors that work in all of them. */
  readonly all: readonly Element[];
}

export interface SuggestOptions {
  readonly scope?: SuggestScope | null;
  /** The selector will select every match (a follow rule): offer the list whenever there is one. */
  readonly preferList?: boolean;
}

// ---------------------------------------------------------------------------------------------------------
// Steps: simple selectors for one element, each with a cost (lower is better)

interface Step {
  readonly sel: string;
  readonly cost: number;
  readonly kind: 'id' | 'class' | 'attr' | 'tag' | 'position';
}

const COST = {
  id: 1,
  class: 2,
  classPair: 3,
  attr: 2.5,
  semanticTag: 2.2,
  genericTag: 3.5,
  weakClass: 5,
  position: 6,
  /** Per extra compound: shorter selectors read better and assume less about the page's structure. */
  join: 0.5,
} as const;

function tagName(el: Element): string {
  return el.name.toLowerCase();
}

function classesOf(el: Element): string[] {
  return (el.attribs.class ?? '').split(/\s+/).filter(Boolean);
}

function quoteAttr(value: string): string {
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

function elementChildren(el: AnyNode | null): Element[] {
  if (!el || !('children' in el)) return [];
  return (el.children as AnyNode[]).filter(isTag);
}

function parentElement(el: AnyNode): Element | null {
  const p = el.parent;
  return p && isTag(p) ? p : null;
}

/** The header cell's text of a key-value table row (`<tr><th>UPC</th><td>…`): a stable name for the row. */
function rowLabel(tr: Element): string | null {
  const th = elementChildren(tr)[0];
  if (!th || tagName(th) !== 'th') return null;
  const text = textOf(th).replace(/\s+/g, ' ').trim();
  return text.length > 0 && text.length <= 30 && !/["\\()]/.test(text) ? text : null;
}

function textOf(node: AnyNode): string {
  if (isText(node)) return node.data;
  if (!('children' in node)) return '';
  return (node.children as AnyNode[]).map(textOf).join('');
}

function positionStep(el: Element): Step | null {
  const tag = tagName(el);
  const sameType = elementChildren(el.parent).filter((c) => tagName(c) === tag);
  if (sameType.length < 2) return null;
  return { sel: `${tag}:nth-of-type(${sameType.indexOf(el) + 1})`, cost: COST.position, kind: 'position' };
}

function stepsFor(el: Element, opts: { ids: boolean; positions: boolean }): Step[] {
  const tag = tagName(el);
  const out: Step[] = [];
  const id = el.attribs.id;
  if (opts.ids && id && !looksGenerated(id)) out.push({ sel: `#${id}`, cost: COST.id, kind: 'id' });
  const classes = classesOf(el);
  const meaningful = classes.filter((c) => classKind(c) === 'meaningful');
  for (const c of meaningful) out.push({ sel: `${tag}.${c}`, cost: COST.class, kind: 'class' });
  for (let i = 0; i < Math.min(meaningful.length, 4); i++) {
    for (let j = i + 1; j < Math.min(meaningful.length, 4); j++) {
      out.push({ sel: `${tag}.${meaningful[i]}.${meaningful[j]}`, cost: COST.classPair, kind: 'class' });
    }
  }
  for (const name of STABLE_ATTRS) {
    const v = el.attribs[name];
    if (v === undefined || v.length === 0 || v.length > 40 || /[\n\r"\\]/.test(v)) continue;
    if (name !== 'aria-label' && looksGenerated(v.replace(/[\s:.]/g, '-'))) continue;
    out.push({ sel: `${tag}[${name}=${quoteAttr(v)}]`, cost: COST.attr, kind: 'attr' });
  }
  const label = tag === 'tr' ? rowLabel(el) : null;
  if (label) out.push({ sel: `tr:has(th:contains(${quoteAttr(label)}))`, cost: COST.classPair, kind: 'attr' });
  out.push({ sel: tag, cost: SEMANTIC_TAGS.has(tag) ? COST.semanticTag : COST.genericTag, kind: 'tag' });
  for (const c of classes.filter((c) => classKind(c) === 'weak').slice(0, 2))
    out.push({ sel: `${tag}.${c}`, cost: COST.weakClass, kind: 'class' });
  if (opts.positions) {
    const pos = positionStep(el);
    if (pos) out.push(pos);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// Evaluating candidates against precomputed step match sets

class Matcher {
  private readonly sets = new Map<string, Set<Element>>();
  private readonly lists = new Map<string, Element[]>();
  constructor(private readonly $: CheerioAPI) {}

  list(sel: string): Element[] {
    let l = this.lists.get(sel);
    if (!l) {
      const nth = /^([a-z][a-z0-9]*):nth-of-type\((\d+)\)$/.exec(sel);
      try {
        l = nth ? this.nthOfType(nth[1]!, Number(nth[2])) : this.$(sel).toArray().filter(isTag);
      } catch {
        l = [];
      }
      this.lists.set(sel, l);
      this.sets.set(sel, new Set(l));
    }
    return l;
  }

  /**
   * `tag:nth-of-type(k)` in one pass: css-select counts siblings for every candidate, which is quadratic in a
   * list of a thousand products.
   */
  private nthOfType(tag: string, k: number): Element[] {
    const seen = new Map<AnyNode | null, number>();
    const out: Element[] = [];
    for (const el of this.list(tag)) {
      const n = (seen.get(el.parent) ?? 0) + 1;
      seen.set(el.parent, n);
      if (n === k) out.push(el);
    }
    return out;
  }

  set(sel: string): Set<Element> {
    this.list(sel);
    return this.sets.get(sel)!;
  }

  /**
   * Elements matching `steps` joined by descendant combinators, in document order. With a boundary, only
   * its descendants, and ancestors are looked for up to the boundary itself (as cheerio's `.find` does).
   */
  evaluate(steps: readonly string[], boundary: Element | null, limit = Infinity): Element[] {
    const out: Element[] = [];
    const last = this.list(steps[steps.length - 1]!);
    for (const el of last) {
      if (boundary && !isStrictDescendant(el, boundary)) continue;
      if (this.chainOk(el, steps, boundary)) {
        out.push(el);
        if (out.length >= limit) break;
      }
    }
    return out;
  }

  private chainOk(el: Element, steps: readonly string[], boundary: Element | null): boolean {
    let cur: AnyNode | null = el.parent;
    for (let i = steps.length - 2; i >= 0; i--) {
      const set = this.set(steps[i]!);
      let found: Element | null = null;
      while (cur && isTag(cur)) {
        if (set.has(cur)) {
          found = cur;
          break;
        }
        if (cur === boundary) break;
        cur = cur.parent;
      }
      if (!found || (found === boundary && i > 0)) return false;
      cur = found === boundary ? null : found.parent;
    }
    return true;
  }
}

function isStrictDescendant(el: AnyNode, ancestor: Element): boolean {
  for (let p = el.parent; p; p = p.parent) if (p === ancestor) return true;
  return false;
}

interface Combo {
  readonly steps: readonly string[];
  readonly cost: number;
}

/** Ancestors of `el` up to (not including) `stop`, nearest first; html and body add nothing to a selector. */
function ancestorsOf(el: Element, stop: Element | null): Element[] {
  const out: Element[] = [];
  for (let p = parentElement(el); p && p !== stop; p = parentElement(p)) {
    const t = tagName(p);
    if (t === 'html' || t === 'body') continue;
    out.push(p);
  }
  return out;
}

/** Every candidate of up to three compounds ending in one of `targetSteps`, cheapest first. */
function combos(targetSteps: readonly Step[], ancestors: readonly Element[], positions: boolean): Combo[] {
  const near = ancestors.slice(0, 10);
  // Far ancestors only contribute ids: `#main ... a` is stable whatever lies between.
  const far = ancestors.slice(10).filter((a) => a.attribs.id && !looksGenerated(a.attribs.id));
  const anc = [...near, ...far].map((a, depth) => ({
    depth,
    steps: stepsFor(a, { ids: true, positions }).slice(0, 5),
  }));
  const out: Combo[] = [];
  for (const t of targetSteps) {
    out.push({ steps: [t.sel], cost: t.cost });
    for (const a1 of anc) {
      for (const s1 of a1.steps) {
        out.push({ steps: [s1.sel, t.sel], cost: s1.cost + t.cost + COST.join });
        for (const a2 of anc) {
          if (a2.depth <= a1.depth) continue;
          for (const s2 of a2.steps)
            out.push({ steps: [s2.sel, s1.sel, t.sel], cost: s2.cost + s1.cost + t.cost + 2 * COST.join });
        }
      }
    }
  }
  // Stable sort: equal costs keep the order steps were generated in (ids, classes, attributes, tags).
  return out.sort((a, b) => a.cost - b.cost);
}

/** Bounds per search (candidates, milliseconds), so a pathological page cannot stall the picker. */
const MAX_EVALUATIONS = 4000;
const SEARCH_MS = 150;

function budget(): (i: number) => boolean {
  const end = performance.now() + SEARCH_MS;
  return (i) => i < MAX_EVALUATIONS && (i % 32 !== 0 || performance.now() < end);
}

function sameMembers(a: readonly Element[], b: ReadonlySet<Element>): boolean {
  return a.length === b.size && a.every((x) => b.has(x));
}

// ---------------------------------------------------------------------------------------------------------
// The three suggestions

/**
 * A selector matching only `target` in the document: the fallback is a path from a stable ancestor, then a
 * full `:nth-child` path. Unique by construction: its count is 1 (the unit tests check that through cheerio).
 */
function uniqueSelector(m: Matcher, target: Element): string {
  const targetSteps = stepsFor(target, { ids: true, positions: true });
  const list = combos(targetSteps, ancestorsOf(target, null), true);
  const more = budget();
  for (let i = 0; i < list.length && more(i); i++) {
    const found = m.evaluate(list[i]!.steps, null, 2);
    if (found.length === 1 && found[0] === target) return list[i]!.steps.join(' ');
  }
  return anchoredPath(m, target, null) ?? nthChildPath(target, null);
}

/**
 * A child-combinator path from the nearest ancestor that a stable step picks out on its own:
 * `#main-nav > ul > li:nth-of-type(2) > a`. Null when no ancestor has such a step.
 */
function anchoredPath(m: Matcher, target: Element, boundary: Element | null): string | null {
  const chain: Element[] = [target];
  for (let a = parentElement(target); a && a !== boundary; a = parentElement(a)) {
    const anchor = stepsFor(a, { ids: true, positions: false }).find((s) => {
      const found = m.evaluate([s.sel], boundary, 2);
      return found.length === 1 && found[0] === a;
    });
    if (anchor) {
      const parts = chain.reverse().map((el) => positionStep(el)?.sel ?? tagName(el));
      return [anchor.sel, ...parts].join(' > ');
    }
    chain.push(a);
  }
  return null;
}

/** `body > div:nth-child(2) > a:nth-child(1)`: always unique, never pretty. Relative (`> …`) under a scope. */
function nthChildPath(target: Element, stop: Element | null): string {
  const parts: string[] = [];
  for (let el: Element | null = target; el && el !== stop; el = parentElement(el)) {
    const siblings = elementChildren(el.parent);
    parts.unshift(siblings.length > 1 ? `${tagName(el)}:nth-child(${siblings.indexOf(el) + 1})` : tagName(el));
    if (tagName(el) === 'body') break;
  }
  return (stop ? '> ' : '') + parts.join(' > ');
}

/**
 * The best selector for `target` relative to `scope`, judged over every scope element: unique inside this
 * scope first, then found in as many scope elements as possible, then cheapest.
 */
function scopedSelector(m: Matcher, $: CheerioAPI, target: Element, scope: SuggestScope): ScopedCandidate {
  const targetSteps = stepsFor(target, { ids: false, positions: true });
  // Ids inside a repeating scope are per-item (`price-17`) or collide: leave them out.
  const list = combos(targetSteps, ancestorsOf(target, scope.element), true);
  const unique: Combo[] = [];
  const firstOnly: Combo[] = [];
  const more = budget();
  for (let i = 0; i < list.length && more(i) && unique.length < 8; i++) {
    const found = m.evaluate(list[i]!.steps, scope.element, 2);
    if (found[0] !== target) continue;
    (found.length === 1 ? unique : firstOnly).push(list[i]!);
  }
  const pool = unique.length > 0 ? unique : firstOnly.slice(0, 8);
  const probe = sample(scope.all, 50);
  let best: { combo: Combo; matched: number } | null = null;
  for (const combo of pool) {
    const sel = combo.steps.join(' ');
    const matched = probe.filter((s) => safeFind($, s, sel) > 0).length;
    if (!best || matched > best.matched || (matched === best.matched && combo.cost < best.combo.cost))
      best = { combo, matched };
  }
  const selector = best
    ? best.combo.steps.join(' ')
    : (anchoredPath(m, target, scope.element) ?? nthChildPath(target, scope.element));
  return {
    selector,
    count: safeFind($, scope.element, selector),
    coverage: {
      matched: best?.matched ?? probe.filter((s) => safeFind($, s, selector) > 0).length,
      scopes: probe.length,
    },
  };
}

/** At most `n` evenly spaced entries: coverage over a thousand scope elements is judged on fifty of them. */
function sample<T>(list: readonly T[], n: number): T[] {
  if (list.length <= n) return [...list];
  return Array.from({ length: n }, (_, i) => list[Math.floor((i * list.length) / n)]!);
}

function safeFind($: CheerioAPI, el: Element, sel: string): number {
  try {
    return $(el).find(sel).length;
  } catch {
    return 0;
  }
}

function safeCount($: CheerioAPI, sel: string): number {
  try {
    return $(sel).length;
  } catch {
    return 0;
  }
}

/** Siblings that look like `el` (same tag, a shared meaningful class if it has any): the rows of a list. */
function similarSiblings(el: Element): Element[] {
  const tag = tagName(el);
  const mine = meaningfulClasses(el);
  return elementChildren(el.parent).filter((s) => {
    if (tagName(s) !== tag) return false;
    if (mine.length === 0) return true;
    const theirs = classesOf(s);
    return mine.some((c) => theirs.includes(c));
  });
}

function meaningfulClasses(el: Element): string[] {
  return classesOf(el).filter((c) => classKind(c) === 'meaningful');
}

/** Table cells are columns, not list entries: in a table the rows repeat. */
const NEVER_REPEATING = new Set(['html', 'head', 'body', 'td', 'th']);

interface Repeat {
  readonly el: Element;
  readonly siblings: Element[];
  /** Whether the siblings look like a list of the same thing (a shared class, or at least three). */
  readonly strong: boolean;
}

/** The closest ancestor-or-self of `target` (inside `stop`) that repeats among its siblings. */
function repeatingAncestor(target: Element, stop: Element | null): Repeat | null {
  for (let el: Element | null = target; el && el !== stop; el = parentElement(el)) {
    if (tagName(el) === 'body' || tagName(el) === 'html') break;
    if (NEVER_REPEATING.has(tagName(el))) continue;
    const siblings = similarSiblings(el);
    if (siblings.length >= 2) return { el, siblings, strong: siblings.length >= 3 || meaningfulClasses(el).length > 0 };
  }
  return null;
}

/** A selector for a repeating element that matches all its similar siblings and, ideally, nothing else. */
function repeatingSelector(m: Matcher, el: Element, siblings: readonly Element[], boundary: Element | null): string {
  const wanted = new Set(siblings);
  // Steps every sibling shares: no ids, no positions (they name one row).
  const steps = stepsFor(el, { ids: false, positions: false }).filter((s) =>
    siblings.every((x) => m.set(s.sel).has(x)),
  );
  const list = combos(steps, ancestorsOf(el, boundary), false);
  let best: { sel: string; extra: number } | null = null;
  const more = budget();
  for (let i = 0; i < list.length && more(i); i++) {
    const found = m.evaluate(list[i]!.steps, boundary);
    if (sameMembers(found, wanted)) return list[i]!.steps.join(' ');
    if (siblings.every((s) => found.includes(s))) {
      const extra = found.length - siblings.length;
      if (!best || extra < best.extra) best = { sel: list[i]!.steps.join(' '), extra };
    }
  }
  return best?.sel ?? tagName(el);
}

interface ListResult {
  readonly candidate: ListCandidate;
  /** Whether to offer it first: the element is one of a real list and not singled out by a class of its own. */
  readonly preferred: boolean;
}

/** The list the clicked element belongs to, page-wide, or inside `boundary` (an item scope element). */
function listSelector(m: Matcher, $: CheerioAPI, target: Element, boundary: Element | null): ListResult | null {
  const rep = repeatingAncestor(target, boundary);
  if (!rep) return null;
  const count = (sel: string) => (boundary ? safeFind($, boundary, sel) : safeCount($, sel));
  const itemScope = repeatingSelector(m, rep.el, rep.siblings, boundary);
  let candidate: ListCandidate;
  let members: Element[];
  if (rep.el === target) {
    candidate = { selector: itemScope, count: count(itemScope), itemScope, relative: null };
    members = rep.siblings;
  } else {
    const rel = scopedSelector(m, $, target, { element: rep.el, all: rep.siblings });
    const selector = `${itemScope} ${rel.selector}`;
    candidate = { selector, count: count(selector), itemScope, relative: rel.selector };
    members = sample(rep.siblings, 50)
      .map((s) => $(s).find(rel.selector).toArray().find(isTag))
      .filter((x): x is Element => x !== undefined);
  }
  if (candidate.count < 2) return null;
  return { candidate, preferred: rep.strong && !singledOut(target, rep.el, members) };
}

/**
 * Whether the clicked element has a name of its own among the list's members: a class (`td.upc` among plain
 * cells), a stable attribute (`a[rel=next]` among page links), or a labelled table row. Then the person wants
 * that element, not the list.
 */
function singledOut(target: Element, repeating: Element, members: readonly Element[]): boolean {
  if (tagName(repeating) === 'tr' && rowLabel(repeating)) return true;
  if (meaningfulClasses(target).some((c) => !members.every((x) => classesOf(x).includes(c)))) return true;
  return STABLE_ATTRS.some((a) => {
    const v = target.attribs[a];
    return v !== undefined && a !== 'type' && a !== 'role' && !members.every((x) => x.attribs[a] === v);
  });
}

/** A short description of an element for people: tag, id or first classes, and the start of its text. */
function describeElement($: CheerioAPI, el: Element): string {
  const id = el.attribs.id ? `#${el.attribs.id}` : '';
  const cls = classesOf(el)
    .slice(0, 2)
    .map((c) => `.${c}`)
    .join('');
  const text = $(el).text().replace(/\s+/g, ' ').trim();
  return `${tagName(el)}${id}${cls}${text ? ` "${text.length > 40 ? text.slice(0, 40) + '…' : text}"` : ''}`;
}

/**
 * Suggests selectors for `target`: one unique to it, a list selector when it is one of many similar elements
 * (`article.product_pod h3 a`), and with `scope`, one relative to the item scope element it is in.
 */
export function suggestSelector($: CheerioAPI, target: Element, opts: SuggestOptions = {}): SelectorSuggestion {
  const m = new Matcher($);
  // Counted by construction: css-select's :nth-of-type is quadratic in long lists, and this one is known to be 1.
  const unique: SelectorCandidate = { selector: uniqueSelector(m, target), count: 1 };
  const scope = opts.scope && isStrictDescendant(target, opts.scope.element) ? opts.scope : null;
  const scoped = scope ? scopedSelector(m, $, target, scope) : null;
  // Inside a scope the list is the one within the scope element (the tags of one book); otherwise page-wide.
  const listed = listSelector(m, $, target, scope?.element ?? null);
  const list = listed?.candidate ?? null;
  const element = describeElement($, target);
  const base = { unique, list, scoped, element };
  if (listed && (listed.preferred || opts.preferList))
    return {
      ...base,
      selector: listed.candidate.selector,
      count: listed.candidate.count,
      kind: 'list',
      multiple: true,
    };
  if (scoped) return { ...base, selector: scoped.selector, count: scoped.count, kind: 'scoped', multiple: false };
  return { ...base, selector: unique.selector, count: unique.count, kind: 'unique', multiple: false };
}

/** The closest ancestor of `el` matching `selector` (the item scope the clicked element belongs to), if any. */
export function closestMatching($: CheerioAPI, el: Element, selector: string): Element | null {
  let matches: Set<AnyNode>;
  try {
    matches = new Set($(selector).toArray());
  } catch {
    return null;
  }
  for (let p = parentElement(el); p; p = parentElement(p)) if (matches.has(p)) return p;
  return null;
}
