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
  if (prefer === 'single' ? canSingle || !canDouble : canSingle && !canDouble) return `'${selector.replace(/'/g, "''")}'`;
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
    return { start: cursor, end: cursor, text: `${space}{ selector: ${yamlScalar(selector)}, all: true }`, target: `field ${field}` };
  }
  return { start: cursor, end: cursor, text: (field && text[cursor - 1] === ':' ? ' ' : '') + yamlScalar(selector), target: field ? `field ${field}` : 'the cursor' };
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
  for (let end = lineStart - 1; end > 0; ) {
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
