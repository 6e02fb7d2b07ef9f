// What the Results view writes about what it shows: the count, the empty table, the status line, a value in the
// row detail. Pure functions (test/unit/webviewTexts.test.ts).

import type { ChangesShown, ResultsViewState, RunsShown } from '../../src/extension/results/protocol';
import { fmtInt } from '../shared/format';
import { labelOf } from './columns';

/** The figures these texts are made of (the view's state has them all). */
export interface Shown {
  view: ResultsViewState;
  /** Rows matching the query; -1 generation: no count yet. */
  total: number;
  generation: number;
  /** Rows stored (of the run shown, or the changes of the run shown). */
  stored: number;
  running: boolean;
  runs: RunsShown;
  changes: ChangesShown;
}

export const CHANGE_MARK: Record<string, string> = { added: '+ added', changed: '~ changed', removed: '− removed' };

/** The newest run with an id. */
export function latestRun(runs: RunsShown): string | null {
  const ids = runs.runs.map((r) => r.id).filter((id): id is string => id !== null);
  return ids[ids.length - 1] ?? null;
}

/** What the table says when it has no row ('' while it has rows or no count yet). */
export function emptyText(s: Shown): string {
  if (s.total !== 0 || s.generation < 0) return '';
  if (s.view.changes)
    return s.changes.shown === null
      ? 'No run of this task has item history yet: the changes show once a run finishes.'
      : s.stored === 0
        ? `Run ${s.changes.shown} changed no ${s.view.itemType ?? ''} item.`
        : 'No change matches these filters.';
  return s.stored === 0
    ? s.running
      ? 'No items stored yet — they appear here as the crawl stores them.'
      : 'No items stored for this task yet. Start the crawl to fill it.'
    : 'No item matches these filters.';
}

/** The toolbar's count and its tooltip. */
export function countText(s: Shown): { text: string; title: string } {
  const filtered = Object.keys(s.view.filters).length > 0;
  const oneRun = s.runs.shown !== 'all' && s.runs.runs.length > 1;
  const text =
    s.generation < 0
      ? 'loading…'
      : s.view.changes
        ? `${fmtInt(s.total)} of ${fmtInt(s.stored)} changed items`
        : filtered || oneRun
          ? `${fmtInt(s.total)} of ${fmtInt(s.stored)} items`
          : `${fmtInt(s.total)} item${s.total === 1 ? '' : 's'}`;
  const title = oneRun
    ? `${fmtInt(s.total)} items of run ${s.runs.shown}${filtered ? ' matching the filters' : ''}; ${fmtInt(s.stored)} in all runs`
    : '';
  return { text, title };
}

/** The status line's account of the query: whose items (or changes), in which order. */
export function queryText(s: Shown): string {
  const sortText = s.view.sort
    ? `sorted by ${labelOf(s.view.sort.field)} ${s.view.sort.descending ? '↓' : '↑'}`
    : 'in storage order';
  const runText = s.view.changes
    ? `changes of run ${s.changes.shown ?? '—'}${s.changes.shown !== null && s.changes.shown === s.changes.latest ? ' (latest complete)' : ''}`
    : s.runs.shown === 'all'
      ? s.runs.runs.length > 1
        ? `all ${s.runs.runs.length} runs`
        : 'one run'
      : `run ${s.runs.shown}${s.runs.shown === latestRun(s.runs) ? ' (latest)' : ''}`;
  return `${runText} · ${sortText}`;
}

/** A field's value in the row detail: text as it is, anything else as indented JSON. */
export function fmtValue(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string') return v;
  return JSON.stringify(v, null, 2);
}

export function isEmpty(v: unknown): boolean {
  return (
    v === null || v === undefined || (typeof v === 'string' && v.trim() === '') || (Array.isArray(v) && v.length === 0)
  );
}

/** A field's share of the items, in percent, as the quality bars write it (one decimal under 1%). */
export function percentText(pct: number): string {
  return pct.toFixed(pct > 0 && pct < 1 ? 1 : 0);
}
