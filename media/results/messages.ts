// What the extension sends the Results view: the task and its query (init), a fresh count, a page of rows, a
// row's detail, field quality, busy and error.

import { PAGE_SIZE, type ToResults } from '../../src/extension/results/protocol';
import { h, icon, renderChanged, setOptions } from '../shared/dom';
import { renderDetail } from './detail';
import { render } from './grid';
import { headerKey, renderHeader } from './header';
import { renderQuality } from './quality';
import { grid, titleEl, typeSelect } from './skeleton';
import { MAX_PAGES, persist, ROW_H, st } from './state';
import { renderChanges, renderRuns, renderToolbar } from './toolbar';

export function onMessage(m: ToResults): void {
  switch (m.type) {
    case 'init':
      onInit(m);
      break;
    case 'count':
      onCount(m);
      break;
    case 'rows':
      onRows(m);
      break;
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
}

type Message<T extends ToResults['type']> = Extract<ToResults, { type: T }>;

function renderTypes(): void {
  setOptions(
    typeSelect,
    st.types.map((t) => ({ value: t, label: t, selected: t === st.view.itemType })),
  );
  typeSelect.hidden = st.types.length < 2;
}

function onInit(m: Message<'init'>): void {
  st.file = m.file;
  st.task = m.task;
  st.storeLocation = m.store;
  st.types = [...m.types];
  st.columns = [...m.columns];
  st.canPreview = m.canPreview;
  // The extension polls while a crawl runs, and a poll's init may be on its way when the user sorts or filters:
  // taking its view would undo the click, and the next click would toggle from the undone state.
  if (m.seq >= st.sent) st.view = m.view;
  renderChanged(titleEl, m.task, () => titleEl.replaceChildren(icon('table'), h('span', {}, `Results: ${m.task}`)));
  renderTypes();
  st.runs = m.runs;
  st.changes = m.changes;
  renderRuns();
  renderChanges();
  persist();
  if (headerKey() !== st.renderedHeader) renderHeader();
  renderQuality();
  render();
}

function onCount(m: Message<'count'>): void {
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
    renderTypes();
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
}

function onRows(m: Message<'rows'>): void {
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
}
