// Messages between the results webview (media/results/main.ts) and its panel. Pure types and constants, so the
// browser bundle can import them without pulling in Node or VS Code.

export const RESULTS_VIEW_TYPE = 'crawlStudio.results';
export const PAGE_SIZE = 100;
/** Cell text is cut to this in table pages; the row detail shows whole values. */
export const CELL_CHARS = 300;

export interface ResultsViewState {
  readonly itemType: string | null;
  /** Column -> filter text. */
  readonly filters: Readonly<Record<string, string>>;
  readonly sort: { readonly field: string; readonly descending: boolean } | null;
  readonly hidden: readonly string[];
  readonly showQuality: boolean;
  /**
   * Whose items: 'latest' (the default: the last run that stored any), 'all', or a run id. Absent in states kept
   * before runs were shown: 'latest'.
   */
  readonly run?: string;
  /**
   * Only the items a run added, changed or removed (item history, issue 33), or all three; absent: the stored
   * items, no change filter.
   */
  readonly changes?: ChangeFilter;
  /** The run whose changes are shown: 'latest' (the default: the latest complete run) or a run id. */
  readonly changeRun?: string;
}

export type ChangeKindName = 'added' | 'changed' | 'removed';
export type ChangeFilter = 'all' | ChangeKindName;
export const CHANGE_FILTERS: readonly ChangeFilter[] = ['all', 'added', 'changed', 'removed'];

/** A run with closed item history, with its counts (every item type), as `crawl-studio changes` counts them. */
export interface ChangeRunOption {
  readonly id: string;
  readonly complete: boolean;
  readonly finishedAt: number;
  readonly added: number;
  readonly changed: number;
  readonly removed: number;
}

/** The runs the change filter offers, oldest first, and the one shown (null: no run has history yet). */
export interface ChangesShown {
  readonly runs: readonly ChangeRunOption[];
  readonly shown: string | null;
  /** The run 'latest' stands for: the latest complete run. */
  readonly latest: string | null;
}

/** A row's change in the shown run; a changed field's values as cell text (cut to CELL_CHARS). */
export interface RowChange {
  readonly kind: ChangeKindName;
  readonly fields: readonly { readonly field: string; readonly old: string; readonly new: string }[];
}

/** A run whose items the store holds, for the run filter. */
export interface RunOption {
  readonly id: string | null;
  readonly items: number;
  /** Fetch time of its earliest item (ms). */
  readonly firstFetchedAt: number;
}

/** The runs of the shown item type and the one shown: a run id, or 'all'. */
export interface RunsShown {
  readonly runs: readonly RunOption[];
  readonly shown: string;
}

/** What VS Code keeps for a panel across reloads (the webview's setState). */
export interface ResultsPersisted {
  readonly file: string;
  readonly view: ResultsViewState;
}

export interface RowMeta {
  readonly key: string;
  readonly url: string | null;
  readonly rule: string | null;
  readonly fetchedAt: number;
}

export interface TableRow extends RowMeta {
  /** Display text per field (cut to CELL_CHARS). */
  readonly cells: Readonly<Record<string, string>>;
  /** Under a change filter: what the run did to the item. */
  readonly change?: RowChange;
}

export interface RowDetail extends RowMeta {
  readonly offset: number;
  readonly type: string;
  readonly run: string | null;
  readonly fields: readonly { readonly name: string; readonly value: unknown }[];
  /** Under a change filter: what the run did to the item, each changed field's whole old and new value. */
  readonly change?: {
    readonly kind: ChangeKindName;
    readonly run: string;
    readonly fields: readonly { readonly field: string; readonly old?: unknown; readonly new?: unknown }[];
  };
}

export interface QualityRow {
  readonly field: string;
  readonly empty: number;
  readonly distinct: number;
}

export type ToResults =
  | {
      readonly type: 'init';
      readonly task: string;
      readonly file: string;
      readonly store: string;
      readonly types: readonly string[];
      readonly columns: readonly string[];
      readonly view: ResultsViewState;
      /**
       * The webview's last change of its view (a query, field quality, columns) that this view has applied: when the
       * webview has sent a later one, this view is stale and the webview keeps its own, or a click made meanwhile
       * would be undone (a poll posts the view it has while a crawl runs).
       */
      readonly seq: number;
      readonly canPreview: boolean;
      readonly runs: RunsShown;
      readonly changes: ChangesShown;
    }
  | {
      readonly type: 'count';
      readonly generation: number;
      readonly total: number;
      readonly stored: number;
      readonly running: boolean;
      readonly indexing: boolean;
      readonly columns: readonly string[];
      readonly types: readonly string[];
    }
  | { readonly type: 'rows'; readonly generation: number; readonly offset: number; readonly rows: readonly TableRow[] }
  | { readonly type: 'detail'; readonly detail: RowDetail }
  | {
      readonly type: 'quality';
      readonly itemType: string;
      readonly run: string;
      readonly total: number;
      readonly fields: readonly QualityRow[];
    }
  | { readonly type: 'busy'; readonly text: string | null }
  | { readonly type: 'error'; readonly message: string };

export type ExportFormat = 'csv' | 'jsonl' | 'json';

export type FromResults =
  | { readonly type: 'ready'; readonly view?: ResultsViewState }
  /** A new query; `seq` numbers the webview's changes of its view since it loaded (1, 2, …), `ready` being 0. */
  | { readonly type: 'query'; readonly view: ResultsViewState; readonly seq: number }
  | { readonly type: 'rows'; readonly generation: number; readonly offset: number; readonly limit: number }
  | { readonly type: 'detail'; readonly offset: number }
  | { readonly type: 'openUrl'; readonly offset: number }
  | { readonly type: 'showJob'; readonly offset: number }
  | { readonly type: 'openPreview'; readonly offset: number }
  | { readonly type: 'export'; readonly format: ExportFormat }
  /** Show (and keep current while visible) or hide the field quality panel: a change of the view, numbered as a query. */
  | { readonly type: 'quality'; readonly show: boolean; readonly seq: number }
  /** The columns hidden (the Columns popup): a change of the view, numbered as a query; the rows stay. */
  | { readonly type: 'columns'; readonly hidden: readonly string[]; readonly seq: number };

export const EMPTY_VIEW: ResultsViewState = {
  itemType: null,
  filters: {},
  sort: null,
  hidden: [],
  showQuality: false,
  run: 'latest',
};
