import type { Writable } from 'node:stream';
import type { RunChangeCounts } from '../../core/history/diff';
import { exportChanges, exportItems, type ExportResult, type ItemStore, type StoredItem } from '../../store';
import type { RunItems } from '../../store/types';
import {
  ItemCache,
  ItemView,
  META_COLUMNS,
  QualityTracker,
  textOf,
  viewAsStore,
  type FieldFilter,
  type ItemQuery,
  type QualityReport,
} from '../../store/query';
import { asStoredItem, ChangeRows, changeRunOption, chooseChangeRun, rowChange } from './changes';
import {
  CELL_CHARS,
  type ChangesShown,
  type ExportFormat,
  type ResultsViewState,
  type RunsShown,
  type TableRow,
} from './protocol';

// The results view's data, without VS Code: one store, the current query over one item type and one run (the
// latest by default: a table mixing every run read "author 50% empty" after one run with a broken selector, issue
// 23 item 6), pages of rows shaped for the table, field quality of that run and filtered export. The panel (panel.ts) drives it from webview
// messages; the benchmark (bench.ts) drives it directly, so both measure and run the same code. Under a change
// filter (issue 33) the rows are a run's added, changed or removed items from the item history (changes.ts).

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
  /** Under a change filter: the rows shown; the task's runs with history as last read (refreshChangeRuns). */
  private changeRows: ChangeRows | null = null;
  private historyRuns: RunChangeCounts[] | null = null;
  /** Bumped on every query change: answers to an older query are dropped by the webview. */
  generation = 0;

  /**
   * `task`: whose item history the change filter reads (without it, the filter shows nothing); `declared`: the task
   * file's item types in the order it writes them (its rules', top to bottom).
   */
  constructor(
    readonly store: ItemStore,
    readonly task: string | null = null,
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
    // Under a change filter: what happened to the item first; runs and rules are not a history's.
    const cols = this.changeRows
      ? ['_change', ...(await this.store.fieldNames(type)), '_key', '_url', '_fetched_at']
      : [...(await this.store.fieldNames(type)), ...META_COLUMNS];
    this.columnsOf.set(type, cols);
    return cols;
  }

  /** Applies a view state (already shape-checked): unknown types and columns are ignored, not trusted. */
  async setQuery(state: ResultsViewState): Promise<ResultsViewState> {
    const types = await this.types();
    const type = state.itemType && types.includes(state.itemType) ? state.itemType : (types[0] ?? null);
    this.generation++;
    this.itemType = type;
    this.changeRows = state.changes !== undefined ? ChangeRows.empty() : null;
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
    const query: ItemQuery = {
      type,
      filters,
      sort,
      ...(this.shownRun.filter !== undefined ? { run: this.shownRun.filter } : {}),
    };
    const view = new ItemView(this.store, query, null);
    this.view = view.direct ? view : new ItemView(this.store, query, this.cacheFor(type));
    const shown = {
      ...state,
      itemType: type,
      filters: Object.fromEntries(filters.map((f) => [f.field, f.text])),
      sort,
      run,
    };
    if (state.changes === undefined) return shown;
    const changeRun = chooseChangeRun(state.changeRun, await this.changeRuns());
    if (changeRun !== null && this.task !== null)
      this.changeRows = await ChangeRows.read(this.store, this.task, changeRun, {
        type,
        kind: state.changes,
        filters,
        sort,
      });
    return { ...shown, changeRun: state.changeRun ?? 'latest' };
  }

  /** The task's runs with closed history, oldest first (read once; refreshChangeRuns() reads them again). */
  async changeRuns(): Promise<RunChangeCounts[]> {
    if (this.task === null) return [];
    return (this.historyRuns ??= await this.store.history.runs(this.task));
  }

  /** Reads the runs with history again; true when they changed (a run closed, or one was pruned). */
  async refreshChangeRuns(): Promise<boolean> {
    const before = JSON.stringify(this.historyRuns ?? []);
    this.historyRuns = null;
    return JSON.stringify(await this.changeRuns()) !== before;
  }

  /** The change filter's runs and the one shown. */
  async changesShown(): Promise<ChangesShown> {
    const runs = await this.changeRuns();
    return {
      runs: runs.map(changeRunOption),
      shown: this.changeRows?.run ?? null,
      latest: chooseChangeRun('latest', runs),
    };
  }

  /** Whether a change filter is on. */
  get changeMode(): boolean {
    return this.changeRows !== null;
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
    return {
      runs: runs.map((r) => ({ id: r.run, items: r.items, firstFetchedAt: r.firstFetchedAt })),
      shown: this.shownRun.shown,
    };
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
    // Under a change filter, `stored` is every item of the type the run changed.
    if (this.changeRows) return { total: this.changeRows.count, stored: this.changeRows.all };
    if (!this.view || !this.itemType) return { total: 0, stored: 0 };
    const total = await this.view.count();
    const stored =
      this.view.direct && this.view.query.filters.length === 0 ? total : await this.store.count(this.itemType);
    return { total, stored };
  }

  async items(offset: number, limit: number): Promise<StoredItem[]> {
    const ch = this.changeRows;
    if (ch) return ch.page(offset, limit).map((c) => asStoredItem(c, ch.run!));
    return this.view ? this.view.page(offset, limit) : [];
  }

  async rows(offset: number, limit: number): Promise<TableRow[]> {
    const ch = this.changeRows;
    if (ch)
      return ch.page(offset, limit).map((c) => ({ ...toTableRow(asStoredItem(c, ch.run!)), change: rowChange(c) }));
    return (await this.items(offset, limit)).map(toTableRow);
  }

  /** Under a change filter: what the shown run did to the row at `offset`, with whole values. */
  changeAt(offset: number): {
    kind: 'added' | 'changed' | 'removed';
    run: string;
    fields: { field: string; old?: unknown; new?: unknown }[];
  } | null {
    const ch = this.changeRows;
    const c = ch?.page(offset, 1)[0];
    return c && ch?.run ? { kind: c.kind, run: ch.run, fields: c.fields.map((f) => ({ ...f })) } : null;
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
    if (this.changeRows) {
      // The rows' change records, as `crawl-studio export --changes` writes them.
      if (format === 'json')
        throw new Error(
          'changes are exported as CSV or JSONL (as crawl-studio export --changes writes them), not JSON',
        );
      const items = await exportChanges(await this.changeRows.records(), { format, out, csvRaw: false });
      return { items, types: this.itemType ? [this.itemType] : [] };
    }
    if (!this.view || !this.itemType) throw new Error('nothing to export: the store has no items yet');
    return exportItems(viewAsStore(this.view, this.store), { type: this.itemType, format, out, meta: true });
  }

  async close(): Promise<void> {
    this.caches.clear();
    this.quality.clear();
    await this.store.close();
  }
}

function toTableRow(item: StoredItem): TableRow {
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
function chooseRun(wanted: string, runs: readonly RunItems[]): { shown: string; filter: string | undefined } {
  const ids = runs.map((r) => r.run).filter((r): r is string => r !== null);
  if (wanted === 'all' || ids.length === 0) return { shown: 'all', filter: undefined };
  const shown = ids.includes(wanted) ? wanted : ids[ids.length - 1]!;
  return { shown, filter: runs.length > 1 ? shown : undefined };
}
