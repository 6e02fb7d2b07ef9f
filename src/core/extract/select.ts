import { compile } from 'css-select';
import { Element, isTag, type AnyNode } from 'domhandler';
import type { HtmlPage } from './dom';

// Selector queries compiled once per selector instead of once per call. `$(scope).find(selector)` parses and
// compiles the selector every time: for a list page's 20 items × 3 fields that is most of the extraction's time,
// more than parsing the page. The compiled query answers exactly what cheerio's find answers: both are
// css-select, compiled the way cheerio-select compiles (with the scope as `:scope` context when the scope has an
// element parent, plain otherwise), and the scope is read from a slot at match time so one compiled function
// serves every scope. Selectors whose meaning depends on more (jQuery positionals such as :first and :eq,
// :root, :scope, :has, a leading combinator) go through cheerio itself.

type Query = ReturnType<typeof compile<AnyNode, Element>>;

interface Compiled {
  /** For scopes whose parent is an element: `:scope` + flexible descendant prefixed, as cheerio-select does. */
  readonly scoped: Query;
  /**
   * For the document or an element directly under it, without css-select's result cache: on ordinary pages the
   * cache's bookkeeping costs more than it saves (bench list page: 615-650 µs per analysePage without it,
   * 780-1,480 µs with it).
   */
  readonly plain: Query;
  /** The same with the cache, for deep pages, where re-walking every candidate's ancestors is quadratic. */
  readonly plainCached: Query;
}

/** Nesting past which a page counts as deep (ordinary pages stay under 40). */
const DEEP = 128;
const deepness = new WeakMap<AnyNode, boolean>();

/** Whether anything under `root` is nested more than DEEP levels below it; remembered per root. */
function isDeep(root: AnyNode): boolean {
  let deep = deepness.get(root);
  if (deep !== undefined) return deep;
  deep = false;
  const nodes: AnyNode[] = [root];
  const depths: number[] = [0];
  while (nodes.length > 0 && !deep) {
    const node = nodes.pop()!;
    const depth = depths.pop()!;
    if (depth > DEEP) deep = true;
    else if ('children' in node) {
      for (const child of node.children) {
        if (!isTag(child)) continue;
        nodes.push(child);
        depths.push(depth + 1);
      }
    }
  }
  deepness.set(root, deep);
  return deep;
}

const VIA_CHEERIO = /^\s*[>+~]|:(?:root|scope|has|first|last|eq|gt|lt|nth|even|odd)\b(?!-)/i;
const MAX_CACHED = 512;

/** A stand-in scope with an element parent, so the scoped form is compiled with its prefix. */
function placeholder(): Element {
  const p = new Element('cs-scope', {});
  const parent = new Element('cs-parent', {}, [p]);
  p.parent = parent;
  return p;
}

const STAND_IN = placeholder();
/** The scope of the query running now: css-select's :scope reads `context[0]` each time it matches. */
const slot: Element[] = [STAND_IN];
const cache = new Map<string, Compiled | null>();

function compiled(selector: string): Compiled | null {
  let c = cache.get(selector);
  if (c !== undefined) return c;
  c = null;
  if (!VIA_CHEERIO.test(selector)) {
    try {
      c = {
        // No result cache in the scoped form: css-select remembers "no match above this element", which holds
        // for one scope only, and this query serves them all.
        scoped: compile<AnyNode, Element>(selector, { xmlMode: false, context: slot, cacheResults: false }),
        plain: compile<AnyNode, Element>(selector, { xmlMode: false, cacheResults: false }),
        plainCached: compile<AnyNode, Element>(selector, { xmlMode: false }),
      };
    } catch {
      c = null; // invalid here: cheerio reports it the way it always has
    }
  }
  // The designer compiles a selector per keystroke: keep the cache bounded.
  if (cache.size >= MAX_CACHED) cache.clear();
  cache.set(selector, c);
  return c;
}

function hasElementParent(node: AnyNode): node is Element {
  return isTag(node) && node.parent !== null && isTag(node.parent);
}

/** The elements `$(scope).find(selector)` returns (only the first with `first`), in document order. */
export function findIn(page: HtmlPage, scope: AnyNode, selector: string, first = false): AnyNode[] {
  const c = compiled(selector);
  if (!c) {
    const m = page.$(scope).find(selector);
    return first ? m.toArray().slice(0, 1) : m.toArray();
  }
  // cheerio searches the scope's element children and their descendants.
  const children = 'children' in scope ? scope.children.filter(isTag) : [];
  if (children.length === 0) return [];
  if (!hasElementParent(scope)) return matching(isDeep(scope) ? c.plainCached : c.plain, children, first);
  slot[0] = scope;
  try {
    return matching(c.scoped, children, first);
  } finally {
    slot[0] = STAND_IN;
  }
}

/**
 * Elements under `roots` (roots included) that match, in document order. An explicit stack: a page of 200,000
 * nested elements overflows a recursive walk (domutils' findOne), and shifting arrays at every level
 * (domutils' find) makes it quadratic in the depth.
 */
function matching(query: Query, roots: readonly Element[], first: boolean): Element[] {
  const out: Element[] = [];
  const stack: AnyNode[] = [];
  for (let i = roots.length - 1; i >= 0; i--) stack.push(roots[i]!);
  while (stack.length > 0) {
    const node = stack.pop()!;
    if (!isTag(node)) continue;
    if (query(node)) {
      out.push(node);
      if (first) return out;
    }
    const kids = node.children;
    for (let i = kids.length - 1; i >= 0; i--) stack.push(kids[i]!);
  }
  return out;
}

/** The elements `$(selector)` returns: a search of the whole document. */
export function findInDocument(page: HtmlPage, selector: string, first = false): AnyNode[] {
  return findIn(page, page.root, selector, first);
}
