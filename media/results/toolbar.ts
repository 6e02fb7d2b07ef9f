// The toolbar's and status line's figures (count, live, busy, error, the query), and its pickers of runs and of
// changes, filled from what the extension sent.

import { h, renderChanged, setOptions, type OptionSpec } from '../shared/dom';
import { fmtInt } from '../shared/format';
import {
  busyEl,
  changeRunSelect,
  changeSelect,
  clearBtn,
  countEl,
  errorEl,
  liveEl,
  qualityBtn,
  runSelect,
  statusEl,
} from './skeleton';
import { st } from './state';
import { countText, latestRun, queryText } from './text';

export function renderToolbar(): void {
  const count = countText(st);
  countEl.textContent = count.text;
  countEl.title = count.title;
  liveEl.hidden = !st.running;
  renderChanged(busyEl, st.busy, () =>
    busyEl.replaceChildren(...(st.busy ? [h('vscode-progress-ring', { class: 'ring' }), st.busy] : [])),
  );
  clearBtn.hidden = Object.keys(st.view.filters).length === 0;
  qualityBtn.toggleAttribute('secondary', !st.view.showQuality);
  errorEl.hidden = !st.error;
  errorEl.textContent = st.error ?? '';
  const query = `${st.task} · ${queryText(st)}`;
  renderChanged(statusEl, [query, st.storeLocation], () =>
    statusEl.replaceChildren(
      h('span', {}, query),
      h('span', {}, st.storeLocation),
      h('span', { class: 'spacer' }),
      h('span', {}, '↑↓ select · Enter details · Esc close'),
    ),
  );
}

/** The change filter and, while it is on, the runs with history: newest first, the latest complete one as 'latest'. */
export function renderChanges(): void {
  const shown = st.changes.runs.find((r) => r.id === st.changes.shown);
  const n = (k: 'added' | 'changed' | 'removed') => (shown ? ` (${fmtInt(shown[k])})` : '');
  const opt = (value: string, label: string): OptionSpec => ({
    value,
    label,
    selected: (st.view.changes ?? '') === value,
  });
  setOptions(changeSelect, [
    opt('', 'All stored items'),
    opt('all', `Changes: all${shown ? ` (${fmtInt(shown.added + shown.changed + shown.removed)})` : ''}`),
    opt('added', `Added${n('added')}`),
    opt('changed', `Changed${n('changed')}`),
    opt('removed', `Removed${n('removed')}`),
  ]);
  changeSelect.hidden = st.changes.runs.length === 0 && !st.view.changes;
  const wanted = st.view.changeRun ?? 'latest';
  setOptions(
    changeRunSelect,
    [...st.changes.runs].reverse().map((r) => {
      const isLatest = r.id === st.changes.latest;
      const label = `${isLatest ? 'Latest complete run' : 'Run'} ${r.id} · ${new Date(r.finishedAt).toLocaleString()} · +${fmtInt(r.added)} ~${fmtInt(r.changed)} −${fmtInt(r.removed)}${r.complete ? '' : ' (not complete: nothing marked removed)'}`;
      return {
        value: isLatest ? 'latest' : r.id,
        label,
        selected: isLatest ? wanted === 'latest' || wanted === r.id : wanted === r.id,
      };
    }),
  );
  changeRunSelect.hidden = !st.view.changes || st.changes.runs.length === 0;
  runSelect.hidden = runSelect.hidden || !!st.view.changes;
}

/** One option per run, newest first, with its start and item count; "All runs" last. */
export function renderRuns(): void {
  const ids = st.runs.runs.filter((r) => r.id !== null);
  const all = st.runs.runs.reduce((a, r) => a + r.items, 0);
  const latest = latestRun(st.runs);
  const opts: OptionSpec[] = [...ids].reverse().map((r) => ({
    value: r.id === latest ? 'latest' : r.id!,
    label: `${r.id === latest ? 'Latest run' : 'Run'} ${r.id} · ${new Date(r.firstFetchedAt).toLocaleString()} · ${fmtInt(r.items)} items`,
    selected: st.runs.shown === r.id && ((st.view.run ?? 'latest') === 'latest') === (r.id === latest),
  }));
  opts.push({ value: 'all', label: `All runs · ${fmtInt(all)} items`, selected: st.runs.shown === 'all' });
  setOptions(runSelect, opts);
  runSelect.hidden = ids.length < 2;
}
