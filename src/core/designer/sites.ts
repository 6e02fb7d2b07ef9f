import { isMap, isPair, isScalar, isSeq, parseDocument, type Node, type Pair, type YAMLMap } from 'yaml';

// Where the selectors of a task file are, read from the YAML tree rather than the validated task: the designer
// works on half-typed files too (the selector under the cursor is highlighted while the file has errors
// elsewhere), and the editor needs source offsets for warnings, hovers and "Insert".

export type SiteKind = 'follow' | 'scope' | 'field';

export interface SelectorSite {
  readonly kind: SiteKind;
  /** Index of the rule in `rules`, and its name when it has one. */
  readonly rule: number;
  readonly ruleName: string | null;
  readonly item: number | null;
  readonly follow: number | null;
  readonly field: string | null;
  /** The selector text; null for a field read from its item's scope element, or an item without `scope`. */
  readonly selector: string | null;
  /** Offsets of the selector scalar as written (quotes included); null when there is none. */
  readonly range: readonly [number, number] | null;
  /** Offsets of the whole entry (follow rule, field, item): the cursor anywhere in it selects this site. */
  readonly entry: readonly [number, number];
  /** For fields: the item's scope selector (null: the page). */
  readonly itemScope: string | null;
  /** For fields: `all: true`, every match is read. */
  readonly all: boolean;
  /** For follow rules: the attribute holding the URL. */
  readonly attr: string | null;
}

type Range3 = readonly [number, number, number];

function rangeOf(n: unknown): Range3 | null {
  const r = (n as Node | null | undefined)?.range;
  return r ? r : null;
}

function scalarString(n: unknown): string | null {
  return isScalar(n) && typeof n.value === 'string' ? n.value : null;
}

function pairNamed(map: YAMLMap, key: string): Pair | undefined {
  return map.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === key);
}

function valueOf(map: YAMLMap, key: string): unknown {
  return pairNamed(map, key)?.value;
}

/** The span from a pair's key to the end of its value. */
function pairSpan(p: Pair): [number, number] {
  const k = rangeOf(p.key);
  const v = rangeOf(p.value);
  return [k?.[0] ?? v?.[0] ?? 0, v?.[1] ?? k?.[1] ?? 0];
}

function scalarSite(n: unknown): { selector: string | null; range: [number, number] | null } {
  const s = scalarString(n);
  const r = rangeOf(n);
  return { selector: s, range: s !== null && r ? [r[0], r[1]] : null };
}

/** Every selector of the file with its place, in source order. */
export function selectorSites(text: string): SelectorSite[] {
  const doc = parseDocument(text, { uniqueKeys: false });
  const root = doc.contents;
  if (!isMap(root)) return [];
  const rules = valueOf(root, 'rules');
  if (!isSeq(rules)) return [];
  const out: SelectorSite[] = [];
  rules.items.forEach((rule, ri) => {
    if (!isMap(rule)) return;
    const ruleName = scalarString(valueOf(rule, 'name'));
    const base = { rule: ri, ruleName };
    const follow = valueOf(rule, 'follow');
    if (isSeq(follow)) {
      follow.items.forEach((f, fi) => {
        const r = rangeOf(f);
        if (!isMap(f) || !r) return;
        const sel = scalarSite(valueOf(f, 'selector'));
        out.push({
          ...base,
          kind: 'follow',
          item: null,
          follow: fi,
          field: null,
          ...sel,
          entry: [r[0], r[1]],
          itemScope: null,
          all: true,
          attr: scalarString(valueOf(f, 'attr')) ?? 'href',
        });
      });
    }
    const items = valueOf(rule, 'items');
    if (!isSeq(items)) return;
    items.items.forEach((it, ii) => {
      const r = rangeOf(it);
      if (!isMap(it) || !r) return;
      const scope = scalarSite(valueOf(it, 'scope'));
      out.push({
        ...base,
        kind: 'scope',
        item: ii,
        follow: null,
        field: null,
        ...scope,
        entry: [r[0], r[1]],
        itemScope: null,
        all: true,
        attr: null,
      });
      const fields = valueOf(it, 'fields');
      if (!isMap(fields)) return;
      for (const p of fields.items) {
        if (!isPair(p) || !isScalar(p.key)) continue;
        const name = String(p.key.value);
        const entry = pairSpan(p);
        // `page: url` and structured data (`jsonld:`, `microdata:`, `opengraph:`) read the page, no element: nothing
        // to highlight or pick (the cursor there selects the item).
        if (
          isMap(p.value) &&
          ['page', 'jsonld', 'microdata', 'opengraph'].some((k) => pairNamed(p.value as YAMLMap, k))
        )
          continue;
        if (isMap(p.value)) {
          const sel = scalarSite(valueOf(p.value, 'selector'));
          const all =
            isScalar(valueOf(p.value, 'all')) && (valueOf(p.value, 'all') as { value: unknown }).value === true;
          out.push({
            ...base,
            kind: 'field',
            item: ii,
            follow: null,
            field: name,
            ...sel,
            entry,
            itemScope: scope.selector,
            all,
            attr: scalarString(valueOf(p.value, 'attr')),
          });
        } else {
          const sel = scalarSite(p.value);
          out.push({
            ...base,
            kind: 'field',
            item: ii,
            follow: null,
            field: name,
            ...sel,
            entry,
            itemScope: scope.selector,
            all: false,
            attr: null,
          });
        }
      }
    });
  });
  return out;
}

/**
 * The site the cursor is in: the innermost entry containing `offset` (a field wins over its item). The end of
 * an entry counts as inside, so the cursor right after a selector being typed still selects it.
 */
export function siteAt(sites: readonly SelectorSite[], offset: number): SelectorSite | null {
  let best: SelectorSite | null = null;
  for (const s of sites) {
    if (offset < s.entry[0] || offset > s.entry[1]) continue;
    if (!best || s.entry[1] - s.entry[0] < best.entry[1] - best.entry[0]) best = s;
  }
  return best;
}

/** A short label for people: `book.title`, `list follow[1]`, `book item[0] scope`. */
export function siteLabel(s: SelectorSite): string {
  const rule = s.ruleName ?? `rules[${s.rule}]`;
  if (s.kind === 'follow') return `${rule} follow[${s.follow}]`;
  if (s.kind === 'scope') return `${rule} items[${s.item}] scope`;
  return `${rule} items[${s.item}].${s.field}`;
}
