import { isMap, isScalar, isSeq, parseDocument, type Node, type YAMLMap } from 'yaml';
import type { StructuredSource } from '../extract/structuredData';
import { selectorSites, siteAt, siteLabel } from './sites';

// Where "Insert" writes a picked selector, as a text edit: over the selector of the field (or follow rule, or
// item scope) the cursor is in, else at the cursor. Pure, so the edit is tested without an editor.

/**
 * A selector as a YAML scalar: plain when that reads the same in block and flow context, else quoted
 * (`prefer` picks the quotes; `quote` forces them, to keep the style of the scalar being replaced).
 */
export function yamlScalar(selector: string, prefer: 'double' | 'single' = 'double', quote = false): string {
  // `*` and `&` first would be YAML anchors or aliases, `#` a comment, `>` or `|` a block scalar, `-` a list entry.
  const plain = /^[A-Za-z_.][A-Za-z0-9_.\- ()=~^$+*>]*$/.test(selector) && !/\s$/.test(selector);
  if (plain && !quote) return selector;
  const canSingle = !selector.includes("'");
  const canDouble = !selector.includes('"');
  if (prefer === 'single' ? canSingle || !canDouble : canSingle && !canDouble)
    return `'${selector.replace(/'/g, "''")}'`;
  return `"${selector.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

export interface InsertPlan {
  readonly start: number;
  readonly end: number;
  readonly text: string;
  /** What was written to, for the message: `book.title`, or "at the cursor". */
  readonly target: string;
}

/**
 * The edit that puts `selector` where the cursor is. With `all` (the picker found a list) a field written as a
 * plain selector becomes `{ selector: …, all: true }`, so the field reads every match.
 */
export function planInsert(text: string, cursor: number, selector: string, opts: { all: boolean }): InsertPlan {
  const site = siteAt(selectorSites(text), cursor);
  if (site?.range) {
    const [start, end] = site.range;
    const quoted = text[start] === "'" || text[start] === '"';
    let value = yamlScalar(selector, text[start] === "'" ? 'single' : 'double', quoted);
    const plainField = site.kind === 'field' && !isInsideFlowOrMap(text, start);
    if (opts.all && plainField && !site.all) value = `{ selector: ${yamlScalar(selector)}, all: true }`;
    return { start, end, text: value, target: siteLabel(site) };
  }
  // A field with no value yet (`tags:` and the cursor after it) has no selector to replace, but it is still a
  // field: a list picked for it must be written with `all: true`, or it would keep only the first match.
  const field = emptyFieldAt(text, cursor);
  if (field && opts.all) {
    const space = text[cursor - 1] === ':' ? ' ' : '';
    return {
      start: cursor,
      end: cursor,
      text: `${space}{ selector: ${yamlScalar(selector)}, all: true }`,
      target: `field ${field}`,
    };
  }
  return {
    start: cursor,
    end: cursor,
    text: (field && text[cursor - 1] === ':' ? ' ' : '') + yamlScalar(selector),
    target: field ? `field ${field}` : 'the cursor',
  };
}

/** The name of the field whose empty value the cursor is at (`  tags: |` inside a `fields:` mapping), or null. */
function emptyFieldAt(text: string, cursor: number): string | null {
  const lineStart = text.lastIndexOf('\n', cursor - 1) + 1;
  const lineEnd = text.indexOf('\n', cursor);
  if (text.slice(cursor, lineEnd === -1 ? text.length : lineEnd).trim() !== '') return null;
  const m = /^( *)([A-Za-z_][\w-]*):\s*$/.exec(text.slice(lineStart, cursor));
  if (!m) return null;
  const indent = m[1]!.length;
  // The nearest line above that is less indented is the field's parent key: it must be `fields:`.
  for (let end = lineStart - 1; end > 0;) {
    const start = text.lastIndexOf('\n', end - 1) + 1;
    const line = text.slice(start, end);
    end = start - 1;
    if (line.trim() === '' || line.trim().startsWith('#')) continue;
    const lead = line.length - line.trimStart().length;
    if (lead >= indent) continue;
    return /^\s*(?:- )?fields:\s*(#.*)?$/.test(line) ? m[2]! : null;
  }
  return null;
}

/** True when the scalar at `offset` is the value of a `selector:` key (the field is already a mapping). */
function isInsideFlowOrMap(text: string, offset: number): boolean {
  const lineStart = text.lastIndexOf('\n', offset - 1) + 1;
  return /selector\s*:\s*$/.test(text.slice(lineStart, offset));
}

/** A structured-data path as YAML: plain where it reads the same (`og:title` too, inside a flow mapping), else quoted. */
function pathScalar(path: string): string {
  return /^[A-Za-z_][A-Za-z0-9_.:-]*$/.test(path) && !path.endsWith(':') ? path : yamlScalar(path, 'double', true);
}

/** A field name for a path: its last part (`Product.offers.price` → `price`, `product:price:amount` → `price_amount`). */
export function fieldNameFor(source: StructuredSource, path: string): string {
  const parts = path.split(source === 'opengraph' ? ':' : '.').filter(Boolean);
  const tail =
    source === 'opengraph' && parts.length > 2 ? parts.slice(-2).join('_') : (parts[parts.length - 1] ?? 'value');
  const name = tail
    .replace(/[^A-Za-z0-9_]/g, '_')
    .replace(/^([0-9])/, '_$1')
    .slice(0, 60);
  return name || 'value';
}

/**
 * The edit that makes a field read `path` of the page's structured data (`{ jsonld: Product.offers.price }`): the
 * field the cursor is in gets it as its value; else, with the cursor in an item, a new field is added after that
 * item's last one; else after the last field of the first item of `rule` (the rule the preview shows); else it is
 * written at the cursor.
 */
export function planFieldInsert(
  text: string,
  cursor: number,
  source: StructuredSource,
  path: string,
  rule: string | null = null,
): InsertPlan {
  const value = `{ ${source}: ${pathScalar(path)} }`;
  const doc = parseDocument(text, { uniqueKeys: false });
  const rules = isMap(doc.contents) ? doc.contents.get('rules', true) : null;
  let ruleItem: YAMLMap | null = null;
  for (const r of isSeq(rules) ? rules.items : []) {
    const items = isMap(r) ? r.get('items', true) : null;
    if (rule !== null && isMap(r) && r.get('name') === rule && isSeq(items) && isMap(items.items[0]))
      ruleItem ??= items.items[0];
    for (const item of isSeq(items) ? items.items : []) {
      const span = (item as Node).range;
      if (!isMap(item) || !span || cursor < span[0] || cursor > span[1]) continue;
      const fields = item.get('fields', true);
      if (!isMap(fields)) break;
      for (const p of fields.items) {
        const k = (p.key as Node | null)?.range;
        if (!isScalar(p.key) || !k) continue;
        const v = (p.value as Node | null)?.range;
        // A key with no value yet (`price:`) ends with its line.
        const lineEnd = text.indexOf('\n', k[1]) < 0 ? text.length : text.indexOf('\n', k[1]);
        const end = v && p.value && !(isScalar(p.value) && p.value.value === null) ? trimmedEnd(text, v[1]) : lineEnd;
        if (cursor < k[0] || cursor > Math.max(end, k[1])) continue;
        const colon = text.indexOf(':', k[1]);
        if (colon < 0) break;
        return {
          start: colon + 1,
          end: Math.max(end, colon + 1),
          text: ` ${value}`,
          target: `field ${String(p.key.value)}`,
        };
      }
      const added = appendField(text, fields, source, path, value);
      if (added) return added;
      break;
    }
  }
  const fields = ruleItem?.get('fields', true);
  const added = isMap(fields) ? appendField(text, fields, source, path, value) : null;
  if (added) return added;
  const field = emptyFieldAt(text, cursor);
  return {
    start: cursor,
    end: cursor,
    text: (field && text[cursor - 1] === ':' ? ' ' : '') + value,
    target: field ? `field ${field}` : 'the cursor',
  };
}

/** A new field after the last one of a block `fields:` mapping, named by the path (never a name it has), or null. */
function appendField(
  text: string,
  fields: YAMLMap,
  source: StructuredSource,
  path: string,
  value: string,
): InsertPlan | null {
  const last = fields.items[fields.items.length - 1];
  const lastKey = (last?.key as Node | null)?.range;
  if (fields.flow || !last || !lastKey) return null;
  const names = new Set(fields.items.map((p) => (isScalar(p.key) ? String(p.key.value) : '')));
  const base = fieldNameFor(source, path);
  let name = base;
  for (let i = 2; names.has(name); i++) name = `${base}${i}`;
  const lineStart = text.lastIndexOf('\n', lastKey[0] - 1) + 1;
  const indent = text.slice(lineStart, lastKey[0]).replace(/[^ \t]/g, ' ');
  const lastEnd = trimmedEnd(text, (last.value as Node | null)?.range?.[1] ?? lastKey[1]);
  let at = text.indexOf('\n', Math.max(lastEnd - 1, lastKey[1]));
  if (at < 0) at = text.length;
  return { start: at, end: at, text: `\n${indent}${name}: ${value}`, target: `field ${name}` };
}

/** Where a node's text ends: a block collection's range runs on over the line break and the next line's indent. */
function trimmedEnd(text: string, end: number): number {
  while (end > 0 && /\s/.test(text[end - 1]!)) end--;
  return end;
}
