import type { Redis } from '../redis/connect';
import { statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { CrawlTask } from '../core/task/model';
import type { CrawlStatus, RunInfo } from '../frontier/types';
import {
  openStore,
  resolveStoreUrl,
  storeUrlOf,
  startWriter,
  type ItemRow,
  type ItemStore,
  type WriterHandle,
} from '../store';
import type { SessionStoreHooks } from './session';
import { summaryFromStatus } from './runSummary';
import { isAbsolutePath, parseStoreUrl } from '../core/task/storeUrl';
import { storeFileProblem } from '../workspace/storePlace';
import { incompleteReason, STOPPED_INCOMPLETE } from '../core/history/diff';
import { notifyRun } from './notify';

// Connects a crawl session to its store: a writer drains the task's item stream while the crawl runs, and the
// finalize step flushes it and records the run summary. Used by the CLI and the extension alike.

export interface AttachedStore {
  readonly store: ItemStore;
  readonly writer: WriterHandle;
  readonly hooks: SessionStoreHooks;
  /** Throws StoreLostError when the store's file is no longer the one it opened (deleted or replaced). */
  check(): void;
  close(): Promise<void>;
}

/**
 * The SQLite file a run writes to was deleted (or replaced) under it. SQLite notices nothing: its open handle
 * keeps committing into the unlinked file, and the summary used to claim rows in a file that no longer existed.
 */
export class StoreLostError extends Error {
  override readonly name = 'StoreLostError';
  constructor(
    readonly path: string,
    how: 'deleted' | 'replaced',
    rowsWritten: number,
  ) {
    super(
      `the store file ${path} was ${how} during the run: the ${rowsWritten} item rows written to it before are gone with it ` +
        `unless the file is restored. Items not yet stored stay in Redis (nothing more is acknowledged into the lost file); ` +
        `run the task again (or crawl-studio writer) to store them in ${how === 'deleted' ? 'a new file' : 'the file now there'}.`,
    );
  }
}

/** The task's store URL, or its default: an SQLite file in `.crawl/` next to the task file (store/open.ts). */
export const storeUrlFor = storeUrlOf;

export async function attachStore(
  redis: Redis,
  task: CrawlTask,
  log?: (message: string) => void,
  /** Each committed batch's items (see WriterOptions.onStored). */
  onStored?: (items: readonly ItemRow[]) => void,
): Promise<AttachedStore> {
  const url = storeUrlFor(task);
  checkStorePlace(task);
  const store = await openStore(url, { task: task.name, cwd: dirname(task.file) });
  let writer!: WriterHandle;
  // The file's identity once open: the same path with another inode is another file (deleted and recreated,
  // or replaced by a copy), which this process's handle does not write to.
  const target = resolveStoreUrl(url, { cwd: dirname(task.file) });
  const file = target.kind === 'sqlite' ? identity(target.path) : null;
  const check = () => {
    if (!file || target.kind !== 'sqlite') return;
    const now = identity(target.path);
    if (now === null || now !== file)
      throw new StoreLostError(target.path, now === null ? 'deleted' : 'replaced', writer?.counters().written ?? 0);
  };
  try {
    writer = await startWriter(redis, {
      verify: check,
      task: task.name,
      store,
      policy: task.store.onConflict,
      batchSize: task.store.batchSize,
      flushMs: task.store.flushMs,
      log,
      onStored,
    });
  } catch (err) {
    await store.close();
    throw err;
  }
  const pending = new Set<Promise<unknown>>();
  const hooks: SessionStoreHooks = {
    backlog: () => writer.backlog(),
    check: async () => check(),
    drain: () => writer.flush(),
    finalize: (run: RunInfo, status: CrawlStatus, durationMs: number) =>
      finalizeRun({ store, writer, task, check, pending }, run, status, durationMs),
    // A stopped run that cannot be closed (its store is down) stays as it was before Stop closed runs: unlisted.
    closeStopped: (run: RunInfo, status: CrawlStatus, durationMs: number) =>
      finalizeRun({ store, writer, task, check, pending }, run, status, durationMs, { stopped: true }).then(
        () => undefined,
        (err: unknown) =>
          log?.(
            `run ${run.run} was stopped, and its close in the store failed, so \`changes\` does not list it: ${err instanceof Error ? err.message : String(err)}`,
          ),
      ),
  };
  return {
    store,
    writer,
    hooks,
    check,
    async close() {
      await writer.stop();
      await Promise.allSettled([...pending]);
      await store.close();
    },
  };
}

/**
 * Throws when the task's SQLite file, relative to its folder, is not in that folder once symlinks are resolved. A
 * task parsed without the file system's checks (the editor parses its open document) is checked here too; the
 * default store (.crawl/<task>.sqlite) too: a shared folder may ship `.crawl` as a link to elsewhere.
 */
/**
 * Before a run is seeded: a store that cannot be opened stops the launch before any page is queued or fetched. The
 * store itself opens only once the workers have booted (launcher.ts), so a wrong PostgreSQL password or database
 * used to be found after the run had started and a worker had taken pages: the run was left interrupted. A
 * PostgreSQL store is opened (log-in and schema, so a missing grant is found too) and closed; an SQLite file is
 * local and its place is checked.
 */
export async function checkStore(task: CrawlTask): Promise<void> {
  checkStorePlace(task);
  const url = storeUrlFor(task);
  if (resolveStoreUrl(url, { cwd: dirname(task.file) }).kind !== 'postgres') return;
  const store = await openStore(url, { task: task.name, cwd: dirname(task.file) });
  await store.close();
}

function checkStorePlace(task: CrawlTask): void {
  const parsed = task.store.url === null ? null : parseStoreUrl(task.store.url);
  const written =
    parsed === null ? join('.crawl', `${task.name}.sqlite`) : parsed.kind === 'sqlite' ? parsed.path : null;
  const outside = written !== null && !isAbsolutePath(written) ? storeFileProblem(written, dirname(task.file)) : null;
  if (outside !== null)
    throw new Error(`${task.file}: ${task.store.url === null ? 'the default store' : 'store.url'}: ${outside}`);
}

/** dev:inode of a file, or null when there is none at the path. */
function identity(path: string): string | null {
  try {
    const st = statSync(path);
    return `${st.dev}:${st.ino}`;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/** A run's end in the store: the last rows written, its summary row, its item history closed, its changes sent. */
async function finalizeRun(
  at: {
    store: ItemStore;
    writer: WriterHandle;
    task: CrawlTask;
    check: () => void;
    pending: Set<Promise<unknown>>;
  },
  run: RunInfo,
  status: CrawlStatus,
  durationMs: number,
  how: { readonly stopped?: boolean } = {},
): Promise<Record<string, unknown>> {
  const { store, writer, task } = at;
  await writer.flush();
  at.check();
  const c = writer.counters();
  const base = summaryFromStatus(status, durationMs);
  // Rows in the store, not extractions: a page re-fetched after a worker died is extracted twice but stored
  // once, and the summary must match the table.
  let stored = 0;
  for (const type of await store.itemTypes()) stored += await store.count(type);
  // The summary and the run's close in item history (what it added, changed and removed) in one transaction. Only a
  // complete run marks items removed (a failed page or the page limit would otherwise make its items look gone).
  const incomplete = how.stopped ? STOPPED_INCOMPLETE : incompleteReason(status.stats);
  const counts = await store.endRun(
    {
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
      extra: { ...base, extracted: status.stats?.items ?? 0, ...(how.stopped ? { stopped: true } : {}) },
    },
    { complete: incomplete === null, retention: task.store.history },
  );
  const changes = { ...counts, incomplete };
  // In the background: the run's finish does not wait on a webhook; close() does (bounded by its retries).
  if (task.notify) at.pending.add(notifyRun(store, task, changes));
  return {
    stored,
    storeDuplicates: c.duplicates,
    storeConflicts: c.conflicts,
    storeErrors: c.errors,
    store: store.location,
    changes,
  };
}
