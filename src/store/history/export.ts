import type { Writable } from 'node:stream';
import { csvRow } from '../csv';
import { BackpressureWriter } from '../export';
import type { ItemChange } from './log';

// `crawl-studio export --changes`: one record per change, as JSONL or CSV (values as JSON text in CSV, so a
// price 12 and a price "12" stay apart; CSV cells are neutralised against formulas unless raw, as in export.ts).

export const CHANGE_COLUMNS = ['run', 'type', 'key', 'change', 'field', 'old', 'new', 'at'] as const;

export function changeRecord(c: ItemChange): Record<(typeof CHANGE_COLUMNS)[number], unknown> {
  return {
    run: c.run,
    type: c.type,
    key: c.key,
    change: c.kind,
    field: c.field,
    old: c.old ?? null,
    new: c.new ?? null,
    at: new Date(c.at).toISOString(),
  };
}

export async function exportChanges(
  changes: readonly ItemChange[],
  opts: { format: 'jsonl' | 'csv'; out: Writable; csvRaw?: boolean },
): Promise<number> {
  const writer = new BackpressureWriter(opts.out);
  const csv = { raw: opts.csvRaw === true };
  if (opts.format === 'csv') await writer.write(csvRow([...CHANGE_COLUMNS], csv));
  for (const c of changes) {
    const r = changeRecord(c);
    if (opts.format === 'jsonl') await writer.write(JSON.stringify(r) + '\n');
    else
      await writer.write(
        csvRow(
          CHANGE_COLUMNS.map((k) =>
            k === 'old' || k === 'new' ? (r[k] === null ? null : JSON.stringify(r[k])) : r[k],
          ),
          csv,
        ),
      );
  }
  return changes.length;
}
