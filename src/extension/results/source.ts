import type { Writable } from 'node:stream';
import { exportItems, type ExportResult, type ItemStore, type StoredItem } from '../../store';
import type { RunItems } from '../../store/types';
import { ItemCache, ItemView, META_COLUMNS, QualityTracker, textOf, viewAsStore, type FieldFilter, type ItemQuery, type QualityReport } from '../../store/query';
import { CELL_CHARS, type ExportFormat, type ResultsViewState, type RunsShown, type TableRow } from './protocol';

// The results view's data, without VS Code: one store, the current query over one item type and one run (the
// latest by default: a table mixing every run read "author 50% empty" after one run with a broken selector, issue
// 23 item 6), pages of rows shaped for the table, field quality of that run and filtered export. The panel (panel.ts) drives it from webview
// messages; the benchmark (bench.ts) drives it directly, so both measure and run the same code.

export const DEFAULT_HIDDEN: readonly string[] = ['_key', '_rule', '_fetched_at'];

export class ResultsSource {
  private view: ItemView | null = null;
  private caches = new Map<string, ItemCache>();
  private quality = new Map<string, QualityTracker>();
  private itemType: string | null = null;
  private columnsOf = new Map<string, string[]>();
  /** The runs of each type, as last read (refreshRuns), and the run the current query shows. */
  private runsOf = new Map<string, RunItems[]>();
  private shownRun: { shown: string; filter: string | undefined } = { shown: 'all', filter: undefined };
  /** Bumped on every query change: answers to an older query are dropped by the webview. */
  generation = 0;

  /** `declared`: the task file's item types in the order it writes them (its rules', top to bottom). */
  constructor(
    readonly store: ItemStore,
    private readonly declared: readonly string[] = [],
  ) {}

  /**
   * The stored types, the task file's first: the view opens on the type the file declares first, not on the
   * alphabetically first (a quotes task opened on `author`, its second type: issue 32, item 7).
   */
  async types(): Promise<string[]> {
    const stored = await this.store.itemTypes();
    const rank = (t: string) => {
      const i = this.declared.indexOf(t);
      return i < 0 ? this.declared.length : i;
    };
    return [...stored].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  }

  get type(): string | null {
    return this.itemType;
  }

  /** Data fields in stored order, then the meta columns. */
  async columns(type: string): Promise<string[]> {
    const cols = [...(await this.store.fieldNames(type)), ...META_COLUMNS];
    this.columnsOf.set(type, cols);
    return cols;
  }

  /** Applies a view state (already shape-checked): unknown types and columns are ignored, not trusted. */
  async setQuery(state: ResultsViewState): Promise<ResultsViewState> {
    const types = await this.types();
    const type = state.itemType && types.includes(state.itemType) ? state.itemType : (types[0] ?? null);
    this.generation++;
    this.itemType = type;
    if (!type) {
      this.view = null;
      return { ...state, itemType: null };
    }
    const columns = new Set(await this.columns(type));
    const filters: FieldFilter[] = Object.entries(state.filters)
      .filter(([f, t]) => columns.has(f) && t !== '')
      .map(([field, text]) => ({ field, text }));
    const sort = state.sort && columns.has(state.sort.field) ? state.sort : null;
    const run = state.run ?? 'latest';
    this.shownRun = chooseRun(run, await this.runs(type));
    const query: ItemQuery = { type, filters, sort, ...(this.shownRun.filter !== undefined ? { run: this.shownRun.filter } : {}) };
    const view = new ItemView(this.store, query, null);
    this.view = view.direct ? view : new ItemView(this.store, query, this.cacheFor(type));
    return { ...state, itemType: type, filters: Object.fromEntries(filters.map((f) => [f.field, f.text])), sort, run };
  }

  /** The runs of a type (read once; refreshRuns() reads them again). */
  async runs(type: string): Promise<RunItems[]> {
    let r = this.runsOf.get(type);
    if (!r) this.runsOf.set(type, (r = await this.store.itemRuns(type)));
    return r;
  }

  /** Reads the current type's runs again; true when the run a 'latest' view shows is no longer the latest. */
  async refreshRuns(): Promise<boolean> {
    const type = this.itemType;
    if (!type) return false;
    const before = JSON.stringify(this.runsOf.get(type) ?? []);
    this.runsOf.delete(type);
    const after = await this.runs(type);
    if (JSON.stringify(after) === before) return false;
    return chooseRun('latest', after).shown !== chooseRun('latest', JSON.parse(before) as RunItems[]).shown;
  }

  /** The runs offered by the run filter and the one shown (a run id, or 'all'). */
  async runsShown(): Promise<RunsShown> {
    const runs = this.itemType ? await this.runs(this.itemType) : [];
    return { runs: runs.map((r) => ({ id: r.run, items: r.items, firstFetchedAt: r.firstFetchedAt })), shown: this.shownRun.shown };
  }

  /** True when the current query needs an index (the first count may take a while on big stores). */
  get indexing(): boolean {
    return this.view !== null && !this.view.direct;
  }

  private cacheFor(type: string): ItemCache {
    let c = this.caches.get(type);
    if (!c) this.caches.set(type, (c = new ItemCache(this.store, type)));
    return c;
  }

  async count(): Promise<{ total: number; stored: number }> {
    if (!this.view || !this.itemType) return { total: 0, stored: 0 };
    const total = await this.view.count();
    const stored = this.view.direct && this.view.query.filters.length === 0 ? total : await this.store.count(this.itemType);
    return { total, stored };
  }

  async items(offset: number, limit: number): Promise<StoredItem[]> {
    return this.view ? this.view.page(offset, limit) : [];
  }

  async rows(offset: number, limit: number): Promise<TableRow[]> {
    return (await this.items(offset, limit)).map(toTableRow);
  }

  async item(offset: number): Promise<StoredItem | null> {
    return (await this.items(offset, 1))[0] ?? null;
  }

  async fieldQuality(): Promise<QualityReport | null> {
    const type = this.itemType;
    if (!type) return null;
    // Per run: one tracker per type and run shown.
    const run = this.shownRun.filter;
    const id = `${type}\n${run ?? '*'}`;
    let q = this.quality.get(id);
    if (!q) this.quality.set(id, (q = new QualityTracker(this.store, type, this.cacheFor(type), run)));
    return q.update();
  }

  /** The run the current view shows: a run id, or 'all'. */
  get run(): string {
    return this.shownRun.shown;
  }

  /** Writes the current view (filtered and sorted) with its meta columns. */
  async exportTo(format: ExportFormat, out: Writable): Promise<ExportResult> {
    if (!this.view || !this.itemType) throw new Error('nothing to export: the store has no items yet');
    return exportItems(viewAsStore(this.view, this.store), { type: this.itemType, format, out, meta: true });
  }

  async close(): Promise<void> {
    this.caches.clear();
    this.quality.clear();
    await this.store.close();
  }
}

export function toTableRow(item: StoredItem): TableRow {
  const cells: Record<string, string> = {};
  for (const [k, v] of Object.entries(item.data)) cells[k] = cut(textOf(v));
  cells._key = cut(item.key);
  cells._url = cut(item.url ?? '');
  cells._rule = item.rule ?? '';
  cells._fetched_at = new Date(item.fetchedAt).toISOString().replace('T', ' ').slice(0, 19);
  cells._run = item.run ?? '';
  return { key: item.key, url: item.url, rule: item.rule, fetchedAt: item.fetchedAt, cells };
}

function cut(s: string): string {
  return s.length > CELL_CHARS ? `${s.slice(0, CELL_CHARS - 1)}…` : s;
}

/**
 * Which run a view shows, and the filter that takes it: 'all' none; 'latest' (or a run the store no longer holds)
 * the last run that stored items of the type; a run id, that run. A type whose items all come from one run needs
 * no filter (and keeps the store's direct paging).
 */
export function chooseRun(wanted: string, runs: readonly RunItems[]): { shown: string; filter: string | undefined } {
  const ids = runs.map((r) => r.run).filter((r): r is string => r !== null);
  if (wanted === 'all' || ids.length === 0) return { shown: 'all', filter: undefined };
  const shown = ids.includes(wanted) ? wanted : ids[ids.length - 1]!;
  return { shown, filter: runs.length > 1 ? shown : undefined };
}
