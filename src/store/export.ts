import type { Writable } from 'node:stream';
import { csvRow } from './csv';
import type { ItemStore, StoredItem } from './types';

// Streams items out of a store page by page, honouring the destination's backpressure, so exporting millions
// of items needs no more memory than one page. Column order is the type's field order as first stored (the
// stores keep it; PostgreSQL's jsonb would otherwise reorder keys), applied to JSON objects too, so every format
// and every store export the same thing.

export type ExportFormat = 'jsonl' | 'csv' | 'json';

export interface ExportOptions {
  /** The item type; omitted: every type (JSON/JSONL records then carry `_type`; CSV needs exactly one type). */
  readonly type?: string;
  readonly format: ExportFormat;
  readonly out: Writable;
  /** Adds `_key`, `_url` and `_fetched_at` (ISO 8601) before the fields. */
  readonly meta?: boolean;
  /** CSV: keep cells that start like a formula (`=`, `+`, `-`, `@`) as they are; default: neutralised (csv.ts). */
  readonly csvRaw?: boolean;
  /** Items read per store query. */
  readonly pageSize?: number;
}

export interface ExportResult {
  readonly items: number;
  readonly types: readonly string[];
}

/** Writes the export to `out` and resolves when all of it was accepted; ending `out` is the caller's call. */
export async function exportItems(store: ItemStore, opts: ExportOptions): Promise<ExportResult> {
  const types = await chooseTypes(store, opts);
  const withType = opts.type === undefined && opts.format !== 'csv';
  const writer = new BackpressureWriter(opts.out);
  let count = 0;

  if (opts.format === 'json') await writer.write('[');
  for (const type of types) {
    const fields = await store.fieldNames(type);
    const meta = metaColumns(opts.meta === true, withType);
    const clash = fields.find((f) => meta.includes(f));
    if (clash)
      throw new Error(
        `cannot export type '${type}' with meta columns: it has a field named '${clash}'; export without meta`,
      );
    const columns = [...meta, ...fields];
    const csv = { raw: opts.csvRaw === true };
    if (opts.format === 'csv') await writer.write(csvRow(columns, csv));
    for await (const item of store.iterateItems(type, opts.pageSize ? { pageSize: opts.pageSize } : {})) {
      const record = toRecord(item, fields, meta);
      if (opts.format === 'csv')
        await writer.write(
          csvRow(
            columns.map((c) => record[c]),
            csv,
          ),
        );
      else if (opts.format === 'jsonl') await writer.write(JSON.stringify(record) + '\n');
      else await writer.write((count === 0 ? '\n' : ',\n') + JSON.stringify(record));
      count++;
    }
  }
  if (opts.format === 'json') await writer.write(count === 0 ? ']\n' : '\n]\n');
  return { items: count, types };
}

async function chooseTypes(store: ItemStore, opts: ExportOptions): Promise<string[]> {
  if (!['jsonl', 'csv', 'json'].includes(opts.format))
    throw new Error(`unknown export format '${opts.format}': use jsonl, csv or json`);
  const all = await store.itemTypes();
  if (opts.type !== undefined) {
    if (!all.includes(opts.type)) {
      throw new Error(
        `store ${store.location} has no items of type '${opts.type}'${all.length ? ` (it has: ${all.join(', ')})` : ' (it has no items yet)'}`,
      );
    }
    return [opts.type];
  }
  if (opts.format === 'csv' && all.length > 1) {
    throw new Error(
      `a CSV file holds one item type and store ${store.location} has ${all.length} (${all.join(', ')}): choose one`,
    );
  }
  return all;
}

function metaColumns(meta: boolean, withType: boolean): string[] {
  const cols = withType ? ['_type'] : [];
  if (meta) cols.push('_key', '_url', '_fetched_at');
  return cols;
}

function toRecord(item: StoredItem, fields: readonly string[], meta: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const m of meta) {
    if (m === '_type') out._type = item.type;
    else if (m === '_key') out._key = item.key;
    else if (m === '_url') out._url = item.url;
    else if (m === '_fetched_at') out._fetched_at = new Date(item.fetchedAt).toISOString();
  }
  // Fields missing from this item (added to the type later) export as null so every CSV row has every column.
  for (const f of fields) out[f] = Object.prototype.hasOwnProperty.call(item.data, f) ? item.data[f] : null;
  // A field the registry does not know yet (written by a concurrent writer after we read the names) is still
  // exported in JSON; CSV rows must keep the header's width, so there it is left out.
  for (const [k, v] of Object.entries(item.data)) if (!(k in out)) out[k] = v;
  return out;
}

export class BackpressureWriter {
  private failed: Error | null = null;

  constructor(private readonly out: Writable) {
    out.on('error', (err) => (this.failed = err));
  }

  async write(chunk: string): Promise<void> {
    if (this.failed) throw this.destinationError(this.failed);
    if (this.out.write(chunk)) return;
    await new Promise<void>((resolve, reject) => {
      const done = (err?: Error) => {
        this.out.off('drain', onDrain);
        this.out.off('error', onError);
        this.out.off('close', onClose);
        if (err) reject(err);
        else resolve();
      };
      const onDrain = () => done();
      const onError = (err: Error) => done(this.destinationError(err));
      const onClose = () => done(new Error('export destination closed before the export finished'));
      this.out.on('drain', onDrain);
      this.out.on('error', onError);
      this.out.on('close', onClose);
    });
  }

  private destinationError(err: Error): Error {
    return new Error(`export destination failed: ${err.message}`, { cause: err });
  }
}
