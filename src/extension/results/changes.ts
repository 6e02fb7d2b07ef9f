import type { RunChangeCounts } from '../../core/history/diff';
import {
  changedItems,
  defaultChangeRun,
  type ChangedItem,
  type ItemChange,
  type ItemStore,
  type StoredItem,
} from '../../store';
import { compareKeys, compileFilters, sortKeyOf, textOf, type FieldFilter, type ItemSort } from '../../store/query';
import { CELL_CHARS, type ChangeFilter, type ChangeRunOption, type RowChange } from './protocol';

// The Results view under a change filter (issue 33): the items one run added, changed or removed, read from the
// store's item history through the read-model every view shares (store/history/query.ts `changedItems`), so a
// removed item shows although the items table may no longer say so. A run's changes are a bounded list (the
// history keeps a few runs), filtered and sorted here in memory with the table's own filter and sort rules.

/** The run a change view shows: the one asked for if it has history, else the latest complete run. */
export function chooseChangeRun(wanted: string | undefined, runs: readonly RunChangeCounts[]): string | null {
  if (wanted && wanted !== 'latest' && runs.some((r) => r.run === wanted)) return wanted;
  return defaultChangeRun(runs)?.run ?? null;
}

export function changeRunOption(r: RunChangeCounts): ChangeRunOption {
  return {
    id: r.run,
    complete: r.complete,
    finishedAt: r.finishedAt,
    added: r.added,
    changed: r.changed,
    removed: r.removed,
  };
}

/** A changed item as the table's rows are (store/query filters and sorts StoredItems). */
export function asStoredItem(c: ChangedItem, run: string): StoredItem {
  return {
    type: c.type,
    key: c.key,
    data: c.data,
    url: c.url,
    rule: null,
    run,
    fetchedAt: c.at,
    firstSeen: c.at,
    updatedAt: c.at,
  };
}

export function rowChange(c: ChangedItem): RowChange {
  const text = (v: unknown) => cut(v === undefined ? '' : textOf(v));
  return { kind: c.kind, fields: c.fields.map((f) => ({ field: f.field, old: text(f.old), new: text(f.new) })) };
}

export class ChangeRows {
  private constructor(
    /** The run shown, null when no run has history yet. */
    readonly run: string | null,
    /** The rows the filters keep, in the order shown. */
    private readonly rows: readonly ChangedItem[],
    /** Changed items of the type in the run, before the kind and column filters. */
    readonly all: number,
    /** The history's change records of the rows kept (what an export writes), read when asked. */
    readonly records: () => Promise<ItemChange[]>,
  ) {}

  static empty(): ChangeRows {
    return new ChangeRows(null, [], 0, () => Promise.resolve([]));
  }

  static async read(
    store: ItemStore,
    task: string,
    run: string,
    q: { type: string; kind: ChangeFilter; filters: readonly FieldFilter[]; sort: ItemSort | null },
  ): Promise<ChangeRows> {
    const items = await changedItems(store, task, run, { type: q.type });
    // The change column is filtered on the change's kind, every other column as the table filters it.
    const keep = compileFilters(q.filters.filter((f) => f.field !== '_change'));
    const keepKind = compileFilters(
      q.filters.filter((f) => f.field === '_change').map((f) => ({ ...f, field: 'kind' })),
    );
    const kindItem = (c: ChangedItem) => asStoredItem({ ...c, data: { kind: c.kind } }, run);
    let rows = items.filter(
      (c) => (q.kind === 'all' || c.kind === q.kind) && keep(asStoredItem(c, run)) && keepKind(kindItem(c)),
    );
    if (q.sort) {
      const field = q.sort.field;
      const dir = q.sort.descending ? -1 : 1;
      const keyOf = (c: ChangedItem) =>
        sortKeyOf(field === '_change' ? c.kind : field.startsWith('_') ? metaOf(c, field) : c.data[field]);
      rows = rows
        .map((c) => ({ c, k: keyOf(c) }))
        .sort((a, b) => dir * compareKeys(a.k, b.k))
        .map((x) => x.c);
    }
    const shown = new Set(rows.map((c) => c.key));
    const records = async () =>
      (await store.history.changes({ task, runs: [run], type: q.type })).filter((c) => shown.has(c.key));
    return new ChangeRows(run, rows, items.length, records);
  }

  get count(): number {
    return this.rows.length;
  }

  page(offset: number, limit: number): ChangedItem[] {
    return this.rows.slice(offset, offset + limit);
  }
}

function metaOf(c: ChangedItem, field: string): unknown {
  if (field === '_key') return c.key;
  if (field === '_url') return c.url;
  if (field === '_fetched_at') return c.at;
  return null;
}

function cut(s: string): string {
  return s.length > CELL_CHARS ? `${s.slice(0, CELL_CHARS - 1)}…` : s;
}
