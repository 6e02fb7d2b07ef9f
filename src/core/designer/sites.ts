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
  return rules.items.flatMap((rule, ri) => {
    if (!isMap(rule)) return [];
    const base: RuleOf = { rule: ri, ruleName: scalarString(valueOf(rule, 'name')) };
    return [...followSites(valueOf(rule, 'follow'), base), ...itemSites(valueOf(rule, 'items'), base)];
  });
}

/** Which rule a site is in. */
type RuleOf = Pick<SelectorSite, 'rule' | 'ruleName'>;

/** A rule's follow entries: their selectors, every link they match followed. */
function followSites(follow: unknown, base: RuleOf): SelectorSite[] {
  if (!isSeq(follow)) return [];
  return follow.items.flatMap((f, fi): SelectorSite[] => {
    const r = rangeOf(f);
    if (!isMap(f) || !r) return [];
    const sel = scalarSite(valueOf(f, 'selector'));
    return [
      {
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
      },
    ];
  });
}

/** A rule's items: each one's scope, then its fields. */
function itemSites(items: unknown, base: RuleOf): SelectorSite[] {
  if (!isSeq(items)) return [];
  return items.items.flatMap((it, ii): SelectorSite[] => {
    const r = rangeOf(it);
    if (!isMap(it) || !r) return [];
    const scope = scalarSite(valueOf(it, 'scope'));
    const scopeSite: SelectorSite = {
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
    };
    const fields = valueOf(it, 'fields');
    if (!isMap(fields)) return [scopeSite];
    const fieldSites = fields.items.map((p) => fieldSite(p, base, ii, scope.selector));
    return [scopeSite, ...fieldSites.filter((f): f is SelectorSite => f !== null)];
  });
}

// `page: url` and structured data (`jsonld:`, `microdata:`, `opengraph:`) read the page, no element: nothing to
// highlight or pick (the cursor there selects the item).
const READS_THE_PAGE = ['page', 'jsonld', 'microdata', 'opengraph'];

/** A field: a selector written alone, or a mapping with `selector`, `all` and `attr`. */
function fieldSite(p: unknown, base: RuleOf, item: number, itemScope: string | null): SelectorSite | null {
  if (!isPair(p) || !isScalar(p.key)) return null;
  const v = p.value;
  if (isMap(v) && READS_THE_PAGE.some((k) => pairNamed(v, k))) return null;
  const all = isMap(v) ? valueOf(v, 'all') : null;
  return {
    ...base,
    kind: 'field',
    item,
    follow: null,
    field: String(p.key.value),
    ...scalarSite(isMap(v) ? valueOf(v, 'selector') : v),
    entry: pairSpan(p),
    itemScope,
    all: isScalar(all) && all.value === true,
    attr: isMap(v) ? scalarString(valueOf(v, 'attr')) : null,
  };
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
