import type { Redis } from '../redis/connect';
import { rowsWrittenByRun, type TypeRows } from '../store/runRows';
import { NoTaskStore, openTaskStore } from './taskStore';

// What a task's store holds of its current run, for the monitor's task view and /metrics: the rows the run wrote
// (store/runRows.ts, the CLI summary's "items stored") and the newest items. Read from the store its task file
// names (taskStore.ts), at most once per READ_EVERY_MS per task and never in a request's way: a store is a
// database, and a page polled every 2 s or a scrape every few seconds must not become its load or wait on it. Bounded: RECENT items, TYPES types.

const READ_EVERY_MS = 10_000;
const RECENT = 10;
const TYPES = 20;
/** Characters of an item's fields shown (JSON). */
const FIELDS_CHARS = 300;

export interface RecentItem {
  readonly type: string;
  readonly key: string;
  readonly url: string | null;
  readonly run: string | null;
  readonly fetchedAt: number;
  /** The item's fields as JSON, cut at FIELDS_CHARS. */
  readonly fields: string;
}

export interface StoredView {
  /** Where the store is (passwords redacted), or null when it cannot be read here. */
  readonly location: string | null;
  /** The run whose rows `rows` counts. */
  readonly run: string | null;
  readonly rows: readonly TypeRows[];
  /** The newest items of the store, any run, newest first. */
  readonly recent: readonly RecentItem[];
  /** Why nothing is shown (no store yet, the task file not on this machine, the store refusing). */
  readonly note: string | null;
  readonly at: number;
}

export class StoredReads {
  private readonly cache = new Map<string, { at: number; read: Promise<StoredView>; refreshing: boolean }>();

  constructor(private readonly redis: Redis) {}

  /**
   * The task's stored view. The first read waits for the store; later ones get the last read at once, and one
   * older than READ_EVERY_MS is read again behind them (one read at a time per task), so no request waits on a
   * database.
   */
  read(task: string, now = Date.now()): Promise<StoredView> {
    const hit = this.cache.get(task);
    if (!hit) {
      const read = readStored(this.redis, task, now);
      this.cache.set(task, { at: now, read, refreshing: false });
      return read;
    }
    if (now - hit.at >= READ_EVERY_MS && !hit.refreshing) {
      hit.refreshing = true;
      void readStored(this.redis, task, now).then((v) => {
        if (this.cache.get(task) === hit) this.cache.set(task, { at: Date.now(), read: Promise.resolve(v), refreshing: false });
      });
    }
    return hit.read;
  }

  /** Forgets tasks no longer on the Redis, so the cache holds at most the tasks there are. */
  keepOnly(names: readonly string[]): void {
    const keep = new Set(names);
    for (const t of this.cache.keys()) if (!keep.has(t)) this.cache.delete(t);
  }

  forget(task: string): void {
    this.cache.delete(task);
  }
}

async function readStored(redis: Redis, task: string, at: number): Promise<StoredView> {
  const none = (note: string, location: string | null = null): StoredView => ({ location, run: null, rows: [], recent: [], note, at });
  let opened;
  try {
    opened = await openTaskStore(redis, task, { create: false });
  } catch (err) {
    return none(err instanceof NoTaskStore ? err.message : `cannot open the store of '${task}': ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`);
  }
  if (!opened) return none('no store yet: nothing stored');
  const { store, run } = opened;
  try {
    const types = (await store.itemTypes()).slice(0, TYPES);
    const rows = await rowsWrittenByRun(store, run, types);
    const newest = await Promise.all(types.map((type) => store.readItems(type, { orderBy: 'fetched_at', descending: true, limit: RECENT })));
    const recent = newest
      .flat()
      .sort((a, b) => b.fetchedAt - a.fetchedAt)
      .slice(0, RECENT)
      .map((i) => ({ type: i.type, key: i.key, url: i.url, run: i.run, fetchedAt: i.fetchedAt, fields: cut(JSON.stringify(i.data)) }));
    return { location: store.location, run, rows, recent, note: null, at };
  } catch (err) {
    return none(`the store ${store.location} refused a read: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`, store.location);
  } finally {
    await store.close().catch(() => undefined);
  }
}

function cut(text: string): string {
  return text.length > FIELDS_CHARS ? `${text.slice(0, FIELDS_CHARS - 1)}…` : text;
}
