// Field quality: per field, the share of empty and of distinct values; a field always empty is flagged (its
// selector is likely wrong), and a click shows the items where it is empty.

import { h, icon } from '../shared/dom';
import { fmtInt } from '../shared/format';
import { query } from './header';
import { qualityEl } from './skeleton';
import { st } from './state';
import { percentText } from './text';

export function renderQuality(): void {
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
      h('span', { class: 'txt' }, `${percentText(empty)}% empty`),
    );
    (emptyBar.firstChild as HTMLElement).style.width = `${empty}%`;
    const distinctBar = h(
      'div',
      { class: 'bar', title: `${fmtInt(f.distinct)} distinct values` },
      h('div', { class: 'fill' }),
      h('span', { class: 'txt' }, `${percentText(distinct)}% distinct (${fmtInt(f.distinct)})`),
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
