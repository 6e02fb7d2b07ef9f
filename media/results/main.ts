import '@vscode-elements/elements/dist/vscode-button/index.js';
import '@vscode-elements/elements/dist/vscode-checkbox/index.js';
import '@vscode-elements/elements/dist/vscode-badge/index.js';
import '@vscode-elements/elements/dist/vscode-progress-ring/index.js';
import {
  EMPTY_VIEW,
  PAGE_SIZE,
  type ChangeFilter,
  type ChangesShown,
  type ExportFormat,
  type FromResults,
  type QualityRow,
  type ResultsPersisted,
  type ResultsViewState,
  type RowDetail,
  type RunsShown,
  type TableRow,
  type ToResults,
} from '../../src/extension/results/protocol';
import { addStyle, h, icon } from '../shared/dom';
import { fmtInt } from '../shared/format';
import css from './style.css';

// The results table: virtual scrolling over pages the extension reads from the store on demand. Only the
// visible rows (plus a margin) exist in the DOM; pages are cached here, up to a bound, and dropped when the
// query changes. Keyboard: arrows, Page Up/Down, Home/End move the selection, Enter opens the row detail,
// Escape closes it; headers are buttons (sort), filters are inputs.

addStyle(css);
const vscode = acquireVsCodeApi<ResultsPersisted>();
const ROW_H = 24;
const MAX_PAGES = 60;
const META_LABEL: Record<string, string> = {
  _key: 'key',
  _url: 'source URL',
  _rule: 'page rule',
  _fetched_at: 'fetched at',
  _run: 'run',
  _change: 'change',
};
const CHANGE_MARK: Record<string, string> = { added: '+ added', changed: '~ changed', removed: '− removed' };

/** What the view shows and what it has read: one object, so every part of the view reads and writes the same. */
const st = {
  file: '',
  task: '',
  storeLocation: '',
  types: [] as string[],
  columns: [] as string[],
  view: vscode.getState()?.view ?? EMPTY_VIEW,
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

function send(m: FromResults): void {
  vscode.postMessage(m);
}

function persist(): void {
  if (st.file) vscode.setState({ file: st.file, view: st.view });
}

// ---- DOM skeleton ---------------------------------------------------------------------------------------------

const app = document.getElementById('app')!;
const titleEl = h('span', { class: 'title' }, icon('table'), h('span', {}, 'Results'));
const typeSelect = h('select', { 'aria-label': 'Item type', title: 'Item type' });
// Whose items: the latest run by default (issue 23, item 6), any earlier one, or all of them.
const runSelect = h('select', {
  'aria-label': 'Run',
  title: 'Show the items of one run (the latest by default), or of all runs',
});
// What changed (issue 33): only the items a run added, changed or removed, and which run (the latest complete one by default).
const changeSelect = h('select', {
  'aria-label': 'Changes',
  title: 'Show only the items a run added, changed or removed (item history)',
});
const changeRunSelect = h('select', {
  'aria-label': 'Run of the changes',
  title: 'Whose changes: the latest complete run by default',
});
const countEl = h('span', { class: 'count', role: 'status', 'aria-live': 'polite' });
const liveEl = h(
  'span',
  { class: 'live', title: 'The crawl is running: new rows appear as they are stored' },
  h('span', { class: 'dot' }),
  'live',
);
const busyEl = h('span', { class: 'busy' });
const columnsBtn = h(
  'vscode-button',
  { secondary: true, icon: 'list-selection', title: 'Choose columns', 'aria-haspopup': 'true' },
  'Columns',
);
const qualityBtn = h(
  'vscode-button',
  { secondary: true, icon: 'pulse', title: 'Field quality: empty and distinct values per field' },
  'Field quality',
);
const exportBtns = (['csv', 'jsonl', 'json'] as const).map((f) =>
  h(
    'vscode-button',
    {
      secondary: true,
      icon: f === 'csv' ? 'table' : 'json',
      title: `Export the current view (filtered, sorted) as ${f.toUpperCase()}`,
      'data-format': f,
    },
    f.toUpperCase(),
  ),
);
const clearBtn = h(
  'vscode-button',
  { secondary: true, icon: 'clear-all', title: 'Clear every filter' },
  'Clear filters',
);
const toolbar = h(
  'div',
  { class: 'toolbar', role: 'toolbar', 'aria-label': 'Results' },
  titleEl,
  typeSelect,
  runSelect,
  changeSelect,
  changeRunSelect,
  countEl,
  liveEl,
  busyEl,
  h('span', { class: 'spacer' }),
  clearBtn,
  columnsBtn,
  qualityBtn,
  h('span', { class: 'count' }, 'Export:'),
  ...exportBtns,
);
const grid = h('div', {
  class: 'grid',
  role: 'grid',
  tabindex: 0,
  'aria-label': 'Stored items',
  'aria-multiselectable': 'false',
});
const thead = h('div', { class: 'thead', role: 'rowgroup' });
const body = h('div', { class: 'body', role: 'rowgroup' });
const emptyEl = h('div', { class: 'empty-state' });
grid.append(thead, body);
const gridWrap = h('div', { class: 'grid-wrap' }, grid, emptyEl);
const side = h('aside', { class: 'side', 'aria-label': 'Row detail', hidden: true });
const main = h('div', { class: 'main' }, gridWrap, side);
const qualityEl = h('section', { class: 'quality', 'aria-label': 'Field quality', hidden: true });
const errorEl = h('div', { class: 'error', role: 'alert', hidden: true });
const statusEl = h('div', { class: 'status' });
app.append(toolbar, errorEl, main, qualityEl, statusEl);

// ---- Columns, header, filters ---------------------------------------------------------------------------------

function visibleColumns(): string[] {
  return st.columns.filter((c) => !st.view.hidden.includes(c));
}

function widthOf(c: string): string {
  if (c === '_url') return 'minmax(220px, 2fr)';
  if (c === '_fetched_at') return '160px';
  if (c === '_rule') return '90px';
  if (c === '_run') return '110px';
  if (c === '_change') return '100px';
  return 'minmax(120px, 1fr)';
}

function template(): string {
  return visibleColumns().map(widthOf).join(' ');
}

function minWidth(): number {
  return visibleColumns().reduce(
    (a, c) =>
      a +
      (c === '_url'
        ? 220
        : c === '_fetched_at'
          ? 160
          : c === '_rule'
            ? 90
            : c === '_run'
              ? 110
              : c === '_change'
                ? 100
                : 120),
    0,
  );
}

let filterTimer: number | undefined;

function renderHeader(): void {
  const cols = visibleColumns();
  const hrow = h('div', { class: 'hrow', role: 'row' });
  const frow = h('div', { class: 'frow', role: 'row' });
  hrow.style.gridTemplateColumns = frow.style.gridTemplateColumns = template();
  hrow.style.minWidth = frow.style.minWidth = `${minWidth()}px`;
  for (const c of cols) {
    const sorted = st.view.sort?.field === c ? st.view.sort : null;
    const label = META_LABEL[c] ?? c;
    const sortIcon = sorted ? icon(sorted.descending ? 'arrow-down' : 'arrow-up') : null;
    const btn = h(
      'button',
      {
        class: `hcell${c.startsWith('_') ? ' meta' : ''}`,
        role: 'columnheader',
        'aria-sort': sorted ? (sorted.descending ? 'descending' : 'ascending') : 'none',
        title: `Sort by ${label}${sorted ? (sorted.descending ? ' (now descending)' : ' (now ascending)') : ''}`,
        'data-col': c,
        on: { click: () => toggleSort(c) },
      },
      h('span', { class: 'label' }, label),
      sortIcon,
    );
    hrow.append(btn);
    const input = h('input', {
      type: 'text',
      placeholder: 'filter…',
      'aria-label': `Filter ${label} (text; =exact, = for empty, ! to negate)`,
      title: 'Contains this text (case-insensitive). =text: exactly; = alone: empty; !text: does not contain',
      'data-col': c,
      class: st.view.filters[c] ? 'active' : undefined,
      value: st.view.filters[c] ?? '',
    });
    input.addEventListener('input', () => {
      input.classList.toggle('active', input.value !== '');
      window.clearTimeout(filterTimer);
      filterTimer = window.setTimeout(() => setFilter(c, input.value), 350);
    });
    input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') {
        window.clearTimeout(filterTimer);
        setFilter(c, input.value);
      } else if (e.key === 'ArrowDown') {
        grid.focus();
        if (st.selected < 0 && st.total > 0) select(0);
      }
    });
    frow.append(h('div', {}, input));
  }
  // Keep focus, text and caret in the filter being typed into across re-renders: the text typed since the last
  // query is newer than the view the extension host sent back.
  const active = document.activeElement as HTMLInputElement | null;
  const focusCol = active?.tagName === 'INPUT' && thead.contains(active) ? active.dataset.col : null;
  const typed = focusCol ? { value: active!.value, start: active!.selectionStart, end: active!.selectionEnd } : null;
  thead.replaceChildren(hrow, frow);
  st.renderedHeader = headerKey();
  if (focusCol && typed) {
    const again = thead.querySelector<HTMLInputElement>(`input[data-col="${CSS.escape(focusCol)}"]`);
    if (again) {
      again.value = typed.value;
      again.classList.toggle('active', typed.value !== '');
      again.focus();
      if (typed.start !== null) again.setSelectionRange(typed.start, typed.end ?? typed.start);
    }
  }
}

/** What the header shows; a message that changes none of it (a live crawl's run counts) leaves the header alone. */
function headerKey(): string {
  return JSON.stringify([visibleColumns(), st.view.sort, st.view.filters]);
}

function toggleSort(c: string): void {
  const cur = st.view.sort?.field === c ? st.view.sort : null;
  // Ascending, then descending, then back to storage order.
  const sort = !cur ? { field: c, descending: false } : !cur.descending ? { field: c, descending: true } : null;
  query({ ...st.view, sort });
}

function setFilter(c: string, text: string): void {
  if ((st.view.filters[c] ?? '') === text) return;
  const filters = { ...st.view.filters };
  if (text === '') delete filters[c];
  else filters[c] = text;
  query({ ...st.view, filters });
}

function query(next: ResultsViewState): void {
  st.view = next;
  persist();
  resetRows();
  send({ type: 'query', view: st.view });
  renderHeader();
  render();
}

function resetRows(): void {
  st.pages.clear();
  st.stale.clear();
  st.pending.clear();
  st.selected = -1;
  grid.scrollTop = 0;
}

// ---- Rows (virtual) -------------------------------------------------------------------------------------------

function rowAt(i: number): TableRow | null {
  const p = Math.floor(i / PAGE_SIZE);
  const page = st.pages.get(p) ?? st.stale.get(p);
  return page?.[i - p * PAGE_SIZE] ?? null;
}

function request(p: number): void {
  if (st.pages.has(p) || st.pending.has(p) || p * PAGE_SIZE >= st.total) return;
  st.pending.add(p);
  send({ type: 'rows', generation: st.generation, offset: p * PAGE_SIZE, limit: PAGE_SIZE });
}

function render(): void {
  const cols = visibleColumns();
  body.style.height = `${st.total * ROW_H}px`;
  body.style.minWidth = `${minWidth()}px`;
  grid.setAttribute('aria-rowcount', String(st.total + 2));
  const headH = thead.offsetHeight;
  const top = Math.max(0, grid.scrollTop);
  const first = Math.max(0, Math.floor(top / ROW_H) - 5);
  const last = Math.min(st.total, Math.ceil((top + grid.clientHeight - headH) / ROW_H) + 5);
  for (let p = Math.floor(first / PAGE_SIZE); p <= Math.floor(Math.max(first, last - 1) / PAGE_SIZE); p++) request(p);
  // Prefetch the next page so steady scrolling never waits.
  request(Math.floor(last / PAGE_SIZE) + 1);
  const tpl = template();
  const frag = document.createDocumentFragment();
  for (let i = first; i < last; i++) {
    const row = rowAt(i);
    const el = h('div', {
      class: `row${i === st.selected ? ' selected' : ''}${row ? '' : ' loading'}${row?.change ? ` chg chg-${row.change.kind}` : ''}`,
      role: 'row',
      'aria-rowindex': i + 3,
      'aria-selected': i === st.selected ? 'true' : 'false',
      'data-index': i,
      id: i === st.selected ? 'sel-row' : undefined,
    });
    el.style.top = `${i * ROW_H}px`;
    el.style.gridTemplateColumns = tpl;
    el.style.width = '100%';
    el.style.minWidth = `${minWidth()}px`;
    for (const c of cols) {
      const text = row ? (row.cells[c] ?? '') : '…';
      const cls = ['cell'];
      if (row && text === '') cls.push('empty');
      if (row && /^-?\d+(\.\d+)?$/.test(text)) cls.push('num');
      if (c === '_url') cls.push('url');
      const diff = row?.change?.fields.find((f) => f.field === c);
      if (diff) {
        // A changed field: its old value struck through, then the new one.
        el.append(
          h(
            'div',
            {
              class: `${cls.join(' ')} diff`,
              role: 'gridcell',
              title: `${diff.old || '(empty)'} → ${diff.new || '(empty)'}`,
            },
            h('del', {}, diff.old || '(empty)'),
            ' → ',
            h('ins', {}, diff.new || '(empty)'),
          ),
        );
        continue;
      }
      if (c === '_change' && row?.change) {
        el.append(
          h(
            'div',
            { class: `cell change ${row.change.kind}`, role: 'gridcell' },
            CHANGE_MARK[row.change.kind] ?? row.change.kind,
          ),
        );
        continue;
      }
      el.append(
        h(
          'div',
          { class: cls.join(' '), role: 'gridcell', title: text.length > 30 ? text : undefined },
          row && text === '' ? '(empty)' : text,
        ),
      );
    }
    frag.append(el);
  }
  body.replaceChildren(frag);
  if (st.selected >= 0) grid.setAttribute('aria-activedescendant', 'sel-row');
  else grid.removeAttribute('aria-activedescendant');
  emptyEl.textContent =
    st.total === 0 && st.generation >= 0
      ? st.view.changes
        ? st.changes.shown === null
          ? 'No run of this task has item history yet: the changes show once a run finishes.'
          : st.stored === 0
            ? `Run ${st.changes.shown} changed no ${st.view.itemType ?? ''} item.`
            : 'No change matches these filters.'
        : st.stored === 0
          ? st.running
            ? 'No items stored yet — they appear here as the crawl stores them.'
            : 'No items stored for this task yet. Start the crawl to fill it.'
          : 'No item matches these filters.'
      : '';
  emptyEl.hidden = emptyEl.textContent === '';
  renderToolbar();
}

function renderToolbar(): void {
  const filtered = Object.keys(st.view.filters).length > 0;
  const oneRun = st.runs.shown !== 'all' && st.runs.runs.length > 1;
  countEl.textContent =
    st.generation < 0
      ? 'loading…'
      : st.view.changes
        ? `${fmtInt(st.total)} of ${fmtInt(st.stored)} changed items`
        : filtered || oneRun
          ? `${fmtInt(st.total)} of ${fmtInt(st.stored)} items`
          : `${fmtInt(st.total)} item${st.total === 1 ? '' : 's'}`;
  countEl.title = oneRun
    ? `${fmtInt(st.total)} items of run ${st.runs.shown}${filtered ? ' matching the filters' : ''}; ${fmtInt(st.stored)} in all runs`
    : '';
  liveEl.hidden = !st.running;
  busyEl.replaceChildren(...(st.busy ? [h('vscode-progress-ring', { class: 'ring' }), st.busy] : []));
  clearBtn.hidden = !filtered;
  qualityBtn.toggleAttribute('secondary', !st.view.showQuality);
  errorEl.hidden = !st.error;
  errorEl.textContent = st.error ?? '';
  const sortText = st.view.sort
    ? `sorted by ${META_LABEL[st.view.sort.field] ?? st.view.sort.field} ${st.view.sort.descending ? '↓' : '↑'}`
    : 'in storage order';
  const runText = st.view.changes
    ? `changes of run ${st.changes.shown ?? '—'}${st.changes.shown !== null && st.changes.shown === st.changes.latest ? ' (latest complete)' : ''}`
    : st.runs.shown === 'all'
      ? st.runs.runs.length > 1
        ? `all ${st.runs.runs.length} runs`
        : 'one run'
      : `run ${st.runs.shown}${st.runs.shown === latestRun() ? ' (latest)' : ''}`;
  statusEl.replaceChildren(
    h('span', {}, `${st.task} · ${runText} · ${sortText}`),
    h('span', {}, st.storeLocation),
    h('span', { class: 'spacer' }),
    h('span', {}, '↑↓ select · Enter details · Esc close'),
  );
}

let scheduled = false;
grid.addEventListener('scroll', () => {
  if (scheduled) return;
  scheduled = true;
  requestAnimationFrame(() => {
    scheduled = false;
    render();
  });
});
new ResizeObserver(() => render()).observe(grid);

// ---- Selection, keyboard, detail ------------------------------------------------------------------------------

function select(i: number, open = false): void {
  if (st.total === 0) return;
  st.selected = Math.max(0, Math.min(st.total - 1, i));
  const headH = thead.offsetHeight;
  const top = st.selected * ROW_H;
  if (top < grid.scrollTop) grid.scrollTop = top;
  else if (top + ROW_H > grid.scrollTop + grid.clientHeight - headH)
    grid.scrollTop = top + ROW_H - grid.clientHeight + headH;
  render();
  if (open || !side.hidden) send({ type: 'detail', offset: st.selected });
}

grid.addEventListener('keydown', (e) => {
  if ((e.target as HTMLElement).tagName === 'INPUT' || (e.target as HTMLElement).tagName === 'BUTTON') return;
  const visible = Math.max(1, Math.floor((grid.clientHeight - thead.offsetHeight) / ROW_H) - 1);
  const keys: Record<string, () => void> = {
    ArrowDown: () => select(st.selected + 1),
    ArrowUp: () => select(st.selected - 1),
    PageDown: () => select(st.selected + visible),
    PageUp: () => select(st.selected - visible),
    Home: () => select(0),
    End: () => select(st.total - 1),
    Enter: () => select(st.selected < 0 ? 0 : st.selected, true),
    Escape: () => closeDetail(),
  };
  const fn = keys[e.key];
  if (fn) {
    e.preventDefault();
    fn();
  }
});

body.addEventListener('click', (e) => {
  const row = (e.target as HTMLElement).closest<HTMLElement>('.row');
  if (row) select(Number(row.dataset.index), true);
});

function closeDetail(): void {
  side.hidden = true;
  st.detail = null;
  grid.focus();
}

function fmtValue(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string') return v;
  return JSON.stringify(v, null, 2);
}

function isEmpty(v: unknown): boolean {
  return (
    v === null || v === undefined || (typeof v === 'string' && v.trim() === '') || (Array.isArray(v) && v.length === 0)
  );
}

function renderDetail(): void {
  if (!st.detail) return;
  const d = st.detail;
  const btn = (label: string, ic: string, m: FromResults, title: string) =>
    h('vscode-button', { secondary: true, icon: ic, title, on: { click: () => send(m) } }, label);
  const fields = h('dl', {});
  for (const f of d.fields) {
    const text = fmtValue(f.value);
    fields.append(
      h('dt', {}, f.name),
      h('dd', { class: isEmpty(f.value) ? 'empty' : undefined }, isEmpty(f.value) ? '(empty)' : text),
    );
  }
  const meta = h(
    'dl',
    {},
    h('dt', {}, 'source URL'),
    h('dd', {}, d.url ?? '—'),
    h('dt', {}, 'fetched at'),
    h('dd', {}, new Date(d.fetchedAt).toLocaleString()),
    h('dt', {}, 'page rule'),
    h('dd', {}, d.rule ?? '—'),
    h('dt', {}, 'type / key'),
    h('dd', {}, `${d.type} / ${d.key}`),
    h('dt', {}, 'run'),
    h('dd', {}, d.run ?? '—'),
  );
  side.replaceChildren(
    h(
      'h2',
      {},
      icon('symbol-field'),
      `Row ${fmtInt(d.offset + 1)}`,
      h('vscode-button', {
        class: 'close',
        secondary: true,
        icon: 'close',
        'icon-only': true,
        title: 'Close (Esc)',
        'aria-label': 'Close row detail',
        on: { click: closeDetail },
      }),
    ),
    h(
      'div',
      { class: 'actions' },
      btn('Open URL', 'link-external', { type: 'openUrl', offset: d.offset }, 'Open the source URL in the browser'),
      btn('Show Job', 'list-unordered', { type: 'showJob', offset: d.offset }, 'The queue job that fetched this page'),
      st.canPreview
        ? btn(
            'Open in Preview',
            'preview',
            { type: 'openPreview', offset: d.offset },
            'Open the cached page in the designer preview',
          )
        : null,
    ),
    ...(d.change ? [changeSection(d.change)] : []),
    fields,
    h('div', { class: 'section' }, meta),
  );
  side.hidden = false;
}

/** What the shown run did to the item: added, removed, or each changed field's old and new value. */
function changeSection(c: NonNullable<RowDetail['change']>): HTMLElement {
  const title = h('h3', {}, `${CHANGE_MARK[c.kind] ?? c.kind} in run ${c.run}`);
  if (c.kind !== 'changed') return h('div', { class: `change-detail ${c.kind}` }, title);
  const list = h('dl', {});
  for (const f of c.fields)
    list.append(
      h('dt', {}, f.field),
      h(
        'dd',
        {},
        h('del', {}, 'old' in f ? fmtValue(f.old) || '(empty)' : '(absent)'),
        ' → ',
        h('ins', {}, 'new' in f ? fmtValue(f.new) || '(empty)' : '(absent)'),
      ),
    );
  return h('div', { class: 'change-detail changed' }, title, list);
}

// ---- Field quality --------------------------------------------------------------------------------------------

function renderQuality(): void {
  qualityEl.hidden = !st.view.showQuality;
  if (!st.view.showQuality) return;
  if (!st.quality) {
    qualityEl.replaceChildren(h('h2', {}, 'Field quality', h('span', { class: 'hint' }, 'reading every item…')));
    return;
  }
  const n = st.quality.total;
  const pct = (x: number) => (n === 0 ? 0 : (x * 100) / n);
  const rows = st.quality.fields.map((f) => {
    const empty = pct(f.empty);
    const distinct = pct(f.distinct);
    const bad = n > 0 && f.empty === n;
    const emptyBar = h(
      'div',
      { class: `bar empty${bad ? ' bad' : ''}`, title: `${fmtInt(f.empty)} of ${fmtInt(n)} empty` },
      h('div', { class: 'fill' }),
      h('span', { class: 'txt' }, `${empty.toFixed(empty > 0 && empty < 1 ? 1 : 0)}% empty`),
    );
    (emptyBar.firstChild as HTMLElement).style.width = `${empty}%`;
    const distinctBar = h(
      'div',
      { class: 'bar', title: `${fmtInt(f.distinct)} distinct values` },
      h('div', { class: 'fill' }),
      h(
        'span',
        { class: 'txt' },
        `${distinct.toFixed(distinct > 0 && distinct < 1 ? 1 : 0)}% distinct (${fmtInt(f.distinct)})`,
      ),
    );
    (distinctBar.firstChild as HTMLElement).style.width = `${distinct}%`;
    const name = h(
      'button',
      {
        class: 'field',
        title: `Show the items where ${f.field} is empty`,
        on: { click: () => query({ ...st.view, filters: { ...st.view.filters, [f.field]: '=' } }) },
      },
      bad ? h('span', { class: 'bad-field' }, icon('warning'), f.field) : f.field,
    );
    return h('div', { class: 'qrow', role: 'row' }, name, emptyBar, distinctBar);
  });
  const broken = st.quality.fields.filter((f) => n > 0 && f.empty === n).map((f) => f.field);
  qualityEl.replaceChildren(
    h(
      'h2',
      {},
      icon('pulse'),
      'Field quality',
      h(
        'span',
        { class: 'hint' },
        `${fmtInt(n)} ${st.view.itemType ?? ''} items${st.quality.run === 'all' ? ' of all runs' : ` of run ${st.quality.run}`}${broken.length ? ` — always empty: ${broken.join(', ')} (check the selector)` : ''}`,
      ),
    ),
    h(
      'div',
      { class: 'qrow qhead', role: 'row' },
      h('span', {}, 'field'),
      h('span', {}, 'empty values'),
      h('span', {}, 'distinct values'),
    ),
    ...rows,
  );
}

// ---- Toolbar actions ------------------------------------------------------------------------------------------

typeSelect.addEventListener('change', () => {
  query({ ...st.view, itemType: typeSelect.value, filters: {}, sort: null });
});
runSelect.addEventListener('change', () => {
  st.quality = null;
  query({ ...st.view, run: runSelect.value });
});
changeSelect.addEventListener('change', () => {
  const next: ResultsViewState = { ...st.view };
  // Absent, not undefined: the extension refuses a message with unknown values.
  delete (next as { changes?: ChangeFilter }).changes;
  query(changeSelect.value ? { ...next, changes: changeSelect.value as ChangeFilter } : next);
});
changeRunSelect.addEventListener('change', () => query({ ...st.view, changeRun: changeRunSelect.value }));

/** The change filter and, while it is on, the runs with history: newest first, the latest complete one as 'latest'. */
function renderChanges(): void {
  const shown = st.changes.runs.find((r) => r.id === st.changes.shown);
  const n = (k: 'added' | 'changed' | 'removed') => (shown ? ` (${fmtInt(shown[k])})` : '');
  const opt = (value: string, label: string) => h('option', { value, selected: (st.view.changes ?? '') === value }, label);
  changeSelect.replaceChildren(
    opt('', 'All stored items'),
    opt('all', `Changes: all${shown ? ` (${fmtInt(shown.added + shown.changed + shown.removed)})` : ''}`),
    opt('added', `Added${n('added')}`),
    opt('changed', `Changed${n('changed')}`),
    opt('removed', `Removed${n('removed')}`),
  );
  changeSelect.hidden = st.changes.runs.length === 0 && !st.view.changes;
  const wanted = st.view.changeRun ?? 'latest';
  changeRunSelect.replaceChildren(
    ...[...st.changes.runs].reverse().map((r) => {
      const isLatest = r.id === st.changes.latest;
      const label = `${isLatest ? 'Latest complete run' : 'Run'} ${r.id} · ${new Date(r.finishedAt).toLocaleString()} · +${fmtInt(r.added)} ~${fmtInt(r.changed)} −${fmtInt(r.removed)}${r.complete ? '' : ' (not complete: nothing marked removed)'}`;
      return h(
        'option',
        {
          value: isLatest ? 'latest' : r.id,
          selected: isLatest ? wanted === 'latest' || wanted === r.id : wanted === r.id,
        },
        label,
      );
    }),
  );
  changeRunSelect.hidden = !st.view.changes || st.changes.runs.length === 0;
  runSelect.hidden = runSelect.hidden || !!st.view.changes;
}

function latestRun(): string | null {
  const ids = st.runs.runs.map((r) => r.id).filter((id): id is string => id !== null);
  return ids[ids.length - 1] ?? null;
}

/** One option per run, newest first, with its start and item count; "All runs" last. */
function renderRuns(): void {
  const ids = st.runs.runs.filter((r) => r.id !== null);
  const all = st.runs.runs.reduce((a, r) => a + r.items, 0);
  const latest = latestRun();
  const opts = [...ids].reverse().map((r) =>
    h(
      'option',
      {
        value: r.id === latest ? 'latest' : r.id!,
        selected: st.runs.shown === r.id && ((st.view.run ?? 'latest') === 'latest') === (r.id === latest),
      },
      `${r.id === latest ? 'Latest run' : 'Run'} ${r.id} · ${new Date(r.firstFetchedAt).toLocaleString()} · ${fmtInt(r.items)} items`,
    ),
  );
  opts.push(h('option', { value: 'all', selected: st.runs.shown === 'all' }, `All runs · ${fmtInt(all)} items`));
  runSelect.replaceChildren(...opts);
  runSelect.hidden = ids.length < 2;
}
clearBtn.addEventListener('click', () => query({ ...st.view, filters: {} }));
qualityBtn.addEventListener('click', () => {
  st.view = { ...st.view, showQuality: !st.view.showQuality };
  persist();
  send({ type: 'quality', show: st.view.showQuality });
  renderQuality();
  renderToolbar();
});
for (const b of exportBtns)
  b.addEventListener('click', () => send({ type: 'export', format: b.dataset.format as ExportFormat }));

let popup: HTMLElement | null = null;
columnsBtn.addEventListener('click', (e) => {
  e.stopPropagation();
  if (popup) {
    popup.remove();
    popup = null;
    return;
  }
  popup = h('div', { class: 'popup', role: 'dialog', 'aria-label': 'Columns' });
  for (const c of st.columns) {
    const cb = h('vscode-checkbox', { checked: !st.view.hidden.includes(c), label: META_LABEL[c] ?? c });
    cb.addEventListener('change', () => {
      const on = (cb as unknown as { checked: boolean }).checked;
      const hidden = on ? st.view.hidden.filter((x) => x !== c) : [...st.view.hidden, c];
      if (st.columns.length - hidden.length === 0) return;
      st.view = { ...st.view, hidden };
      persist();
      renderHeader();
      render();
    });
    popup.append(h('div', {}, cb));
  }
  const r = columnsBtn.getBoundingClientRect();
  popup.style.top = `${r.bottom + 4}px`;
  popup.style.left = `${Math.max(4, r.left - 80)}px`;
  document.body.append(popup);
  (popup.querySelector('vscode-checkbox') as HTMLElement | null)?.focus();
  popup.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape') {
      popup?.remove();
      popup = null;
      columnsBtn.focus();
    }
  });
});
document.addEventListener('click', (e) => {
  if (popup && !popup.contains(e.target as Node)) {
    popup.remove();
    popup = null;
  }
});

// ---- Messages from the extension ------------------------------------------------------------------------------

window.addEventListener('message', (e: MessageEvent<ToResults>) => {
  const m = e.data;
  switch (m.type) {
    case 'init':
      st.file = m.file;
      st.task = m.task;
      st.storeLocation = m.store;
      st.types = [...m.types];
      st.columns = [...m.columns];
      st.canPreview = m.canPreview;
      st.view = m.view;
      titleEl.replaceChildren(icon('table'), h('span', {}, `Results: ${m.task}`));
      typeSelect.replaceChildren(...st.types.map((t) => h('option', { value: t, selected: t === st.view.itemType }, t)));
      typeSelect.hidden = st.types.length < 2;
      st.runs = m.runs;
      st.changes = m.changes;
      renderRuns();
      renderChanges();
      persist();
      if (headerKey() !== st.renderedHeader) renderHeader();
      renderQuality();
      render();
      break;
    case 'count': {
      const changed = m.generation !== st.generation;
      const grew = !changed && m.total !== st.total;
      st.running = m.running;
      st.stored = m.stored;
      if (m.columns.join('\u0000') !== st.columns.join('\u0000')) {
        st.columns = [...m.columns];
        renderHeader();
      }
      if (m.types.join('\u0000') !== st.types.join('\u0000')) {
        st.types = [...m.types];
        typeSelect.replaceChildren(...st.types.map((t) => h('option', { value: t, selected: t === st.view.itemType }, t)));
        typeSelect.hidden = st.types.length < 2;
      }
      if (changed) {
        st.generation = m.generation;
        st.pages.clear();
        st.stale.clear();
        st.pending.clear();
      } else if (grew) {
        // Rows may have landed anywhere in a sorted or filtered view: refetch what is shown, keep it meanwhile.
        st.stale = new Map([...st.stale, ...st.pages]);
        st.pages.clear();
        st.pending.clear();
      }
      st.total = m.total;
      st.error = null;
      render();
      break;
    }
    case 'rows': {
      if (m.generation !== st.generation) return;
      const p = Math.floor(m.offset / PAGE_SIZE);
      st.pending.delete(p);
      st.pages.set(p, m.rows);
      st.stale.delete(p);
      if (st.pages.size > MAX_PAGES) {
        // Drop the pages farthest from the viewport.
        const here = Math.floor(grid.scrollTop / ROW_H / PAGE_SIZE);
        const far = [...st.pages.keys()].sort((a, b) => Math.abs(b - here) - Math.abs(a - here));
        for (const k of far.slice(0, st.pages.size - MAX_PAGES)) st.pages.delete(k);
      }
      render();
      break;
    }
    case 'detail':
      st.detail = m.detail;
      renderDetail();
      break;
    case 'quality':
      if (m.itemType === st.view.itemType) st.quality = { total: m.total, run: m.run, fields: m.fields };
      renderQuality();
      break;
    case 'busy':
      st.busy = m.text;
      renderToolbar();
      break;
    case 'error':
      st.error = m.message;
      st.busy = null;
      renderToolbar();
      break;
  }
});

renderHeader();
render();
send({ type: 'ready', ...(vscode.getState()?.view ? { view: vscode.getState()!.view } : {}) });
