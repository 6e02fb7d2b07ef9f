import { dirname, isAbsolute, join, resolve } from 'node:path';
import type { CrawlTask } from '../core/task/model';
import { redactUrl } from '../redis/connect';
import { PostgresStore } from './postgres';
import { SqliteStore } from './sqlite';
import { schemaForTask } from './tables';
import type { ItemStore } from './types';

// One place that turns a store URL from a task file, a setting or the CLI into an opened store.
//   sqlite:<path>, sqlite://<path>, or a path ending in .sqlite/.sqlite3/.db  -> SQLite file
//   postgres://user:password@host:port/db[?schema=name], postgresql://...    -> PostgreSQL
// PostgreSQL tables go to the `schema` parameter's schema, else to `crawl_<task>` when the caller names the
// task (several tasks can share one database without mixing tables; see schemaForTask), else to `public`.

export interface OpenStoreOptions {
  /** Task name: picks the PostgreSQL schema when the URL does not. */
  readonly task?: string;
  /** Base for relative SQLite paths (default: the process's cwd). */
  readonly cwd?: string;
}

export type StoreTarget =
  | { readonly kind: 'sqlite'; readonly path: string }
  | { readonly kind: 'postgres'; readonly url: string; readonly schema: string };

const SQLITE_EXT = /\.(sqlite3?|db)$/i;

/** Parses a store URL without touching anything; throws a message that says what forms are accepted. */
export function parseStoreUrl(url: string, opts: OpenStoreOptions = {}): StoreTarget {
  const text = url.trim();
  if (/^sqlite:/i.test(text)) {
    let path = text.slice('sqlite:'.length);
    if (path.startsWith('//')) path = path.slice(2);
    if (!path) throw new Error(`store URL "${text}" names no file: write sqlite:<path>, e.g. sqlite:.crawl/items.sqlite`);
    return { kind: 'sqlite', path: isAbsolute(path) ? path : resolve(opts.cwd ?? process.cwd(), path) };
  }
  if (/^postgres(ql)?:\/\//i.test(text)) {
    let parsed: URL;
    try {
      parsed = new URL(text);
    } catch {
      throw new Error(`store URL "${redactUrl(text)}" is not a valid URL: write postgres://user:password@host:5432/database`);
    }
    const explicit = parsed.searchParams.get('schema');
    parsed.searchParams.delete('schema');
    const schema = explicit || (opts.task ? schemaForTask(opts.task) : 'public');
    if (schema.length > 63) throw new Error(`PostgreSQL schema "${schema}" is longer than 63 characters: set ?schema=<name> in the store URL`);
    return { kind: 'postgres', url: parsed.toString(), schema };
  }
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(text) && SQLITE_EXT.test(text)) {
    return { kind: 'sqlite', path: isAbsolute(text) ? text : resolve(opts.cwd ?? process.cwd(), text) };
  }
  throw new Error(
    `unsupported store URL "${redactUrl(text)}": use sqlite:<path> (or a path ending in .sqlite) for a local file, ` +
      'or postgres://user:password@host:5432/database for PostgreSQL',
  );
}

export function createStore(url: string, opts: OpenStoreOptions = {}): ItemStore {
  const target = parseStoreUrl(url, opts);
  return target.kind === 'sqlite' ? new SqliteStore(target.path) : new PostgresStore(target.url, { schema: target.schema });
}

/** Creates and opens the store; on failure nothing is left open. */
export async function openStore(url: string, opts: OpenStoreOptions = {}): Promise<ItemStore> {
  const store = createStore(url, opts);
  try {
    await store.open();
  } catch (err) {
    await store.close().catch(() => undefined);
    const msg = (err as Error).message;
    // Store errors already name where the store is; anything else gets it here.
    const named = msg.includes(store.location) || (store instanceof SqliteStore && msg.includes(store.path));
    throw named ? err : new Error(`cannot open store ${store.location}: ${msg}`, { cause: err });
  }
  return store;
}

/** The task's store URL, or its default: an SQLite file in `.crawl/` next to the task file. */
export function storeUrlOf(task: Pick<CrawlTask, 'name' | 'file' | 'store'>): string {
  if (task.store.url === null) return `sqlite:${join(dirname(task.file), '.crawl', `${task.name}.sqlite`)}`;
  return task.store.url;
}
