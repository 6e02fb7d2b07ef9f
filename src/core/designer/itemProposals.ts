import type { CheerioAPI } from 'cheerio/slim';
import { selectAll, selectOne } from 'css-select';
import { isTag, isText, type AnyNode, type Element } from 'domhandler';
import { classKind, looksGenerated } from '../extract/selectorNames';
import { suggestSelector } from '../extract/suggest';

// Item fields read from what a page shows, for "New Task File" (issue 32, item 5): the template's fixed fields
// (`title: h1`, a description meta, `main a`) picked the site's header on one site and came out empty on the Demo
// Shop. Two pages are read: the list page, whose repeated blocks (the ones its follow rule's links sit in) become an
// item type with a field per named child, and one page those links lead to, whose main content (never the header,
// navigation or footer) becomes the detail rule's item. Selectors are the picker's (suggest.ts), relative to the
// item's scope, and a field is proposed only if it finds a value on the page it was read from.

export interface FieldProposal {
  /** snake_case, unique within its item. */
  readonly name: string;
  readonly selector: string;
  readonly attr: string | null;
  /** Resolve the value against the page (links, images). */
  readonly url: boolean;
  /** Every match, not the first (a block's tags). */
  readonly all: boolean;
  /** Its value on the page it was read from (the first block's, for a list). */
  readonly example: string;
}

export interface ItemProposal {
  readonly type: string;
  /** Selects each item's element: a list's repeated blocks, or a detail page's main content. */
  readonly scope: string;
  /** Elements the scope matches on the page. */
  readonly count: number;
  readonly fields: readonly FieldProposal[];
}

/** Most fields proposed per item: a starting point to prune, not a dump of the page. */
const MAX_FIELDS = 12;
/** Most elements tried for them (each costs the picker's search): a page of thousands stays quick. */
const MAX_CANDIDATES = 40;
const MAX_PICKER_CALLS = 8;
const CHROME_TAGS = new Set([
  'header',
  'nav',
  'footer',
  'aside',
  'form',
  'script',
  'style',
  'noscript',
  'template',
  'button',
  'select',
  'option',
  'svg',
]);
const CHROME_ROLES = new Set(['navigation', 'banner', 'contentinfo', 'complementary', 'search', 'menu', 'menubar']);
/** Class or id words of page furniture built from plain divs (`header-box`, `navbar`, `site-footer`). */
const CHROME_WORDS =
  /(^|[-_])(header|footer|nav|navbar|navigation|menu|sidebar|breadcrumbs?|topbar|masthead|cookie|banner)([-_]|$)/i;
/** Words a class name adds about looks or layout, not about what the thing is (`price_color`, `product_pod`). */
const STYLE_WORDS = new Set([
  'color',
  'colour',
  'box',
  'wrap',
  'wrapper',
  'inner',
  'outer',
  'container',
  'content',
  'block',
  'value',
  'field',
  'pod',
  'card',
  'tile',
  'row',
  'col',
  'cell',
  'entry',
  'listing',
  'item',
  'page',
  'details',
  'detail',
  'main',
  'big',
  'small',
  'large',
  'label',
  'data',
  'area',
  'section',
  'holder',
  'body',
  'single',
  'full',
]);
const PRICE = /^(?:[£$€¥₹]|[A-Z]{3}\s)\s?\d[\d,.\s]*$|^\d[\d,.\s]*\s?(?:[£$€¥₹]|[A-Z]{3})$/;
const VAGUE_LINK_TEXT = /^(more|read more|details?|view|here|link|click here|about|open|go|see more|→|»)$/i;

/**
 * The items of a list page: the repeated blocks the links `linkSelector` matches sit in (the follow rule's
 * item links), each with the fields its children show. Null when the links are not in repeated blocks.
 */
export function proposeListItems($: CheerioAPI, linkSelector: string): ItemProposal | null {
  let links: Element[];
  try {
    links = $(linkSelector).toArray().filter(isTag);
  } catch {
    return null;
  }
  const link = links[0];
  if (!link || links.length < 2) return null;
  const block = blockOf(link, new Set(links));
  if (!block || isRoot(block)) return null;
  const s = suggestSelector($, block, { preferList: true });
  const itemScope = s.list && s.list.relative === null ? s.list.itemScope : null;
  if (!itemScope) return null;
  const scopes = select($, itemScope);
  if (scopes.length < 2 || !scopes.includes(block) || scopes.some((el) => inChrome(el))) return null;
  const type = typeName(scopes[0]!, 'entry');
  const fields = fieldsIn($, scopes, { titleFrom: 'heading', type });
  if (fields.length === 0) return null;
  return { type, scope: itemScope, count: scopes.length, fields };
}

/**
 * The block a listed link sits in: its highest ancestor holding no other of the links (`article.product_pod`
 * around `h3 a`, `div.quote` around its author link).
 */
function blockOf(link: Element, links: ReadonlySet<Element>): Element | null {
  let block: Element | null = null;
  for (let e = parentOf(link); e && !isRoot(e); e = parentOf(e)) {
    if (linksUnder(e).some((a) => a !== link && links.has(a))) break;
    block = e;
  }
  return block;
}

/** Links under `el`, without a CheerioAPI: a walk of the tree. */
function linksUnder(el: Element): Element[] {
  const out: Element[] = [];
  const walk = (n: AnyNode) => {
    if (!isTag(n)) return;
    if (n.name === 'a') out.push(n);
    for (const c of n.children) walk(c);
  };
  for (const c of el.children) walk(c);
  return out;
}

/** The item of a detail page: its main content's title (its h1, else its first heading) and named parts. */
export function proposeDetailItem($: CheerioAPI): ItemProposal | null {
  const main = mainContent($);
  if (!main) return null;
  const scope = suggestSelector($, main).unique.selector;
  const matched = select($, scope);
  if (matched[0] !== main) return null;
  const type = typeName(main, 'page');
  const fields = fieldsIn($, [main], { titleFrom: 'h1', type });
  if (fields.length === 0) return null;
  return { type, scope, count: matched.length, fields };
}

/**
 * The page's main content: `main` or `[role=main]`, else its only `article`, else the block holding most of the
 * page's running text (its paragraphs' parent, grown until it holds a heading); never inside the header, the
 * navigation or the footer, whatever element those are built from.
 */
export function mainContent($: CheerioAPI): Element | null {
  const textOf = (el: Element) => $(el).text().replace(/\s+/g, ' ').trim().length;
  const landmark = select($, 'main, [role=main]').filter((el) => !inChrome(el) && textOf(el) > 0);
  if (landmark.length > 0) return landmark.sort((a, b) => textOf(b) - textOf(a))[0]!;
  const articles = select($, 'article').filter((el) => !inChrome(el) && textOf(el) > 0);
  if (articles.length === 1) return articles[0]!;
  // Readability's idea, small: each block's own text counts for its parent, half for its grandparent.
  const scores = new Map<Element, number>();
  for (const el of select($, 'body *')) {
    if (CHROME_TAGS.has(el.name) || inChrome(el)) continue;
    const own = ownText(el).length;
    if (own < 25) continue;
    const parent = parentOf(el);
    if (parent && !isRoot(parent)) scores.set(parent, (scores.get(parent) ?? 0) + own);
    const grand = parent ? parentOf(parent) : null;
    if (grand && !isRoot(grand)) scores.set(grand, (scores.get(grand) ?? 0) + own / 2);
  }
  let best: Element | null = null;
  for (const [el, score] of scores) if (!best || score > scores.get(best)!) best = el;
  if (!best) return null;
  // A description's paragraphs without their title: grow while the block holds no heading, up to the first
  // ancestor that would take in page furniture.
  while (select($, 'h1, h2, h3', best).length === 0) {
    const up = parentOf(best);
    if (
      !up ||
      isRoot(up) ||
      select($, 'header, nav, footer, [role=navigation], [role=banner]', up).some(() => true) ||
      hasChromeChild(up)
    )
      break;
    best = up;
  }
  return best;
}

interface Candidate {
  readonly el: Element;
  readonly name: string;
  readonly attr: string | null;
  readonly url: boolean;
  /** One of siblings alike (`li.tag`): all of them. */
  readonly repeated?: boolean;
}

/**
 * Fields for items whose elements are `scopes`, read from the first and kept when their selector finds a
 * non-empty value in at least half of them (every one, for a single scope).
 */
function fieldsIn(
  $: CheerioAPI,
  scopes: readonly Element[],
  opts: { titleFrom: 'heading' | 'h1'; type: string },
): FieldProposal[] {
  const root = scopes[0]!;
  const candidates: Candidate[] = [];
  const title = titleElement($, root, opts.titleFrom);
  if (title) {
    const link = isLink(title) ? title : (select($, 'a[href]', title)[0] ?? null);
    const text = link ?? title;
    // A link's title attribute holds the whole title where its text is cut ("A Light in the ...").
    const full =
      link?.attribs.title && link.attribs.title.trim().length >= $(link).text().trim().length ? 'title' : null;
    candidates.push({ el: text, name: 'title', attr: full, url: false });
    if (link) candidates.push({ el: link, name: 'url', attr: 'href', url: true });
  }
  const taken = new Set<Element>(candidates.map((c) => c.el));
  const hasNamedPart = namedBelow(root);
  const skipUnder = title ? [title] : [];
  let images = 0;
  for (const el of select($, '*', root)) {
    if (candidates.length >= MAX_CANDIDATES) break;
    if (taken.has(el) || skipUnder.some((t) => isInside(el, t)) || inChrome(el, root)) continue;
    if (el.name === 'img' && el.attribs.src) {
      if (images++ === 0) candidates.push({ el, name: 'image', attr: 'src', url: true });
      continue;
    }
    if (el.name === 'meta' && el.attribs.itemprop && el.attribs.content) {
      candidates.push({ el, name: snake(el.attribs.itemprop), attr: 'content', url: false });
      continue;
    }
    if (isLink(el)) {
      if (insideCandidate(el, candidates)) continue;
      // A link with a name of its own (`a.tag`) is read for its words; others for where they lead.
      const named = ownName(el);
      if (named && alikeBefore(el)) continue;
      candidates.push(
        named
          ? { el, name: named, attr: null, url: false, repeated: alike(el).length > 1 }
          : { el, name: linkName($, el), attr: 'href', url: true },
      );
      continue;
    }
    const own = ownText(el);
    const name = ownName(el) ?? (PRICE.test(own) ? 'price' : rowLabelName($, el));
    if (!name || $(el).text().trim() === '') continue;
    // Leaves first: a block whose parts have names of their own (`ul.tags` of `li.tag`) is read through them.
    if (hasNamedPart.get(el)) continue;
    if (insideCandidate(el, candidates) || alikeBefore(el)) continue;
    candidates.push({ el, name, attr: null, url: false, repeated: alike(el).length > 1 });
  }
  // `author_born_date` in an `author` item says `born_date`.
  const prefix = `${opts.type}_`;
  const named = candidates.map((c) =>
    c.name.startsWith(prefix) && c.name.length > prefix.length ? { ...c, name: c.name.slice(prefix.length) } : c,
  );
  return toFields($, scopes, named);
}

function toFields($: CheerioAPI, scopes: readonly Element[], candidates: readonly Candidate[]): FieldProposal[] {
  const root = scopes[0]!;
  const fields: FieldProposal[] = [];
  const names = new Set<string>();
  const selectors = new Set<string>();
  const values = new Set<string>();
  const proposedClasses = new Set<string>();
  let pickerCalls = 0;
  for (const c of candidates.slice(0, MAX_CANDIDATES)) {
    if (fields.length >= MAX_FIELDS) break;
    const linkList = !isLink(c.el) && c.attr === null && isLinkList($, c.el);
    const own = ownSelector($, c, root, scopes.length === 1);
    // A later element of a class already proposed (`span.value` again) would need a positional selector: the
    // first is the field. The picker's search is the costly part: a few at most.
    if (!own && (shareClass(c.el, proposedClasses) || pickerCalls >= MAX_PICKER_CALLS)) continue;
    if (!own) pickerCalls++;
    let selector = own ?? pickerSelector($, c, root, scopes);
    for (const k of classKeys(c.el)) proposedClasses.add(k);
    if (selector.startsWith('>')) continue; // an `nth-child` path: fragile, and unreadable in a task file
    let attr = c.attr;
    let url = c.url;
    let name = c.name;
    // Several of the same under one parent (a block's tags): all of them.
    let all = select($, selector, root).length > 1;
    if (linkList) {
      selector = `${selector} a[href]`;
      attr = 'href';
      url = true;
      all = true;
    }
    if (linkList) name = `${name}_links`;
    else if (all && !name.endsWith('s')) name = `${name}s`;
    if (selectors.has(`${selector}|${attr}`)) continue;
    const found = scopes.filter((scope) => valueIn($, scope, selector, attr) !== '').length;
    if (found === 0 || found < Math.ceil(scopes.length / 2)) continue;
    const example = valueIn($, root, selector, attr);
    // The same value twice (a price shown again in a table) is one field.
    if (example === '' || values.has(example)) continue;
    selectors.add(`${selector}|${attr}`);
    values.add(example);
    let unique = name;
    for (let i = 2; names.has(unique); i++) unique = `${name}_${i}`;
    names.add(unique);
    fields.push({ name: unique, selector, attr, url, all, example });
  }
  return fields;
}

/**
 * The element's own name as a selector within the scope (`span.author-born-date`, `div#description`), when its first
 * match there is the element (or, for a repeated one, the first of them): the cheap and readable answer, which
 * most candidates have. An id only for a single scope: inside repeated blocks ids name one block.
 */
function ownSelector($: CheerioAPI, c: Candidate, root: Element, single: boolean): string | null {
  const el = c.el;
  const tries: string[] = [];
  if (single && el.attribs.id && !looksGenerated(el.attribs.id)) tries.push(`${el.name}#${el.attribs.id}`);
  for (const t of (el.attribs.class ?? '').split(/\s+/))
    if (t && classKind(t) === 'meaningful') tries.push(`${el.name}.${t}`);
  if (el.attribs.itemprop && /^[\w-]{1,40}$/.test(el.attribs.itemprop))
    tries.push(`${el.name}[itemprop=${el.attribs.itemprop}]`);
  for (const sel of tries) if (first(sel, root) === el) return sel;
  return null;
}

/** `span.value` for each meaningful class: elements named alike. */
function classKeys(el: Element): string[] {
  return (el.attribs.class ?? '')
    .split(/\s+/)
    .filter((t) => t && classKind(t) === 'meaningful')
    .map((t) => `${el.name}.${t}`);
}

function shareClass(el: Element, keys: ReadonlySet<string>): boolean {
  return classKeys(el).some((k) => keys.has(k));
}

/** The picker's selector relative to the scope (a list's, for one of siblings alike). */
function pickerSelector($: CheerioAPI, c: Candidate, root: Element, scopes: readonly Element[]): string {
  const s = suggestSelector($, c.el, { scope: { element: root, all: scopes }, preferList: c.repeated });
  return c.repeated && s.list ? s.list.selector : (s.scoped?.selector ?? s.unique.selector);
}

/** The trimmed value the first match of `selector` under `scope` gives, as a field without `all` reads it. */
function valueIn($: CheerioAPI, scope: Element, selector: string, attr: string | null): string {
  const el = first(selector, scope);
  if (!el) return '';
  const v = attr ? (el.attribs[attr] ?? '') : $(el).text();
  return v.replace(/\s+/g, ' ').trim();
}

function titleElement($: CheerioAPI, root: Element, from: 'heading' | 'h1'): Element | null {
  const visible = (els: Element[]) => els.find((el) => !inChrome(el, root) && $(el).text().trim() !== '') ?? null;
  if (from === 'h1') return visible(select($, 'h1', root)) ?? visible(select($, 'h2, h3, h4', root));
  return (
    visible(select($, 'h1, h2, h3, h4, h5, h6', root)) ??
    visible(select($, '[itemprop=name], [class*=title], [class*=name]', root))
  );
}

/** A name the element gives itself: its `itemprop`, else its first meaningful class or id, less style words. */
function ownName(el: Element): string | null {
  if (el.attribs.itemprop) return snake(el.attribs.itemprop);
  const tokens = [...(el.attribs.class ?? '').split(/\s+/), el.attribs.id ?? ''].filter(
    (t) => t && classKind(t) === 'meaningful',
  );
  for (const t of tokens) {
    const n = nameFrom(t);
    if (n) return n;
  }
  return null;
}

/** `price_color` → price, `author-born-date` → author_born_date, `text` → text. */
function nameFrom(token: string): string | null {
  const words = token
    .replace(/([a-z])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .split(/[-_]+/)
    .filter(Boolean);
  const kept = words.filter((w) => !STYLE_WORDS.has(w));
  const n = snake((kept.length > 0 ? kept : words).join('_'));
  return n || null;
}

/** A table row's header text names its cell (`<tr><th>UPC</th><td>…`). */
function rowLabelName($: CheerioAPI, el: Element): string | null {
  if (el.name !== 'td') return null;
  const th = parentOf(el)?.children.find((c): c is Element => isTag(c) && c.name === 'th');
  const label = th ? $(th).text().trim() : '';
  return label && label.length <= 30 ? snake(label) || null : null;
}

/** A link named by where it leads: its fragment, its text when that says something, else its path's first word. */
function linkName($: CheerioAPI, el: Element): string {
  const own = ownName(el);
  if (own) return own;
  const href = el.attribs.href ?? '';
  const hash = /#([A-Za-z][\w-]{1,30})$/.exec(href)?.[1];
  if (hash) return `${snake(hash)}_url`;
  const text = $(el)
    .text()
    .replace(/[()[\]]/g, '')
    .trim();
  if (/^[A-Za-z]+( [A-Za-z]+)?$/.test(text) && !VAGUE_LINK_TEXT.test(text) && text.length <= 20)
    return `${snake(text)}_url`;
  const segment = href
    .replace(/^[a-z]+:\/\/[^/]+/i, '')
    .split(/[/?#]/)
    .find((p) => /^[A-Za-z][A-Za-z-]{2,20}$/.test(p));
  return segment ? `${snake(segment)}_url` : 'link';
}

/** The type of an item from its element's name (`product_pod` → product, `quote`), else `fallback`. */
function typeName(el: Element, fallback: string): string {
  const n = ownName(el);
  return n && /^[a-z]/.test(n) ? n.slice(0, 40) : fallback;
}

function snake(s: string): string {
  return s
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^[_0-9]+|_+$/g, '')
    .slice(0, 40);
}

/** Mostly links (a block of related pages): proposed as their URLs. */
function isLinkList($: CheerioAPI, el: Element): boolean {
  const links = select($, 'a[href]', el);
  if (links.length < 2 || links.some((a) => ownName(a) !== null)) return false;
  const all = $(el).text().replace(/\s+/g, '').length;
  const linked = links.reduce((n, a) => n + $(a).text().replace(/\s+/g, '').length, 0);
  return all > 0 && linked / all > 0.6;
}

/** Per element under `root`: whether a descendant has a name of its own or is an image (one walk, not one per element). */
function namedBelow(root: Element): Map<Element, boolean> {
  const out = new Map<Element, boolean>();
  const walk = (el: Element): boolean => {
    let below = false;
    for (const c of el.children) {
      if (!isTag(c)) continue;
      const child = walk(c);
      below = below || child || ownName(c) !== null || (c.name === 'img' && !!c.attribs.src);
    }
    out.set(el, below);
    return below;
  };
  walk(root);
  return out;
}

/** Sibling groups by parent, then by tag and classes: built once per parent (a wide parent has thousands). */
const siblingGroups = new WeakMap<Element, Map<string, Element[]>>();

/** The element's siblings of its tag and classes, itself included. */
function alike(el: Element): Element[] {
  const parent = parentOf(el);
  if (!parent) return [el];
  let groups = siblingGroups.get(parent);
  if (!groups) {
    groups = new Map();
    for (const c of parent.children) {
      if (!isTag(c)) continue;
      const k = `${c.name} ${(c.attribs.class ?? '').trim()}`;
      const g = groups.get(k);
      if (g) g.push(c);
      else groups.set(k, [c]);
    }
    siblingGroups.set(parent, groups);
  }
  return groups.get(`${el.name} ${(el.attribs.class ?? '').trim()}`) ?? [el];
}

/** An earlier sibling alike stands for this one (a field lists them all). */
function alikeBefore(el: Element): boolean {
  return alike(el)[0] !== el;
}

function insideCandidate(el: Element, candidates: readonly Candidate[]): boolean {
  return candidates.some((c) => isInside(el, c.el));
}

function isLink(el: Element): boolean {
  return el.name === 'a' && !!el.attribs.href && !/^\s*(javascript|mailto|tel):/i.test(el.attribs.href);
}

/** Text directly in the element (not in its child elements): what marks a leaf worth a field. */
function ownText(el: Element): string {
  return el.children
    .filter(isText)
    .map((c) => c.data)
    .join('')
    .replace(/\s+/g, ' ')
    .trim();
}

/** Inside the page's furniture (up to `stop`, exclusive): header, navigation, footer, or a div named so. */
function inChrome(el: Element, stop: Element | null = null): boolean {
  for (let e: Element | null = el; e && e !== stop; e = parentOf(e)) {
    if (CHROME_TAGS.has(e.name) || CHROME_ROLES.has(e.attribs.role ?? '')) return true;
    if (CHROME_WORDS.test(e.attribs.class ?? '') || CHROME_WORDS.test(e.attribs.id ?? '')) return true;
  }
  return false;
}

function hasChromeChild(el: Element): boolean {
  return el.children.some((c) => isTag(c) && inChrome(c, el));
}

function isInside(el: AnyNode, ancestor: Element): boolean {
  for (let p = el.parent; p; p = p.parent) if (p === ancestor) return true;
  return false;
}

function isRoot(el: Element): boolean {
  return el.name === 'body' || el.name === 'html';
}

function parentOf(el: AnyNode): Element | null {
  const p = el.parent;
  return p && isTag(p) ? p : null;
}

function select($: CheerioAPI, selector: string, under?: Element): Element[] {
  try {
    // Under an element, css-select directly: cheerio's find re-prepares its context on every call, which on a page
    // of thousands of elements was most of the proposal's time. Same engine, same matches.
    return under ? selectAll<AnyNode, Element>(selector, under) : $(selector).toArray().filter(isTag);
  } catch {
    return [];
  }
}

/** The first match under `under` (document order), or undefined. */
function first(selector: string, under: Element): Element | undefined {
  try {
    return selectOne<AnyNode, Element>(selector, under) ?? undefined;
  } catch {
    return undefined;
  }
}
