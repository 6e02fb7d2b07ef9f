import { isMap, isPair, isScalar, isSeq, type Document, type LineCounter, type Node } from 'yaml';
import { pathToString, type Severity, type TaskDiagnostic } from './diagnostics';

// Where a task file's problems are: each is reported at the YAML node of its field (a key for unknown fields), so
// the terminal prints file:line:col and the editor underlines the value. Used by every part of the parse.

/** A field's place in the task: ['rules', 0, 'follow', 1, 'selector']. */
export type Path = (string | number)[];

export class DiagnosticSink {
  readonly list: TaskDiagnostic[] = [];
  constructor(
    private readonly file: string,
    private readonly text: string,
    private readonly lines: LineCounter,
    private readonly doc: Document | null,
  ) {}

  get hasErrors(): boolean {
    return this.list.some((d) => d.severity === 'error');
  }

  atOffsets(start: number, end: number, path: string, message: string, severity: Severity): void {
    const s = this.lines.linePos(Math.min(start, this.text.length));
    const e = this.lines.linePos(Math.min(Math.max(end, start), this.text.length));
    this.list.push({
      file: this.file,
      path,
      message,
      severity,
      line: s.line,
      column: s.col,
      endLine: e.line,
      endColumn: e.col,
      offset: start,
      endOffset: Math.max(end, start),
    });
  }

  /** At the value of `path`; with `key`, at that key inside the mapping at `path` (for unknown fields). */
  atPath(path: Path, message: string, severity: Severity = 'error', key?: string): void {
    const node = nodeAt(this.doc, path);
    let range = node?.range;
    if (key !== undefined && isMap(node)) {
      const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === key);
      const k = pair?.key as Node | undefined;
      if (k?.range) range = k.range;
    }
    const label = pathToString(key !== undefined ? [...path, key] : path);
    if (range) this.atOffsets(range[0], range[1], label, message, severity);
    else this.atOffsets(0, 0, label, message, severity);
  }
}

function nodeAt(doc: Document | null, path: Path): Node | null {
  if (!doc) return null;
  let node: unknown = doc.contents;
  for (const seg of path) {
    if (isMap(node)) {
      const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === String(seg));
      node = pair?.value ?? pair?.key;
    } else if (isSeq(node) && typeof seg === 'number') {
      node = node.items[seg];
    } else {
      return node as Node | null;
    }
    if (node === undefined || node === null) return null;
  }
  return (node as Node) ?? null;
}

export function yamlMessage(message: string): string {
  // The yaml library appends a code frame; the editor and terminal show positions themselves.
  return message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
}

export function sortByPosition(list: TaskDiagnostic[]): TaskDiagnostic[] {
  return list.sort((a, b) => a.offset - b.offset);
}
