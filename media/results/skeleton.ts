// The Results view's elements: toolbar, grid (header and virtual body), row detail, field quality, status line.

import { h, icon } from '../shared/dom';

const app = document.getElementById('app')!;
export const titleEl = h('span', { class: 'title' }, icon('table'), h('span', {}, 'Results'));
export const typeSelect = h('select', { 'aria-label': 'Item type', title: 'Item type' });
// Whose items: the latest run by default (issue 23, item 6), any earlier one, or all of them.
export const runSelect = h('select', {
  'aria-label': 'Run',
  title: 'Show the items of one run (the latest by default), or of all runs',
});
// What changed (issue 33): only the items a run added, changed or removed, and which run (the latest complete one by default).
export const changeSelect = h('select', {
  'aria-label': 'Changes',
  title: 'Show only the items a run added, changed or removed (item history)',
});
export const changeRunSelect = h('select', {
  'aria-label': 'Run of the changes',
  title: 'Whose changes: the latest complete run by default',
});
export const countEl = h('span', { class: 'count', role: 'status', 'aria-live': 'polite' });
export const liveEl = h(
  'span',
  { class: 'live', title: 'The crawl is running: new rows appear as they are stored' },
  h('span', { class: 'dot' }),
  'live',
);
export const busyEl = h('span', { class: 'busy' });
export const columnsBtn = h(
  'vscode-button',
  { secondary: true, icon: 'list-selection', title: 'Choose columns', 'aria-haspopup': 'true' },
  'Columns',
);
export const qualityBtn = h(
  'vscode-button',
  { secondary: true, icon: 'pulse', title: 'Field quality: empty and distinct values per field' },
  'Field quality',
);
export const exportBtns = (['csv', 'jsonl', 'json'] as const).map((f) =>
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
export const clearBtn = h(
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
export const grid = h('div', {
  class: 'grid',
  role: 'grid',
  tabindex: 0,
  'aria-label': 'Stored items',
  'aria-multiselectable': 'false',
});
export const thead = h('div', { class: 'thead', role: 'rowgroup' });
export const body = h('div', { class: 'body', role: 'rowgroup' });
export const emptyEl = h('div', { class: 'empty-state' });
grid.append(thead, body);
const gridWrap = h('div', { class: 'grid-wrap' }, grid, emptyEl);
export const side = h('aside', { class: 'side', 'aria-label': 'Row detail', hidden: true });
const main = h('div', { class: 'main' }, gridWrap, side);
export const qualityEl = h('section', { class: 'quality', 'aria-label': 'Field quality', hidden: true });
export const errorEl = h('div', { class: 'error', role: 'alert', hidden: true });
export const statusEl = h('div', { class: 'status' });
app.append(toolbar, errorEl, main, qualityEl, statusEl);
