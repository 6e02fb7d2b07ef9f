import { changesAtom } from '../core/history/atom';
import type { Redis } from '../redis/connect';
import { NoTaskStore, openTaskStore } from './taskStore';

// GET /api/tasks/TASK/changes.atom: the task's item changes as an Atom feed, one entry per run, from the store its
// task file names (taskStore.ts: the file its last run was started with, read on this machine), through the store's history (what
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
  let opened: Awaited<ReturnType<typeof openTaskStore>>;
  try {
    opened = await openTaskStore(redis, task, { create: true });
  } catch (err) {
    if (err instanceof NoTaskStore) throw new FeedError(409, `${err.message}: use crawl-studio changes`);
    throw err;
  }
  // `create: true` always opens one; the type cannot say so.
  if (!opened) throw new FeedError(409, `task ${task} has no store: use crawl-studio changes`);
  const { file, store } = opened;
  try {
    const runs = (await store.history.runs(file.name)).slice(-FEED_RUNS);
    const changes = await store.history.changes({ task: file.name, runs: runs.map((r) => r.run) });
    return changesAtom({ task: file.name, selfUrl, runs, changes });
  } finally {
    await store.close();
  }
}
