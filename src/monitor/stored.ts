import type { RunChangeCounts } from '../core/history/diff';
import type { Redis } from '../redis/connect';
import { runChangeCounts } from '../store/history/query';
import { rowsWrittenByRun, type TypeRows } from '../store/runRows';
import { NoTaskStore, openTaskStore } from './taskStore';

// What a task's store holds of its current run, for the monitor's task view and /metrics: the rows the run wrote
// (store/runRows.ts, the CLI summary's "items stored"), the newest items, and the items each run added, changed and
// removed (store/history/query.ts, the summary's "items changed" and `crawl-studio changes`). Read from the store its task file
// names (taskStore.ts), at most once per READ_EVERY_MS per task and never in a request's way: a store is a
// database, and a page polled every 2 s or a scrape every few seconds must not become its load or wait on it. Bounded: RECENT items, TYPES types.

const READ_EVERY_MS = 10_000;
const RECENT = 10;
const TYPES = 20;
/** Characters of an item's fields shown (JSON). */
const FIELDS_CHARS = 300;
/** Runs with item history listed on the task page (the newest). */
const CHANGE_RUNS = 10;

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
  /** What the current run added, changed and removed; null until its history closed (it still runs). */
  readonly changes: RunChangeCounts | null;
  /** The task's runs with item history, newest first (at most CHANGE_RUNS). */
  readonly changeRuns: readonly RunChangeCounts[];
  /** The current run's notification (notify:), as recorded when it was sent; its reason when it failed. */
  readonly notify: { readonly status: string; readonly attempts: number; readonly reason?: string } | null;
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
        if (this.cache.get(task) === hit)
          this.cache.set(task, { at: Date.now(), read: Promise.resolve(v), refreshing: false });
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
  const none = (note: string, location: string | null = null): StoredView => ({
    location,
    run: null,
    rows: [],
    recent: [],
    changes: null,
    changeRuns: [],
    notify: null,
    note,
    at,
  });
  let opened;
  try {
    opened = await openTaskStore(redis, task, { create: false });
  } catch (err) {
    return none(
      err instanceof NoTaskStore
        ? err.message
        : `cannot open the store of '${task}': ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`,
    );
  }
  if (!opened) return none('no store yet: nothing stored');
  const { store, run } = opened;
  try {
    const types = (await store.itemTypes()).slice(0, TYPES);
    const rows = await rowsWrittenByRun(store, run, types);
    const newest = await Promise.all(
      types.map((type) => store.readItems(type, { orderBy: 'fetched_at', descending: true, limit: RECENT })),
    );
    const recent = newest
      .flat()
      .sort((a, b) => b.fetchedAt - a.fetchedAt)
      .slice(0, RECENT)
      .map((i) => ({
        type: i.type,
        key: i.key,
        url: i.url,
        run: i.run,
        fetchedAt: i.fetchedAt,
        fields: cut(JSON.stringify(i.data)),
      }));
    const changes = await runChangeCounts(store, task, run);
    const changeRuns = (await store.history.runs(task)).slice(-CHANGE_RUNS).reverse();
    const notify = changes ? notifyOf((await store.readRuns()).find((r) => r.run === run)?.extra?.notify) : null;
    return { location: store.location, run, rows, recent, changes, changeRuns, notify, note: null, at };
  } catch (err) {
    return none(
      `the store ${store.location} refused a read: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`,
      store.location,
    );
  } finally {
    await store.close().catch(() => undefined);
  }
}

function notifyOf(v: unknown): StoredView['notify'] {
  if (typeof v !== 'object' || v === null) return null;
  const o = v as { status?: unknown; attempts?: unknown; reason?: unknown };
  return typeof o.status === 'string'
    ? {
        status: o.status,
        attempts: Number(o.attempts ?? 0),
        ...(typeof o.reason === 'string' ? { reason: o.reason } : {}),
      }
    : null;
}

function cut(text: string): string {
  return text.length > FIELDS_CHARS ? `${text.slice(0, FIELDS_CHARS - 1)}…` : text;
}
