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
  return { start: cursor, end: cursor, text: yamlScalar(selector), target: 'the cursor' };
}

/** True when the scalar at `offset` is the value of a `selector:` key (the field is already a mapping). */
function isInsideFlowOrMap(text: string, offset: number): boolean {
  const lineStart = text.lastIndexOf('\n', offset - 1) + 1;
  return /selector\s*:\s*$/.test(text.slice(lineStart, offset));
}
