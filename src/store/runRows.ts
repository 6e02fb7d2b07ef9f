import type { ItemStore } from './types';

// "Items stored" of one run, in every view that shows it: the CLI's run summary (run/launcher.ts), the web monitor's
// task view and its crawl_studio_items_stored_total (monitor/stored.ts). The store marks each row with the run that
// last wrote it (types.ts RunItems), so these are the rows this run inserted or updated, not the whole table.

export interface TypeRows {
  readonly type: string;
  readonly count: number;
}

/** Per item type of the store: the rows run `run` inserted or updated (0 for a type it wrote none of). */
export async function rowsWrittenByRun(store: ItemStore, run: string, types?: readonly string[]): Promise<TypeRows[]> {
  const names = types ?? (await store.itemTypes());
  return Promise.all(
    names.map(async (type) => ({ type, count: (await store.itemRuns(type)).find((r) => r.run === run)?.items ?? 0 })),
  );
}
