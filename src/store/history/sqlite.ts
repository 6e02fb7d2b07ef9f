import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { bind, settled, withBusyRetry } from '../sqliteDriver';
import type { HistorySql } from './log';

// Item history's executor on an SQLite store's connection. node:sqlite is synchronous, so a transaction here
// runs to its end in one turn of the event loop (its awaits resolve at once) and nothing else on the connection
// interleaves. A lock held by another process is waited out as the store waits for it (sqliteDriver.ts).

export function sqliteHistorySql(conn: () => DatabaseSync, where: string, busyTimeoutMs = 20_000): HistorySql {
  const retry = <T>(what: string, fn: () => Promise<T>) => withBusyRetry(where, busyTimeoutMs, what, fn);
  const cache = new Map<string, StatementSync>();
  let db: DatabaseSync | null = null;
  const prepare = (sql: string): StatementSync => {
    const current = conn();
    // A reopened store has a new connection: statements of the old one are gone with it.
    if (current !== db) {
      cache.clear();
      db = current;
    }
    let s = cache.get(sql);
    if (!s) cache.set(sql, (s = current.prepare(sql)));
    return s;
  };
  const self: HistorySql = {
    prefix: '',
    itemTimeMs: (column) => column,
    itemDataText: (column) => column,
    // Powers of two: any count in a few statements (7 rows: 4 + 2 + 1), from five cached statements a kind.
    rowsPerStatement: [16, 8, 4, 2, 1],
    all: (sql, params = []) => settled(() => prepare(sql).all(...bind(params))),
    run: (sql, params = []) =>
      settled(() => {
        prepare(sql).run(...bind(params));
      }),
    transaction: (what, fn) =>
      // Inside the store's own transaction (writeBatch's): part of it, retried with it.
      conn().isTransaction
        ? fn(self)
        : retry(what, async () => {
            const d = conn();
            d.exec('BEGIN IMMEDIATE');
            try {
              const out = await fn(self);
              d.exec('COMMIT');
              return out;
            } catch (err) {
              if (d.isTransaction) d.exec('ROLLBACK');
              throw err;
            }
          }),
  };
  return self;
}
