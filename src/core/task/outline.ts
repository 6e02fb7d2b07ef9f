import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Node } from 'yaml';

// Where the parts of a task file are, for editor features (CodeLens, "Enqueue" on a start URL). Works on files
// with errors too: it reads the YAML tree, not the validated task.

export interface Span {
  readonly offset: number;
  readonly endOffset: number;
  readonly line: number; // 0-based, as the editor counts
}

export interface TaskOutline {
  readonly name: string | null;
  readonly top: Span;
  readonly startUrls: readonly { readonly url: string; readonly span: Span }[];
  readonly rules: readonly { readonly name: string; readonly span: Span }[];
}

export function outlineTask(text: string): TaskOutline {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines });
  const span = (n: Node | null | undefined): Span => {
    const [s, e] = n?.range ?? [0, 0];
    return { offset: s, endOffset: e, line: lines.linePos(s).line - 1 };
  };
  const root = doc.contents;
  const get = (key: string): unknown => (isMap(root) ? root.get(key, true) : null);
  const nameNode = get('name');
  const startNode = get('start');
  const rulesNode = get('rules');
  const startUrls: { url: string; span: Span }[] = [];
  if (isSeq(startNode)) {
    for (const item of startNode.items) {
      const urlNode = isMap(item) ? item.get('url', true) : item;
      if (isScalar(urlNode) && typeof urlNode.value === 'string')
        startUrls.push({ url: urlNode.value, span: span(urlNode) });
    }
  }
  const rules: { name: string; span: Span }[] = [];
  if (isSeq(rulesNode)) {
    for (const item of rulesNode.items) {
      const n = isMap(item) ? item.get('name', true) : null;
      if (isScalar(n) && typeof n.value === 'string') rules.push({ name: n.value, span: span(item as Node) });
    }
  }
  return {
    name: isScalar(nameNode) && typeof nameNode.value === 'string' ? nameNode.value : null,
    top: { offset: 0, endOffset: 0, line: 0 },
    startUrls,
    rules,
  };
}

/**
 * Where a rule's item field is written (its value: the selector or the field's map), else the rule's item type,
 * else the rule, else null: a failing fixture points at the field that changed, not at line 1 (issue 32, item 7).
 */
export function fieldSpan(text: string, rule: string, type: string, field: string): Span | null {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines });
  const span = (n: Node): Span => {
    const [s, e] = n.range ?? [0, 0];
    return { offset: s, endOffset: e, line: lines.linePos(s).line - 1 };
  };
  const root = doc.contents;
  const rules = isMap(root) ? root.get('rules', true) : null;
  if (!isSeq(rules)) return null;
  const ruleNode = rules.items.find((r) => isMap(r) && scalarIs(r.get('name', true), rule));
  if (!isMap(ruleNode)) return null;
  const items = ruleNode.get('items', true);
  const typeNode = isSeq(items) ? items.items.find((i) => isMap(i) && scalarIs(i.get('type', true), type)) : null;
  if (!isMap(typeNode)) return span(ruleNode);
  const fields = typeNode.get('fields', true);
  const fieldNode = isMap(fields) ? fields.get(field, true) : null;
  return span(fieldNode ?? typeNode);
}

function scalarIs(n: unknown, value: string): boolean {
  return isScalar(n) && n.value === value;
}
