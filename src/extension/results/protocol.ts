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
}

export interface RowDetail extends RowMeta {
  readonly offset: number;
  readonly type: string;
  readonly run: string | null;
  readonly fields: readonly { readonly name: string; readonly value: unknown }[];
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
      readonly canPreview: boolean;
      readonly runs: RunsShown;
    }
  | { readonly type: 'count'; readonly generation: number; readonly total: number; readonly stored: number; readonly running: boolean; readonly indexing: boolean; readonly columns: readonly string[]; readonly types: readonly string[] }
  | { readonly type: 'rows'; readonly generation: number; readonly offset: number; readonly rows: readonly TableRow[] }
  | { readonly type: 'detail'; readonly detail: RowDetail }
  | { readonly type: 'quality'; readonly itemType: string; readonly run: string; readonly total: number; readonly fields: readonly QualityRow[] }
  | { readonly type: 'busy'; readonly text: string | null }
  | { readonly type: 'error'; readonly message: string };

export type ExportFormat = 'csv' | 'jsonl' | 'json';

export type FromResults =
  | { readonly type: 'ready'; readonly view?: ResultsViewState }
  | { readonly type: 'query'; readonly view: ResultsViewState }
  | { readonly type: 'rows'; readonly generation: number; readonly offset: number; readonly limit: number }
  | { readonly type: 'detail'; readonly offset: number }
  | { readonly type: 'openUrl'; readonly offset: number }
  | { readonly type: 'showJob'; readonly offset: number }
  | { readonly type: 'openPreview'; readonly offset: number }
  | { readonly type: 'export'; readonly format: ExportFormat }
  /** Show (and keep current while visible) or hide the field quality panel. */
  | { readonly type: 'quality'; readonly show: boolean };

export const EMPTY_VIEW: ResultsViewState = { itemType: null, filters: {}, sort: null, hidden: [], showQuality: false, run: 'latest' };
