// Field quality: per field, the share of empty and of distinct values; a field always empty is flagged (its
// selector is likely wrong), and a click shows the items where it is empty.
//
// While a crawl runs the panel is posted new figures every second. Each field's row is built once and its figures
// are written into it, so the field's button under the pointer is never replaced: a click pressed on a button and
// released on an identical replacement reaches neither.

import { h, icon, renderChanged } from '../shared/dom';
import { fmtInt } from '../shared/format';
import { query } from './header';
import { qualityEl } from './skeleton';
import { st } from './state';
import { percentText } from './text';

interface Bar {
  readonly el: HTMLElement;
  readonly fill: HTMLElement;
  readonly txt: HTMLElement;
}

interface FieldRow {
  readonly el: HTMLElement;
  readonly name: HTMLElement;
  readonly empty: Bar;
  readonly distinct: Bar;
}

const hint = h('span', { class: 'hint' });
const heading = h('h2', {}, icon('pulse'), 'Field quality', hint);
const columnHeads = h(
  'div',
  { class: 'qrow qhead', role: 'row' },
  h('span', {}, 'field'),
  h('span', {}, 'empty values'),
  h('span', {}, 'distinct values'),
);
const fieldRows = new Map<string, FieldRow>();

function bar(): Bar {
  const fill = h('div', { class: 'fill' });
  const txt = h('span', { class: 'txt' });
  return { el: h('div', { class: 'bar' }, fill, txt), fill, txt };
}

function setBar(b: Bar, share: number, text: string, title: string): void {
  b.fill.style.width = `${share}%`;
  b.txt.textContent = text;
  b.el.title = title;
}

/** The row of `field`, made the first time it is shown. */
function rowOf(field: string): FieldRow {
  const had = fieldRows.get(field);
  if (had) return had;
  const name = h('button', {
    class: 'field',
    title: `Show the items where ${field} is empty`,
    on: { click: () => query({ ...st.view, filters: { ...st.view.filters, [field]: '=' } }) },
  });
  const empty = bar();
  empty.el.classList.add('empty');
  const distinct = bar();
  const row = { el: h('div', { class: 'qrow', role: 'row' }, name, empty.el, distinct.el), name, empty, distinct };
  fieldRows.set(field, row);
  return row;
}

export function renderQuality(): void {
  qualityEl.hidden = !st.view.showQuality;
  if (!st.view.showQuality) return;
  const q = st.quality;
  if (!q) {
    renderChanged(qualityEl, null, () =>
      qualityEl.replaceChildren(h('h2', {}, 'Field quality', h('span', { class: 'hint' }, 'reading every item…'))),
    );
    return;
  }
  const n = q.total;
  const pct = (x: number) => (n === 0 ? 0 : (x * 100) / n);
  const broken = q.fields.filter((f) => n > 0 && f.empty === n).map((f) => f.field);
  hint.textContent = `${fmtInt(n)} ${st.view.itemType ?? ''} items${q.run === 'all' ? ' of all runs' : ` of run ${q.run}`}${broken.length ? ` — always empty: ${broken.join(', ')} (check the selector)` : ''}`;
  for (const f of q.fields) {
    const row = rowOf(f.field);
    const bad = n > 0 && f.empty === n;
    renderChanged(row.name, bad, () =>
      row.name.replaceChildren(bad ? h('span', { class: 'bad-field' }, icon('warning'), f.field) : f.field),
    );
    row.empty.el.classList.toggle('bad', bad);
    setBar(row.empty, pct(f.empty), `${percentText(pct(f.empty))}% empty`, `${fmtInt(f.empty)} of ${fmtInt(n)} empty`);
    setBar(
      row.distinct,
      pct(f.distinct),
      `${percentText(pct(f.distinct))}% distinct (${fmtInt(f.distinct)})`,
      `${fmtInt(f.distinct)} distinct values`,
    );
  }
  // Only another list of fields puts rows in or out: moving a row out and back in would drop a click on it too.
  renderChanged(
    qualityEl,
    q.fields.map((f) => f.field),
    () => qualityEl.replaceChildren(heading, columnHeads, ...q.fields.map((f) => rowOf(f.field).el)),
  );
}
