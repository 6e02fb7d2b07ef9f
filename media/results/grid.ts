// The grid's body: virtual scrolling over pages of rows the extension reads from the store on demand. Only the
// visible rows (plus a margin) exist in the DOM; selection by keyboard and click.

import { PAGE_SIZE, type TableRow } from '../../src/extension/results/protocol';
import { h, placeChildren } from '../shared/dom';
import { cellClasses, minWidthOf, templateOf } from './columns';
import { closeDetail } from './detail';
import { body, emptyEl, grid, side, thead } from './skeleton';
import { ROW_H, send, st, visibleColumns } from './state';
import { renderToolbar } from './toolbar';
import { CHANGE_MARK, emptyText } from './text';

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

/** Draws the rows in view (asking for the pages they are on), the empty table's text and the toolbar. */
export function render(): void {
  const cols = visibleColumns();
  const minWidth = `${minWidthOf(cols)}px`;
  body.style.height = `${st.total * ROW_H}px`;
  body.style.minWidth = minWidth;
  grid.setAttribute('aria-rowcount', String(st.total + 2));
  const headH = thead.offsetHeight;
  const top = Math.max(0, grid.scrollTop);
  const first = Math.max(0, Math.floor(top / ROW_H) - 5);
  const last = Math.min(st.total, Math.ceil((top + grid.clientHeight - headH) / ROW_H) + 5);
  for (let p = Math.floor(first / PAGE_SIZE); p <= Math.floor(Math.max(first, last - 1) / PAGE_SIZE); p++) request(p);
  // Prefetch the next page so steady scrolling never waits.
  request(Math.floor(last / PAGE_SIZE) + 1);
  drawRows(first, last, cols, templateOf(cols), minWidth);
  if (st.selected >= 0) grid.setAttribute('aria-activedescendant', 'sel-row');
  else grid.removeAttribute('aria-activedescendant');
  emptyEl.textContent = emptyText(st);
  emptyEl.hidden = emptyEl.textContent === '';
  renderToolbar();
}

// The rows in the DOM, by index, with what each was drawn from. A crawl's poll redraws the grid every second or
// so, and a row built anew for the same item would replace the one under the pointer: a click pressed on the old
// row and released on the new one selects nothing, and a selection of its text is lost. So a row is rebuilt only
// when what it shows changed.
const drawn = new Map<number, { readonly el: HTMLElement; readonly key: string }>();

function drawRows(first: number, last: number, cols: readonly string[], tpl: string, minWidth: string): void {
  const shape = JSON.stringify([cols, tpl, minWidth]);
  for (const i of Array.from(drawn.keys())) if (i < first || i >= last) drawn.delete(i);
  const rows: HTMLElement[] = [];
  for (let i = first; i < last; i++) {
    const row = rowAt(i);
    const key = `${shape}\u0000${i === st.selected}\u0000${row ? JSON.stringify(row) : ''}`;
    let d = drawn.get(i);
    if (d?.key !== key) {
      d = { el: rowEl(i, row, cols, tpl, minWidth), key };
      drawn.set(i, d);
    }
    rows.push(d.el);
  }
  // Rows are placed by their `top`; the DOM keeps them in index order for assistive technology.
  placeChildren(body, rows);
}

function rowEl(i: number, row: TableRow | null, cols: readonly string[], tpl: string, minWidth: string): HTMLElement {
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
  el.style.minWidth = minWidth;
  for (const c of cols) el.append(cellEl(row, c));
  return el;
}

function cellEl(row: TableRow | null, c: string): HTMLElement {
  const text = row ? (row.cells[c] ?? '') : '…';
  const cls = cellClasses(c, text, row !== null);
  const diff = row?.change?.fields.find((f) => f.field === c);
  if (diff)
    // A changed field: its old value struck through, then the new one.
    return h(
      'div',
      {
        class: `${cls.join(' ')} diff`,
        role: 'gridcell',
        title: `${diff.old || '(empty)'} → ${diff.new || '(empty)'}`,
      },
      h('del', {}, diff.old || '(empty)'),
      ' → ',
      h('ins', {}, diff.new || '(empty)'),
    );
  if (c === '_change' && row?.change)
    return h(
      'div',
      { class: `cell change ${row.change.kind}`, role: 'gridcell' },
      CHANGE_MARK[row.change.kind] ?? row.change.kind,
    );
  return h(
    'div',
    { class: cls.join(' '), role: 'gridcell', title: text.length > 30 ? text : undefined },
    row && text === '' ? '(empty)' : text,
  );
}

/** Selects row i (clamped), scrolls it into view, and shows its detail when asked or already open. */
export function select(i: number, open = false): void {
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

/** Scrolling and resizing draw again (once a frame); arrows, pages, Home/End, Enter and Escape; a click selects. */
export function initGrid(): void {
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
  grid.addEventListener('keydown', onKey);
  body.addEventListener('click', (e) => {
    const row = (e.target as HTMLElement).closest<HTMLElement>('.row');
    if (row) select(Number(row.dataset.index), true);
  });
}

function onKey(e: KeyboardEvent): void {
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
}
