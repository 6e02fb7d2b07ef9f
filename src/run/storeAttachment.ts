import type { Redis } from 'ioredis';
import { dirname, join } from 'node:path';
import type { CrawlTask } from '../core/task/model';
import type { CrawlStatus, RunInfo } from '../frontier/crawl';
import { openStore, startWriter, type ItemStore, type WriterHandle } from '../store';
import { summaryFromStatus, type SessionStoreHooks } from './session';

// Connects a crawl session to its store: a writer drains the task's item stream while the crawl runs, and the
// finalize step flushes it and records the run summary. Used by the CLI and the extension alike.

export interface AttachedStore {
  readonly store: ItemStore;
  readonly writer: WriterHandle;
  readonly hooks: SessionStoreHooks;
  close(): Promise<void>;
}

/** The task's store URL, or its default: an SQLite file in `.crawl/` next to the task file. */
export function storeUrlFor(task: CrawlTask): string {
  if (task.store.url === null) return `sqlite:${join(dirname(task.file), '.crawl', `${task.name}.sqlite`)}`;
  return task.store.url;
}

export async function attachStore(redis: Redis, task: CrawlTask, log?: (message: string) => void): Promise<AttachedStore> {
  const store = await openStore(storeUrlFor(task), { task: task.name, cwd: dirname(task.file) });
  let writer: WriterHandle;
  try {
    writer = await startWriter(redis, {
      task: task.name,
      store,
      policy: task.store.onConflict,
      batchSize: task.store.batchSize,
      flushMs: task.store.flushMs,
      log,
    });
  } catch (err) {
    await store.close();
    throw err;
  }
  const hooks: SessionStoreHooks = {
    backlog: () => writer.backlog(),
    async finalize(run: RunInfo, status: CrawlStatus, durationMs: number) {
      await writer.flush();
      const c = writer.counters();
      const base = summaryFromStatus(status, durationMs);
      // Rows in the store, not extractions: a page re-fetched after a worker died is extracted twice but stored
      // once, and the summary must match the table.
      let stored = 0;
      for (const type of await store.itemTypes()) stored += await store.count(type);
      await store.writeRunSummary({
        run: run.run,
        task: task.name,
        startedAt: run.startedAt,
        finishedAt: Date.now(),
        durationMs,
        pages: status.stats?.done ?? 0,
        items: stored,
        duplicates: c.duplicates,
        conflicts: c.conflicts,
        failures: status.stats?.failed ?? 0,
        extra: { ...base, extracted: status.stats?.items ?? 0 },
      });
      return { stored, storeDuplicates: c.duplicates, storeConflicts: c.conflicts, storeErrors: c.errors, store: store.location };
    },
  };
  return {
    store,
    writer,
    hooks,
    async close() {
      await writer.stop();
      await store.close();
    },
  };
}
