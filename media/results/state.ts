// The Results view's state: what it shows (the query, the runs, the counts, the rows read so far) and the one
// channel to the extension host.

import {
  EMPTY_VIEW,
  type ChangesShown,
  type FromResults,
  type QualityRow,
  type ResultsPersisted,
  type RowDetail,
  type RunsShown,
  type TableRow,
} from '../../src/extension/results/protocol';

export const vscode = acquireVsCodeApi<ResultsPersisted>();
/** A row's height in pixels (the virtual scrolling's unit). */
export const ROW_H = 24;
/** Pages of rows kept; beyond, those farthest from the viewport are dropped. */
export const MAX_PAGES = 60;

/** What the view shows and what it has read: one object, so every part of the view reads and writes the same. */
export const st = {
  file: '',
  task: '',
  storeLocation: '',
  types: [] as string[],
  columns: [] as string[],
  view: vscode.getState()?.view ?? EMPTY_VIEW,
  /**
   * Changes of the view sent since the view loaded (queries, field quality, columns): an init answering an older one
   * carries a view this side has replaced since.
   */
  sent: 0,
  canPreview: false,
  generation: -1,
  total: 0,
  stored: 0,
  running: false,
  busy: null as string | null,
  error: null as string | null,
  selected: -1,
  detail: null as RowDetail | null,
  quality: null as { total: number; run: string; fields: readonly QualityRow[] } | null,
  runs: { runs: [], shown: 'all' } as RunsShown,
  changes: { runs: [], shown: null, latest: null } as ChangesShown,
  pages: new Map<number, readonly TableRow[]>(),
  /** Pages of the previous count, shown while fresh ones load (no flicker while a crawl adds rows). */
  stale: new Map<number, readonly TableRow[]>(),
  pending: new Set<number>(),
  /** What the header shows now (headerKey). */
  renderedHeader: '',
};

export function send(m: FromResults): void {
  vscode.postMessage(m);
}

/** What VS Code keeps for the panel: its task file and the query, back after a reload. */
export function persist(): void {
  if (st.file) vscode.setState({ file: st.file, view: st.view });
}

export function visibleColumns(): string[] {
  return st.columns.filter((c) => !st.view.hidden.includes(c));
}
