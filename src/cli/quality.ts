import type { CrawlTask, FieldSpec } from '../core/task/model';
import { groupDigits as n } from '../core/units';
import { QualityTracker, type QualityReport } from '../store/query';
import type { ItemStore } from '../store/types';

// Field quality and recorded errors in the terminal (issue 21, item 4), from the same QualityTracker the results
// view uses: a wrong selector gave null in 50 of 50 rows with no word anywhere but the editor.

/** A field empty in more than this share of its type's items is warned about. */
const MOSTLY_EMPTY = 0.5;

export async function qualityReports(store: ItemStore): Promise<QualityReport[]> {
  const out: QualityReport[] = [];
  for (const type of await store.itemTypes()) out.push(await new QualityTracker(store, type).update());
  return out;
}

function fieldSpec(task: CrawlTask, type: string, field: string): FieldSpec | undefined {
  for (const r of task.rules)
    for (const it of r.items)
      if (it.type === type) {
        const f = it.fields.find((x) => x.name === field);
        if (f) return f;
      }
  return undefined;
}

/** How a field is extracted, as written in the task file: `selector 'h2'`, `selector 'a' attr href`. */
function describe(f: FieldSpec | undefined): string {
  if (!f) return 'not in the task file now';
  if (f.page) return `page: ${f.page}`;
  if (f.jsonld) return `jsonld: ${[f.jsonld.type, ...f.jsonld.path].join('.')}`;
  if (f.microdata) return `microdata: ${[f.microdata.type, ...f.microdata.path].join('.')}`;
  if (f.opengraph) return `opengraph: ${f.opengraph}`;
  if (f.selector === null) return f.attr ? `attr ${f.attr} of the item` : 'the item itself';
  return `selector '${f.selector}'${f.attr ? ` attr ${f.attr}` : ''}`;
}

const pct = (a: number, b: number) => (b === 0 ? '0%' : `${Math.round((a / b) * 100)}%`);

/** One warning line per field empty in most items of its type, with the selector to look at. */
export function emptyFieldWarnings(task: CrawlTask, reports: readonly QualityReport[]): string[] {
  const out: string[] = [];
  for (const r of reports) {
    for (const f of r.fields) {
      if (r.total > 0 && f.empty / r.total > MOSTLY_EMPTY) {
        out.push(
          `warning: ${r.type}.${f.field} is empty in ${n(f.empty)} of ${n(r.total)} items (${describe(fieldSpec(task, r.type, f.field))})`,
        );
      }
    }
  }
  return out;
}

/** The table `crawl-studio quality` prints: per type, per field, empty and distinct values. */
export function qualityTable(task: CrawlTask, reports: readonly QualityReport[]): string[] {
  if (reports.length === 0) return ['no items stored yet'];
  const lines: string[] = [];
  for (const r of reports) {
    lines.push(`${r.type}: ${n(r.total)} items`);
    const w = Math.max(5, ...r.fields.map((f) => f.field.length));
    lines.push(`  ${'field'.padEnd(w)}  ${'empty'.padStart(12)}  ${'distinct'.padStart(9)}  extracted by`);
    for (const f of r.fields) {
      const mark = r.total > 0 && f.empty / r.total > MOSTLY_EMPTY ? '  <- mostly empty' : '';
      lines.push(
        `  ${f.field.padEnd(w)}  ${`${n(f.empty)} (${pct(f.empty, r.total)})`.padStart(12)}  ${n(f.distinct).padStart(9)}  ${describe(fieldSpec(task, r.type, f.field))}${mark}`,
      );
    }
  }
  return lines;
}
