// The row detail beside the grid: a stored item's fields, its page's facts, what the shown run changed in it,
// and the actions on its page (Open URL, Show Job, Open in Preview).

import type { FromResults, RowDetail } from '../../src/extension/results/protocol';
import { h, icon } from '../shared/dom';
import { fmtInt } from '../shared/format';
import { grid, side } from './skeleton';
import { send, st } from './state';
import { CHANGE_MARK, fmtValue, isEmpty } from './text';

export function closeDetail(): void {
  side.hidden = true;
  st.detail = null;
  grid.focus();
}

export function renderDetail(): void {
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
