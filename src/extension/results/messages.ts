import type { FromResults, ResultsViewState } from './protocol';
import { hasShape, isBool, isInt, isOneOf, isRecord, isStr, type Check } from './validate';

// Every message from the results webview is checked here before the panel acts on it: right type, known
// fields, bounded sizes. Anything else is dropped.

const MAX_OFFSET = 1_000_000_000;

const isFilters: Check<Record<string, string>> = (v): v is Record<string, string> =>
  isRecord(v) && Object.keys(v).length <= 200 && Object.entries(v).every(([k, t]) => k.length <= 200 && isStr(500)(t));

const isSort: Check<ResultsViewState['sort']> = (v): v is ResultsViewState['sort'] =>
  v === null || hasShape(v, { field: isStr(200), descending: isBool });

const isHidden: Check<string[]> = (v): v is string[] => Array.isArray(v) && v.length <= 500 && v.every(isStr(200));

export const isViewState: Check<ResultsViewState> = (v): v is ResultsViewState =>
  hasShape(
    v,
    {
      itemType: (t): t is string | null => t === null || isStr(200)(t),
      filters: isFilters,
      sort: isSort,
      hidden: isHidden,
      showQuality: isBool,
      run: isStr(200),
      changes: isOneOf('all', 'added', 'changed', 'removed'),
      changeRun: isStr(200),
    },
    ['run', 'changes', 'changeRun'],
  );

/** The number the webview gives each change of its view (1, 2, …). */
const isSeq = isInt(1, Number.MAX_SAFE_INTEGER);

const offsetMsg = (type: string) => (v: unknown) => hasShape(v, { type: isOneOf(type), offset: isInt(0, MAX_OFFSET) });

export function parseResultsMessage(v: unknown): FromResults | null {
  if (!isRecord(v) || typeof v.type !== 'string') return null;
  switch (v.type) {
    case 'ready':
      return hasShape(v, { type: isOneOf('ready'), view: isViewState }, ['view']) ? (v as FromResults) : null;
    case 'query':
      return hasShape(v, { type: isOneOf('query'), view: isViewState, seq: isSeq }) ? (v as FromResults) : null;
    case 'rows':
      return hasShape(v, {
        type: isOneOf('rows'),
        generation: isInt(0, Number.MAX_SAFE_INTEGER),
        offset: isInt(0, MAX_OFFSET),
        limit: isInt(1, 1000),
      })
        ? (v as FromResults)
        : null;
    case 'detail':
    case 'openUrl':
    case 'showJob':
    case 'openPreview':
      return offsetMsg(v.type)(v) ? (v as FromResults) : null;
    case 'export':
      return hasShape(v, { type: isOneOf('export'), format: isOneOf('csv', 'jsonl', 'json') })
        ? (v as FromResults)
        : null;
    case 'quality':
      return hasShape(v, { type: isOneOf('quality'), show: isBool, seq: isSeq }) ? (v as FromResults) : null;
    case 'columns':
      return hasShape(v, { type: isOneOf('columns'), hidden: isHidden, seq: isSeq }) ? (v as FromResults) : null;
    default:
      return null;
  }
}
