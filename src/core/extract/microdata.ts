import { isTag, type AnyNode, type Element } from 'domhandler';
import { nodeOf } from './dom';

// Microdata as a field source (`microdata: Product.offers.price`): the `itemscope`/`itemtype`/`itemprop` attributes
// many shop and article templates carry (schema.org in HTML). A path is an item's type and the properties below it,
// as a `jsonld:` path is. Items and their values follow the HTML standard's microdata model ("Microdata" §5.2): an
// item's properties are the `itemprop` elements below its element, not below a nested item; a property's value is
// a nested item when it has `itemscope`, else `content` (meta; and, as schema.org's examples and Google read it,
// any element's `content`), a URL (a/area/link href, img/audio/video/source/track/embed/iframe src, object data),
// `value` (data, meter), `datetime` (time), else the element's text. `itemref` is not followed (rare; its ids would
// make one item's properties depend on the whole page). No maintained parser of this fits the extraction's DOM
// (htmlparser2's, read without a browser), so this is the standard's algorithm on that DOM. Pure.

/** A microdata item: its types (schema.org names without the vocabulary's prefix) and its properties in order. */
export interface MicrodataItem {
  readonly types: readonly string[];
  readonly props: readonly (readonly [string, MicrodataValue])[];
  /** A top-level item (no `itemprop` of its own), as the standard's "top-level microdata items". */
  readonly top: boolean;
}
export type MicrodataValue = string | MicrodataItem;

/** Items a page may hold at most, and elements read for them: a page cannot make extraction slow. */
const MAX_ITEMS = 5_000;
const MAX_ELEMENTS = 200_000;

const URL_ATTR: Readonly<Record<string, string>> = {
  a: 'href',
  area: 'href',
  link: 'href',
  img: 'src',
  audio: 'src',
  video: 'src',
  source: 'src',
  track: 'src',
  embed: 'src',
  iframe: 'src',
  object: 'data',
};

/** A type URL or name as written in `itemtype` (`https://schema.org/Product`) by its last part (`Product`). */
export function typeName(t: string): string {
  return (
    t
      .replace(/[/#:]+$/, '')
      .split(/[/#:]/)
      .pop() ?? t
  );
}

/** Every item of the page (nested ones too), in document order. `baseUrl` resolves URL values as the standard does. */
export function microdataItems(root: AnyNode, baseUrl: string | null): MicrodataItem[] {
  const items: MicrodataItem[] = [];
  const newItem = (el: Element): MicrodataItem & { props: [string, MicrodataValue][] } => {
    const types = (el.attribs.itemtype ?? '').split(/\s+/).filter(Boolean).map(typeName);
    const item = { types, props: [] as [string, MicrodataValue][], top: el.attribs.itemprop === undefined };
    if (items.length < MAX_ITEMS) items.push(item);
    return item;
  };
  // Iterative, in document order (pre-order: an element is read when taken from the stack, its children pushed
  // last-first): a page nested thousands of levels deep must not overflow the stack. Each element comes with the
  // item whose properties it may carry (the nearest `itemscope` above it).
  let budget = MAX_ELEMENTS;
  type Owner = (MicrodataItem & { props: [string, MicrodataValue][] }) | null;
  const stack: [AnyNode, Owner][] = [];
  const pushChildren = (node: AnyNode, owner: Owner) => {
    if (!('children' in node)) return;
    for (let i = node.children.length - 1; i >= 0; i--)
      if (isTag(node.children[i]!)) stack.push([node.children[i]!, owner]);
  };
  pushChildren(root, null);
  while (stack.length > 0 && --budget >= 0) {
    const [node, owner] = stack.pop()!;
    const el = node as Element;
    const names = (el.attribs.itemprop ?? '').split(/\s+/).filter(Boolean);
    const nested = el.attribs.itemscope !== undefined ? newItem(el) : null;
    if (owner && names.length > 0) {
      const value = nested ?? valueOf(el, baseUrl);
      for (const n of names) owner.props.push([n, value]);
    }
    // A nested item's own properties are its own, not this item's.
    pushChildren(el, nested ?? owner);
  }
  return items;
}

function valueOf(el: Element, baseUrl: string | null): string {
  const a = el.attribs;
  const name = el.name.toLowerCase();
  if (a.content !== undefined) return a.content;
  if (name === 'meta') return '';
  const urlAttr = URL_ATTR[name];
  if (urlAttr) return resolve(a[urlAttr] ?? '', baseUrl);
  if ((name === 'data' || name === 'meter') && a.value !== undefined) return a.value;
  if (name === 'time' && a.datetime !== undefined) return a.datetime;
  return nodeOf(el).text();
}

function resolve(href: string, baseUrl: string | null): string {
  if (!href || !baseUrl) return href;
  try {
    return new URL(href, baseUrl).href;
  } catch {
    return href;
  }
}

/** A parsed `microdata:` path: the item's type and the properties to follow. */
export interface MicrodataPath {
  readonly type: string;
  readonly path: readonly string[];
}

const SEGMENT = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/** The path, or why it is not one (said at the field, with an example). */
export function parseMicrodataPath(text: string): MicrodataPath | string {
  const parts = text.split('.');
  const bad = parts.findIndex((p) => !SEGMENT.test(p));
  if (bad >= 0) {
    const what = parts[bad] === '' ? 'an empty part' : `'${parts[bad]}'`;
    return `'${text}' is not a microdata path: ${what} at part ${bad + 1}; write an itemtype and its itemprops, e.g. Product.offers.price`;
  }
  if (parts.length < 2)
    return `'${text}' names a type and no property: write the itemprop to read too, e.g. ${text}.name`;
  return { type: parts[0]!, path: parts.slice(1) };
}

/** The values at `path` in the items of its type, as text, in page order (first only unless `all`). */
export function microdataValues(items: readonly MicrodataItem[], p: MicrodataPath, all: boolean): string[] {
  const out: string[] = [];
  for (const item of items) {
    if (!item.types.includes(p.type)) continue;
    let level: MicrodataValue[] = [item];
    for (const key of p.path) {
      level = level.flatMap((v) => (typeof v === 'string' ? [] : v.props.filter(([k]) => k === key).map(([, x]) => x)));
    }
    for (const v of level) {
      out.push(typeof v === 'string' ? v : JSON.stringify(itemJson(v)));
      if (!all) return out;
    }
  }
  return out;
}

/** An item as JSON (a nested item read as a field's value): `@type` and its properties, a list where repeated. */
export function itemJson(item: MicrodataItem, depth = 0): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (item.types.length > 0) out['@type'] = item.types.length === 1 ? item.types[0] : item.types;
  for (const [k, v] of item.props) {
    const x = typeof v === 'string' ? v : depth > 16 ? '…' : itemJson(v, depth + 1);
    const had = out[k];
    out[k] = had === undefined ? x : Array.isArray(had) ? [...(had as unknown[]), x] : [had, x];
  }
  return out;
}
