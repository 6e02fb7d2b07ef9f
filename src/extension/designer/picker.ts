import { suggestFor, type PreparedPage } from '../../core/designer/page';
import type { SuggestionView } from '../../core/designer/protocol';
import { selectorSites, siteAt, siteLabel } from '../../core/designer/sites';
import { structuredMatches, type StructuredEntry } from '../../core/extract/structuredData';

// The picker: what the preview suggests for a clicked element, a selector relative to where the cursor is in the
// task file, and the paths of the page's structured data whose value the element shows.

/**
 * A suggestion for the element `index`, relative to the item scope when the cursor (an offset in the task file's
 * `text`) is in an item; or why there is none. `entries`: the page's structured data paths.
 */
export function pickSuggestion(
  page: PreparedPage,
  text: string,
  cursor: number | null,
  index: number,
  entries: () => readonly StructuredEntry[],
): { readonly view: SuggestionView } | { readonly error: string } {
  const site = cursor === null ? null : siteAt(selectorSites(text), cursor);
  const itemScope = site?.kind === 'field' ? site.itemScope : null;
  const suggestion = suggestFor(page, index, itemScope, site?.kind === 'follow' || site?.kind === 'scope');
  if (!suggestion) return { error: 'That element is not on the analysed page.' };
  const structured = structuredShown(entries, page, index);
  return {
    view: {
      index,
      suggestion,
      target: site ? siteLabel(site) : 'the cursor',
      ...(structured.length ? { structured } : {}),
    },
  };
}

/**
 * The structured data paths whose value the element `index` shows: its text, a value attribute, a URL. `entries`:
 * the page's paths, read only when the element can show one.
 */
function structuredShown(
  entries: () => readonly StructuredEntry[],
  page: PreparedPage,
  index: number,
): StructuredEntry[] {
  const el = page.elements[index];
  if (!el || page.json) return [];
  const attrs: string[] = [];
  for (const name of ['content', 'href', 'src', 'datetime', 'value']) {
    const v = el.attribs[name];
    if (v === undefined) continue;
    attrs.push(v);
    if (name === 'href' || name === 'src') {
      try {
        attrs.push(new URL(v, page.finalUrl).href);
      } catch {
        // Not a URL: the raw value is matched alone.
      }
    }
  }
  return structuredMatches(entries(), { text: page.$(el).text(), attrs });
}
