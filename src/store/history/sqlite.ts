import type { DatabaseSync, SQLInputValue, StatementSync } from 'node:sqlite';
import { StoreUnavailableError } from '../types';
import type { HistorySql, Row } from './log';

// Item history's executor on an SQLite store's connection. node:sqlite is synchronous, so a transaction here
// runs to its end in one turn of the event loop (its awaits resolve at once) and nothing else on the connection
// interleaves. A lock held by another process is waited out the way the store waits (retry with sleeps).

export function sqliteHistorySql(conn: () => DatabaseSync, where: string, busyTimeoutMs = 20_000): HistorySql {
  const retry = <T>(what: string, fn: () => Promise<T>) => retryBusy(where, busyTimeoutMs, what, fn);
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
  const bind = (params: readonly unknown[]) => params.map((v) => (v === undefined ? null : v)) as SQLInputValue[];
  const self: HistorySql = {
    prefix: '',
    all: async (sql, params = []) => prepare(sql).all(...bind(params)) as Row[],
    run: async (sql, params = []) => {
      prepare(sql).run(...bind(params));
    },
    transaction: (what, fn) =>
      retry(what, async () => {
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

async function retryBusy<T>(where: string, timeoutMs: number, what: string, fn: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let delay = 5;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      const msg = (err as Error).message ?? String(err);
      if (!/database is locked|database is busy|SQLITE_BUSY/i.test(msg)) throw new Error(`SQLite store ${where} cannot ${what}: ${msg}`, { cause: err });
      if (Date.now() >= deadline) {
        throw new StoreUnavailableError(`SQLite store ${where} stayed locked for ${timeoutMs} ms (${what}): another process holds a write transaction on it`, { cause: err });
      }
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 100);
    }
  }
}
