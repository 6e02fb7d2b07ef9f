// RFC 4180 CSV, with one convention on top that keeps null and '' apart (the one PostgreSQL's COPY uses): an
// unquoted empty cell is null, a quoted empty cell ("") is the empty string. Lists and any other non-string
// value are written as JSON text, so a cell always round-trips through JSON.parse.

const NEEDS_QUOTES = /[",\r\n]/;

export function csvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  if (text === '' || NEEDS_QUOTES.test(text) || text !== text.trim()) return `"${text.replace(/"/g, '""')}"`;
  return text;
}

/** One record, CRLF-terminated as RFC 4180 asks. */
export function csvRow(values: readonly unknown[]): string {
  return values.map(csvCell).join(',') + '\r\n';
}

/**
 * Parses CSV text into rows of cells; null for an unquoted empty cell. Accepts CRLF or LF line ends. Throws on
 * a quote left open, naming the line.
 */
export function parseCsv(text: string): (string | null)[][] {
  const rows: (string | null)[][] = [];
  let row: (string | null)[] = [];
  let i = 0;
  let line = 1;
  const n = text.length;
  if (text.charCodeAt(0) === 0xfeff) i = 1;
  while (i < n) {
    let cell: string | null;
    if (text[i] === '"') {
      const start = line;
      let out = '';
      i++;
      for (;;) {
        if (i >= n) throw new Error(`CSV: quoted cell opened on line ${start} is never closed`);
        const c = text[i]!;
        if (c === '"') {
          if (text[i + 1] === '"') {
            out += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        if (c === '\n') line++;
        out += c;
        i++;
      }
      cell = out;
    } else {
      let j = i;
      while (j < n && text[j] !== ',' && text[j] !== '\n' && text[j] !== '\r') j++;
      cell = j === i ? null : text.slice(i, j);
      i = j;
    }
    row.push(cell);
    if (i < n && text[i] !== ',' && text[i] !== '\r' && text[i] !== '\n') {
      throw new Error(`CSV: unexpected ${JSON.stringify(text[i])} after a quoted cell on line ${line}`);
    }
    if (text[i] === ',') {
      i++;
      if (i >= n || text[i] === '\r' || text[i] === '\n') row.push(null);
      else continue;
    }
    if (text[i] === '\r') i++;
    if (text[i] === '\n') {
      i++;
      line++;
    }
    rows.push(row);
    row = [];
  }
  return rows;
}
