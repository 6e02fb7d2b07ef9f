import { text } from './rows';
import type { ItemStore, StoredItem } from './types';

// Filtering and sorting items by their fields, built only on the ItemStore interface (readItems, count,
// iterateItems), so it works on every store. Why not SQL: the stores keep item data as JSON and their interface
// offers no field predicates. What this module does instead:
//  - Unfiltered views sorted by a stored column (insertion order, key, fetch time) page straight from the store.
//  - Other views scan the items once and keep a compact index in memory: each match's ordinal (its position in
//    insertion order, stable because items are only ever appended) and its sort key, never the items. A page is
//    read back by ordinal: ascending ordinals in runs (one readItems per run), scattered ones by one sequential
//    pass over the store that picks them up. New items are scanned incrementally (only ordinals past the end).
// A store that can do this natively may implement `NativeItemQuery`; ItemView then uses it.

/** Meta columns that can be filtered and sorted like fields. */
export const META_COLUMNS = ['_key', '_url', '_rule', '_fetched_at', '_run'] as const;
export type MetaColumn = (typeof META_COLUMNS)[number];

export interface FieldFilter {
  /** A data field name or a meta column. */
  readonly field: string;
  /**
   * Case-insensitive substring. `=text` matches the whole value exactly, `=` alone matches empty values;
   * a leading `!` negates (`!=` : not empty).
   */
  readonly text: string;
}

export interface ItemSort {
  readonly field: string;
  readonly descending: boolean;
}

export interface ItemQuery {
  readonly type: string;
  readonly filters: readonly FieldFilter[];
  /** null: insertion order. */
  readonly sort: ItemSort | null;
  /** Only the items this run stored (absent: every run's). */
  readonly run?: string;
}

/** Optional native support a store may offer; same semantics as ItemView. */
export interface NativeItemQuery {
  queryCount(query: ItemQuery): Promise<number>;
  queryItems(query: ItemQuery, offset: number, limit: number): Promise<StoredItem[]>;
}

const NATIVE_ORDER: Readonly<Record<string, 'key' | 'fetched_at'>> = { _key: 'key', _fetched_at: 'fetched_at' };
const SCAN_PAGE = 2000;
/** Ordinals closer than this are read in one run (reading a few unneeded rows beats another query). */
const RUN_GAP = 64;
const MAX_RUN = 2000;
const MAX_SORT_KEY = 200;

/** The value of a field or meta column of an item. */
export function valueOf(item: StoredItem, field: string): unknown {
  switch (field) {
    case '_key':
      return item.key;
    case '_url':
      return item.url;
    case '_rule':
      return item.rule;
    case '_fetched_at':
      return item.fetchedAt;
    case '_run':
      return item.run;
    default:
      return item.data[field];
  }
}

/** Empty the way a broken selector leaves a field: missing, null, blank text, an empty list. */
function isEmptyValue(v: unknown): boolean {
  if (v === null || v === undefined) return true;
  if (typeof v === 'string') return v.trim() === '';
  if (Array.isArray(v)) return v.length === 0 || v.every(isEmptyValue);
  return false;
}

/** The text a filter matches against (lists joined, objects as JSON). */
export function textOf(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) return v.map(textOf).join(' ');
  return text(v);
}

export type Predicate = (item: StoredItem) => boolean;

export function compileFilters(filters: readonly FieldFilter[]): Predicate {
  const tests = filters
    .filter((f) => f.text !== '')
    .map((f) => {
      let text = f.text;
      const negate = text.startsWith('!');
      if (negate) text = text.slice(1);
      const exact = text.startsWith('=');
      if (exact) text = text.slice(1);
      const needle = text.toLowerCase();
      const test = exact
        ? needle === ''
          ? (v: unknown) => isEmptyValue(v)
          : (v: unknown) => textOf(v).toLowerCase() === needle
        : (v: unknown) => textOf(v).toLowerCase().includes(needle);
      return (item: StoredItem) => test(valueOf(item, f.field)) !== negate;
    });
  if (tests.length === 0) return () => true;
  return (item) => tests.every((t) => t(item));
}

type SortKey = number | string;

/** Numbers sort as numbers ("9.5" before "10"), everything else as case-insensitive text; empty last. */
export function sortKeyOf(v: unknown): SortKey {
  if (typeof v === 'number') return v;
  const s = textOf(v).trim();
  if (s !== '' && /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(s)) return Number(s);
  return s.slice(0, MAX_SORT_KEY).toLowerCase();
}

/** The order of sort keys: numbers first, by value, then text; empty text last. */
export function compareKeys(a: SortKey, b: SortKey): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'number') return -1;
  if (typeof b === 'number') return 1;
  if (a === b) return 0;
  if (a === '') return 1;
  if (b === '') return -1;
  return a < b ? -1 : 1;
}

function hasNative(store: ItemStore): store is ItemStore & NativeItemQuery {
  const s = store as Partial<NativeItemQuery>;
  return typeof s.queryItems === 'function' && typeof s.queryCount === 'function';
}

/** Whether the store can answer a query without an index (stored columns only, no filter). */
function isDirectQuery(query: ItemQuery): boolean {
  return (
    query.run === undefined &&
    query.filters.every((f) => f.text === '') &&
    (query.sort === null || query.sort.field in NATIVE_ORDER)
  );
}

/** The query's test of an item: its filters, and its run when it names one. */
function compileQuery(query: ItemQuery): Predicate {
  const filters = compileFilters(query.filters);
  const run = query.run;
  return run === undefined ? filters : (item) => item.run === run && filters(item);
}

/**
 * A filtered, sorted view of one item type, read page by page. Not safe for concurrent calls: callers (one
 * webview panel each) serialise them.
 */
export class ItemView {
  private readonly predicate: Predicate;
  private ordinals = new Uint32Array(0);
  private keys: SortKey[] = [];
  private size = 0;
  /** Items of the store scanned so far (ordinals below this are indexed). */
  private scanned = 0;
  private indexed = false;

  constructor(
    private readonly store: ItemStore,
    readonly query: ItemQuery,
    /** The type's items in memory, shared by the views of one panel; used while it stays within its budget. */
    private readonly cache: ItemCache | null = null,
  ) {
    this.predicate = compileQuery(query);
  }

  private get cached(): ItemCache | null {
    return this.cache && !this.cache.overflow ? this.cache : null;
  }

  get direct(): boolean {
    return hasNative(this.store) || isDirectQuery(this.query);
  }

  /** Number of matching items, after taking in items stored since the last call. */
  async count(): Promise<number> {
    if (hasNative(this.store)) return this.store.queryCount(this.query);
    if (isDirectQuery(this.query)) return this.store.count(this.query.type);
    await this.update();
    return this.size;
  }

  /** Scans items stored since the last scan into the index; returns how many matched. */
  async update(): Promise<number> {
    if (this.direct) return 0;
    const before = this.size;
    const fresh: { ordinal: number; key: SortKey }[] = [];
    const sortField = this.query.sort?.field;
    const take = (item: StoredItem, ordinal: number) => {
      if (this.predicate(item)) fresh.push({ ordinal, key: sortField ? sortKeyOf(valueOf(item, sortField)) : 0 });
    };
    if (this.cache) await this.cache.update();
    const cache = this.cached;
    if (cache) {
      for (let o = this.scanned; o < cache.length; o++) take(cache.item(o), o);
      this.scanned = cache.length;
      this.indexed = true;
    } else if (!this.indexed) {
      // First scan: keyset paging through the whole type (no OFFSET cost).
      let ordinal = 0;
      for await (const item of this.store.iterateItems(this.query.type, { pageSize: SCAN_PAGE })) take(item, ordinal++);
      this.scanned = ordinal;
      this.indexed = true;
    } else {
      for (;;) {
        const rows = await this.store.readItems(this.query.type, { offset: this.scanned, limit: SCAN_PAGE });
        rows.forEach((item, i) => take(item, this.scanned + i));
        this.scanned += rows.length;
        if (rows.length < SCAN_PAGE) break;
      }
    }
    if (fresh.length === 0) return 0;
    this.append(fresh);
    return this.size - before;
  }

  private append(fresh: { ordinal: number; key: SortKey }[]): void {
    const sort = this.query.sort;
    if (!sort) {
      // Insertion order: new ordinals are all larger, so appending keeps the index sorted.
      const next = new Uint32Array(this.size + fresh.length);
      next.set(this.ordinals.subarray(0, this.size));
      fresh.forEach((e, i) => (next[this.size + i] = e.ordinal));
      this.ordinals = next;
      this.size = next.length;
      return;
    }
    const dir = sort.descending ? -1 : 1;
    // Ties keep insertion order in both directions, like the stores' "ORDER BY col, id".
    const cmp = (ak: SortKey, ao: number, bk: SortKey, bo: number) => dir * compareKeys(ak, bk) || dir * (ao - bo);
    fresh.sort((a, b) => cmp(a.key, a.ordinal, b.key, b.ordinal));
    // Merge the sorted new entries into the sorted index (linear, no re-sort of what was already there).
    const n = this.size + fresh.length;
    const ordinals = new Uint32Array(n);
    const keys: SortKey[] = new Array<SortKey>(n);
    let i = 0;
    let j = 0;
    for (let k = 0; k < n; k++) {
      const takeOld =
        j >= fresh.length ||
        (i < this.size && cmp(this.keys[i]!, this.ordinals[i]!, fresh[j]!.key, fresh[j]!.ordinal) <= 0);
      if (takeOld) {
        ordinals[k] = this.ordinals[i]!;
        keys[k] = this.keys[i++]!;
      } else {
        ordinals[k] = fresh[j]!.ordinal;
        keys[k] = fresh[j++]!.key;
      }
    }
    this.ordinals = ordinals;
    this.keys = keys;
    this.size = n;
  }

  /** The view's rows [offset, offset + limit). Call count() first so the index is current. */
  async page(offset: number, limit: number): Promise<StoredItem[]> {
    offset = Math.max(0, Math.floor(offset));
    limit = Math.max(0, Math.min(10_000, Math.floor(limit)));
    if (limit === 0) return [];
    if (hasNative(this.store)) return this.store.queryItems(this.query, offset, limit);
    const type = this.query.type;
    if (isDirectQuery(this.query)) {
      const s = this.query.sort;
      return this.store.readItems(type, {
        offset,
        limit,
        orderBy: s ? NATIVE_ORDER[s.field] : 'id',
        descending: s?.descending ?? false,
      });
    }
    if (!this.indexed) await this.update();
    const wanted = Array.from(this.ordinals.subarray(offset, Math.min(this.size, offset + limit)));
    return this.byOrdinals(wanted);
  }

  /** Reads items by ordinal, returned in the order asked. */
  private async byOrdinals(wanted: readonly number[]): Promise<StoredItem[]> {
    const cache = this.cached;
    if (cache && wanted.every((o) => o < cache.length)) return wanted.map((o) => cache.item(o));
    const found = new Map<number, StoredItem>();
    const sorted = [...wanted].sort((a, b) => a - b);
    const runs: [number, number][] = [];
    for (const o of sorted) {
      const last = runs[runs.length - 1];
      if (last && o - last[1] <= RUN_GAP && o - last[0] < MAX_RUN) last[1] = o;
      else runs.push([o, o]);
    }
    if (runs.length <= 8) {
      for (const [a, b] of runs) {
        const rows = await this.store.readItems(this.query.type, { offset: a, limit: b - a + 1 });
        rows.forEach((item, i) => found.set(a + i, item));
      }
    } else {
      // Scattered (a field-sorted view): one pass in storage order picks them all up, stopping after the last.
      const need = new Set(sorted);
      const last = sorted[sorted.length - 1]!;
      let ordinal = 0;
      for await (const item of this.store.iterateItems(this.query.type, { pageSize: SCAN_PAGE })) {
        if (need.has(ordinal)) found.set(ordinal, item);
        if (ordinal++ >= last) break;
      }
    }
    return wanted.map((o) => found.get(o)).filter((x): x is StoredItem => x !== undefined);
  }
}

interface CachedRow {
  readonly key: string;
  readonly url: string | null;
  readonly rule: string | null;
  readonly run: string | null;
  readonly fetchedAt: number;
  readonly firstSeen: number;
  readonly updatedAt: number;
  /** The data as JSON: a string costs a fraction of the parsed object; parsed again when read. */
  readonly json: string;
}

/**
 * One item type held in memory as compact JSON, so changing a filter or a sort re-reads memory (about 100k
 * rows in a fraction of a second) instead of scanning the store again (seconds for 100k SQLite rows).
 * Above its budget (characters held) it empties itself and sets `overflow`: views then fall back to scans.
 */
export class ItemCache {
  private rows: CachedRow[] = [];
  private chars = 0;
  overflow = false;

  constructor(
    private readonly store: ItemStore,
    readonly type: string,
    private readonly budgetChars = 64_000_000,
  ) {}

  get length(): number {
    return this.rows.length;
  }

  /** Reads items stored since the last update. */
  async update(): Promise<void> {
    if (this.overflow) return;
    const add = (item: StoredItem): boolean => {
      const json = JSON.stringify(item.data);
      this.chars += json.length + (item.url?.length ?? 0) + item.key.length + 64;
      if (this.chars > this.budgetChars) {
        this.overflow = true;
        this.rows = [];
        return false;
      }
      const { key, url, rule, run, fetchedAt, firstSeen, updatedAt } = item;
      this.rows.push({ key, url, rule, run, fetchedAt, firstSeen, updatedAt, json });
      return true;
    };
    if (this.rows.length === 0) {
      for await (const item of this.store.iterateItems(this.type, { pageSize: SCAN_PAGE })) if (!add(item)) return;
      return;
    }
    for (;;) {
      const rows = await this.store.readItems(this.type, { offset: this.rows.length, limit: SCAN_PAGE });
      for (const item of rows) if (!add(item)) return;
      if (rows.length < SCAN_PAGE) return;
    }
  }

  item(ordinal: number): StoredItem {
    const r = this.rows[ordinal];
    if (!r) throw new Error(`internal: no cached item at ${ordinal}`);
    return {
      type: this.type,
      key: r.key,
      url: r.url,
      rule: r.rule,
      run: r.run,
      fetchedAt: r.fetchedAt,
      firstSeen: r.firstSeen,
      updatedAt: r.updatedAt,
      data: JSON.parse(r.json) as Record<string, unknown>,
    };
  }
}

/** Per-field quality of one item type: how many values are empty, how many distinct. */
export interface FieldQuality {
  readonly field: string;
  readonly empty: number;
  readonly distinct: number;
}

export interface QualityReport {
  readonly type: string;
  readonly total: number;
  readonly fields: readonly FieldQuality[];
}

/**
 * Field quality over every item of a type, kept current incrementally (only new items are read on update).
 * Distinct values are counted by a 53-bit hash of their JSON, so memory stays one number per distinct value.
 */
export class QualityTracker {
  private scanned = 0;
  private readonly empty = new Map<string, number>();
  private readonly distinct = new Map<string, Set<number>>();

  private counted = 0;

  constructor(
    private readonly store: ItemStore,
    readonly type: string,
    private readonly cache: ItemCache | null = null,
    /** Only the items of this run (field quality per run: a broken selector's run is not averaged with a good one). */
    readonly run?: string,
  ) {}

  async update(): Promise<QualityReport> {
    const fields = await this.store.fieldNames(this.type);
    for (const f of fields) {
      if (!this.empty.has(f)) {
        // A field added later is missing (empty) in every item counted before it existed.
        this.empty.set(f, this.counted);
        this.distinct.set(f, new Set());
      }
    }
    const take = (item: StoredItem) => {
      if (this.run !== undefined && item.run !== this.run) return;
      this.counted++;
      for (const f of fields) {
        const v = item.data[f];
        if (isEmptyValue(v)) this.empty.set(f, (this.empty.get(f) ?? 0) + 1);
        else this.distinct.get(f)!.add(hash53(JSON.stringify(v)));
      }
    };
    if (this.cache) await this.cache.update();
    if (this.cache && !this.cache.overflow) {
      for (let o = this.scanned; o < this.cache.length; o++) take(this.cache.item(o));
      this.scanned = Math.max(this.scanned, this.cache.length);
    } else if (this.scanned === 0) {
      for await (const item of this.store.iterateItems(this.type, { pageSize: SCAN_PAGE })) {
        take(item);
        this.scanned++;
      }
    } else {
      for (;;) {
        const rows = await this.store.readItems(this.type, { offset: this.scanned, limit: SCAN_PAGE });
        rows.forEach(take);
        this.scanned += rows.length;
        if (rows.length < SCAN_PAGE) break;
      }
    }
    return {
      type: this.type,
      total: this.counted,
      fields: fields.map((f) => ({
        field: f,
        empty: this.empty.get(f) ?? 0,
        distinct: this.distinct.get(f)?.size ?? 0,
      })),
    };
  }
}

/** cyrb53: a fast, well-mixed 53-bit string hash (collisions negligible at millions of values). */
function hash53(str: string): number {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < str.length; i++) {
    const ch = str.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}

/**
 * The view as a one-type ItemStore whose iterateItems yields the view's rows in its order, so exportItems
 * exports exactly what the person sees (filtered and sorted) without a filter option of its own.
 */
export function viewAsStore(view: ItemView, base: ItemStore): ItemStore {
  const type = view.query.type;
  return {
    kind: base.kind,
    location: base.location,
    open: () => Promise.resolve(),
    close: () => Promise.resolve(),
    writeBatch: () => Promise.reject(new Error('a results view is read-only')),
    writeErrors: () => Promise.reject(new Error('a results view is read-only')),
    writeRunSummary: () => Promise.reject(new Error('a results view is read-only')),
    endRun: () => Promise.reject(new Error('a results view is read-only')),
    readRuns: () => base.readRuns(),
    readErrors: (o) => base.readErrors(o),
    countErrors: () => base.countErrors(),
    countPages: () => base.countPages(),
    iterateRevisits: (o) => base.iterateRevisits(o),
    readItems: (t, o) => (t === type ? view.page(o?.offset ?? 0, o?.limit ?? 100) : Promise.resolve([])),
    itemRuns: (t) => base.itemRuns(t),
    history: base.history,
    itemTypes: () => Promise.resolve([type]),
    fieldNames: (t) => base.fieldNames(t),
    count: (t) => (t === type ? view.count() : Promise.resolve(0)),
    async *iterateItems(t, o) {
      if (t !== type) return;
      const total = await view.count();
      const size = Math.max(1, Math.min(10_000, o?.pageSize ?? 1000));
      for (let offset = 0; offset < total; offset += size) {
        const rows = await view.page(offset, size);
        yield* rows;
        if (rows.length === 0) break;
      }
    },
  };
}
