import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { readRun } from '../frontier/partitions';
import type { Redis } from '../redis/connect';
import { openStore, resolveStoreUrl, storeUrlOf, type ItemStore } from '../store';
import { loadTaskFile } from '../workspace/taskFile';
import type { CrawlTask } from '../core/task/model';

// The store of a task, as the monitor reaches it: the task file its current run was started with (the run's meta
// names it), read on this machine, and the store that file names. For the changes feed (feed.ts) and the items
// stored and recent items (stored.ts). A monitor on a machine without the file says so rather than guessing.

/** Why a task's store cannot be read here, in words for the page and the API. */
export class NoTaskStore extends Error {}

export interface TaskStore {
  readonly file: CrawlTask;
  readonly run: string;
  readonly store: ItemStore;
}

/** Opens the task's store; the caller closes it. A SQLite store that does not exist yet is not created: `null`. */
export async function openTaskStore(redis: Redis, task: string, opts: { create: boolean }): Promise<TaskStore | null> {
  const run = await readRun(redis, task);
  if (!run) throw new NoTaskStore(`'${task}' has never run on this Redis`);
  if (!run.file)
    throw new NoTaskStore(`the run of '${task}' does not name its task file, so its store is unknown here`);
  let file: CrawlTask;
  try {
    file = await loadTaskFile(run.file);
  } catch (err) {
    throw new NoTaskStore(
      `cannot read the task file of '${task}' on this machine (${run.file}): ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`,
    );
  }
  if (file.name !== task) throw new NoTaskStore(`${run.file} now names the task '${file.name}', not '${task}'`);
  const url = storeUrlOf(file);
  const cwd = dirname(file.file);
  const target = resolveStoreUrl(url, { task: file.name, cwd });
  if (!opts.create && target.kind === 'sqlite' && !existsSync(target.path)) return null;
  return { file, run: run.run, store: await openStore(url, { task: file.name, cwd }) };
}
