// The toolbar's actions: the item type, run and change pickers, Clear filters, Field quality, Export, and the
// Columns popup.

import type { ChangeFilter, ExportFormat, ResultsViewState } from '../../src/extension/results/protocol';
import { h } from '../shared/dom';
import { labelOf } from './columns';
import { render } from './grid';
import { query, renderHeader } from './header';
import { renderQuality } from './quality';
import {
  changeRunSelect,
  changeSelect,
  clearBtn,
  columnsBtn,
  exportBtns,
  qualityBtn,
  runSelect,
  typeSelect,
} from './skeleton';
import { persist, send, st } from './state';
import { renderToolbar } from './toolbar';

export function initToolbar(): void {
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
  clearBtn.addEventListener('click', () => query({ ...st.view, filters: {} }));
  qualityBtn.addEventListener('click', () => {
    st.view = { ...st.view, showQuality: !st.view.showQuality };
    persist();
    send({ type: 'quality', show: st.view.showQuality, seq: ++st.sent });
    renderQuality();
    renderToolbar();
  });
  for (const b of exportBtns)
    b.addEventListener('click', () => send({ type: 'export', format: b.dataset.format as ExportFormat }));
  initColumnsPopup();
}

/** Columns: a checkbox per column; at least one stays shown. */
function initColumnsPopup(): void {
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
      const cb = h('vscode-checkbox', { checked: !st.view.hidden.includes(c), label: labelOf(c) });
      cb.addEventListener('change', () => {
        const on = (cb as unknown as { checked: boolean }).checked;
        const hidden = on ? st.view.hidden.filter((x) => x !== c) : [...st.view.hidden, c];
        if (st.columns.length - hidden.length === 0) return;
        st.view = { ...st.view, hidden };
        send({ type: 'columns', hidden, seq: ++st.sent });
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
}
