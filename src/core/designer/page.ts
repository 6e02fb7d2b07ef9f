import type * as cheerio from 'cheerio/slim';
import type { Element } from 'domhandler';
import type { PageFacts } from '../extract/extract';
import { checkSelector } from '../extract/selectors';
import { checkJsonPath, queryJsonPaths, type JsonMatch } from '../extract/json';
import { closestMatching, suggestSelector, type SelectorSuggestion } from '../extract/suggest';
import { isJsonPath } from '../task/model';
import { jsonViewHtml, PATH_ATTR } from './jsonView';
import { elementsInOrder, INDEX_ATTR, renderableHtml } from './render';
import type { SelectorSite } from './sites';
import { HtmlPage } from '../extract/dom';

// A fetched page made ready for the designer, once per page (not per keystroke): parsed by the same parser
// the workers use, every element numbered in document order. Highlights and picks travel between the
// extension and the webview as those numbers.

export interface PreparedPage {
  /** The URL as requested (the cache key). */
  readonly url: string;
  /** After redirects: what relative links resolve against, as in the workers. */
  readonly finalUrl: string;
  /** The page as fetched: extraction runs on exactly this (HTML, or a JSON response's text). */
  readonly html: string;
  /** What `page:` fields read (its URLs, the fetch's HTTP status and time), built here for a designer's page. */
  readonly facts: PageFacts;
  /** A JSON response: its value, and the element showing each value (by normalized path) in the JSON view. */
  readonly json?: { readonly value: unknown; readonly elements: ReadonlyMap<string, number> };
  /** The cache key when the page is a request that is not a plain GET (its method, URL and body). */
  readonly key?: string;
  /** The numbered DOM (same structure as `html`), for highlights and the picker. */
  readonly $: cheerio.CheerioAPI;
  readonly elements: readonly Element[];
  readonly index: ReadonlyMap<Element, number>;
}

/**
 * What the designer keeps of a page's fetch: the page cache's record of it (workspace/pageCache.ts `CachedPageMeta`),
 * passed whole so a fact it keeps reaches `page:` fields through preparePage alone.
 */
export interface FetchRecord {
  readonly status: number;
  /** ISO time of the fetch. */
  readonly fetchedAt: string;
}

/**
 * `fetched`: the record of the fetch (null: not known), read here into the page's facts for `page:` fields.
 * `opts.json`: the body is a JSON response (parsed here: a SyntaxError when it is not JSON), shown as a JSON view whose
 * values are the elements highlights and picks point at; `opts.key`: the request's cache key when it is not a plain GET.
 */
export function preparePage(
  html: string,
  url: string,
  finalUrl: string = url,
  fetched: FetchRecord | null = null,
  opts: { json?: boolean; key?: string } = {},
): PreparedPage {
  const json = opts.json ?? false;
  const value: unknown = json ? JSON.parse(html.charCodeAt(0) === 0xfeff ? html.slice(1) : html) : undefined;
  // One parse per fetched page (not per keystroke): the picker and highlights query it freely. The parse a worker
  // uses (HtmlPage): a page nested too deeply throws TooDeepError here too, instead of freezing the editor.
  const $ = HtmlPage.parse(json ? jsonViewHtml(value) : html).$;
  const elements = elementsInOrder($.root()[0]!);
  const index = new Map<Element, number>();
  const byPath = new Map<string, number>();
  elements.forEach((el, i) => {
    el.attribs[INDEX_ATTR] = String(i);
    index.set(el, i);
    const path = json ? el.attribs[PATH_ATTR] : undefined;
    if (path !== undefined) byPath.set(path, i);
  });
  return {
    url,
    finalUrl,
    html,
    facts: {
      url,
      finalUrl,
      status: fetched?.status ?? null,
      fetchedAt: fetched ? Date.parse(fetched.fetchedAt) : null,
    },
    $,
    elements,
    index,
    ...(json ? { json: { value, elements: byPath } } : {}),
    ...(opts.key ? { key: opts.key } : {}),
  };
}

/** The inert HTML for the preview frame (see render.ts); images from the page origin when allowed. */
export function pageForFrame(page: PreparedPage, allowImages: boolean): string {
  return renderableHtml(page.$.html(), {
    url: page.finalUrl,
    imageOrigin: allowImages ? originOf(page.finalUrl) : null,
  });
}

export function originOf(url: string): string | null {
  try {
    const u = new URL(url);
    return /^https?:$/.test(u.protocol) ? u.origin : null;
  } catch {
    return null;
  }
}

export interface Highlight {
  /** What is highlighted, e.g. `book.title` or `list follow[1]`. */
  readonly label: string;
  readonly selector: string | null;
  /** Elements the rule reads for this site (per item scope element: the first match, or all with `all: true`). */
  readonly indices: number[];
  readonly count: number;
  /** For fields inside a scope: in how many of the scope elements the field found something. */
  readonly scopes: { readonly matched: number; readonly total: number } | null;
  readonly error: string | null;
}

function select($: cheerio.CheerioAPI, selector: string): Element[] {
  return $(selector).toArray() as Element[];
}

/**
 * The elements a selector site reads on this page, computed the way extraction reads them: follow rules and
 * item scopes match page-wide; a field matches inside each scope element and reads the first match (every
 * match with `all: true`); a field without selector reads the scope element itself.
 */
export function highlightSite(page: PreparedPage, site: SelectorSite, label: string): Highlight {
  const $ = page.$;
  const fail = (error: string): Highlight => ({
    label,
    selector: site.selector,
    indices: [],
    count: 0,
    scopes: null,
    error,
  });
  for (const sel of [site.selector, site.kind === 'field' ? site.itemScope : null]) {
    if (sel === null) continue;
    const problem = isJsonPath(sel) ? checkJsonPath(sel) : checkSelector(sel);
    if (problem) return fail(`'${sel}' is not a valid ${isJsonPath(sel) ? 'JSONPath' : 'CSS selector'} (${problem})`);
  }
  // Each kind of selector reads its kind of page and finds nothing in the other (as extraction does).
  const kindOf = (sel: string | null) => (sel === null ? null : isJsonPath(sel) ? 'json' : 'css');
  const pageKind = page.json ? 'json' : 'css';
  if (
    [kindOf(site.selector), kindOf(site.kind === 'field' ? site.itemScope : null)].some(
      (k) => k !== null && k !== pageKind,
    )
  ) {
    return { label, selector: site.selector, indices: [], count: 0, scopes: null, error: null };
  }
  if (page.json) return highlightJson(page, page.json, site, label);
  let els: Element[];
  let scopes: Highlight['scopes'] = null;
  if (site.kind === 'follow' || site.kind === 'scope') {
    els = site.selector === null ? [] : select($, site.selector);
  } else {
    const scopeEls = site.itemScope === null ? [$.root()[0] as unknown as Element] : select($, site.itemScope);
    els = [];
    let matched = 0;
    for (const s of scopeEls) {
      const found = site.selector === null ? [s] : $(s).find(site.selector).toArray();
      if (found.length > 0) matched++;
      els.push(...(site.all ? found : found.slice(0, 1)));
    }
    if (site.itemScope !== null) scopes = { matched, total: scopeEls.length };
  }
  const indices = els.map((e) => page.index.get(e)).filter((i): i is number => i !== undefined);
  return { label, selector: site.selector, indices, count: els.length, scopes, error: null };
}

/**
 * The picker: a suggestion for the element numbered `index`. When the cursor is in an item with a scope, the
 * scope element the click is in makes the suggestion relative to it; on a follow rule (which reads every
 * match) the list comes first.
 */
export function suggestFor(
  page: PreparedPage,
  index: number,
  itemScope: string | null,
  preferList = false,
): SelectorSuggestion | null {
  if (page.json) return suggestJsonPath(page, index, itemScope);
  const el = page.elements[index];
  if (!el) return null;
  let scope = null;
  if (itemScope && !checkSelector(itemScope)) {
    const element = closestMatching(page.$, el, itemScope);
    if (element) scope = { element, all: select(page.$, itemScope) };
  }
  return suggestSelector(page.$, el, { scope, preferList });
}

/** highlightSite for a JSON response: the values a JSONPath matches, shown by their elements in the JSON view. */
function highlightJson(
  page: PreparedPage,
  json: NonNullable<PreparedPage['json']>,
  site: SelectorSite,
  label: string,
): Highlight {
  const root: JsonMatch = { value: json.value, path: '$' };
  let found: JsonMatch[];
  let scopes: Highlight['scopes'] = null;
  if (site.kind === 'follow' || site.kind === 'scope') {
    found = site.selector === null ? [] : queryJsonPaths(site.selector, root.value, root.path, true);
  } else {
    const scopeMatches = site.itemScope === null ? [root] : queryJsonPaths(site.itemScope, root.value, root.path, true);
    found = [];
    let matched = 0;
    for (const s of scopeMatches) {
      const m = site.selector === null ? [s] : queryJsonPaths(site.selector, s.value, s.path, site.all);
      if (m.length > 0) matched++;
      found.push(...(site.all ? m : m.slice(0, 1)));
    }
    if (site.itemScope !== null) scopes = { matched, total: scopeMatches.length };
  }
  const indices = found.map((m) => json.elements.get(m.path)).filter((i): i is number => i !== undefined);
  void page;
  return { label, selector: site.selector, indices, count: found.length, scopes, error: null };
}

/** A normalized path as people write it: `$.products[3].name` (bracketed where a name is not an identifier). */
function friendlyPath(normalized: string): string {
  return normalized.replace(/\['((?:[^'\\]|\\.)*)'\]/g, (m, name: string) =>
    /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) ? `.${name}` : m,
  );
}

/**
 * The picker on a JSON response: the clicked value's path, `[*]` for the list it is in, and relative to the
 * item `scope` the cursor is in when one of its matches holds the value.
 */
function suggestJsonPath(page: PreparedPage, index: number, itemScope: string | null): SelectorSuggestion | null {
  const json = page.json;
  let el: Element | null = page.elements[index] ?? null;
  while (el && el.attribs[PATH_ATTR] === undefined) el = el.parent && 'attribs' in el.parent ? el.parent : null;
  if (!json || !el) return null;
  const path = el.attribs[PATH_ATTR]!;
  const count = (p: string, at: JsonMatch = { value: json.value, path: '$' }) =>
    queryJsonPaths(p, at.value, at.path, false).length;
  const unique = friendlyPath(path);
  // The innermost array index becomes [*]: the list the value is one of.
  const listPath = path.replace(/\[\d+\](?=[^[]*(?:\['(?:[^'\\]|\\.)*'\])*$)/, '[*]');
  const list =
    listPath !== path
      ? {
          selector: friendlyPath(listPath),
          count: count(listPath),
          itemScope: friendlyPath(listPath.slice(0, listPath.lastIndexOf('[*]') + 3)),
          relative: null,
        }
      : null;
  let scoped = null;
  if (itemScope && isJsonPath(itemScope) && checkJsonPath(itemScope) === null) {
    const scopes = queryJsonPaths(itemScope, json.value, '$', true);
    const holder = scopes
      .filter((s) => path === s.path || path.startsWith(s.path + '['))
      .sort((a, b) => b.path.length - a.path.length)[0];
    if (holder) {
      const rel = friendlyPath('$' + path.slice(holder.path.length));
      const matched = scopes.filter((s) => count(rel, s) > 0).length;
      scoped = { selector: rel, count: count(rel, holder), coverage: { matched, scopes: scopes.length } };
    }
  }
  const kind = scoped ? 'scoped' : list ? 'list' : 'unique';
  const chosen = scoped ?? list ?? { selector: unique, count: count(path) };
  const shown = String(el.attribs[PATH_ATTR]);
  return {
    selector: chosen.selector,
    count: chosen.count,
    kind,
    unique: { selector: unique, count: count(path) },
    list,
    scoped,
    element: friendlyPath(shown),
    multiple: kind === 'list',
  };
}
