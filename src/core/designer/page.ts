import * as cheerio from 'cheerio/slim';
import type { Element } from 'domhandler';
import { checkSelector } from '../extract/selectors';
import { closestMatching, suggestSelector, type SelectorSuggestion } from '../extract/suggest';
import { elementsInOrder, INDEX_ATTR, renderableHtml } from './render';
import type { SelectorSite } from './sites';

// A fetched page made ready for the designer, once per page (not per keystroke): parsed by the same parser
// the workers use, every element numbered in document order. Highlights and picks travel between the
// extension and the webview as those numbers.

export interface PreparedPage {
  /** The URL as requested (the cache key). */
  readonly url: string;
  /** After redirects: what relative links resolve against, as in the workers. */
  readonly finalUrl: string;
  /** The page as fetched: extraction runs on exactly this. */
  readonly html: string;
  /** The fetch's HTTP status and time (ms), for `page:` fields; null where not known. */
  readonly status: number | null;
  readonly fetchedAt: number | null;
  /** The numbered DOM (same structure as `html`), for highlights and the picker. */
  readonly $: cheerio.CheerioAPI;
  readonly elements: readonly Element[];
  readonly index: ReadonlyMap<Element, number>;
}

export function preparePage(html: string, url: string, finalUrl: string = url, fetched: { status: number; fetchedAt: number } | null = null): PreparedPage {
  // One cheerio load per fetched page (not per keystroke): the picker and highlights query it freely.
  const $ = cheerio.load(html);
  const elements = elementsInOrder($.root()[0]!);
  const index = new Map<Element, number>();
  elements.forEach((el, i) => {
    el.attribs[INDEX_ATTR] = String(i);
    index.set(el, i);
  });
  return { url, finalUrl, html, status: fetched?.status ?? null, fetchedAt: fetched?.fetchedAt ?? null, $, elements, index };
}

/** The inert HTML for the preview frame (see render.ts); images from the page origin when allowed. */
export function pageForFrame(page: PreparedPage, allowImages: boolean): string {
  return renderableHtml(page.$.html(), { url: page.finalUrl, imageOrigin: allowImages ? originOf(page.finalUrl) : null });
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
  const fail = (error: string): Highlight => ({ label, selector: site.selector, indices: [], count: 0, scopes: null, error });
  for (const sel of [site.selector, site.kind === 'field' ? site.itemScope : null]) {
    if (sel === null) continue;
    const problem = checkSelector(sel);
    if (problem) return fail(`'${sel}' is not a valid CSS selector (${problem})`);
  }
  let els: Element[];
  let scopes: Highlight['scopes'] = null;
  if (site.kind === 'follow' || site.kind === 'scope') {
    els = site.selector === null ? [] : select($, site.selector);
  } else {
    const scopeEls = site.itemScope === null ? [$.root()[0] as unknown as Element] : select($, site.itemScope);
    els = [];
    let matched = 0;
    for (const s of scopeEls) {
      const found = site.selector === null ? [s] : ($(s).find(site.selector).toArray() as Element[]);
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
export function suggestFor(page: PreparedPage, index: number, itemScope: string | null, preferList = false): SelectorSuggestion | null {
  const el = page.elements[index];
  if (!el) return null;
  let scope = null;
  if (itemScope && !checkSelector(itemScope)) {
    const element = closestMatching(page.$, el, itemScope);
    if (element) scope = { element, all: select(page.$, itemScope) };
  }
  return suggestSelector(page.$, el, { scope, preferList });
}
