import type { CrawlStatus } from '../frontier/types';

// A run's figures as its summary records them: the store's runs table (its `extra`), the library's result and the
// run's meta when it is marked finished. Read from the status every view reads, so they say the same.

/** The summary of a run from its status, with its own duration (paused and interrupted time left out). */
export function summaryFromStatus(status: CrawlStatus, durationMs: number): Record<string, unknown> {
  const s = status.stats;
  return {
    pages: s?.done ?? 0,
    failed: s?.failed ?? 0,
    skipped: s?.skipped ?? {},
    failures: s?.failures ?? {},
    items: s?.items ?? 0,
    ...(s?.unchanged ? { unchanged: s.unchanged, unchangedItems: s.unchangedItems } : {}),
    itemProblems: s?.problems ?? 0,
    duplicateLinks: s?.duplicates ?? 0,
    bytes: s?.bytes ?? 0,
    durationMs,
  };
}
