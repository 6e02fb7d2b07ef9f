import { isMap, isPair, isScalar, isSeq, parseDocument, type Node } from 'yaml';
import schema from '../task/crawl-task.schema.json';

// Completion and hover for task files, from the JSON Schema the validator uses, so the editor can never offer
// a key the validator rejects. Where the cursor is comes from the YAML tree: a half-typed key is not valid
// YAML yet, so the word at the cursor is replaced by a placeholder key before parsing, and the placeholder's
// path in the tree is the path at the cursor.

export type Path = (string | number)[];

interface SchemaNode {
  readonly $ref?: string;
  readonly type?: string | string[];
  readonly description?: string;
  readonly properties?: Record<string, SchemaNode>;
  readonly additionalProperties?: boolean | SchemaNode;
  readonly items?: SchemaNode;
  readonly then?: SchemaNode;
  readonly enum?: readonly unknown[];
  readonly required?: readonly string[];
  readonly minimum?: number;
  readonly maximum?: number;
  readonly errorMessage?: string;
}

const ROOT = schema as unknown as SchemaNode & { definitions: Record<string, SchemaNode> };

/** Follows $ref, and merges a `then` branch (start entries and fields are "text, or an object of this shape"). */
function resolve(node: SchemaNode | undefined): SchemaNode | undefined {
  let n = node;
  for (let i = 0; i < 10 && n?.$ref; i++) {
    const name = n.$ref.replace(/^#\/definitions\//, '');
    const target = ROOT.definitions[name];
    // Keep the referring node's own description (e.g. request.timeout's) over the definition's.
    n = target ? { ...target, ...(n.description ? { description: n.description } : {}) } : undefined;
  }
  if (n?.then) n = { ...n, ...resolve(n.then), description: n.description ?? n.then.description };
  return n;
}

/** The schema of the value at `path`, or undefined where the schema says nothing (user-named keys' values). */
function schemaAt(path: readonly (string | number)[]): SchemaNode | undefined {
  let node = resolve(ROOT);
  for (const seg of path) {
    if (!node) return undefined;
    if (typeof seg === 'number') node = resolve(node.items);
    else if (node.properties?.[seg]) node = resolve(node.properties[seg]);
    else if (typeof node.additionalProperties === 'object') node = resolve(node.additionalProperties);
    else return undefined;
  }
  return node;
}

export interface KeyCompletion {
  readonly key: string;
  readonly description: string;
  readonly type: string;
  readonly required: boolean;
  /** How the value is usually written: a nested mapping, a list, or inline. */
  readonly shape: 'map' | 'list' | 'scalar';
}

export interface ValueCompletion {
  readonly value: string;
  readonly description: string;
}

export interface CompletionContext {
  readonly kind: 'key' | 'value';
  /** For keys: the mapping's path; for values: the value's path. */
  readonly path: Path;
  /** Keys already present in the mapping (not offered again). */
  readonly siblings: readonly string[];
  /** The partial word being typed, and where it starts. */
  readonly prefix: string;
  readonly start: number;
}

const PLACEHOLDER = '__crawl_studio_cursor__';

/** What the cursor is completing: a key of some mapping, or a value at some path. Null outside both. */
export function completionContext(text: string, offset: number): CompletionContext | null {
  const lineStart = text.lastIndexOf('\n', offset - 1) + 1;
  const before = text.slice(lineStart, offset);
  if (/#/.test(before.replace(/"[^"]*"|'[^']*'/g, ''))) return null; // in a comment
  const word = /[A-Za-z0-9_-]*$/.exec(before)![0];
  const start = offset - word.length;
  const lineEndIdx = text.indexOf('\n', offset);
  const after = text.slice(offset, lineEndIdx === -1 ? text.length : lineEndIdx);
  const wordAfter = /^[A-Za-z0-9_-]*/.exec(after)![0];
  const end = offset + wordAfter.length;
  const lead = before.slice(0, before.length - word.length);
  // A key follows the indentation, a list dash, or `{` / `,` in a flow mapping; a value follows `key:`.
  let kind: 'key' | 'value';
  if (/^\s*(-\s+)*$/.test(lead) || /[{,]\s*$/.test(lead)) kind = 'key';
  else if (/:\s*$/.test(lead) || /:\s*\[\s*$/.test(lead) || /:\s*\[[^\]]*,\s*$/.test(lead)) kind = 'value';
  else return null;
  const rest = text.slice(end);
  const hasColon = /^\s*:/.test(rest);
  const insert = kind === 'key' ? (hasColon ? PLACEHOLDER : `${PLACEHOLDER}: ~`) : PLACEHOLDER;
  const patched = text.slice(0, start) + insert + text.slice(end);
  const found = findPlaceholder(parseDocument(patched, { uniqueKeys: false }).contents, []);
  if (!found) return null;
  return { kind: found.asKey ? 'key' : 'value', path: found.path, siblings: found.siblings, prefix: word, start };
}

function findPlaceholder(node: unknown, path: Path): { path: Path; asKey: boolean; siblings: string[] } | null {
  if (isMap(node)) {
    const keys = node.items
      .filter(isPair)
      .map((p) => (isScalar(p.key) ? String(p.key.value) : ''))
      .filter((k) => k !== PLACEHOLDER);
    for (const p of node.items) {
      if (!isPair(p)) continue;
      const k = isScalar(p.key) ? String(p.key.value) : '';
      if (k === PLACEHOLDER) return { path, asKey: true, siblings: keys };
      if (isScalar(p.value) && p.value.value === PLACEHOLDER) return { path: [...path, k], asKey: false, siblings: [] };
      const inner = findPlaceholder(p.value, [...path, k]);
      if (inner) return inner;
    }
  } else if (isSeq(node)) {
    for (let i = 0; i < node.items.length; i++) {
      const item = node.items[i];
      if (isScalar(item) && item.value === PLACEHOLDER) return { path: [...path, i], asKey: false, siblings: [] };
      const inner = findPlaceholder(item, [...path, i]);
      if (inner) return inner;
    }
  }
  return null;
}

function typeLabel(n: SchemaNode): string {
  if (n.enum) return n.enum.map((e) => JSON.stringify(e)).join(' | ');
  const t = ([] as string[]).concat(n.type ?? []);
  return t.length ? t.join(' | ') : 'value';
}

function shapeOf(n: SchemaNode): KeyCompletion['shape'] {
  const t = ([] as string[]).concat(n.type ?? []);
  if (t.length === 1 && t[0] === 'object') return 'map';
  if (t.length === 1 && t[0] === 'array') return 'list';
  return 'scalar';
}

/** Keys the schema allows in the mapping at `path`, minus those already there. */
/**
 * Keys that rule others out in one entry (the parser says so too): a follow finds links (`selector`) or builds
 * requests (`form`, `url`); a body is `fields` or `json`; a start entry is a page or a sitemap.
 */
const REQUEST_KEYS = ['values', 'method', 'fields', 'json', 'pages', 'idempotent'];
const EXCLUDES: Readonly<Record<string, readonly string[]>> = {
  selector: ['form', 'url', ...REQUEST_KEYS],
  form: ['selector', 'attr', 'json', 'pages'],
  url: ['selector', 'attr'],
  attr: ['form', 'url', ...REQUEST_KEYS],
  fields: ['json'],
  json: ['fields'],
  sitemap: ['url', ...REQUEST_KEYS],
};

export function keyCompletions(path: Path, siblings: readonly string[]): KeyCompletion[] {
  const node = schemaAt(path);
  if (!node?.properties) return [];
  const inEntry =
    (path.length >= 2 && path[path.length - 2] === 'follow') || (path.length === 2 && path[0] === 'start');
  const excluded = new Set(inEntry ? siblings.flatMap((k) => EXCLUDES[k] ?? []) : []);
  return Object.entries(node.properties)
    .filter(([k]) => !siblings.includes(k) && !excluded.has(k))
    .map(([key, raw]) => {
      const n = resolve(raw) ?? {};
      return {
        key,
        description: n.description ?? '',
        type: typeLabel(n),
        required: node.required?.includes(key) ?? false,
        shape: shapeOf(n),
      };
    });
}

/** Values for the value at `path`: enum members, booleans, and rule names for `to` and `start[].rule`. */
/** A value naming a page rule (`follow[].to`, `start[].rule`): what no JSON Schema can complete. */
export function isRuleReference(path: Path): boolean {
  const last = path[path.length - 1];
  return (last === 'to' && path.includes('follow')) || (last === 'rule' && path[0] === 'start');
}

export function valueCompletions(path: Path, ruleNames: readonly string[]): ValueCompletion[] {
  if (isRuleReference(path)) return ruleNames.map((r) => ({ value: r, description: `the page rule '${r}'` }));
  const node = schemaAt(path);
  if (!node) return [];
  if (node.enum) return node.enum.map((e) => ({ value: String(e), description: node.description ?? '' }));
  if (([] as string[]).concat(node.type ?? []).includes('boolean')) {
    return [
      { value: 'true', description: node.description ?? '' },
      { value: 'false', description: node.description ?? '' },
    ];
  }
  return [];
}

export interface HoverInfo {
  /** The key's path, e.g. `request.retries.backoff`. */
  readonly label: string;
  readonly description: string;
  readonly type: string;
  /** Offsets of the key under the cursor. */
  readonly range: readonly [number, number];
}

/** Documentation for the key under the cursor. */
export function hoverAt(text: string, offset: number): HoverInfo | null {
  const doc = parseDocument(text, { uniqueKeys: false });
  const hit = keyAt(doc.contents, offset, []);
  if (!hit) return null;
  const node = schemaAt(hit.path);
  if (!node) return null;
  const parent = schemaAt(hit.path.slice(0, -1));
  const userNamed = parent && !parent.properties?.[String(hit.path[hit.path.length - 1])];
  const description = userNamed ? `A field of this item. ${node.description ?? ''}`.trim() : (node.description ?? '');
  return { label: labelOf(hit.path), description, type: typeLabel(node), range: hit.range };
}

function keyAt(node: unknown, offset: number, path: Path): { path: Path; range: [number, number] } | null {
  if (isMap(node)) {
    for (const p of node.items) {
      if (!isPair(p) || !isScalar(p.key)) continue;
      const k = String(p.key.value);
      const r = (p.key as Node).range;
      if (r && offset >= r[0] && offset <= r[1]) return { path: [...path, k], range: [r[0], r[1]] };
      const inner = keyAt(p.value, offset, [...path, k]);
      if (inner) return inner;
    }
  } else if (isSeq(node)) {
    for (let i = 0; i < node.items.length; i++) {
      const inner = keyAt(node.items[i], offset, [...path, i]);
      if (inner) return inner;
    }
  }
  return null;
}

function labelOf(path: Path): string {
  return path.map((s, i) => (typeof s === 'number' ? `[${s}]` : i === 0 ? s : `.${s}`)).join('');
}
