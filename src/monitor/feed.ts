import { dirname } from 'node:path';
import { changesAtom } from '../core/history/atom';
import { readRun } from '../frontier/partitions';
import type { Redis } from '../redis/connect';
import { openStore, storeUrlOf } from '../store';
import { loadTaskFile } from '../workspace/taskFile';

// GET /api/tasks/TASK/changes.atom: the task's item changes as an Atom feed, one entry per run, from the store its
// task file names (the file its last run was started with, read on this machine), through the store's history (what
// `crawl-studio changes` reads). Read-only: no token needed, like the rest of the monitor's GETs.

/** Runs in the feed (the newest). */
const FEED_RUNS = 20;

export class FeedError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export async function changesFeed(redis: Redis, task: string, selfUrl: string): Promise<string> {
  const run = await readRun(redis, task);
  if (!run?.file) throw new FeedError(409, `the run of '${task}' does not name its task file, so its store is unknown here: use crawl-studio changes`);
  let file;
  try {
    file = await loadTaskFile(run.file);
  } catch (err) {
    throw new FeedError(409, `cannot read the task file of '${task}' on this machine (${run.file}): ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`);
  }
  const store = await openStore(storeUrlOf(file), { task: file.name, cwd: dirname(file.file) });
  try {
    const runs = (await store.history.runs(file.name)).slice(-FEED_RUNS);
    const changes = await store.history.changes({ task: file.name, runs: runs.map((r) => r.run) });
    return changesAtom({ task: file.name, selfUrl, runs, changes });
  } finally {
    await store.close();
  }
}
