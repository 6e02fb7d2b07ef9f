import { highlightSite, type PreparedPage } from './page';
import { selectorSites, siteLabel, type SelectorSite } from './sites';

// Selectors checked against the page the designer last showed for their rule: a selector that matches nothing
// there is almost always a typo or a guess, so it is a warning in the editor, with the count on hover.

export interface SiteCount {
  readonly site: SelectorSite;
  readonly url: string;
  readonly count: number;
  readonly scopes: { readonly matched: number; readonly total: number } | null;
}

export interface SelectorWarning {
  readonly start: number;
  readonly end: number;
  readonly message: string;
}

/** A page per rule name: the page each rule's selectors are counted on. */
export type PagesByRule = ReadonlyMap<string, PreparedPage>;

/** Match counts for every selector of the file whose rule has a page; invalid selectors are left to the validator. */
export function countSelectors(text: string, pages: PagesByRule): SiteCount[] {
  const out: SiteCount[] = [];
  for (const site of selectorSites(text)) {
    const page = site.ruleName ? pages.get(site.ruleName) : undefined;
    if (!page || site.selector === null) continue;
    const h = highlightSite(page, site, siteLabel(site));
    if (h.error) continue;
    out.push({ site, url: page.url, count: h.count, scopes: h.scopes });
  }
  return out;
}

/** "matches 0 elements on <url>" for every selector that finds nothing on its rule's page. */
export function zeroMatchWarnings(counts: readonly SiteCount[]): SelectorWarning[] {
  return (
    counts
      .filter((c) => c.count === 0 && c.site.range !== null)
      // A field inside a scope that matched nothing adds no news: the scope's own warning says it.
      .filter((c) => !(c.site.kind === 'field' && c.scopes !== null && c.scopes.total === 0))
      .map((c) => ({
        start: c.site.range![0],
        end: c.site.range![1],
        message: `'${c.site.selector}' matches 0 elements on ${c.url}${inScopes(c)}`,
      }))
  );
}

function inScopes(c: SiteCount): string {
  return c.scopes ? ` (inside ${c.scopes.total} '${c.site.itemScope}' element${c.scopes.total === 1 ? '' : 's'})` : '';
}

/** The hover text for a selector: how many elements it matches on its rule's page. */
export function countMessage(c: SiteCount): string {
  const n = `${c.count} element${c.count === 1 ? '' : 's'}`;
  const scoped = c.scopes ? `, found in ${c.scopes.matched} of ${c.scopes.total} '${c.site.itemScope}' elements` : '';
  return `\`${c.site.selector}\` matches ${n} on ${c.url}${scoped}`;
}

/** The count for the selector at `offset`, if the cursor is on one. */
export function countAt(counts: readonly SiteCount[], offset: number): SiteCount | null {
  return counts.find((c) => c.site.range !== null && offset >= c.site.range[0] && offset <= c.site.range[1]) ?? null;
}
