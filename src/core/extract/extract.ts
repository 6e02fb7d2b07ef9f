import { createHash } from 'node:crypto';
import type { AnyNode as Node } from 'domhandler';
import { execFieldRegex } from '../task/fieldRegex';
import type { FieldSpec, FollowSpec, ItemSpec, PageRule, PageValue } from '../task/model';
import { HtmlPage, nodeOf } from './dom';
import { findIn, findInDocument } from './select';

// Extraction is a pure function of (HTML, page URL, rule): the workers and the designer preview call this same
// code, so what the preview shows is what a crawl stores.

export type FieldValue = string | string[] | null;

export interface ExtractedItem {
  readonly type: string;
  /** Stable identity for deduplication: the key fields, or a content hash when the item has no key. */
  readonly key: string;
  readonly data: Readonly<Record<string, FieldValue>>;
}

export interface ItemProblem {
  readonly type: string;
  readonly index: number;
  readonly message: string;
}

export interface FoundLink {
  readonly href: string;
  /** Index of the follow rule that found it. */
  readonly follow: number;
  readonly to: string | null;
  readonly priority: number | null;
}

/** A page as fetched, besides its HTML: what `page:` fields read. */
export interface PageFacts {
  /** The URL as queued (the page's identity in the crawl, `--meta`'s `_url`). */
  readonly url: string;
  /** Where redirects ended: relative links resolve against it. */
  readonly finalUrl: string;
  /** The HTTP status; null where it is not known (a fixture saved before fixtures kept it). */
  readonly status: number | null;
  /** When the page was fetched, ms since the epoch; null where it is not known. */
  readonly fetchedAt: number | null;
}

/** The facts with the name of the rule extracting the page: everything a `page:` field can take. */
type PageAt = PageFacts & { readonly rule: string };

export interface Extraction {
  readonly items: ExtractedItem[];
  readonly problems: ItemProblem[];
  readonly links: FoundLink[];
  /** The URL relative links resolve against (honours <base href>). */
  readonly baseUrl: string;
}

/** Largest field value kept; longer values are cut, so page content cannot blow up a store row. */
export const MAX_FIELD_CHARS = 100_000;

/**
 * Most characters of item data one page yields. Nested elements repeat what they contain (a scope's text holds
 * its nested scopes' text, an `all` field lists every match below), so without a page-wide bound 31 KB of nested
 * markup became over 512 MB of items for one stream entry, and 10 MB of empty scopes 200 MB of items and
 * problems. Values, items and problems all count; items past the bound are not extracted and one problem says so.
 */
export const MAX_PAGE_ITEM_CHARS = 4_000_000;

/** What an item or a problem costs beyond its values (type, index, JSON punctuation): many empty ones add up. */
const ENTRY_OVERHEAD = 64;

/** What is left of a page's item budget, shared by all its items, fields and problems. */
interface Budget {
  left: number;
}

/** `pageUrl`: the page's facts, or only its URL after redirects (its `page:` fields then know no status or time). */
export function extractPage(html: string | HtmlPage, pageUrl: string | PageFacts, rule: PageRule): Extraction {
  const page = typeof html === 'string' ? HtmlPage.parse(html) : html;
  const facts: PageFacts = typeof pageUrl === 'string' ? { url: pageUrl, finalUrl: pageUrl, status: null, fetchedAt: null } : pageUrl;
  const baseUrl = resolveBase(page, facts.finalUrl);
  const items: ExtractedItem[] = [];
  const problems: ItemProblem[] = [];
  const budget: Budget = { left: MAX_PAGE_ITEM_CHARS };
  const at: PageAt = { ...facts, rule: rule.name };
  for (const spec of rule.items) extractItems(page, spec, baseUrl, items, problems, budget, at);
  const links: FoundLink[] = [];
  rule.follow.forEach((f, i) => collectLinks(page, f, i, links));
  return { items, problems, links, baseUrl };
}

/** The URL relative links of a page resolve against: its <base href>, else the page's own URL. */
export function resolveBase(page: HtmlPage, pageUrl: string): string {
  const base = findInDocument(page, 'base[href]', true)[0];
  const href = base ? nodeOf(base).attr('href') : undefined;
  if (!href) return pageUrl;
  try {
    return new URL(href, pageUrl).href;
  } catch {
    return pageUrl;
  }
}

function collectLinks(page: HtmlPage, f: FollowSpec, index: number, out: FoundLink[]): void {
  for (const el of findInDocument(page, f.selector)) {
    const href = nodeOf(el).attr(f.attr);
    if (href && href.trim()) out.push({ href: href.trim(), follow: index, to: f.to, priority: f.priority });
  }
}

function extractItems(
  page: HtmlPage,
  spec: ItemSpec,
  baseUrl: string,
  items: ExtractedItem[],
  problems: ItemProblem[],
  budget: Budget,
  at: PageAt,
): void {
  const scopes: Node[] = spec.scope ? findInDocument(page, spec.scope) : [page.root];
  let skipped = 0;
  scopes.forEach((scope, index) => {
    if (budget.left <= 0) {
      if (skipped++ === 0) {
        problems.push({ type: spec.type, index, message: `${scopes.length - index} item(s) not extracted: this page's items reached the limit of ${MAX_PAGE_ITEM_CHARS.toLocaleString('en-US')} characters` });
      }
      return;
    }
    const data: Record<string, FieldValue> = {};
    const missing: string[] = [];
    for (const field of spec.fields) {
      const value = fieldValue(page, scope, field, baseUrl, budget, at);
      data[field.name] = value;
      if (field.required && isEmpty(value)) missing.push(field.name);
    }
    if (missing.length > 0) {
      const message = `required field${missing.length > 1 ? 's' : ''} ${missing.map((m) => `'${m}'`).join(', ')} empty`;
      problems.push({ type: spec.type, index, message });
      budget.left -= message.length + ENTRY_OVERHEAD;
      return;
    }
    const keyResult = itemKey(spec, data);
    if (typeof keyResult !== 'string') {
      problems.push({ type: spec.type, index, message: keyResult.error });
      budget.left -= keyResult.error.length + ENTRY_OVERHEAD;
      return;
    }
    items.push({ type: spec.type, key: keyResult, data });
    budget.left -= keyResult.length + ENTRY_OVERHEAD;
  });
}

function isEmpty(v: FieldValue): boolean {
  return v === null || v === '' || (Array.isArray(v) && v.length === 0);
}

/** A field's text after its clean-up: white space (`trim`), `regex`, `url`, and the length cap. */
function finishValue(text: string, field: FieldSpec, baseUrl: string): string | null {
  let v: string | null = text;
  if (field.trim) v = v.replace(/\s+/g, ' ').trim();
  if (field.regex) {
    v = execFieldRegex(field.regex, v);
    if (v === null) return null;
  }
  if (field.url && v) {
    try {
      v = new URL(v, baseUrl).href;
    } catch {
      // Not a URL: keep the text, the person sees it in the preview.
    }
  }
  return v.length > MAX_FIELD_CHARS ? v.slice(0, MAX_FIELD_CHARS) : v;
}

/** A `page:` field's value before clean-up: text, as every field's is (`'200'`, an ISO 8601 time). */
export function pageValue(value: PageValue, at: PageAt): string | null {
  switch (value) {
    case 'url':
      return at.url;
    case 'finalUrl':
      return at.finalUrl;
    case 'status':
      return at.status === null ? null : String(at.status);
    case 'fetchedAt':
      return at.fetchedAt === null ? null : new Date(at.fetchedAt).toISOString();
    case 'rule':
      return at.rule;
  }
}

export function fieldValue(
  page: HtmlPage,
  scope: Node,
  field: FieldSpec,
  baseUrl: string,
  budget?: Budget,
  at?: PageAt,
): FieldValue {
  const finish = (text: string | null | undefined): string | null => {
    const out = text === undefined || text === null ? null : finishValue(text, field, baseUrl);
    if (out !== null && budget) budget.left -= out.length;
    return out;
  };
  // A fact about the page, not an element's: the same clean-up applies (a regex picks an id out of the URL).
  if (field.page) return finish(at ? pageValue(field.page, at) : null);
  const matches = field.selector ? findIn(page, scope, field.selector, !field.all) : [scope];
  const read = (el: Node): string | null => {
    const node = nodeOf(el);
    if (field.attr) return finish(node.attr(field.attr));
    return finish(field.html ? node.html() : node.text());
  };
  if (field.all) {
    const values: string[] = [];
    for (const el of matches) {
      if (budget && budget.left <= 0) break;
      const v = read(el);
      if (v !== null) values.push(v);
    }
    return values;
  }
  const first = matches[0];
  return first ? read(first) : null;
}

/**
 * The item's identity: the key fields' values as JSON, or — without key fields — "#" and a hash of the
 * whole item, so identical items from different pages still merge.
 */
export function itemKey(spec: ItemSpec, data: Readonly<Record<string, FieldValue>>): string | { error: string } {
  if (spec.key.length === 0) {
    const canonical = JSON.stringify(Object.keys(data).sort().map((k) => [k, data[k]]));
    return '#' + createHash('sha1').update(canonical).digest('hex');
  }
  const parts = spec.key.map((k) => data[k] ?? null);
  const empty = spec.key.filter((_, i) => isEmpty(parts[i]!));
  if (empty.length > 0) return { error: `key field${empty.length > 1 ? 's' : ''} ${empty.map((e) => `'${e}'`).join(', ')} empty` };
  return spec.key.length === 1 && typeof parts[0] === 'string' ? parts[0] : JSON.stringify(parts);
}
