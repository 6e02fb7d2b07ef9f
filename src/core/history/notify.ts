import type { RunChangeCounts } from './diff';

// A run's change notification, decided without I/O: whether its changes meet the task's condition, and the one
// message (a digest of the run's changes) a webhook receives. Delivery is run/notify.ts.

/** One condition of `notify.when`; a run notifies when any holds. */
export type NotifyCondition =
  /** A field of a type changed (field null: any change of an item of the type, added and removed included). */
  | { readonly kind: 'changed'; readonly type: string; readonly field: string | null }
  /** A numeric field moved by more than `percent` percent (either way). */
  | { readonly kind: 'moved'; readonly type: string; readonly field: string; readonly percent: number };

export interface NotifySpec {
  /** The webhook URL as written: one `${CRAWL_STUDIO_WEBHOOK*}` variable (variables.ts). */
  readonly webhook: string;
  /** Empty: any added, changed or removed item. */
  readonly when: readonly NotifyCondition[];
}

/** A change as the notification sees it (store/history ItemChange, restated here so core imports no store). */
export interface NotifiedChange {
  readonly type: string;
  readonly key: string;
  readonly kind: 'added' | 'changed' | 'removed';
  readonly field: string | null;
  readonly old?: unknown;
  readonly new?: unknown;
}

/** `product.price` or `product` -> the type and field. */
export function parseFieldRef(ref: string): { type: string; field: string | null } {
  const dot = ref.indexOf('.');
  return dot < 0 ? { type: ref, field: null } : { type: ref.slice(0, dot), field: ref.slice(dot + 1) };
}

/** A number out of a value as extracted: 12, "12.00", "$1,299.50" (null: none). */
export function numberOf(v: unknown): number | null {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (typeof v !== 'string') return null;
  const m = /-?\d[\d,]*(\.\d+)?/.exec(v);
  if (!m) return null;
  const n = Number(m[0].replace(/,/g, ''));
  return Number.isFinite(n) ? n : null;
}

export function conditionHolds(c: NotifyCondition, change: NotifiedChange): boolean {
  if (change.type !== c.type) return false;
  if (c.kind === 'changed') return c.field === null || (change.kind === 'changed' && change.field === c.field);
  if (change.kind !== 'changed' || change.field !== c.field) return false;
  const before = numberOf(change.old);
  const after = numberOf(change.new);
  if (before === null || after === null) return false;
  if (before === 0) return after !== 0;
  return (Math.abs(after - before) / Math.abs(before)) * 100 > c.percent;
}

/** The changes that make the run worth a message; empty: no message. */
export function notifiable(spec: NotifySpec, changes: readonly NotifiedChange[]): NotifiedChange[] {
  if (spec.when.length === 0) return [...changes];
  return changes.filter((ch) => spec.when.some((c) => conditionHolds(c, ch)));
}

/** At most this many changes travel in one message; the counts always cover all of them. */
const DIGEST_LIMIT = 1000;

/** The JSON body: one per run, its counts, and its changes (those that met the condition first). */
export function digest(
  task: string,
  run: RunChangeCounts,
  matched: readonly NotifiedChange[],
  all: readonly NotifiedChange[],
): Record<string, unknown> {
  const rest = all.filter((c) => !matched.includes(c));
  const listed = [...matched, ...rest].slice(0, DIGEST_LIMIT);
  return {
    task,
    run: run.run,
    finishedAt: new Date(run.finishedAt).toISOString(),
    complete: run.complete,
    counts: { added: run.added, changed: run.changed, removed: run.removed },
    matched: matched.length,
    changes: listed.map((c) => ({
      type: c.type,
      key: c.key,
      change: c.kind,
      field: c.field,
      old: c.old ?? null,
      new: c.new ?? null,
    })),
    ...(all.length > listed.length ? { truncated: all.length - listed.length } : {}),
  };
}
