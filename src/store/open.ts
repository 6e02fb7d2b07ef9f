import { dirname, isAbsolute, join, resolve } from 'node:path';
import type { CrawlTask } from '../core/task/model';
import { parseStoreUrl } from '../core/task/storeUrl';
import { PostgresStore } from './postgres';
import { SqliteStore } from './sqlite';
import { schemaForTask } from './tables';
import type { ItemStore } from './types';

// One place that turns a store URL from a task file, a setting or the CLI into an opened store. The URL is parsed
// by core/task/storeUrl.ts (the one parser); here a relative SQLite path is resolved and the PostgreSQL schema
// chosen: the URL's `schema` parameter, else `crawl_<task>` when the caller names the task (several tasks can
// share one database without mixing tables; see schemaForTask), else `public`.

export interface OpenStoreOptions {
  /** Task name: picks the PostgreSQL schema when the URL does not. */
  readonly task?: string;
  /** Base for relative SQLite paths (default: the process's cwd). */
  readonly cwd?: string;
  /** Record item history (default true). */
  readonly history?: boolean;
}

export type StoreTarget =
  | { readonly kind: 'sqlite'; readonly path: string }
  | { readonly kind: 'postgres'; readonly url: string; readonly schema: string };

/** A store URL parsed and resolved (absolute SQLite path, PostgreSQL schema), without touching anything. */
export function resolveStoreUrl(url: string, opts: OpenStoreOptions = {}): StoreTarget {
  const target = parseStoreUrl(url);
  if (target.kind === 'sqlite') {
    return {
      kind: 'sqlite',
      path: isAbsolute(target.path) ? target.path : resolve(opts.cwd ?? process.cwd(), target.path),
    };
  }
  return {
    kind: 'postgres',
    url: target.url,
    schema: target.schema ?? (opts.task ? schemaForTask(opts.task) : 'public'),
  };
}

export function createStore(url: string, opts: OpenStoreOptions = {}): ItemStore {
  const target = resolveStoreUrl(url, opts);
  const history = opts.history ?? true;
  return target.kind === 'sqlite'
    ? new SqliteStore(target.path, { history })
    : new PostgresStore(target.url, { schema: target.schema, history });
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
