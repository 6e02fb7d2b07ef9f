// The pick bar: the selector suggested for the element clicked in the page, its alternatives, and the page's
// structured data holding the same value; each with Insert (or Add) into the task file.

import type { SuggestionView } from '../../src/core/designer/protocol';
import { byId, el } from '../shared/dom';
import { button } from './button';
import { post } from './host';
import { matches } from './text';

export function renderSuggestion(view: SuggestionView | null, error: string | null): void {
  const bar = byId('pick-bar');
  bar.replaceChildren();
  if (error) {
    bar.appendChild(el('span', error, 'cell-missing'));
    bar.hidden = false;
    return;
  }
  if (!view) {
    bar.hidden = true;
    return;
  }
  const s = view.suggestion;
  bar.appendChild(el('span', `Picked ${s.element} →`, 'label'));
  const code = el('code', s.selector, 'sel');
  code.id = 'suggested';
  bar.appendChild(code);
  bar.appendChild(
    el(
      'span',
      `${matches(s.count)}${s.kind === 'scoped' ? ' in its item' : ''}${s.multiple ? ' (a list: all: true)' : ''}`,
      'count',
    ),
  );
  const insert = button(
    view.target === 'the cursor' ? 'Insert at the cursor' : `Insert into ${view.target}`,
    'insert',
    () => post({ type: 'insert', selector: s.selector, all: s.multiple }),
  );
  insert.id = 'insert';
  bar.appendChild(insert);
  bar.appendChild(button('Copy', 'copy', () => post({ type: 'copy', text: s.selector }), true));
  const alts = [
    s.unique.selector !== s.selector
      ? { label: 'only this one', sel: s.unique.selector, count: s.unique.count, all: false }
      : null,
    s.list && s.list.selector !== s.selector
      ? { label: 'the list', sel: s.list.selector, count: s.list.count, all: true }
      : null,
    s.scoped && s.scoped.selector !== s.selector
      ? { label: 'inside its item', sel: s.scoped.selector, count: s.scoped.count, all: false }
      : null,
  ].filter((x): x is NonNullable<typeof x> => x !== null);
  for (const alt of alts) {
    const wrap = el('span', `${alt.label}: `, 'alt');
    const c = el('code', alt.sel);
    c.title = matches(alt.count);
    wrap.appendChild(c);
    bar.appendChild(wrap);
    bar.appendChild(button('Insert', 'insert', () => post({ type: 'insert', selector: alt.sel, all: alt.all }), true));
  }
  // The same value from the page's structured data, steadier than the markup: offered as a field of its own.
  for (const e of view.structured ?? []) {
    const wrap = el('span', `or ${e.source}: `, 'alt');
    const c = el('code', e.path);
    c.title = e.value;
    wrap.appendChild(c);
    bar.appendChild(wrap);
    const add = button('Add', 'add', () => post({ type: 'insertField', source: e.source, path: e.path }), true);
    add.title = `Add as a field: { ${e.source}: ${e.path} }`;
    add.classList.add('add-structured');
    bar.appendChild(add);
  }
  bar.hidden = false;
}
