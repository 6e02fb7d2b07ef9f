import type { Redis } from '../redis/connect';
import { partitionKeys } from './keys';
import type { TaskLayout } from './layout';
import { readLayout } from './partitions';
import type { CharsetWarning, CrawlStats } from './types';

// A run's counters: kept per partition (frontier/layout.ts) by the scripts, added up here for every reader.

/** A run's counters over every partition of its task (the layout its meta records), for readers without a queue. */
export async function readRunStats(redis: Redis, task: string, run: string, layout?: TaskLayout): Promise<CrawlStats> {
  const tags = (layout ?? (await readLayout(redis, task))).tags;
  return parseStats(
    sumHashes(await Promise.all(tags.map((tag) => redis.hgetall(partitionKeys(task, tag).stats(run))))),
  );
}

/** Whether Redis holds a run of the task by that id: every run started counts its pages from the start. */
export async function runRecorded(redis: Redis, task: string, run: string, layout?: TaskLayout): Promise<boolean> {
  const tags = (layout ?? (await readLayout(redis, task))).tags;
  return (await Promise.all(tags.map((tag) => redis.exists(partitionKeys(task, tag).stats(run))))).some((n) => n > 0);
}

/** Counter hashes added up field by field (a run's stats over its partitions). */
export function sumHashes(hashes: readonly Record<string, string>[]): Record<string, string> {
  if (hashes.length === 1) return hashes[0]!;
  const out: Record<string, number> = {};
  for (const h of hashes) for (const [k, v] of Object.entries(h)) out[k] = (out[k] ?? 0) + Number(v);
  return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, String(v)]));
}

export function parseStats(h: Record<string, string>): CrawlStats {
  const n = (k: string) => Number(h[k] ?? 0);
  const group = (prefix: string) =>
    Object.fromEntries(
      Object.entries(h)
        .filter(([k]) => k.startsWith(prefix))
        .map(([k, v]) => [k.slice(prefix.length), Number(v)]),
    );
  return {
    enqueued: n('enqueued'),
    done: n('done'),
    failed: n('failed'),
    items: n('items'),
    problems: n('problems'),
    bytes: n('bytes'),
    duplicates: n('duplicates'),
    nonHtml: n('nonhtml'),
    sitemaps: n('sitemaps'),
    unchanged: n('unchanged'),
    unchangedItems: n('unchanged-items'),
    skipped: group('skipped:'),
    failures: group('failed:'),
    dropped: group('dropped:'),
    byRule: byRule(h),
    charsetConflicts: charsetConflicts(h),
    lateContent: lateContent(h),
  };
}

/** `charset:<header>:<meta>:<host>` counters (worker/pageWarnings.ts); the host last, as it may hold a port. */
function charsetConflicts(h: Record<string, string>): CharsetWarning[] {
  const out: CharsetWarning[] = [];
  for (const [k, v] of Object.entries(h)) {
    const m = /^charset:([^:]+):([^:]+):(.+)$/.exec(k);
    if (m) out.push({ header: m[1]!, meta: m[2]!, host: m[3]!, pages: Number(v) });
  }
  return out.sort((a, b) => b.pages - a.pages || a.host.localeCompare(b.host));
}

/** `late:<rule>`, `late-at-load:<rule>`, `late-after:<rule>` counters (worker/pageWarnings.ts). */
function lateContent(h: Record<string, string>): Record<string, { pages: number; atLoad: number; later: number }> {
  const out: Record<string, { pages: number; atLoad: number; later: number }> = {};
  for (const [k, v] of Object.entries(h)) {
    if (k.startsWith('late:')) (out[k.slice(5)] ??= { pages: 0, atLoad: 0, later: 0 }).pages = Number(v);
  }
  for (const [rule, t] of Object.entries(out)) {
    t.atLoad = Number(h[`late-at-load:${rule}`] ?? 0);
    t.later = Number(h[`late-after:${rule}`] ?? 0);
  }
  return out;
}

function byRule(h: Record<string, string>): Record<string, { links: number; dropped: Record<string, number> }> {
  const out: Record<string, { links: number; dropped: Record<string, number> }> = {};
  const of = (rule: string) => (out[rule] ??= { links: 0, dropped: {} });
  for (const [k, v] of Object.entries(h)) {
    if (k.startsWith('rule-links:')) of(k.slice('rule-links:'.length)).links = Number(v);
    else if (k.startsWith('rule-dropped:')) {
      // The reason is last: rule names may hold ':', reasons never do.
      const rest = k.slice('rule-dropped:'.length);
      const at = rest.lastIndexOf(':');
      of(rest.slice(0, at)).dropped[rest.slice(at + 1)] = Number(v);
    }
  }
  return out;
}
