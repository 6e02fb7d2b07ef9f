// The table's columns: their labels and widths. Pure (test/unit/webviewTexts.test.ts).

/** The meta columns' labels (a field's column is labelled by its name). */
const META_LABEL: Record<string, string> = {
  _key: 'key',
  _url: 'source URL',
  _rule: 'page rule',
  _fetched_at: 'fetched at',
  _run: 'run',
  _change: 'change',
};

export function labelOf(column: string): string {
  return META_LABEL[column] ?? column;
}

/** A column's fixed width in pixels, or its minimum for the columns that grow. */
const PX: Record<string, number> = { _url: 220, _fetched_at: 160, _rule: 90, _run: 110, _change: 100 };

export function widthOf(c: string): string {
  if (c === '_url') return 'minmax(220px, 2fr)';
  const px = PX[c];
  return px === undefined ? 'minmax(120px, 1fr)' : `${px}px`;
}

/** The grid template of these columns. */
export function templateOf(columns: readonly string[]): string {
  return columns.map(widthOf).join(' ');
}

/** The width under which the columns scroll sideways. */
export function minWidthOf(columns: readonly string[]): number {
  return columns.reduce((a, c) => a + (PX[c] ?? 120), 0);
}

/** The classes of a cell: empty, a number (aligned right), the URL column. */
export function cellClasses(column: string, text: string, loaded: boolean): string[] {
  const cls = ['cell'];
  if (loaded && text === '') cls.push('empty');
  if (loaded && /^-?\d+(\.\d+)?$/.test(text)) cls.push('num');
  if (column === '_url') cls.push('url');
  return cls;
}
