import { nullable, text } from './columnText';
import { ORDER_COLUMNS } from './tables';
import type { ErrorRow, ItemRow, ReadOptions, RunSummary, StoredError, StoredItem } from './types';

// What the SQLite and PostgreSQL stores do alike: the upserts' conflict rules (an older fetch never overwrites a
// newer one, so replays and concurrent writers agree), the columns they list, and a stored row back to the
// ItemStore's types. Each store keeps only its dialect: placeholders, time columns, how rows travel in bulk.

/** `a = excluded.a, b = excluded.b`: the SET of an upsert that takes every listed column from the new row. */
function fromExcluded(columns: readonly string[]): string {
  return columns.map((c) => `${c} = excluded.${c}`).join(', ');
}

/** A page row per run and request: the newest fetch wins. `t` is the table's name or alias in the statement. */
export function pageConflict(t: string): string {
  return `ON CONFLICT (run, url, method, body) DO UPDATE SET ${fromExcluded(['rule', 'depth', 'status', 'fetched_at', 'content_type', 'bytes'])}
    WHERE excluded.fetched_at >= ${t}.fetched_at`;
}

/** One page_validators row per URL across runs: the newest fetch wins; a 304's record keeps the stored links. */
export function revisitConflict(t: string): string {
  return `ON CONFLICT (url) DO UPDATE SET ${fromExcluded(['final_url', 'etag', 'last_modified', 'shape', 'items'])},
    links = COALESCE(excluded.links, ${t}.links), ${fromExcluded(['run', 'fetched_at'])}
    WHERE excluded.fetched_at >= ${t}.fetched_at`;
}

export const RUN_COLUMNS = [
  'run',
  'task',
  'started_at',
  'finished_at',
  'duration_ms',
  'pages',
  'items',
  'duplicates',
  'conflicts',
  'failures',
  'extra',
] as const;

/** A run's summary row is written again when the run is finalized again: the last word wins. */
export const RUN_CONFLICT = `ON CONFLICT (run) DO UPDATE SET ${fromExcluded(RUN_COLUMNS.slice(1))}`;

/** A run summary's values in RUN_COLUMNS order. */
export function runValues(s: RunSummary): unknown[] {
  return [
    s.run,
    s.task,
    s.startedAt,
    s.finishedAt,
    s.durationMs,
    s.pages,
    s.items,
    s.duplicates,
    s.conflicts,
    s.failures,
    s.extra ? JSON.stringify(s.extra) : null,
  ];
}

export const ERROR_COLUMNS = ['error_id', 'kind', 'run', 'url', 'rule', 'type', 'key', 'message', 'at'] as const;

/** An error row's values in ERROR_COLUMNS order. */
export function errorValues(e: ErrorRow): unknown[] {
  return [e.id, e.kind, e.run, e.url, e.rule, e.type, e.key, e.message, e.at];
}

/** The column readItems orders by: a whitelist, since orderBy comes from the UI and must never reach SQL as text. */
export function orderColumn(opts: ReadOptions): string {
  const column = ORDER_COLUMNS[opts.orderBy ?? 'id'];
  if (!column)
    throw new Error(
      `cannot order items by '${String(opts.orderBy)}': use one of ${Object.keys(ORDER_COLUMNS).join(', ')}`,
    );
  return column;
}

export function clampLimit(limit: number | undefined): number {
  return Math.min(Math.max(1, limit ?? 100), 10_000);
}

/** A JSON column as read: text from SQLite, already parsed from PostgreSQL's jsonb. */
function json<T>(v: unknown): T {
  return (typeof v === 'string' ? JSON.parse(v) : v) as T;
}

/** Times are ms since epoch: integers in SQLite, fractional ms from PostgreSQL's timestamptz. */
function ms(v: unknown): number {
  return Math.round(Number(v));
}

/** A row of an item table (times in ms). */
export function itemFromRow(type: string, r: Record<string, unknown>): StoredItem {
  return {
    type,
    key: String(r.key),
    data: json<Record<string, unknown>>(r.data),
    url: nullable(r.url),
    rule: nullable(r.rule),
    run: nullable(r.run),
    fetchedAt: ms(r.fetched_at),
    firstSeen: ms(r.first_seen),
    updatedAt: ms(r.updated_at),
  };
}

/** A row of `runs` (times in ms). */
export function runFromRow(r: Record<string, unknown>): RunSummary {
  return {
    run: String(r.run),
    task: String(r.task),
    startedAt: ms(r.started_at),
    finishedAt: ms(r.finished_at),
    durationMs: Number(r.duration_ms),
    pages: Number(r.pages),
    items: Number(r.items),
    duplicates: Number(r.duplicates),
    conflicts: Number(r.conflicts),
    failures: Number(r.failures),
    ...(r.extra ? { extra: json<Record<string, unknown>>(r.extra) } : {}),
  };
}

/** A row of `errors` (its time in ms). */
export function errorFromRow(r: Record<string, unknown>): StoredError {
  return {
    id: String(r.error_id),
    kind: String(r.kind) as ErrorRow['kind'],
    run: nullable(r.run),
    url: nullable(r.url),
    rule: nullable(r.rule),
    type: nullable(r.type),
    key: nullable(r.key),
    message: String(r.message),
    at: ms(r.at),
  };
}

/** The field names a batch's items have, by type: what the type registry must know before the rows go in. */
export function fieldsByType(items: readonly ItemRow[]): Map<string, Set<string>> {
  const byType = new Map<string, Set<string>>();
  for (const item of items) {
    let set = byType.get(item.type);
    if (!set) byType.set(item.type, (set = new Set()));
    for (const f of item.fields) set.add(f);
  }
  return byType;
}

export { nullable, text };
