// Structured data as a field source (`jsonld: Product.offers.price`): many product, article and event pages carry
// JSON-LD (schema.org) that is steadier than their markup. A path is a type and the properties below it; a field
// reads it from every node of that type in the page's `<script type="application/ld+json">` blocks (top level,
// arrays, `@graph` and nested nodes alike). Pure: the caller hands over the blocks' text.

/** A parsed `jsonld:` path: the node's `@type` (schema.org's, without its prefix) and the properties to follow. */
export interface JsonLdPath {
  readonly type: string;
  readonly path: readonly string[];
}

const SEGMENT = /^[A-Za-z_@][A-Za-z0-9_:@-]*$/;

/** The path, or why it is not one (said at the field, with an example). */
export function parseJsonLdPath(text: string): JsonLdPath | string {
  const parts = text.split('.');
  const bad = parts.findIndex((p) => !SEGMENT.test(p));
  if (bad >= 0) {
    const what = parts[bad] === '' ? 'an empty part' : `'${parts[bad]}'`;
    return `'${text}' is not a JSON-LD path: ${what} at part ${bad + 1}; write a type and its properties, e.g. Product.offers.price`;
  }
  if (parts.length < 2)
    return `'${text}' names a type and no property: write the property to read too, e.g. ${text}.name`;
  return { type: parts[0]!, path: parts.slice(1) };
}

/** Nodes a page may hold at most; past it the rest is not read (a page cannot make extraction slow). */
const MAX_NODES = 10_000;

/** The page's JSON-LD nodes (objects), depth first; blocks that are not JSON are skipped. */
export function jsonLdNodes(blocks: readonly string[]): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  const walk = (v: unknown, depth: number): void => {
    if (out.length >= MAX_NODES || depth > 32) return;
    if (Array.isArray(v)) for (const x of v) walk(x, depth + 1);
    else if (v && typeof v === 'object') {
      out.push(v as Record<string, unknown>);
      for (const x of Object.values(v)) if (x && typeof x === 'object') walk(x, depth + 1);
    }
  };
  for (const b of blocks) {
    try {
      walk(JSON.parse(b), 0);
    } catch {
      // A broken block is the page's mistake: the field finds nothing there, as a selector that matches nothing.
    }
  }
  return out;
}

/** Whether `node` is of `type`: `Product`, `["Product", "Thing"]`, `schema:Product` or `http://schema.org/Product`. */
function isOfType(node: Record<string, unknown>, type: string): boolean {
  const t = node['@type'];
  const names = Array.isArray(t) ? t : [t];
  return names.some((n) => typeof n === 'string' && (n === type || n.endsWith(`/${type}`) || n.endsWith(`:${type}`)));
}

/** The values at `path` in the nodes of its type, as text, in page order (first only unless `all`). */
export function jsonLdValues(nodes: readonly Record<string, unknown>[], p: JsonLdPath, all: boolean): string[] {
  const out: string[] = [];
  for (const node of nodes) {
    if (!isOfType(node, p.type)) continue;
    let level: unknown[] = [node];
    for (const key of p.path) {
      const next: unknown[] = [];
      for (const v of level) {
        for (const o of Array.isArray(v) ? v : [v]) {
          if (o && typeof o === 'object' && !Array.isArray(o) && key in o)
            next.push((o as Record<string, unknown>)[key]);
        }
      }
      level = next;
    }
    for (const v of level.flatMap((x) => (Array.isArray(x) ? (x as unknown[]) : [x]))) {
      const text = textOf(v);
      if (text !== null) out.push(text);
      if (!all && out.length > 0) return out;
    }
  }
  return out;
}

/** A value as a field's text: a scalar as written, a `{ "@value": … }` by its value, another object as JSON. */
function textOf(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (typeof v === 'object' && '@value' in v) return textOf((v as Record<string, unknown>)['@value']);
  return JSON.stringify(v);
}
