// The grid's header: a sort button and a filter per visible column; and the query they change (sort, filters,
// item type, run, changes), sent to the extension, which counts again.

import type { ResultsViewState } from '../../src/extension/results/protocol';
import { h, icon } from '../shared/dom';
import { labelOf, minWidthOf, templateOf } from './columns';
import { render, select } from './grid';
import { grid, thead } from './skeleton';
import { persist, send, st, visibleColumns } from './state';

let filterTimer: number | undefined;

export function renderHeader(): void {
  const cols = visibleColumns();
  const hrow = h('div', { class: 'hrow', role: 'row' });
  const frow = h('div', { class: 'frow', role: 'row' });
  hrow.style.gridTemplateColumns = frow.style.gridTemplateColumns = templateOf(cols);
  hrow.style.minWidth = frow.style.minWidth = `${minWidthOf(cols)}px`;
  for (const c of cols) {
    const sorted = st.view.sort?.field === c ? st.view.sort : null;
    const label = labelOf(c);
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
export function headerKey(): string {
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

/** Runs a new query: its rows are read afresh, from the top. */
export function query(next: ResultsViewState): void {
  st.view = next;
  persist();
  resetRows();
  send({ type: 'query', view: st.view, seq: ++st.sent });
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
