import { createHash } from 'node:crypto';

// Table names derived from item types, shared by every store so a task exported from SQLite and one stored in
// PostgreSQL use the same names. Item types are case-sensitive identifiers of up to 64 characters; table names
// must be case-insensitive-safe and fit PostgreSQL's 63-byte limit, so a type that is not already a short
// lowercase identifier gets a hash suffix: 'Product' and 'product' must never share a table.

const PLAIN = /^[a-z_][a-z0-9_]{0,47}$/;

export function itemTableName(type: string): string {
  if (PLAIN.test(type)) return `items_${type}`;
  const base = type
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, '_')
    .slice(0, 40);
  const hash = createHash('sha1').update(type).digest('hex').slice(0, 8);
  return `items_${base}_${hash}`;
}

/** Quotes an identifier for SQL (both SQLite and PostgreSQL use double quotes). */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** Whitelist of sortable columns: readItems' orderBy comes from the UI and must never reach SQL as text. */
export const ORDER_COLUMNS = {
  id: 'id',
  key: 'key',
  fetched_at: 'fetched_at',
  first_seen: 'first_seen',
  updated_at: 'updated_at',
} as const;

/** Appends the names not yet in `known`, keeping first-seen order; returns null when nothing is new. */
export function mergeFieldNames(known: readonly string[], incoming: Iterable<string>): string[] | null {
  const seen = new Set(known);
  const out = [...known];
  for (const f of incoming) {
    if (!seen.has(f)) {
      seen.add(f);
      out.push(f);
    }
  }
  return out.length === known.length ? null : out;
}

/**
 * PostgreSQL schema of a task's tables. Task names may contain '-', which would need quoting everywhere a person
 * types SQL; a task whose name is not a plain identifier gets a sanitised name plus a hash, so 'a-b' and 'a_b'
 * never share tables.
 */
export function schemaForTask(task: string): string {
  if (/^[a-z0-9_]{1,48}$/.test(task)) return `crawl_${task}`;
  const base = task
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, '_')
    .slice(0, 40);
  return `crawl_${base}_${createHash('sha1').update(task).digest('hex').slice(0, 8)}`;
}
