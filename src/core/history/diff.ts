// What an item's history records, decided without I/O so both stores (SQLite, PostgreSQL) record the same thing:
// given the item's last known state and a new sighting, the state to keep and the change rows to add.

export type ChangeKind = 'added' | 'changed' | 'removed';

/** An item's last known state (one row per type and key in item_state). */
export interface ItemState {
  readonly type: string;
  readonly key: string;
  readonly firstRun: string;
  readonly lastRun: string;
  /** The complete run that did not see it any more; null while it is present. */
  readonly removedRun: string | null;
  /** The item's data as JSON text. */
  readonly data: string;
  /** The page it was last seen on (a page the site answered 304 keeps its items present). */
  readonly url: string;
  readonly fetchedAt: number;
}

/** One item as a run saw it. */
export interface Sighting {
  readonly type: string;
  readonly key: string;
  readonly json: string;
  readonly url: string;
  readonly run: string;
  readonly fetchedAt: number;
}

/**
 * One change row: 'added' and 'removed' carry the whole item (field ''), 'changed' one field. Values are JSON
 * text (null: absent). Unique by (run, type, key, kind, field), so a replayed write records nothing new.
 */
export interface ChangeRow {
  readonly run: string;
  readonly type: string;
  readonly key: string;
  readonly kind: ChangeKind;
  readonly field: string;
  readonly oldValue: string | null;
  readonly newValue: string | null;
  readonly at: number;
}

export interface SightingOutcome {
  /** The state to store; null: nothing to write (a replay, or an older fetch than the one stored). */
  readonly state: ItemState | null;
  readonly changes: readonly ChangeRow[];
}

/** Decides what a sighting records. A second sighting in the same run keeps the run's first old value. */
export function recordSighting(prev: ItemState | undefined, s: Sighting): SightingOutcome {
  const next = (firstRun: string): ItemState => ({
    type: s.type,
    key: s.key,
    firstRun,
    lastRun: s.run,
    removedRun: null,
    data: s.json,
    url: s.url,
    fetchedAt: s.fetchedAt,
  });
  const added = (firstRun: string): SightingOutcome => ({
    state: next(firstRun),
    changes: [
      {
        run: s.run,
        type: s.type,
        key: s.key,
        kind: 'added',
        field: '',
        oldValue: null,
        newValue: s.json,
        at: s.fetchedAt,
      },
    ],
  });
  if (!prev) return added(s.run);
  // Replays and out-of-order deliveries: an older fetch never rewrites a newer one.
  if (s.fetchedAt < prev.fetchedAt) return { state: null, changes: [] };
  if (prev.removedRun !== null) return added(prev.firstRun);
  // Added in this very run: the added row carries the newest value rather than a change on top of it.
  if (prev.firstRun === s.run && prev.data !== s.json) return added(s.run);
  if (prev.data === s.json) {
    if (prev.lastRun === s.run && prev.url === s.url && prev.fetchedAt === s.fetchedAt)
      return { state: null, changes: [] };
    return { state: { ...next(prev.firstRun) }, changes: [] };
  }
  const changes = fieldChanges(parseObject(prev.data), parseObject(s.json)).map((c): ChangeRow => ({
    run: s.run,
    type: s.type,
    key: s.key,
    kind: 'changed',
    field: c.field,
    oldValue: c.old,
    newValue: c.new,
    at: s.fetchedAt,
  }));
  return { state: next(prev.firstRun), changes };
}

export interface FieldChange {
  readonly field: string;
  /** JSON text; null: the field was absent. */
  readonly old: string | null;
  readonly new: string | null;
}

/** The fields whose values differ (compared as JSON), in the new item's field order, then fields it lost. */
export function fieldChanges(before: Record<string, unknown>, after: Record<string, unknown>): FieldChange[] {
  const out: FieldChange[] = [];
  const text = (v: unknown) => (v === undefined ? null : JSON.stringify(v));
  for (const field of Object.keys(after)) {
    // Equal strings, numbers and booleans (most fields of a changed item) need no JSON.
    if (before[field] === after[field] && field in before) continue;
    const o = text(before[field]);
    const n = text(after[field]);
    // Objects compared whatever their keys' order: PostgreSQL's jsonb hands an item back with its keys reordered.
    if (
      o !== n &&
      !(isObject(before[field]) && isObject(after[field]) && canonical(before[field]) === canonical(after[field]))
    )
      out.push({ field, old: o, new: n });
  }
  for (const field of Object.keys(before))
    if (!(field in after)) out.push({ field, old: text(before[field]), new: null });
  return out;
}

const isObject = (v: unknown): boolean => typeof v === 'object' && v !== null;

/** JSON text with every object's keys sorted (undefined: absent). */
function canonical(v: unknown): string | undefined {
  return JSON.stringify(v, (_k, x: unknown) =>
    typeof x === 'object' && x !== null && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : x,
  );
}

function parseObject(json: string): Record<string, unknown> {
  try {
    const v = JSON.parse(json) as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : { value: v };
  } catch {
    return { value: json };
  }
}

/** How long history is kept: the last N runs of the task, or the changes of the last N milliseconds. */
export type HistoryRetention = { readonly runs: number } | { readonly ms: number };

export const DEFAULT_RETENTION: HistoryRetention = { runs: 30 };

/** `30`, `30 runs` or `90d` (store.history.keep, its form checked by the task schema). */
export function parseRetention(keep: string | number): HistoryRetention {
  if (typeof keep === 'number') return { runs: keep };
  const m = /^\s*(\d+)\s*(runs?|d|days?)?\s*$/.exec(keep);
  if (!m) throw new Error(`'${keep}' is not a number of runs (30) or of days (90d)`);
  return m[2]?.startsWith('d') ? { ms: Number(m[1]) * 86_400_000 } : { runs: Number(m[1]) };
}

/** A run's changes as counted when it finished (items, not fields: an item with three changed fields is one). */
export interface RunChangeCounts {
  readonly run: string;
  readonly task: string;
  /** Whether the run could mark items removed: finished, no failed page, not cut by the page limit. */
  readonly complete: boolean;
  readonly finishedAt: number;
  readonly added: number;
  readonly changed: number;
  readonly removed: number;
}

/** Why a run ended with Stop marks no item removed (run/storeAttachment.ts closes it so; the CLI's summary says it). */
export const STOPPED_INCOMPLETE = 'it was stopped before its pages were done';

/** Why a finished run may not mark items removed (null: it may). */
export function incompleteReason(
  stats: { failed?: number; skipped?: Readonly<Record<string, number>> } | null | undefined,
): string | null {
  if (!stats) return 'the run has no counters';
  if ((stats.failed ?? 0) > 0) return `${stats.failed} page${stats.failed === 1 ? '' : 's'} failed`;
  if ((stats.skipped?.limit ?? 0) > 0)
    return `the page limit (scope.maxPages) cut it short (${stats.skipped!.limit} links not followed)`;
  return null;
}
