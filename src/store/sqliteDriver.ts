import type { DatabaseSync, SQLInputValue } from 'node:sqlite';
import { StoreDataError, StoreUnavailableError } from './types';

// node:sqlite as the SQLite store uses it: loaded on first use, statements bound with undefined as NULL, and every
// call retried while another process holds the file's lock, its failures classified for the writer.

export type Row = Record<string, SQLInputValue>;

let sqliteModule: typeof import('node:sqlite') | null = null;

/**
 * Loads node:sqlite on first use (not at import: every CLI command and worker bundles this module), without the
 * ExperimentalWarning Node 22 prints for it, which would land in every user's terminal and the extension host log.
 */
export function loadSqlite(path: string): typeof import('node:sqlite') {
  if (sqliteModule) return sqliteModule;
  // Held as it is (unknown) to be put back; called bound.
  const original: unknown = Reflect.get(process, 'emitWarning');
  const emit = process.emitWarning.bind(process) as (...a: unknown[]) => void;
  process.emitWarning = function (this: unknown, warning: string | Error, ...rest: unknown[]) {
    const text = typeof warning === 'string' ? warning : warning?.message;
    if (/SQLite is an experimental feature/.test(String(text))) return;
    return emit(warning, ...rest);
  };
  try {
    // getBuiltinModule (Node 22.3+), not require: a builtin, loaded only here and never bundled.
    const loaded = process.getBuiltinModule('node:sqlite') as typeof import('node:sqlite') | undefined;
    // Node 22 before 22.13 has it only behind --experimental-sqlite.
    if (!loaded) throw new Error('node:sqlite is not available');
    sqliteModule = loaded;
    return loaded;
  } catch (err) {
    throw new StoreUnavailableError(
      `cannot open SQLite store ${path}: this Node (${process.version}) has no built-in SQLite (node:sqlite, Node 22.13 or newer). ` +
        'Run the CLI with Node 22.13+, use VS Code 1.101 or newer, or set store.url to a postgres:// URL',
      { cause: err },
    );
  } finally {
    Reflect.set(process, 'emitWarning', original);
  }
}

/** A synchronous call's outcome as a promise: its value, or its exception as a rejection (as an async function's). */
export function settled<T>(fn: () => T): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (err) {
    return Promise.reject(err instanceof Error ? err : new Error(String(err)));
  }
}

/** Binds undefined as NULL: node:sqlite refuses undefined, and optional row fields are often absent. */
export function bind(values: readonly unknown[]): SQLInputValue[] {
  return values.map((v) => (v === undefined ? null : (v as SQLInputValue)));
}

/**
 * Runs a synchronous database call, retrying with async sleeps while another process holds the file lock, and
 * classifies failures: a lock that outlasts busyTimeoutMs is StoreUnavailableError (the writer backs off), a
 * constraint or size failure is StoreDataError (the writer isolates the offending entry).
 */
export async function withBusyRetry<T>(
  path: string,
  busyTimeoutMs: number,
  what: string,
  fn: () => T | Promise<T>,
): Promise<T> {
  const deadline = Date.now() + busyTimeoutMs;
  let delay = 5;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      const msg = (err as Error).message ?? String(err);
      if (!isBusy(msg)) {
        if (err instanceof StoreUnavailableError || err instanceof StoreDataError) throw err;
        if (isDataError(msg))
          throw new StoreDataError(`SQLite store ${path} rejected the data (${what}): ${msg}`, { cause: err });
        if (isIoError(msg))
          throw new StoreUnavailableError(
            `SQLite store ${path} cannot ${what}: ${msg} — check disk space and permissions`,
            { cause: err },
          );
        if (/not a database|malformed/i.test(msg)) {
          throw new Error(
            `SQLite store ${path} cannot ${what}: ${msg} — the file is not a (healthy) SQLite database; move it away or choose another path`,
            { cause: err },
          );
        }
        throw err instanceof Error && msg.includes(path)
          ? err
          : new Error(`SQLite store ${path} cannot ${what}: ${msg}`, { cause: err });
      }
      if (Date.now() >= deadline) {
        throw new StoreUnavailableError(
          `SQLite store ${path} stayed locked for ${busyTimeoutMs} ms (${what}): another process holds a write transaction on it (a crawl's writer, or a tool such as the sqlite3 shell or DB Browser with unsaved changes)`,
          { cause: err },
        );
      }
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 100);
    }
  }
}

export function all(db: DatabaseSync, sql: string, params: readonly unknown[] = []): Row[] {
  return db.prepare(sql).all(...bind(params));
}

export function get(db: DatabaseSync, sql: string, params: readonly unknown[] = []): Row | undefined {
  return db.prepare(sql).get(...bind(params));
}

export function run(db: DatabaseSync, sql: string, params: readonly unknown[] = []): void {
  db.prepare(sql).run(...bind(params));
}

function isBusy(msg: string): boolean {
  return /database is locked|database is busy|SQLITE_BUSY/i.test(msg);
}

function isDataError(msg: string): boolean {
  return /constraint failed|too big|datatype mismatch|malformed JSON/i.test(msg);
}

function isIoError(msg: string): boolean {
  return /disk I\/O error|database or disk is full|unable to open database|readonly database/i.test(msg);
}
