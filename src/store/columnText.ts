// Reading a column's value as text, alike in both stores. Apart from rows.ts so item history (history/log.ts) can
// use it without importing the store types that import it.

/** A nullable column as text (null stays null). */
export function nullable(v: unknown): string | null {
  return v === null || v === undefined ? null : text(v);
}

/**
 * A column's value as text. SQLite hands back strings, numbers, bigints or bytes (read as UTF-8), PostgreSQL
 * strings and numbers; null and undefined read as String does ('null'), anything else as JSON.
 */
export function text(v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean' || v === null || v === undefined)
    return String(v);
  if (v instanceof Uint8Array) return Buffer.from(v).toString('utf8');
  return JSON.stringify(v);
}
