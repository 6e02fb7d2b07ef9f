import { createHash } from 'node:crypto';
import type { AnyNode as Node } from 'domhandler';
import { execFieldRegex } from '../task/fieldRegex';
import {
  isJsonPath,
  type FieldSpec,
  type FollowSpec,
  type ItemSpec,
  type PageRule,
  type PageValue,
} from '../task/model';
import { buildFormRequest, buildRequest, type BuildResult, type JobRequest, type SeriesRef } from '../request/build';
import { readForm } from '../request/form';
import type { TemplateValue } from '../request/template';
import { HtmlPage, nodeOf } from './dom';
import { firstJson, JsonPage, jsonText, queryJson } from './json';
import { findIn, findInDocument } from './select';
import { jsonLdNodes, jsonLdValues } from './jsonld';
import { microdataItems, microdataValues, type MicrodataItem } from './microdata';
import { openGraphTags, openGraphValues } from './opengraph';
import { jsonLdBlocks } from './structuredData';

// Extraction is a pure function of (page, page URL, rule): the workers and the designer preview call this same
// code, so what the preview shows is what a crawl stores. A page is HTML (CSS selectors) or a JSON response
// (JSONPaths, the selectors that start with `$`); each kind of selector reads its kind of page and finds nothing
// in the other.

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
  /** A request that is not a plain GET (a form's POST, a body): absent for links. */
  readonly request?: JobRequest;
  /** The request is a page of a series (`{page}`). */
  readonly series?: SeriesRef;
  /** The follow found something it cannot send (why): dropped as `invalid`. */
  readonly problem?: string;
}

/**
 * A page as fetched, besides its body: what `page:` fields read, and nothing else does. It travels whole from where
 * it is built (one place per source: the worker's fetch `factsOfFetch`, a fixture `fixtureInput`, the designer's
 * page `preparePage`) to here, so a new fact is added here, in `pageValue` and in those builders.
 */
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

/**
 * The facts with the name of the rule extracting the page: everything a `page:` field can take; and the page's
 * structured data (JSON-LD nodes, microdata items, OpenGraph tags), each read once on first use.
 */
type PageAt = PageFacts & { readonly rule: string; readonly structured: StructuredReaders };

interface StructuredReaders {
  readonly jsonld: () => readonly Record<string, unknown>[];
  readonly microdata: () => readonly MicrodataItem[];
  readonly opengraph: () => readonly (readonly [string, string])[];
}

const NO_STRUCTURED: StructuredReaders = { jsonld: () => [], microdata: () => [], opengraph: () => [] };

/** Lazy readers of a page's structured data: a page whose fields read none pays nothing. */
function structuredReaders(html: HtmlPage, baseUrl: string): StructuredReaders {
  let nodes: Record<string, unknown>[] | null = null;
  let items: MicrodataItem[] | null = null;
  let tags: [string, string][] | null = null;
  return {
    jsonld: () => (nodes ??= jsonLdNodes(jsonLdBlocks(html))),
    microdata: () => (items ??= microdataItems(html.root, baseUrl)),
    opengraph: () => (tags ??= openGraphTags(html.root)),
  };
}

/** A structured-data field's texts (first only unless `all`), or null when the field reads elements. */
function structuredTexts(field: FieldSpec, at: PageAt | undefined, all: boolean): string[] | null {
  if (field.jsonld) return at ? jsonLdValues(at.structured.jsonld(), field.jsonld, all) : [];
  if (field.microdata) return at ? microdataValues(at.structured.microdata(), field.microdata, all) : [];
  if (field.opengraph) return at ? openGraphValues(at.structured.opengraph(), field.opengraph, all) : [];
  return null;
}

export interface Extraction {
  readonly items: ExtractedItem[];
  readonly problems: ItemProblem[];
  readonly links: FoundLink[];
  /** The URL relative links resolve against (honours <base href>). */
  readonly baseUrl: string;
}

/** Largest field value kept; longer values are cut, so page content cannot blow up a store row. */
const MAX_FIELD_CHARS = 100_000;

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

/** A parsed page and how its selectors read it: HTML nodes, or the values of a JSON document. */
interface Reader<N> {
  readonly root: N;
  /** Matches of a selector of this page's kind under `scope` (a selector of the other kind matches nothing). */
  select(scope: N, selector: string, first: boolean): N[];
  /** A field's raw text at a match, before trim, regex and url. */
  text(node: N, field: FieldSpec): string | null;
  /** A value for a request template: a JSON scalar keeps its type, so a JSON body sends 42, not "42". */
  raw(node: N): TemplateValue | null;
}

function htmlReader(page: HtmlPage): Reader<Node> {
  return {
    root: page.root,
    select: (scope, selector, first) => (isJsonPath(selector) ? [] : findIn(page, scope, selector, first)),
    text(el, field) {
      const node = nodeOf(el);
      const v = field.attr ? node.attr(field.attr) : field.html ? node.html() : node.text();
      return v ?? null;
    },
    raw: () => null,
  };
}

function jsonReader(page: JsonPage): Reader<unknown> {
  return {
    root: page.root,
    // A list is wanted unless `first`: a path matching an array lists its elements.
    select(scope, selector, first) {
      if (!isJsonPath(selector)) return [];
      if (!first) return queryJson(selector, scope, true);
      const v = firstJson(selector, scope);
      return v === undefined ? [] : [v];
    },
    text: (v) => jsonText(v),
    raw: (v) => (typeof v === 'number' || typeof v === 'boolean' ? v : null),
  };
}

/** `facts`: what the page's `page:` fields read; relative links resolve against its `finalUrl`. */
export function extractPage(page: string | HtmlPage | JsonPage, facts: PageFacts, rule: PageRule): Extraction {
  if (page instanceof JsonPage)
    return extractWith(jsonReader(page), null, facts.finalUrl, rule, {
      ...facts,
      rule: rule.name,
      structured: NO_STRUCTURED,
    });
  const html = typeof page === 'string' ? HtmlPage.parse(page) : page;
  const base = resolveBase(html, facts.finalUrl);
  return extractWith(htmlReader(html), html, base, rule, {
    ...facts,
    rule: rule.name,
    structured: structuredReaders(html, base),
  });
}

function extractWith<N>(
  reader: Reader<N>,
  html: HtmlPage | null,
  baseUrl: string,
  rule: PageRule,
  at: PageAt,
): Extraction {
  const items: ExtractedItem[] = [];
  const problems: ItemProblem[] = [];
  const budget: Budget = { left: MAX_PAGE_ITEM_CHARS };
  for (const spec of rule.items) extractItems(reader, spec, baseUrl, items, problems, budget, at);
  const links: FoundLink[] = [];
  rule.follow.forEach((f, i) => collectLinks(reader, html, f, i, baseUrl, at, links));
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

/** Most requests one `all` value of a follow makes on a page. */
const MAX_REQUESTS_PER_FOLLOW = 10_000;

function collectLinks<N>(
  reader: Reader<N>,
  html: HtmlPage | null,
  f: FollowSpec,
  index: number,
  baseUrl: string,
  at: PageAt,
  out: FoundLink[],
): void {
  const found = { follow: index, to: f.to, priority: f.priority };
  const add = (r: BuildResult, label: string) => {
    if (r.ok)
      out.push({
        ...found,
        href: r.built.url,
        ...(r.built.request ? { request: r.built.request } : {}),
        ...(r.built.series ? { series: r.built.series } : {}),
      });
    else out.push({ ...found, href: label, problem: r.problem });
  };
  if (f.kind === 'links') {
    const attr: FieldSpec = {
      name: '',
      page: null,
      selector: null,
      attr: isJsonPath(f.selector) ? null : f.attr,
      html: false,
      all: true,
      trim: true,
      regex: null,
      url: false,
      required: false,
    };
    for (const node of reader.select(reader.root, f.selector, false)) {
      // In JSON only strings are URLs: an id (42) or an object is not a link.
      if (!html && typeof node !== 'string') continue;
      const href = reader.text(node, attr);
      // An object literal, not a spread of `found`: a list page makes hundreds of these.
      if (href && href.trim()) out.push({ href: href.trim(), follow: index, to: f.to, priority: f.priority });
    }
    return;
  }
  const valueSets = requestValues(reader, f.request.values, baseUrl, at);
  if (f.kind === 'form') {
    if (!html) return;
    for (const el of findInDocument(html, f.selector)) {
      const form = readForm(nodeOf(el), baseUrl);
      if (!form) continue;
      for (const values of valueSets) add(buildFormRequest(f.request, form, values), form.action);
    }
    return;
  }
  for (const values of valueSets)
    add(buildRequest(f.request, values, baseUrl, { rule: at.rule, follow: index }), f.request.url);
}

/**
 * The sets of values a request template is filled with: one, or one per match of the value with `all`. A value
 * that finds nothing makes no request (a cursor that is absent on the last page ends the crawl there).
 */
function requestValues<N>(
  reader: Reader<N>,
  specs: readonly FieldSpec[],
  baseUrl: string,
  at: PageAt,
): Record<string, TemplateValue>[] {
  let sets: Record<string, TemplateValue>[] = [{}];
  for (const spec of specs) {
    const structured = structuredTexts(spec, at, false);
    if (spec.page || structured) {
      const text = spec.page ? pageValue(spec.page, at) : (structured![0] ?? null);
      const v = text === null ? null : finishValue(text, spec, baseUrl);
      if (v === null || v === '') return [];
      sets = sets.map((set) => ({ ...set, [spec.name]: v }));
      continue;
    }
    const matches = spec.selector ? reader.select(reader.root, spec.selector, !spec.all) : [reader.root];
    const values: TemplateValue[] = [];
    for (const node of matches) {
      const raw = spec.regex || spec.url ? null : reader.raw(node);
      const text = raw === null ? reader.text(node, spec) : null;
      const v = raw ?? (text === null ? null : finishValue(text, spec, baseUrl));
      if (v !== null && v !== '') values.push(v);
      if (values.length >= (spec.all ? MAX_REQUESTS_PER_FOLLOW : 1)) break;
    }
    if (values.length === 0) return [];
    sets = sets.flatMap((set) => values.map((v) => ({ ...set, [spec.name]: v })));
  }
  return sets;
}

function extractItems<N>(
  reader: Reader<N>,
  spec: ItemSpec,
  baseUrl: string,
  items: ExtractedItem[],
  problems: ItemProblem[],
  budget: Budget,
  at: PageAt,
): void {
  const scopes: N[] = spec.scope ? reader.select(reader.root, spec.scope, false) : [reader.root];
  let skipped = 0;
  scopes.forEach((scope, index) => {
    if (budget.left <= 0) {
      if (skipped++ === 0) {
        problems.push({
          type: spec.type,
          index,
          message: `${scopes.length - index} item(s) not extracted: this page's items reached the limit of ${MAX_PAGE_ITEM_CHARS.toLocaleString('en-US')} characters`,
        });
      }
      return;
    }
    const data: Record<string, FieldValue> = {};
    const missing: string[] = [];
    for (const field of spec.fields) {
      const value = fieldValue(reader, scope, field, baseUrl, budget, at);
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
function pageValue(value: PageValue, at: PageAt): string | null {
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

function fieldValue<N>(
  reader: Reader<N>,
  scope: N,
  field: FieldSpec,
  baseUrl: string,
  budget?: Budget,
  at?: PageAt,
): FieldValue {
  const finish = (text: string | null): string | null => {
    const out = text === null ? null : finishValue(text, field, baseUrl);
    if (out !== null && budget) budget.left -= out.length;
    return out;
  };
  // A fact about the page, not an element's: the same clean-up applies (a regex picks an id out of the URL).
  if (field.page) return finish(at ? pageValue(field.page, at) : null);
  // Structured data of the page (JSON-LD, microdata, OpenGraph), wherever the item's scope is: the same clean-up
  // as any field's.
  const texts = structuredTexts(field, at, field.all);
  if (texts) {
    if (field.all) return texts.map(finish).filter((v): v is string => v !== null);
    return finish(texts[0] ?? null);
  }
  const matches = field.selector ? reader.select(scope, field.selector, !field.all) : [scope];
  const read = (node: N): string | null => finish(reader.text(node, field));
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
    const canonical = JSON.stringify(
      Object.keys(data)
        .sort()
        .map((k) => [k, data[k]]),
    );
    return '#' + createHash('sha1').update(canonical).digest('hex');
  }
  const parts = spec.key.map((k) => data[k] ?? null);
  const empty = spec.key.filter((_, i) => isEmpty(parts[i]!));
  if (empty.length > 0)
    return { error: `key field${empty.length > 1 ? 's' : ''} ${empty.map((e) => `'${e}'`).join(', ')} empty` };
  return spec.key.length === 1 && typeof parts[0] === 'string' ? parts[0] : JSON.stringify(parts);
}
