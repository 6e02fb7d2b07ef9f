import { createHash } from 'node:crypto';
import type { CrawlTask } from './model';

// What a task asks of a worker, as one short digest: its start, scope, requests, politeness, rules, selectors and
// the rest, read from the parsed task (comments, spacing and the order of keys do not count). A run records the
// digest of the task its driver started it with; a worker elsewhere whose copy differs (an old file on another
// machine) is told so (worker/activityLog.ts), since it fetches and extracts the run's pages by its own copy.
// Left out: the file's path (it differs between machines) and the store (the driver's business, and its URL may
// hold a password once its ${VAR}s are filled in).

export function taskFingerprint(task: CrawlTask): string {
  const { file: _file, store: _store, ...rest } = task;
  return createHash('sha256').update(stableJson(rest)).digest('hex').slice(0, 16);
}

/** JSON with object keys sorted; RegExps as their source (JSON.stringify would write {} for every one). */
function stableJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v instanceof RegExp) return `/${v.source}/${v.flags}`;
    if (v instanceof Map) return [...(v as Map<unknown, unknown>).entries()];
    if (v instanceof Set) return [...(v as Set<unknown>).values()];
    if (v && typeof v === 'object' && !Array.isArray(v))
      return Object.fromEntries(
        Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
      );
    return v;
  });
}
