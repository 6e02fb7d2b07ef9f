import type { AnyNode } from 'domhandler';
import { HtmlPage, nodeOf } from './dom';
import { findInDocument } from './select';
import { microdataItems, typeName, type MicrodataItem } from './microdata';
import { openGraphTags } from './opengraph';

// What structured data a page carries, as the paths a field can read it by (`jsonld: Product.offers.price`,
// `microdata: Product.name`, `opengraph: og:title`) with the value each reads: the designer lists them so a person
// picks one instead of writing it. Pure, and built on the same readers the fields use.

export type StructuredSource = 'jsonld' | 'microdata' | 'opengraph';

export interface StructuredEntry {
  readonly source: StructuredSource;
  /** What the field names: `Product.offers.price`, `og:title`. */
  readonly path: string;
  /** The first value it reads on this page (cut for display). */
  readonly value: string;
}

/** Entries listed at most per source, properties followed at most this deep, values shown this long. */
const MAX_PER_SOURCE = 150;
const MAX_DEPTH = 6;
const MAX_VALUE_CHARS = 200;
/** Property names a path can name (as `parseJsonLdPath` and `parseMicrodataPath` take them). */
const KEY = /^[A-Za-z_][A-Za-z0-9_:-]*$/;
const PROP = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/** The page's JSON-LD blocks' text. */
export function jsonLdBlocks(page: HtmlPage): string[] {
  return findInDocument(page, 'script[type="application/ld+json" i]').map((el) => nodeOf(el).html() ?? '');
}

/** Every path to a value the page's JSON-LD, microdata and OpenGraph hold, each with its first value, in page order. */
export function structuredDataPaths(page: string | HtmlPage, baseUrl: string | null = null): StructuredEntry[] {
  const html = typeof page === 'string' ? HtmlPage.parse(page) : page;
  return [
    ...jsonLdEntries(jsonLdBlocks(html)),
    ...microdataEntries(html.root, baseUrl),
    ...openGraphEntries(html.root),
  ];
}

/** Collects path → first value, once per path, up to the cap. */
function collector(source: StructuredSource): {
  add(path: string, value: string): void;
  readonly entries: StructuredEntry[];
} {
  const seen = new Set<string>();
  const entries: StructuredEntry[] = [];
  return {
    entries,
    add(path, value) {
      if (seen.has(path) || entries.length >= MAX_PER_SOURCE) return;
      seen.add(path);
      const v = value.replace(/\s+/g, ' ').trim();
      entries.push({ source, path, value: v.length > MAX_VALUE_CHARS ? `${v.slice(0, MAX_VALUE_CHARS)}…` : v });
    },
  };
}

function jsonLdEntries(blocks: readonly string[]): StructuredEntry[] {
  const c = collector('jsonld');
  // Roots: the blocks' top-level nodes and their @graph members; nested typed nodes are reached by their path.
  const roots: Record<string, unknown>[] = [];
  for (const b of blocks) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(b);
    } catch {
      continue;
    }
    for (const n of Array.isArray(parsed) ? parsed : [parsed]) {
      if (!n || typeof n !== 'object') continue;
      const graph = (n as Record<string, unknown>)['@graph'];
      if (Array.isArray(graph))
        roots.push(
          ...graph.filter((g): g is Record<string, unknown> => !!g && typeof g === 'object' && !Array.isArray(g)),
        );
      else roots.push(n as Record<string, unknown>);
    }
  }
  const walk = (v: unknown, path: string, depth: number): void => {
    if (depth > MAX_DEPTH * 4) return;
    if (Array.isArray(v)) {
      for (const x of v) walk(x, path, depth + 1);
      return;
    }
    if (v === null || v === undefined) return;
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') {
      c.add(path, String(v));
      return;
    }
    if (typeof v !== 'object') return;
    const o = v as Record<string, unknown>;
    if ('@value' in o) return walk(o['@value'], path, depth + 1);
    if (depth >= MAX_DEPTH) return;
    for (const [k, x] of Object.entries(o)) if (!k.startsWith('@') && KEY.test(k)) walk(x, `${path}.${k}`, depth + 1);
  };
  for (const r of roots) {
    const t = r['@type'];
    const type = (Array.isArray(t) ? t : [t]).find((x): x is string => typeof x === 'string');
    if (type) walk(r, typeName(type), 0);
  }
  return c.entries;
}

function microdataEntries(root: AnyNode, baseUrl: string | null): StructuredEntry[] {
  const c = collector('microdata');
  const walk = (item: MicrodataItem, path: string, depth: number): void => {
    if (depth >= MAX_DEPTH) return;
    for (const [k, v] of item.props) {
      if (!PROP.test(k)) continue;
      if (typeof v === 'string') c.add(`${path}.${k}`, v);
      else walk(v, `${path}.${k}`, depth + 1);
    }
  };
  for (const item of microdataItems(root, baseUrl)) if (item.top && item.types[0]) walk(item, item.types[0], 0);
  return c.entries;
}

function openGraphEntries(root: AnyNode): StructuredEntry[] {
  const c = collector('opengraph');
  for (const [k, v] of openGraphTags(root)) c.add(k, v);
  return c.entries;
}

/** What a clicked element shows: its text and the attributes a value may sit in (content, href, src, datetime, value). */
export interface ShownValue {
  readonly text: string;
  readonly attrs: readonly string[];
}

/** Matches offered beside a picked selector, at most. */
const MAX_MATCHES = 4;

/**
 * The entries whose value is what the picked element shows: its text or one of its value attributes, exactly, or
 * inside a short text (`€19.50` shows the `19.50` of `Product.offers.price`), so the picker can offer "or read it
 * from the page's structured data". Exact matches first, then JSON-LD, microdata, OpenGraph.
 */
export function structuredMatches(entries: readonly StructuredEntry[], shown: ShownValue): StructuredEntry[] {
  const norm = (s: string) => s.replace(/\s+/g, ' ').trim();
  const text = norm(shown.text);
  const attrs = shown.attrs.map(norm).filter(Boolean);
  const scored: { e: StructuredEntry; score: number }[] = [];
  entries.forEach((e, i) => {
    const v = e.value;
    if (!v || v.endsWith('…')) return;
    const exact = v === text || attrs.includes(v);
    // Inside a short text only: a container's text holds every value below it.
    const inside = !exact && v.length >= 2 && text.length <= v.length * 2 + 4 && text.includes(v);
    if (exact || inside) scored.push({ e, score: (exact ? 0 : 1_000_000) + i });
  });
  return scored
    .sort((a, b) => a.score - b.score)
    .slice(0, MAX_MATCHES)
    .map((s) => s.e);
}
